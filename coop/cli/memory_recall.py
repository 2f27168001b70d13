"""`coop memory recall "question"`: what coop would put in the prompt for a question asked now, as the first
message of a new session, and why each item is there. The same recall the chat's turn and MCP's `memory_context`
make (`coop/memory/retrieval/turn.py`): useful to see why a fact did or did not reach the model. Registered on the
`coop memory` app."""

from __future__ import annotations

from typing import Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.cli.memory import JsonOption, UserOption, app
from coop.errors import UsageError


@app.command()
def recall(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="a message, as you would type it in coop chat")],
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Show what memory a message would bring into the prompt, and why each item is there."""
    from coop.memory.retrieval.context import explain
    from coop.memory.retrieval.turn import turn_context
    from coop.memory.storage.items import MAX_MESSAGE_CHARS
    from coop.memory.text import check_text

    if not question.strip():
        raise UsageError("the question is empty", hint='give a message, e.g. coop memory recall "where do I live?"')
    check_text(question, "message", MAX_MESSAGE_CHARS)
    app_state = state(ctx)
    memory = app_state.memory(user)
    context = turn_context(memory, question, cfg=app_state.config().memory, embedder=app_state.embedder(),
                           settings=app_state.services().retrieval())
    if json_:
        output.print_json(output.recall_json(question, context))
        return
    prompt = context.prompt
    if not prompt.recalled:
        output.info("nothing in memory would be recalled for this")
        return
    rows = [[entry.item.ref, output.section_of(entry), output.cell(explain(entry)),
             output.cell(output.one_line(entry.item.text, 160))] for entry in prompt.recalled]
    columns = [output.Column("id"), output.Column("section", rank=2), output.Column("why", rank=1, wrap=True, least=14),
               output.Column("text", wrap=True)]
    output.out().print(output.fitted_table(columns, rows))
    tokens = prompt.tokens
    more = f"; {len(prompt.left_out)} more did not fit" if prompt.left_out else ""
    output.info(f"{tokens['memory']} of {tokens['memory_budget']} memory tokens{more}")
