"""Real English to bury a LoCoMo conversation in: the extra messages of `bench/scale.py`.

Sources, in this order (each deduplicated; a source is used only when the earlier ones run out):
1. the other conversations of the data file, session by session: coherent dialogue, re-attributed to this
   conversation's two speakers (speaker A's turns to A, B's to B);
2. Debian's `fortunes` (`apt-get install fortunes`: /usr/share/games/fortunes, about 15,000 quotations, jokes and
   short dialogues), split into sentences; consecutive fortunes form a session, the sentences alternating between
   the two speakers;
3. WordNet's example sentences (`apt-get install wordnet-base`: /usr/share/wordnet, about 31,000 sentences such as
   "she was a good dancer"), in sessions of 20, alternating;
4. WordNet's glosses (117,000 definitions): only for sizes the first three cannot fill (beyond about 70,000).
A pool smaller than N repeats (and `pool_report` says so). Each user gets the pool in its own seeded order, so the
users' memories differ. Nothing of it is stored in the repository.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

FORTUNES = Path("/usr/share/games/fortunes")
WORDNET = Path("/usr/share/wordnet")
SESSION_TURNS = 20
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def _sentences(text: str) -> list[str]:
    flat = " ".join(text.split())
    return [s for s in _SENTENCE.split(flat) if len(s) >= 12]


def conversation_sessions(others: list) -> Iterator[list[tuple[int, str]]]:
    """(speaker index, utterance) sessions from other LoCoMo conversations: 0 for their speaker A, 1 for B."""
    for conv in others:
        for session in conv.sessions:
            turns = []
            for turn in session.turns:
                text = turn.text.split(": ", 1)[1] if ": " in turn.text else turn.text
                turns.append((0 if turn.speaker == conv.speaker_a else 1, text))
            if turns:
                yield turns


def fortune_sessions() -> Iterator[list[tuple[int, str]]]:
    if not FORTUNES.is_dir():
        return
    for path in sorted(FORTUNES.iterdir()):
        if path.suffix or not path.is_file():  # the .dat indexes and .u8 links
            continue
        items = [i for i in path.read_text(encoding="latin-1").split("\n%\n") if i.strip()]
        for start in range(0, len(items), 6):  # six fortunes make a session
            sentences = [s for item in items[start:start + 6] for s in _sentences(item)]
            if sentences:
                yield [(i % 2, s) for i, s in enumerate(sentences)]


def _wordnet(kind: str) -> Iterator[str]:
    for path in sorted(WORDNET.glob("data.*")):
        for line in path.read_text(encoding="latin-1").splitlines():
            if line.startswith("  ") or "|" not in line:
                continue
            gloss = line.split("|", 1)[1].strip()
            if kind == "examples":
                yield from (e for e in re.findall(r'"([^"]{25,})"', gloss))
            else:
                definition = gloss.split(";")[0].strip()
                if len(definition) >= 25:
                    yield definition[0].upper() + definition[1:] + "."


def _grouped(texts: Iterator[str]) -> Iterator[list[tuple[int, str]]]:
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == SESSION_TURNS:
            yield [(i % 2, t) for i, t in enumerate(batch)]
            batch = []
    if batch:
        yield [(i % 2, t) for i, t in enumerate(batch)]


def pool(others: list) -> list[list[tuple[int, str]]]:
    """Every distractor session, deduplicated by text across sources, in source order."""
    seen: set[str] = set()
    sessions = []
    for source in (conversation_sessions(others), fortune_sessions(), _grouped(_wordnet("examples")),
                   _grouped(_wordnet("glosses"))):
        for session in source:
            kept = [(who, text) for who, text in session if text not in seen]
            seen.update(text for _, text in kept)
            if kept:
                sessions.append(kept)
    return sessions


def take(sessions: list[list[tuple[int, str]]], n: int, seed: str) -> list[list[tuple[int, str]]]:
    """Sessions adding up to `n` utterances: the conversation sessions and the rest shuffled by `seed`, the pool
    repeated when it is smaller than `n`."""
    order = list(sessions)
    random.Random(seed).shuffle(order)
    out: list[list[tuple[int, str]]] = []
    count = 0
    while count < n and order:
        for session in order:
            if count >= n:
                break
            part = session[: n - count]
            out.append(part)
            count += len(part)
    return out


def pool_report(sessions: list[list[tuple[int, str]]]) -> str:
    texts = sum(len(s) for s in sessions)
    have = [name for name, there in (("fortunes", FORTUNES.is_dir()), ("wordnet", WORDNET.is_dir())) if there]
    return f"{texts:,} distinct utterances in {len(sessions):,} sessions (sources: conversations, {', '.join(have)})"
