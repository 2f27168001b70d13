"""Two active facts that fill one single-valued slot are never both in the prompt as current: the current one (the
user's own over an MCP host's, then the one said last) stands for both, and the pair is flagged in `coop memory
list` and `coop memory review`, where "replaces" settles it with its history kept."""

from __future__ import annotations

import itertools
import json

import pytest

from coop.config.sections import MemoryConfig
from coop.memory.growth.embedding import embed_pending
from coop.memory.kinds import HOST
from coop.memory.retrieval.turn import turn_context
from coop.memory.slots import _ALIASES, host_key, slot_of, spellings

VALUES = ("Quillonbrae", "Varnholt", "Osterwyn", "Tamsk", "Dellacourt", "Brimwater")
CATEGORY = {"home_city": "location", "employer": "work", "occupation": "work", "diet": "diet",
            "partner": "family", "name": "identity", "answer_language": "instruction"}


def pairs_of_spellings():
    """(category, older key, newer key) for every slot with other names: each alias against the slot's own name,
    both ways round, and a host's account against the user's."""
    for slot, aliases in _ALIASES.items():
        for alias in aliases.split():
            yield CATEGORY[slot], slot, alias
            yield CATEGORY[slot], alias, slot
        yield CATEGORY[slot], slot, host_key(slot)


def turn(memory, text: str):
    embedder = _embedder()
    embed_pending(memory, embedder)
    return turn_context(memory, text, cfg=MemoryConfig(), embedder=embedder).prompt


def shown_facts(memory, text: str) -> list:
    return [r for r in turn(memory, text).recalled if r.item.kind == "fact"]


def _embedder():
    from coop.memory.growth.embedders import HashEmbedder

    return HashEmbedder(64)


def test_every_spelling_of_a_slot_is_that_slot_and_a_host_account_too():
    for category, older, newer in pairs_of_spellings():
        assert slot_of(category, older) == slot_of(category, newer) is not None
        assert {older, newer} <= set(spellings(slot_of(category, older)[1]))
    assert slot_of("location", None) is None
    assert slot_of("family", "ana.home_city") != slot_of("family", "home_city")  # a sister's city is hers


def test_two_values_of_one_slot_are_never_both_in_the_prompt_and_the_current_one_is_shown(store):
    """Property over every alias of every slot (and a host's account): whichever spelling came first, the prompt
    shows one value of the slot, the one said last by the user, and names the other as also held."""
    for n, (category, older_key, newer_key) in enumerate(pairs_of_spellings()):
        memory = store.user(f"person{n}")
        first, second = itertools.islice(itertools.cycle(VALUES), n % len(VALUES), n % len(VALUES) + 2)
        older = memory.facts.add(f"Holds {first}", category=category, key=older_key).fact_id
        newer = memory.facts.add(f"Holds {second}", category=category, key=newer_key,
                                 source=HOST if newer_key.startswith("host:") else "user").fact_id
        assert older != newer
        memory.facts.add("Keeps bees on the roof", category="hobbies")
        memory.facts.add("Grows tomatoes on the balcony", category="hobbies")
        prompt = turn(memory, f"Tell me about {first} and {second}")
        said = "\n".join(str(m["content"]) for m in prompt.messages)
        current, other = (first, second) if newer_key.startswith("host:") else (second, first)  # the user's first
        assert f"Holds {current}" in said and f"Holds {other}" not in said, (older_key, newer_key)
        facts = [r for r in prompt.recalled if r.item.kind == "fact"]
        if category != "instruction":  # (standing instructions are the preamble's, not recalled)
            in_slot = [r for r in facts if slot_of(r.item.category, r.item.key) == slot_of(category, older_key)]
            assert [r.item.item_id for r in in_slot] == [newer if current == second else older]
            assert f"f{older if current == second else newer}" in in_slot[0].note
        assert len([r for r in facts if r.item.category == "hobbies"]) == 2  # many-valued facts are never thinned


def test_a_slot_with_one_value_is_shown_as_it_is(memory):
    memory.facts.add("Holds Varnholt", category="location", key="home_city")
    facts = shown_facts(memory, "Varnholt")
    assert [r.note for r in facts if r.item.key == "home_city"] == [""]


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setattr("coop.cli.memory_review.on_terminal", lambda: True)


