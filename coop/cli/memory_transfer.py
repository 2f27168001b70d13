"""`coop memory import|export|migrate|reembed|reindex`: moving memory in and out and between stores, and rebuilding
what is derived from it (vectors, full-text indexes). Registered on the same `coop memory` app as the inspection
commands."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.cli.memory import JsonOption, UserOption, app
from coop.errors import ExitCode, NotFoundError, UsageError
from coop.memory.text import plural

if TYPE_CHECKING:
    from rich.progress import Progress

    from coop.config.loading import Config
    from coop.memory.embedder import Embedder
    from coop.memory.storage.interface import UserStore
    from coop.memory.transfer.migrate import MigrationProgress, MigrationReport, UserMigration
    from coop.memory.transfer.report import ImportProgress


def _progress(transient: bool = True) -> Progress:
    """A progress bar on stderr (counts, rate, time left), hidden when stderr is not a terminal."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[detail]}"), TimeRemainingColumn(), console=output.err(),
                    transient=transient, disable=not output.err().is_terminal)


def _embed_with_progress(memory: UserStore, embedder: Embedder | None, batch_size: int) -> int:
    from coop.memory.growth.embedding import embed_backlog

    total = memory.unembedded_count()
    if embedder is None or total == 0:
        return 0
    started = time.monotonic()
    with _progress() as bar:
        task = bar.add_task("embedding", total=total, detail="")

        def advance(done: int) -> None:
            bar.advance(task, done)
            rate = bar.tasks[0].completed / max(time.monotonic() - started, 1e-6)
            bar.update(task, detail=f"{rate:,.0f}/s")

        return embed_backlog(memory, embedder, batch_size=batch_size, progress=advance)


