"""Resource faults: a full disk (a small tmpfs, a size-limited file, a size-limited database), a read-only
database, a database locked by another program for longer than the busy timeout. Each gives a clear error with
a hint and exit code 5, writes nothing partially, and the REPL goes on (and works again once the fault is gone).
"""

from __future__ import annotations

import io
import os
import resource
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from rich.console import Console

from coop.chat.repl import Repl
from coop.chat.session import ChatSession
from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.storage.database import open_database
from coop.memory.storage.store import MemoryStore
from tests._integrity import consistency_problems

EMBEDDER = HashEmbedder(64)


def counts(db) -> dict[str, int]:
    return {t: db.scalar(f"SELECT count(*) FROM {t}") for t in ("messages", "facts", "fact_history", "sessions")}


def make_repl(memory, server, **overrides):
    config = apply_overrides(load_config(), {"model.name": "openai/test-model", "model.api_base": server.api_base,
                                             "model.timeout_seconds": 10.0, **overrides})
    session = ChatSession(memory, config, embedder=lambda: EMBEDDER)
    screen = io.StringIO()
    repl = Repl(session, console=Console(file=screen, width=200, force_terminal=False, color_system=None),
                out=io.StringIO())
    return repl, screen


def coop_env(home: Path, server=None, **extra: str) -> dict[str, str]:
    env = {**os.environ, "COOP_HOME": str(home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash", **extra}
    if server is not None:
        env.update(COOP_MODEL_NAME="openai/test-model", COOP_MODEL_API_BASE=server.api_base)
    return env


def run_coop(args: list[str], env: dict[str, str], stdin: bytes = b"", preexec=None, timeout: float = 120):
    return subprocess.run([sys.executable, "-m", "coop", *args], input=stdin, capture_output=True, env=env,
                          timeout=timeout, preexec_fn=preexec)


def assert_store_error(result, *fragments: str) -> None:
    err = result.stderr.decode()
    assert result.returncode == 5, (result.returncode, err)
    assert "error:" in err and "hint:" in err and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err


# --- a full disk ---------------------------------------------------------------------------------------------


@pytest.mark.sqlite_only  # SQLite's own file (its size limit, permissions, read-only mode)
def test_a_full_database_is_a_clear_error_nothing_partial_and_the_repl_goes_on(memory, openai_server):
    """The database may not grow (SQLite's max_page_count: SQLITE_FULL, exactly what a full disk gives)."""
    repl, screen = make_repl(memory, openai_server)
    repl.handle("hello", interactive=False)
    db = memory.db
    db.execute("vacuum")  # no free pages left to write into (m012's dropped vec0 tables left some)
    db.execute(f"pragma max_page_count = {db.scalar('pragma page_count')}")
    before = counts(db)
    requests = len(openai_server.chat_requests())
    for line in ["a long message that needs new pages " + "words " * 20_000, "/remember " + "tea " * 2000]:
        repl.handle(line, interactive=False)
    shown = screen.getvalue()
    assert shown.count("the disk is full: nothing was written") == 2 and "hint: free some space" in shown
    assert counts(db) == before
    assert len(openai_server.chat_requests()) == requests  # the message was not stored, so not sent either
    assert consistency_problems(db.path) == []
    db.execute("pragma max_page_count = 1073741823")  # space again: the same REPL carries on
    repl.handle("hello again", interactive=False)
    assert counts(db)["messages"] == before["messages"] + 2
    assert repl.store_errors == 2 and repl.running


def _fill(path: Path) -> None:
    """Take every free byte of the file system `path` is on."""
    with open(path, "wb", buffering=0) as handle:
        chunk = b"\0" * 65536
        try:
            while True:
                handle.write(chunk)
                handle.flush()
        except OSError:
            pass
        try:
            while True:
                handle.write(b"\0" * 512)
                handle.flush()
        except OSError:
            pass


@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_tmpfs_is_a_clear_error_nothing_partial_and_the_repl_goes_on(small_tmpfs, openai_server):
    path = small_tmpfs / "coop.db"
    db = open_database(str(path))
    try:
        memory = MemoryStore(db).user("ana")
        repl, screen = make_repl(memory, openai_server)
        repl.handle("hello before the disk fills", interactive=False)
        db.execute("pragma wal_checkpoint(TRUNCATE)")  # any write now needs new space for the WAL
        filler = small_tmpfs / "filler"
        _fill(filler)
        before = counts(db)
        for line in ["a message for a full disk", "/remember I like green tea", "one more " * 3000]:
            repl.handle(line, interactive=False)
        shown = screen.getvalue()
        assert shown.count("error: the disk is full: nothing was written") == 3, shown
        assert counts(db) == before
        result = run_coop(["memory", "add", "I like coffee", "--user", "ana"],
                          coop_env(small_tmpfs, COOP_MEMORY_DB_PATH=str(path)))
        assert_store_error(result, "the disk is full")
        filler.unlink()
        assert consistency_problems(str(path)) == []
        repl.handle("hello after freeing space", interactive=False)
        assert counts(db)["messages"] == before["messages"] + 2
        assert repl.store_errors == 3
    finally:
        db.close()


@pytest.mark.slow
def test_a_size_limited_file_in_a_piped_chat(coop_home, openai_server):
    """RLIMIT_FSIZE caps every file the process writes (the WAL too), the way a quota does."""
    env = coop_env(coop_home, openai_server)
    assert run_coop(["memory", "add", "I like tea"], env).returncode == 0
    limit = max(p.stat().st_size for p in coop_home.glob("coop.db*")) + 200_000

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    big = "a long paste " + "lorem ipsum " * 40_000  # about 500 kB: more than the limit allows
    lines = ["first small message", big, "second small message", big + " again", "third small message"]
    result = run_coop(["chat", "--user", "sam"], env, ("\n".join(lines) + "\n").encode(), preexec=limited)
    assert_store_error(result, "free space")
    err = result.stderr.decode()
    assert err.count("error:") >= 2
    db = open_database(str(coop_home / "coop.db"))
    try:
        stored = [row[0] for row in db.execute("SELECT content FROM messages WHERE role = 'user' ORDER BY id")]
    finally:
        db.close()
    assert {"first small message", "second small message", "third small message"} <= set(stored)
    assert set(stored) <= set(lines)  # every stored message is whole
    assert consistency_problems(str(coop_home / "coop.db")) == []


# --- a read-only database ------------------------------------------------------------------------------------


@pytest.fixture
def read_only_home(tmp_path):
    """A COOP_HOME with a database in it, then made read-only: by a read-only mount as root (chmod does not stop
    root), by permissions otherwise. Yields (home, make_read_only)."""
    if os.geteuid() == 0:
        home = tmp_path / "ro"
        home.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(home)],
                              capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"running as root and cannot mount a read-only file system: {done.stderr.decode()}")

        def make_read_only() -> None:
            subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)

        try:
            yield home, make_read_only
        finally:
            subprocess.run(["umount", "-l", str(home)], capture_output=True)
    else:
        home = tmp_path / "ro"
        home.mkdir(mode=0o700)

        def make_read_only() -> None:
            for path in home.iterdir():
                path.chmod(0o400)
            home.chmod(0o500)

        try:
            yield home, make_read_only
        finally:
            home.chmod(0o700)


