"""Errors the library raises, each carrying a one-line message, a hint and the exit code the CLI uses.

Only `coop.cli` turns these into output; library code raises them and never prints. The exit codes are part of
the contract in DESIGN.md, so scripts can tell a missing item (3) from a provider failure (4) or a store
failure (5).
"""

from __future__ import annotations

from enum import Enum, IntEnum

from coop.privacy.secrets import mask


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    NOT_FOUND = 3
    MODEL = 4
    STORE = 5
    INTERRUPTED = 130


class CoopError(Exception):
    """Base error: `message` says what went wrong, `hint` what to do about it. Both are masked (`privacy.secrets`) when
    the error is made, so no API key in a provider's reply or a config value reaches a printed or logged error."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, hint: str | None = None) -> None:
        message = mask(message)
        super().__init__(message)
        self.message = message
        self.hint = None if hint is None else mask(hint)

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


class ErrorKind(Enum):
    """What kind of model failure a `ModelError` is: callers decide on this (retry? drop the tools?), never on
    the wording of a provider's message."""

    CONNECTION = "connection"            # the server cannot be reached
    TIMEOUT = "timeout"
    AUTH = "auth"                        # a missing, wrong or unauthorised key
    NOT_FOUND = "not_found"              # no such model
    RATE_LIMIT = "rate_limit"
    BAD_REQUEST = "bad_request"
    TOOLS_UNSUPPORTED = "tools_unsupported"  # the model refuses function calling
    MODE_REFUSED = "mode_refused"        # the server refuses the JSON mode asked for (response_format): not retried
    CONTEXT_WINDOW = "context_window"
    SERVER = "server"                    # the provider failed (5xx)
    EMPTY = "empty"                      # a reply with neither text nor tool calls
    MALFORMED = "malformed"              # a reply that cannot be read
    EMBEDDER = "embedder"                # the embedder could not load or made vectors of the wrong shape
    OTHER = "other"


class ModelError(CoopError):
    """The chat or embedding provider failed or could not be reached; `kind` says how."""

    exit_code = ExitCode.MODEL

    def __init__(self, message: str, hint: str | None = None, *, kind: ErrorKind = ErrorKind.OTHER) -> None:
        super().__init__(message, hint)
        self.kind = kind


class EmbedderError(ModelError):
    """The embedder could not load or returned vectors of the wrong shape."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint, kind=ErrorKind.EMBEDDER)


class StoreError(CoopError):
    """The database could not be opened, read or written."""

    exit_code = ExitCode.STORE


class StoreUnreachable(StoreError):
    """The database's server cannot be reached, for now: a chat keeps what is said on this machine meanwhile
    (`coop/chat/unsent.py`)."""
