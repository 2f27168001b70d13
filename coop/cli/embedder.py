"""`coop memory embedder ...`: the local embedding model. coop never downloads a model on its own (an offline
machine would stall on every command); `pull` is the one way to ask for the download."""

from __future__ import annotations

import dataclasses

import typer

from coop import output
from coop.cli.context import state
from coop.errors import EmbedderError, UsageError

app = typer.Typer(no_args_is_help=True, help="The local embedding model: where it is, and pulling it from the hub.")


@app.command()
def pull(ctx: typer.Context) -> None:
    """Download the configured fastembed model from the model hub (about 90 MB for the default), once."""
    from coop.memory.growth.embedders import fastembed_cache_dir, load_embedder, missing_model, resolve_model_path

    settings = state(ctx).config().memory.embedder
    if settings.provider != "fastembed":
        raise UsageError(f"memory.embedder.provider is {settings.provider!r}: there is no local model to pull",
                         hint="pull applies to the fastembed provider")
    local = resolve_model_path(settings)
    if local is not None or missing_model(settings) is None:
        output.out().print(f"{settings.model} is already on this machine: {local or fastembed_cache_dir()}",
                           soft_wrap=True, markup=False)
        return
    output.info(f"downloading {settings.model} into {fastembed_cache_dir()}…")
    status = load_embedder(dataclasses.replace(settings, download=True))
    if status.embedder is None:
        raise EmbedderError(f"could not pull {settings.model}: {status.error}",
                            hint="check the network, or build the model directory elsewhere and set "
                                 "memory.embedder.model_path")
    output.out().print(f"pulled {settings.model}; search uses it from now on (`coop memory reembed` embeds what is "
                       "stored)", soft_wrap=True, markup=False)


@app.command()
def status(ctx: typer.Context) -> None:
    """Say which embedding model coop would load and whether it is on this machine, without loading it."""
    from coop.memory.growth.embedders import (
        MISSING_MODEL_HINT,
        fastembed_cache_dir,
        missing_model,
        resolve_model_path,
    )

    settings = state(ctx).config().memory.embedder
    if settings.provider != "fastembed":
        output.out().print(f"{settings.provider} embedder: {settings.model}", soft_wrap=True, markup=False)
        return
    missing = missing_model(settings)
    if missing is not None:
        raise EmbedderError(missing, hint=MISSING_MODEL_HINT)
    where = resolve_model_path(settings) or f"in fastembed's cache, {fastembed_cache_dir()}"
    output.out().print(f"{settings.model} is on this machine: {where}", soft_wrap=True, markup=False)
