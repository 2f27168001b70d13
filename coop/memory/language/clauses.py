"""A sentence cut into clauses: at punctuation inside it (, ; : — and the CJK 、，；：), before the coordinating
conjunctions of its language (after them in Japanese, where they end a clause), and at the edges of quoted, code and
link spans, so a quotation or a link is a clause of its own and never part of one the user said.

A piece of one word is no clause ("Yes," "now."): it joins its neighbour, and a foreign neighbour first, so a word
next to a link or a quotation never stands alone as the user's own. A conjunction cuts only between two parts that
each say something (three words before it, two after), so "my sister and I" and "salt and pepper" stay whole.
Numbers written with separators ("4,5", "10:30") are not cut.
"""

from __future__ import annotations

import itertools
import re
from functools import cache

from coop.memory.language.lexicon import UNSPACED_LANGUAGES, conjunctions
from coop.memory.language.scripts import word_count
from coop.memory.language.sources import OWN, Span

_PUNCTUATION = re.compile(r"[,;:—、，；：]|(?<=\s)[–-](?=\s)")
MIN_WORDS_BEFORE_CONJUNCTION = 3
MIN_WORDS_AFTER_CONJUNCTION = 2

Piece = tuple[int, int, str]  # start, end, source


@cache
def _conjunction_pattern(language: str) -> re.Pattern[str] | None:
    words = sorted(conjunctions(language), key=len, reverse=True)
    if not words:
        return None
    body = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)
    if language in UNSPACED_LANGUAGES:
        return re.compile(f"(?:{body})")
    return re.compile(f"(?<!\\w)(?:{body})(?!\\w)", re.IGNORECASE)


def _punctuation_cuts(text: str, start: int, end: int) -> list[int]:
    cuts = []
    for match in _PUNCTUATION.finditer(text, start, end):
        at = match.start()
        if text[at] in ",:" and 0 < at < len(text) - 1 and text[at - 1].isdigit() and text[at + 1].isdigit():
            continue  # "4,5", "1,000", "10:30"
        cuts.append(match.end())
    return cuts


def _conjunction_cuts(text: str, start: int, end: int, language: str, fixed: list[int]) -> list[int]:
    pattern = _conjunction_pattern(language)
    if pattern is None:
        return []
    unspaced = language in UNSPACED_LANGUAGES
    cuts: list[int] = []
    for match in pattern.finditer(text, start, end):
        at = match.end() if unspaced else match.start()
        before = max([start] + [c for c in fixed + cuts if c <= match.start()])
        after = min([end] + [c for c in fixed if c > match.end()])
        words_after = text[match.end():after] if not unspaced else text[at:after]
        words_before = text[before:at]
        if (word_count(words_before) >= MIN_WORDS_BEFORE_CONJUNCTION and word_count(words_after)
                >= MIN_WORDS_AFTER_CONJUNCTION):
            cuts.append(at)
    return cuts


def _own_pieces(text: str, start: int, end: int, language: str) -> list[Piece]:
    fixed = _punctuation_cuts(text, start, end)
    cuts = sorted(set(fixed + _conjunction_cuts(text, start, end, language, fixed)))
    edges = [start] + [c for c in cuts if start < c < end] + [end]
    return [(a, b, OWN) for a, b in itertools.pairwise(edges) if a < b]


def _merge_small(text: str, pieces: list[Piece]) -> list[Piece]:
    """Join each own piece of one word or less to a neighbour: a foreign one first (a word beside a link or a
    quotation is not the user's own clause), else the one before it, else the one after."""
    pieces = list(pieces)
    i = 0
    while i < len(pieces) and len(pieces) > 1:
        start, end, source = pieces[i]
        if source != OWN or word_count(text[start:end]) > 1:
            i += 1
            continue
        before = pieces[i - 1] if i > 0 else None
        after = pieces[i + 1] if i + 1 < len(pieces) else None
        if before is not None and (before[2] != OWN or after is None or after[2] == OWN):
            pieces[i - 1:i + 1] = [(before[0], end, before[2])]
            i = max(i - 1, 0)
        elif after is not None:
            pieces[i:i + 2] = [(start, after[1], after[2])]
        else:
            i += 1
    return pieces


def pieces(text: str, start: int, end: int, spans: list[Span], language: str, source: str) -> list[Piece]:
    """The clauses of the sentence text[start:end] as (start, end, source), stripped of surrounding spaces. A
    sentence from a line that is not the user's is one clause of that line's source."""
    if source != OWN:
        return _strip(text, [(start, end, source)])
    inside = [s for s in spans if s.start < end and s.end > start]
    out: list[Piece] = []
    at = start
    for span in inside:
        a, b = max(span.start, start), min(span.end, end)
        if at < a:
            out += _own_pieces(text, at, a, language)
        out.append((a, b, span.source))
        at = b
    if at < end:
        out += _own_pieces(text, at, end, language)
    out = [p for p in out if text[p[0]:p[1]].strip()]
    return _strip(text, _merge_small(text, out))


def _strip(text: str, pieces: list[Piece]) -> list[Piece]:
    out = []
    for start, end, source in pieces:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            out.append((start, end, source))
    return out
