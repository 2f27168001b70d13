"""Card numbers and IBANs are masked like keys, only when their check digits are right (issue 42); a secret that
runs over lines is masked whole, whether the text comes at once, a line at a time (a pipe) or in pieces (a streamed
reply). Every number here is made up; the examples are the issue's."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coop.privacy.secret_shapes import is_iban, luhn_valid
from coop.privacy.secrets import MARKER, LineMasker, StreamMasker, mask

CARD = "4539 1488 0343 6467"
IBAN = "DE89 3704 0044 0532 0130 00"
NETWORKS = ("4", "51", "55", "2221", "2720", "34", "37", "36", "3528", "6011", "65", "62")
R40 = "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9jKl1n"


def check_digit(body: str) -> str:
    return next(d for d in "0123456789" if luhn_valid(body + d))


def grouped(number: str, sep: str, size: int = 4) -> str:
    return sep.join(number[i:i + size] for i in range(0, len(number), size)) if sep else number


@st.composite
def card_numbers(draw: st.DrawFn, valid: bool = True, most: int = 19) -> str:
    """A card number of a network's prefix and length, its check digit right (or wrong), whole or in groups."""
    prefix = draw(st.sampled_from(NETWORKS))
    length = draw(st.integers(13, most))
    body = prefix + draw(st.text("0123456789", min_size=length - 1 - len(prefix), max_size=length - 1 - len(prefix)))
    right = check_digit(body)
    digit = right if valid else draw(st.sampled_from([d for d in "0123456789" if d != right]))
    return grouped(body + digit, draw(st.sampled_from(["", " ", "-"])))


def iban_check(country: str, bban: str) -> str:
    number = int("".join(str(int(ch, 36)) for ch in bban + country + "00"))
    return f"{98 - number % 97:02d}"


