"""The pointing request: the model writes each note's clauses and value before it says what the note is (its
who, modality, polarity, kind and topic), in the schema a server enforces and in the prompt's worked examples
alike, since a small model copies the examples' order when the server enforces none."""

from __future__ import annotations

import json
import re

from coop.memory.growth.extract import extraction_request
from coop.memory.growth.pointing import NOTE_FIELDS, POINTING_PROMPT, read_notes


def test_the_schema_asks_for_the_value_before_what_the_note_is():
    request = extraction_request("I repair old clocks and I live near the river.")
    assert request is not None
    note = request[1]["schema"]["properties"]["notes"]["items"]
    assert list(note["properties"]) == list(NOTE_FIELDS) == note["required"]
    assert NOTE_FIELDS.index("value") < min(NOTE_FIELDS.index(f) for f in ("kind", "topic", "modality", "polarity"))


def test_the_worked_examples_are_written_in_the_schemas_order_and_read_as_notes():
    replies = [json.loads(m) for m in re.findall(r"Reply: (\{.*?\]\})\n", POINTING_PROMPT.replace("\\\n", ""))]
    notes = [n for reply in replies for n in reply["notes"]]
    assert len(replies) >= 2 and notes
    assert all(list(n) == list(NOTE_FIELDS) for n in notes)
    assert len(read_notes({"notes": notes}, len(notes))) == len(notes)
