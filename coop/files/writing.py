"""Writing a user's file safely: `coop memory export -o` and `coop init` replace a file only when the new one is
complete, never follow a planted link, and never write into a device, a FIFO or a directory.

The new content goes to a temporary file created exclusively (`mkstemp`: O_EXCL, mode 0600, a random name)
beside the target, is flushed to disk, and is then renamed over the target. The rename replaces a directory
entry; it does not open the target, so whatever the target was cannot redirect the write. A target that is a
symlink, a device, a FIFO, a socket or a directory is refused before anything is written.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from coop.errors import CoopError, StoreError, UsageError

T = TypeVar("T")
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def private_file(path: str | os.PathLike[str], flags: int = os.O_WRONLY | os.O_CREAT | os.O_APPEND) -> int:
    """Open (creating if needed) a file of coop's own (log, trace, REPL history) as 0600, tightening an older,
    looser file: a file that was 0644 before stays readable by others otherwise, whatever coop creates now."""
    descriptor = os.open(path, flags, 0o600)
    try:
        if stat.S_IMODE(os.fstat(descriptor).st_mode) & 0o077:
            os.fchmod(descriptor, 0o600)
    except OSError:
        pass  # not ours to change (another owner): it is still opened
    return descriptor


def private_dir(path: Path) -> None:
    """Create coop's own directory (COOP_HOME) as 0700, or tighten an existing one that others could read or
    write (a 0777 directory from an old install or a careless `mkdir`), when it is ours."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(0o700)


def check_target(path: Path) -> None:
    """Refuse a target that is not (or would not be) a plain file of its own."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"cannot use {path}: {exc.strerror}", hint="choose another path") from None
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{path} is a symbolic link; coop does not write through links",
                         hint="give the path of a regular file, or remove the link first")
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{path} is a directory", hint="give a file name, e.g. -o memory.jsonl")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{path} is not a regular file (a device, a FIFO or a socket)",
                         hint="give the path of a regular file; to stream, leave out -o and redirect stdout")


def write_error(path: object, exc: OSError) -> CoopError:
    """A full disk (or quota, or I/O error) is a store error (exit 5); anything else is the user's path (2)."""
    reason = exc.strerror or str(exc)
    if exc.errno in _DISK_ERRORS:
        return StoreError(f"cannot write {path}: {reason}; nothing was kept",
                          hint="free some space (or choose another disk) and run it again")
    return UsageError(f"cannot write {path}: {reason}", hint="choose a writable place")


def replace_file(path: Path, write: Callable[[IO[str]], T], *, mode: int = 0o600) -> T:
    """Write a new `path` through `write(handle)`, atomically; returns what `write` returned."""
    check_target(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=directory)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            result = write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        check_target(path)  # the target may have become a link or a device while we wrote
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise write_error(path, exc) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return result


def write_stream(out: IO[str], write: Callable[[IO[str]], T], name: str = "stdout") -> T:
    """Write to an open stream (stdout) and flush it, so a full disk (`> /dev/full`) is an error here, with a
    hint and exit code 5, not a traceback when the interpreter flushes at exit."""
    try:
        result = write(out)
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise write_error(name, exc) from None
    return result