def _pair(memory) -> tuple[int, int]:
    """The user's Varnholt under an older spelling of the slot, said long ago and reviewed; Tamsk said since."""
    session = memory.sessions.start("talk")
    said = memory.messages.add(session, "user", "I live in Varnholt")
    older = memory.facts.add("Lives in Varnholt", category="location", key="city", source="extraction").fact_id
    memory.sources.link(older, [said], "I live in Varnholt")
    newer = memory.facts.add("Lives in Tamsk", category="location", key="home_city", source="extraction").fact_id
    memory.sources.mark_reviewed(memory.get("fact", newer).created_at + 1)  # both reviewed before
    return older, newer


def test_list_flags_both_facts_of_a_slot_and_says_which_one_is_current(memory, run_cli):
    older, newer = _pair(memory)
    memory.facts.add("Keeps bees on the roof", category="hobbies")
    rows = {row["id"]: row for row in json.loads(run_cli("memory", "list", "--user", "ana", "--json").stdout)}
    assert rows[f"f{older}"]["disagrees_with"] == [f"f{newer}"] and rows[f"f{older}"]["current"] is False
    assert rows[f"f{newer}"]["disagrees_with"] == [f"f{older}"] and rows[f"f{newer}"]["current"] is True
    assert all("disagrees_with" not in row for row in rows.values() if row["text"].startswith("Keeps"))
    shown = run_cli("memory", "list", "--user", "ana", env={"COLUMNS": "200"})
    line = next(line for line in shown.stdout.splitlines() if "Varnholt" in line)
    assert f"disagrees with f{newer}" in line and "review" in shown.stderr


def test_review_lists_a_pair_it_has_seen_and_replaces_offers_the_rival_keeping_history(memory, run_cli, terminal):
    older, newer = _pair(memory)
    listed = json.loads(run_cli("memory", "review", "--user", "ana", "--json").stdout)
    assert {row["id"] for row in listed} == {f"f{older}", f"f{newer}"}  # flagged, though reviewed before
    assert all("disagrees" in row["flags"] for row in listed)
    # the older comes first; skip it, then say the newer replaces it by taking the offered id (Enter)
    result = run_cli("memory", "review", "--user", "ana", input="s\nr\n\n", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert f"f{newer} replaces f{older}" in result.stdout
    old = memory.get("fact", older)
    assert old.superseded_by == newer and memory.facts.history(older)[-1].action == "SUPERSEDE"
    assert memory.sources.of_facts([older])  # its source message stays
    assert json.loads(run_cli("memory", "list", "--user", "ana", "--json").stdout)[0].get("disagrees_with") is None
    assert [r.item.item_id for r in shown_facts(memory, "Tamsk Varnholt") if r.item.category == "location"] \
        == [newer]


def test_the_user_replacing_a_hosts_account_takes_the_slot_not_the_hosts_mark(memory, run_cli):
    own = memory.facts.add("Lives in Varnholt", category="location", key="home_city").fact_id
    hosts = memory.facts.add("Lives in Tamsk", category="location", key=host_key("home_city"), source=HOST).fact_id
    result = run_cli("memory", "review", "--user", "ana", "--json")
    assert {row["id"] for row in json.loads(result.stdout)} >= {f"f{hosts}"}
    memory.facts.supersede(hosts, _fields("Lives in Varnholt"), reason="replaced by the user (review)")
    holder = memory.get("fact", own)
    assert holder.key == "home_city" and holder.superseded_at is None
    assert memory.get("fact", hosts).superseded_by == own
    assert json.loads(run_cli("memory", "list", "--user", "ana", "--json").stdout)[0].get("disagrees_with") is None


def test_a_hosts_account_the_user_endorses_takes_the_users_slot(memory):
    own = memory.facts.add("Lives in Varnholt", category="location", key="home_city").fact_id
    hosts = memory.facts.add("Lives in Tamsk", category="location", key=host_key("home_city"), source=HOST).fact_id
    memory.facts.supersede(own, _fields("Lives in Tamsk", source=HOST), reason="replaced by f (review)")
    assert memory.get("fact", hosts).key == "home_city" and memory.get("fact", own).superseded_by == hosts


def _fields(text: str, source: str = "user"):
    from coop.memory.storage.items import FactFields

    return FactFields.checked(text, category="location", source=source)
