"""Crash safety: a process writing messages, facts and vectors is killed with SIGKILL at random moments.

After every kill: each write the child reported as returned is there (and each forget it reported is gone),
`integrity_check` passes, the full-text indexes hold exactly the ids of their tables, every vector belongs to a
live item and carries its sign bits (what the bit scan reads). At the end, the
embedding backlog the kills left behind is picked up by the next `coop chat` start.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._integrity import consistency_problems, row_ids

pytestmark = pytest.mark.slow

TRIALS = 24

# The child writes through coop's library exactly as the chat and the CLI do, and prints one line per write
# *after* the call returned (so after its COMMIT): "m USER ID", "f USER ID", "x USER KIND ID" (forgotten),
# "u USER ID" (a fact rewritten), "e USER COUNT" (vectors stored). "? USER KIND ID" comes just before a forget:
# if the kill lands between it and the "x", the item may be there or not.
CHILD = r"""
import random, sys
from coop.memory.storage.database import open_database
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.reconcile import Candidate, FactWriter
from coop.config.loading import ExtractionConfig
from coop.memory.storage.store import MemoryStore
from coop.memory.growth.embedding import embed_pending

path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
db = open_database(path, busy_timeout_ms=10000)
store = MemoryStore(db)
embedder = HashEmbedder(64)
users = [store.user("ana"), store.user("bo")]
writers = {m.user_id: FactWriter(m, ExtractionConfig(), embedder=embedder) for m in users}
sessions = {}
from coop.privacy.secrets import mask
mask("warm up")  # the secret patterns load on the first mask (0.2 s): ready means ready to write
out = sys.stdout
out.write("ready\n"); out.flush()
i = 0
while True:
    i += 1
    memory = rng.choice(users)
    uid = memory.user_id
    op = rng.random()
    if op < 0.40:
        if uid not in sessions or rng.random() < 0.05:
            sessions[uid] = memory.sessions.start(f"trial {seed}")
        mid = memory.messages.add(sessions[uid], rng.choice(["user", "assistant"]),
                                 f"message {seed}-{i}: walnut trees, kayaks and the number {rng.randint(0, 10**6)}")
        out.write(f"m {uid} {mid}\n")
    elif op < 0.60:
        key = rng.choice([None, None, "city", "job"])
        result = memory.facts.add(f"fact {seed}-{i}: owns {rng.randint(1, 10**6)} bicycles", key=key,
                                 category="general")
        out.write(f"f {uid} {result.fact_id}\n")
    elif op < 0.75:  # the write pipeline: the fact and its vector in one transaction
        result = writers[uid].write(Candidate(f"likes {rng.choice(['tea', 'chess', 'rain', 'jazz'])} {seed}-{i}",
                                              source="user"))
        if result is not None:
            out.write(f"f {uid} {result.fact_id}\n")
    elif op < 0.87:
        done = embed_pending(memory, embedder, batch_size=rng.choice([1, 8, 32]))
        out.write(f"e {uid} {done}\n")
    elif op < 0.94:
        kind = rng.choice(["fact", "message"])
        table = {"fact": "facts", "message": "messages"}[kind]
        row = db.one(f"SELECT id FROM {table} WHERE user_id = ? ORDER BY random() LIMIT 1", (uid,))
        if row is not None:
            out.write(f"? {uid} {kind} {row[0]}\n"); out.flush()  # may be gone if the kill comes before "x"
            memory.forget(kind, row[0])
            out.write(f"x {uid} {kind} {row[0]}\n")
    else:
        row = db.one("SELECT id FROM facts WHERE user_id = ? AND superseded_at IS NULL ORDER BY random() LIMIT 1",
                     (uid,))
        if row is not None:
            memory.facts.update_value(row[0], f"rewritten {seed}-{i}", reason="test")
            out.write(f"u {uid} {row[0]}\n")
    out.flush()
