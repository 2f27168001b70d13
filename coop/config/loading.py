"""Typed settings: frozen dataclasses, loaded from TOML, overridden by environment variables, validated.

Where a config file is found, in order: `--config PATH`, `$COOP_CONFIG`, `./coop.toml`, then the user config
file (`$COOP_HOME/config.toml` when `COOP_HOME` is set, else the platform's user config dir for "coop"). No
file at all is fine: every key has a default. Environment variables override the file: `COOP_<SECTION>_<KEY>`
with dots turned into underscores, e.g. `COOP_MODEL_NAME`, `COOP_MEMORY_DB_PATH`,
`COOP_MEMORY_EMBEDDER_PROVIDER`. Flags override both (the CLI passes them as `overrides`).

The sections' dataclasses live in `coop.config.sections` and are re-exported here. Every field carries its help
text, range and choices in its metadata, so validation, `coop init` and `config.example.toml` come from one
description and cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from coop.config.sections import (
    _ENV_NAME,
    ChatConfig,
    Config,
    ConsolidationConfig,
    EmbedderConfig,
    ExtractionConfig,
    ImportanceConfig,
    MemoryConfig,
    ModelConfig,
    RetentionConfig,
    TraceConfig,
)
from coop.errors import ConfigError
from coop.privacy import secrets

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["ChatConfig", "Config", "ConsolidationConfig", "EmbedderConfig", "ExtractionConfig", "ImportanceConfig",
           "MemoryConfig", "ModelConfig", "RetentionConfig", "TraceConfig", "apply_env", "apply_overrides",
           "build_config", "coop_home", "iter_keys", "load_config", "resolve_db_path", "resolve_store",
           "unknown_variables", "user_config_path"]

_T = TypeVar("_T")
_D = TypeVar("_D", bound="DataclassInstance")


def coop_home() -> Path:
    """Where coop keeps its data: `$COOP_HOME`, else the platform's user data dir for "coop"."""
    env = os.environ.get("COOP_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("coop", appauthor=False))


def user_config_path() -> Path:
    """The per-user config file: inside `COOP_HOME` when it is set (keeps a home self-contained)."""
    if os.environ.get("COOP_HOME"):
        return coop_home() / "config.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir("coop", appauthor=False)) / "config.toml"


def find_config_file(explicit: str | os.PathLike[str] | None = None,
                     env: Mapping[str, str] | None = None) -> Path | None:
    """The config file to read, in the documented search order; an explicit path that is missing is an error."""
    env = os.environ if env is None else env
    for candidate in (explicit, env.get("COOP_CONFIG") or None):
        if candidate:
            path = Path(candidate).expanduser()
            if not path.exists():
                raise ConfigError(f"config file not found: {path}",
                                  hint="check the path, or run `coop init` to write one")
            if not path.is_file():  # a FIFO, a device, a directory: there, but not a file to read (and a FIFO
                raise ConfigError(f"config path is not a regular file: {path}",  # would block the read)
                                  hint="point --config (or COOP_CONFIG) at a TOML file")
            return path
    for path in (Path.cwd() / "coop.toml", user_config_path()):
        if path.is_file():
            return path
    return None


def load_config(explicit: str | os.PathLike[str] | None = None, *,
                env: Mapping[str, str] | None = None,
                overrides: Mapping[str, Any] | None = None) -> Config:
    """Read the config file (if any), apply environment and flag overrides, validate, and return it."""
    env = os.environ if env is None else env
    path = find_config_file(explicit, env)
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            raise ConfigError(f"{path} is not UTF-8 text", hint="save the config file as UTF-8") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}", hint="see config.example.toml for the syntax") from None
        except RecursionError:  # tomllib recurses per nesting level: a 5000-deep array is not a config
            raise ConfigError(f"{path}: values are nested too deeply", hint="see config.example.toml") from None
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror}", hint="check the file's permissions") from None
    config = build_config(data, origin=str(path) if path else "defaults")
    config = apply_env(config, env)
    if overrides:
        config = apply_overrides(config, overrides)
    return dataclasses.replace(config, source=str(path) if path else "")


def build_config(data: Mapping[str, Any], origin: str = "config") -> Config:
    """Turn parsed TOML into a validated `Config`; unknown keys and bad values raise `ConfigError`."""
    return _build(Config, data, prefix="", origin=origin)


def _public_fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if not f.metadata.get("internal")]


