"""A message parsed once: sentences and clauses with exact character offsets, ids, each sentence's language, and
whether each clause is the user's own words. Every later stage reads this object; nothing re-tokenises.

Sentences come from sentencex (Wikimedia's rule-based segmenter for about 300 languages, compiled). On 66
hand-labelled chat messages in five languages (bench/segmenters.py) it split 59 as labelled and German 12 of 13;
ICU's BreakIterator 50-55 (German 5-6: it ends a sentence at "am 1." before "März"); pysbd 60, but at 12-18 ms for
2,000 characters against 0.2 and no release since 2021. wtpsplit loads its weights from a model hub, out of reach
here. With the rules below the parse splits 62 of 66.

A line break always ends a sentence (chat messages use them as full stops), links and inline code are hidden
from the segmenter as runs of letters of the same length (their dots end nothing), and a boundary inside a
quotation is dropped. A sentence of three words or fewer takes the language of the nearest sentence by the same
hand (the user's, or the pasted text's) that says more, else the message's: detectors only guess there.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from coop.memory.language.clauses import pieces
from coop.memory.language.detect import MIN_DETECTED_WORDS, UNDETERMINED, likeliest, ranked
from coop.memory.language.scripts import (
    han_or_katakana_runs,
    has_letters,
    letter_count,
    script_language,
    spaced_words,
    unspaced_runs,
    without_unspaced,
)
from coop.memory.language.sources import CODE, OWN, QUOTED, Span, Unit, spans, units

GUESS_CHARS = 1000  # enough text to tell a language by; the detector reads every byte it is given
SEGMENTER_FALLBACK = "en"  # the rules sentencex uses for a message of no known language


@dataclass(frozen=True)
class Sentence:
    index: int
    start: int  # character offsets into Parse.text
    end: int
    text: str
    language: str  # ISO 639-1 ("en", "fr", "de", "es", "ja", "pt", ...) or "und"


@dataclass(frozen=True)
class Clause:
    id: str  # "c1", "c2", ... in order over the message
    start: int
    end: int
    text: str  # Parse.text[start:end] (stripped of surrounding spaces)
    sentence: int  # index into Parse.sentences
    language: str  # its sentence's language
    source: str  # "own" | "quoted" | "pasted" | "code" | "link"

    @property
    def own(self) -> bool:
        return self.source == OWN


@dataclass(frozen=True)
class Parse:
    text: str
    language: str  # the message's main language: most characters of the user's own clauses (of all, without any)
    sentences: tuple[Sentence, ...]
    clauses: tuple[Clause, ...]

    def clause(self, clause_id: str) -> Clause | None:
        return next((c for c in self.clauses if c.id == clause_id), None)

    def own(self) -> tuple[Clause, ...]:
        return tuple(c for c in self.clauses if c.own)

    def sentence_of(self, clause: Clause) -> Sentence:
        return self.sentences[clause.sentence]


class _Draft(NamedTuple):
    start: int
    end: int
    source: str  # the source of the line it is in
    spans: tuple[Span, ...]


def _masked(text: str, start: int, end: int, hidden: list[Span]) -> str:
    """text[start:end] with the hidden spans replaced by letters of the same length (offsets unchanged)."""
    chars = list(text[start:end])
    for span in hidden:
        for i in range(max(span.start, start), min(span.end, end)):
            chars[i - start] = "x"
    return "".join(chars)


def _without(text: str, start: int, end: int, hidden: list[Span]) -> str:
    """text[start:end] with the hidden spans blanked out, for language detection."""
    chars = list(text[start:end])
    for span in hidden:
        for i in range(max(span.start, start), min(span.end, end)):
            chars[i - start] = " "
    return "".join(chars)


def _guess(text: str) -> str:
    """The language of the whole message, before its sentences are known: the segmenter needs one."""
    text = text[:GUESS_CHARS]
    letters = letter_count(text)
    unspaced = sum(len(run) for run in unspaced_runs(text))
    if letters and unspaced * 2 >= letters:
        return script_language(text) or "zh"
    ranking = ranked(without_unspaced(text))
    return ranking[0][0] if ranking else UNDETERMINED


def _inside_quotation(text: str, cut: int, quotation: Span) -> bool:
    """Whether a sentence boundary falls inside a quotation, or right after one that the sentence goes on from
    ("「疲れた。」と彼女は言った。")."""
    if quotation.start < cut < quotation.end:
        return True
    return cut == quotation.end and cut < len(text) and not text[cut].isspace()


def _segment(text: str, unit: Unit, found: list[Span], language: str) -> list[_Draft]:
    cuts = []
    if unit.source != CODE:
        import sentencex

        masked = _masked(text, unit.start, unit.end, [s for s in found if s.source != QUOTED])
        for boundary in sentencex.get_sentence_boundaries(language, masked)[:-1]:
            cut = unit.start + int(boundary["end_index"])
            if not any(_inside_quotation(text, cut, s) for s in found if s.source == QUOTED):
                cuts.append(cut)
    edges = [unit.start] + cuts + [unit.end]
    drafts = []
    for a, b in itertools.pairwise(edges):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            drafts.append(_Draft(a, b, unit.source, tuple(s for s in found if s.start < b and s.end > a)))
    return drafts


def _own_language(text: str, guess: str) -> str | None:
    """A sentence's language when it says enough to tell, else None (it takes its neighbours')."""
    by_script = script_language(text)
    if by_script is not None:
        return by_script
    if not has_letters(text):
        return None
    if han_or_katakana_runs(text) and not spaced_words(without_unspaced(text)):  # Han alone: Chinese or Japanese
        return guess if guess in ("ja", "zh") else ("zh" if len(text.strip()) >= MIN_DETECTED_WORDS * 2 else None)
    if len(spaced_words(text)) < MIN_DETECTED_WORDS:
        return None
    return likeliest(ranked(text), guess)


def _languages(text: str, drafts: list[_Draft], guess: str) -> list[str]:
    found: list[str | None] = []
    for draft in drafts:
        if draft.source == CODE:
            found.append(UNDETERMINED)
            continue
        hidden = [s for s in draft.spans if s.source != QUOTED]
        found.append(_own_language(_without(text, draft.start, draft.end, hidden), guess))
    told = {hand: [j for j, language in enumerate(found) if language not in (None, UNDETERMINED)
                   and (drafts[j].source == OWN) == hand] for hand in (True, False)}
    out = []
    for i, language in enumerate(found):
        if language is None:  # the nearest sentence by the same hand that tells, else the message's
            nearest = _nearest(told[drafts[i].source == OWN], i)
            language = found[nearest] if nearest is not None else guess
        out.append(language or guess)
    return out


def _nearest(indices: list[int], i: int) -> int | None:
    """The index in the sorted `indices` nearest to i, the earlier one on a tie."""
    at = bisect.bisect_left(indices, i)
    before = indices[at - 1] if at > 0 else None
    after = indices[at] if at < len(indices) else None
    if before is None or (after is not None and after - i < i - before):
        return after
    return before


def _main_language(clauses: list[Clause], sentences: list[Sentence]) -> str:
    counts: Counter[str] = Counter()
    chosen = [c for c in clauses if c.own] or clauses
    for clause in chosen:
        if clause.language != UNDETERMINED:
            counts[clause.language] += len(clause.text)
    if not counts:
        for sentence in sentences:
            if sentence.language != UNDETERMINED:
                counts[sentence.language] += len(sentence.text)
    return counts.most_common(1)[0][0] if counts else UNDETERMINED


def _within_limit(drafted: list[tuple[int, int, str, int]], max_clauses: int) -> list[tuple[int, int, str, int]]:
    """At most max_clauses clauses: words that are not the user's go first (latest first), then the latest own."""
    if len(drafted) <= max_clauses:
        return drafted
    keep = list(drafted)
    for i in range(len(keep) - 1, -1, -1):
        if len(keep) <= max_clauses:
            break
        if keep[i][2] != OWN:
            del keep[i]
    return keep[:max_clauses]


