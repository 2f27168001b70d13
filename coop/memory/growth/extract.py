"""Fact extraction after a turn: parse the user's message once, let the fast model point, keep what coop verifies.

The user's message is parsed (`language.parse`: sentences and clauses with ids, languages, and what is quoted,
pasted or code), the fast model is asked once (`pointing.py`: a schema made from the parse) and each note it
returns goes through `verify`; what passes becomes a `Candidate` for the write pipeline, and what does not is
refused with its reason and counted. The assistant's reply is not shown: it comes after what the user said, so it
cannot explain it, and a small model shown it takes the assistant's life for the user's; the session's earlier
turns are shown as context ("she", "it", "yes"). A message with no clause of the user's own (a paste, a code
block) costs no call. A reply that is not the JSON asked for changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coop.memory.growth.candidate import ASSERTED, PLAN, Candidate
from coop.memory.growth.pointing import POINTING_PROMPT, Listing, Note, notes_schema, parse_notes, topics_line
from coop.memory.growth.verify import Verified, verify
from coop.memory.language.parse import parse
from coop.model.jsonreply import ModelReplyError, Schema, ask, parse_json_reply

log = logging.getLogger(__name__)

# messages -> the model's reply text; a callable with `takes_schema = True` is also given the JSON schema wanted
# (see coop.model.jsonreply.ask)
Complete = Callable[..., str]
__all__ = ["Complete", "ExtractionContext", "ModelReplyError", "extract_facts", "parse_json_reply"]

# a longer message is read in its first 8,000 characters (a paste states nothing anyway), the user's earlier ones too
MAX_MESSAGE_CHARS = 8000
SPEAKERS = {"user": "User", "assistant": "Assistant"}


@dataclass(frozen=True)
class ExtractionContext:
    """What the extractor sees beside the message: today's date and the session's earlier turns (to resolve "she"
    and "yes"); the user's own earlier words are also what a leaning "yes" may rest on."""

    today: str = ""
    earlier: Sequence[tuple[str, str]] = ()      # (role, text), oldest first

    def render(self) -> str:
        parts = [f"TODAY: {self.today}"] if self.today else []
        if self.earlier:
            parts.append("EARLIER TURNS (context only):\n" + "\n".join(
                f"{SPEAKERS.get(role, role)}: {' '.join(text.split())[:600]}" for role, text in self.earlier))
        return "\n\n".join(parts)

    def users_words(self) -> list[str]:
        """The user's own earlier messages: what a leaning clause may rest on (never the assistant's)."""
        return [text for role, text in self.earlier if role == "user"]


def extract_facts(complete: Complete, user_message: str, limit: int, context: ExtractionContext | None = None,
                  source: str = "extraction") -> list[Candidate]:
    """The candidates the user's message of one exchange gives, at most `limit`: the model's notes that `verify`
    lets through. `source` is what they are recorded as: "extraction", or "host" for an exchange an MCP host
    recorded."""
    if limit <= 0:
        return []
    request = extraction_request(user_message, context, limit)
    if request is None:
        return []
    messages, schema, listing = request
    try:
        notes = parse_notes(ask(complete, messages, schema), limit)
    except ModelReplyError as exc:
        log.warning("extraction reply dropped: %s", exc)
        return []
    earlier = [text[:MAX_MESSAGE_CHARS] for text in context.users_words()] if context is not None else []
    return candidates(notes, listing, earlier, source)


def candidates(notes: Sequence[Note], listing: Listing, earlier: Sequence[str], source: str) -> list[Candidate]:
    """The notes that pass `verify`, as candidates, once each."""
    found: list[Candidate] = []
    for note in notes:
        verified = verify(note, listing, earlier)
        if verified is None:
            continue
        candidate = as_candidate(verified, source)
        if all(c.value.casefold() != candidate.value.casefold() or c.polarity != candidate.polarity for c in found):
            found.append(candidate)
    return found


def as_candidate(verified: Verified, source: str) -> Candidate:
    return Candidate(value=verified.value, category=verified.category, key=verified.key,
                     importance=0.7 if verified.key else 0.5, source=source, evidence=verified.evidence,
                     stance=PLAN if verified.plan else ASSERTED, sentence=verified.sentence,
                     polarity=verified.polarity, about=verified.about, language=verified.language,
                     messages=verified.messages, spans=verified.spans)


def extraction_request(user_message: str, context: ExtractionContext | None = None, limit: int = 8
                       ) -> tuple[list[dict[str, str]], Schema, Listing] | None:
    """The messages and schema that ask the fast model for the notes of `user_message` (`coop check --probe` sends
    them too), and the listing they point into; None when the message has no clause of the user's own."""
    listing = Listing([parse(user_message[:MAX_MESSAGE_CHARS])])
    own = listing.own_ids()
    if not own:
        return None
    exchange = f"{topics_line()}\n\n{listing.render()}"
    if context is not None and context.render():
        exchange = f"{context.render()}\n\n{exchange}"
    return ([{"role": "system", "content": POINTING_PROMPT}, {"role": "user", "content": exchange}],
            notes_schema(own, limit), listing)
