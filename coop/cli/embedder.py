"""`coop memory embedder ...`: the local embedding model. coop never downloads a model on its own (an offline
machine would stall on every command); `pull` is the one way to ask for the download."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.errors import EmbedderError, ExitCode, UsageError

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
def status(ctx: typer.Context,
           json_: Annotated[bool, typer.Option("--json", help="print JSON on stdout")] = False) -> None:
    """Say which embedding model coop would load and whether it is on this machine, without loading it."""
    from coop.memory.growth.embedders import (
        MISSING_MODEL_HINT,
        fastembed_cache_dir,
        missing_model,
        resolve_model_path,
    )

    settings = state(ctx).config().memory.embedder
    local = settings.provider == "fastembed"
    missing = missing_model(settings) if local else None
    hint = MISSING_MODEL_HINT
    if local and missing is None and settings.model_path and not Path(settings.model_path).expanduser().is_dir():
        missing = f"memory.embedder.model_path is not a directory: {settings.model_path}"
        hint = "point memory.embedder.model_path at the model's directory, or unset it"
    where = (str(resolve_model_path(settings) or fastembed_cache_dir())) if local and missing is None else None
    if json_:
        output.print_json({"provider": settings.provider, "model": settings.model, "local": local,
                           "present": missing is None, "path": where, "problem": missing})
        if missing is not None:
            raise typer.Exit(int(ExitCode.MODEL))
        return
    if not local:
        output.out().print(f"{settings.provider} embedder: {settings.model}", soft_wrap=True, markup=False)
        return
    if missing is not None:
        raise EmbedderError(missing, hint=hint)
    shown = where if resolve_model_path(settings) else f"in fastembed's cache, {where}"
    output.out().print(f"{settings.model} is on this machine: {shown}", soft_wrap=True, markup=False)
