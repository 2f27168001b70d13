"""`coop memory review`: look over what memory learned by itself since you last looked, one fact at a time.

What is shown: active facts whose text changed (added, superseded into, rewritten in place) after the review
mark (`users.reviewed_at`), from machine sources (extraction, consolidation, the assistant's tool, an MCP host,
an import), oldest first, each with the words it quoted and the facts it replaced. Facts you stated yourself
(`add`, /remember, `edit`) are not shown unless rewritten in place since, which only the fact pipeline (or an
`undo`) does. An imported fact is dated by its own history, so what was learned long ago elsewhere is not new.
`--all` shows every active fact, whatever its source.

On a terminal, each fact waits for a decision: keep (it is right; nothing changes), pin (importance at least 0.9, so
it is always recalled; counted as one more mention, as `coop memory add` of the same text does), edit (a new text
supersedes it: `memory_edit.py`), replaces (it is what holds now, and another fact it contradicts, named by id, is
superseded by it with its history and sources kept), forget (with the messages that said it, after a confirmation
that lists them), skip (not now: it comes back next time) or quit. The mark then moves to the review's start when
every fact was decided; otherwise to just before the first fact skipped or not reached, so those come back at the
next review (with any decided after them, which are shown again unchanged). `--json`, or no terminal, lists the
facts and changes nothing. Each listed fact carries `flags`: pinned, updated, replaces, from_host, unquoted, and
out_of_date: a fact that may have gone stale when another was superseded (`coop/memory/retrieval/profile.py`
`out_of_date`), listed whatever its age or source until it is settled: keep says it still holds (counted as a
mention, which settles it), edit or forget change it, and a later extraction that states it again settles it too;
and disagrees: another active fact fills its single-valued slot (`coop/memory/retrieval/contested.py`: a key
spelled two ways, an MCP host's account beside yours), listed whatever its age or source until one of the two
replaces the other (offered at "replaces") or is forgotten.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from coop import output
from coop.cli.context import AppContext, state
from coop.cli.memory import JsonOption, UserOption, app, current_fact, fact_ref
from coop.cli.memory_edit import edit_fact, embed_new_facts
from coop.cli.memory_why import HOST_WORDS
from coop.cli.refs import fact_here
from coop.errors import ExitCode, NotFoundError, UsageError
from coop.memory.text import plural

if TYPE_CHECKING:
    from coop.memory.storage.interface import UserStore
    from coop.memory.storage.items import Item, Learned

REVIEWED_SOURCES = ("extraction", "consolidation", "model", "host", "import")
PIN_IMPORTANCE = 0.9
ACTIONS = ("keep", "pin", "edit", "replaces", "forget", "skip", "quit")
MAX_REVIEWED = 10_000  # facts read for one review; the rest wait for the next
DECIDED = ("keep", "pin", "edit", "replaces", "forget")


@dataclass(frozen=True)
class Entry:
    """One fact to review, with what it rests on and what it replaced."""

    learned: Learned
    quotes: list[tuple[int, str | None]]
    supersedes: list[str]
    flags: tuple[str, ...]
    rivals: tuple[Item, ...] = ()  # active facts of its slot that disagree with it (`retrieval/contested.py`)

    @property
    def quote(self) -> str | None:
        return next((quote for _, quote in self.quotes if quote), None)


def on_terminal() -> bool:
    """Whether the review can ask: a person is at stdin (the questions go to stderr)."""
    return bool(sys.stdin) and sys.stdin.isatty()


def entries_of(memory: UserStore, learned: list[Learned], pinned_at: float,
               stale: dict[int, str] | None = None, rivals: dict[int, list[Item]] | None = None) -> list[Entry]:
    """Each fact with its quotes, the facts it replaced and its flags: pinned (always recalled), updated (an
    older fact rewritten in place), replaces (it superseded another), from_host (learned from what an MCP host
    recorded), unquoted (written by a machine with no quote of the user linked), disagrees (another active fact
    fills its slot: `rivals`)."""
    quotes = memory.sources.quotes_of(entry.item.item_id for entry in learned)
    hosts = memory.sources.host_messages(m for links in quotes.values() for m, _ in links)
    found = []
    for entry in learned:
        item, links = entry.item, quotes.get(entry.item.item_id, [])
        supersedes = [fact.ref for fact in memory.facts.replaced(item.item_id)]
        flags = [flag for flag, present in (
            ("pinned", (item.importance or 0) >= pinned_at),
            ("updated", entry.change == "UPDATE"),
            ("replaces", bool(supersedes)),
            ("from_host", item.source == "host" or any(m in hosts for m, _ in links)),
            ("unquoted", item.source != "user" and not any(quote for _, quote in links)),
            ("out_of_date", item.item_id in (stale or {})),
            ("disagrees", item.item_id in (rivals or {})),
        ) if present]
        found.append(Entry(entry, links, supersedes, tuple(flags), tuple((rivals or {}).get(item.item_id, ()))))
    return found


def entry_json(entry: Entry) -> dict[str, Any]:
    change = "updated" if entry.learned.change == "UPDATE" else "added"
    return {**output.item_json(entry.learned.item), "change": change,
            "changed_at": output.iso(entry.learned.changed_at), "quote": entry.quote,
            "sources": [f"m{m}" for m, _ in entry.quotes], "supersedes": entry.supersedes, "flags": list(entry.flags),
            "disagrees_with": [f.ref for f in entry.rivals]}


@app.command()
def review(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", help="every active fact, whatever its source or age")] = False,
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Look over the facts memory learned by itself since your last review: keep, pin, edit or forget each.
    Off a terminal, or with --json, list them and change nothing."""
    app_state = state(ctx)
    memory = app_state.memory(user)
    started = time.time()  # what changes during the review is for the next one
    since = None if all_ else memory.sources.reviewed_at()
    from coop.memory.retrieval.contested import contested
    from coop.memory.retrieval.profile import candidates, out_of_date
    from coop.memory.storage.items import Learned

    learned = memory.sources.learned_since(since, None if all_ else REVIEWED_SOURCES, limit=MAX_REVIEWED)
    stale = out_of_date(memory, candidates(memory))
    rivals = {f.item_id: [o for o in group if o.item_id != f.item_id]
              for group in contested(memory).values() for f in group}
    listed = {entry.item.item_id for entry in learned}
    # out of date, or disagreeing with another fact: listed whatever its age or source until it is settled
    learned = sorted(learned + [Learned(fact, fact.updated_at or fact.created_at, "ADD")
                                for fact in memory.get_many("fact", list(set(stale) | set(rivals))).values()
                                if fact.item_id not in listed], key=lambda entry: entry.changed_at)
    entries = entries_of(memory, learned, app_state.config().memory.salience_threshold, stale, rivals)
    if json_:
        output.print_json([entry_json(entry) for entry in entries])
        return
    if not entries:
        output.info("nothing new to review" + (f" since {output.local_time(since)}" if since else ""))
        return
    if not on_terminal():
        _print_list(entries)
        output.info(f"{plural(len(entries), 'fact')} to review; nothing was changed. Run `coop memory review` in a "
                    "terminal to keep, pin, edit or forget each (`coop memory review --json` lists them for scripts)")
        return
    # a list cut at the limit: a review that decides all of it reaches its last fact, not its start
    _walk(app_state, memory, entries, started if len(entries) < MAX_REVIEWED else entries[-1].learned.changed_at)


