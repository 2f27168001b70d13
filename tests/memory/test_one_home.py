"""One home per rule and setting (issue 28): a fact's slot is filed by one function whatever path writes it, a
weight fades with age by one function, retrieval's defaults are `[memory]`'s, and the cosine thresholds are the
embedder's (its profile), with a setting the user changed still winning."""

from __future__ import annotations

import json
import time
from dataclasses import fields, replace

import pytest

from coop.config.sections import ExtractionConfig, MemoryConfig
from coop.memory.embedder import DEFAULT_PROFILE, GENERIC, MINILM, EmbedderProfile, chosen, model_of, profile_of
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.reconcile import Candidate, FactWriter
from coop.memory.kinds import MAX_CATEGORY_CHARS, MAX_KEY_CHARS, decayed, fact_slot
from coop.memory.retrieval.settings import CONFIG, PROFILED, RetrievalSettings, prompt_word_floor
from coop.memory.slots import TOPICS, slot_for

LONG_CATEGORY = "Z" * 150  # no alias, no slot: only the cut applies
LONG_KEY = "K" * 250
CUT = ("z" * MAX_CATEGORY_CHARS, "k" * MAX_KEY_CHARS)


def test_fact_slot_trims_lowers_and_cuts_at_the_stored_limits():
    assert fact_slot(LONG_CATEGORY, LONG_KEY) == CUT
    assert fact_slot("  Location ", " Home_City ") == ("location", "home_city")
    assert fact_slot("", "  ") == ("general", None)
    assert fact_slot(None, None) == ("general", None)
    assert fact_slot(fact_slot(LONG_CATEGORY, LONG_KEY)[0], CUT[1]) == CUT  # filing twice changes nothing


def _stored(memory, text: str) -> tuple[str | None, str | None]:
    [fact] = [f for f in memory.facts.active() if f.text == text]
    return fact.category, fact.key


def test_a_long_category_and_key_are_cut_alike_by_storage_and_the_write_pipeline(memory):
    memory.facts.add("Plays the theremin", category=LONG_CATEGORY, key=LONG_KEY)
    assert _stored(memory, "Plays the theremin") == CUT
    FactWriter(memory, ExtractionConfig()).write(Candidate("Plays the cello on Sundays", category=LONG_CATEGORY,
                                                           key=LONG_KEY, source="user"))
    assert _stored(memory, "Plays the cello on Sundays") == CUT


def test_extraction_files_by_the_table_within_the_stored_limits():
    """Extraction takes no category or key from the model: the topic's slot (`slots.slot_for`), for the user or for
    a person however long their name, is always within what storage keeps, so it needs no cut of its own."""
    for topic in TOPICS.values():
        for about in (None, "sister Ana", "x" * 500):
            category, key = slot_for(topic, about)
            assert fact_slot(category, key) == (category, key)


def test_coop_memory_add_cuts_where_the_write_pipeline_does(run_cli):
    result = run_cli("memory", "add", "Plays the oboe", "--user", "ana", "--category", LONG_CATEGORY,
                     "--key", LONG_KEY, "--json")
    assert result.exit_code == 0, result.stderr
    listed = run_cli("memory", "list", "--user", "ana", "--kind", "fact", "--json")
    [fact] = [f for f in json.loads(listed.stdout) if f["text"] == "Plays the oboe"]
    assert (fact["category"], fact["key"]) == CUT


def test_the_models_tool_cuts_where_every_writer_does(memory):
    from coop.chat.tools import MemoryTools

    tools = MemoryTools(memory, embedder=lambda: None, writer=lambda: FactWriter(memory, ExtractionConfig()),
                        confirm=lambda question: True)
    out = json.loads(tools.run("memory_write", json.dumps({"text": "Plays the harp", "category": LONG_CATEGORY,
                                                           "key": LONG_KEY})))
    assert "error" not in out, out
    assert _stored(memory, "Plays the harp") == CUT


def test_an_import_cuts_where_every_writer_does(tmp_path, run_cli):
    now = time.time()
    records = [{"format": "coop", "version": 1, "user": "sam", "exported_at": now, "records": 1},
               {"type": "fact", "id": 1, "category": LONG_CATEGORY, "key": LONG_KEY, "value": "Plays the lute",
                "source": "user", "importance": 0.5, "created_at": now}]
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    result = run_cli("memory", "import", str(path), "--user", "ana", "--json")
    assert result.exit_code == 0, result.stderr
    listed = run_cli("memory", "list", "--user", "ana", "--kind", "fact", "--json")
    [fact] = [f for f in json.loads(listed.stdout) if f["text"] == "Plays the lute"]
    assert (fact["category"], fact["key"]) == CUT


def test_decayed_halves_per_half_life_and_ignores_a_negative_age():
    assert decayed(0.8, 0.0, 30) == 0.8
    assert decayed(0.8, 30, 30) == pytest.approx(0.4)
    assert decayed(1.0, 90, 30) == pytest.approx(0.125)
    assert decayed(0.5, -5, 30) == 0.5  # a clock's skew is no age


def test_retention_archives_by_the_one_decay(memory):
    from coop.memory.growth.consolidate import apply_retention

    retention = MemoryConfig().retention
    fact = memory.facts.add("Tried a kumquat once", category="food", importance=0.2)
    created = memory.get("fact", fact.fact_id).created_at
    # the day its weight falls below the line, by `decayed`: archived then, not a day before
    days = next(d for d in range(1, 3650) if decayed(0.2, d, retention.half_life_days) < retention.archive_below)
    assert apply_retention(memory, retention, 0.85, now=created + (days - 1) * 86400) == 0
    assert apply_retention(memory, retention, 0.85, now=created + days * 86400) == 1


