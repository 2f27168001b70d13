"""`coop memory edit ID TEXT`: correct a fact in your own words.

An edit is a supersede, never an overwrite: the corrected text is a new fact (same category and key, source
"user") and the old one stays, marked superseded by it, with both changes in their history, so `coop memory why`
and `history` still show what coop had believed and where that came from. Only the current fact can be edited
(a superseded or archived one names the current fact instead). The new fact keeps the old one's importance: an
edit corrects the words, it does not pin the fact (`coop memory review` pins; `coop memory add` the same text
with `--importance` raises it). Registered on the `coop memory` app; `review` edits through `edit_fact`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from coop import output
from coop.cli.context import AppContext, state
from coop.cli.memory import JsonOption, UserOption, app, current_fact, fact_ref
from coop.cli.refs import fact_here
from coop.errors import UsageError

if TYPE_CHECKING:
    from coop.memory.storage.interface import UserStore
    from coop.memory.storage.items import FactWrite, Item

EDIT_REASON = "edited by the user"


def edit_fact(memory: UserStore, fact_id: int, text: str, *,
              reason: str = EDIT_REASON) -> tuple[Item, FactWrite | None]:
    """Supersede active fact `fact_id` with `text` as the user's own fact; returns the fact as it was and the
    write (None when the text says the same as before: nothing changes). Refused, with nothing written: a fact
    that is not current, empty or unstorable text, a standing instruction to drop a safety behaviour."""
    from coop.memory.growth.instructions import is_unsafe_instruction
    from coop.memory.kinds import INSTRUCTION
    from coop.memory.storage.items import FactFields
    from coop.memory.text import content_hash

    with memory.transaction():  # checked and written at once: no other writer changes the fact in between
        item = current_fact(memory, fact_id, "edit")
        fields = FactFields.checked(text, category=item.category, key=item.key, source="user",
                                    importance=0.5 if item.importance is None else item.importance)
        if fields.category == INSTRUCTION and is_unsafe_instruction(fields.value):
            raise UsageError("not stored: a request to drop a safety behaviour is not kept as an instruction",
                             hint=f"{item.ref} is unchanged")
        if content_hash(fields.value) == content_hash(item.text):
            return item, None
        return item, memory.facts.supersede(fact_id, fields, reason=reason)


def embed_new_facts(app_state: AppContext, memory: UserStore) -> None:
    """Embed the facts written just now, as `coop memory add` does, so search finds them at once."""
    from coop.memory.growth.embedding import embed_pending

    embedder = app_state.embedder()
    if embedder is not None:
        embed_pending(memory, embedder, kinds=("fact",), batch_size=app_state.config().memory.embedder.batch_size)


@app.command()
def edit(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="the fact to correct: f12")],
    text: Annotated[str, typer.Argument(help="its corrected text, in a sentence")],
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Correct a fact: the new text supersedes it as your own fact (same category and key, same importance);
    the old one stays in its history (`coop memory why`, `history`, `undo` on the new one brings it back)."""
    from coop.memory.storage.items import MAX_FACT_CHARS
    from coop.memory.text import check_text

    number = fact_ref(item_id, "edit")
    check_text(text, "fact", MAX_FACT_CHARS)  # before the database is opened: bad input touches nothing
    app_state = state(ctx)
    memory = app_state.memory(user)
    old, result = edit_fact(memory, fact_here(memory, number), text)  # (an import's alias read, when renumbered)
    if result is None:
        if json_:
            output.print_json({**output.item_json(old), "action": "NONE", "supersedes": None})
        else:
            output.out().print(f"{old.ref} already says that: nothing changed", highlight=False)
        return
    embed_new_facts(app_state, memory)
    new = memory.get("fact", result.fact_id)
    if json_:
        output.print_json({**output.item_json(new), "action": result.action, "supersedes": old.ref})
        return
    output.out().print(f"{new.ref} replaces {old.ref}: {output.one_line(new.text, 200)}", markup=False,
                       highlight=False)
