"""The one write pipeline for every new fact: extraction, /remember, the model's tool, `coop memory add`, an MCP
host, import and consolidation all go through `FactWriter`, and the table of slots (`slots.py`) decides.

For each candidate, cheapest check first:
1. refused: an unsafe instruction; an instruction that widens what may be revealed, from a machine; what the user
   forgot, proposed again by a machine; a standing instruction from an MCP host, unless the user installed the
   host with `--allow-instructions`.
2. the user named the fact it replaces (`coop memory add --replaces f12`): that one is superseded.
3. "no longer" / "never": the matching fact (the slot's holder, or the fact of its category that the value
   restates) is retired (archived, with its history and an undo); nothing new is stored.
4. exact duplicate (one category, normalised text), or near duplicate (cosine >= `dedup_threshold` and the same
   terms): a mention counted (MERGE), no new row.
5. a plan (decided, for later) is added beside: it never holds a slot or changes a fact.
6. a single-valued slot (a key: the user's home city, employer, answer language; a person's own slot): a new
   value supersedes the holder, the old value kept as history, when the user's words carry the change (most of
   the value's words, or a word that says something changed: `slot_change.carries_a_change`); a value that shares
   no word with the holder, where the user's words say nothing changed, is another thing misfiled under the slot
   and is added beside it (`slot_change.another_thing`).
7. a many-valued topic, or a slot no fact holds yet, adds. Where the table cannot decide (a fact of the same
   category and holder, for a slot one without a key, shares a term with it, and the user's words say something
   changed or give a new amount), the exchange's one extra model question (`changes.py`) may name the fact it
   replaces; coop takes the answer only for such a fact.
8. an MCP host is not the user (`_within_the_hosts_reach`): what it writes changes only what a host wrote. A new
   value for a slot held by any other fact is kept beside it under the host's mark (`slots.host_key`, one per
   slot), so the two are seen as rivals; a "no longer" of one is not carried out.

`plan()` only reads; `plan_exchange()` plans an exchange's candidates and asks at most one question; `apply()` writes
one plan in one transaction and re-checks for an exact duplicate there, so two writers racing on the same fact
still end with one row. Every decision lands in `fact_history` with its reason.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from coop.config.sections import ExtractionConfig
from coop.errors import UsageError
from coop.memory.embedder import Embedder, chosen, profile_of
from coop.memory.growth import slot_change
from coop.memory.growth.candidate import NEVER, NO_LONGER, PLAN, Candidate
from coop.memory.growth.changes import AskChanges, Undecided
from coop.memory.growth.instructions import is_unsafe_instruction, widening_fact, widens
from coop.memory.growth.overlap import a_new_amount, restates, restates_either, shared_content
from coop.memory.growth.refusals import refuse
from coop.memory.kinds import HOST, INSTRUCTION, fact_slot
from coop.memory.language.lexicon import marks, unmarked
from coop.memory.language.terms import terms
from coop.memory.slots import canonical_key, host_key
from coop.memory.storage.interface import UserStore
from coop.memory.storage.items import FactFields, FactWrite, Item

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

__all__ = ["Candidate", "FactWriter", "Plan"]

MACHINE_SOURCES = ("extraction", "consolidation", "model", "import", HOST)
QUOTING_SOURCES = ("extraction", "consolidation", "host")  # their facts rest on the user's clauses
SAME_CATEGORY_LIMIT = 200   # facts of one category read when looking for what a fact may change


@dataclass(frozen=True)
class Plan:
    action: str  # ADD | MERGE | UPDATE | SUPERSEDE | RETIRE | SKIP
    candidate: Candidate
    reason: str
    target_id: int | None = None
    vector: "np.ndarray | None" = None
    may_change: tuple[Item, ...] = field(default=(), compare=False)  # known facts the extra question may name


def _rests_on_clauses(candidate: Candidate) -> bool:
    """Whether a candidate is read from the user's clauses (extraction, consolidation, a host's recorded exchange),
    so a change must be in those words; a fact written whole (`/remember`, a host's `memory_remember`) names its
    slot itself."""
    return candidate.source in QUOTING_SOURCES and bool(candidate.evidence or candidate.sentence)


def _topical(text: str, language: str) -> str:
    """`text` without its words of negation, of an end and of standing ("never", "anymore", "always"): two facts
    that share only those are not about one thing ("Never write more than a page", "Has never eaten sushi")."""
    for mark in ("negation", "no_longer", "standing"):
        text = unmarked(text, language, mark)
    return text


def _is_someones(item: Item) -> bool:
    """Whether a fact is filed under another person (`slots.slot_for`: a key `<person>.<slot>`)."""
    return item.key is not None and "." in item.key


class FactWriter:
    """Writes facts for one user through the pipeline described above."""

    def __init__(self, memory: UserStore, settings: ExtractionConfig, *, embedder: Embedder | None = None,
                 ask: AskChanges | None = None, host_may_instruct: bool = False) -> None:
        self.memory = memory
        self.host_may_instruct = host_may_instruct  # the user installed the MCP host with --allow-instructions
        self.settings = settings
        self.embedder = embedder
        self.ask = ask
        # The facts written from the message being read: none of them changes another, since the user said them
        # together ("I sold my bike and I now ride a scooter").
        self.said_together: set[int] = set()
        profile, default = profile_of(embedder), ExtractionConfig()
        self.dedup_threshold = chosen(settings.dedup_threshold, default.dedup_threshold, profile.dedup_threshold)

    def write(self, candidate: Candidate) -> FactWrite | None:
        """Plan and apply one candidate; None when it was skipped."""
        return self.apply(self.plan(candidate))

    # -- planning (reads) -------------------------------------------------------------------------------------

    def plan(self, candidate: Candidate) -> Plan:
        return self._within_the_hosts_reach(self._plan(candidate))

    def _plan(self, candidate: Candidate) -> Plan:
        category, key = fact_slot(candidate.category, candidate.key)
        candidate = replace(candidate, category=category, key=canonical_key(key),
                            value=" ".join(candidate.value.split()),
                            importance=min(1.0, max(0.0, float(candidate.importance))))
        refused = self._refused(candidate)
        if refused is not None:
            return refused
        if candidate.source == "user" and candidate.replaces is not None:
            return self._replacing(candidate)
        if candidate.polarity in (NO_LONGER, NEVER):
            return self._retiring(candidate)
        exact = self.memory.facts.find_exact(candidate.value, candidate.category)
        if exact is not None and (candidate.key is None or canonical_key(exact.key) in (None, candidate.key)):
            return Plan("MERGE", candidate, "exact duplicate: mention counted", exact.item_id)
        vector, neighbours = self._neighbours(candidate)
        mine = set(terms(candidate.value, candidate.language))
        for item, similarity in neighbours:
            if item.category == candidate.category and similarity >= self.dedup_threshold \
                    and set(terms(item.text, candidate.language)) == mine:
                return Plan("MERGE", candidate, f"near duplicate of {item.ref} (cosine {similarity:.2f})",
                            item.item_id, vector)
        if candidate.stance == PLAN:
            return Plan("ADD", replace(candidate, key=None), "a plan: added beside what holds now", vector=vector)
        denied = self._denied(candidate)
        if denied is not None:  # "Is not allergic to penicillin" after "Is allergic to penicillin"
            return Plan("SUPERSEDE", replace(candidate, category=denied.category or candidate.category, key=denied.key),
                        f"the user's words deny {denied.ref}", denied.item_id, vector)
        holder = self._holder(candidate.category, candidate.key)
        if holder is not None:
            if holder.item_id in self.said_together:  # said together: both stand
                return Plan("ADD", replace(candidate, key=None), "said with the slot's value", vector=vector)
            if slot_change.part_of(candidate, holder):  # "diet: Keto" after "Has eaten keto since 2020": no change
                return Plan("MERGE", candidate, f"restates part of {holder.ref}: mention counted", holder.item_id,
                            vector)
            if _rests_on_clauses(candidate) and not slot_change.carries_a_change(candidate):
                refuse("change", f"a new value of {candidate.category}/{candidate.key} the user's words do not say "
                                 "changed", category=candidate.category, text=candidate.value,
                       spans=candidate.spans)
                return Plan("SKIP", candidate, f"{holder.ref} kept: the user's words do not say it changed")
            if _rests_on_clauses(candidate) and slot_change.another_thing(candidate, holder):  # the holder stays
                return Plan("ADD", replace(candidate, key=None), f"beside {holder.ref}: no word in common, no change "
                                                                 "said", vector=vector)
            return Plan("SUPERSEDE", candidate, f"a new value of {candidate.category}/{candidate.key}",
                        holder.item_id, vector)
        if candidate.category == INSTRUCTION or candidate.source == "user" or (candidate.key is not None and (
                not _rests_on_clauses(candidate) or slot_change.says_it_ended(candidate))):
            return Plan("ADD", candidate, "new fact", vector=vector)
        return Plan("ADD", candidate, "new fact", vector=vector, may_change=tuple(self._may_change(candidate)))

    def plan_exchange(self, candidates: Sequence[Candidate], said: str) -> list[Plan]:
        """The plans of one exchange's candidates, in the order they are applied, with at most one extra model
        question for the additions the table cannot decide (`changes.py`); the answer is taken only for a fact it
        was offered. Of two values of one slot said together, the one the user's words say holds is applied first,
        so it takes the slot ("I don't live in Lyon any more, I live in Oslo": Oslo), and the other stands beside it."""
        plans = [self.plan(c) for c in sorted(candidates, key=slot_change.says_it_ended)]
        open_ = [(i, p) for i, p in enumerate(plans) if p.action == "ADD" and p.may_change]
        if not open_ or self.ask is None:
            return plans
        try:
            answer = self.ask(said, [Undecided(p.candidate.value, list(p.may_change)) for _, p in open_])
        except Exception as exc:  # any failure adds the new facts beside the old ones
            log.warning("asking what the new facts change failed, keeping both: %s", exc)
            return plans
        for position, (index, plan) in enumerate(open_):
            target = answer.get(position)
            offered = {item.item_id: item for item in plan.may_change}
            if target is None:
                continue
            if target not in offered:
                refuse("target", f"the model named f{target}, not a fact it was offered",
                       category=plan.candidate.category, spans=plan.candidate.spans)
                continue
            old = offered[target]  # a slot's first value keeps its key: the old one was filed without it
            category, key = old.category or plan.candidate.category, old.key or plan.candidate.key
            plans[index] = self._within_the_hosts_reach(
                Plan("SUPERSEDE", replace(plan.candidate, category=category, key=key),
                     f"{old.ref} is no longer true after what the user said", target, plan.vector))
        return plans

    def _within_the_hosts_reach(self, plan: Plan) -> Plan:
        """An MCP host is not the user: its plan may change (supersede, rewrite, retire) only a fact a host wrote.
        Its new value for a slot another fact holds is added beside that fact, which stays current; its "no
        longer" of one is not carried out. Both are counted; the user sees the host's facts at the next chat and
        in `coop memory review`, each with its undo."""
        if plan.candidate.source != HOST or plan.action not in ("SUPERSEDE", "UPDATE", "RETIRE") \
                or plan.target_id is None:
            return plan
        target = self.memory.get("fact", plan.target_id)
        if target.source == HOST:
            return plan
        refuse("host", f"an MCP host may not change {target.ref}, which it did not write",
               category=plan.candidate.category, text=plan.candidate.value,
               spans=plan.candidate.spans)
        if plan.action == "RETIRE":
            return Plan("SKIP", plan.candidate, f"{target.ref} kept: an MCP host may not retire what it did not write")
        beside = f"an MCP host's account, beside {target.ref}, which it may not change"
        key = plan.candidate.key
        if key is None:
            return Plan("ADD", plan.candidate, beside, vector=plan.vector)
        # one account of the slot per host mark, which the host may change
        candidate = replace(plan.candidate, key=host_key(key))
        own = self.memory.facts.find_by_key(candidate.category, candidate.key or "")
        if own is not None:
            return Plan("SUPERSEDE", candidate, beside, own.item_id, plan.vector)
        return Plan("ADD", candidate, beside, vector=plan.vector)

    def _may_change(self, candidate: Candidate) -> list[Item]:
        """Active facts of the candidate's category (the same person's) that it may change, when the user's words
        say something changed or it gives a new amount: a term in common (not counting the category's own
        name), and not already said in this exchange. Nearest by shared terms first, at most five. For the first
        value of a slot, only facts filed without a key that may have held it (`slot_change.may_have_held`): its
        former value told as a story, or under a wider topic."""
        if candidate.category in ("general", INSTRUCTION) or candidate.about:
            return []
        changed = slot_change.says_it_changed(candidate)
        found: list[tuple[int, Item]] = []
        mine = _topical(candidate.value, candidate.language)
        for item in self.memory.facts.active(candidate.category, limit=SAME_CATEGORY_LIMIT, newest_first=True):
            if item.item_id in self.said_together or _is_someones(item) or \
                    (candidate.key and (item.key or not slot_change.may_have_held(candidate, item))):
                continue
            shared = shared_content(mine, _topical(item.text, candidate.language), candidate.language)
            if shared and (changed or a_new_amount(candidate.value, item.text, candidate.language)):
                found.append((len(shared), item))
        found.sort(key=lambda pair: -pair[0])
        return [item for _, item in found[:5]]

    def _holder(self, category: str, key: str | None) -> Item | None:
        """The active fact that holds a slot: by its key, or by another name of it (`slots.canonical_key`: a fact
        written with the key "city" holds home_city)."""
        if key is None:
            return None
        found = self.memory.facts.find_by_key(category, key)
        if found is not None:
            return found
        return next((item for item in self.memory.facts.active(category, limit=SAME_CATEGORY_LIMIT)
                     if item.key is not None and canonical_key(item.key) == key), None)

    def _denied(self, candidate: Candidate) -> Item | None:
        """The active fact a negative statement denies: one of its category (the same person's) that says what the
        statement says, without its negation (in a language with a lexicon)."""
        if candidate.about or "negation" not in marks(candidate.value, candidate.language):
            return None
        return next((item for item in self.memory.facts.active(candidate.category, limit=SAME_CATEGORY_LIMIT,
                                                                newest_first=True)
                     if item.item_id not in self.said_together and not _is_someones(item)
                     and "negation" not in marks(item.text, candidate.language)
                     and restates(candidate.value, item.text, candidate.language, share=0.6)), None)

    def _retiring(self, candidate: Candidate) -> Plan:
        """"No longer" or "never": the fact it names is retired (archived, history kept); none, nothing is done."""
        target = None
        if candidate.key is not None:
            holder = self._holder(candidate.category, candidate.key)
            if holder is not None and restates(candidate.value, holder.text, candidate.language, share=0.34):
                target = holder
        if target is None and not candidate.about:
            target = next((item for item in self.memory.facts.active(candidate.category, limit=SAME_CATEGORY_LIMIT,
                                                                     newest_first=True)
                           if item.item_id not in self.said_together
                           and restates_either(candidate.value, item.text, candidate.language)), None)
        if target is None:
            return Plan("SKIP", candidate, "the user said something no longer holds, which memory did not hold")
        why = "no longer true" if candidate.polarity == NO_LONGER else "not true"
        return Plan("RETIRE", candidate, f"{why}, as the user said", target.item_id)

    def _refused(self, candidate: Candidate) -> Plan | None:
        """A SKIP for what is never written: an unsafe instruction; a widening one from a machine, or a machine's
        fact that widens (`instructions.widening_fact`); what the user forgot, proposed again by a machine."""
        said = marks(candidate.value, candidate.language) | marks(candidate.evidence or "", candidate.language) \
            if candidate.category == INSTRUCTION else frozenset()
        if candidate.category == INSTRUCTION and (is_unsafe_instruction(candidate.value) or "unsafe" in said):
            refuse("unsafe", "a request to drop a safety behaviour", category=INSTRUCTION, text=candidate.value,
                   spans=candidate.spans)
            return Plan("SKIP", candidate, "a request to drop a safety behaviour is not kept as an instruction")
        if candidate.category == INSTRUCTION and candidate.source in MACHINE_SOURCES and (
                widens(candidate.value) or widens(candidate.evidence or "")):
            refuse("widening", "an instruction that widens what the assistant may reveal or do",
                   category=INSTRUCTION, text=candidate.value, spans=candidate.spans)
            return Plan("SKIP", candidate, "an instruction that widens what the assistant may reveal or do is "
                                           "written only by the user (coop memory add)")
        if candidate.category != INSTRUCTION and candidate.source in MACHINE_SOURCES and \
                widening_fact(candidate.value, candidate.evidence or "", candidate.language):
            refuse("widening", "a fact that tells the assistant to widen what it may reveal or do",
                   category=candidate.category, text=candidate.value, spans=candidate.spans)
            return Plan("SKIP", candidate, "words that widen what the assistant may reveal are not a fact about the "
                                           "user (the user may add such an instruction with coop memory add)")
        if candidate.category == INSTRUCTION and candidate.source == HOST and not self.host_may_instruct:
            refuse("host", "a standing instruction from an MCP host installed without --allow-instructions",
                   category=INSTRUCTION, text=candidate.value, spans=candidate.spans)
            return Plan("SKIP", candidate, "an MCP host gives standing instructions only when the user installed it "
                                           "with --allow-instructions")
        if candidate.source in MACHINE_SOURCES and self.memory.forgotten.was_forgotten(candidate.value):
            refuse("forgotten", "the user forgot this fact; it is not re-created", category=candidate.category,
                   spans=candidate.spans)
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

    # -- applying (one transaction) -----------------------------------------------------------------------

    def apply(self, plan: Plan) -> FactWrite | None:
        """Write one plan in one transaction. A plan made against a fact that another writer has superseded or
        archived since falls through to an ADD, which re-checks for an exact duplicate (a retirement of such a
        fact does nothing)."""
        memory, c = self.memory, plan.candidate
        if plan.action == "SKIP":
            log.info("fact skipped: %s", plan.reason)
            return None
        with memory.transaction():
            target = plan.target_id if plan.target_id is not None and memory.facts.is_active(plan.target_id) else None
            if plan.action == "RETIRE":
                if target is None:
                    return None
                memory.facts.archive(target, reason=plan.reason)
                return FactWrite(target, "RETIRE")
            if plan.action == "MERGE" and target is not None:
                memory.facts.bump(target, importance=c.importance, reason=plan.reason)
                return FactWrite(target, "MERGE")
            if plan.action == "UPDATE" and target is not None:
                memory.facts.update_value(target, c.value, reason=plan.reason)
                self._store_vector(target, plan.vector)
                return FactWrite(target, "UPDATE")
            if plan.action == "SUPERSEDE" and target is not None:
                if c.key is not None and (holder := memory.facts.find_by_key(c.category, c.key)) is not None \
                        and holder.item_id != target:
                    c = replace(c, key=None)  # a slot's first value, taken meanwhile: the one it replaces had none
                result = memory.facts.supersede(target, self._fields(c), reason=plan.reason)
                self._store_vector(result.fact_id, plan.vector)
                return result
            if c.key is not None and memory.facts.find_by_key(c.category, c.key) is not None:
                c = replace(c, key=None)  # the slot was taken meanwhile: one active fact per (category, key)
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
