"""A turn's memory, for every front end: what `coop chat` puts in the prompt, what MCP's `memory_context` returns
and what `coop memory recall` shows are one call, `turn_context`, so they never drift apart."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coop.memory.kinds import INSTRUCTION
from coop.memory.retrieval.contested import current_only
from coop.memory.retrieval.context import HistoryMessage, Prompt, build_prompt
from coop.memory.retrieval.recall import Recollection, recall
from coop.memory.retrieval.salience import SALIENCE_SHARE
from coop.memory.retrieval.settings import RetrievalSettings

if TYPE_CHECKING:
    from coop.config.loading import MemoryConfig
    from coop.memory.embedder import Embedder
    from coop.memory.storage.interface import UserStore

MAX_INSTRUCTIONS_SHOWN = 200


@dataclass(frozen=True)
class TurnContext:
    prompt: Prompt
    recollection: Recollection


def turn_context(memory: "UserStore", text: str, *, cfg: "MemoryConfig", embedder: "Embedder | None",
                 preamble: str = "", query: str | None = None, settings: RetrievalSettings | None = None,
                 history: Sequence[HistoryMessage] = (), anchor: HistoryMessage | None = None,
                 shown: set[int] | None = None, session_id: int | None = None,
                 now: float | None = None) -> TurnContext:
    """The prompt a turn with `text` gets, and what recall found for it. `history` is the session so far (none:
    the first message of a new session); `shown`, the ids of messages the history shows already."""
    settings = settings if settings is not None else RetrievalSettings.from_config(cfg)
    with memory.vectors.reading_once():  # search, its neighbours, salience and the profile share candidates
        found = recall(memory, text, query if query is not None else text, embedder=embedder, cfg=cfg,
                       settings=settings, shown=shown or set(), first_turn=not history, session_id=session_id,
                       now=time.time() if now is None else now)
    instructions = current_only(memory.facts.active(INSTRUCTION, limit=MAX_INSTRUCTIONS_SHOWN))
    fraction, salience_share, profile_share = memory_shares(cfg, first_turn=not history)
    prompt = build_prompt(preamble=preamble, instructions=instructions,
                          facts=found.facts, profile=found.profile, former=found.former, past=found.past,
                          previous=found.previous, history=list(history), anchor=anchor, new_message=text,
                          context_budget=cfg.context_budget, memory_fraction=fraction,
                          salience_share=salience_share, profile_share=profile_share)
    return TurnContext(prompt, found)


def memory_shares(cfg: "MemoryConfig", *, first_turn: bool) -> tuple[float, float, float]:
    """(memory fraction of the context budget, salience share, profile share of it) for a turn. A conversation's
    first message has no history to leave room for, so what the turn asked for may use `first_turn_memory_fraction`;
    the profile and the salient items, which no question asked for, keep the room they have on every other turn
    (their shares shrink as the fraction grows), so a question about nothing in memory costs no more than before."""
    fraction = cfg.memory_budget_fraction
    if not first_turn or cfg.first_turn_memory_fraction <= fraction:
        return fraction, SALIENCE_SHARE, cfg.profile_share
    scale = fraction / cfg.first_turn_memory_fraction
    return cfg.first_turn_memory_fraction, SALIENCE_SHARE * scale, cfg.profile_share * scale
