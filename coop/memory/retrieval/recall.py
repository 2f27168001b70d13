"""What a turn recalls from memory, and in what order (step 2 of the turn in DESIGN.md). One recall for every
front end: the chat's turn, MCP's `memory_context` and `coop memory recall` all come through `recall`.

- The profile (`profile.py`): the facts that describe the person, in every prompt within `memory.profile_share`
  of the memory budget, chosen by importance, category, relevance, use and recency; facts that may have gone
  stale with a superseded one are marked; a turn that asks about the past also gets the former values, dated.
- Facts recalled by relevance: search's fact hits, and the facts nearest the turn above the fact floor (a floor
  made for facts: a short fact and the question that needs it sit lower than two messages on one subject), shown
  before the profile. Superseded facts are never shown as current, nor two values of one slot
  (`contested.py`: the current one stands for both). Standing instructions are not recalled here:
  they have their own section of the prompt.
- Past: the relevant messages and summaries (the fused search, above its floors; a match by words alone must
  also be near in meaning, `memory.prompt_word_similarity_floor`, and is taken only for a turn about the user's
  own life, `is_personal`, or that names the item's subject, `names_its_subject`) and the salient messages,
  ranked by `salience.rank_salient` and held to a share of the budget by `build_prompt`.
- Never recalled: tool results, tool-call stubs and empty replies. They are plumbing, and a tool result only
  repeats what memory already holds.
- Each piece of knowledge once: a past message that a recalled fact came from (`fact_sources`), or a past item
  that states a recalled fact (`evidence.states`) and adds nothing to it (`evidence.adds_to`: no other name or
  number, at most two other content words), is left out, since the fact says it shorter and is current; texts
  that are the same count once. A summary that states a fact and tells more stays: it is more knowledge. A message
  whose fact was superseded since, and that says nothing more, is stale and left out too.
- Recency: a past item's score is weighed by its age (`RECENCY_WEIGHT`, tuned on bench/prompt.py), and when two
  recalled items are about the same thing but say different things, the newer comes first, marked as newer.
- Salience earns its place: a salient message (a correction, "actually ...") whose fact was extracted is not
  recalled for itself: the fact is, in the profile.
- Continuity: the first turn of a session that follows another within `CONTINUITY_HOURS` (an idle end mid-topic,
  a quick restart) gets that session's summary and its last lines, only when the new turn is about what that
  session was about (the continuity floor's cosine with one of them), or when the block is short (at most
  `CONTINUITY_SHORT_TOKENS`) and clean (no interrupted or incomplete reply). Code in it is shown as code.
- Every cosine threshold here (the floors, the cosines at which two items are about one thing) is the embedder's
  (`coop.memory.embedder.profile_of`): what a cosine means depends on the model.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING

from coop.memory.embedder import profile_of
from coop.memory.kinds import INSTRUCTION, decayed
from coop.memory.retrieval import profile
from coop.memory.retrieval.contested import one_value_per_slot
from coop.memory.retrieval.context import Recalled
from coop.memory.retrieval.salience import rank_salient
from coop.memory.retrieval.search import SearchResult, search_or_full_text
from coop.memory.retrieval.settings import RetrievalSettings, prompt_word_floor
from coop.memory.retrieval.terms import FILLER_WORDS, has_content
from coop.memory.storage.items import Item
from coop.memory.text import content_hash, estimate_tokens
from coop.memory.words import adds_to, content_sequence, content_words, states

if TYPE_CHECKING:
    import numpy as np

    from coop.config.loading import MemoryConfig
    from coop.memory.embedder import Embedder
    from coop.memory.storage.interface import UserStore

RECENCY_WEIGHT = 0.05        # share of a past item's score that depends on its age: tuned on bench/prompt.py, the
                             # largest that costs nothing there (0.15, seed 004's weight, cost 0.007 of recall)
RECENCY_HALF_LIFE_DAYS = 30  # ... and how fast that share halves
CONTINUITY_HOURS = 12        # a session that ended this recently carries over into the next one's first prompt
CONTINUITY_TAIL = 4          # its last lines shown then
MAX_RELEVANT_FACTS = 8       # facts recalled by relevance, at most, nearest first (the rest may be in the profile)
CONTINUITY_SHORT_TOKENS = 120  # a clean block this short is shown whatever the new turn is about
UNFINISHED = ("[interrupted]", "[incomplete]")  # how the chat marks a reply that stopped short


@dataclass
class Recollection:
    facts: list[Recalled] = field(default_factory=list)     # recalled by relevance (search, nearest facts)
    profile: list[Recalled] = field(default_factory=list)   # every other active fact, best first
    former: list[Recalled] = field(default_factory=list)    # earlier values, when the turn asks about the past
    past: list[Recalled] = field(default_factory=list)
    previous: list[Recalled] = field(default_factory=list)  # the session before this one (continuity)
    result: SearchResult = field(default_factory=lambda: SearchResult([], {}, {}, False))
    failure: str | None = None  # the embedder's error, when search fell back to full text
    salience_ms: float = 0.0


@cache
def _background() -> ThreadPoolExecutor:
    """One thread for the turns' query embeddings (made once, on first use)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="coop-query-embedding")


