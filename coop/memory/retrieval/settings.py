"""`RetrievalSettings`: how search ranks, built once from `[memory]` and passed to every caller alike (the chat
turn, the model's `memory_search` tool, `coop memory search`, the benchmarks), so they all retrieve the same way.

One home for every number: each field's default is `[memory]`'s default (`coop.config.sections.MemoryConfig`),
read from it, so `RetrievalSettings()`, `defaults()` and `from_config(MemoryConfig())` are one thing. The cosine
floors depend on the embedding model: `for_embedder` gives a floor left at its default the embedder's profile's
value (`coop.memory.embedder`), and keeps one the user (or an ablation, `but`) set."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from coop.config.sections import MemoryConfig
from coop.memory.embedder import chosen, profile_of

FUSIONS = ("score", "rrf")
CONFIG = MemoryConfig()  # `[memory]` at its defaults: the defaults of every retrieval setting
# (setting, its `[memory]` key): the settings that are cosines, whose meaning is the embedder's
PROFILED = (("floor", "similarity_floor"), ("word_floor", "word_similarity_floor"))


@dataclass(frozen=True)
class RetrievalSettings:
    floor: float | None = CONFIG.similarity_floor  # cosine below which a vector-only candidate is never recalled
    fusion: str = CONFIG.fusion              # "score" (normalised BM25 + vector_weight x cosine) or "rrf"
    vector_weight: float = CONFIG.vector_weight  # weight of the cosine against the best full-text match (= 1)
    context_weight: float = CONFIG.context_weight  # weight of a message's preceding messages and date
    rrf_k: int = CONFIG.rrf_k                # the reciprocal-rank constant (fusion = "rrf")
    word_floor: float = CONFIG.word_similarity_floor  # cosine a candidate found by words alone still needs
    bm25_floor: float = CONFIG.bm25_floor    # BM25 (higher is better) a candidate found by words alone needs
    session_weight: float = CONFIG.session_weight  # weight of the two best other candidates in a message's session
    agreement_weight: float = CONFIG.agreement_weight  # weight of (normalised BM25 x cosine) in score fusion
    neighbour_weight: float = CONFIG.neighbour_weight  # weight of the best cosine of the neighbouring messages
    assistant_weight: float = CONFIG.assistant_weight  # the assistant's messages' weight, asked about the user

    @classmethod
    def from_config(cls, config: MemoryConfig) -> "RetrievalSettings":
        return cls(floor=config.similarity_floor, fusion=config.fusion, vector_weight=config.vector_weight,
                   context_weight=config.context_weight, rrf_k=config.rrf_k,
                   word_floor=config.word_similarity_floor, bm25_floor=config.bm25_floor,
                   session_weight=config.session_weight, agreement_weight=config.agreement_weight,
                   neighbour_weight=config.neighbour_weight, assistant_weight=config.assistant_weight)

    @classmethod
    def defaults(cls) -> "RetrievalSettings":
        return cls.from_config(CONFIG)

    def for_embedder(self, embedder: object) -> "RetrievalSettings":
        """These settings for `embedder`'s cosines: a floor left at its default is its profile's (the same
        settings for the default model and every unmeasured one)."""
        profile = profile_of(embedder)
        changes: dict[str, object] = {}
        for name, key in PROFILED:
            value = getattr(self, name)
            if value is not None:
                mine = chosen(value, getattr(CONFIG, key), getattr(profile, key))
                if mine != value:
                    changes[name] = mine
        return self.but(**changes) if changes else self

    def but(self, **changes: object) -> "RetrievalSettings":
        """These settings with some changed (an ablation, a test without a floor)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def prompt_word_floor(config: MemoryConfig, embedder: object) -> float:
    """`memory.prompt_word_similarity_floor` for `embedder`'s cosines (left at its default: its profile's)."""
    return chosen(config.prompt_word_similarity_floor, CONFIG.prompt_word_similarity_floor,
                  profile_of(embedder).prompt_word_similarity_floor)
