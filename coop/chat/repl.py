"""The chat loop: prompt_toolkit on a terminal, one turn per stdin line otherwise.

On a terminal: a persistent history file (0600, under COOP_HOME), Ctrl-R search, completion of /commands,
Alt-Enter (Esc Enter) for a new line, Ctrl-X Ctrl-E to edit in $EDITOR. Ctrl-C during a reply stops it and keeps
the partial text; at the prompt it clears the line, and a second Ctrl-C within 2 s exits; Ctrl-D on an empty line
exits. Off a terminal (pipes, files, closed stdin), each line of stdin is a turn and replies are printed plain,
or as one JSON object per turn with `--json`.

Slash commands are `SlashCommands`' (slash.py). A line that starts with `//` is sent as a message starting with
`/`. A pipe carries text, not the commands a document quotes, unless asked (`--commands-from-pipe`); lines read
one by one are masked with those before them (`LineMasker`). Background notices are shown as soon as they are
ready while a prompt is read (live_notices.py), else before the next prompt, and at exit.

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

from coop import output
from coop.chat.live_notices import LiveNotices
from coop.chat.render import InterruptGuard, MarkdownStream, PlainStream
from coop.chat.slash import SlashCommands
from coop.chat.terminal import after_first_render, prompt_session, yes_no
from coop.errors import CoopError, ExitCode, StoreError, UsageError
from coop.memory.text import iso_time
from coop.model import reply_limit
from coop.privacy.secrets import LineMasker, mask, mask_data

_C1_ESCAPES = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}

if TYPE_CHECKING:
    from coop.chat.session import ChatSession, TurnResult

DOUBLE_CTRL_C_SECONDS = 2.0


class Repl(SlashCommands):
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

    # -- output -------------------------------------------------------------------------------------------

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
        self.close()  # waits a little for the last exchange's extraction, and says what it learned
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
        live = LiveNotices(lambda: self.show_notices(dim=True))  # a change is shown as soon as it is learned
        self.session.when_notices_are_ready(live.ready)
        self._loop(live.reading(session.prompt), interactive=True)
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
        """Leave: the background stops (as `on_exit` says); what it finished is shown, not lost with the exit."""
        self.session.when_notices_are_ready(None)
        if self.on_exit is not None:
            self.on_exit()
            self.on_exit = None
        self.show_notices()

    def make_prompt_session(self, **overrides: Any) -> Any:
        """The prompt: history (masked, 0600; in memory when incognito), /command completion, Esc Enter."""
        path = self.history_path if not self.session.incognito else None
        return prompt_session(path, ["/" + name for name in self.commands()], **overrides)
