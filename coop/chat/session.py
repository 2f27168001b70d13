"""One conversation: the turn of DESIGN.md, from the user's line to the committed reply.

A turn: (1) the line joins working memory (a deque capped at `chat.working_memory_cap`, with the session's first
user message kept as an anchor), (2) retrieval runs over all of this user's sessions (salience: items with
importance >= the threshold; relevance: the fused vector and full-text search, nothing below the floor), de-
duplicated by id and against what working memory already shows, (3) the prompt is built within the budget,
(4) the user's message is committed *before* the model is called, so nothing typed is lost if the model fails,
(5) the reply streams out and is committed when complete, or with `[interrupted]` when the user stops it,
(6) new messages are handed to the background worker to be embedded, so the next prompt never waits.

The session holds no terminal code: the REPL passes `on_text` to receive the reply as it streams.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from coop.chat import textcalls
from coop.chat.toolrun import run_calls
from coop.chat.tools import TOOL_NAMES, TOOL_SPECS, MemoryTools
from coop.chat.working import WorkingMemory, retrieval_query
from coop.config.loading import coop_home
from coop.errors import CoopError, ErrorKind, ModelError, NotFoundError, UsageError
from coop.files.trace import NO_TRACE, Tracer
from coop.memory.growth.forgetting import Forgotten, forget_with_traces
from coop.memory.growth.importance import message_importance
from coop.memory.growth.jobs import MemoryJobs
from coop.memory.growth.reconcile import Candidate, FactWriter
from coop.memory.growth.scrub import forget_in_files
from coop.memory.growth.worker import failure_notice
from coop.memory.retrieval.context import HistoryMessage, Prompt, Recalled
from coop.memory.retrieval.settings import RetrievalSettings
from coop.memory.retrieval.turn import turn_context
from coop.memory.storage.items import MAX_MESSAGE_CHARS
from coop.memory.text import check_text, plural
from coop.model import llm, reply_limit

if TYPE_CHECKING:
    from coop.config.loading import Config
    from coop.memory.embedder import Embedder
    from coop.memory.growth.worker import BackgroundWorker
    from coop.memory.storage.store import UserMemory

log = logging.getLogger(__name__)

PREAMBLE = """You are coop, a helpful assistant in the user's terminal. You remember this user across \
conversations: what is known about them and relevant past conversation appear below when there is any. Use it \
when it helps, without reciting it; if it conflicts with what the user says now, trust the user. \
Today is {today}."""

MAX_TOOL_ROUNDS = 4
MAX_RECALLS_KEPT = 500  # replies whose recall `/memory N` can show
INTERRUPTED_MARK = " [interrupted]"
INCOMPLETE_MARK = " [incomplete]"


@dataclass
class TurnResult:
    reply: str
    prompt: Prompt | None = None
    interrupted: bool = False
    incomplete: str | None = None  # why the reply stopped short (stored with INCOMPLETE_MARK), when it did
    error: CoopError | None = None
    user_message_id: int | None = None
    reply_message_id: int | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


