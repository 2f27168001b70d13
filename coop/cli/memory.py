"""`coop memory ...`: inspect and correct what coop remembers. Tables for people, `--json` for scripts."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.cli.refs import fact_here, resolve, typed
from coop.errors import StoreError, UsageError
from coop.memory.text import plural

if TYPE_CHECKING:
    from rich.table import Table

    from coop.memory.storage.interface import UserStore
    from coop.memory.storage.items import HistoryEntry, Item

app = typer.Typer(no_args_is_help=True,
                  help="Inspect and correct memory: search, list, show, why, add, edit, review, forget.")


def _nonempty_user(value: str | None) -> str | None:
    """An explicit but empty --user (a script's unset variable) must not fall back to the default user."""
    if value is not None and not value.strip():
        raise typer.BadParameter("the user id is empty")
    return value


UserOption = Annotated[str | None, typer.Option("--user", metavar="ID", help="whose memory",
                                                   callback=_nonempty_user)]
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON on stdout")]
KIND_CHOICES = ("fact", "message", "summary")


def kind_choices(kind: str | None, *, allow_instruction: bool = False) -> tuple[str, ...]:
    if kind is None:
        return KIND_CHOICES
    if kind == "instruction" and allow_instruction:
        return (kind,)
    if kind not in KIND_CHOICES:
        extra = ", instruction" if allow_instruction else ""
        raise UsageError(f"unknown kind {kind!r}", hint=f"use --kind fact, message, summary{extra}")
    return (kind,)


def fact_ref(ref: str, doing: str) -> int:
    """The number of a fact id (`f12`); any other id is a usage error saying what `doing` takes."""
    from coop.memory.kinds import parse_ref

    kind, number = parse_ref(ref)
    if kind != "fact":
        raise UsageError(f"{ref.strip()} is a {kind}; {doing} takes a fact", hint="give a fact id such as f12 "
                                                                                 "(`coop memory list --kind fact`)")
    return number


def current_fact(memory: UserStore, fact_id: int, doing: str) -> Item:
    """Fact `fact_id` when it is active. Not there: NotFoundError (exit 3). Superseded or archived: a usage
    error (exit 2) naming the fact that is current now, since only that one can be changed."""
    item = memory.get("fact", fact_id)
    if item.superseded_at is None and item.archived_at is None:
        return item
    if item.archived_at is not None and item.superseded_at is None:
        raise UsageError(f"{item.ref} is archived, not current; {doing} takes a current fact",
                         hint="remember it again with `coop memory add TEXT`")
    successor, seen = item, {item.item_id}
    while successor.superseded_by is not None and successor.superseded_by not in seen \
            and memory.exists("fact", successor.superseded_by):
        successor = memory.get("fact", successor.superseded_by)
        seen.add(successor.item_id)
    if successor.superseded_at is None and successor.archived_at is None:
        raise UsageError(f"{item.ref} was superseded; {successor.ref} is current now",
                         hint=f"{doing} {successor.ref} instead (`coop memory why {successor.ref}`)")
    raise UsageError(f"{item.ref} was superseded and nothing that replaced it is current",
                     hint=f"see `coop memory history {item.ref}`; remember it again with `coop memory add TEXT`")


@app.command()
def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="the fact, in a sentence")],
    category: Annotated[str, typer.Option(help="a group such as preference, person, location")] = "general",
    key: Annotated[str | None, typer.Option(help="a name for the slot this fact fills; a new value for the same "
                                                    "category and key supersedes the old one")] = None,
    importance: Annotated[float, typer.Option(min=0.0, max=1.0, help="0..1; 0.85 and above is always recalled")] = 0.9,
    replaces: Annotated[str | None, typer.Option("--replaces", metavar="ID",
                                                 help="the fact this one replaces (f12): it is superseded, kept in "
                                                      "its history, whatever its category and key")] = None,
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Remember a fact (stated by you, so important by default). Use --category instruction for a standing
    instruction to the assistant ("answer briefly"), --replaces f12 when it corrects another fact."""
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.growth.reconcile import Candidate
    from coop.memory.storage.items import MAX_FACT_CHARS
    from coop.memory.text import check_text

    check_text(text, "fact", MAX_FACT_CHARS)  # before the database is opened: bad input touches nothing
    replaced = None if replaces is None else fact_ref(replaces, "--replaces")
    app_state = state(ctx)
    memory = app_state.memory(user)
    if replaced is not None:
        replaced = fact_here(memory, replaced)  # through an import's alias, when the id was renumbered
        current_fact(memory, replaced, "--replaces")
    embedder = app_state.embedder()
    writer = app_state.services().writer(memory)
    result = writer.write(Candidate(text, category=category, key=key, importance=importance, source="user",
                                    replaces=replaced))
    if result is None:
        raise UsageError("not stored: a request to drop a safety behaviour is not kept as an instruction",
                         hint="store it with another --category if it is a fact about you")
    if embedder is not None:
        embed_pending(memory, embedder, kinds=("fact",), batch_size=app_state.config().memory.embedder.batch_size)
    item = memory.get("fact", result.fact_id)
    if json_:
        output.print_json({**output.item_json(item), "action": result.action,
                           "supersedes": None if result.previous_id is None else f"f{result.previous_id}"})
        return
    if result.action == "MERGE":
        output.out().print(f"already known as {item.ref} (mentioned {item.mention_count} times)")
    elif result.action == "UPDATE":
        output.out().print(f"updated {item.ref}")
    elif result.action == "SUPERSEDE":
        output.out().print(f"remembered {item.ref}; it supersedes f{result.previous_id}")
    else:
        output.out().print(f"remembered {item.ref}")


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="what to look for, in words")],
    limit: Annotated[int | None, typer.Option(min=1, max=1000, help="how many results")] = None,
    kind: Annotated[str | None, typer.Option(help="only fact, message or summary")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="show each retrieval leg's rank and score")] = False,
    archived: Annotated[bool, typer.Option("--archived", help="include superseded and archived facts")] = False,
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Search memory by meaning and by words."""
    from coop.memory.retrieval.context import LEG_WORDS, found_by
    from coop.memory.retrieval.search import search_or_full_text
    from coop.memory.retrieval.terms import query_words

    if not query_words(query):
        raise UsageError("the query has no words to search for", hint="search with a word or a phrase")
    app_state = state(ctx)
    config = app_state.config().memory
    memory = app_state.memory(user)
    result, failure = search_or_full_text(memory, query, embedder=app_state.embedder(),
                                          limit=limit or config.search_limit, kinds=kind_choices(kind),
                                          include_inactive=archived, settings=app_state.services().retrieval())
    if failure is not None:
        output.warn(f"the embedder failed ({failure}); these results are from full-text search only",
                    "run `coop check`")
    if json_:
        output.print_json([output.hit_json(hit) for hit in result.hits])
        return
    if not result.hits:
        output.info("no matches")
        return
    columns = [output.Column("id"), output.Column("when", rank=2), output.Column("text", wrap=True)]
    if explain:
        columns.append(output.Column("found", rank=1, wrap=True, least=14))
    rows = [[hit.ref, output.local_time(hit.item.created_at), output.cell(output.one_line(hit.item.text, 200)),
             *((output.cell(found_by(hit.legs)),) if explain else ())] for hit in result.hits]
    table = output.fitted_table(columns, rows)
    output.out().print(table)
    if explain:
        legs = ", ".join(f"{LEG_WORDS.get(leg, leg)} {n}" for leg, n in result.legs.items())
        output.info(f"\ncandidates found {legs}; {result.timings_ms.get('total', 0):.1f} ms"
                    + ("" if result.vector_used else "; full text only (no embedder)"))


