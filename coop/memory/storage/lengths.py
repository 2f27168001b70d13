"""Full-text scores of messages with a weaker length normalisation than FTS5's BM25.

FTS5's `bm25()` normalises a match by the length of the row as BM25 does for web pages (k1 = 1.2, b = 0.75): a
row half the average length scores as if its words counted about 1.3 times. Messages are short documents, and
in a memory of thousands of them that favour buries the answer: an eight-word one-liner that shares one word
with the question ("You can't hurt me!!") outranks the forty-word message that tells the story ("Last month I
had a setback: I hurt my ankle..."). Retrieval over short texts (microblogs, chat) is known to do best with
little length normalisation, and `bm25()` takes no b, so each message's score is re-weighted here from b = 0.75
to `MESSAGE_B` (0.1): the ratio of BM25's length term under the two, exact for a word that occurs once (the usual
case in a message), close otherwise. A message of the average length keeps its score; one half as long loses about
20% (a one-word message at most about 40%), one three times as long gains about 60%.

The average is that of the candidates themselves (FTS5 keeps the index's average but does not expose it); on
LoCoMo it did as well as the user's average length. Lengths are in characters, as stored. The search reads 2.5
times as many of FTS5's matches as it keeps and makes the cut after this re-weighting (`text_index.POOL_FACTOR`).
`bench/scale.py` (LoCoMo): b = 0.3 instead of 0.75 first lifted R_any@10 at 20,000 extra messages per user from
0.747 to 0.775 (400 matches read and kept, five users in one database). With one database per user, 1,000 matches
read and 400 kept, R_any@10 at 0 / 20,000 / 100,000 is 0.858 / 0.791 / 0.707 with b = 0.3, 0.858 / 0.795 / 0.722
with b = 0.1 and 0.854 / 0.788 / 0.718 with b = 0 (replayed offline on the same candidates); see the README."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coop.memory.storage.interface import UserStore


FTS5_K1, FTS5_B = 1.2, 0.75   # what SQLite's bm25() uses (fixed)
MESSAGE_B = 0.1               # the length normalisation messages are ranked with


def length_factor(length: float, average: float, b: float = MESSAGE_B) -> float:
    """How much a score computed with FTS5's b is multiplied by to have been computed with `b` instead."""
    ratio = max(length, 1.0) / max(average, 1.0)
    return (1 + FTS5_K1 * (1 - FTS5_B + FTS5_B * ratio)) / (1 + FTS5_K1 * (1 - b + b * ratio))


def with_message_lengths(memory: "UserStore", matches: list[tuple[str, int, float]], b: float = MESSAGE_B, *,
                         lengths: dict[int, int] | None = None) -> list[tuple[str, int, float]]:
    """The full-text leg (`(kind, id, bm25)`, bm25 negative, best first) with each message's bm25 re-weighted
    to length normalisation `b`, re-sorted. Facts and summaries are left as they are. `lengths`: the messages'
    lengths when the caller already has them (else they are read)."""
    messages = [item_id for kind, item_id, _ in matches if kind == "message"]
    if not messages or b == FTS5_B:
        return matches
    known = memory.messages.lengths(messages) if lengths is None else lengths
    lengths = {item_id: known[item_id] for item_id in messages if item_id in known}
    if not lengths:
        return matches
    average = sum(lengths.values()) / len(lengths)
    adjusted = [(kind, item_id, bm25 * length_factor(lengths[item_id], average, b))
                if kind == "message" and item_id in lengths else (kind, item_id, bm25)
                for kind, item_id, bm25 in matches]
    return sorted(adjusted, key=lambda match: match[2])
