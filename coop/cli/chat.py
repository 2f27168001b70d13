"""`coop chat`: the terminal assistant. Wires config, memory, embedder, model and worker into a Repl."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from coop import output
from coop.cli.context import own_process, state
from coop.errors import ErrorKind, ModelError, StoreError

if TYPE_CHECKING:
    from coop.chat.session import ChatSession
    from coop.config.loading import Config
    from coop.memory.embedder import Embedder
    from coop.memory.growth.embedders import EmbedderStatus
    from coop.memory.growth.worker import BackgroundWorker, Timer

log = logging.getLogger(__name__)
WARM_UP_WAIT_SECONDS = 10.0  # at exit inside another program's process, for a warm-up still importing litellm
PIPE_EXTRACTION_WAIT_SECONDS = 60.0  # at the end of a pipe, for the last exchange's extraction at most


class EmbedderLoader:
    """Loads the embedder in a background thread (it takes a second or so), started once the prompt is up so
    that the first prompt appears at once. A turn that needs the embedder waits for it; the worker's jobs wait
    for the REPL to start the loading (`START_GRACE_SECONDS` at most), so they do not start it early."""

    START_GRACE_SECONDS = 3.0

    def __init__(self, config: "Config", then: "Callable[[Embedder], object] | None" = None) -> None:
        self.config, self.then = config, then
        self.status: "EmbedderStatus | None" = None
        self._thread = threading.Thread(target=self._load, name="coop-embedder-load", daemon=True)
        self._lock = threading.Lock()
        self._begun = threading.Event()

    def _load(self) -> None:
        from coop.services import load_embedder

        self.status = load_embedder(self.config)
        embedder = self.status.embedder if self.status is not None else None
        if embedder is not None and self.then is not None:
            try:
                self.then(embedder)
            except Exception:  # a head start only: the first search does the same work itself
                log.warning("preparing the vector index failed", exc_info=True)

    def start(self) -> None:
        with self._lock:
            if not self._begun.is_set():
                self._begun.set()
                self._thread.start()

    def ready(self) -> bool:
        return self._begun.is_set() and not self._thread.is_alive()

    def wait(self, timeout: float) -> None:
        """Until the loading is done (or `timeout`): for work that should not compete with it for the GIL."""
        if self._begun.is_set():
            self._thread.join(timeout)

    def __call__(self) -> "Embedder | None":
        if threading.current_thread() is not threading.main_thread():
            self._begun.wait(self.START_GRACE_SECONDS)
        self.start()
        self._thread.join()
        return None if self.status is None else self.status.embedder


def warm_model_client(model: str, loader: EmbedderLoader | None = None) -> None:
    """Off the main thread, what the first turn needs, in the order it needs it, so that a message typed the moment
    the prompt shows reaches the model within a second: the secret patterns (0.2 s of detect-secrets' imports,
    which the first mask pays: the history file masks the line at Enter), the lean request path
    (coop/model/lean.py: http.client and litellm's model map as text; the first requests to a local
    OpenAI-compatible server go out through it); then, once the embedder (which the turn's recall waits for) has
    loaded, so as not to slow it by sharing the interpreter's lock, the first reply's rendering and litellm (3.5 s
    of Python) with the code of its first request, which later requests go through; last, the model that tells a
    question's language (most of a second; a search about the user whose "me" several languages share asks it, and
    so does the write path after the first reply). Not in the embedder's loading thread: a turn waits for that
    thread to end, and a first message typed at once went from 0.47 to 1.08 s there."""
    from coop.memory.language.detect import load as load_language_model
    from coop.model import llm
    from coop.privacy.secret_shapes import detector_shapes

    detector_shapes()
    llm.warm_lean()
    if loader is not None:
        loader.wait(30.0)
    import rich.markdown  # noqa: F401 (the first reply's rendering)

    llm.warm_up(model)
    load_language_model()


def start_timers(chat_session: "ChatSession", config: "Config", worker: "BackgroundWorker") -> list["Timer"]:
    """Consolidation once after start-up and every `interval_hours`, and the end of a session after
    `idle_minutes` without a turn; all only submit jobs to the worker, which has its own connection (the REPL's
    is never touched from here)."""
    from coop.memory.growth.worker import Timer

    settings = config.memory.consolidation
    if not settings.enabled:
        return []
    user_id = chat_session.memory.user_id

    def periodic() -> None:
        worker.submit("periodic consolidation", chat_session.jobs.consolidation(user_id))

    def idle_check() -> None:
        chat_session.end_if_idle(settings.idle_minutes * 60)

    # Imported conversations and spans left from earlier runs: a bounded amount (`max_spans_per_run`) after
    # start-up, behind the start-up embedding on the worker's queue, then each `interval_hours`.
    worker.submit("consolidation after start-up", chat_session.jobs.consolidation(user_id))
    return [Timer(settings.interval_hours * 3600, periodic, "coop-consolidation"),
            Timer(min(60.0, settings.idle_minutes * 60 / 4), idle_check, "coop-idle")]


def _nonempty_user(value: str | None) -> str | None:
    """An explicit but empty --user (a script's unset variable) must not fall back to the default user."""
    if value is not None and not value.strip():
        raise typer.BadParameter("the user id is empty")
    return value


def _a_local_server(config: "Config") -> "Config":
    """With no model configured: a model server running on this machine (`discover.py`), said, or the error."""
    from coop.config.loading import apply_overrides
    from coop.model import llm
    from coop.model.discover import find_local_server

    found = find_local_server()
    if found is None:
        raise ModelError("no chat model configured, and no Ollama, LM Studio or llama.cpp server answers on this "
                         "machine", hint=llm.NO_MODEL_HINT, kind=ErrorKind.NOT_FOUND)
    output.info(f"no chat model configured: using {found.name} at {found.api_base}, {found.model} (to keep it: "
                f"{found.command()})")
    return apply_overrides(config, {"model.name": found.model, "model.api_base": found.api_base})


def chat(
    ctx: typer.Context,
    session: Annotated[int | None, typer.Option("--session", metavar="ID", min=1, max=2**63 - 1,
                                                help="resume a session")] = None,
    user: Annotated[str | None, typer.Option("--user", metavar="ID", help="whose memory",
                                                callback=_nonempty_user)] = None,
    incognito: Annotated[bool, typer.Option("--incognito",
                                            help="write nothing to disk (memory is still read)")] = False,
    model: Annotated[str | None, typer.Option("--model", help="litellm model string for this chat")] = None,
    api_base: Annotated[str | None, typer.Option("--api-base", metavar="URL", help="the model server's URL for this "
                                                 "chat (an OpenAI-compatible server, Ollama)")] = None,
    json_: Annotated[bool, typer.Option("--json", help="pipe mode: one JSON object per turn on stdout")] = False,
    no_tools: Annotated[bool, typer.Option("--no-tools", help="do not offer memory tools to the model")] = False,
    commands_from_pipe: Annotated[bool, typer.Option(
        "--commands-from-pipe", help="run piped lines that start with / as commands (by default they are sent as "
                                     "text: a document piped in must not run the commands it quotes)")] = False,
) -> None:
    """Chat with your configured model, with your memory in every turn."""
    from rich.console import Console
    from rich.markup import escape

    from coop.chat.repl import Repl
    from coop.chat.session import ChatSession
    from coop.chat.terminal import dumb_terminal, interactive_terminal
    from coop.config.loading import apply_overrides, coop_home, resolve_store
    from coop.files.logs import logging_to_file
    from coop.files.trace import NO_TRACE, Tracer
    from coop.memory.growth.embedders import missing_model
    from coop.memory.storage.backends import THROWAWAY, open_store
    from coop.memory.text import plural
    from coop.model import llm
    from coop.services import chat_model

    app_state = state(ctx)
    config = app_state.config()
    if model:
        config = apply_overrides(config, {"model.name": model})
    if api_base:
        config = apply_overrides(config, {"model.api_base": api_base})
    if no_tools:
        config = apply_overrides(config, {"chat.tools": False})
    if not config.model.name:
        config = _a_local_server(config)
    app_state.use_config(config)
    llm.check_credentials(llm.model_settings(config))  # a missing key is named now, not after the first message
    services = app_state.services()
    backend, db_path = resolve_store(config)
    if incognito and backend == "sqlite" and db_path != THROWAWAY and not os.path.exists(db_path):
        db_path = THROWAWAY  # nothing to read, and nothing may be written
    if incognito:  # a handle of its own, which the session never writes through
        services.use_store(open_store(backend, db_path, busy_timeout_ms=config.memory.busy_timeout_ms))
    memory = services.memory(user)
    loader = EmbedderLoader(config, then=lambda embedder: memory.vectors.warm(embedder.id))
    worker = None if incognito else services.worker()
    tracer = Tracer(config.trace.file) if config.trace.file and not incognito else NO_TRACE
    try:
        chat_session = ChatSession(memory, config, embedder=loader, model=chat_model(config),
                                   models=lambda name: chat_model(config, name), jobs=services.jobs(loader),
                                   session_id=session, incognito=incognito, tracer=tracer, worker=worker)
    except StoreError as exc:
        if worker is not None:
            worker.stop(timeout=0.5)
        if memory.read_only:  # the memory can still be used, without saving
            raise StoreError(exc.message, hint=f"{exc.hint}; or chat with --incognito to use your memory "
                                               "without saving anything") from None
        raise

    if memory.read_only and not incognito:  # said at once, not at the first message
        raise StoreError(f"the database is read-only: {memory.backend.location}; nothing was written",
                         hint="check the permissions of the file and its directory; or chat with --incognito to "
                              "use your memory without saving anything")
    chat_session.catch_up()
    timers = start_timers(chat_session, config, worker) if worker is not None else []
    interactive = interactive_terminal(sys.stdin, sys.stdout, os.environ) and not json_
    dumb = not json_ and dumb_terminal(sys.stdin, sys.stdout, os.environ)
    console = Console(stderr=not (interactive or dumb), highlight=False)

    missing = missing_model(config.memory.embedder)  # a look at the disk: said at once, in the banner

    def banner() -> str:
        stats = memory.stats()
        if missing is not None:
            embedder_state = f"off: {missing} (`coop memory embedder pull`); search uses full text"
        elif loader.ready():
            embedder = loader()  # loaded already: does not wait
            embedder_state = embedder.id.split("/")[-2] if embedder else "off (full text only)"
        else:
            embedder_state = "loading"
        line = (f"[bold]coop[/] · {escape(chat_session.model_name)} · user {escape(memory.user_id)} · "
                f"{plural(stats['facts_active'], 'fact')}, {plural(stats['messages'], 'message')} · "
                f"embedder {escape(embedder_state)}")
        if incognito:
            line += " · [yellow]incognito: nothing is saved (memory is still read)[/]"
        return line + "\n[dim]/help for commands, Ctrl-D to exit[/]"

    def on_exit() -> None:
        for timer in timers:
            timer.stop(timeout=0.5)
        # A script piping turns in waits for the last exchange's extraction when that exchange got a reply (at
        # most `PIPE_EXTRACTION_WAIT_SECONDS`, or the fast model's timeout if shorter); a person at the terminal
        # does not: it is recorded, and the next start finishes it.
        waited = min(config.model.fast_timeout_seconds, PIPE_EXTRACTION_WAIT_SECONDS)
        if worker is not None and not (interactive or dumb) and not incognito and chat_session.last_replied \
                and not worker.wait_idle(waited):
            console.print(f"memory: the last exchange's extraction did not finish in {waited:g} s; it was left "
                          "for the next start (`coop chat` finishes it)", soft_wrap=True)
        chat_session.end()
        chat_session.jobs.stopping.set()  # a long embedding backlog stops after its current batch
        if worker is not None:
            worker.stop(timeout=0.5 if interactive or dumb else 2.0)

    warming: list[threading.Thread] = []

    def start_loading() -> None:  # once the prompt is up: these threads would slow the start by taking the GIL
        loader.start()
        thread = threading.Thread(target=warm_model_client, args=(chat_session.model_name, loader),
                                  name="coop-model-warm-up", daemon=True)
        warming.append(thread)
        thread.start()

    repl = Repl(chat_session, console=console, json_mode=json_, banner=banner, on_exit=on_exit,
                on_start=start_loading,
                history_path=str(coop_home() / "history") if not incognito else None)
    key_names = {config.model.api_key_env, config.memory.embedder.api_key_env} - {""}
    secrets = [value for name, value in os.environ.items() if name in key_names or name.endswith("_API_KEY")]
    # Background threads' warnings go to coop.log, not onto the reply being streamed or the line being typed
    # (incognito writes nothing, so they go nowhere).
    with logging_to_file(None if incognito else coop_home(), secrets=secrets,
                         debug=app_state.debug or bool(os.environ.get("COOP_DEBUG"))):
        if interactive:
            code = repl.run_terminal()
        elif dumb:
            code = repl.run_plain()
        else:
            typed = sys.stdin is not None and sys.stdin.isatty()  # --json at a terminal: commands are typed
            code = repl.run_lines(sys.stdin.buffer if sys.stdin is not None else [],
                                  commands=commands_from_pipe or typed)
    # A session that ends while litellm is still being imported (a short script, a Ctrl-D at once): coop's own
    # process leaves at once below, without the interpreter's shutdown (a daemon thread stopped halfway through an
    # import holds its module's lock, and litellm's HTTP clients, collected at shutdown, import a module of their
    # own to close: the process hung there for good). Inside another program's process, the import is waited for.
    if not own_process():
        for thread in warming:
            thread.join(WARM_UP_WAIT_SECONDS)
    status = loader.status
    if status is not None and status.embedder is None and not json_ and missing is None:
        console.print(f"[yellow]note:[/] the embedder did not load ({status.error}); search used full text only")
    if own_process() and (not loader.ready() or (worker is not None and worker.alive)
                          or any(t.is_alive() for t in warming)):
        # A thread still inside onnxruntime (the model loading, a last batch) would abort the interpreter's
        # shutdown with "terminate called without an active exception" (rc 134). Everything written is
        # committed; leave without the shutdown that would crash, after the exit functions (log files flush).
        # An unfinished job's transaction rolls back. Inside another program's process (`own_process`), its
        # threads are left to finish: ending the process would end that program.
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()  # (litellm's, if it got to register any, close its clients: no import waits)
        os._exit(code)
    if code:
        raise typer.Exit(code)