"""


def _run_and_kill(db_path: str, seed: int, rng: random.Random, home: Path) -> list[str]:
    """Start a writer, kill it with SIGKILL at a random moment, and return the complete lines it printed."""
    env = {**os.environ, "COOP_HOME": str(home)}
    process = subprocess.Popen([sys.executable, "-c", CHILD, db_path, str(seed)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    try:
        if rng.random() < 0.15:  # sometimes while it opens the database (or migrates a new one)
            time.sleep(rng.uniform(0.0, 0.6))
        else:
            assert process.stdout is not None
            first = process.stdout.readline()
            assert first == b"ready\n", (first, process.stderr.read() if process.poll() is not None else b"")
            time.sleep(rng.uniform(0.0, 0.5))
        process.send_signal(signal.SIGKILL)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL, err.decode(errors="replace")[-2000:]
    text = out.decode()
    lines = text.split("\n")[:-1]  # the last piece has no newline: cut off mid-write by the kill
    return [line for line in lines if line != "ready"]


def test_sigkill_at_random_moments_loses_no_returned_write_and_leaves_a_consistent_database(coop_home, tmp_path,
                                                                                               openai_server):
    coop_home.mkdir(parents=True, exist_ok=True)
    db_path = str(coop_home / "coop.db")
    rng = random.Random(int(os.environ.get("COOP_CRASH_SEED", "20240611")))
    present: dict[str, set[tuple[str, int]]] = {"messages": set(), "facts": set()}
    gone: dict[str, set[tuple[str, int]]] = {"messages": set(), "facts": set()}
    writes = 0
    for trial in range(TRIALS):
        lines = _run_and_kill(db_path, trial, rng, coop_home)
        for line in lines:
            parts = line.split()
            if parts[0] in ("m", "f", "u"):
                table = "messages" if parts[0] == "m" else "facts"
                present[table].add((parts[1], int(parts[2])))
                writes += 1
            elif parts[0] == "?":  # a forget that may or may not have committed before the kill
                table = "messages" if parts[2] == "message" else "facts"
                present[table].discard((parts[1], int(parts[3])))
            elif parts[0] == "x":
                table = "messages" if parts[2] == "message" else "facts"
                item = (parts[1], int(parts[3]))
                present[table].discard(item)
                gone[table].add(item)
        if not os.path.exists(db_path):
            continue
        problems = consistency_problems(db_path)
        assert problems == [], f"trial {trial}: {problems}"
        for table in ("messages", "facts"):
            for user in ("ana", "bo"):
                ids = row_ids(db_path, table, user)
                lost = {i for u, i in present[table] if u == user} - ids
                assert not lost, f"trial {trial}: {table} of {user} that were reported written are missing: {lost}"
                back = {i for u, i in gone[table] if u == user} & ids
                assert not back, f"trial {trial}: forgotten {table} of {user} are back: {back}"
    assert writes > 100, "the children wrote too little for the test to mean anything"

    # The next start picks up the embedding backlog the kills left behind.
    from coop.memory.storage.database import open_database

    def backlog(user: str) -> int:
        database = open_database(db_path)
        try:
            return sum(database.scalar(f"SELECT count(*) FROM {t} WHERE user_id = $1 AND embedder IS NULL", (user,))
                       for t in ("messages", "facts", "summaries"))
        finally:
            database.close()

    database = open_database(db_path)  # make sure there is a backlog, whatever the kills left
    database.execute("UPDATE messages SET embedder = NULL WHERE user_id = 'ana' AND id IN "
                     "(SELECT id FROM messages WHERE user_id = 'ana' ORDER BY id DESC LIMIT 5)")
    database.close()
    assert backlog("ana") > 0
    env = {**os.environ, "COOP_HOME": str(coop_home), "COOP_MODEL_NAME": "openai/test-model",
           "COOP_MODEL_API_BASE": openai_server.api_base, "COOP_MEMORY_EMBEDDER_PROVIDER": "hash",
           "COOP_MEMORY_EMBEDDER_DIMS": "64"}
    # one turn, as a person's next session would have: the backlog is embedded while it runs (an exit at once
    # would leave it, durably, for the start after; the exit waits at most 2 s for background work)
    result = subprocess.run([sys.executable, "-m", "coop", "chat", "--user", "ana"], input=b"hello again\n",
                            env=env, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    assert backlog("ana") == 0
    assert consistency_problems(db_path) == []