@app.command()
def show(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="f12, m345 or s7")],
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Show one item in full."""
    memory = state(ctx).memory(user)
    item = memory.get(*typed(memory, item_id))
    data = output.item_json(item)
    if json_:
        output.print_json(data)
        return
    console = output.out()
    for name, value in data.items():
        if name != "text" and value is not None:
            console.print(f"[bold]{name}:[/] {output.escape(output.printable(str(value)))}", highlight=False)
    console.print()
    console.print(output.printable(item.text), markup=False, highlight=False)


def on_terminal() -> bool:
    """Whether forget can ask: a person is at stdin (the question goes to stderr)."""
    return bool(sys.stdin) and sys.stdin.isatty()


@app.command()
def forget(
    ctx: typer.Context,
    item_ids: Annotated[list[str] | None, typer.Argument(metavar="ID...", help="items to forget: f12 m345 s7")
                        ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
    only: Annotated[bool, typer.Option("--only", help="a fact alone: keep the messages and summaries that "
                                                       "said it")] = False,
    compact: Annotated[bool, typer.Option("--compact", help="then rewrite the files that held them (a lock)")] = False,
    user: UserOption = None,
) -> None:
    """Forget items for good: text, full-text entry and vectors go; a content-free record stays. A fact takes
    with it the messages it came from and the messages and summaries that state it, so no later prompt shows
    it (a forgotten summary's conversation is summarised again from what is left); --only keeps those."""
    from coop.memory.growth.forgetting import forget_with_traces, traces
    from coop.memory.kinds import parse_ref

    if not item_ids and not compact:
        raise UsageError("name the items to forget", hint="e.g. coop memory forget f12 m345 (coop memory list)")
    refs = [parse_ref(ref) for ref in item_ids or []]
    memory = state(ctx).memory(user)
    if not refs:  # --compact alone: nothing is deleted, nothing to confirm
        _compact(memory)
        return
    items = [memory.get(*resolve(memory, kind, number)) for kind, number in refs]  # each must exist before any goes
    if not yes:
        if not on_terminal():
            raise UsageError("refusing to forget without confirmation", hint="add --yes to confirm")
        listed = {item.ref for item in items}  # the question counts every item listed: a fact's traces go too
        for item in items:
            output.err().print(f"{item.ref}: {output.one_line(item.text, 70)}", markup=False)
            for trace in ([] if only or item.kind != "fact" else traces(memory, item)):
                if trace.ref not in listed:
                    listed.add(trace.ref)
                    output.err().print(f"  with {trace.ref}: {output.one_line(trace.text, 64)}", markup=False)
        if not typer.confirm(f"Forget {plural(len(listed), 'item')} for good?", default=False, err=True):
            output.info("nothing forgotten")
            return
    done = [forget_with_traces(memory, item.kind, item.item_id, reason="forgotten by the user", keep_traces=only)
            for item in items if memory.exists(item.kind, item.item_id)]  # (an earlier one's trace may be gone)
    from coop.memory.growth.forgetting import receipt
    from coop.memory.growth.scrub import forget_in_files

    files = forget_in_files(done, state(ctx).config().trace.file or None)
    for line in [gone.describe() for gone in done] + (receipt(done, files) if done else []):
        output.out().print(line, markup=False, highlight=False, soft_wrap=True)
    if compact:
        _compact(memory, after="forgotten, but ")


def _compact(memory: "UserStore", after: str = "") -> None:
    """`forget --compact`: the store's files that held deleted rows rewritten, or one line on why not."""
    if refused := memory.compact():
        raise StoreError(f"{after}not compacted: {refused}",
                         hint="the server's owner can: VACUUM FULL on coop's tables (README, Team and devices)")
    output.out().print("compacted: the files that held deleted rows were rewritten", markup=False, highlight=False)


@app.command()
def undo(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="the fact whose last change to take back: f12")],
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Take back what memory learned by itself: an added fact is forgotten (and not learned again), an updated
    one gets its old text back, a superseded one is current again. `coop memory history ID` shows the changes."""
    from coop.memory.kinds import parse_ref

    kind, number = parse_ref(item_id)
    if kind != "fact":
        raise UsageError(f"{item_id} is not a fact", hint="only facts change by themselves; forget other items")
    memory = state(ctx).memory(user)
    done = memory.undo(number := fact_here(memory, number))
    if json_:
        output.print_json({"id": f"f{number}", "undone": done})
        return
    output.out().print(output.printable(done), markup=False, highlight=False)


@app.command()
def history(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="a fact id such as f12")],
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Show every change to a fact: added, merged, superseded, forgotten, with the reasons."""
    from coop.memory.kinds import parse_ref

    kind, number = parse_ref(item_id)
    if kind != "fact":
        raise UsageError(f"{item_id} is a {kind}; only facts have a history", hint="give a fact id such as f12")
    memory = state(ctx).memory(user)
    entries = memory.facts.history(fact_here(memory, number))
    if json_:
        output.print_json([output.history_json(entry) for entry in entries])
        return
    output.out().print(history_table(entries))


