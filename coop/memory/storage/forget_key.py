"""The secret that keys the `forgotten` table's hashes, kept beside the database and never inside it.

coop keeps a hash of each forgotten text so that extraction never learns it again and an old export read back does
not restore it. A plain SHA-256 of a short text can be turned back by trying every candidate ("Bank PIN is 0000" to
"9999": ten thousand hashes), so the hash is an HMAC keyed with 32 random bytes made once per database and kept in
a file of its own, `<database>-forget-key` (0600), never in the database file, its WAL or an export. Whoever has
the database alone (a copy, a backup, an export) cannot test guesses; whoever has both files can, as they could
read everything else coop keeps: coop does not protect a memory from its owner's account.

A missing key file (a database copied without it) gets a new key: older forgotten records then match nothing,
which costs only the "not learned again" guard for them. Where no key file can be written (a read-only place) or
for an in-memory database, the key lives in this process only.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading

from coop.memory.storage.connection import THROWAWAY
from coop.memory.text import normalise_text

KEY_BYTES = 32
_SUFFIX = "-forget-key"
_process_keys: dict[str, bytes] = {}
_lock = threading.Lock()


def key_path(db_path: str) -> str:
    return db_path + _SUFFIX


def forget_key(db_path: str) -> bytes:
    """The key of the database at `db_path`: read from its key file, made there the first time."""
    with _lock:
        if db_path in _process_keys:
            return _process_keys[db_path]
        key = _read_or_make(key_path(db_path)) if db_path != THROWAWAY else None
        _process_keys[db_path] = key if key is not None else secrets.token_bytes(KEY_BYTES)
        return _process_keys[db_path]


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            data = bytes.fromhex(handle.read(KEY_BYTES * 2 + 8).decode("ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if len(data) == KEY_BYTES else None


def _read_or_make(path: str) -> bytes | None:
    """The key in `path`, or a new one written there whole (through a private temporary file and a hard link, so
    two processes starting at once agree on one key, and nobody reads half a key)."""
    found = _read(path)
    if found is not None:
        return found
    key = secrets.token_bytes(KEY_BYTES)
    temporary = f"{path}.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(key.hex() + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:  # another process made it first: theirs is the key
            return _read(path)
        except OSError:  # no hard links here: a plain rename (the last writer wins, before any record uses it)
            os.replace(temporary, path)
            return _read(path)
        return key
    except OSError:
        return None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def forgotten_digest(key: bytes, text: str) -> str:
    """The keyed hash of a forgotten text, in the normal form duplicates are compared in (`normalise_text`)."""
    normal = normalise_text(text) or " ".join(text.split())
    return hmac.new(key, normal.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
