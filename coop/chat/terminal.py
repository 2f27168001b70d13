"""The terminal around the chat loop: which kind of terminal this is, and the prompt_toolkit prompt (history,
completion, key bindings). Kept apart from the loop (repl.py) so each stays one job."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from coop.files.writing import private_file
from coop.privacy.secrets import mask

__all__ = ["after_first_render", "dumb_terminal", "interactive_terminal", "masked_file_history", "prompt_session",
           "yes_no"]


class _Stream(Protocol):
    def isatty(self) -> bool: ...


def interactive_terminal(stdin: _Stream | None, stdout: _Stream | None, environ: Mapping[str, str]) -> bool:
    """The prompt_toolkit REPL needs a real terminal on both ends; `TERM=dumb` (Emacs shells, some CI logs) gets
    the plain line-per-turn mode instead, as do pipes and a closed stdin."""
    if stdin is None or stdout is None or environ.get("TERM") == "dumb":
        return False
    try:
        return stdin.isatty() and stdout.isatty()
    except (ValueError, OSError):
        return False


def dumb_terminal(stdin: _Stream | None, stdout: _Stream | None, environ: Mapping[str, str]) -> bool:
    """A person at a terminal that cannot move the cursor (`TERM=dumb`: Emacs' shell, some IDE consoles): they
    get a plain banner and a plain `› ` prompt, read line by line, and replies written as they arrive."""
    if stdin is None or stdout is None or environ.get("TERM") != "dumb":
        return False
    try:
        return stdin.isatty() and stdout.isatty()
    except (ValueError, OSError):
        return False


def masked_file_history(base: type) -> type:
    """prompt_toolkit's `FileHistory` that masks each line before it is stored (`privacy.secrets.mask`): a key typed
    at the prompt never reaches the history file. (A function, so prompt_toolkit is imported only when used.)"""

    class MaskedFileHistory(base):  # type: ignore[misc]
        def store_string(self, string: str) -> None:
            super().store_string(mask(string))

    return MaskedFileHistory


def prompt_session(history_path: str | None, commands: list[str], **overrides: Any) -> Any:
    """A prompt_toolkit session: a persistent history at `history_path` (created 0600, each line masked; None
    keeps it in memory), completion of `commands`, Esc Enter for a new line, Ctrl-X Ctrl-E for $EDITOR. The
    edited text comes back into the line for a look before Enter sends it (prompt_toolkit's own binding would
    send it the moment the editor closes)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("c-x", "c-e")
    def _edit(event: Any) -> None:
        event.current_buffer.open_in_editor(validate_and_handle=False)

    history: Any = InMemoryHistory()
    if history_path:
        os.close(private_file(history_path))  # created, or tightened, 0600 before prompt_toolkit opens it
        history = masked_file_history(FileHistory)(history_path)
    completer = WordCompleter(commands, sentence=True, pattern=None, match_middle=False)
    return PromptSession(history=history, completer=completer, key_bindings=bindings,
                         enable_open_in_editor=False, multiline=False, complete_while_typing=True, **overrides)


def after_first_render(session: Any, callback: Callable[[], None]) -> None:
    """Call `callback` once the prompt has first been drawn (at once for a session that cannot tell): background
    loading started earlier would hold the interpreter's lock while the prompt is drawn, and delay it."""
    events = getattr(getattr(session, "app", None), "after_render", None)
    if events is None:
        callback()
        return

    def drawn(_: Any) -> None:
        events.remove_handler(drawn)
        callback()

    events.add_handler(drawn)


def yes_no(ask: Callable[[str], str], question: str) -> bool:
    """A y/N question: only y or yes is yes; an empty answer, anything else, Ctrl-C and Ctrl-D are no."""
    try:
        answer = ask(f"{question} [y/N] ")
    except (EOFError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")
