"""`RetrievalSettings`: how search ranks, built once from `[memory]` and passed to every caller alike (the chat
turn, the model's `memory_search` tool, `coop memory search`, the benchmarks), so they all retrieve the same way.
The defaults are `[memory]`'s defaults (`coop.config.loading.MemoryConfig`): one place for every number."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from coop.config.loading import MemoryConfig

FUSIONS = ("score", "rrf")


@dataclass(frozen=True)
class RetrievalSettings:
    floor: float | None      # cosine below which a vector-only candidate is never recalled (None: no floor)
    fusion: str              # "score" (normalised BM25 + vector_weight x cosine) or "rrf" (reciprocal rank)
    vector_weight: float     # weight of the cosine against the best full-text match (= 1) in score fusion
    context_weight: float    # weight of a message's preceding messages and date against its own words
    rrf_k: int               # the reciprocal-rank constant (fusion = "rrf")
    word_floor: float = -1.0  # cosine a candidate found by words alone still needs (when it has a vector)
    bm25_floor: float = 0.0   # BM25 (higher is better) a candidate found by words alone needs
    session_weight: float = 0.0  # weight of the mean of the two best other candidates in a message's session
    agreement_weight: float = 0.0  # weight of (normalised BM25 x cosine) in score fusion
    neighbour_weight: float = 0.0  # weight of the best cosine of the messages just before and after a message

    @classmethod
    def from_config(cls, config: MemoryConfig) -> "RetrievalSettings":
        return cls(floor=config.similarity_floor, fusion=config.fusion, vector_weight=config.vector_weight,
                   context_weight=config.context_weight, rrf_k=config.rrf_k,
                   word_floor=config.word_similarity_floor, bm25_floor=config.bm25_floor,
                   session_weight=config.session_weight, agreement_weight=config.agreement_weight,
                   neighbour_weight=config.neighbour_weight)

    @classmethod
    def defaults(cls) -> "RetrievalSettings":
        return cls.from_config(MemoryConfig())

    def but(self, **changes: object) -> "RetrievalSettings":
        """These settings with some changed (an ablation, a test without a floor)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
