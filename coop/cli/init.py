"""`coop init`: write a commented config with every key at its default."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.errors import CoopError, UsageError
from coop.files.writing import replace_file


def init(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="where to write it (default: --config, else the user config)")
                    ] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
    model: Annotated[str | None, typer.Option("--model", help="the chat model (litellm's name), set in the file")
                     ] = None,
    api_base: Annotated[str | None, typer.Option("--api-base", metavar="URL", help="its server's URL, set in the "
                                                 "file")] = None,
) -> None:
    """Write a commented config file to start from (with --model and --api-base set, if given)."""
    from coop.config.example import example_toml
    from coop.config.loading import user_config_path

    target = Path(path or state(ctx).config_path or user_config_path()).expanduser()
    if target.exists() and not force:
        raise UsageError(f"{target} already exists", hint="use --force to overwrite it")
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CoopError(f"cannot create {target.parent}: {exc.strerror}", hint="choose another path") from None
    # a new file (0600) renamed over the old one: never written through a link, never chmod-ing a link's target
    chosen = {key: value.strip() for key, value in (("model.name", model), ("model.api_base", api_base))
              if value is not None}
    if any(not value for value in chosen.values()):
        raise UsageError("--model and --api-base need a value", hint="e.g. --model ollama_chat/llama3.1")
    replace_file(target, lambda handle: handle.write(example_toml(chosen)))
    output.out().print(f"wrote {target}", markup=False, highlight=False, soft_wrap=True)  # a long path: one line
    output.info("next: run `coop check`" if model else
                "next: set [model] name (and api_key_env or api_base), then run `coop check`")