def parse(text: str, *, max_clauses: int = 60) -> Parse:
    """Parse a message once: its sentences, their languages, and its clauses numbered c1, c2, ... with their
    sources. At most `max_clauses` clauses are listed; past that, words that are not the user's are left out first,
    then the latest of the user's own (a message that long is a document, not a turn)."""
    lines = units(text)
    found = {unit: spans(text, unit) for unit in lines}
    own_text = " ".join(_without(text, u.start, u.end, [s for s in found[u] if s.source != QUOTED])
                        for u in lines if u.source == OWN) or " ".join(text[u.start:u.end] for u in lines
                                                                      if u.source != CODE)
    guess = _guess(own_text)
    segmenter_language = guess if guess != UNDETERMINED else SEGMENTER_FALLBACK
    drafts = [d for unit in lines for d in _segment(text, unit, found[unit], segmenter_language)]
    languages = _languages(text, drafts, guess)
    sentences = [Sentence(i, d.start, d.end, text[d.start:d.end], language)
                 for i, (d, language) in enumerate(zip(drafts, languages))]
    drafted = [(a, b, source, i) for i, d in enumerate(drafts)
               for a, b, source in pieces(text, d.start, d.end, list(d.spans), languages[i], d.source)]
    clauses = [Clause(f"c{n}", a, b, text[a:b], i, sentences[i].language, source)
               for n, (a, b, source, i) in enumerate(_within_limit(drafted, max_clauses), start=1)]
    return Parse(text, _main_language(clauses, sentences), tuple(sentences), tuple(clauses))
