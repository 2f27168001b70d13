"""Migration m011 (issue 27): rows an older coop stored are masked, and the plain SHA-256 hashes of forgotten texts
(reversible by trying candidates) are dropped; the new forgotten hashes are keyed by a secret outside the file."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from coop.memory.storage.connection import connect
from coop.memory.storage.database import open_database
from coop.memory.storage.forget_key import key_path
from coop.memory.storage.migrations import MIGRATIONS, apply_migrations
from coop.memory.storage.store import MemoryStore

PPLX = "pplx-" + "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9jKl1n"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


def _old_database(path: str) -> None:
    """A database as coop left it at m010, with keys in every text column and a plain forgotten hash."""
    db = connect(path)
    apply_migrations(db, MIGRATIONS[:10])
    db.execute("INSERT INTO users (id, created_at) VALUES ('ana', 1)")
    db.execute("INSERT INTO sessions (id, user_id, title, started_at, last_activity_at) "
               f"VALUES (1, 'ana', 'key {PPLX}', 1, 1)")
    db.execute("INSERT INTO messages (id, user_id, session_id, role, content, created_at, token_count) "
               f"VALUES (1, 'ana', 1, 'user', 'my perplexity key is {PPLX} and a token {JWT}', 1, 10)")
    db.execute("INSERT INTO facts (id, user_id, category, key, value, source, content_hash, created_at, updated_at) "
               f"VALUES (1, 'ana', 'general', NULL, 'Perplexity key {PPLX}', 'user', 'x', 1, 1)")
    db.execute("INSERT INTO fact_history (user_id, fact_id, action, new_value, reason, created_at) "
               f"VALUES ('ana', 1, 'ADD', 'Perplexity key {PPLX}', 'said {JWT}', 1)")
    db.execute(f"INSERT INTO summaries (id, user_id, text, created_at) VALUES (1, 'ana', 'Ana shared {JWT}', 1)")
    db.execute("INSERT INTO fact_sources (user_id, fact_id, message_id, quote) VALUES ('ana', 1, 1, ?)",
               (f"key is {PPLX}",))
    plain = hashlib.sha256(b"bank pin is 4821").hexdigest()
    db.execute("INSERT INTO forgotten (user_id, kind, item_id, content_hash, forgotten_at) "
               "VALUES ('ana', 'fact', 9, ?, 1)", (plain,))
    db.checkpoint()
    db.close()


def test_m011_masks_old_rows_and_drops_plain_forgotten_hashes(tmp_path):
    path = str(tmp_path / "coop.db")
    _old_database(path)
    raw = Path(path).read_bytes()
    assert PPLX.encode() in raw  # the old coop stored it

    db = open_database(path)
    texts = [row for table, columns in (("sessions", "title"), ("messages", "content"), ("facts", "value"),
                                        ("fact_history", "new_value, reason"), ("summaries", "text"),
                                        ("fact_sources", "quote"))
             for row in db.execute(f"SELECT {columns} FROM {table}")]
    flat = " ".join(str(value) for row in texts for value in row)
    assert PPLX not in flat and JWT not in flat and flat.count("[secret]") == 8, flat
    assert db.scalar("SELECT content_hash FROM forgotten") is None
    # the fact's hash follows its masked value: the same text added again is a mention, not a second fact
    memory = MemoryStore(db).user("ana")
    assert memory.facts.find_exact("Perplexity key [secret]", "general") is not None
    # the migration's rewrite leaves the keys neither in the file nor in its WAL
    db.close()
    for name in (path, path + "-wal"):
        if os.path.exists(name):
            data = Path(name).read_bytes()
            assert PPLX.encode() not in data and JWT.encode() not in data, name


def test_forgotten_hashes_are_keyed_by_a_private_file_outside_the_database(tmp_path):
    path = str(tmp_path / "coop.db")
    db = open_database(path)
    memory = MemoryStore(db).user("ana")
    fact = memory.facts.add("Bank PIN is 4821")
    memory.forget("fact", fact.fact_id)
    stored = db.scalar("SELECT content_hash FROM forgotten")
    # no plain hash of any candidate matches: trying every PIN from the database alone finds nothing
    plain = {hashlib.sha256(f"bank pin is {pin:04d}".encode()).hexdigest() for pin in range(10_000)}
    assert stored not in plain and len(stored) == 64
    assert memory.forgotten.was_forgotten("Bank PIN is 4821") and not memory.forgotten.was_forgotten("Bank PIN is 4822")
    key_file = key_path(path)
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    key = Path(key_file).read_text(encoding="ascii").strip()
    assert len(key) == 64 and key.encode() not in Path(path).read_bytes()
    db.close()
    # another process reads the same key from the file: the guard holds across runs
    from coop.memory.storage import forget_key

    forget_key._process_keys.clear()
    again = MemoryStore(open_database(path)).user("ana")
    assert again.forgotten.was_forgotten("bank pin is 4821")
