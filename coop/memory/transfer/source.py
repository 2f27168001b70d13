"""Opening an export for reading: a regular file, or the conversations member of a ZIP archive, as text.

Only regular files are read (a FIFO, a device such as /dev/zero, a socket is a usage error before anything is
read; the file is opened without blocking and checked on its descriptor, so it cannot be swapped in between). A
ZIP archive is read in place, with limits on what it may unpack to, checked on its directory before a byte is
inflated: at most `MAX_MEMBER_BYTES` for the member, at most `MAX_RATIO` times its packed size (for members
over `RATIO_FLOOR_BYTES`; a zip bomb reaches 1000 times, JSON text about 5 to 15), at most `MAX_ZIP_ENTRIES`
members. The member is never inflated past the size its directory entry states, and a damaged archive found while
reading is an OSError like any other read error.

Text is UTF-8 (as every export is). Bytes that are not valid UTF-8 are read as U+FFFD, and counted
(`Source.replaced`), so the import says how many there were: the text around them is kept, rather than a whole
conversation refused for one byte.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import stat
import threading
import zipfile
import zlib
from pathlib import Path
from typing import IO

from coop.errors import UsageError

MAX_MEMBER_BYTES = 16 * 1024**3  # the largest ChatGPT exports seen are a few GB of conversations.json
MAX_RATIO = 100
RATIO_FLOOR_BYTES = 64 * 1024**2
MAX_ZIP_ENTRIES = 100_000  # an export with every image is thousands of files; each entry costs memory to list

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


_REPLACED = threading.local()  # how many invalid UTF-8 sequences this thread's sources read as U+FFFD


def _replace_counting(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    _REPLACED.count = getattr(_REPLACED, "count", 0) + 1
    return "\ufffd", error.end


codecs.register_error("coop-import-replace", _replace_counting)


def _size(count: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:,.0f} {unit}" if unit == "bytes" else f"{count:,.1f} {unit}"
        count /= 1024
    return f"{count:,.1f} GB"


def open_regular(path: Path) -> IO[bytes]:
    """`path` opened for reading in binary, or a UsageError when it is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}",
                         hint="check the path and its permissions") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise UsageError(f"cannot import {path}: it is {kind}, not a file",
                         hint="give the path of an export file (.json, .jsonl or .zip)")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


class _Member(io.RawIOBase):
    """A ZIP member as a raw stream whose read errors (bad CRC, bad deflate data, a cut archive) are OSErrors."""

    def __init__(self, member: IO[bytes]) -> None:
        self._member = member

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self._member.read(len(buffer))
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            raise OSError(f"the ZIP archive is damaged ({exc})") from None
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._member.close()
        super().close()


def _check_archive(name: str, handle: IO[bytes]) -> None:
    """Refuse an archive whose directory lists more members than an export has, before listing them."""
    end_record = getattr(zipfile, "_EndRecData", None)  # the standard library's own reader of the directory end
    if end_record is None:
        return
    record = end_record(handle)
    handle.seek(0)
    if record is not None and record[4] > MAX_ZIP_ENTRIES:
        raise UsageError(f"cannot import {name}: the ZIP archive lists {record[4]:,} files, more than an export has "
                         f"({MAX_ZIP_ENTRIES:,} at most)", hint="unpack it yourself and import conversations.json")


class Source:
    """An export opened for reading as text, with how far into it we are (for a progress bar).

    The position is that of the underlying bytes (the file, or the member inside a ZIP), so it runs from 0 to
    `size` whatever the text decoding does.
    """

    def __init__(self, path: Path) -> None:
        self._archive: zipfile.ZipFile | None = None
        self._handle = handle = open_regular(path)
        try:
            self._raw = self._open(path, handle)
        except BaseException:
            handle.close()
            if self._archive is not None:
                self._archive.close()
            raise
        self._replaced_before = getattr(_REPLACED, "count", 0)
        self.text: IO[str] = io.TextIOWrapper(self._raw, encoding="utf-8", errors="coop-import-replace", newline="")

    def _open(self, path: Path, handle: IO[bytes]) -> IO[bytes]:
        if not zipfile.is_zipfile(handle):
            handle.seek(0)
            self.size = os.fstat(handle.fileno()).st_size
            self._member: IO[bytes] = handle
            return handle
        handle.seek(0)
        _check_archive(path.name, handle)
        try:
            self._archive = zipfile.ZipFile(handle)
            infos = [i for i in self._archive.infolist()
                     if not i.is_dir() and i.filename.endswith(("conversations.json", ".jsonl"))]
            if not infos:
                raise UsageError(f"cannot import {path.name}: the ZIP archive has no conversations.json",
                                 hint="give the .zip as ChatGPT or Claude delivered it, or a conversations.json")
            info = infos[0]
            if info.file_size > MAX_MEMBER_BYTES or (info.file_size > RATIO_FLOOR_BYTES
                                                     and info.file_size > MAX_RATIO * max(info.compress_size, 1)):
                raise UsageError(f"cannot import {path.name}: {info.filename} would unpack to "
                                 f"{_size(info.file_size)} from {_size(info.compress_size)} (at most "
                                 f"{_size(MAX_MEMBER_BYTES)}, and {MAX_RATIO} times its packed size)",
                                 hint="unpack it yourself if you trust it, and import the file")
            member = self._archive.open(info)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError) as exc:
            raise UsageError(f"cannot import {path.name}: the ZIP archive cannot be read ({exc})",
                             hint="unpack it yourself and import conversations.json") from None
        self.size = info.file_size
        self._member = member
        return io.BufferedReader(_Member(member))

    @property
    def replaced(self) -> int:
        """Invalid UTF-8 sequences read as U+FFFD so far."""
        return getattr(_REPLACED, "count", 0) - self._replaced_before

    def position(self) -> int:
        try:
            return min(self._member.tell(), self.size)
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        self.text.close()
        if self._archive is not None:
            self._archive.close()
        self._handle.close()

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def detect_format(path: Path) -> str:
    """coop (JSON Lines with a coop header), chatgpt (`mapping` trees) or claude (`chat_messages`)."""
    with Source(path) as source:
        head = source.text.read(1 << 16)
    stripped = head.lstrip()
    if stripped.startswith("{"):
        first_line = stripped.splitlines()[0] if stripped else ""
        try:
            if json.loads(first_line).get("format") == "coop":
                return "coop"
        except (json.JSONDecodeError, AttributeError, RecursionError):
            pass
    if stripped.startswith("["):
        if '"mapping"' in head:
            return "chatgpt"
        if '"chat_messages"' in head:
            return "claude"
    raise ValueError("cannot tell the format: not a coop export, nor a ChatGPT or Claude conversations.json")