class QueryOnce:
    """The embedder, with the turn's query embedded once for salience and search alike. `prefetch` starts the
    embedding in a thread of its own: the model runs (outside the GIL) while the turn's SQL reads the full-text
    matches and the salient messages, so on two cores a turn waits for the longer of the two, not their sum."""

    def __init__(self, embedder: "Embedder") -> None:
        self.inner = embedder
        self.id, self.dims = embedder.id, embedder.dims
        self._cache: dict[str, "np.ndarray"] = {}
        self._pending: dict[str, "Future[np.ndarray]"] = {}

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        return self.inner.embed(texts)

    def prefetch(self, text: str) -> None:
        if text not in self._cache and text not in self._pending:
            self._pending[text] = _background().submit(self.inner.embed_query, text)

    def embed_query(self, text: str) -> "np.ndarray":
        if text not in self._cache:
            pending = self._pending.pop(text, None)  # its error, if it failed, is raised here as it would be
            self._cache[text] = pending.result() if pending is not None else self.inner.embed_query(text)
        return self._cache[text]


def is_conversation(item: Item) -> bool:
    """A message worth recalling as past conversation: the user's or the assistant's words, not plumbing."""
    if item.kind != "message":
        return True
    return item.role in ("user", "assistant") and bool(item.text.strip())


