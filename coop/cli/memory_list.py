"""`coop memory list`: the newest items of memory, with what a person should look at flagged.

A fact that disagrees with another over one single-valued slot (two cities, two employers: a key spelled two
ways, or an MCP host's account beside the user's; `coop/memory/retrieval/contested.py`) is marked with the other
fact's id and which of the two the prompt shows as current; `coop memory review` offers to settle the pair
("replaces"). With --json, such a fact carries `disagrees_with` (the other ids) and `current` (whether it is the
one shown).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from coop import output
from coop.cli.context import state
from coop.cli.memory import JsonOption, UserOption, app, kind_choices
from coop.memory.text import plural


@app.command("list")
def list_(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Option(help="only fact, message or summary")] = None,
    limit: Annotated[int, typer.Option(min=1, max=100_000, help="how many items")] = 50,
    archived: Annotated[bool, typer.Option("--archived", help="include superseded and archived facts")] = False,
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """List the newest items of memory (--kind instruction: the standing instructions). Facts that disagree
    over one slot (two home cities) are flagged: settle them with `coop memory review`."""
    from coop.memory.retrieval.contested import contested, flags

    kinds = kind_choices(kind, allow_instruction=True)
    memory = state(ctx).memory(user)
    items = memory.list_items(kinds[0] if len(kinds) == 1 else None, limit=limit, include_inactive=archived)
    groups = contested(memory, [i for i in items if i.kind == "fact" and i.superseded_at is None
                                and i.archived_at is None])
    rivals = {f.item_id: (group, f is group[0]) for group in groups.values() for f in group}
    if json_:
        output.print_json([_json(item, rivals) for item in items])
        return
    if not items:
        output.info("memory is empty" if kind is None else f"no {kind}s")
        return
    said = flags(groups)
    rows = []
    for item in items:
        label = item.kind if item.kind != "fact" else f"{item.category}" + (f"/{item.key}" if item.key else "")
        if item.kind == "message":
            label = item.role or "message"
        text = output.one_line(item.text, 200)
        if item.superseded_at:
            text += f"  [superseded by f{item.superseded_by}]" if item.superseded_by else "  [superseded]"
        elif item.kind == "fact" and item.item_id in said:
            text += f"  [{said[item.item_id]}]"
        rows.append([item.ref, output.local_time(item.updated_at or item.created_at), output.cell(label),
                     output.cell(text)])
    columns = [output.Column("id"), output.Column("when", rank=2), output.Column("kind", rank=1),
               output.Column("text", wrap=True)]
    output.out().print(output.fitted_table(columns, rows))
    if said:
        output.info(f"{plural(len(groups), 'slot')} with two values: `coop memory review --all` settles them "
                    "(\"replaces\" keeps the other's history)")


def _json(item: Any, rivals: dict[int, tuple[list[Any], bool]]) -> dict[str, Any]:
    data = output.item_json(item)
    found = rivals.get(item.item_id) if item.kind == "fact" else None
    if found is not None:
        group, current = found
        data["disagrees_with"] = [f.ref for f in group if f.item_id != item.item_id]
        data["current"] = current
    return data