def test_every_retrieval_setting_has_one_default_and_it_is_the_configs():
    assert RetrievalSettings() == RetrievalSettings.defaults() == RetrievalSettings.from_config(MemoryConfig())
    config = MemoryConfig()
    built = RetrievalSettings.from_config(config)
    for f in fields(RetrievalSettings):
        assert f.default == getattr(built, f.name), f.name  # the field's own default is the config's
    # a changed config value reaches every field (none is left at a default of its own)
    changed = replace(config, similarity_floor=0.5, fusion="rrf", vector_weight=2.0, context_weight=0.5, rrf_k=7,
                      word_similarity_floor=0.1, bm25_floor=0.3, session_weight=0.4, agreement_weight=0.6,
                      neighbour_weight=0.7, assistant_weight=0.3)
    differing = {name for name, value in RetrievalSettings.from_config(changed).as_dict().items()
                 if value != getattr(built, name)}
    assert differing == {f.name for f in fields(RetrievalSettings)}


def test_the_configs_cosine_defaults_are_the_default_embedders_profile():
    config, extraction = MemoryConfig(), ExtractionConfig()
    assert DEFAULT_PROFILE is MINILM
    assert MINILM.similarity_floor == config.similarity_floor
    assert MINILM.word_similarity_floor == config.word_similarity_floor
    assert MINILM.prompt_word_similarity_floor == config.prompt_word_similarity_floor
    assert MINILM.dedup_threshold == extraction.dedup_threshold
    assert MINILM.related_threshold == extraction.related_threshold
    assert {key for _, key in PROFILED} <= {f.name for f in fields(EmbedderProfile)}


class _Embedder(HashEmbedder):
    """The hash embedder, with a profile of its own (as a new embedder may carry one)."""

    def __init__(self, profile: EmbedderProfile | None = None) -> None:
        super().__init__(16)
        if profile is not None:
            self.profile = profile


STRICT = EmbedderProfile("strict", similarity_floor=0.8, word_similarity_floor=0.5, prompt_word_similarity_floor=0.6,
                         fact_floor=0.7, continuity_floor=0.6, facts_disagree_cosine=0.6, past_disagree_cosine=0.9,
                         dedup_threshold=0.97, related_threshold=0.85)


def test_the_profile_is_the_embedders_own_else_its_models_else_generic():
    assert model_of("fastembed/sentence-transformers/all-MiniLM-L6-v2/384") == "sentence-transformers/all-MiniLM-L6-v2"
    minilm = type("E", (), {"id": "litellm/sentence-transformers/all-MiniLM-L6-v2/384"})()
    assert profile_of(minilm) is MINILM
    assert profile_of(_Embedder()) is GENERIC
    assert profile_of(_Embedder(STRICT)) is STRICT
    assert profile_of(None) is DEFAULT_PROFILE
    assert replace(GENERIC, name=MINILM.name) == MINILM  # the fallback keeps today's figures


def test_retrieval_and_growth_read_the_embedders_profile_unless_the_user_set_the_setting(memory):
    strict = _Embedder(STRICT)
    settings = RetrievalSettings.defaults().for_embedder(strict)
    assert (settings.floor, settings.word_floor) == (0.8, 0.5)
    assert RetrievalSettings.defaults().for_embedder(_Embedder()) == RetrievalSettings.defaults()
    mine = RetrievalSettings.from_config(replace(MemoryConfig(), similarity_floor=0.7)).for_embedder(strict)
    assert (mine.floor, mine.word_floor) == (0.7, 0.5)  # the user's floor wins; the other is the profile's
    assert RetrievalSettings.defaults().but(floor=None).for_embedder(strict).floor is None  # an ablation holds
    assert prompt_word_floor(MemoryConfig(), strict) == 0.6
    assert prompt_word_floor(replace(MemoryConfig(), prompt_word_similarity_floor=0.3), strict) == 0.3
    writer = FactWriter(memory, ExtractionConfig(), embedder=strict)
    assert writer.dedup_threshold == 0.97
    writer = FactWriter(memory, replace(ExtractionConfig(), dedup_threshold=0.95), embedder=strict)
    assert writer.dedup_threshold == 0.95  # the user's setting wins
    assert chosen(CONFIG.similarity_floor, CONFIG.similarity_floor, 0.1) == 0.1


def test_recall_uses_the_profiles_fact_floor(memory):
    """A fact near the turn is recalled by relevance under the generic profile; under one whose floors are
    above every cosine (search's and the fact floor), it is not (it stays in the profile)."""
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.retrieval.turn import turn_context

    fact = memory.facts.add("Keeps bees on the roof", category="hobbies", importance=0.3).fact_id
    generic = _Embedder()  # above any cosine: neither search nor the fact floor lets it through
    strict = _Embedder(replace(STRICT, fact_floor=1.01, similarity_floor=1.01, word_similarity_floor=1.01))
    embed_pending(memory, generic)
    cfg = MemoryConfig()

    def reasons(embedder) -> dict[int, str]:
        ctx = turn_context(memory, "Keeps bees on the roof", cfg=cfg, embedder=embedder)
        return {r.item.item_id: r.reason for r in ctx.prompt.recalled if r.item.kind == "fact"}

    assert reasons(generic).get(fact) == "relevance"
    assert reasons(strict).get(fact) != "relevance"