def recall(memory: "UserStore", text: str, query: str, *, embedder: "Embedder | None", cfg: "MemoryConfig",
           settings: RetrievalSettings, shown: set[int], first_turn: bool, session_id: int | None,
           now: float | None = None) -> Recollection:
    """Facts and past items for this message. `shown`: ids of messages the prompt shows as history already."""
    now = time.time() if now is None else now
    out = Recollection()
    thresholds = profile_of(embedder)  # its cosines: what is near, what is about one thing
    settings = settings.for_embedder(embedder)
    prompt_floor = prompt_word_floor(cfg, embedder)
    started = time.perf_counter()
    embedder = QueryOnce(embedder) if embedder is not None else None
    searching = has_content(text)
    if embedder is not None and searching:  # the model embeds while the SQL below runs
        embedder.prefetch(text)
        embedder.prefetch(query)
    facts: dict[int, Recalled] = {}
    past: dict[tuple[str, int], Recalled] = {}
    salient_messages = []
    for item in memory.messages.salient(cfg.salience_threshold, limit=50):
        if item.kind == "message" and item.item_id not in shown and is_conversation(item):
            salient_messages.append(item)  # (pinned facts are in the profile, first by their importance)
    learned = memory.sources.facts_from_messages(m.item_id for m in salient_messages)
    salient_messages = [m for m in salient_messages if m.item_id not in learned]  # the fact speaks for it
    out.salience_ms = (time.perf_counter() - started) * 1000
    if searching:  # before salience's ranking, which waits for the embedding: search reads words first
        out.result, out.failure = search_or_full_text(memory, query, embedder=embedder, limit=20, settings=settings)
    started = time.perf_counter()
    for entry in rank_salient(memory, salient_messages, text, embedder, cfg.retention.half_life_days, now=now):
        past[(entry.item.kind, entry.item.item_id)] = entry  # salience first: a search hit does not replace it
    out.salience_ms += (time.perf_counter() - started) * 1000
    personal = is_personal(text)
    for hit in out.result.hits:
        if hit.kind == "fact" and hit.item.category == INSTRUCTION:
            continue
        if "vector" not in hit.legs and hit.cosine is not None and hit.cosine < prompt_floor:
            continue  # found by words alone, and not near enough in meaning to spend the model's attention on
        if "vector" not in hit.legs and not personal and hit.kind != "fact" and not names_its_subject(text, hit.item):
            continue  # a question about the world ("why is the sky blue?") shares words with chat, not its subject
        if hit.kind == "fact":
            facts.setdefault(hit.item.item_id, Recalled(hit.item, "relevance", hit.score, hit.legs))
        elif (hit.kind == "message" and hit.item.item_id in shown) or not is_conversation(hit.item):
            continue
        elif (hit.kind, hit.item.item_id) not in past:
            past[(hit.kind, hit.item.item_id)] = Recalled(hit.item, "relevance", recency_weighted(hit.score, hit.item,
                                                                                                  now), hit.legs)
    qvec = _query_vector(embedder, query_text=text)
    cosines = profile.nearest(memory, embedder, qvec)
    near = memory.get_many("fact", [i for i, cosine in cosines.items() if cosine >= thresholds.fact_floor])
    for fact_id, cosine in sorted(cosines.items(), key=lambda pair: -pair[1]):
        fact = near.get(fact_id)
        if fact is not None and fact.category != INSTRUCTION and fact.superseded_at is None \
                and fact.archived_at is None:
            facts.setdefault(fact_id, Recalled(fact, "relevance", cosine))
    nearest_first = sorted(facts.values(), key=lambda r: -_cosine(r, cosines))[:MAX_RELEVANT_FACTS]
    facts = {r.item.item_id: r for r in nearest_first}
    out.facts = newer_first(memory, embedder, list(facts.values()), thresholds.facts_disagree_cosine,
                            same_category=True)
    out.profile, _ = profile.best(memory, cosines, now, leaving_out=frozenset(facts))
    out.facts, out.profile = one_value_per_slot(memory, out.facts, out.profile)
    marks = profile.out_of_date(memory, [r.item for r in out.facts + out.profile])
    out.facts = [_marked(r, marks) for r in out.facts]
    out.profile = [_marked(r, marks) for r in out.profile]
    if profile.asks_about_past(text):
        nearest_first = sorted(out.facts + out.profile, key=lambda r: -cosines.get(r.item.item_id, 0.0))
        out.former = profile.former_values(memory, nearest_first[:10])
    # what the profile will show (its share of the budget), not every fact: the repeats check costs per fact
    shown_facts = out.facts + fitting(out.profile, int(cfg.context_budget * cfg.memory_budget_fraction
                                                       * cfg.profile_share))
    kept = without_repeats(memory, shown_facts, past.values())
    ordered = sorted(kept, key=lambda r: (r.reason != "salience", -r.score))
    # past items are only marked: which of them fit the budget is decided by their scores (moving a newer item
    # ahead there cost 0.012 of prompt recall on bench/prompt.py --summaries); build_prompt shows it first
    out.past = newer_first(memory, embedder, ordered, thresholds.past_disagree_cosine, same_category=False,
                           move=False)
    if first_turn:  # the same rules: what a fact says, or the past already shows, is not repeated
        previous = continuing(memory, previous_session(memory, session_id, now), text, embedder, qvec,
                              thresholds.continuity_floor)
        fresh = {r.item.ref for r in without_repeats(memory, shown_facts, previous)} - {r.item.ref for r in out.past}
        out.previous = [r for r in previous if r.item.ref in fresh]
    return out


_PERSONAL = re.compile(r"\b(i'm|i've|i'd|i'll|my|mine|myself|we|we're|us|our|ours|remember|remind|last|ago|"
                       r"yesterday|earlier|before|again|told|said|mentioned)\b|"
                       r"(?<!\bhow do )(?<!\bwhat do )(?<!\bwhy do )(?<!\bcan )(?<!\bshould )(?<!\bcould )"
                       r"(?<!\bwould )(?<!\bwill )(?<!\bmay )(?<!\bmust )\bi\b",
                       re.IGNORECASE)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'-]+)")
_PLACE_OR_WORK = frozenset("in of at from on near into the a an".split())  # "in Africa", "the plot of Hamlet"


