"""`coop config set KEY VALUE`: change one setting in the config file in place, its comments and the rest kept.

The file is the one coop reads (`--config`, `COOP_CONFIG`, `./coop.toml`, else the user's, made from `coop init`'s
template when there is none). The value is typed and checked as the setting takes it, and the whole file is
checked again before it is written: a bad value changes nothing.
"""

from __future__ import annotations

from typing import Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.errors import ConfigError

app = typer.Typer(help="Change the config file from the command line (comments kept).", no_args_is_help=True)


@app.command("set")
def set_value(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="the setting, as section.key: model.name, memory.extraction.enabled")],
    value: Annotated[str, typer.Argument(help="its value, as text: true/false, a number, a string")],
) -> None:
    """Set one setting in the config file coop reads, or in a new one."""
    import tomllib

    import tomlkit

    from coop.config.example import example_toml
    from coop.config.loading import build_config, find_config_file, parse_setting, user_config_path
    from coop.files.writing import replace_file

    typed = parse_setting(key, value, f"coop config set {key}")
    path = find_config_file(state(ctx).config_path) or user_config_path()
    text = path.read_text(encoding="utf-8") if path.exists() else example_toml()
    document = tomlkit.parse(text)
    *sections, name = key.split(".")
    table = document
    for section in sections:
        if section not in table:
            table[section] = tomlkit.table()
        table = table[section]
    table[name] = typed
    new_text = tomlkit.dumps(document)
    try:
        build_config(tomllib.loads(new_text), origin=str(path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: the file would not be valid TOML: {exc}", hint="edit it by hand") from None
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    replace_file(path, lambda handle: handle.write(new_text))
    output.say(f"{key} = {tomlkit.item(typed).as_string()} in {path}", output.out())