def _build(cls: type[_T], data: Mapping[str, Any], prefix: str, origin: str) -> _T:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{origin}: [{prefix.rstrip('.')}] must be a table",
                          hint=f"write it as a [{prefix.rstrip('.')}] section")
    fields = {f.name: f for f in _public_fields(cls)}
    for key in data:
        if key not in fields:
            raise ConfigError(f"{origin}: unknown key '{prefix}{key}'", hint=_did_you_mean(key, fields, prefix))
    values: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in data:
            continue
        if dataclasses.is_dataclass(f.default_factory) or _is_section(f):
            values[name] = _build(_section_type(f), data[name], prefix=f"{prefix}{name}.", origin=origin)
        else:
            values[name] = validate_value(f, data[name], f"{prefix}{name}", origin)
    return cls(**values)


def _is_section(f: dataclasses.Field[Any]) -> bool:
    return f.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(f.default_factory)


def _section_type(f: dataclasses.Field[Any]) -> type:
    return f.default_factory  # type: ignore[return-value]


def _did_you_mean(key: str, fields: Mapping[str, Any], prefix: str) -> str:
    close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.6)
    if close:
        return f"did you mean '{prefix}{close[0]}'?"
    return "known keys here: " + ", ".join(prefix + k for k in fields)


def _type_name(t: type) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}[t]


def _field_type(f: dataclasses.Field[Any]) -> type:
    return type(f.default)


def validate_value(f: dataclasses.Field[Any], value: Any, dotted: str, origin: str) -> Any:
    """Check one value's type, range and choices against its field; returns it converted (int -> float)."""
    want = _field_type(f)
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    meta = f.metadata
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        # A key pasted into api_key_env (as a list, say) must not be repeated back: name only its type.
        shown = f"a {type(value).__name__}" if meta.get("env_name") else repr(value)
        raise ConfigError(f"{origin}: '{dotted}' must be {_type_name(want)}, not {shown}",
                          hint=f"for example: {dotted.rsplit('.', 1)[-1]} = {toml_value(f.default)}")
    if isinstance(value, float) and not math.isfinite(value):  # nan passes every range comparison
        raise ConfigError(f"{origin}: '{dotted}' must be a finite number, not {value!r}",
                          hint=f"use a value from {number_text(meta.get('min'))} to {number_text(meta.get('max'))}")
    pasted = isinstance(value, str) and secrets.contains_secret(value)  # a key in any setting: never echoed or used
    if pasted or (meta.get("env_name") and isinstance(value, str) and value and not _ENV_NAME.fullmatch(value)):
        raise ConfigError(f"{origin}: '{dotted}' " + ("looks like an API key" if pasted else "must name an environment "
                          "variable"), hint='keys go in the environment; then e.g. api_key_env = "OPENAI_API_KEY"')
    if meta.get("choices") and value not in meta["choices"]:
        close = difflib.get_close_matches(str(value), meta["choices"], n=1)
        hint = f"did you mean '{close[0]}'?" if close else "choose one of: " + ", ".join(meta["choices"])
        raise ConfigError(f"{origin}: '{dotted}' must be one of {', '.join(meta['choices'])}, not {value!r}", hint=hint)
    low, high = meta.get("min"), meta.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(f"{origin}: '{dotted}' = {value!r} is out of range",
                          hint=f"use a value from {number_text(low)} to {number_text(high)}")
    return value


def number_text(x: float | None) -> str:
    return "-inf" if x is None else (str(int(x)) if float(x).is_integer() else str(x))


def iter_keys(cls: type = Config, prefix: str = "") -> list[tuple[str, dataclasses.Field[Any]]]:
    """Every leaf key as ('memory.embedder.dims', field), in declaration order."""
    keys: list[tuple[str, dataclasses.Field[Any]]] = []
    for f in _public_fields(cls):
        if _is_section(f):
            keys.extend(iter_keys(_section_type(f), f"{prefix}{f.name}."))
        else:
            keys.append((f"{prefix}{f.name}", f))
    return keys


def env_var_name(dotted: str) -> str:
    return "COOP_" + dotted.replace(".", "_").upper()


def parse_setting(dotted: str, raw: str, origin: str) -> Any:
    """A setting's value typed in as text (`coop config set KEY VALUE`), as its field takes it, or a ConfigError
    naming `origin`; an unknown key too, with the nearest known one."""
    fields = dict(iter_keys())
    if dotted not in fields:
        close = difflib.get_close_matches(dotted, list(fields), n=1, cutoff=0.6)
        raise ConfigError(f"unknown setting {dotted!r}", hint=f"did you mean '{close[0]}'?" if close else
                          "every key is in the file `coop init` writes, e.g. model.name")
    return _parse_env(fields[dotted], raw, dotted, origin)