@pytest.mark.slow
def test_a_read_only_database_reads_refuses_writes_clearly_and_changes_nothing(read_only_home, openai_server):
    home, make_read_only = read_only_home
    env = coop_env(home, openai_server)
    assert run_coop(["memory", "add", "My dog is called Rex", "--user", "ana"], env).returncode == 0
    make_read_only()
    snapshot = {p.name: p.read_bytes() for p in home.iterdir()}
    reads = (["memory", "list"], ["memory", "search", "dog"], ["memory", "show", "f1"], ["memory", "stats"],
             ["memory", "export"])
    writes = (["memory", "add", "I like tea"], ["memory", "forget", "f1", "--yes"])
    openai_server.replies = ["Your dog is Rex."]
    # Nothing can change a read-only database, so the runs are independent: they run side by side.
    with ThreadPoolExecutor(max_workers=3) as pool:
        chat = pool.submit(run_coop, ["chat", "--user", "ana"], env, b"hello\n")
        incognito = pool.submit(run_coop, ["chat", "--user", "ana", "--incognito"], env,
                                b"what is my dog called?\n")
        read_runs = [pool.submit(run_coop, [*args, "--user", "ana"], env) for args in reads]
        write_runs = [pool.submit(run_coop, [*args, "--user", "ana"], env) for args in writes]
    for args, run in zip(reads, read_runs):
        result = run.result()
        assert result.returncode == 0, (args, result.stderr.decode())
        assert "Rex" in result.stdout.decode() or args[1] == "stats"
    for run in write_runs:
        assert_store_error(run.result(), "read-only")
    assert_store_error(chat.result(), "read-only", "--incognito")
    incognito = incognito.result()
    assert incognito.returncode == 0, incognito.stderr.decode()
    assert incognito.stdout.decode().strip() == "Your dog is Rex."
    assert len(openai_server.chat_requests()) == 1  # the refused chat asked the model nothing
    assert "My dog is called Rex" in openai_server.system_prompt()  # memory was read
    assert {p.name: p.read_bytes() for p in home.iterdir()} == snapshot


