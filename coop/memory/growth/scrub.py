"""Forgetting reaches coop's files beside the database: the prompt history, `coop.log` (and its rotated copy) and the
trace. The database forgets by deleting rows; these files are text that coop appended to, so each is rewritten
without the entries that mention what was forgotten, privately and atomically (`files.replace_file`).

"Mentions" is deliberately wide, since a file may hold a piece of a text rather than all of it (a log line quotes
200 characters of a reply, a history entry is the line that was typed): an entry goes when it holds the forgotten
text, any 40-character stretch of it, or (for a fact) states the fact (`words.states`: its content words, every
name and number). Letter case and runs of spaces do not count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from coop.files.writing import replace_file
from coop.memory.growth.forgetting import Forgotten
from coop.memory.words import states

PIECE = 40


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class Needles:
    """What a forget removed, in the forms a file may hold it."""

    pieces: tuple[str, ...]
    facts: tuple[str, ...]

    @classmethod
    def of(cls, texts: Iterable[str], facts: Iterable[str] = ()) -> Needles:
        pieces: set[str] = set()
        for text in (_flat(t) for t in (*texts, *facts)):
            if len(text) <= PIECE + PIECE // 2:
                pieces.add(text)
            else:
                pieces.update(text[i:i + PIECE] for i in range(0, len(text) - PIECE + 1, PIECE // 2))
                pieces.add(text[-PIECE:])
        return cls(tuple(p for p in pieces if len(p.strip()) >= 4), tuple(facts))

    def found_in(self, entry: str) -> bool:
        flat = _flat(entry)
        return any(piece in flat for piece in self.pieces) or any(states(entry, fact) for fact in self.facts)


def scrub_lines(path: Path, needles: Needles) -> int:
    """Rewrite a line-based file (coop.log, the trace) without its lines that mention `needles`; returns how many
    went. A missing or unreadable file is left alone."""
    try:
        lines = path.read_text(encoding="utf-8", errors="surrogateescape").splitlines(keepends=True)
    except OSError:
        return 0
    kept = [line for line in lines if not needles.found_in(line)]
    if len(kept) == len(lines):
        return 0
    replace_file(path, lambda handle: handle.write(
        "".join(kept).encode("utf-8", "surrogateescape").decode("utf-8", "replace")))
    return len(lines) - len(kept)


def scrub_history(path: Path, needles: Needles) -> int:
    """Rewrite prompt_toolkit's history file (entries of a `# time` line and `+text` lines) without the entries
    that mention `needles`; returns how many went."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    except OSError:
        return 0
    entries: list[list[str]] = [[]]
    for line in lines:
        if line.startswith("#") and entries[-1] and any(e.startswith("+") for e in entries[-1]):
            entries.append([])
        entries[-1].append(line)
    kept = [entry for entry in entries
            if not needles.found_in(" ".join(line[1:] for line in entry if line.startswith("+")))]
    if len(kept) == len(entries):
        return 0
    replace_file(path, lambda handle: handle.write("".join(line for entry in kept for line in entry)))
    return len(entries) - len(kept)


def scrub_files(home: Path, needles: Needles, trace_file: str | None = None) -> dict[str, int]:
    """Every file of `home` coop appends text to, scrubbed; returns what went from each (only those with any)."""
    counts = {"prompt history entries": scrub_history(home / "history", needles),
              "coop.log lines": sum(scrub_lines(home / name, needles) for name in ("coop.log", "coop.log.1"))}
    if trace_file:
        counts["trace lines"] = scrub_lines(Path(trace_file), needles)
    return {place: n for place, n in counts.items() if n}


def forget_in_files(gone: Iterable[Forgotten], trace_file: str | None = None) -> dict[str, int]:
    """After a forget (`forgetting.forget_with_traces`): the same texts out of coop's files under COOP_HOME."""
    from coop.config.loading import coop_home
    from coop.files.logs import reopen_log

    gone = list(gone)
    needles = Needles.of([text for one in gone for text in one.texts],
                         [one.item.text for one in gone if one.item.kind == "fact"])
    counts = scrub_files(coop_home(), needles, trace_file)
    if "coop.log lines" in counts:
        reopen_log()  # a log open for appending would go on writing to the file that was replaced
    return counts
