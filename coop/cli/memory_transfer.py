"""`coop memory import|export|reembed|reindex`: moving memory in and out, and rebuilding what is derived from it
(vectors, full-text indexes). Registered on the same `coop memory` app as the inspection commands."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.cli.memory import JsonOption, UserOption, app
from coop.errors import ExitCode, UsageError
from coop.memory.text import plural

if TYPE_CHECKING:
    from rich.progress import Progress

    from coop.memory.embedder import Embedder
    from coop.memory.storage.store import UserMemory
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


def _embed_with_progress(memory: UserMemory, embedder: Embedder | None, batch_size: int) -> int:
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
        raise UsageError(f"{path} does not exist", hint="give the path of an export file")
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