@pytest.mark.sqlite_only  # SQLite's own file (its size limit, permissions, read-only mode)
def test_a_database_that_turns_read_only_under_the_repl(memory, openai_server):
    repl, screen = make_repl(memory, openai_server)
    repl.handle("hello", interactive=False)
    before = counts(memory.db)
    memory.db.execute("pragma query_only = 1")  # every write now fails as on a read-only file
    repl.handle("a message", interactive=False)
    repl.handle("/remember I like tea", interactive=False)
    shown = screen.getvalue()
    assert shown.count("error: the database is read-only") == 2 and "hint:" in shown
    assert counts(memory.db) == before
    memory.db.execute("pragma query_only = 0")
    repl.handle("works again", interactive=False)
    assert counts(memory.db)["messages"] == before["messages"] + 2


# --- a database locked by another program --------------------------------------------------------------------

LOCKER = r"""
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive":  # readers are shut out too
    connection.execute("pragma locking_mode = exclusive")
connection.execute("BEGIN EXCLUSIVE")
connection.execute("SELECT count(*) FROM users").fetchall()
print("locked", flush=True)
sys.stdin.readline()
connection.execute("ROLLBACK")
"""


class Locker:
    """Another program (Python's own sqlite3, in another process) holding the database's lock."""

    def __init__(self, path: Path, mode: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", LOCKER, str(path), mode], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.process.stdout.readline()
        assert line == b"locked\n", self.process.stderr.read()

    def release(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.write(b"\n")
            self.process.stdin.flush()
            self.process.wait(timeout=10)


@pytest.mark.slow  # a locking process and five coop processes
@pytest.mark.parametrize("mode", ["normal", "exclusive"])
def test_a_lock_held_longer_than_the_timeout_is_a_clear_error(coop_home, mode):
    env = coop_env(coop_home, COOP_MEMORY_BUSY_TIMEOUT_MS="300")
    assert run_coop(["memory", "add", "I like tea"], env).returncode == 0
    locker = Locker(coop_home / "coop.db", mode)
    try:
        started = time.monotonic()
        result = run_coop(["memory", "add", "I like coffee"], env)
        assert time.monotonic() - started < 30
        assert_store_error(result, "busy_timeout_ms")
        if mode == "normal":  # the write waits for the other writer's lock, then gives up
            assert "the database is busy: another program held its lock too long" in result.stderr.decode()
        else:  # an exclusive lock shuts coop out as soon as it opens the database
            assert "is locked by another program" in result.stderr.decode()
        listed = run_coop(["memory", "list", "--json"], env)
        if mode == "normal":  # a writer's lock does not stop readers (WAL)
            assert listed.returncode == 0 and "I like tea" in listed.stdout.decode()
        else:
            assert_store_error(listed, "locked by another program")
    finally:
        locker.release()
    result = run_coop(["memory", "list", "--json"], env)
    assert result.returncode == 0
    assert "I like coffee" not in result.stdout.decode()
    assert run_coop(["memory", "add", "I like coffee"], env).returncode == 0


def test_a_locked_database_under_the_repl(coop_home, openai_server):
    db = open_database(str(coop_home / "coop.db"), busy_timeout_ms=200)
    try:
        memory = MemoryStore(db).user("ana")
        repl, screen = make_repl(memory, openai_server, **{"memory.busy_timeout_ms": 200})
        repl.handle("hello", interactive=False)
        before = counts(db)
        locker = Locker(coop_home / "coop.db", "normal")
        try:
            repl.handle("while it is locked", interactive=False)
            repl.handle("/remember I like tea", interactive=False)
        finally:
            locker.release()
        shown = screen.getvalue()
        assert shown.count("error: the database is busy") == 2 and "hint: retry, or raise memory.busy_timeout_ms" in shown
        assert counts(db) == before
        repl.handle("after the lock", interactive=False)
        assert counts(db)["messages"] == before["messages"] + 2
    finally:
        db.close()