class ChatSession:
    """One conversation with one model over one user's memory.

    The model is a `llm.ChatModel` (the CLI passes the configured litellm model; unit tests a scripted one);
    `models` builds another by name for `/model NAME`. `jobs` makes the fact writer and the background memory
    jobs (default: from the config, with its fast model). With no model at all, a turn is a ModelError that
    says how to configure one."""

    def __init__(self, memory: "UserMemory", config: "Config", *, embedder: Callable[[], "Embedder | None"],
                 model: llm.ChatModel | None = None, models: Callable[[str], llm.ChatModel] | None = None,
                 jobs: MemoryJobs | None = None, session_id: int | None = None, incognito: bool = False,
                 tracer: Tracer = NO_TRACE, worker: "BackgroundWorker | None" = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.memory = memory
        self.config = config
        self.embedder = embedder
        self.incognito = incognito
        self.clock = clock  # the time recall weighs age against (a benchmark replays a conversation's own time)
        self.tracer = tracer
        self.worker = worker
        self.models = models or (lambda name: llm.chat_model(config, name))
        self.model: llm.ChatModel | None = model
        if model is None and config.model.name:
            self.model = self.models(config.model.name)
        self.jobs = jobs or MemoryJobs(config, llm.fast_complete(config), embedder)
        self.retrieval = RetrievalSettings.from_config(config.memory)
        self.working = WorkingMemory(config.chat.working_memory_cap)
        self.last_recall: list[Recalled] = []
        self.recalls: list[tuple[list[Recalled], int]] = []  # each reply's recall this session, oldest first
        self.last_left_out: list[Recalled] = []
        self.tool_support = textcalls.tool_support(None if incognito else coop_home() / textcalls.TOOLS_FILE)
        self.tools_enabled: bool | None = None  # decided at the first turn (litellm's data: a slow import)
        self.tools = MemoryTools(memory, embedder, self.writer, settings=self.retrieval,
                                 read_only=incognito, confirm_changes=config.chat.confirm_memory_changes,
                                 on_forget=self._forgotten)
        self.inline_notices: list[str] = []
        self.last_activity = time.monotonic()
        self._idle_ended = False
        self._in_turn = False
        self._state = threading.Lock()  # session state shared with the idle timer's thread
        self._embedder_failed = False
        self._told_unusable = False
        self.session_id: int | None = None  # a new session is created with its first message, not before
        if session_id is not None:
            self.resume(session_id)

    # -- sessions ---------------------------------------------------------------------------------------------

    def resume(self, session_id: int) -> None:
        """Continue an earlier session: its last messages come back into working memory."""
        if not self.memory.session_exists(session_id):
            raise NotFoundError(f"no session {session_id} for user {self.memory.user_id}",
                                hint="list sessions with /sessions or `coop chat` then /sessions")
        self.session_id = session_id
        self.working.clear()
        for item in self.memory.recent_messages(session_id, self.working.messages.maxlen or 50):
            if item.role in ("user", "assistant"):
                self.working.add(HistoryMessage(item.role, item.text, item.item_id))

    def new_session(self) -> None:
        """The next message starts a new session (created then: `/new` twice, or a start without a word, leaves
        no empty session behind)."""
        self._idle_ended = False
        self.working.clear()
        self.recalls.clear()
        self.session_id = None

    @property
    def model_name(self) -> str:
        return self.model.name if self.model is not None else ""

    def use_model(self, name: str) -> None:
        """Switch the chat model (`/model NAME`); the memory jobs keep the configured fast model."""
        self.model = self.models(name)
        self.tools_enabled = None

    def _can_call_tools(self) -> bool:
        """Tools are offered unless the model is remembered as refusing them or litellm lists it without them; a
        model litellm does not know is offered them, and how it answers is remembered (textcalls.py)."""
        known = self.tool_support.get(self.model_name)
        return known != "none" if known else llm.supports_tools(self.model_name) is not False

    def chat_model(self) -> llm.ChatModel:
        if self.model is None:
            raise ModelError("no chat model configured", hint=llm.NO_MODEL_HINT)
        return self.model

    # -- retrieval --------------------------------------------------------------------------------------------

    def prepare(self, text: str) -> Prompt:
        """The turn's prompt: its memory from the engine's one recall (coop/memory/retrieval/turn.py)."""
        cfg = self.config.memory
        context = turn_context(self.memory, text, cfg=cfg, embedder=self.embedder(), query=retrieval_query(text),
                               preamble=PREAMBLE.format(today=datetime.now().strftime("%A %d %B %Y")),
                               settings=self.retrieval, history=list(self.working.messages),
                               anchor=self.working.anchor, shown=self.working.ids(cfg.recency_messages),
                               session_id=self.session_id, now=self.clock())
        found, prompt = context.recollection, context.prompt
        if found.failure is not None:  # a remote embedder that fails: this turn recalls by words only
            self.tracer.event("embedder_failed", error=found.failure)
            if not self._embedder_failed:
                self._embedder_failed = True
                self.inline_notices.append(f"the embedder failed ({found.failure}); recall uses full-text search "
                                           "until it works again")
        result = found.result
        self.tracer.event("retrieval", legs=result.legs, timings_ms={**result.timings_ms,
                                                                     "salience": found.salience_ms},
                          vector_used=result.vector_used, facts=len(found.facts), past=len(found.past),
                          hits=[{"id": h.ref, "score": round(h.score, 5),
                                 "legs": {k: [v.rank, round(v.score, 4)] for k, v in h.legs.items()}}
                                for h in result.hits])
        self.last_recall, self.last_left_out = prompt.recalled, prompt.left_out
        self.recalls.append((prompt.recalled, len(prompt.left_out)))  # for /memory N
        del self.recalls[:-MAX_RECALLS_KEPT]
        self.tracer.event("prompt", tokens=prompt.tokens, recalled=[r.item.ref for r in prompt.recalled],
                          left_out=len(prompt.left_out), messages=len(prompt.messages))
        return prompt

    # -- the turn ---------------------------------------------------------------------------------------------

    def _commit(self, role: str, content: str, **fields: Any) -> int | None:
        if self.incognito:
            return None
        if self.session_id is None:
            self.session_id = self.memory.start_session()
        return self.memory.add_message(self.session_id, role, content, **fields)

    def turn(self, text: str, on_text: Callable[[str], None] = lambda _: None) -> TurnResult:
        """Answer one user message. Model failures come back in `TurnResult.error`; Ctrl-C keeps the partial
        reply (marked) and returns with `interrupted`."""
        text = check_text(text, "message", MAX_MESSAGE_CHARS)
        model = self.chat_model()
        with self._state:  # the idle timer must not end the session between this check and the commit below
            if self._idle_ended:  # the previous session ended while the user was away
                self.new_session()
            self.last_activity = time.monotonic()
            self._in_turn = True
        try:
            return self._turn(text, model, on_text)
        finally:
            with self._state:
                self._in_turn = False
                self.last_activity = time.monotonic()

    def _turn(self, text: str, model: llm.ChatModel, on_text: Callable[[str], None]) -> TurnResult:
        prompt = self.prepare(text)
        user_id = self._commit("user", text, importance=message_importance("user", text, self.config.memory.importance))
        if user_id is not None and self.session_id is not None and self.working.anchor is None:
            self.memory.set_session_title(self.session_id, " ".join(text.split())[:80])
        self.working.add(HistoryMessage("user", text, user_id))
        if user_id is not None:
            self._touch_recalled(prompt)
        result = TurnResult(reply="", prompt=prompt, user_message_id=user_id)
        self.tools.start_turn()
        messages = list(prompt.messages)
        parts: list[str] = []
        started = time.perf_counter()
        first_token: float | None = None
        try:
            for _ in range(MAX_TOOL_ROUNDS + 1):
                if self.tools_enabled is None:
                    self.tools_enabled = self.config.chat.tools and self._can_call_tools()
                tools = TOOL_SPECS if self.tools_enabled else None
                calls: list[llm.ToolCall] = []
                finish: str | None = None
                gate = textcalls.TextGate(on_text)  # a call written as text is never shown as the answer
                for delta in self._stream(model, messages, tools):
                    if delta.text:
                        if first_token is None:
                            first_token = time.perf_counter()
                        parts.append(delta.text)
                        (gate.feed if tools else on_text)(delta.text)
                    calls.extend(delta.tool_calls)
                    finish = delta.finish_reason
                native = bool(calls)
                if tools and not native:  # a model without native tool calling writes the call in its text
                    text, calls = textcalls.parse_calls("".join(parts), TOOL_NAMES)
                    parts = [text] if calls else parts
                if (native or not calls) and gate.release(TOOL_NAMES):  # an unreadable call: kept as its note
                    parts = [gate.emitted]
                if calls:
                    self.tool_support.set(self.model_name, "native" if native else "text")
                if not calls:
                    result.incomplete = llm.stopped_short(finish)
                    break
                messages += self._run_tools(calls, "".join(parts), result)
                parts = []  # text before a tool call was kept with the call's message
            else:
                log.warning("the model kept calling tools; stopped after %d rounds", MAX_TOOL_ROUNDS)
        except KeyboardInterrupt:
            result.interrupted = True
        except ModelError as exc:
            result.error = exc
            if parts:  # the model failed mid-reply: what came is kept, marked
                result.incomplete = "the model failed mid-reply"
        reply = "".join(parts)
        self.tracer.event("model", model=self.model_name, latency_ms=round((time.perf_counter() - started) * 1000, 1),
                          first_token_ms=None if first_token is None else round((first_token - started) * 1000, 1),
                          reply_chars=len(reply), interrupted=result.interrupted, error=type(result.error).__name__
                          if result.error else None, tool_calls=len(result.tool_calls))
        if result.interrupted and reply:
            reply += INTERRUPTED_MARK
        elif result.incomplete and reply:
            reply += reply_limit.mark_for(result.incomplete)  # [incomplete], or [truncated] at the limit
        if reply.strip():
            result.reply_message_id = self._commit(
                "assistant", reply, importance=message_importance("assistant", reply, self.config.memory.importance))
            self.working.add(HistoryMessage("assistant", reply, result.reply_message_id))
        result.reply = reply
        if user_id is not None:
            self._after_turn(user_id, result.reply_message_id)
        return result

    def _stream(self, model: llm.ChatModel, messages: list[dict[str, Any]],
                tools: list[dict[str, Any]] | None) -> Iterator[llm.Delta]:
        """Stream one model call; a model that refuses tools is asked again without them, once per session."""
        try:
            yield from model.stream(messages, tools=tools)
        except ModelError as exc:
            if tools and exc.kind is ErrorKind.TOOLS_UNSUPPORTED:
                self.tools_enabled = False
                self.tool_support.set(self.model_name, "none")
                yield from model.stream(messages, tools=None)
            else:
                raise

    def _run_tools(self, calls: list[llm.ToolCall], text: str, result: TurnResult) -> list[dict[str, Any]]:
        return run_calls(self, calls, text, result)

    def _touch_recalled(self, prompt: Prompt) -> None:
        """Mark recalled facts as used now: retention archives by last use, not by age."""
        ids = [r.item.item_id for r in prompt.recalled if r.item.kind == "fact"]
        if ids:
            self.memory.touch_facts(ids)

    def _background(self, name: str, job: Any) -> None:
        """Run a job on the worker (its own connection), or inline for an in-memory database, which another
        connection cannot see. Failures are logged, never raised into the chat."""
        if self.worker is not None:
            self.worker.submit(name, job)
            return
        try:
            notice = job(self.memory.db)
            if notice:
                self.inline_notices.append(notice)
        except Exception as exc:
            log.warning("%s failed: %s", name, exc)
            self.inline_notices.append(failure_notice(name, exc))

    def _after_turn(self, message_id: int | None = None, reply_id: int | None = None) -> None:
        """Embed what the turn added, then extract facts from the exchange: both in the background. The
        extraction is recorded first (`memory_jobs`), so an exit before it is done leaves it to the next start."""
        if self.incognito:
            return
        self._background("embed new messages", self.jobs.embedding(self.memory.user_id))
        if message_id is not None and self.config.memory.extraction.enabled and self.jobs.complete is not None:
            job_id = self.memory.record_job("extraction", session_id=self.session_id, message_id=message_id,
                                            reply_id=reply_id)
            self._background("extract facts", self.jobs.extraction(self.memory.user_id, job_id))

    def take_notices(self) -> list[str]:
        """What background jobs finished with since the last prompt; and, once a session, that the fast model
        gave replies with no usable JSON (counted by the model client: coop/model/json_modes.py), so a local model that
        cannot extract is never silent."""
        notices, self.inline_notices = self.inline_notices, []
        notices += self.worker.take_notices() if self.worker is not None else []
        unusable = getattr(self.jobs.complete, "unusable", 0)
        if unusable and not self._told_unusable:
            self._told_unusable = True
            notices.append(f"memory: the fast model returned no usable JSON {plural(unusable, 'time')}; facts from "
                           "those exchanges were not learned; see coop.log")
        return notices

    def catch_up(self) -> None:
        """At start: embed whatever a crash or an offline embedder left without a vector, and finish the
        extractions a previous process recorded but did not get to."""
        self._after_turn()
        if not self.incognito and self.config.memory.extraction.enabled and self.jobs.complete is not None \
                and self.memory.pending_jobs(1):
            self._background("finish earlier extractions", self.jobs.pending(self.memory.user_id))

    def writer(self) -> FactWriter:
        return self.jobs.writer(self.memory)

    def end_if_idle(self, idle_seconds: float) -> bool:
        """Called from a timer thread: after `idle_seconds` without a turn, the session ends (through the worker's
        connection) and the next message starts a new one."""
        with self._state:  # never while a turn runs, never between a turn's check and its commit
            if self.incognito or self.worker is None or self.session_id is None or self._idle_ended \
                    or self._in_turn:
                return False
            if time.monotonic() - self.last_activity < idle_seconds or not self.working.messages:
                return False
            self._idle_ended = True
            self.worker.submit("end the idle session", self.jobs.end_session(self.memory.user_id, self.session_id))
            return True

    def end(self) -> None:
        """End this session: it is marked ended and consolidated in the background."""
        if self.session_id is None or self.incognito:
            return
        self.memory.end_session(self.session_id)
        if self.worker is not None and self.config.memory.consolidation.enabled:
            self.worker.submit("consolidate the ended session", self.jobs.consolidation(
                self.memory.user_id, session_id=self.session_id, ended=True))

    # -- slash-command helpers --------------------------------------------------------------------------------

    def forget(self, kind: str, item_id: int, *, reason: str) -> Forgotten:
        """Forget an item (a fact with the messages and summaries that said it) and drop it from this session."""
        gone = forget_with_traces(self.memory, kind, item_id, reason=reason)
        self._forgotten(gone)
        return gone

    def _forgotten(self, gone: Forgotten) -> None:
        self.working.drop({i.item_id for i in [gone.item, *gone.traces] if i.kind == "message"})
        if not self.incognito:  # out of coop's files too: the prompt history, coop.log, the trace
            forget_in_files([gone], self.config.trace.file or None)

    def remember(self, text: str) -> Any:
        if self.incognito:
            raise UsageError("incognito: nothing is written to memory", hint="start coop chat without --incognito")
        return self.writer().write(Candidate(text, importance=0.9, source="user"))

