"""Streaming replies to the terminal.

On a terminal, the reply is rendered as markdown while it streams, the way aider does it: the whole text so far
is rendered, the last `LIVE_LINES` lines sit in a small live area that is redrawn, and every line above it is
printed once, for good, so scrollback stays intact and long replies do not flicker. A spinner shows until the
first token. Off a terminal (pipes, `TERM=dumb`), text is written as it arrives, plain.

No API key is shown (`coop.privacy.secrets`): both streams hold back the last unfinished word until it is complete and
show the text masked, so a key arriving in pieces is never shown, not even in part. Nor does the model write to the
terminal: every control character of a reply (ESC and so OSC, CSI and the rest, C1, BEL, backspace, carriage
return) is shown as its code (`\x1b`, `output.printable`) before anything renders it; the only escape sequences
that reach the terminal are rich's own.
"""

from __future__ import annotations

import io
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Literal, TextIO, cast

from rich.console import Console
from rich.live import Live
from rich.status import Status
from rich.text import Text

from coop.output import printable
from coop.privacy.secrets import StreamMasker

LIVE_LINES = 6
# What Console(color_system=...) accepts; Console.color_system returns one of these names (or None) typed as str.
_ColorSystem = Literal["auto", "standard", "256", "truecolor", "windows"]
MIN_REDRAW_SECONDS = 0.05


class PlainStream:
    """Writes the reply as it arrives; used when output is not a terminal."""

    def __init__(self, file: TextIO | None = None) -> None:
        self.file = file or sys.stdout
        self.wrote = False
        self.masker = StreamMasker()

    def start(self) -> None:
        pass

    def update(self, delta: str) -> None:
        self.wrote = True
        ready = self.masker.feed(delta)
        if ready:
            self.file.write(printable(ready))
            self.file.flush()

    def finish(self) -> None:
        if self.wrote:
            self.file.write(printable(self.masker.flush()) + "\n")
            self.file.flush()


class InterruptGuard:
    """Keeps the live area whole while a reply streams, for one turn:
    - the terminal does not echo what is typed meanwhile: an echoed key, or the `^C` the terminal writes for
      Ctrl-C, lands inside the live area and throws rich's cursor arithmetic off by a line (a line printed twice);
    - Ctrl-C that arrives while the reply is being drawn is held until the drawing is done (raised in the middle
      of rich's rendering, it leaves the area half-drawn). Elsewhere, waiting for the model, it stops the turn at
      once, as before.
    Installed from the main thread only (where signals are delivered); the terminal is restored afterwards."""

    def __init__(self, stdin: TextIO | None = None) -> None:
        self.depth = 0
        self.pending = False
        self.stdin = stdin if stdin is not None else sys.stdin
        self._previous: object = None
        self._installed = False
        self._tty: list[Any] | None = None
        self._ends: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self._previous = signal.signal(signal.SIGINT, self._handle)
        # killed mid-reply (a closed terminal, `kill`): the terminal gets its echo back before the process goes
        self._ends = {sig: signal.signal(sig, self._end) for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None))
                      if sig is not None}
        self._installed = True
        try:
            import termios

            fd = self.stdin.fileno()
            self._tty = termios.tcgetattr(fd)
            quiet = termios.tcgetattr(fd)
            quiet[3] &= ~(termios.ECHO | getattr(termios, "ECHOCTL", 0))
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except (ImportError, OSError, ValueError, AttributeError):  # not a terminal (tests), or no termios
            self._tty = None

    def uninstall(self) -> None:
        if self._tty is not None:
            import termios

            try:
                termios.tcsetattr(self.stdin.fileno(), termios.TCSADRAIN, self._tty)
            except (OSError, ValueError):
                pass
            self._tty = None
        if self._installed:
            signal.signal(signal.SIGINT, self._previous if callable(self._previous) else signal.default_int_handler)
            for sig, previous in self._ends.items():
                signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
            self._installed = False

    def _end(self, signum: int, frame: FrameType | None) -> None:
        """Restore the terminal, then die of the signal as the process would have."""
        self.uninstall()
        import os

        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.depth:
            self.pending = True
        else:
            raise KeyboardInterrupt

    @contextmanager
    def drawing(self, *, then_raise: bool = True) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth and self.pending:
                self.pending = False
                if then_raise:
                    raise KeyboardInterrupt


class MarkdownStream:
    """Renders a streaming reply as markdown with a small live area (see the module docstring)."""

    def __init__(self, console: Console, guard: InterruptGuard | None = None) -> None:
        self.guard = guard or InterruptGuard()
        self.console = console
        self.text = ""
        self.printed = 0  # rendered lines already printed for good
        self.live: Live | None = None
        self.status: Status | None = None
        self.last_draw = 0.0

    def start(self) -> None:
        self.status = status = self.console.status("[dim]thinking…[/]", spinner="dots")
        status.start()

    def _lines(self, final: bool = True) -> list[str]:
        text = self.text
        if not final:  # the last word may be a key still arriving: it is shown once complete, and masked
            text = text[:max(text.rfind(space) for space in " \n\t\r") + 1]
        buffer = io.StringIO()
        width = max(20, self.console.width - 1)
        render = Console(file=buffer, width=width, force_terminal=self.console.is_terminal,
                         color_system=cast(_ColorSystem | None, self.console.color_system),
                         no_color=self.console.no_color)
        from rich.markdown import Markdown  # markdown-it and pygments: imported with the first reply, not at start

        render.print(Markdown(printable(text), code_theme="monokai", inline_code_lexer=None))
        return buffer.getvalue().splitlines()

    def update(self, delta: str) -> None:
        with self.guard.drawing():
            self._update(delta)

    def _update(self, delta: str) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None
        if self.live is None:
            self.live = Live(Text(""), console=self.console, refresh_per_second=20, transient=True)
            self.live.start()
        self.text += delta
        now = time.monotonic()
        if now - self.last_draw >= MIN_REDRAW_SECONDS:
            self._draw(final=False)
            self.last_draw = now

    def _draw(self, final: bool) -> None:
        lines = self._lines(final)
        stable = len(lines) if final else max(0, len(lines) - LIVE_LINES)
        if stable > self.printed and self.live is not None:
            block = "\n".join(lines[self.printed:stable])
            self.live.console.print(Text.from_ansi(block), soft_wrap=True)
            self.printed = stable
        if self.live is not None:
            self.live.update(Text.from_ansi("\n".join(lines[self.printed:])))

    def finish(self) -> None:
        with self.guard.drawing(then_raise=False):  # the turn is over: a Ctrl-C now has nothing left to stop
            self._finish()

    def _finish(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None
        if self.live is not None:
            self._draw(final=True)
            self.live.update(Text(""))
            self.live.stop()
            self.live = None
