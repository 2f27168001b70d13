"""The one write pipeline for every new fact: extraction, /remember, the model's tool, `coop memory add`,
import and consolidation all go through `FactWriter`.

For each candidate, cheapest check first, so the fast model is asked only when it has to be:
1. forgotten: a fact the user forgot is never re-created by a machine source (extraction, consolidation,
   the model, import); the user may state it again themselves.
2. exact duplicate (same category, normalised text): count a mention (MERGE), no new row.
3. near duplicate: cosine >= `dedup_threshold` *and* the same content words. The vector alone is not enough:
   "I owe Ana twenty euros" and "I owe Boris twenty euros" are close in embedding space and are two facts;
   names and numbers must agree.
4. conflict: an active fact with the same (category, key) and another value, existing facts close in meaning
   (cosine >= `related_threshold`), or active facts of the same category (not "general"; at most
   `SAME_SUBJECT_LIMIT`, whatever their cosine: a move, a new employer, a reversed standing instruction are
   far apart in embedding space): the fast model decides ADD / UPDATE / SUPERSEDE / NONE in strict JSON. A
   decision below `min_confidence` keeps both; any failure keeps both (ADD). Without a model, a same-key
   conflict supersedes (a new value for a named slot) and anything else is added.
5. otherwise ADD.

`plan()` only reads (and may ask the model); `apply()` writes one plan in one transaction and re-checks for an
exact duplicate there, so two writers racing on the same fact still end with one row. Consolidation plans
everything first, then applies all plans and its summary in a single transaction. SUPERSEDE keeps the old row;
every decision lands in `fact_history` with its reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from coop.config.sections import ExtractionConfig
from coop.errors import UsageError
from coop.memory.embedder import Embedder, chosen, profile_of
from coop.memory.growth.evidence import content_words, negations, supports_change
from coop.memory.growth.instructions import is_unsafe_instruction, widens
from coop.memory.growth.refusals import refuse
from coop.memory.growth.restate import Restate
from coop.memory.growth.sameness import announced_change, may_change, refines, same_thing, says_nothing_new, slot_only
from coop.memory.growth.still_true import BOTH_TRUE, CHANGED, Judge, a_new_amount
from coop.memory.kinds import INSTRUCTION, fact_slot
from coop.memory.storage.facts import FactFields
from coop.memory.storage.items import FactWrite, Item
from coop.memory.storage.store import UserMemory

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MACHINE_SOURCES = ("extraction", "consolidation", "model", "import", "host")
# Sources whose proposals must quote the user (the model's own tool calls are confirmed by the user instead).
QUOTING_SOURCES = ("extraction", "consolidation", "host")
SAME_SUBJECT_LIMIT = 5  # facts of the same category shown to the reconciler beside the near ones
PAIRS_ASKED = 3  # known facts `still_true` is asked about, at most, for one change pinned on the wrong fact


@dataclass(frozen=True)
class Candidate:
    value: str
    category: str = "general"
    key: str | None = None
    importance: float = 0.5
    source: str = "extraction"
    evidence: str | None = None  # the user's own words it rests on (machine sources: checked, see evidence.py)
    replaces: int | None = None  # a user's own write naming the fact it replaces (`coop memory add --replaces f12`)
    stance: str = "asserted"     # what the extractor says the user did: asserted, plan, question, joke, ...
    sentence: str | None = None  # the user's whole sentence the evidence is from (what `still_true` shows)


@dataclass(frozen=True)
class Decision:
    """The fast model's verdict on a candidate against existing facts."""

    action: str  # ADD | UPDATE | SUPERSEDE | NONE
    target_id: int | None = None
    confidence: float = 1.0
    reason: str = ""


Decider = Callable[[Candidate, Sequence[Item]], Decision]


@dataclass(frozen=True)
class Plan:
    action: str  # ADD | MERGE | UPDATE | SUPERSEDE | SKIP
    candidate: Candidate
    reason: str
    target_id: int | None = None
    vector: "np.ndarray | None" = None