def _parse_env(f: dataclasses.Field[Any], raw: str, dotted: str, origin: str | None = None) -> Any:
    want = _field_type(f)
    origin = origin or f"environment variable {env_var_name(dotted)}"
    if want is bool:
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(f"{origin} must be true or false, not {raw!r}", hint="use 1/0 or true/false")
    if want in (int, float):
        try:
            parsed: Any = want(raw.strip())
        except ValueError:
            raise ConfigError(f"{origin} must be {_type_name(want)}, not {raw!r}",
                              hint=f"for example: {env_var_name(dotted)}={toml_value(f.default)}") from None
        return validate_value(f, parsed, dotted, origin)
    return validate_value(f, raw, dotted, origin)


# Variables coop reads that are not settings: where its files are, and switches for debugging, the engine and the
# tests. With the settings' own `COOP_<SECTION>_<KEY>` names, these are every `COOP_*` name coop knows.
OTHER_VARIABLES = ("COOP_HOME", "COOP_CONFIG", "COOP_MODEL_CACHE", "COOP_DEBUG",
                   "COOP_EMBEDDER_FASTEMBED", "COOP_CRASH_SEED", "COOP_DATABASE_URL")
FREE_PREFIXES = ("COOP_TEST_",)  # the test suite's own variables (COOP_TEST_MODEL_PATH, ...)


def unknown_variables(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """Each `COOP_*` variable in `env` that coop does not read, with a hint: a misspelt setting
    (`COOP_MODEL_NAMEE`) would otherwise be ignored without a word."""
    known = [env_var_name(dotted) for dotted, _ in iter_keys()] + list(OTHER_VARIABLES)
    found = []
    for name in sorted(env):
        if not name.startswith("COOP_") or name in known or name.startswith(FREE_PREFIXES):
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        found.append((name, f"did you mean {close[0]}?" if close else
                      "settings are COOP_<SECTION>_<KEY>, e.g. COOP_MODEL_NAME (see config.example.toml)"))
    return found


def apply_env(config: Config, env: Mapping[str, str]) -> Config:
    """Apply `COOP_<SECTION>_<KEY>` variables on top of `config`."""
    updates = {dotted: _parse_env(f, env[env_var_name(dotted)], dotted)
               for dotted, f in iter_keys() if env_var_name(dotted) in env}
    return _replace_dotted(config, updates) if updates else config


def apply_overrides(config: Config, overrides: Mapping[str, Any]) -> Config:
    """Apply already-typed values by dotted key (what command-line flags set)."""
    fields = dict(iter_keys())
    checked = {}
    for dotted, value in overrides.items():
        if dotted not in fields:
            raise ConfigError(f"unknown setting '{dotted}'", hint=_did_you_mean(dotted, fields, ""))
        checked[dotted] = validate_value(fields[dotted], value, dotted, "command line")
    return _replace_dotted(config, checked)


def _replace_dotted(obj: _D, updates: Mapping[str, Any]) -> _D:
    grouped: dict[str, dict[str, Any]] = {}
    direct: dict[str, Any] = {}
    for dotted, value in updates.items():
        head, _, rest = dotted.partition(".")
        if rest:
            grouped.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    for head, sub in grouped.items():
        direct[head] = _replace_dotted(getattr(obj, head), sub)
    return dataclasses.replace(obj, **direct)


def resolve_store(config: Config, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(backend, location) of the configured store: ("sqlite", a path or ':memory:') or ("postgres", a URL from
    $COOP_DATABASE_URL, else `memory.url`)."""
    if config.memory.backend != "postgres":
        return "sqlite", resolve_db_path(config)
    env = os.environ if env is None else env
    url = (env.get("COOP_DATABASE_URL") or "").strip() or config.memory.url.strip()
    if not url:
        raise ConfigError("memory.backend is 'postgres' but no server is named",
                          hint="set memory.url or COOP_DATABASE_URL to postgresql://user@host:5432/dbname")
    if not url.startswith(("postgresql://", "postgres://")) or "\x00" in url:
        raise ConfigError("the Postgres URL must start with postgresql://",
                          hint="e.g. postgresql://coop@db.example.com:5432/coop")
    return "postgres", url


def resolve_db_path(config: Config) -> str:
    """The database location: `memory.db_path` (':memory:' kept as is), else `$COOP_HOME/coop.db`."""
    raw = config.memory.db_path
    if "\x00" in raw:
        raise ConfigError("memory.db_path contains a NUL character", hint="set memory.db_path to a file path")
    if raw == ":memory:":
        return raw
    if raw:
        return str(Path(raw).expanduser())
    return str(coop_home() / "coop.db")


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)