def history_table(entries: list[HistoryEntry]) -> Table:
    """A fact's changes for people: when, what, the change itself (with the other fact it involved), why."""
    rows = []
    for entry in entries:
        if entry.old_value and entry.new_value:
            change = f"{entry.old_value} -> {entry.new_value}"
        else:
            change = entry.new_value or entry.old_value or ""
        if entry.related_fact_id:
            change += f" (f{entry.related_fact_id})"
        rows.append([output.local_time(entry.created_at), entry.action, output.cell(change),
                     output.cell(entry.reason or "")])
    columns = [output.Column("when", rank=2), output.Column("action"), output.Column("change", wrap=True),
               output.Column("reason", rank=1, wrap=True, least=14)]
    return output.fitted_table(columns, rows)


@app.command()
def stats(ctx: typer.Context, user: UserOption = None, json_: JsonOption = False) -> None:
    """Counts of what this user's memory holds."""
    data = state(ctx).memory(user).stats()
    if json_:
        output.print_json(data)
        return
    console = output.out()
    for name, value in data.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
        console.print(f"{name.replace('_', ' ')}: {value}", markup=False, highlight=False)


@app.command()
def consolidate(
    ctx: typer.Context,
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Summarise finished conversation spans into episodic summaries and facts now, then apply retention."""
    from coop.memory.growth.consolidate import consolidate as run_consolidation
    from coop.memory.growth.embedding import embed_pending

    app_state = state(ctx)
    config = app_state.config()
    memory = app_state.memory(user)
    embedder = app_state.embedder()
    jobs = app_state.services().jobs()
    complete = jobs.complete
    if complete is None and not json_:
        output.warn("no model configured: conversations are not summarised; retention still applies",
                    "set [model] name (and fast) in the config")
    report = run_consolidation(memory, config, complete, jobs.writer(memory, embedder))
    if embedder is not None and report.summaries:
        embed_pending(memory, embedder, kinds=("summary",))
    if json_:
        output.print_json({"spans": report.spans, "summaries": [f"s{i}" for i in report.summaries],
                           "facts_written": report.facts_written, "archived": report.archived,
                           "errors": report.errors})
        return
    output.out().print(report.notice() or "nothing to consolidate")
    for problem in report.errors:
        output.warn(f"a span was not consolidated: {problem}", "it is tried again on the next run")