class FactWriter:
    """Writes facts for one user through the pipeline described above."""

    def __init__(self, memory: UserMemory, settings: ExtractionConfig, *, embedder: Embedder | None = None,
                 decide: Decider | None = None, judge: Judge | None = None, restate: Restate | None = None) -> None:
        self.memory = memory
        self.settings = settings
        self.embedder = embedder
        self.decide = decide
        self.judge = judge
        self.restate = restate
        # The facts written from the message being read (its extraction job adds them): none of its facts changes
        # another, since the user said them together ("I sold the Skoda and I now drive a Nissan Leaf").
        self.said_together: set[int] = set()
        # cosines are the embedder's: a threshold left at its default is the embedder profile's
        profile, default = profile_of(embedder), ExtractionConfig()
        self.dedup_threshold = chosen(settings.dedup_threshold, default.dedup_threshold, profile.dedup_threshold)
        self.related_threshold = chosen(settings.related_threshold, default.related_threshold,
                                        profile.related_threshold)

    def write(self, candidate: Candidate) -> FactWrite | None:
        """Plan and apply one candidate; None when it was skipped."""
        return self.apply(self.plan(candidate))

    # -- planning (reads, and maybe one model call) -------------------------------------------------------

    def plan(self, candidate: Candidate) -> Plan:
        """What to do with a candidate. A quoting source's change to an existing fact must be carried by its
        quote of the user (`evidence.supports_change`); otherwise memory is left as it was. A replacement it
        carries stores the known fact as it reads now, when the fast model can write that (`_restated`)."""
        plan = self._plan(candidate)
        if plan.action in ("UPDATE", "SUPERSEDE") and plan.target_id is not None \
                and plan.candidate.source in QUOTING_SOURCES:
            old = self.memory.get("fact", plan.target_id)
            if not supports_change(plan.candidate.evidence, old.text, plan.candidate.value):
                holder = self._slot_holder_changed(plan)  # (its own change is checked against the user's words)
                if holder is None or holder.target_id is None:
                    refuse("change", f"a change to f{plan.target_id} that the user's words do not carry",
                           category=plan.candidate.category, text=plan.candidate.value)
                    return Plan("SKIP", plan.candidate, f"a change to f{plan.target_id} that the user's words do "
                                                        f"not carry ({plan.reason}): memory kept as it was")
                plan, old = holder, self.memory.get("fact", holder.target_id)
            if plan.action == "SUPERSEDE":
                return self._restated(plan, old)
        return plan

    def _slot_holder_changed(self, plan: Plan) -> Plan | None:
        """When the change the model named is not carried by the user's words, the change of the fact that holds
        the new fact's slot, if the still-true question finds it no longer true (`_confirmed`): "I'm a senior
        engineer at Allegro now" adds nothing to the plan "Is joining Allegro as a senior engineer on 2 January
        2027" that the model named, but ends "Is a backend developer at Finly", which holds work/occupation.
        None when there is no such fact, or it is the one named."""
        candidate = plan.candidate
        holder = self.memory.facts.find_by_key(candidate.category, candidate.key) if candidate.key else None
        if holder is None or holder.item_id == plan.target_id or holder.item_id in self.said_together:
            return None
        return self._confirmed(candidate, [holder], plan.vector)

    def _restated(self, plan: Plan, known: Item) -> Plan:
        """A SUPERSEDE that stores `known` as it reads after the change (`restate`: "Moved the trip to October
        2027" replaces "Is going to Japan for two weeks in April 2027" as "Is going to Japan for two weeks in
        October 2027"), in the known fact's slot; when an active fact already says that ("Now drives a Nissan
        Leaf", said in the same sentence as "Sold the Skoda"), the known fact is superseded by that one. The plan
        as it was when there is no restater, the known fact is a standing instruction (`instructions.py` writes
        those), or the restater fails or gives nothing it accepts."""
        if self.restate is None or known.category == INSTRUCTION or plan.candidate.category == INSTRUCTION:
            return plan
        try:
            value = self.restate(plan.candidate, known)
        except Exception as exc:  # the change is still made, with the new fact as written
            log.warning("restating %s after a change failed: %s", known.ref, exc)
            return plan
        if value is None:
            return plan
        category = known.category or plan.candidate.category
        vector, neighbours = self._neighbours(replace(plan.candidate, value=value))
        words = content_words(value) | negations(value)
        # the same words in one category (the cosine aside: the restated text is checked word by word already)
        same = next((item for item, _ in neighbours if item.item_id != known.item_id and item.category == category
                     and content_words(item.text) | negations(item.text) == words), None)
        if same is not None:  # (that fact keeps its own text and vector)
            value, vector = same.text, None
        restated = replace(plan.candidate, value=value, category=category, key=known.key)
        return Plan("SUPERSEDE", restated, f"{plan.reason}; {known.ref} written as it reads now", known.item_id,
                    vector)

    def _plan(self, candidate: Candidate) -> Plan:
        category, key = fact_slot(candidate.category, candidate.key)
        candidate = replace(candidate, category=category, key=key,
                            value=" ".join(candidate.value.split()),
                            importance=min(1.0, max(0.0, float(candidate.importance))))
        refused = self._refused(candidate)
        if refused is not None:
            return refused
        if candidate.source == "user" and candidate.replaces is not None:
            return self._replacing(candidate)
        exact = self.memory.facts.find_exact(candidate.value, candidate.category)
        if exact is not None and (candidate.key is None or exact.key in (None, candidate.key)):
            return Plan("MERGE", candidate, "exact duplicate: mention counted", exact.item_id)
        vector, neighbours = self._neighbours(candidate)
        words = content_words(candidate.value) | negations(candidate.value)
        for item, similarity in neighbours:
            # only within the category: a standing instruction that reads like a fact is still an instruction;
            # and "Is not vegan" is never a duplicate of "Is vegan", however close their vectors
            if item.category == candidate.category and similarity >= self.dedup_threshold \
                    and content_words(item.text) | negations(item.text) == words:
                return Plan("MERGE", candidate, f"near duplicate of f{item.item_id} (cosine {similarity:.2f})",
                            item.item_id, vector)
        same_key = self.memory.facts.find_by_key(candidate.category, candidate.key) if candidate.key else None
        if candidate.stance == "plan":  # a plan still weighed never takes a slot or changes a fact
            return self._keep_both(candidate, same_key, vector, "a plan the user is weighing: added beside")
        if candidate.source == "user" or self.decide is None:
            # The user's own write (and any write without a model) replaces only the fact of its category and key.
            if same_key is not None:
                return Plan("SUPERSEDE", candidate, f"new value for {candidate.category}/{candidate.key}",
                            same_key.item_id, vector)
            return Plan("ADD", candidate, "new fact", vector=vector)
        related = [item for item, similarity in neighbours if similarity >= self.related_threshold
                   and (same_key is None or item.item_id != same_key.item_id)]
        existing = ([same_key] if same_key is not None else []) + related
        taken = {item.item_id for item in existing}  # one subject, one category: judged whatever the cosine
        existing += [item for item in self._same_subject(candidate, neighbours) if item.item_id not in taken]
        existing = [item for item in existing if item.item_id not in self.said_together]
        # the five nearest facts, whatever their cosine, may still be what a change replaces ("Has upped their
        # running to 35 km a week" and "Also runs about 20 km a week": 0.72 with MiniLM), when they share a slot
        # or a word (`_confirmed`)
        shown = self.said_together | {item.item_id for item in existing}
        near = [item for item, _ in neighbours if item.item_id not in shown]
        if not existing:  # (a slot one of the message's own facts holds: the new fact is kept without the key)
            return self._confirmed(candidate, near, vector) or self._keep_both(candidate, same_key, vector, "new fact")
        return self._decided(candidate, existing, same_key, vector, near)

    def _refused(self, candidate: Candidate) -> Plan | None:
        """A SKIP for what is never written: an unsafe instruction; a widening one from a machine; what the user
        forgot, proposed again by a machine."""
        if candidate.category == INSTRUCTION and is_unsafe_instruction(candidate.value):
            refuse("unsafe", "a request to drop a safety behaviour", category=INSTRUCTION, text=candidate.value)
            return Plan("SKIP", candidate, "a request to drop a safety behaviour is not kept as an instruction")
        if candidate.category == INSTRUCTION and candidate.source in MACHINE_SOURCES and widens(candidate.value):
            refuse("widening", "an instruction that widens what the assistant may reveal or do",
                   category=INSTRUCTION, text=candidate.value)
            return Plan("SKIP", candidate, "an instruction that widens what the assistant may reveal or do is "
                                           "written only by the user (coop memory add)")
        if candidate.source in MACHINE_SOURCES and self.memory.forgotten.was_forgotten(candidate.value):
            refuse("forgotten", "the user forgot this fact; it is not re-created", category=candidate.category)
            return Plan("SKIP", candidate, "the user forgot this fact; it is not re-created")
        return None

    def _replacing(self, candidate: Candidate) -> Plan:
        """The user named the fact their new one replaces (`coop memory add --replaces f12`)."""
        assert candidate.replaces is not None
        target = self.memory.get("fact", candidate.replaces)  # NotFoundError: not this user's, or no such fact
        if target.superseded_at is not None or target.archived_at is not None:
            current = f"; f{target.superseded_by} is current" if target.superseded_by else ""
            raise UsageError(f"{target.ref} is no longer current{current}",
                             hint="name the fact that holds now (coop memory history ID shows the chain)")
        vector, _ = self._neighbours(candidate)
        return Plan("SUPERSEDE", candidate, f"replaces {target.ref}, as the user said", target.item_id, vector)

    def _same_subject(self, candidate: Candidate, neighbours: list[tuple[Item, float]]) -> list[Item]:
        """Active facts of the candidate's category (not "general"), nearest first: "Moved to Berlin"
        (location/city) meets "Lives in Lyon" (location/home_city) though MiniLM puts them at cosine 0.54, and a
        new standing instruction meets the others ("Answer in English" vs "Always answer in French", 0.57)."""
        if candidate.category == "general":
            return []
        order = {item.item_id: -similarity for item, similarity in neighbours}
        same = self.memory.facts.active(candidate.category, limit=200, newest_first=True)
        same.sort(key=lambda item: order.get(item.item_id, 0.0))
        return same[:SAME_SUBJECT_LIMIT]

    def _neighbours(self, candidate: Candidate) -> tuple[Any, list[tuple[Item, float]]]:
        if self.embedder is None:
            return None, []
        try:
            vector = self.embedder.embed([candidate.value])[0]
        except Exception as exc:  # the fact is still written; it is embedded later
            log.warning("embedding a new fact failed: %s", exc)
            return None, []
        hits = self.memory.vectors.nearest(self.embedder.id, self.embedder.dims, vector, k=5, kinds=("fact",))
        items = self.memory.get_many("fact", [h.item_id for h in hits])
        return vector, [(items[h.item_id], h.similarity) for h in hits if h.item_id in items]

    def _decided(self, candidate: Candidate, existing: list[Item], same_key: Item | None, vector: Any,
                 near: Sequence[Item] = ()) -> Plan:
        """The model proposes; coop decides (`sameness.py`): a change applies only to a fact about the same
        thing, an UPDATE only refines, a NONE merges only what adds nothing. Anything else keeps both."""
        try:
            decision = self.decide(candidate, existing) if self.decide else Decision("ADD")
        except Exception as exc:  # any failure keeps both
            log.warning("reconciliation failed, keeping both: %s", exc)
            return self._keep_both(candidate, same_key, vector, f"reconciliation failed ({type(exc).__name__})")
        shown = {item.item_id: item for item in existing}
        if decision.action in ("UPDATE", "SUPERSEDE", "NONE") and decision.target_id not in shown:
            refuse("target", f"the reconciler named f{decision.target_id}, not a fact it was shown",
                   category=candidate.category)
            confirmed = self._confirmed(candidate, [*existing, *near], vector) if decision.action != "NONE" else None
            return confirmed or self._keep_both(candidate, same_key, vector, "reconciliation named no known fact")
        if decision.confidence < self.settings.min_confidence:
            return self._keep_both(candidate, same_key, vector,
                                   f"low confidence ({decision.confidence:.2f}): both kept")
        reason = decision.reason or decision.action.lower()
        if decision.action == "ADD":
            return self._keep_both(candidate, same_key, vector, reason)
        target = shown[decision.target_id]  # type: ignore[index]
        if decision.action == "NONE":
            if says_nothing_new(candidate.value, target.text):
                return Plan("MERGE", candidate, f"already known: {reason}", target.item_id, vector)
            refuse("change", f"a duplicate claim of {target.ref} that the new fact adds to",
                   category=candidate.category)
            return self._keep_both(candidate, same_key, vector, f"not a duplicate of {target.ref}: both kept")
        filed_only = self.judge is not None and slot_only(candidate.category, candidate.key, candidate.value,
                                                          target.category, target.key, target.text)
        if filed_only or not same_thing(candidate.category, candidate.key, candidate.value, target.category,
                                       target.key, target.text):
            named = announced_change(candidate.category, candidate.value, target.category, target.text)
            confirmed = self._confirmed(candidate, [*existing, *near], vector, target if named else None)
            if confirmed is not None:
                return confirmed
            refuse("change", f"{decision.action} of {target.ref}, which is about another thing",
                   category=candidate.category)
            return self._keep_both(candidate, same_key, vector,
                                   f"the model's {decision.action} of {target.ref} is about another thing: both kept")
        if decision.action == "UPDATE" and not refines(target.text, candidate.value):
            return Plan("SUPERSEDE", candidate, f"{reason} (a new value, so the old one is kept as history)",
                        target.item_id, vector)
        return Plan(decision.action, candidate, reason, target.item_id, vector)

    def _confirmed(self, candidate: Candidate, existing: Sequence[Item], vector: Any,
                   named: Item | None = None) -> Plan | None:
        """A change the reconciler saw but pinned on a fact about another thing (or on none it was shown), or a new
        fact with no fact close enough to show the reconciler: the known facts that may be what it changes
        (`sameness.may_change`: one slot, or a word of what they are about; and the fact the model `named` when
        the new fact says a change in its own words, `sameness.announced_change`), in the order given, are asked
        about one by one (`still_true`, at most `PAIRS_ASKED`; the same thing with a new amount is no longer
        true); the first one no longer true is changed, and the new fact takes its slot, so a subject keeps one
        category and key. A change the user's words do not carry is no change here: both are kept. None when none
        is, or the judge fails."""
        if self.judge is None:
            return None
        pairs = [item for item in existing if item is named or may_change(
            candidate.category, candidate.key, candidate.value, item.category, item.key, item.text)][:PAIRS_ASKED]
        for item in pairs:
            try:
                verdict = self.judge(candidate, item)
            except Exception as exc:  # any failure keeps both
                log.warning("asking whether %s is still true failed, keeping both: %s", item.ref, exc)
                return None
            if verdict == BOTH_TRUE and a_new_amount(candidate.value, item.text):
                verdict = CHANGED  # the same thing, counted anew: the amount the known fact gives no longer holds
            if verdict == CHANGED and (candidate.source not in QUOTING_SOURCES
                                       or supports_change(candidate.evidence, item.text, candidate.value)):
                moved = replace(candidate, category=item.category or candidate.category, key=item.key)
                action = "UPDATE" if refines(item.text, candidate.value) else "SUPERSEDE"
                return Plan(action, moved, f"{item.ref} is no longer true after what the user said",
                            item.item_id, vector)
        return None

    @staticmethod
    def _keep_both(candidate: Candidate, same_key: Item | None, vector: Any, reason: str) -> Plan:
        if same_key is not None:  # one active fact per (category, key): the new one is kept without the key
            candidate = replace(candidate, key=None)
        return Plan("ADD", candidate, reason, vector=vector)

    # -- applying (one transaction) -----------------------------------------------------------------------

    def apply(self, plan: Plan) -> FactWrite | None:
        """Write one plan in one transaction. A plan made against a fact that another writer has superseded or
        archived since falls through to an ADD, which re-checks for an exact duplicate."""
        memory, c = self.memory, plan.candidate
        if plan.action == "SKIP":
            log.info("fact skipped: %s", plan.reason)
            return None
        with memory.transaction():
            target = plan.target_id if plan.target_id is not None and memory.facts.is_active(plan.target_id) else None
            if plan.action == "MERGE" and target is not None:
                memory.facts.bump(target, importance=c.importance, reason=plan.reason)
                return FactWrite(target, "MERGE")
            if plan.action == "UPDATE" and target is not None:
                memory.facts.update_value(target, c.value, reason=plan.reason)
                self._store_vector(target, plan.vector)
                return FactWrite(target, "UPDATE")
            if plan.action == "SUPERSEDE" and target is not None:
                result = memory.facts.supersede(target, self._fields(c), reason=plan.reason)
                self._store_vector(result.fact_id, plan.vector)
                return result
            result = memory.facts.add(c.value, category=c.category, key=c.key, importance=c.importance,
                                     source=c.source, reason=plan.reason)
            if result.action != "MERGE":
                self._store_vector(result.fact_id, plan.vector)
            if c.category == INSTRUCTION:
                self._cap_instructions()
            return result

    @staticmethod
    def _fields(c: Candidate) -> FactFields:
        return FactFields.checked(c.value, category=c.category, key=c.key, importance=c.importance, source=c.source)

    def _store_vector(self, fact_id: int, vector: Any) -> None:
        if vector is None or self.embedder is None:
            return
        self.memory.vectors.store("fact", [fact_id], self.embedder.id, vector.reshape(1, -1))

    def _cap_instructions(self) -> None:
        active = self.memory.facts.active(INSTRUCTION)
        for item in active[: max(0, len(active) - self.settings.max_instructions)]:
            self.memory.facts.archive(item.item_id, reason=f"over the cap of {self.settings.max_instructions} "
                                                          "standing instructions (oldest archived)")