def is_personal(text: str) -> bool:
    """The turn is about the user's own life or people in it: a first-person word ("my", "we", "I went", "how
    many plants do I own"; not the "I" of a how-to such as "how do I" or "can I"), a reference back ("last
    time", "I told you"), or a name that is someone ("What did Caroline say?", "a gift to Caroline", "at
    Melanie's"; not one after "in", "of", "the": a place or a work). Past conversation found by its words alone
    is recalled only for such a turn; an impersonal one ("Why is the sky blue?", "Give me tips for a job
    interview") needs a match in meaning, since sharing a word with last year's chat is not being about it."""
    if _PERSONAL.search(text):
        return True
    for match in _NAME.finditer(text):
        before = text[:match.start()].split()
        if match.group(1).isupper() or (len(before) > 1 and before[-1][:1].isupper()):
            continue  # an acronym ("SQL", "DNA"), or the rest of a name already weighed ("Roman Empire")
        possessive = text[match.end():match.end() + 2] in ("'s", "\u2019s") or match.group(1).endswith("'s")
        if possessive or not before or before[-1].casefold() not in _PLACE_OR_WORK:
            return True
    return False


SUBJECT_WORDS = 3  # content words in common that make a question about a past item found by its words


def names_its_subject(question: str, item: Item) -> bool:
    """A question that is not about the user's life is still about a past item found by its words when the two
    name one thing: two content words side by side in both ("What did the posters at the poetry reading say?"
    and the message about the poetry reading; "the upcoming grand opening"), or `SUBJECT_WORDS` content words in
    common. Words here have three letters or more and are not filler ("good", "thanks"). Words shared apart are
    chance: "Why do cats purr when they are sleeping?" is not about last month's "our cat sleeping on the sofa"."""
    asked, said = _subject_sequence(question), _subject_sequence(item.text)
    if len(set(asked) & set(said)) >= SUBJECT_WORDS:
        return True
    pairs = set(pairwise(said))
    return any(pair in pairs for pair in pairwise(asked))


def _subject_sequence(text: str) -> list[str]:
    return [word for word in content_sequence(text) if len(word) > 2 and word not in FILLER_WORDS]


def fitting(entries: list[Recalled], budget: int) -> list[Recalled]:
    """The leading entries whose lines (estimated as `build_prompt` will render them) fit `budget` tokens."""
    used, kept = 0, []
    for entry in entries:
        used += estimate_tokens(entry.item.text) + 10  # the id and date around the text
        if used > budget:
            break
        kept.append(entry)
    return kept


def _query_vector(embedder: "QueryOnce | None", *, query_text: str) -> "np.ndarray | None":
    if embedder is None or not has_content(query_text):
        return None
    try:
        return embedder.embed_query(query_text)
    except Exception:  # the embedder failed: search has said so; the profile goes by the other signals
        return None


def _cosine(entry: Recalled, cosines: dict[int, float]) -> float:
    """A relevant fact's nearness to the turn: its cosine, or the one search measured for a hit by words."""
    if entry.item.item_id in cosines:
        return cosines[entry.item.item_id]
    leg = entry.legs.get("vector")
    return leg.score if leg is not None else 0.0


def _marked(entry: Recalled, marks: dict[int, str]) -> Recalled:
    note = marks.get(entry.item.item_id)
    return replace(entry, note=_join(entry.note, note)) if note else entry


def continuing(memory: "UserStore", previous: list[Recalled], text: str, embedder: "QueryOnce | None",
               query: "np.ndarray | None", floor: float) -> list[Recalled]:
    """The previous session's lines, when this turn continues it (see the module's rule), else nothing."""
    if not previous:
        return []
    clean = not any(r.item.text.rstrip().endswith(UNFINISHED) for r in previous)
    if clean and sum(estimate_tokens(r.item.text) for r in previous) <= CONTINUITY_SHORT_TOKENS:
        return previous
    if embedder is None or query is None:
        return []
    refs = [(r.item.kind, r.item.item_id) for r in previous]
    near = memory.vectors.similarities(embedder.id, embedder.dims, query, refs)
    return previous if any(cosine >= floor for cosine in near.values()) else []


def recency_weighted(score: float, item: Item, now: float) -> float:
    decay = decayed(1.0, (now - item.created_at) / 86400, RECENCY_HALF_LIFE_DAYS)
    return score * ((1 - RECENCY_WEIGHT) + RECENCY_WEIGHT * decay)


