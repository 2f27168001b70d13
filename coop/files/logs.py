"""Where coop's log records go while it chats: a file in the data directory, never the terminal.

Background work (embedding, extraction, consolidation) logs its failures from other threads; with no handler,
Python prints warnings to stderr, which in the REPL lands in the middle of a reply or the prompt being typed.
So `coop chat` sends the `coop` loggers to `$COOP_HOME/coop.log` (0600, rotated at 1 MB, one old file kept)
for as long as it runs, and the REPL shows a one-line notice at the next prompt instead. Every record is masked
(`coop.privacy.secrets.mask`: the values of the configured key variables and of every `*_API_KEY` variable, and any
key-shaped string become `[secret]`) before it is written, its traceback and stack included, and every URL in it
keeps its scheme, host and path only (`coop.privacy.secrets.mask_urls`: query values and passwords masked, so an
`api_base` with `?api-key=...` echoed by a provider's error is never written whole).
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from coop.files.writing import private_dir, private_file
from coop.privacy.secrets import mask, mask_urls, register

LOG_FILE = "coop.log"
MAX_BYTES = 1_000_000


class _PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """A rotating log file that is created 0600 every time, the rotated-in one too."""

    def _open(self) -> io.TextIOWrapper:
        fd = private_file(self.baseFilename)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)

    def handleError(self, record: logging.LogRecord) -> None:  # logging's name for it
        """A line that cannot be written (a full disk) is dropped: logging's default prints "--- Logging error
        ---" and a traceback onto the user's terminal, over the conversation."""


class _Redact(logging.Filter):
    """Masks a record's final message (after %-formatting), its traceback and its stack with `coop.privacy.secrets.mask`
    and `mask_urls`: a record is only ever written masked."""

    def __init__(self, extra: Sequence[str] = ()) -> None:
        super().__init__()
        self.extra = [s for s in extra if s]  # also masked when shorter than coop.privacy.secrets registers

    def _mask(self, text: str) -> str:
        return mask_urls(mask(text, extra=self.extra))

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self._mask(record.getMessage()), ()
        if record.exc_info and not record.exc_text:  # the formatter uses exc_text when it is set
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._mask(record.exc_text)
        if record.stack_info:
            record.stack_info = self._mask(record.stack_info)
        return True


def _log_file(directory: Path) -> tuple[logging.Handler, Path] | None:
    """A handler writing `directory/coop.log` (directory made 0700), or None when it cannot be written."""
    path = directory / LOG_FILE
    try:
        private_dir(directory)
        handler = _PrivateRotatingFile(path, maxBytes=MAX_BYTES, backupCount=1, encoding="utf-8",
                                       errors="backslashreplace")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"))
    return handler, path


@contextmanager
def logging_to_file(directory: Path | None, *, debug: bool = False,
                    secrets: Sequence[str | None] = ()) -> Iterator[Path | None]:
    """Send the `coop` loggers to `directory/coop.log` inside the block; yields the file, or None when there is
    no directory (incognito) or it cannot be written: the records then go nowhere rather than onto the screen.
    `secrets` (the API keys in use) are registered with `coop.privacy.secrets`, and masked in the file from 4 characters
    on (the registry itself takes 8)."""
    keys = [s for s in secrets if s]
    opened = _log_file(directory) if directory is not None else None
    handler, path = opened if opened is not None else (logging.NullHandler(), None)
    register(*keys)
    handler.addFilter(_Redact(keys))
    logger = logging.getLogger("coop")
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    logger.propagate = False  # not to the root logger, whose last-resort handler writes to stderr
    try:
        yield path
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def reopen_log() -> None:
    """Make the `coop` loggers' file handlers open their file again at the next record: after the file was rewritten
    (a forget scrubs coop.log), a handler still holding the old one would write where nobody reads."""
    for handler in logging.getLogger("coop").handlers:
        if isinstance(handler, logging.FileHandler):
            with handler.lock or threading.Lock():
                if handler.stream is not None:
                    handler.stream.close()
                    handler.stream = None