@st.composite
def ibans(draw: st.DrawFn, valid: bool = True, spaced: bool = True, most: int = 30) -> str:
    """An IBAN: a country, its check digits right (or wrong), a BBAN of digits and capitals; whole or in fours split
    by spaces or dashes; as written, or in lower case (as typed in a hurry)."""
    country = draw(st.sampled_from(["DE", "FR", "GB", "NL", "ES", "IT", "CH", "BE", "AT", "PL"]))
    bban = draw(st.text("0123456789" * 3 + "ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=11, max_size=most))
    check = iban_check(country, bban)
    if not valid:
        check = draw(st.sampled_from([f"{n:02d}" for n in range(2, 99) if f"{n:02d}" != check]))
    written = grouped(country + check + bban, draw(st.sampled_from([" ", "-", ""])) if spaced else "")
    return written.lower() if draw(st.booleans()) else written


def digits_of(number: str) -> str:
    return re.sub(r"[ -]", "", number)


def test_the_issues_card_and_iban_are_masked_and_the_numbers_that_fail_their_check_are_kept():
    assert mask(f"my card is {CARD}, exp 12/27") == "my card is [secret], exp 12/27"
    assert mask(f"IBAN: {IBAN}.") == "IBAN: [secret]."
    assert mask(f"pay {digits_of(IBAN)} today") == "pay [secret] today"
    for kept in ("call me on +49 170 1234567", "or 0170 1234 5678", "order 4539 1488 0343 6468 is late",
                 "IBAN DE88 3704 0044 0532 0130 00 (a typo)", "timestamp 1700000000000 ms", "in 2024-11-23 at 14:00",
                 "a table: 2019 2020 2021 2022 2023"):
        assert mask(kept) == kept, kept


@given(card_numbers(), st.sampled_from(["my card is {}.", "{}", "card: {} exp 12/27 cvv 123", "pay with {}, thanks"]))
def test_any_luhn_valid_card_number_is_masked_whole(card, template):
    masked = mask(template.format(card))
    assert masked == template.format(MARKER)
    assert digits_of(card)[-8:] not in digits_of(masked)


@given(card_numbers(valid=False, most=16), st.sampled_from(["order {} shipped", "{}", "ref: {}."]))
def test_a_digit_run_that_fails_the_luhn_check_is_kept(number, template):
    assert mask(template.format(number)) == template.format(number)


@given(ibans(), st.sampled_from(["IBAN {}", "{}", "send it to {}, please", "account: {}."]))
def test_any_iban_with_right_check_digits_is_masked_with_spaces_dashes_or_none_in_either_case(iban, template):
    assert is_iban(iban)
    assert mask(template.format(iban)) == template.format(MARKER)


@given(st.one_of(ibans(valid=False, spaced=False), ibans(valid=False, most=12)))
def test_an_iban_with_wrong_check_digits_is_kept(iban):
    """In capitals, a small word after it is never read as its last group; in small letters one may be (the run
    then passes its check 1 time in 97, and the word is masked with it), so there a semicolon follows."""
    text = f"the account {iban} was closed" if iban.isupper() else f"the account {iban}; it was closed"
    assert mask(text) == text


@given(st.integers(24, 76), st.integers(0, 3))
def test_a_private_key_block_read_a_line_at_a_time_is_masked_whole(width, lines_after):
    """A pipe's lines, masked one by one with `LineMasker`, keep nothing of the block: its marker stands on the
    BEGIN line and the lines inside it come back empty; the lines around it are kept as they are."""
    body = "".join(random.Random(width).choice(R40 + "+/") for _ in range(width * 6))
    block = ["-----BEGIN OPENSSH PRIVATE KEY-----", *[body[i:i + width] for i in range(0, len(body), width)],
             "-----END OPENSSH PRIVATE KEY-----"]
    after = ["why does ssh refuse it?", "thanks"][:lines_after]
    masker = LineMasker()
    fed = [masker.feed(line) for line in ["here is my key:", *block, *after]]
    assert fed == ["here is my key:", MARKER, *[""] * (len(block) - 1), *after]
    assert mask("\n".join(["here is my key:", *block, *after])) == "\n".join(["here is my key:", MARKER, *after])


def test_a_key_wrapped_over_lines_is_masked_whole_and_a_word_after_it_is_kept():
    wrapped = f"OPENAI_API_KEY=sk-proj-{R40}\n{R40[::-1]}\n{R40[:9]}"
    assert mask(f"{wrapped}\nthanks") == f"OPENAI_API_KEY={MARKER}\nthanks"
    masker = LineMasker()
    assert [masker.feed(line) for line in f"{wrapped}\nthanks".split("\n")] == \
        [f"OPENAI_API_KEY={MARKER}", "", "", "thanks"]
    two = f"A=sk-proj-{R40}\nB=sk-proj-{R40[::-1]}"  # a key on each line: two keys, each name kept
    assert mask(two) == f"A={MARKER}\nB={MARKER}"
    masker = LineMasker()
    assert [masker.feed(line) for line in ["password:", "Tr0ub4dor&3x", "ok"]] == ["password:", MARKER, "ok"]


@given(st.lists(st.integers(1, 60), min_size=1, max_size=12), card_numbers(), ibans())
def test_a_streamed_reply_never_shows_part_of_a_card_or_an_iban(cuts, card, iban):
    """(After an IBAN in small letters a semicolon, as in `test_an_iban_with_wrong_check_digits_is_kept`: there a
    small word may be read as its last group, 1 time in 97, and be masked with it.)"""
    after = " are on file" if iban.isupper() else "; both are on file"
    reply = f"Your card {card} and IBAN {iban}{after}; see you in 2025 at 10:30."
    points = sorted({min(c * 3, len(reply)) for c in cuts})
    pieces = [reply[a:b] for a, b in zip([0, *points], [*points, len(reply)], strict=True) if b > a]
    masker = StreamMasker()
    shown = [masker.feed(piece) for piece in pieces] + [masker.flush()]
    assert "".join(shown) == f"Your card [secret] and IBAN [secret]{after}; see you in 2025 at 10:30."
    for part in shown:
        assert not re.search(r"[0-9]{4}[ -]?[0-9]{4}", digits_of(part).replace("2025", "")), part


def test_a_card_in_a_2_mb_message_full_of_numbers_is_the_only_thing_masked():
    """How long it takes is `bench/masking.py`'s to measure; here, what comes out."""
    rows = "order 12345 on 2024-11-23, phone +49 170 1234567, total 1,234.56 EUR, ref 4539 1488 0343 6468\n"
    text = rows * (2_000_000 // len(rows))
    assert mask(text + f"card {CARD}\n") == text + "card [secret]\n"


@pytest.mark.parametrize("text", ["sk-proj-abc\n2024", "see the key f12\nv2 of the plan", "2024 2025 2026 2027"])
def test_ordinary_lines_after_short_tokens_and_numbers_are_kept(text):
    assert mask(text) == text


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_rows_stored_before_cards_and_ibans_were_masked_are_masked_by_the_upgrade(engine, request, tmp_path):
    """m016: a database whose rows hold a card number and an IBAN as typed (written before they were masked) is
    masked in every text column when the next coop opens it; the full-text index follows, other text stays."""
    from coop.memory.storage.backends import open_store
    from coop.memory.storage.migrations import MIGRATIONS, apply_migrations

    location = str(tmp_path / "coop.db") if engine == "sqlite" else request.getfixturevalue("postgres_owner_url")
    store = open_store(engine, location)
    ana = store.user("ana")
    session = ana.sessions.start("plans")
    said = ana.messages.add(session, "user", "placeholder")
    fact = ana.facts.add("placeholder fact", category="money", key="bank").fact_id
    ana.sources.link(fact, [said], quote="placeholder")
    raw = f"my card {CARD} and my iban {IBAN.lower().replace(' ', '-')} for the heron trip"
    db = ana.db
    for sql in ("UPDATE messages SET content = $1 WHERE id = $2", "UPDATE facts SET value = $1 WHERE id = $2",
                "UPDATE sessions SET title = $1 WHERE id = $2"):
        db.execute(sql, (raw, {"messages": said, "facts": fact, "sessions": session}[sql.split()[1]]))
    db.execute("UPDATE fact_sources SET quote = $1 WHERE fact_id = $2", (raw, fact))
    # the database as m016 found it: its record and the later ones' taken away, m016 run again by the runner, the
    # later records put back (their changes were never undone)
    upgrade = next(n for n, m in enumerate(MIGRATIONS, start=1) if m.name == "m016_mask_cards_and_ibans")
    later = list(db.execute("SELECT id, name, applied_at FROM _migrations WHERE id > $1", (upgrade,)))
    db.execute("DELETE FROM _migrations WHERE id >= $1", (upgrade,))
    assert apply_migrations(db, MIGRATIONS[:upgrade]) == 1  # the upgrade
    for row in later:
        db.execute("INSERT INTO _migrations (id, name, applied_at) VALUES ($1, $2, $3)", tuple(row))
    store.close()
    store = open_store(engine, location)  # the next coop opens it at the current version
    try:
        ana = store.user("ana")
        texts = [str(r[0]) for r in ana.db.execute(
            "SELECT content FROM messages UNION ALL SELECT value FROM facts UNION ALL SELECT title FROM sessions "
            "UNION ALL SELECT quote FROM fact_sources")]
        assert len(texts) == 4
        for text in texts:
            assert digits_of(CARD) not in digits_of(text) and "3704" not in text, text
            assert text.count(MARKER) == 2 and text.endswith("for the heron trip")
        assert ana.text.matches([], ["4539"], kinds=("message",), limit=5) == []
        assert [hit[1] for hit in ana.text.matches([], ["heron"], kinds=("message",), limit=5)] == [said]
    finally:
        store.close()