def without_repeats(memory: "UserStore", facts: Sequence[Recalled], past: Iterable[Recalled]) -> list[Recalled]:
    """Past items minus what the recalled facts already say (their sources, and texts that state them), minus
    messages that only said what a superseded fact said, and minus repeated texts (the best-ranked copy stays)."""
    sources: set[int] = set()
    for ids in memory.sources.of_facts(r.item.item_id for r in facts).values():
        sources |= ids
    fact_texts = [r.item.text for r in facts]
    facts_with_word: dict[str, list[str]] = {}  # a text states a fact only if it shares a content word with it
    for fact in fact_texts:
        for word in content_words(fact):
            facts_with_word.setdefault(word, []).append(fact)
    past = sorted(past, key=lambda r: -r.score)
    extracted = memory.sources.facts_from_messages(r.item.item_id for r in past if r.item.kind == "message")
    seen: set[str] = set()
    kept = []
    for entry in past:
        item = entry.item
        digest = content_hash(item.text)
        if digest in seen or (item.kind == "message" and item.item_id in sources):
            continue
        replaced = [f.text for f in extracted.get(item.item_id, []) if f.superseded_at is not None]
        if item.kind == "message" and replaced and not adds_to(item.text, replaced):
            continue  # it said what a newer fact replaced ("I live in Lyon", after the move to Berlin)
        sharing = {fact for word in content_words(item.text) for fact in facts_with_word.get(word, ())}
        stated = [fact for fact in fact_texts if fact in sharing and states(item.text, fact)]
        if stated and not adds_to(item.text, stated):
            continue
        seen.add(digest)
        kept.append(entry)
    return kept


def newer_first(memory: "UserStore", embedder: "Embedder | None", entries: list[Recalled], min_cosine: float, *,
                same_category: bool, move: bool = True) -> list[Recalled]:
    """When two items are about one thing (close in meaning, same category for facts) but say different things
    (other content words, and neither states the other), the newer goes before the older, marked newer than it."""
    if embedder is None or len(entries) < 2:
        return entries
    import numpy as np

    refs = [(r.item.kind, r.item.item_id) for r in entries]
    found = memory.vectors.read(embedder.id, embedder.dims, refs)
    with_vector = [k for k, ref in enumerate(refs) if ref in found]
    if len(with_vector) < 2:
        return entries
    matrix = np.stack([found[refs[k]] for k in with_vector])
    close = (matrix @ matrix.T) >= min_cosine  # every pair at once: the text checks run only for close pairs
    order = list(entries)
    for row, i in enumerate(with_vector):
        older = entries[i]
        for column in np.flatnonzero(close[row]):
            newer = entries[with_vector[column]]
            if newer.item.created_at <= older.item.created_at:
                continue
            if same_category and (newer.item.category != older.item.category or newer.item.category == "general"):
                continue
            if not same_category and newer.item.session_id == older.item.session_id:
                continue  # one conversation (a message and its session's summary) is not an update over time
            if _one_says_the_other(newer.item.text, older.item.text):
                continue
            marked = replace(newer, note=_join(newer.note, f"newer than {older.item.ref}"))
            position = next(k for k, r in enumerate(order) if r.item.ref == newer.item.ref)
            order.pop(position)
            at = next(k for k, r in enumerate(order) if r.item.ref == older.item.ref)
            order.insert(min(at, position) if move else position, marked)
    return order


def _one_says_the_other(a: str, b: str) -> bool:
    """Not a disagreement: the same words, or one contains what the other says (a summary and its message)."""
    return content_words(a) == content_words(b) or states(a, b) or states(b, a)


def _join(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more


def previous_session(memory: "UserStore", session_id: int | None, now: float) -> list[Recalled]:
    """The session before this one, when it was active within `CONTINUITY_HOURS`: its latest summary and its
    last lines, oldest first."""
    previous = memory.sessions.previous(session_id, active_after=now - CONTINUITY_HOURS * 3600)
    if previous is None:
        return []
    summaries = memory.summaries.of_session(previous, limit=1)
    tail = [m for m in memory.messages.recent(previous, CONTINUITY_TAIL * 3) if is_conversation(m)]
    return [Recalled(item, "continuity") for item in summaries + tail[-CONTINUITY_TAIL:]]
