"""The settings' shape: one frozen dataclass per `[section]` of the config file, each field with its default,
help text, range and choices in its metadata. `coop.config.loading` loads, overrides and validates them; `coop init` and
`config.example.toml` are written from the same metadata, so the three cannot drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


def _f(default: Any, help: str, *, min: float | None = None, max: float | None = None,
       choices: tuple[str, ...] | None = None, env_name: bool = False) -> Any:
    return field(default=default, metadata={"help": help, "min": min, "max": max, "choices": choices,
                                            "env_name": env_name})


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ModelConfig:
    name: str = _f("", "litellm model string for chat, e.g. 'openai/gpt-4o-mini' or 'ollama_chat/llama3.1'; "
                        "empty: none")
    fast: str = _f("", "cheaper model for extraction and consolidation; empty: use `name`")
    api_base: str = _f("", "base URL of an OpenAI-compatible server (Ollama, LM Studio, vLLM); empty: provider default")
    api_key_env: str = _f("", "name of the environment variable holding the API key (never the key itself)",
                          env_name=True)
    timeout_seconds: float = _f(60.0, "seconds before a chat request is abandoned", min=1, max=3600)
    fast_timeout_seconds: float = _f(300.0, "seconds before a background request of the fast model (extraction, "
                                            "summaries) is abandoned: a 1-2B model on a laptop CPU takes 5-170 s "
                                            "a call, and nobody waits for it", min=1, max=3600)
    num_ctx: int = _f(8192, "Ollama only: the most context (tokens) coop asks for, set per request from the prompt's "
                            "size (Ollama's default window cuts longer prompts silently); 0: the server's default",
                      min=0, max=1_048_576)
    max_reply_chars: int = _f(200_000, "characters of one reply (text and tool-call arguments) coop reads; past it "
                                       "the stream stops and what came is kept, marked [truncated]",
                              min=1_000, max=50_000_000)


@dataclass(frozen=True)
class EmbedderConfig:
    provider: str = _f("fastembed", "fastembed (local), litellm (remote API) or hash (tests only)",
                       choices=("fastembed", "litellm", "hash"))
    model: str = _f("sentence-transformers/all-MiniLM-L6-v2", "embedding model name for the provider")
    model_path: str = _f("", "local fastembed model directory (offline machines); empty: the provisioned "
                             "default, then fastembed's own cache")
    dims: int = _f(384, "vector dimensions the model produces", min=8, max=8192)
    api_base: str = _f("", "base URL for a litellm embedding provider; empty: provider default")
    api_key_env: str = _f("", "environment variable with the embedding provider's API key", env_name=True)
    batch_size: int = _f(32, "texts embedded per batch", min=1, max=4096)
    download: bool = _f(False, "let fastembed download a model that is not on this machine from the model hub; "
                               "off: coop never goes to the hub on its own (`coop memory embedder pull` does)")


@dataclass(frozen=True)
class ImportanceConfig:
    user: float = _f(0.5, "importance of a user message", min=0, max=1)
    assistant: float = _f(0.3, "importance of an assistant message", min=0, max=1)
    tool: float = _f(0.1, "importance of a tool call or result", min=0, max=1)
    explicit_remember: float = _f(0.9, "a user message that asks to remember something", min=0, max=1)
    correction: float = _f(0.85, "a user message that corrects something (\"actually, ...\")", min=0, max=1)
    long_chars: int = _f(400, "length from which a message gets the long bonus", min=1, max=1_000_000)
    long_bonus: float = _f(0.1, "added for a long message", min=0, max=1)
    code_bonus: float = _f(0.05, "added for a message with code", min=0, max=1)


@dataclass(frozen=True)
class ExtractionConfig:
    enabled: bool = _f(True, "extract durable facts after each turn (fast model)")
    max_facts_per_turn: int = _f(5, "most facts kept from one exchange", min=0, max=50)
    max_changes_per_turn: int = _f(2, "most existing facts one exchange may update or supersede (each is shown, "
                                      "with how to undo it)", min=0, max=50)
    dedup_threshold: float = _f(0.9, "cosine at or above which a new fact with the same content words is a duplicate",
                                min=0.5, max=1.0)
    related_threshold: float = _f(0.75, "unused: the table of slots decides changes (kept so that older configs "
                                        "still load)", min=0.0, max=1.0)
    min_confidence: float = _f(0.6, "unused: the table of slots decides changes (kept so that older configs still "
                                    "load)", min=0, max=1)
    max_instructions: int = _f(20, "standing instructions kept active; the oldest beyond are archived",
                               min=1, max=500)


@dataclass(frozen=True)
class ConsolidationConfig:
    enabled: bool = _f(True, "summarise old conversation spans in the background")
    interval_hours: float = _f(6.0, "hours between background consolidation runs", min=0.01, max=24 * 30)
    idle_minutes: float = _f(20.0, "minutes of inactivity that end a session", min=1, max=24 * 60)
    min_age_minutes: float = _f(30.0, "messages younger than this (in a session still open) are left for later",
                                min=0, max=24 * 60 * 30)
    span_messages: int = _f(40, "most messages summarised together", min=2, max=1000)
    max_spans_per_run: int = _f(5, "work per run: spans consolidated at most", min=1, max=1000)


@dataclass(frozen=True)
class RetentionConfig:
    enabled: bool = _f(True, "archive facts that go unused (archived facts stay searchable; nothing is deleted)")
    half_life_days: float = _f(90.0, "a fact's weight halves after this many days without use", min=1, max=36500)
    archive_below: float = _f(0.05, "archive a fact whose decayed weight falls below this", min=0, max=1)
    keep_mentions: int = _f(3, "facts mentioned this often are never archived by decay", min=1, max=1_000_000)


@dataclass(frozen=True)
class MemoryConfig:
    backend: str = _f("sqlite", "where memories are kept: 'sqlite' (one local file, memory.db_path) or 'postgres' "
                                "(a server shared by devices and people: memory.url)", choices=("sqlite", "postgres"))
    url: str = _f("", "the Postgres server when backend = 'postgres' (postgresql://user@host:5432/db); "
                      "$COOP_DATABASE_URL overrides it; keep the password in ~/.pgpass or $PGPASSWORD, not here")
    db_path: str = _f("", "database file; empty: $COOP_HOME/coop.db; ':memory:' for a throwaway database")
    busy_timeout_ms: int = _f(5000, "how long a write waits for another process's lock", min=0, max=600_000)
    context_budget: int = _f(8000, "tokens for the whole prompt's memory part and history", min=256, max=2_000_000)
    memory_budget_fraction: float = _f(0.1, "share of context_budget for recalled memory", min=0.01, max=0.9)
    first_turn_memory_fraction: float = _f(0.3, "the same on a conversation's first message, which has no history to "
                                                "leave room for (what the turn asked for gets it; the profile and "
                                                "salient items keep their share of memory_budget_fraction)",
                                           min=0.01, max=0.9)
    profile_share: float = _f(0.5, "share of the recalled memory budget for the profile: the facts that describe "
                                   "you, in every prompt", min=0.0, max=1.0)
    recency_messages: int = _f(10, "last messages of this session always in the prompt", min=0, max=500)
    salience_threshold: float = _f(0.85, "importance at or above which an item is always a candidate",
                                   min=0.0, max=1.0)
    word_similarity_floor: float = _f(0.2, "cosine a match by words alone still needs: its meaning must be near too",
                                      min=-1.0, max=1.0)
    prompt_word_similarity_floor: float = _f(0.25, "the same, for a chat prompt (a stricter bar)", min=-1.0, max=1.0)
    bm25_floor: float = _f(0.27, "BM25 a match by words alone needs, as a share of one rare word's score in this "
                                 "memory: a stray common word is not a match", min=0.0, max=10.0)
    similarity_floor: float = _f(0.655, "cosine below which an item is never recalled by meaning alone (0.655 "
                                        "suits MiniLM)",
                                 min=-1.0, max=1.0)
    rrf_k: int = _f(60, "reciprocal-rank fusion constant (fusion = \"rrf\")", min=1, max=1000)
    fusion: str = _f("score", "how the vector and full-text legs are combined: score (normalised BM25 plus "
                              "vector_weight x cosine, computed for every candidate) or rrf (reciprocal rank)",
                     choices=("score", "rrf"))
    vector_weight: float = _f(1.5, "weight of the cosine against the best full-text match (= 1) in score fusion",
                              min=0.0, max=10.0)
    agreement_weight: float = _f(1.0, "in score fusion, weight of normalised BM25 x cosine: a match that words and "
                                       "meaning both support outranks one that only either does", min=0.0, max=10.0)
    session_weight: float = _f(0.2, "in score fusion, weight of the two best other matches in a message's session: "
                                     "a passage whose messages match together outranks a lone match", min=0.0,
                               max=5.0)
    neighbour_weight: float = _f(0.5, "in score fusion, weight of the nearer in meaning of the messages just before "
                                       "and after a message: an answer inside talk of the question's subject outranks "
                                       "a stray match", min=0.0, max=5.0)
    assistant_weight: float = _f(0.7, "in a search for a question about the user's own life (\"where did I park?\", "
                                      "not \"what did you recommend?\"), weight of the assistant's messages against "
                                      "the user's own words (= 1)", min=0.0, max=1.0)
    context_weight: float = _f(1.0, "weight of a message's two preceding messages and its date, against its own "
                                    "words (= 1), in full-text search", min=0.0, max=1.0)
    search_limit: int = _f(10, "default number of results of a search", min=1, max=1000)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    importance: ImportanceConfig = field(default_factory=ImportanceConfig)
    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    retention: RetentionConfig = field(default_factory=RetentionConfig)


@dataclass(frozen=True)
class ChatConfig:
    working_memory_cap: int = _f(200, "session messages held; history takes what the budget allows", min=2, max=10_000)
    tools: bool = _f(True, "offer memory tools to models that support function calling")
    confirm_memory_changes: bool = _f(True, "ask before the model's memory tools forget, rewrite or supersede "
                                            "memory, or add a standing instruction; where nobody can be asked "
                                            "(pipes, --json) such a call is refused")
    user: str = _f("", "default user id; empty: the OS user name")


@dataclass(frozen=True)
class TraceConfig:
    file: str = _f("", "JSON-lines trace of retrieval and model events; empty: off")


@dataclass(frozen=True)
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    chat: ChatConfig = field(default_factory=ChatConfig)
    trace: TraceConfig = field(default_factory=TraceConfig)
    source: str = field(default="", compare=False, metadata={"internal": True})
