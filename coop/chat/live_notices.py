"""Background notices shown the moment they are ready while the person is at the prompt.

A change learned from a reply's exchange finishes after the reply, while the prompt waits for the next line; shown
only before the next prompt, it came one reply late. The worker tells `ready` (from its own thread); while a prompt
is being read, the notices are printed at once, above it (`patch_stdout` keeps the line being typed whole). While
a reply streams no prompt is being read, so nothing is printed into it: those notices wait for the next prompt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class LiveNotices:
    """`show` prints what is waiting (the REPL's `show_notices`); `reading` wraps the prompt's read."""

    def __init__(self, show: Callable[[], None]) -> None:
        self._show = show
        self._lock = threading.Lock()  # one printer at a time; the prompt's start and end are ordered with it
        self._at_prompt = False

    def ready(self) -> None:
        """A notice is ready (called from the worker's thread): shown now if a prompt is being read."""
        with self._lock:
            if self._at_prompt:
                self._show()

    def reading(self, read: Callable[[str], str]) -> Callable[[str], str]:
        """`read`, with notices that arrive meanwhile printed above the prompt."""
        from prompt_toolkit.patch_stdout import patch_stdout

        def read_with_notices(message: str) -> str:
            with patch_stdout(raw=True):
                with self._lock:
                    self._show()  # what finished since the last look
                    self._at_prompt = True
                try:
                    return read(message)
                finally:
                    with self._lock:
                        self._at_prompt = False

        return read_with_notices
