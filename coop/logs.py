"""Where coop's log records go while it chats: a file in the data directory, never the terminal.

Background work (embedding, extraction, consolidation) logs its failures from other threads; with no handler,
Python prints warnings to stderr, which in the REPL lands in the middle of a reply or the prompt being typed.
So `coop chat` sends the `coop` loggers to `$COOP_HOME/coop.log` (0600, rotated at 1 MB, one old file kept)
for as long as it runs, and the REPL shows a one-line notice at the next prompt instead. Known secrets (the
values of the configured key variables and of every `*_API_KEY` variable) are replaced by `***` before a record
is written.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from coop.files import private_dir, private_file

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
    """Replaces each secret in a record's final message (after %-formatting) with `***`."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s and len(s) >= 4]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            for secret in self.secrets:
                message = message.replace(secret, "***")
            record.msg, record.args = message, ()
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
    no directory (incognito) or it cannot be written: the records then go nowhere rather than onto the screen."""
    opened = _log_file(directory) if directory is not None else None
    handler, path = opened if opened is not None else (logging.NullHandler(), None)
    handler.addFilter(_Redact([s for s in secrets if s]))
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
