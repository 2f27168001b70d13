"""The `Embedder` protocol: what retrieval, growth and transfer need of an embedding model.

An embedder's id is `provider/model/dims` and is stored beside every vector it makes, so vectors from two models
(or two sizes of one model) are never compared. Every embedder returns float32 rows of unit length, so a dot
product is the cosine. The implementations (fastembed, a remote API, the hash embedder for tests) live in
`growth/embedders.py`.

What a cosine means depends on the model: two unrelated sentences sit near 0.1 under all-MiniLM-L6-v2 and near 0.7
under some larger models. So every threshold that compares cosines (search's floors, recall's fact and continuity
floors, the cosines at which two items are about one thing, extraction's duplicate and related thresholds) lives
in an `EmbedderProfile`, and retrieval and growth read it from the embedder in use (`profile_of`):
- an embedder may carry its own (`profile`, an optional attribute beside `id` and `dims`);
- else the built-in profile of its model (`PROFILES`, keyed by model name: `MINILM`, tuned on the benchmarks;
  `MULTILINGUAL_MINILM`, for the multilingual model the README names, not measured yet);
- else `GENERIC`: MiniLM's figures, the only ones measured, until someone measures the new model.
A `[memory]` or `[memory.extraction]` setting that holds one of these thresholds wins when the user set it: left at
its default (the default model's figure), it means "the embedder's profile" (`chosen`). So a user who sets exactly
the default value gets the profile's; any other value is theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of `dims` dimensions. It may also carry `profile`, its own
    `EmbedderProfile` (an optional attribute, so it is not declared here: `profile_of` looks for it)."""

    id: str
    dims: int

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        """Vectors for stored items (messages, facts, summaries), one row per text."""
        ...

    def embed_query(self, text: str) -> "np.ndarray":
        """The vector of one search query."""
        ...


def embedder_id(provider: str, model: str, dims: int) -> str:
    return f"{provider}/{model}/{dims}"


@dataclass(frozen=True)
class EmbedderProfile:
    """The cosines that mean something only for one embedding model (see the module's rules)."""

    name: str
    similarity_floor: float             # search: a candidate found by meaning alone needs this cosine
    word_similarity_floor: float        # search: a candidate found by words alone still needs this cosine
    prompt_word_similarity_floor: float  # the same, for what a chat prompt shows (a stricter bar)
    fact_floor: float                   # recall: a fact this near the turn is recalled ahead of the profile
    continuity_floor: float             # recall: the previous session's lines this near the turn continue it
    facts_disagree_cosine: float        # recall: two facts of one category this close are about one thing
    past_disagree_cosine: float         # the same for two past items (longer texts share more meaning by chance)
    dedup_threshold: float              # extraction: a new fact this near one with the same words is a duplicate
    related_threshold: float            # unused since the table of slots decides changes (config compatibility)


# all-MiniLM-L6-v2 (384 dimensions), coop's default: every figure tuned on bench/locomo.py, bench/prompt.py and
# bench/profile.py (the README's Benchmarks section).
MINILM = EmbedderProfile("all-MiniLM-L6-v2", similarity_floor=0.655, word_similarity_floor=0.2,
                         prompt_word_similarity_floor=0.25, fact_floor=0.40, continuity_floor=0.35,
                         facts_disagree_cosine=0.45, past_disagree_cosine=0.75, dedup_threshold=0.9,
                         related_threshold=0.75)
GENERIC = replace(MINILM, name="generic")  # no other model measured yet: its figures, under another name
# paraphrase-multilingual-MiniLM-L12-v2 (384 dimensions, about 50 languages): the model the README names for people
# who chat in other languages. NOT MEASURED: its weights cannot be fetched on the machine this was written on, so
# none of bench/'s runs has used it, and these are MiniLM's figures. Why those and no others: the model was made by
# distillation (Reimers & Gurevych 2020), a multilingual student trained to put a sentence and its translations at
# the vector its teacher, paraphrase-MiniLM-L12-v2, gives the English sentence; that teacher was trained as
# all-MiniLM-L6-v2 was (in-batch negatives, mean pooling, 384 dimensions), so the student's cosines are on the
# teacher's scale, which is taken to be MiniLM's. What is not known: how far below a same-language pair a question
# in one language and a fact in another sit (the student's imitation error), so a fact in French found by meaning
# alone from an English question may fall under `similarity_floor`. A profile of its own, rather than GENERIC, so
# that a measurement changes these figures for this model alone: run bench/locomo.py, bench/prompt.py and
# bench/profile.py with it, and set each floor where MiniLM's sits in MiniLM's cosine distribution.
MULTILINGUAL_MODEL = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
MULTILINGUAL_MINILM = replace(MINILM, name="paraphrase-multilingual-MiniLM-L12-v2")
PROFILES: dict[str, EmbedderProfile] = {"sentence-transformers/all-MiniLM-L6-v2": MINILM,
                                        MULTILINGUAL_MODEL: MULTILINGUAL_MINILM}
DEFAULT_PROFILE = MINILM  # the profile of the default embedder: `[memory]`'s threshold defaults are its figures


def model_of(embedder_id_: str) -> str:
    """The model part of an embedder id (`fastembed/sentence-transformers/all-MiniLM-L6-v2/384` -> the name)."""
    _, _, rest = embedder_id_.partition("/")
    return rest.rpartition("/")[0] or rest


def profile_of(embedder: object) -> EmbedderProfile:
    """The thresholds for `embedder`: its own profile, else its model's built-in one, else `GENERIC`; without an
    embedder (no cosines at all), the default's."""
    if embedder is None:
        return DEFAULT_PROFILE
    own = getattr(embedder, "profile", None)
    if isinstance(own, EmbedderProfile):
        return own
    return PROFILES.get(model_of(str(getattr(embedder, "id", ""))), GENERIC)


def chosen(configured: float, default: float, profiled: float) -> float:
    """A threshold setting the user changed wins; left at its default, it is the embedder's profile's."""
    return profiled if configured == default else configured
