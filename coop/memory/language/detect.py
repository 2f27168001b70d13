"""The language of a text: the script decides where it names one language (Kana, Hangul, Thai); elsewhere
py3langid, a naive Bayes model over byte n-grams that ships inside its wheel (no hub, no download), restricted to
LANGUAGES.

Restricted because its model also knows regional varieties and rare languages that take short sentences from their
large neighbours ("Tenemos dos gatos." read as Galician, "Llámame Ana." as Northern Sami), and a language coop has no
stemmer or lexicon for is the costliest mistake. Loading the model takes most of a second, so it happens on the
first call, once per process, and never at import.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from coop.memory.language.scripts import has_letters, script_language

if TYPE_CHECKING:
    from collections.abc import Sequence

UNDETERMINED = "und"
CONTEXT_SHARE = 1 / 3
MIN_DETECTED_WORDS = 4  # fewer words than this are a guess: a short sentence takes its neighbours' language
# The languages coop tells apart: those with a Snowball stemmer, the scripts written without spaces, and other
# widely written languages. A regional variety missing here is read as its large neighbour, whose stemmer suits it;
# Esperanto is left out, since it took short Spanish sentences ("No vivo en Bilbao.").
LANGUAGES = (
    "af ar az be bg bn ca cs cy da de el en es et eu fa fi fr ga he hi hr hu hy id is it ja ka kk ko lt lv mk ml "
    "mr ms ne nl no pl pt ro ru sk sl sq sr sv sw ta te th tl tr uk ur uz vi zh"
).split()

_lock = threading.Lock()
_identifier: Any = None


def _model() -> Any:
    global _identifier
    with _lock:  # one load even when two threads ask at once; scoring itself only reads the model
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            identifier.set_languages([code for code in LANGUAGES if code in set(identifier.nb_classes)])
            _identifier = identifier
        return _identifier


def load() -> None:
    """Load the model now, off the path of whatever needs it first: `coop chat` does it in its embedder's loading
    thread, so the first turn about the user's own life (`retrieval/speaker.py`) does not wait for it."""
    _model()


def ranked(text: str) -> Sequence[tuple[str, float]]:
    """Languages of `text` with their probabilities, most likely first (empty when it has no letters)."""
    if not has_letters(text):
        return ()
    ranking: list[tuple[str, float]] = _model().rank(text)
    return ranking


def likeliest(ranking: Sequence[tuple[str, float]], expected: str) -> str:
    """The ranking's top language, unless `expected` (the message's language, or the one a caller was given) is at
    least CONTEXT_SHARE as likely: close relatives (Spanish, Portuguese, Galician) are told apart by the longer
    text, and one short sentence does not overrule it."""
    best, likelihood = ranking[0]
    return expected if dict(ranking).get(expected, 0.0) >= likelihood * CONTEXT_SHARE else best


def detect(text: str) -> str:
    """The language of `text`, ISO 639-1, or "und" when it has no letters. A text of a few words is a guess: the
    parse lets a short sentence take its neighbours' language instead."""
    by_script = script_language(text)
    if by_script is not None:
        return by_script
    ranking = ranked(text)
    return ranking[0][0] if ranking else UNDETERMINED
