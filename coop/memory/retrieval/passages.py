"""Passage evidence: a message's score in search gains from the conversation around it.

A memory that grows is mostly messages unrelated to any one question, and among thousands of them some match its
words or meaning as well as the message that answers it: a dictionary definition of its subject, a quotation, a
line of another conversation. What they lack is company. The answer is a turn of a conversation about the
question's subject; a stray match sits among talk of other things. Two signals, both added to the fused score
(`search.score_fusion`) before the top k is cut:
- neighbour evidence: the nearer in meaning of the turns just before and after a message, read from their own
  vectors (`memory.neighbour_weight`);
- session evidence: the two best other candidates of the message's session (`memory.session_weight`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from coop.memory.storage.interface import UserStore

D = TypeVar("D")
# Candidates after fusion: (kind, id) -> (score, what the search keeps about how it was found).
Scored = dict[tuple[str, int], tuple[float, D]]

# The best message candidates that look at their neighbours: enough to reach well below the top 10, few enough
# that their neighbours' vectors cost a millisecond or two.
NEIGHBOUR_CANDIDATES = 100


def with_neighbour_evidence(memory: UserStore, fused: Scored[D], cosines: dict[tuple[str, int], float], weight: float,
                            cosines_of: Callable[[list[tuple[str, int]]], dict[tuple[str, int], float]]) -> Scored[D]:
    """Each of the best `NEIGHBOUR_CANDIDATES` message candidates' score plus `weight` times the better cosine (a
    negative one counts 0) of the messages just before and after it in its session, whether or not they are
    candidates themselves: the turn before the answer (the question it answers) or after it (the reply) is
    usually about the same thing. Session evidence sees only candidates; this reads the neighbours' own vectors
    (the messages just around a candidate are rarely candidates when they share no word with the question). On
    LoCoMo with 100,000 extra messages per user (`bench/scale.py`, replayed offline on the same candidates) it
    lifts R_any@10 from 0.722 to 0.732, with 20,000 from 0.795 to 0.799, and at 0 from 0.858 to 0.863.
    `cosines` holds the exact cosines the search already has; `cosines_of` gives those of other items."""
    top = [key for key, _ in sorted(fused.items(), key=lambda kv: kv[1][0], reverse=True)
           if key[0] == "message"][:NEIGHBOUR_CANDIDATES]
    if not top:
        return fused
    neighbours = memory.messages.neighbour_ids(item_id for _, item_id in top)
    wanted = {("message", n) for pair in neighbours.values() for n in pair if n is not None}
    near = {key: cosines[key] for key in wanted if key in cosines}
    near.update(cosines_of(sorted(wanted - near.keys())))
    out = dict(fused)
    for key in top:
        pair = neighbours.get(key[1], (None, None))
        best = max((max(near.get(("message", n), 0.0), 0.0) for n in pair if n is not None), default=0.0)
        score, detail = fused[key]
        out[key] = (score + weight * best, detail)
    return out


def with_session_evidence(memory: UserStore, fused: Scored[D], weight: float) -> Scored[D]:
    """Each message candidate's score plus `weight` times the mean score of the two best other candidates of its
    session (missing ones count 0): a passage whose messages match the query together outranks a lone match. On
    LoCoMo with 20,000 extra messages per user (`bench/scale.py`, replayed offline on the same candidates) it lifts
    R_any@5 from 0.636 to 0.658 and R_any@10 from 0.729 to 0.750; without the extra messages, R_any@10 by about
    0.01. Facts and summaries have no session: their scores are unchanged."""
    messages = [item_id for kind, item_id in fused if kind == "message"]
    if not messages:
        return fused
    session_of = memory.messages.session_ids(messages)
    best: dict[int, list[float]] = {}
    for (kind, item_id), (score, _) in fused.items():
        if kind == "message" and item_id in session_of:
            best.setdefault(session_of[item_id], []).append(score)
    for scores in best.values():
        scores.sort(reverse=True)
        del scores[3:]
    out = dict(fused)
    for (kind, item_id), (score, detail) in fused.items():
        session = session_of.get(item_id) if kind == "message" else None
        if session is None:
            continue
        others = list(best[session])
        if score in others:
            others.remove(score)
        out[(kind, item_id)] = (score + weight * sum(others[:2]) / 2, detail)
    return out
