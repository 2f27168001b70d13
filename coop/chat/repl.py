"""The chat loop: prompt_toolkit on a terminal, one turn per stdin line otherwise.

On a terminal: a persistent history file (0600, under COOP_HOME), Ctrl-R search, completion of /commands,
Alt-Enter (Esc Enter) for a new line, Ctrl-X Ctrl-E to edit in $EDITOR. Ctrl-C during a reply stops it and keeps
the partial text; at the prompt it clears the line, and a second Ctrl-C within 2 s exits; Ctrl-D on an empty line
exits. Off a terminal (pipes, files, closed stdin), each line of stdin is a turn and replies are printed plain,
or as one JSON object per turn with `--json`.

Slash commands come from `cmd_<name>` methods whose docstring is the help line; a unique prefix is enough
(`/rem` is /remember). An unknown or ambiguous command is an error and is never sent to the model. A line that
starts with `//` is sent as a message starting with `/`. A pipe carries text, not the commands a document quotes,
unless asked (`--commands-from-pipe`); lines read one by one are masked with those before them (`LineMasker`).

This object owns the terminal: the session and the memory engine never print. Nothing it writes carries an API
key (`privacy.secrets.mask`): not the history file (`MaskedFileHistory`), not a notice, an error or a JSON line, nor
a reply (the streams in render.py mask what they show).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from coop import output
from coop.chat.render import InterruptGuard, MarkdownStream, PlainStream
from coop.chat.terminal import after_first_render, prompt_session, yes_no
from coop.errors import CoopError, ExitCode, StoreError, UsageError
from coop.memory.text import iso_time, plural
from coop.model import reply_limit
from coop.privacy.secrets import LineMasker, mask, mask_data

_C1_ESCAPES = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}

if TYPE_CHECKING:
    from coop.chat.session import ChatSession, TurnResult

DOUBLE_CTRL_C_SECONDS = 2.0


class Repl:
    def __init__(self, session: "ChatSession", *, console: Console, json_mode: bool = False,
                 history_path: str | None = None, banner: Callable[[], str] | None = None,
                 on_exit: Callable[[], None] | None = None, on_start: Callable[[], None] | None = None,
                 out: TextIO | None = None) -> None:
        self.session = session
        self.console = console
        self.json_mode = json_mode
        self.history_path = history_path
        self.banner = banner
        self.on_exit = on_exit
        self.on_start = on_start  # background loading, begun once the first prompt is about to show
        self.out = out or sys.stdout
        self.running = True
        self.model_errors = 0
        self.store_errors = 0  # the database refused a write (full disk, read-only, locked): pipe mode exits 5
        self._stream: Any = None  # the reply being streamed, so a confirmation can pause it
        self.ask: Callable[[str], str] | None = None  # a question to the person at the terminal; None in pipe mode
        self._told_slash_text = False  # a piped "/..." line was sent as text, and the user told so

    # -- commands -----------------------------------------------------------------------------------------

    def commands(self) -> dict[str, Callable[[str], None]]:
        return {name[4:]: getattr(self, name) for name in sorted(dir(self)) if name.startswith("cmd_")}

    def resolve(self, word: str) -> Callable[[str], None]:
        table = self.commands()
        if word in table:
            return table[word]
        matches = [name for name in table if name.startswith(word)]
        if len(matches) == 1:
            return table[matches[0]]
        if not matches:
            raise UsageError(f"unknown command /{word}", hint="type /help for the list of commands")
        raise UsageError(f"ambiguous command /{word}: " + ", ".join("/" + m for m in matches),
                         hint="type more letters")

    def cmd_help(self, _: str) -> None:
        """Show the commands."""
        for name, method in self.commands().items():  # each docstring's first paragraph, whole
            self.say(f"/{name:<10} {' '.join((method.__doc__ or '').strip().split(chr(10) * 2)[0].split())}")
        self.say("Esc Enter: new line · Ctrl-R: search history · Ctrl-X Ctrl-E: edit in $EDITOR · "
                 "Ctrl-C: stop a reply · Ctrl-D: exit")

    def cmd_memory(self, query: str) -> None:
        """What was recalled for the last reply and why; /memory N for the Nth reply of this session; or /memory
        QUERY to search memory."""
        from coop.memory.retrieval.context import explain, found_by
        from coop.memory.retrieval.search import search_or_full_text

        recalls = self.session.recalls
        if query.strip() and not query.strip().isdigit():
            result, failure = search_or_full_text(self.session.memory, query, embedder=self.session.embedder(),
                                                  limit=10, settings=self.session.retrieval)
            if failure is not None:
                self.say(f"(the embedder failed: {failure}; full-text search only)")
            rows = [(hit.ref, found_by(hit.legs), f"{hit.score:.4f}", hit.item.text) for hit in result.hits]
            empty, left_out = "no matches", 0
        else:
            number = int(query) if query.strip() else len(recalls)
            if not 1 <= number <= len(recalls):
                raise UsageError(f"no reply {number} in this session" if recalls else "nothing was recalled yet",
                                 hint=f"/memory 1 to {len(recalls)}" if recalls else "ask something first")
            recalled, left_out = recalls[number - 1]
            rows = [(r.item.ref, explain(r), f"{r.score:.4f}", r.item.text) for r in recalled]
            empty = f"nothing was recalled for reply {number}"
        if not rows:
            self.say(empty)
            return
        table = Table(box=None, pad_edge=False)
        for column in ("id", "why", "score", "text"):
            table.add_column(column, overflow="fold" if column in ("text", "why") else "ellipsis",
                             no_wrap=column not in ("text", "why"))
        for ref, why, score, text in rows:
            table.add_row(ref, output.cell(why), score, output.cell(output.one_line(text, 200)))
        self.console.print(table)
        if left_out:
            self.say(f"({left_out} more recalled but over the memory budget)")

    def cmd_remember(self, text: str) -> None:
        """Remember a fact: /remember I am allergic to peanuts."""
        if not text.strip():
            raise UsageError("/remember needs the fact to remember", hint="/remember I live in Lyon")
        result = self.session.remember(text)
        verb = {"MERGE": "already known as", "SUPERSEDE": "remembered (supersedes an older fact) as"}.get(
            result.action, "remembered as")
        self.say(f"{verb} f{result.fact_id}")

    def cmd_forget(self, args: str) -> None:
        """Forget one memory item for good, after a yes: /forget f12 (--yes: without asking)."""
        from coop.memory.growth.forgetting import traces
        from coop.memory.kinds import parse_ref

        if self.session.incognito:
            raise UsageError("incognito: memory is read-only", hint="start coop chat without --incognito")
        words = args.split()
        refs = [w for w in words if w not in ("--yes", "-y")]
        if len(refs) != 1:
            raise UsageError("/forget needs one item id", hint="/forget f12 (ids are in /memory)")
        kind, number = parse_ref(refs[0])
        item = self.session.memory.get(kind, number)  # a missing id is an error before any question
        if len(refs) == len(words):
            if self.ask is None:
                raise UsageError("refusing to forget without confirmation", hint=f"/forget {item.ref} --yes")
            going = [item, *(traces(self.session.memory, item) if item.kind == "fact" else [])]
            for other in going:
                self.say(f"{'' if other is item else '  with '}{other.ref}: {output.one_line(other.text, 70)}")
            if not yes_no(self.ask, f"Forget {plural(len(going), 'item')} for good?"):
                self.say("nothing forgotten")
                return
        gone = self.session.forget(kind, number, reason="/forget in chat")
        self.say(f"{gone.describe()}: {output.one_line(gone.item.text, 60)}")

    def cmd_history(self, _: str) -> None:
        """Show this session's conversation so far."""
        messages = list(self.session.working.messages)
        if not messages:
            self.say("no messages yet in this session")
        for message in messages:
            if message.role in ("user", "assistant") and message.content:
                self.say(f"{message.role}: {output.one_line(message.content, 300)}")

    def cmd_sessions(self, _: str) -> None:
        """List your recent sessions (resume one with coop chat --session ID)."""
        from datetime import datetime

        sessions = self.session.memory.sessions.recent(20)
        if not sessions:
            self.say("no sessions yet")
        for s in sessions:
            mark = "*" if s["id"] == self.session.session_id else " "
            when = datetime.fromtimestamp(s["last_activity_at"]).strftime("%Y-%m-%d %H:%M")
            count = plural(s["messages"], "message")
            self.say(f"{mark} {s['id']:>5}  {when}  {count:>13}  {s['title'] or ''}")

    def cmd_new(self, _: str) -> None:
        """Start a new session (memory stays; the conversation starts afresh)."""
        self.session.new_session()
        self.say("new session: it begins with your next message" + (" (incognito)" if self.session.incognito else ""))

    def cmd_model(self, name: str) -> None:
        """Show the model, or switch: /model openai/gpt-4o-mini (checked against the server's model list)."""
        if name.strip():
            from coop.chat.model_switch import checked_model

            note = checked_model(self.session.config, name.strip(), self.session.model_name)  # unlisted: an error
            self.session.use_model(name.strip())
            if note:
                self.say(note)
        self.say(f"model: {self.session.model_name}")

    def cmd_end(self, _: str) -> None:
        """End this session (it is consolidated in the background) and start a new one."""
        ended = self.session.session_id
        self.session.end()
        self.session.new_session()
        self.say((f"session {ended} ended" if ended is not None else "nothing to end yet")
                 + "; a new session begins with your next message")

    def cmd_exit(self, _: str) -> None:
        """Leave coop (also Ctrl-D)."""
        self.running = False

    # -- output -------------------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        """A line of coop's own (not the model's): stderr in pipe mode so stdout stays the replies."""
        if not self.json_mode:
            output.say(text, self.console)

    def show_error(self, exc: CoopError) -> None:
        if not self.json_mode:
            output.error(exc, self.console)

    # -- one line -----------------------------------------------------------------------------------------

    def handle(self, line: str, *, interactive: bool, commands: bool = True) -> None:
        """Run one line: a /command (only with `commands`), or a turn. Errors are shown and the loop goes on."""
        stripped = line.strip()
        if not stripped:
            return
        try:
            if commands and stripped.startswith("//"):
                line = line.lstrip()[1:]
            elif commands and stripped.startswith("/"):
                word, _, rest = stripped[1:].partition(" ")
                return self.resolve(word.lower())(rest)
            elif stripped.startswith("/") and not self._told_slash_text:
                self._told_slash_text = True
                self.say("a piped line that starts with / is sent as text (--commands-from-pipe runs it)")
            self.turn(line, interactive=interactive)
        except CoopError as exc:
            if isinstance(exc, StoreError):
                self.store_errors += 1
            self.show_error(exc)
            if self.json_mode:
                self._json({"input": line[:200], "reply": None, "error": {"message": exc.message, "hint": exc.hint}})

    def turn(self, text: str, *, interactive: bool) -> "TurnResult":
        guard = InterruptGuard()
        stream: Any = (MarkdownStream(self.console, guard) if interactive
                       else (None if self.json_mode else PlainStream(self.out)))
        if interactive:
            guard.install()
        try:
            if stream is not None:
                stream.start()
            self._stream = stream
            try:
                result = self.session.turn(text, on_text=stream.update if stream is not None else (lambda _: None))
            finally:
                self._stream = None
                if stream is not None:
                    stream.finish()
        finally:
            guard.uninstall()
        if result.interrupted and not self.json_mode:
            self.console.print("[dim](stopped; the partial reply was kept)[/]" if result.reply else
                               "[dim](stopped before the reply began; your message was kept)[/]")
        elif result.incomplete and result.error is None and not self.json_mode:
            mark = escape(reply_limit.mark_for(result.incomplete).strip())
            self.console.print(f"[yellow]note:[/] {escape(result.incomplete)}; it is kept, marked {mark}",
                               highlight=False, soft_wrap=output.whole_lines(self.console))
        if result.error is not None:
            self.model_errors += 1
            self.show_error(result.error)
        if self.json_mode:
            self._json({"session_id": self.session.session_id, "input": text, "reply": result.reply,
                        "interrupted": result.interrupted, "incomplete": result.incomplete,
                        "error": result.error and {"message": result.error.message, "hint": result.error.hint},
                        "user_message_id": None if result.user_message_id is None else f"m{result.user_message_id}",
                        "reply_message_id": None if result.reply_message_id is None else f"m{result.reply_message_id}",
                        "recalled": [{"id": r.item.ref, "kind": r.item.kind, "reason": r.reason,
                                      "score": round(r.score, 6), "created_at": iso_time(r.item.created_at)}
                                     for r in result.prompt.recalled] if result.prompt else [],
                        "tool_calls": [c["name"] for c in result.tool_calls]})
        return result

    def _json(self, data: dict[str, Any]) -> None:
        # C1 characters (U+0080-U+009F: some terminals take U+009B for CSI) escaped too: JSON stays exact
        self.out.write(json.dumps(mask_data(data), ensure_ascii=False).translate(_C1_ESCAPES) + "\n")
        self.out.flush()

    # -- loops --------------------------------------------------------------------------------------------

    def run_lines(self, stream: Any, *, commands: bool = False) -> int:
        """Pipe mode: each line of a binary stream (masked with those before it) is a turn, or a command with
        `commands`. Non-UTF-8 lines are reported and skipped. Exit code: 4 for a model error, 5 for a store error."""
        self._started()
        masker = LineMasker(self.session.tell_masked)
        for number, raw in enumerate(stream, start=1):
            if not self.running:
                break
            try:
                line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            except UnicodeDecodeError:
                self.show_error(UsageError(f"input line {number} is not UTF-8 text; skipped",
                                           hint="send UTF-8 text"))
                continue
            if "\x00" in line:
                self.show_error(UsageError(f"input line {number} contains binary data; skipped",
                                           hint="send text"))
                continue
            self.handle(masker.feed(line.rstrip("\r\n")), interactive=False, commands=commands)
            self.show_notices()
        self.close()  # waits a little for the last exchange's extraction
        self.show_notices()
        if self.model_errors:
            return int(ExitCode.MODEL)
        return int(ExitCode.STORE) if self.store_errors else 0

    def run_plain(self, read: Callable[[str], str] = input) -> int:
        """A dumb terminal (see `dumb_terminal`): the banner and a `› ` prompt in plain text, one line per turn,
        replies written as they arrive. Ctrl-C twice or Ctrl-D leaves."""
        if self.banner is not None:
            self.console.print(self.banner(), soft_wrap=output.whole_lines(self.console))
        self.ask = read
        self._started()
        self._loop(read, interactive=False)
        return int(ExitCode.MODEL) if self.model_errors else 0

    def run_terminal(self, prompt_session: Any = None) -> int:
        """Interactive mode with prompt_toolkit; `prompt_session` may be injected (tests use pipe input)."""
        session = prompt_session or self.make_prompt_session()
        self.session.tools.confirm = self.confirmer(session)
        if self.banner is not None:
            self.console.print(self.banner(), soft_wrap=output.whole_lines(self.console))
        after_first_render(session, self._started)
        self._loop(session.prompt, interactive=True)
        return 0

    def _loop(self, read: Callable[[str], str], *, interactive: bool) -> None:
        """Read and handle lines at a `› ` prompt until /exit, Ctrl-D, or Ctrl-C twice within 2 s; background
        notices are shown before each prompt. A plain terminal's lines are masked as a pipe's are."""
        dim = (lambda text: f"[dim]{text}[/]") if interactive else (lambda text: text)
        masker = None if interactive else LineMasker(self.session.tell_masked)
        last_interrupt = 0.0
        while self.running:
            self.show_notices(dim=interactive)
            try:
                line = read("› ")
            except KeyboardInterrupt:
                now = time.monotonic()
                if now - last_interrupt < DOUBLE_CTRL_C_SECONDS:
                    break
                last_interrupt = now
                self.console.print(dim(("" if interactive else "\n") + "(Ctrl-C again to exit)"))
                continue
            except EOFError:
                break
            self.handle(line if masker is None else masker.feed(line), interactive=interactive)
        self.close()

    def confirmer(self, prompt_session: Any) -> Callable[[str], bool]:
        """The question the memory tools ask before the model forgets or rewrites memory (see chat/tools.py):
        the streamed reply so far is printed for good, then a y/N prompt on the same terminal. Anything but
        y/yes, Ctrl-C and Ctrl-D mean no."""
        from prompt_toolkit import PromptSession

        asker: PromptSession[str] = PromptSession(input=prompt_session.input, output=prompt_session.output)
        self.ask = asker.prompt

        def confirm(question: str) -> bool:
            if self._stream is not None:
                self._stream.finish()
            shown = "".join(ch if ch.isprintable() else " " for ch in mask(question))
            self.console.print(f"[bold yellow]The model wants to {escape(shown)}.[/]", highlight=False)
            allowed = yes_no(asker.prompt, "Allow this change to your memory?")
            self.say("allowed" if allowed else "declined: memory was not changed")
            return allowed

        return confirm

    def _started(self) -> None:
        if self.on_start is not None:
            self.on_start()
            self.on_start = None

    def show_notices(self, *, dim: bool = False) -> None:
        """What memory did in the background since the last prompt, each change once with its undo (in pipe mode
        on stderr, where the console writes: stdout is the replies')."""
        for notice in self.session.take_notices():
            text = escape(output.printable(notice))
            self.console.print(f"[dim]{text}[/]" if dim else text, soft_wrap=output.whole_lines(self.console))

    def close(self) -> None:
        if self.on_exit is not None:
            self.on_exit()
            self.on_exit = None

    def make_prompt_session(self, **overrides: Any) -> Any:
        """The prompt: history (masked, 0600; in memory when incognito), /command completion, Esc Enter."""
        path = self.history_path if not self.session.incognito else None
        return prompt_session(path, ["/" + name for name in self.commands()], **overrides)
