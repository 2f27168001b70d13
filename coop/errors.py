"""Errors the library raises, each carrying a one-line message, a hint and the exit code the CLI uses.

Only `coop.cli` turns these into output; library code raises them and never prints. The exit codes are part of
the contract in DESIGN.md, so scripts can tell a missing item (3) from a provider failure (4) or a store
failure (5).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    NOT_FOUND = 3
    MODEL = 4
    STORE = 5
    INTERRUPTED = 130


class CoopError(Exception):
    """Base error: `message` says what went wrong, `hint` what to do about it."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class ConfigError(CoopError):
    """A config file or override that cannot be used: a usage error, since the user can fix it."""

    exit_code = ExitCode.USAGE


class UsageError(CoopError):
    """Bad arguments or input given on the command line."""

    exit_code = ExitCode.USAGE


class NotFoundError(CoopError):
    """An id or name that names nothing in this user's memory."""

    exit_code = ExitCode.NOT_FOUND


class ModelError(CoopError):
    """The chat or embedding provider failed or could not be reached."""

    exit_code = ExitCode.MODEL


class EmbedderError(ModelError):
    """The embedder could not load or returned vectors of the wrong shape."""


class StoreError(CoopError):
    """The database could not be opened, read or written."""

    exit_code = ExitCode.STORE
