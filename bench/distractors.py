"""Real English to bury a LoCoMo conversation in: the extra messages of `bench/scale.py`.

Sources, in this order (each deduplicated; a source is used only when the earlier ones run out):
1. the other conversations of the data file, session by session: coherent dialogue, re-attributed to this
   conversation's two speakers (speaker A's turns to A, B's to B);
2. Debian's `fortunes` (`apt-get install fortunes`: /usr/share/games/fortunes, about 15,000 quotations, jokes and
   short dialogues), split into sentences (27,600 of them); consecutive fortunes form a session, the sentences
   alternating between the two speakers;
3. WordNet's example sentences (`apt-get install wordnet-base`: /usr/share/wordnet, about 31,000 sentences such as
   "she was a good dancer"), in sessions of 20, alternating;
4. WordNet's glosses (97,500 distinct definitions): only for sizes the first three cannot fill (beyond about
   61,000). Definitions are the least like conversation and the hardest on search: "A serious or devastating
   setback." is a near match, in words and meaning, for any question about a setback.
With the dev file, 20,000 extra messages are the other conversations (2,300) and fortunes; 100,000 add all the
example sentences and 39,000 glosses. A pool smaller than N repeats. Each user takes the sessions of each source in
an order of its own (seeded), so the users' memories differ. Nothing of it is stored in the repository.
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


def pool(others: list) -> list[list[list[tuple[int, str]]]]:
    """The distractor sessions of each source, in source order, each utterance once across all sources."""
    seen: set[str] = set()
    sources = []
    for source in (conversation_sessions(others), fortune_sessions(), _grouped(_wordnet("examples")),
                   _grouped(_wordnet("glosses"))):
        sessions = []
        for session in source:
            kept = [(who, text) for who, text in session if text not in seen]
            seen.update(text for _, text in kept)
            if kept:
                sessions.append(kept)
        sources.append(sessions)
    return sources


def take(sources: list[list[list[tuple[int, str]]]], n: int, seed: str) -> list[list[tuple[int, str]]]:
    """Sessions adding up to `n` utterances: the sources in order (a later one only once the earlier are used
    up), the sessions of each in an order of their own for this `seed`; all of them again when `n` is larger
    than the pool."""
    rng = random.Random(seed)
    order = []
    for sessions in sources:
        shuffled = list(sessions)
        rng.shuffle(shuffled)
        order += shuffled
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


def pool_report(sources: list[list[list[tuple[int, str]]]]) -> str:
    names = ("conversations", "fortunes", "wordnet examples", "wordnet glosses")
    counts = [sum(len(s) for s in sessions) for sessions in sources]
    parts = ", ".join(f"{name} {count:,}" for name, count in zip(names, counts))
    return f"{sum(counts):,} distinct utterances ({parts})"