def _print_list(entries: list[Entry]) -> None:
    rows = []
    for entry in entries:
        item = entry.learned.item
        text = output.one_line(item.text, 200) + (f"\n  “{output.one_line(entry.quote, 200)}”" if entry.quote else "")
        rows.append([item.ref, output.local_time(entry.learned.changed_at), item.source or "",
                     output.cell(text + "".join(f"  [{flag}]" for flag in entry.flags))])
    columns = [output.Column("id"), output.Column("when", rank=2), output.Column("source", rank=1),
               output.Column("text", wrap=True)]
    output.out().print(output.fitted_table(columns, rows))


def _show(entry: Entry, index: int, total: int) -> None:
    item = entry.learned.item
    slot = (item.category or "general") + (f"/{item.key}" if item.key else "")
    change = "rewritten" if entry.learned.change == "UPDATE" else "learned"
    lines = [f"[{index}/{total}] {item.ref}  {slot}  {change} {output.local_time(entry.learned.changed_at)} "
             f"by {item.source}" + ("  (pinned)" if "pinned" in entry.flags else ""),
             f"  {item.text}"]
    if entry.quote:
        lines.append(f"  you said: “{output.one_line(entry.quote, 300)}”")
    elif "unquoted" in entry.flags:
        lines.append("  (no words of yours are linked to it)")
    if entry.supersedes:
        lines.append(f"  replaces {', '.join(entry.supersedes)} (`coop memory why {item.ref}`)")
    if "from_host" in entry.flags:
        lines.append(f"  from a conversation {HOST_WORDS}")
    for rival in entry.rivals:
        lines.append(f"  disagrees with {rival.ref}: {output.one_line(rival.text, 120)} (if this one holds now, "
                     f"answer replaces {rival.ref})")
    console = output.out()
    console.print()
    for line in lines:
        console.print(output.printable(line), markup=False, highlight=False)


def _ask() -> str:
    """One of ACTIONS, by name or first letter; asked again until it is one."""
    while True:
        answer = typer.prompt("keep, pin, edit, replaces (another fact), forget, skip or quit? [k/p/e/r/f/s/q]",
                              err=True, default="", show_default=False).strip().lower()
        found = [action for action in ACTIONS if answer and action.startswith(answer)]
        if len(found) == 1:
            return found[0]
        output.info("answer keep, pin, edit, replaces, forget, skip or quit (or the first letter)")