@app.command("import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="coop export (.jsonl), or ChatGPT/Claude conversations.json or .zip")],
    fmt: Annotated[str, typer.Option("--format", help="auto, coop, chatgpt or claude")] = "auto",
    no_embed: Annotated[bool, typer.Option("--no-embed", help="leave embedding to the background worker")] = False,
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Import conversations and memory from coop, ChatGPT or Claude exports. Importing a file twice adds nothing."""
    from coop.memory.transfer.imports import import_file

    if fmt not in ("auto", "coop", "chatgpt", "claude"):
        raise UsageError(f"unknown format {fmt!r}", hint="use --format auto, coop, chatgpt or claude")
    if not path.exists():
        raise NotFoundError(f"{path} does not exist", hint="give the path of an export file")
    app_state = state(ctx)
    config = app_state.config()
    memory = app_state.memory(user)
    started = time.monotonic()
    with _progress() as bar:
        task = bar.add_task("importing", total=None, detail="")

        def show(where: ImportProgress) -> None:
            rate = where.messages / max(time.monotonic() - started, 1e-6)
            bar.update(task, total=where.size, completed=where.position,
                       detail=f"{plural(where.conversations, 'conversation')}, "
                              f"{plural(where.messages, 'message')}, {rate:,.0f}/s")

        report = import_file(memory, path, fmt, importance=config.memory.importance, progress=show)
    embedded = 0
    if not no_embed:
        embedded = _embed_with_progress(memory, app_state.embedder(), config.memory.embedder.batch_size)
    if json_:
        output.print_json({**report.as_dict(), "embedded": embedded, "user": memory.user_id,
                           "seconds": round(time.monotonic() - started, 3)})
        return
    for problem in report.problems[:20]:
        output.warn(f"{problem.where}: {problem.reason}")
    if len(report.problems) > 20:
        output.warn(f"... and {len(report.problems) - 20} more problems", "run with --json to see them all")
    parts = [plural(report.sessions_added, "session"), plural(report.messages_added, "message")]
    if report.format == "coop":
        parts += [plural(report.facts_added, "fact"), plural(report.summaries_added, "summary", "summaries")]
    skipped = report.messages_skipped + report.facts_skipped
    output.out().print(f"imported {', '.join(parts)} from {report.format} export for {memory.user_id}"
                       + (f"; {skipped:,} already there" if skipped else "")
                       + (f"; {len(report.problems):,} problem{'s' if len(report.problems) != 1 else ''} "
                          "(see above)" if report.problems else ""),
                       markup=False, highlight=False)


@app.command()
def export(
    ctx: typer.Context,
    fmt: Annotated[str, typer.Option("--format", help="coop (JSON Lines, re-importable) or markdown")] = "coop",
    out_path: Annotated[Path | None, typer.Option("-o", "--output", help="file to write (default: stdout)")] = None,
    user: UserOption = None,
) -> None:
    """Export everything of one user: sessions, messages, facts with their history, summaries."""
    from coop.memory.transfer.export import export_user

    if fmt not in ("coop", "markdown"):
        raise UsageError(f"unknown export format {fmt!r}", hint="use --format coop or markdown")
    memory = state(ctx).memory(user)
    count = export_user(memory, fmt, out_path, sys.stdout)
    if out_path is not None:
        output.info(f"wrote {count:,} records of {memory.user_id} to {out_path}")


ToOption = Annotated[str | None, typer.Option("--to", metavar="URL",
                                              help="copy the SQLite memory to this Postgres server")]
FromOption = Annotated[str | None, typer.Option("--from", metavar="URL",
                                                help="copy from this Postgres server into the SQLite memory")]
UsersOption = Annotated[list[str] | None, typer.Option("--user", metavar="ID",
                                                       help="whose memory (repeat for several; default: every user)")]


@app.command()
def migrate(
    ctx: typer.Context,
    to_url: ToOption = None,
    from_url: FromOption = None,
    users: UsersOption = None,
    json_: JsonOption = False,
) -> None:
    """Copy memories from this machine's SQLite file to a Postgres server (--to) or back (--from), vectors
    included, and verify the counts.

    Rerunnable: what an earlier run copied is recognised, nothing is doubled, and what is new is added. The SQLite
    side is memory.db_path (default COOP_HOME/coop.db), whatever memory.backend says."""
    from coop.memory.storage.backends import describe, open_store
    from coop.memory.transfer.migrate import migrate as run_migrate

    if (to_url is None) == (from_url is None):
        raise UsageError("give one of --to URL or --from URL" if to_url is None else "give --to or --from, not both",
                         hint="--to postgresql://... copies this machine's memory to the server; --from copies back")
    up = to_url is not None
    url = ((to_url if up else from_url) or "").strip()
    if not url.startswith(("postgresql://", "postgres://")) or "\x00" in url:
        raise UsageError(f"{'--to' if up else '--from'} takes a Postgres URL, not {describe('postgres', url)!r}",
                         hint="e.g. postgresql://coop@db.example.com:5432/coop")
    if any(not name.strip() for name in users or []):
        raise UsageError("the user id is empty", hint="give --user a name, or leave it out for every user")
    app_state = state(ctx)
    chosen = users or ([app_state.user] if app_state.user else None)  # `coop --user ana memory migrate` too
    config = app_state.config()
    path = _sqlite_path(config, must_exist=up)
    server = open_store("postgres", url, migrate=up)  # a server read from is never set up
    try:
        local = open_store("sqlite", path, busy_timeout_ms=config.memory.busy_timeout_ms)
        try:
            source, target = (local, server) if up else (server, local)
            started = time.monotonic()
            with _progress() as bar:
                task = bar.add_task("migrating", total=None, detail="")

                def show(where: MigrationProgress) -> None:
                    bar.update(task, description=f"{where.user}: {where.step}", total=where.total,
                               completed=where.done)

                try:
                    report = run_migrate(source, target, chosen, progress=show)
                except KeyboardInterrupt:  # each batch was committed as it went: say so, and how to go on
                    output.info("stopped: what was copied so far is kept; run the same command again to go on "
                                "where it stopped (nothing is doubled)")
                    raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        finally:
            local.close()
    finally:
        server.close()
    if json_:
        output.print_json(report.as_dict())
    else:
        _print_migration(report, time.monotonic() - started)
    if not report.verified:
        raise typer.Exit(1)


def _sqlite_path(config: Config, *, must_exist: bool) -> str:
    """The configured SQLite file (memory.db_path, default COOP_HOME/coop.db), whatever memory.backend says; coop's
    home is made (private) when a migration back is to make the file there."""
    from coop.config.loading import coop_home, resolve_db_path
    from coop.files.writing import private_dir

    path = resolve_db_path(config)
    if path == ":memory:":
        raise UsageError("memory.db_path is ':memory:': there is no SQLite file to migrate",
                         hint="set memory.db_path to a file, or leave it unset for COOP_HOME/coop.db")
    if must_exist and not Path(path).is_file():
        raise UsageError(f"there is no SQLite memory at {path} to copy",
                         hint="set memory.db_path to the file, or COOP_HOME to the home that holds coop.db")
    if path == str(coop_home() / "coop.db"):
        private_dir(coop_home())
    return path


_NOUNS = {"sessions": ("session", None), "messages": ("message", None), "facts": ("fact", None),
          "fact_history": ("history entry", "history entries"), "fact_sources": ("fact source", None),
          "summaries": ("summary", "summaries"), "forgotten": ("forgotten record", None), "vectors": ("vector", None)}


def _print_migration(report: MigrationReport, seconds: float) -> None:
    """Per user, what the source holds and whether the target holds it too; the mismatches as warnings."""
    for user in report.users:
        counts = ", ".join(plural(count.source, *_NOUNS[kind]) for kind, count in user.counts.items())
        verdict = "verified" if not user.mismatches else plural(len(user.mismatches), "mismatch", "mismatches")
        output.out().print(f"{user.user}: {counts}: {verdict}", markup=False, highlight=False, soft_wrap=True)
        _print_user_notes(user)
    output.out().print(f"migrated {plural(len(report.users), 'user')} from {report.source} to {report.target} "
                       f"in {seconds:.1f} s", markup=False, highlight=False, soft_wrap=True)
    if not report.verified:
        output.warn("the target does not hold everything the source does",
                    "run the same command again: what arrived stays and the rest is added; --json says more")


def _print_user_notes(user: UserMigration) -> None:
    for kind in user.mismatches:
        count = user.counts[kind]
        noun = _NOUNS[kind][1] or _NOUNS[kind][0] + "s"
        output.warn(f"{user.user}: {noun}: {count.source:,} in the source, {count.target:,} on the target")
    for problem in user.problems[:10]:
        output.warn(f"{user.user}: {problem.where}: {problem.reason}")
    if len(user.problems) > 10:
        output.warn(f"{user.user}: ... and {len(user.problems) - 10} more problems", "run with --json to see them all")
    if user.held_elsewhere:
        output.warn(f"{user.user}: {plural(user.held_elsewhere, 'item')} forgotten on one side still held on the other")
    for side, other in (("target", "source"), ("source", "target")):
        if gone := user.added.get(f"forgotten_on_{side}"):
            output.info(f"{user.user}: {plural(gone, 'item')} forgotten on the {side}: the {other} had forgotten them")
    left = user.left_behind
    if left.get("empty_sessions"):
        output.info(f"{user.user}: {plural(left['empty_sessions'], 'empty session')} (no message, no summary) "
                    "not copied")
    if left.get("history_of_forgotten_facts"):
        output.info(f"{user.user}: {plural(left['history_of_forgotten_facts'], 'history entry', 'history entries')} "
                    "of forgotten facts not copied")
    if left.get("forgotten_hashes"):
        output.info(f"{user.user}: the keyed hashes of {plural(left['forgotten_hashes'], 'forgotten record')} did "
                    "not come along (each store keys them with a secret of its own): the target does not keep those "
                    "texts from being learned again")


@app.command()
def reembed(
    ctx: typer.Context,
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Embed every item with the configured embedder (after changing it), then drop the old vectors.

    Safe to interrupt: run it again and it goes on where it stopped."""
    from coop.memory.transfer.reembed import reembed as run_reembed

    app_state = state(ctx)
    memory = app_state.memory(user)
    embedder = app_state.embedder()
    if embedder is None:
        raise UsageError("the configured embedder cannot load, so there is nothing to embed with",
                         hint="run `coop check` to see why")
    total = memory.stale_count(embedder.id)
    started = time.monotonic()
    with _progress() as bar:
        task = bar.add_task("re-embedding", total=total, detail="")

        def advance(done: int) -> None:
            bar.advance(task, done)
            rate = bar.tasks[0].completed / max(time.monotonic() - started, 1e-6)
            bar.update(task, detail=f"{rate:,.0f}/s")

        try:
            report = run_reembed(memory, embedder, batch_size=app_state.config().memory.embedder.batch_size,
                                 progress=advance)
        except KeyboardInterrupt:
            report = None
        done = int(bar.tasks[0].completed)
    if report is None:  # Ctrl-C: each batch was committed as it went, so say what is kept and how to go on
        output.info(f"stopped: {plural(done, 'item')} of {total:,} embedded with {embedder.id} and kept; "
                    "run `coop memory reembed` again to continue where it stopped")
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if json_:
        output.print_json({"user": memory.user_id, "embedder": embedder.id, "embedded": report.embedded,
                           "failed": report.failed, "dropped_vectors": report.dropped_vectors,
                           "dropped_embedders": report.embedders_dropped})
        return
    output.out().print(f"embedded {plural(report.embedded, 'item')} with {embedder.id}"
                       + (f"; dropped {report.dropped_vectors:,} old vectors" if report.dropped_vectors else ""),
                       markup=False, highlight=False)
    if report.failed:
        output.warn(f"{plural(report.failed, 'item')} could not be embedded; old vectors are kept until they are",
                    "see `coop memory stats`, then run `coop memory reembed` again")
        raise typer.Exit(1)


@app.command()
def reindex(ctx: typer.Context, json_: JsonOption = False) -> None:
    """Rebuild the full-text indexes from the stored text (when `coop check` finds them out of step).

    Covers every user of the database, since the indexes are shared; vectors are left as they are."""

    started = time.monotonic()
    counts = state(ctx).store().rebuild_fulltext()
    if json_:
        output.print_json({"indexed": counts, "seconds": round(time.monotonic() - started, 2)})
        return
    output.out().print("rebuilt " + ", ".join(f"{name} ({rows:,} rows)" for name, rows in counts.items())
                       + f" in {time.monotonic() - started:.1f} s", markup=False, highlight=False)
