"""Stable references across stores: a fact's, message's or summary's id survives an export read back elsewhere and
`coop memory migrate`, where the target can give it; where it cannot, an alias (m019) makes the id the user saw
on the other side still name the same item, with a note; history reasons name the right facts; and an older
database gains the alias table in place. Each runs on SQLite and on Postgres (the `store` fixture)."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest

from coop.config.loading import ImportanceConfig
from coop.memory.storage.facts import FactFields
from coop.memory.storage.store import MemoryStore
from coop.memory.transfer.export import write_coop
from coop.memory.transfer.imports import import_file

T = 1_732_000_000.0


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9)))


def _fill(memory, rng: random.Random, facts: int, messages: int) -> dict[tuple[str, int], str]:
    """Made-up facts and messages of random words (and a summary); (kind, id) -> text."""
    made: dict[tuple[str, int], str] = {}
    session = memory.sessions.start(f"talk {_word(rng)}", started_at=T + rng.random())
    for n in range(messages):
        text = f"{_word(rng)} {_word(rng)} {_word(rng)}"
        made[("message", memory.messages.add(session, "user", text, created_at=T + n))] = text
    for _ in range(facts):
        text = f"likes {_word(rng)} {_word(rng)}"
        made[("fact", memory.facts.add(text, category="preference").fact_id)] = text
    text = f"they talked of {_word(rng)}"
    made[("summary", memory.summaries.add(text, session_id=session, created_at=T + 99))] = text
    return made


def _export(memory, path: Path) -> Path:
    with path.open("w", encoding="utf-8") as out:
        write_coop(memory, out)
    return path


@pytest.fixture
def source(tmp_path: Path):
    opened = MemoryStore.open(str(tmp_path / "elsewhere.db"))
    yield opened
    opened.close()


def _named(memory, kind: str, number: int):
    """The item a typed id names in `memory`, and the note said for it."""
    found = memory.aliases.resolve(kind, number)
    return memory.get(found.kind, found.item_id), found.note


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_export_read_into_an_empty_memory_keeps_every_id(store, source, tmp_path, seed):
    made = _fill(source.user("ana"), random.Random(seed), facts=random.Random(seed).randint(3, 12), messages=6)
    target = store.user("ana")
    import_file(target, _export(source.user("ana"), tmp_path / "ana.jsonl"), importance=ImportanceConfig())
    for (kind, number), text in made.items():
        assert target.get(kind, number).text == text
    assert target.aliases.aliases() == []


@pytest.mark.parametrize("seed", [4, 5])
def test_ids_another_person_holds_are_aliased_and_the_rest_kept(store, source, tmp_path, seed):
    rng = random.Random(seed)
    taken = _fill(store.user("bob"), rng, facts=rng.randint(2, 5), messages=3)  # bob's rows take the first ids
    made = _fill(source.user("ana"), rng, facts=rng.randint(8, 15), messages=10)
    target = store.user("ana")
    import_file(target, _export(source.user("ana"), tmp_path / "ana.jsonl"), importance=ImportanceConfig())
    highest = {kind: max(number for k, number in taken if k == kind) for kind, _ in taken}
    for (kind, number), text in made.items():
        item, note = _named(target, kind, number)
        assert item.text == text  # the same item, kept or through its alias
        if number > highest[kind]:
            assert item.item_id == number and note is None  # no renumbered row took an id a later one keeps
        if (kind, number) in taken:
            assert item.item_id != number and note == f"{item.ref[0]}{number} is {item.ref} here since the import " \
                                                      f"of {note.rsplit(' ', 1)[-1]}"
    assert {(k, s) for k, s, _, _ in target.aliases.aliases()} == set(taken) & set(made)


def test_an_id_that_is_also_this_memorys_own_names_the_own_row_and_says_so(store, source, tmp_path, run_cli):
    rng = random.Random(7)
    own = _fill(store.user("ana"), rng, facts=3, messages=2)
    made = _fill(source.user("ana"), rng, facts=5, messages=2)
    target = store.user("ana")
    import_file(target, _export(source.user("ana"), tmp_path / "ana.jsonl"), importance=ImportanceConfig())
    fact = min(number for kind, number in own if kind == "fact" and ("fact", number) in made)
    item, note = _named(target, "fact", fact)
    assert item.text == own[("fact", fact)]
    imported = re.search(r"is (f\d+) here", note or "")
    assert imported and target.get("fact", int(imported.group(1)[1:])).text == made[("fact", fact)]
    shown = run_cli("memory", "show", f"f{fact}", "--user", "ana")
    assert shown.exit_code == 0, shown.stderr
    assert own[("fact", fact)] in shown.stdout and imported.group(1) in shown.stderr


def test_the_commands_follow_an_alias_and_print_a_note(store, source, tmp_path, run_cli):
    rng = random.Random(8)
    _fill(store.user("bob"), rng, facts=4, messages=1)
    made = _fill(source.user("ana"), rng, facts=6, messages=1)
    target = store.user("ana")
    import_file(target, _export(source.user("ana"), tmp_path / "ana.jsonl"), importance=ImportanceConfig())
    renumbered = [s for kind, s, _, _ in target.aliases.aliases("fact")]
    assert renumbered
    first = renumbered[0]
    here = target.aliases.resolve("fact", first).item_id
    shown = run_cli("memory", "show", f"f{first}", "--user", "ana", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert shown.json()["text"] == made[("fact", first)]
    assert re.search(rf"f{first} is f{here} here since the import of \d{{4}}-\d\d-\d\d", shown.stderr)
    assert run_cli("memory", "history", f"f{first}", "--user", "ana").exit_code == 0
    undone = run_cli("memory", "undo", f"f{first}", "--user", "ana", "--json")
    assert undone.exit_code == 0, undone.stderr
    assert undone.json()["id"] == f"f{here}"
    # the forgotten fact took its alias with it: the old id names nothing now
    assert ("fact", first) not in {(k, s) for k, s, _, _ in target.aliases.aliases()}
    assert run_cli("memory", "show", f"f{first}", "--user", "ana").exit_code == 3
    assert store.user("bob").get("fact", first)  # bob's fact of that id is untouched


def test_history_reasons_name_the_right_facts_after_an_import(store, source, tmp_path):
    rng = random.Random(9)
    _fill(store.user("bob"), rng, facts=6, messages=4)
    ana = source.user("ana")
    said = ana.messages.add(ana.sessions.start("s", started_at=T), "user", f"now {_word(rng)}", created_at=T + 1)
    old = ana.facts.add(f"lives in {_word(rng)}", category="location", key="city").fact_id
    new = ana.facts.supersede(old, FactFields.checked(f"lives in {_word(rng)}", category="location", key="city"),
                              reason=f"a new value of location/city supersedes f{old}").fact_id
    ana.facts.record_history(new, "MERGE", None, None, f"the user's words in m{said} confirm f{new}, not f{old}", T)
    target = store.user("ana")
    import_file(target, _export(ana, tmp_path / "ana.jsonl"), importance=ImportanceConfig())
    new_here = target.aliases.resolve("fact", new).item_id
    reasons = " ".join(entry.reason or "" for entry in target.facts.history(new_here))
    named = re.findall(r"\b([fm])(\d+)\b", reasons)
    assert named
    texts = {"f": {old: ana.get("fact", old).text, new: ana.get("fact", new).text},
             "m": {said: ana.get("message", said).text}}
    for prefix, number in named:
        kind = "fact" if prefix == "f" else "message"
        assert target.get(kind, int(number)).text in texts[prefix].values()
    assert f"f{new_here}" in reasons


@pytest.mark.postgres
def test_migrate_there_and_back_keeps_every_reference(coop_home, postgres_url, run_cli, tmp_path, monkeypatch):
    from coop.memory.storage.postgres.store import PgStore

    rng = random.Random(10)
    server = PgStore.open(postgres_url)
    try:
        _fill(server.user("cy"), rng, facts=3, messages=3)  # someone on the server already: some ids are taken
    finally:
        server.close()
    local = MemoryStore.open(str(coop_home / "coop.db"))
    made = _fill(local.user("ana"), rng, facts=9, messages=8)
    local.close()
    assert run_cli("memory", "migrate", "--to", postgres_url).exit_code == 0
    server = PgStore.open(postgres_url)
    try:
        for (kind, number), text in made.items():
            assert _named(server.user("ana"), kind, number)[0].text == text
        assert server.user("ana").aliases.aliases()  # cy's ids were renumbered
    finally:
        server.close()
    monkeypatch.setenv("COOP_HOME", str(tmp_path / "another-device"))
    assert run_cli("memory", "migrate", "--from", postgres_url).exit_code == 0
    back = MemoryStore.open(str(tmp_path / "another-device" / "coop.db"))
    try:
        for (kind, number), text in made.items():  # the aliases came along: the first device's ids still work
            assert _named(back.user("ana"), kind, number)[0].text == text
    finally:
        back.close()


def test_m019_adds_the_alias_table_to_an_older_database_in_place(coop_home):
    from coop.memory.storage.database import open_database
    from coop.memory.storage.migrations import MIGRATIONS, apply_migrations, schema_version

    number = next(n for n, m in enumerate(MIGRATIONS, start=1) if m.name == "m019_id_aliases")
    db = open_database(str(coop_home / "old.db"), migrate=False)
    try:
        apply_migrations(db, MIGRATIONS[:number - 1])
        old = MemoryStore(db).user("ana")
        fact = old.facts.add("likes quiet mornings").fact_id
        assert apply_migrations(db, MIGRATIONS[:number]) == 1 and schema_version(db) == number
        memory = MemoryStore(db).user("ana")
        assert memory.get("fact", fact).text == "likes quiet mornings"  # the rows are kept
        memory.aliases.record("fact", fact + 100, fact, T)
        assert _named(memory, "fact", fact + 100)[0].item_id == fact
        memory.forget("fact", fact)
        assert memory.aliases.aliases() == []  # a forgotten item takes its aliases with it (the trigger)
    finally:
        db.close()
