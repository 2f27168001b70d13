"""`coop check`: validate the setup, one line per rule, so a user knows what works before they rely on it.

Each check is ok, a warning (coop works, but less well: no chat model yet, vector search on the slow path) or
an error (something configured is broken). Any error makes the command exit 1, but a config that cannot be read
exits 2, as it does from every other command (a usage error: `coop.errors.ConfigError`). No check prints a secret: the
API-key check says only whether the variable is set, and every message and hint is masked (`coop.privacy.secrets`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.errors import ConfigError, CoopError, ExitCode
from coop.memory.text import plural
from coop.model.credentials import key_variable, missing_key, missing_key_hint
from coop.privacy.secrets import mask, mask_optional

if TYPE_CHECKING:
    from coop.config.loading import Config
    from coop.memory.storage.interface import Backend

# The key variable litellm reads for common providers, by the model string's prefix. Local servers need none.
@dataclass(frozen=True)
class Check:
    name: str
    severity: str  # "ok" | "warning" | "error"
    message: str
    hint: str | None = None

    def __post_init__(self) -> None:  # a check prints what it found (names, paths, errors): never a key in them
        object.__setattr__(self, "message", mask(self.message))
        object.__setattr__(self, "hint", mask_optional(self.hint))

    @property
    def passed(self) -> bool:
        return self.severity != "error"


def ok(name: str, message: str) -> Check:
    return Check(name, "ok", message)


def warning(name: str, message: str, hint: str | None = None) -> Check:
    return Check(name, "warning", message, hint)


def failure(name: str, message: str, hint: str | None = None) -> Check:
    return Check(name, "error", message, hint)


def check_model(config: "Config") -> list[Check]:
    model = config.model
    if not model.name:
        from coop.model.discover import find_local_server

        found = find_local_server()
        if found is not None:
            return [warning("model", f"no chat model configured; {found.name} answers at {found.api_base} "
                                     f"({found.model}), which `coop chat` will use", f"to keep it: {found.command()}")]
        return [warning("model", "no chat model configured: `coop chat` needs one; memory commands work without",
                        "set [model] name, e.g. 'openai/gpt-4o-mini' with api_key_env, or a local server such as "
                        "Ollama ('ollama_chat/llama3.1') or LM Studio through api_base")]
    checks = [ok("model", f"chat model {model.name}" + (f" at {model.api_base}" if model.api_base else ""))]
    variable = key_variable(model.name, model.api_key_env, model.api_base)
    if variable is None:
        checks.append(ok("api key", "the model needs no API key (local server)"))
    elif variable == "":
        checks.append(warning("api key", f"cannot tell which variable holds the key for {model.name}",
                              "set model.api_key_env to the variable's name"))
    elif not missing_key(model.name, model.api_key_env, model.api_base):
        checks.append(ok("api key", f"{variable} is set"))
    else:
        checks.append(failure("api key", f"{variable} is not set; {model.name} needs it", missing_key_hint(variable)))
    if model.api_base:
        checks.append(check_server(model.name, model.api_base, os.environ.get(variable) if variable else None))
    return checks


SERVER_TIMEOUT_SECONDS = 2.0


def server_model_lists(api_base: str) -> list[str]:
    """Where a server at `api_base` lists its models: the OpenAI-compatible `/models` (LM Studio, llama.cpp,
    vLLM, Ollama's /v1), then `/v1/models` for a base given without /v1, then Ollama's own `/api/tags`."""
    base = api_base.rstrip("/")
    urls = [f"{base}/models"]
    if not base.endswith("/v1"):
        urls += [f"{base}/v1/models", f"{base}/api/tags"]
    return urls


def check_server(model: str, api_base: str, api_key: str | None) -> Check:
    """One GET of the server's model list (2 s): is anything listening at `api_base`, and which models does it
    offer? Nothing else is sent; the key, if any, only as the usual bearer header."""
    import json
    import urllib.error
    import urllib.request

    reason = ""
    for url in server_model_lists(api_base):
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
        try:
            with urllib.request.urlopen(request, timeout=SERVER_TIMEOUT_SECONDS) as response:
                data = json.loads(response.read(1_000_000) or b"{}")
        except urllib.error.HTTPError as exc:
            reason = f"HTTP {exc.code} from {url}"
            if exc.code in (401, 403):
                return failure("server", f"{api_base} refused the key ({reason})",
                               "check the key in model.api_key_env")
            continue  # another path may list the models
        except (urllib.error.URLError, OSError, ValueError) as exc:
            detail = getattr(exc, "reason", exc)
            if isinstance(detail, TimeoutError):  # listening, but busy: llama-cpp-python answers one request at a time
                return warning("server", f"{api_base} did not list its models within {SERVER_TIMEOUT_SECONDS:g} s",
                               "a local server busy with a request answers nothing else; run `coop check` again")
            return failure("server", f"nothing answers at {api_base} ({mask(str(detail))})",
                           "start the server (ollama serve, LM Studio's local server, llama-server) or correct "
                           "model.api_base")
        rows = (data.get("data") or data.get("models") or []) if isinstance(data, dict) else []
        names = [str(r.get("id") or r.get("name") or r.get("model")) for r in rows if isinstance(r, dict)]
        offered = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        wanted = model.split("/", 1)[1] if "/" in model else model
        if len(names) == 1 and rows[0].get("owned_by") == "llamacpp":  # llama.cpp: its one model, whatever the name
            return ok("server", f"{api_base} answers: llama.cpp serves its one model ({names[0]}) to any model name")
        if names and not any(wanted == n or wanted == n.split(":")[0] for n in names):
            return warning("server", f"{api_base} answers but does not list {wanted}; it offers: {offered}",
                           "set model.name to one of them, with its provider prefix (e.g. openai/NAME)")
        return ok("server", f"{api_base} answers" + (f"; models: {offered}" if names else ""))
    return warning("server", f"{api_base} answers, but lists no models ({reason})",
                   "fine for a server without a model list; check model.api_base if chat fails")


def check_embedder(config: "Config", store: "Backend") -> list[Check]:
    from coop.memory.growth.embedders import resolve_model_path
    from coop.services import load_embedder

    settings = config.memory.embedder
    status = load_embedder(config)
    checks = []
    if status.embedder is None:
        make = failure if settings.model_path or settings.provider != "fastembed" else warning
        checks.append(make("embedder", f"{status.configured_id} cannot load: {status.error}; "
                                       "search runs on full text only", status.hint))
    else:
        where = resolve_model_path(settings) if settings.provider == "fastembed" else None
        checks.append(ok("embedder", f"{status.embedder.id} loaded" + (f" from {where}" if where else "")))
    stored = store.embedders()
    others = {e: n for e, n in stored.items() if e != status.configured_id}
    if others:
        detail = ", ".join(f"{n} from {e}" for e, n in others.items())
        same_model = [e for e in others if e.rsplit("/", 1)[0] == status.configured_id.rsplit("/", 1)[0]]
        make = failure if same_model else warning
        checks.append(make("stored vectors", f"vectors of another embedder or size: {detail}; they are not used",
                           "run `coop memory reembed` to embed everything with the configured model"))
    else:
        count = stored.get(status.configured_id, 0)
        checks.append(ok("stored vectors", f"{plural(count, 'vector')}, all from the configured embedder"))
    return checks


def run_checks(load: Callable[[], "Config"], open_store: Callable[["Config"], "Backend"],
               probe: bool = False) -> list[Check]:
    """Every check, in order; a failure to load the config or open the database ends the list there."""
    from coop.config.loading import resolve_store
    from coop.memory.storage.backends import describe

    try:
        config = load()
    except ConfigError as exc:
        return [failure("config", exc.message, exc.hint)]
    checks = [ok("config", f"config read from {config.source}" if config.source else "no config file: defaults")]
    checks += check_model(config)
    if config.model.name:
        from coop.cli.check_support import known_support, probe_support

        found = known_support(config) + (probe_support(config) if probe else [])
        checks += [Check(name, severity, message, hint) for severity, name, message, hint in found]
    try:
        path = describe(*resolve_store(config))
        store = open_store(config)
    except CoopError as exc:
        from coop.memory.storage.items import DAMAGED_HINT

        hint = exc.hint if exc.hint and "coop check" not in exc.hint else DAMAGED_HINT
        return checks + [failure("database", exc.message, hint)]
    try:
        checks.append(ok("database", f"database at {path}"))
        findings = store.check()  # the store's own: engine, schema, integrity, indexes, writable, vectors
        checks += [Check(f.name, f.severity, f.message, f.hint) for f in findings if f.name != "embedding backlog"
                   and f.name != "vector index"]
        checks += guarded_checks(store, "stored vectors", lambda: check_embedder(config, store))  # reads can raise
        checks += [Check(f.name, f.severity, f.message, f.hint) for f in findings if f.name in
                   ("embedding backlog", "vector index")]
    finally:
        store.close()
    return checks


def guarded_checks(store: "Backend", name: str, run: Callable[[], list[Check]]) -> list[Check]:
    """A group of checks that reads the store: a failure to read is a failed check (`Backend.guarded`)."""
    from coop.memory.storage.items import Finding

    found = store.guarded(name, lambda: [Finding(c.name, c.severity, c.message, c.hint) for c in run()])
    return [Check(f.name, f.severity, f.message, f.hint) for f in found]


def check(
    ctx: typer.Context,
    json_: Annotated[bool, typer.Option("--json", help="print JSON on stdout")] = False,
    probe: Annotated[bool, typer.Option("--probe", help="send the models one small JSON and one tool request, "
                                                        "timed: what they support, and whether they are slow")]
    = False,
) -> None:
    """Validate the config, the database, the embedder and the model setup."""
    from coop.config.loading import resolve_store
    from coop.memory.storage.backends import open_store

    app_state = state(ctx)
    checks = run_checks(app_state.config,  # (which registers the configured key variables' values to mask)
                        lambda c: open_store(*resolve_store(c), busy_timeout_ms=c.memory.busy_timeout_ms),
                        probe)
    errors = sum(1 for c in checks if c.severity == "error")
    warnings = sum(1 for c in checks if c.severity == "warning")
    if json_:
        output.print_json({"passed": errors == 0, "errors": errors, "warnings": warnings,
                           "checks": [{**asdict(c), "passed": c.passed} for c in checks]})
    else:
        from rich.table import Table

        marks = {"ok": "[green]✓[/]", "warning": "[yellow]⚠[/]", "error": "[red]✗[/]"}
        table = Table(box=None, pad_edge=False, show_header=False)
        table.add_column("")
        table.add_column("check", no_wrap=True)
        table.add_column("result", overflow="fold")
        for c in checks:
            detail = output.escape(c.message) + (f"\n[dim]hint: {output.escape(c.hint)}[/]" if c.hint else "")
            table.add_row(marks[c.severity], c.name, detail)
        output.out().print(table)
        verdict = "[red]failed[/]" if errors else "[green]ready[/]"
        output.out().print(f"coop check: {verdict}: {len(checks) - errors - warnings} ok, "
                           f"{warnings} warning{'s' * (warnings != 1)}, {errors} error{'s' * (errors != 1)}")
    if errors:
        unreadable = any(c.name == "config" and not c.passed for c in checks)
        raise typer.Exit(int(ExitCode.USAGE if unreadable else ExitCode.ERROR))