def _decide(memory: UserStore, entry: Entry, action: str) -> bool:
    """Carry out one decision; False when it did not happen (a refused edit, a forget not confirmed)."""
    from coop.memory.growth.forgetting import forget_with_traces, traces

    item = entry.learned.item
    if action == "keep" and "out_of_date" in entry.flags:
        memory.facts.bump(item.item_id, reason="still true after a related change (confirmed in review)")
        output.out().print(f"{item.ref} confirmed: no longer marked out of date", highlight=False)
    if action == "pin":
        memory.facts.bump(item.item_id, importance=PIN_IMPORTANCE, reason="pinned by the user (review)")
        output.out().print(f"pinned {item.ref}", highlight=False)
    elif action == "edit":
        text = typer.prompt("new text", err=True)
        try:
            _, result = edit_fact(memory, item.item_id, text)
        except UsageError as exc:  # nothing was written: ask again
            output.error(exc)
            return False
        output.out().print(f"{item.ref} unchanged (the same text)" if result is None else
                           f"f{result.fact_id} replaces {item.ref}", highlight=False)
    elif action == "replaces":
        return _replaces(memory, item, entry.rivals[0].ref if entry.rivals else None)
    elif action == "forget":
        with_it = traces(memory, item)
        for trace in with_it:
            output.err().print(f"  with {trace.ref}: {output.one_line(trace.text, 64)}", markup=False)
        if with_it and not typer.confirm(f"Forget {item.ref} and {plural(len(with_it), 'item')} that said it?",
                                         default=False, err=True):
            return False
        gone = forget_with_traces(memory, "fact", item.item_id, reason="forgotten by the user (review)")
        output.out().print(gone.describe(), highlight=False)
    return True


def _replaces(memory: UserStore, item: Item, rival: str | None = None) -> bool:
    """"This replaces that": two facts that contradict each other (a new city beside the one in the slot), and the
    one under review is what holds now. The other is superseded by it, kept in its history with its source
    messages, and the reviewed fact takes over its slot; nothing is forgotten. A fact that disagrees with it over
    its slot (`rival`) is offered."""
    from coop.memory.storage.items import FactFields

    answer = typer.prompt(f"the fact {item.ref} replaces (an id such as f12)", err=True, default=rival)
    try:
        target = current_fact(memory, fact_here(memory, fact_ref(answer, "replaces")), "replace")
        if target.item_id == item.item_id:
            raise UsageError(f"{item.ref} cannot replace itself", hint="give the id of the fact it replaces")
        if target.key is not None and target.category != item.category:
            raise UsageError(f"{target.ref} holds {target.category}/{target.key}, {item.ref} is {item.category}",
                             hint=f"edit {item.ref} to say the new value, or forget {target.ref}")
    except (UsageError, NotFoundError) as exc:  # nothing was written: ask again
        output.error(exc)
        return False
    fields = FactFields.checked(item.text, category=item.category, key=item.key, importance=item.importance or 0.5,
                                source=item.source or "user")
    memory.facts.supersede(target.item_id, fields, reason=f"replaced by {item.ref} (review)")
    output.out().print(f"{item.ref} replaces {target.ref}", highlight=False)
    return True


def _walk(app_state: AppContext, memory: UserStore, entries: list[Entry], reached: float) -> None:
    """Ask about each fact in turn; then move the review mark as the module docstring says: to `reached` (the
    review's start) when every fact was decided."""
    tally: Counter[str] = Counter()
    first_open: Entry | None = None  # the first fact skipped or not reached
    interrupted = False
    position = 0
    while position < len(entries):
        entry = entries[position]
        if not memory.facts.is_active(entry.learned.item.item_id):  # changed since the list was read: next time
            position += 1
            continue
        _show(entry, position + 1, len(entries))
        try:
            action = _ask()
            if action in DECIDED and not _decide(memory, entry, action):
                continue  # the same fact again
        except typer.Abort:  # Ctrl-C or end of input at a question: stop as quit does
            action, interrupted = "quit", True
        if action == "quit":
            first_open = first_open or entry
            break
        if action == "skip" and first_open is None:
            first_open = entry
        tally[action] += 1
        position += 1
    if tally["edit"]:
        embed_new_facts(app_state, memory)
    memory.sources.mark_reviewed(reached if first_open is None
                                 else math.nextafter(first_open.learned.changed_at, -math.inf))
    counts = ", ".join(f"{tally[action]} {word}" for action, word in (
        ("keep", "kept"), ("pin", "pinned"), ("edit", "edited"), ("replaces", "replacing another"),
        ("forget", "forgotten"), ("skip", "skipped"))
        if tally[action])
    left = len(entries) - position  # the one at a quit included
    output.info(f"reviewed: {counts or 'nothing decided'}" + (f"; {plural(left, 'fact')} not reached" if left else "")
                + ("; skipped and unreached facts come back at the next review" if first_open else ""))
    if interrupted:
        raise typer.Exit(int(ExitCode.INTERRUPTED))
