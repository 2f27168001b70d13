"""Typed settings: frozen dataclasses, loaded from TOML, overridden by environment variables, validated.

Where a config file is found, in order: `--config PATH`, `$COOP_CONFIG`, `./coop.toml`, then the user config
file (`$COOP_HOME/config.toml` when `COOP_HOME` is set, else the platform's user config dir for "coop"). No
file at all is fine: every key has a default. Environment variables override the file: `COOP_<SECTION>_<KEY>`
with dots turned into underscores, e.g. `COOP_MODEL_NAME`, `COOP_MEMORY_DB_PATH`,
`COOP_MEMORY_EMBEDDER_PROVIDER`. Flags override both (the CLI passes them as `overrides`).

Every field carries its help text, range and choices in its metadata, so validation, `coop init` and
`config.example.toml` come from one description and cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from coop import secrets
from coop.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_T = TypeVar("_T")
_D = TypeVar("_D", bound="DataclassInstance")


def _f(default: Any, help: str, *, min: float | None = None, max: float | None = None,
       choices: tuple[str, ...] | None = None, env_name: bool = False) -> Any:
    return field(default=default, metadata={"help": help, "min": min, "max": max, "choices": choices,
                                            "env_name": env_name})


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ModelConfig:
    name: str = _f("", "litellm model string for chat, e.g. 'openai/gpt-4o-mini' or 'ollama/llama3.1'; empty: none")
    fast: str = _f("", "cheaper model for extraction and consolidation; empty: use `name`")
    api_base: str = _f("", "base URL of an OpenAI-compatible server (Ollama, LM Studio, vLLM); empty: provider default")
    api_key_env: str = _f("", "name of the environment variable holding the API key (never the key itself)",
                          env_name=True)
    timeout_seconds: float = _f(60.0, "seconds before a model request is abandoned", min=1, max=3600)


@dataclass(frozen=True)
class EmbedderConfig:
    provider: str = _f("fastembed", "fastembed (local), litellm (remote API) or hash (tests only)",
                       choices=("fastembed", "litellm", "hash"))
    model: str = _f("sentence-transformers/all-MiniLM-L6-v2", "embedding model name for the provider")
    model_path: str = _f("", "local fastembed model directory (offline machines); empty: the provisioned "
                             "default, then fastembed's own cache")
    dims: int = _f(384, "vector dimensions the model produces", min=8, max=8192)
    api_base: str = _f("", "base URL for a litellm embedding provider; empty: provider default")
    api_key_env: str = _f("", "environment variable with the embedding provider's API key", env_name=True)
    batch_size: int = _f(32, "texts embedded per batch", min=1, max=4096)


@dataclass(frozen=True)
class ImportanceConfig:
    user: float = _f(0.5, "importance of a user message", min=0, max=1)
    assistant: float = _f(0.3, "importance of an assistant message", min=0, max=1)
    tool: float = _f(0.1, "importance of a tool call or result", min=0, max=1)
    explicit_remember: float = _f(0.9, "a user message that asks to remember something", min=0, max=1)
    correction: float = _f(0.85, "a user message that corrects something (\"actually, ...\")", min=0, max=1)
    long_chars: int = _f(400, "length from which a message gets the long bonus", min=1, max=1_000_000)
    long_bonus: float = _f(0.1, "added for a long message", min=0, max=1)
    code_bonus: float = _f(0.05, "added for a message with code", min=0, max=1)


@dataclass(frozen=True)
class ExtractionConfig:
    enabled: bool = _f(True, "extract durable facts after each turn (fast model)")
    max_facts_per_turn: int = _f(5, "most facts kept from one exchange", min=0, max=50)
    max_changes_per_turn: int = _f(2, "most existing facts one exchange may update or supersede (each is shown, "
                                      "with how to undo it)", min=0, max=50)
    dedup_threshold: float = _f(0.9, "cosine at or above which a new fact with the same content words is a duplicate",
                                min=0.5, max=1.0)
    related_threshold: float = _f(0.75, "cosine at or above which an existing fact is a candidate for "
                                        "reconciliation (update or supersede) by the fast model", min=0.0, max=1.0)
    min_confidence: float = _f(0.6, "below this confidence a reconciliation decision keeps both facts", min=0, max=1)
    max_instructions: int = _f(20, "standing instructions kept active; the oldest beyond are archived",
                               min=1, max=500)


@dataclass(frozen=True)
class ConsolidationConfig:
    enabled: bool = _f(True, "summarise old conversation spans in the background")
    interval_hours: float = _f(6.0, "hours between background consolidation runs", min=0.01, max=24 * 30)
    idle_minutes: float = _f(20.0, "minutes of inactivity that end a session", min=1, max=24 * 60)
    min_age_minutes: float = _f(30.0, "messages younger than this (in a session still open) are left for later",
                                min=0, max=24 * 60 * 30)
    span_messages: int = _f(40, "most messages summarised together", min=2, max=1000)
    max_spans_per_run: int = _f(5, "work per run: spans consolidated at most", min=1, max=1000)


@dataclass(frozen=True)
class RetentionConfig:
    enabled: bool = _f(True, "archive facts that go unused (archived facts stay searchable; nothing is deleted)")
    half_life_days: float = _f(90.0, "a fact's weight halves after this many days without use", min=1, max=36500)
    archive_below: float = _f(0.05, "archive a fact whose decayed weight falls below this", min=0, max=1)
    keep_mentions: int = _f(3, "facts mentioned this often are never archived by decay", min=1, max=1_000_000)


@dataclass(frozen=True)
class MemoryConfig:
    db_path: str = _f("", "database file; empty: $COOP_HOME/coop.db; ':memory:' for a throwaway database")
    busy_timeout_ms: int = _f(5000, "how long a write waits for another process's lock", min=0, max=600_000)
    context_budget: int = _f(8000, "tokens for the whole prompt's memory part and history", min=256, max=2_000_000)
    memory_budget_fraction: float = _f(0.1, "share of context_budget for recalled memory", min=0.01, max=0.9)
    recency_messages: int = _f(10, "last messages of this session always in the prompt", min=0, max=500)
    salience_threshold: float = _f(0.85, "importance at or above which an item is always a candidate",
                                   min=0.0, max=1.0)
    word_similarity_floor: float = _f(0.2, "cosine a match by words alone still needs: its meaning must be near too",
                                      min=-1.0, max=1.0)
    prompt_word_similarity_floor: float = _f(0.25, "the same, for a chat prompt (a stricter bar)", min=-1.0, max=1.0)
    bm25_floor: float = _f(0.27, "BM25 a match by words alone needs, as a share of one rare word's score in this "
                                 "memory: a stray common word is not a match", min=0.0, max=10.0)
    similarity_floor: float = _f(0.655, "cosine below which an item is never recalled by meaning alone (0.655 "
                                        "suits MiniLM)",
                                 min=-1.0, max=1.0)
    rrf_k: int = _f(60, "reciprocal-rank fusion constant (fusion = \"rrf\")", min=1, max=1000)
    fusion: str = _f("score", "how the vector and full-text legs are combined: score (normalised BM25 plus "
                              "vector_weight x cosine, computed for every candidate) or rrf (reciprocal rank)",
                     choices=("score", "rrf"))
    vector_weight: float = _f(1.0, "weight of the cosine against the best full-text match (= 1) in score fusion",
                              min=0.0, max=10.0)
    context_weight: float = _f(0.5, "weight of a message's two preceding messages and its date, against its own "
                                    "words (= 1), in full-text search", min=0.0, max=1.0)
    search_limit: int = _f(10, "default number of results of a search", min=1, max=1000)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    importance: ImportanceConfig = field(default_factory=ImportanceConfig)
    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    retention: RetentionConfig = field(default_factory=RetentionConfig)


@dataclass(frozen=True)
class ChatConfig:
    working_memory_cap: int = _f(200, "session messages held; history takes what the budget allows", min=2, max=10_000)
    tools: bool = _f(True, "offer memory tools to models that support function calling")
    confirm_memory_changes: bool = _f(True, "ask before the model's memory tools forget, rewrite or supersede "
                                            "memory, or add a standing instruction; where nobody can be asked "
                                            "(pipes, --json) such a call is refused")
    user: str = _f("", "default user id; empty: the OS user name")


@dataclass(frozen=True)
class TraceConfig:
    file: str = _f("", "JSON-lines trace of retrieval and model events; empty: off")


@dataclass(frozen=True)
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    chat: ChatConfig = field(default_factory=ChatConfig)
    trace: TraceConfig = field(default_factory=TraceConfig)
    source: str = field(default="", compare=False, metadata={"internal": True})


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
            if not path.is_file():
                raise ConfigError(f"config file not found: {path}",
                                  hint="check the path, or run `coop init` to write one")
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


def _parse_env(f: dataclasses.Field[Any], raw: str, dotted: str) -> Any:
    want = _field_type(f)
    origin = f"environment variable {env_var_name(dotted)}"
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
