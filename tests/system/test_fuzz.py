"""Bad input, fuzzed with hypothesis: search queries, fact texts, config files, import files, the model's JSON
replies and its tool calls. Nothing raises anything but a `CoopError` with a hint (and the model-facing parsers
and tools never raise at all: a bad reply is dropped, a bad tool call is an error result).

Each case calls the library directly (no process per case). How many cases a property gets comes from the
hypothesis profile (tests/conftest.py: a few dozen while developing, a few hundred in CI); the properties that
go through the CLI, several times costlier per case, get a share of that.
"""

from __future__ import annotations

import itertools
import json
import math
import zipfile
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from coop.config.loading import ExtractionConfig, ImportanceConfig, load_config
from coop.errors import CoopError
from coop.memory.growth.embedders import HashEmbedder

EMBEDDER = HashEmbedder(64)
# The profile's number of examples (see tests/conftest.py); SOME, for the costlier properties (a database
# transaction or a file import per example), half of it; CLI, for a CLI run per example, two fifths.
MANY = settings(deadline=None, suppress_health_check=list(HealthCheck))
SOME = settings(MANY, max_examples=max(10, settings().max_examples // 2))
CLI = settings(MANY, max_examples=max(10, settings().max_examples * 2 // 5))


def intact(memory) -> bool:
    """The store passes its own integrity check (SQLite's pragma; a Postgres store's `check()` has no error)."""
    if getattr(memory.db, "dialect", "sqlite") == "postgres":
        return all(finding.severity != "error" for finding in memory.backend.check())
    return memory.db.scalar("pragma integrity_check") == "ok"


def expect_coop_error(call, *args, **kwargs) -> Any:
    """Run `call`: it may succeed, or fail with a CoopError that has a message and a hint; nothing else."""
    try:
        return call(*args, **kwargs)
    except CoopError as exc:
        assert exc.message and exc.hint, (type(exc).__name__, exc.message, exc.hint)
        return exc


# Any text: every plane, control characters, lone surrogates (what `errors="surrogateescape"` gives for bad
# bytes), NUL, and the words and signs that mean something to FTS5, SQL, TOML, JSON or rich markup.
SPECIAL = st.sampled_from(['"', "'", "*", "-", ":", "^", "(", ")", "{", "}", "[", "]", "[/]", "[bold]", "AND",
                           "OR", "NOT", "NEAR", "NEAR(a b, 3)", "\\", "\x00", "\n", "\r", "\t", "\u200b", "\ufeff",
                           "\ud800", "\udcff", "🦉", "我住在北京", "東京タワー", "ไทย", "%", "_", ";--", "' OR 1=1 --",
                           "col:", "rowid", "\x1b[31m", "…", " "])
ANY_CHAR = st.characters(exclude_categories=())
TEXT = st.one_of(st.text(ANY_CHAR, max_size=80),
                 st.lists(st.one_of(SPECIAL, st.text(ANY_CHAR, max_size=12)), max_size=12).map("".join),
                 st.lists(st.one_of(SPECIAL, st.text(max_size=8)), max_size=40).map(" ".join))


@pytest.fixture
def seeded(memory):
    session = memory.sessions.start()
    for text in ("I keep bees in Lyon", "我住在北京", "the NEAR operator and \"quotes\"", "tea: green, hot"):
        memory.messages.add(session, "user", text)
        memory.facts.add(text)
    from coop.memory.growth.embedding import embed_pending

    embed_pending(memory, EMBEDDER)
    return memory


# --- search queries ------------------------------------------------------------------------------------------


def test_fuzzed_search_queries(seeded):
    from coop.memory.retrieval.search import search

    kinds = st.lists(st.sampled_from(["fact", "message", "summary"]), min_size=1, max_size=3, unique=True)

    @MANY
    @given(query=TEXT, limit=st.integers(1, 40), kinds=kinds, archived=st.booleans(),
           vector=st.booleans())
    def run(query, limit, kinds, archived, vector):
        result = expect_coop_error(search, seeded, query, embedder=EMBEDDER if vector else None, limit=limit,
                                   kinds=tuple(kinds), include_inactive=archived)
        if not isinstance(result, CoopError):
            assert len(result.hits) <= limit
            assert all(hit.kind in kinds for hit in result.hits)

    run()


def test_fuzzed_search_through_the_cli(seeded, run_cli):
    own = {item.ref for item in seeded.list_items(limit=1000, include_inactive=True)}
    limit = load_config().memory.search_limit

    @CLI
    @given(query=st.text(st.characters(exclude_categories=("Cs",)), max_size=40).filter(lambda q: "\x00" not in q))
    def run(query):
        result = run_cli("memory", "search", query, "--user", seeded.user_id, "--json")
        if result.exit_code == 0:
            hits = result.json()
            assert isinstance(hits, list) and len(hits) <= limit
            assert {hit["id"] for hit in hits} <= own  # the seeded items, nothing else
        else:  # coop's own error and hint, or click's usage error for a query that looks like an option
            assert result.exit_code == 2 and (("error:" in result.stderr and "hint:" in result.stderr)
                                              or ("Usage:" in result.stderr and query.startswith("-")))

    run()


@pytest.mark.parametrize("limit", [1000])
def test_a_search_limit_the_cli_accepts_works_with_vectors(seeded, limit):
    from coop.memory.retrieval.search import search

    result = expect_coop_error(search, seeded, "bees", embedder=EMBEDDER, limit=limit)
    assert not isinstance(result, CoopError) and result.hits


# --- fact texts ----------------------------------------------------------------------------------------------

IMPORTANCE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.just(0.5))


def test_fuzzed_fact_texts(memory):
    from coop.memory.growth.reconcile import Candidate, FactWriter

    writer = FactWriter(memory, ExtractionConfig(), embedder=EMBEDDER)
    keys = st.one_of(st.none(), TEXT)

    @MANY
    @given(text=st.one_of(TEXT, st.integers(9990, 10010).map(lambda n: "word " * (n // 5) + "x" * (n % 5))),
           category=TEXT, key=keys,
           importance=IMPORTANCE, source=st.sampled_from(["user", "model", "extraction", "bogus"]),
           pipeline=st.booleans())
    def run(text, category, key, importance, source, pipeline):
        if pipeline:
            expect_coop_error(writer.write, Candidate(text, category=category, key=key, importance=importance
                                                      if isinstance(importance, float) and math.isfinite(importance)
                                                      else 0.5, source=source if source != "bogus" else "user"))
        else:
            outcome = expect_coop_error(memory.facts.add, text, category=category, key=key, importance=importance,
                                        source=source)
            if not isinstance(outcome, CoopError):
                from coop.memory.text import content_hash

                stored = memory.get("fact", outcome.fact_id)
                if outcome.action == "MERGE":  # the same fact, told again
                    assert content_hash(stored.text) == content_hash(text)
                else:
                    assert stored.text == text.strip()

    run()
    assert intact(memory)


def test_fuzzed_fact_texts_through_the_cli(memory, run_cli):
    @CLI
    @given(text=st.text(st.characters(exclude_categories=("Cs",)), max_size=60).filter(lambda t: "\x00" not in t),
           category=st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=10)
           .filter(lambda t: "\x00" not in t and not t.startswith("-")))
    def run(text, category):
        result = run_cli("memory", "add", text, "--category", category, "--user", memory.user_id, "--json")
        if result.exit_code == 0:
            assert result.json()["id"].startswith("f")
        else:
            assert result.exit_code == 2 and (("error:" in result.stderr and "hint:" in result.stderr)
                                              or ("Usage:" in result.stderr and text.startswith("-")))

    run()


# --- config files --------------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return "nan"
        if isinstance(value, float) and math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def _real_keys() -> list[str]:
    from coop.config.loading import iter_keys

    return [dotted for dotted, _ in iter_keys()]


SCALARS = st.one_of(st.booleans(), st.integers(-10**12, 10**12), st.floats(), st.text(max_size=20), st.just(""),
                    st.just("hash"), st.just(":memory:"))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=6)


@st.composite
def config_documents(draw) -> str:
    keys = _real_keys()
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        dotted = draw(st.one_of(st.sampled_from(keys), st.sampled_from(keys).map(lambda k: k + "x"),
                                st.text("abcdefghij._", min_size=1, max_size=15)))
        section, _, key = dotted.rpartition(".")
        value = draw(VALUES)
        if draw(st.booleans()) and section:
            lines.append(f"[{section}]")
        lines.append(f"{json.dumps(key or 'k')} = {_toml_value(value)}")
    if draw(st.booleans()):
        lines.append(draw(st.text(ANY_CHAR, max_size=30)))  # arbitrary text, often not TOML
    return "\n".join(lines)


def test_fuzzed_config_files(tmp_path):
    path = tmp_path / "coop.toml"

    @MANY
    @given(document=st.one_of(config_documents(), st.text(ANY_CHAR, max_size=200)),
           raw=st.one_of(st.none(), st.binary(max_size=200)))
    def run(document, raw):
        if raw is not None:
            path.write_bytes(raw)
        else:
            path.write_bytes(document.encode("utf-8", "surrogatepass"))
        expect_coop_error(load_config, path)

    run()


def test_fuzzed_config_environment():
    keys = _real_keys()

    @MANY
    @given(env=st.dictionaries(st.sampled_from(keys).map(lambda k: "COOP_" + k.replace(".", "_").upper()),
                               st.one_of(st.text(max_size=15), st.sampled_from(["1", "0", "true", "nan", "-1",
                                                                                "1e999", " 5 ", "hash"])),
                               max_size=4))
    def run(env):
        expect_coop_error(load_config, None, env=env)

    run()


# --- import files --------------------------------------------------------------------------------------------

JSONISH = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10**15, 10**15), st.floats(allow_nan=False),
                                 st.text(max_size=15)),
                       lambda inner: st.one_of(st.lists(inner, max_size=4),
                                               st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                       max_leaves=10)
ODD = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(), st.text(max_size=4),
                st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.none(), max_size=2))
MAYBE = lambda strategy: st.one_of(strategy, strategy, ODD)  # noqa: E731 - mostly the right shape, else anything
TIMES = st.one_of(st.none(), st.floats(allow_nan=False), st.integers(-10**12, 10**12),
                  st.sampled_from(["2024-03-01T10:00:00Z", "2024-13-45T99:00:00", "yesterday", "", "1700000000"]))


@st.composite
def chatgpt_conversation(draw) -> Any:
    ids = draw(st.lists(st.text("abcdef", min_size=1, max_size=2), min_size=1, max_size=4, unique=True))
    mapping = {}
    for i, node in enumerate(ids):
        parent = ids[i - 1] if i and draw(st.booleans()) else draw(MAYBE(st.sampled_from(ids)))
        message = draw(st.one_of(st.none(), JSONISH, st.fixed_dictionaries({
            "id": MAYBE(st.text(max_size=5)),
            "author": MAYBE(st.fixed_dictionaries({"role": MAYBE(st.sampled_from(
                ["user", "assistant", "system", "tool", "critic"]))})),
            "create_time": TIMES,
            "content": MAYBE(st.fixed_dictionaries({
                "content_type": MAYBE(st.sampled_from(["text", "multimodal_text", "code", "tether_quote"])),
                "parts": MAYBE(st.lists(st.one_of(st.text(max_size=20), JSONISH), max_size=3)),
                "text": MAYBE(st.text(max_size=10))})),
            "metadata": JSONISH})))
        mapping[node] = draw(MAYBE(st.fixed_dictionaries({
            "id": st.just(node), "message": st.just(message), "parent": st.just(parent),
            "children": MAYBE(st.lists(st.sampled_from(ids), max_size=3))})))
    return draw(MAYBE(st.fixed_dictionaries({
        "title": MAYBE(st.text(max_size=10)), "create_time": TIMES, "update_time": TIMES,
        "mapping": MAYBE(st.just(mapping)), "current_node": MAYBE(st.sampled_from(ids)),
        "conversation_id": MAYBE(st.text(max_size=6)), "id": MAYBE(st.text(max_size=6))})))


@st.composite
def claude_conversation(draw) -> Any:
    messages = draw(st.lists(MAYBE(st.fixed_dictionaries({
        "uuid": MAYBE(st.text(max_size=6)), "sender": MAYBE(st.sampled_from(["human", "assistant", "narrator"])),
        "text": MAYBE(st.text(max_size=30)), "created_at": TIMES,
        "content": MAYBE(st.lists(MAYBE(st.fixed_dictionaries({"type": MAYBE(st.sampled_from(["text", "tool_use"])),
                                                                 "text": MAYBE(st.text(max_size=10))})), max_size=3)),
        "attachments": MAYBE(st.lists(MAYBE(st.fixed_dictionaries({
            "file_name": MAYBE(st.text(max_size=8)), "extracted_content": MAYBE(st.text(max_size=20))})), max_size=2)),
    })), max_size=5))
    return draw(MAYBE(st.fixed_dictionaries({
        "uuid": MAYBE(st.text(max_size=6)), "name": MAYBE(st.text(max_size=10)), "created_at": TIMES,
        "updated_at": TIMES, "chat_messages": MAYBE(st.just(messages))})))


@st.composite
def coop_export(draw) -> str:
    header = draw(MAYBE(st.fixed_dictionaries({"format": MAYBE(st.just("coop")), "version": MAYBE(st.integers(0, 3)),
                                               "user": MAYBE(st.text(max_size=5)), "records": JSONISH})))
    ids = st.integers(-3, 6)
    record = st.one_of(
        st.fixed_dictionaries({"type": st.just("session"), "id": MAYBE(ids), "title": MAYBE(st.text(max_size=8)),
                               "started_at": TIMES, "ended_at": TIMES, "external_id": MAYBE(st.text(max_size=4))}),
        st.fixed_dictionaries({"type": st.just("message"), "id": MAYBE(ids), "session_id": MAYBE(ids),
                               "role": MAYBE(st.sampled_from(["user", "assistant", "tool", "x"])),
                               "content": MAYBE(TEXT), "created_at": TIMES, "importance": MAYBE(st.floats()),
                               "external_id": MAYBE(st.text(max_size=4))}),
        st.fixed_dictionaries({"type": st.just("fact"), "id": MAYBE(ids), "category": MAYBE(st.text(max_size=6)),
                               "key": MAYBE(st.text(max_size=5)), "value": MAYBE(TEXT),
                               "source": MAYBE(st.sampled_from(["user", "import", "model", "nope"])),
                               "importance": MAYBE(st.floats()), "mention_count": MAYBE(st.integers(-2, 5)),
                               "created_at": TIMES, "updated_at": TIMES, "superseded_by": MAYBE(ids),
                               "superseded_at": TIMES, "archived_at": TIMES}),
        st.fixed_dictionaries({"type": st.just("fact_history"), "fact_id": MAYBE(ids),
                               "action": MAYBE(st.sampled_from(["ADD", "MERGE", "FORGET", "BOGUS"])),
                               "old_value": MAYBE(st.text(max_size=5)), "new_value": MAYBE(st.text(max_size=5)),
                               "created_at": TIMES}),
        st.fixed_dictionaries({"type": st.just("summary"), "id": MAYBE(ids), "session_id": MAYBE(ids),
                               "span_start_id": MAYBE(ids), "span_end_id": MAYBE(ids), "text": MAYBE(TEXT),
                               "created_at": TIMES}),
        st.fixed_dictionaries({"type": st.just("forgotten"), "kind": MAYBE(st.sampled_from(["fact", "message"])),
                               "content_hash": MAYBE(st.text(max_size=8)), "forgotten_at": TIMES}),
        JSONISH)
    lines = [json.dumps(header)] + [json.dumps(r) for r in draw(st.lists(record, max_size=8))]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.text(max_size=20)))  # a line that is not JSON
    return "\n".join(lines) + "\n"


def test_fuzzed_import_files(memory, tmp_path):
    from coop.memory.transfer.imports import import_file

    weights = ImportanceConfig()
    documents = st.one_of(
        st.lists(chatgpt_conversation(), max_size=4).map(json.dumps),
        st.lists(claude_conversation(), max_size=4).map(json.dumps),
        coop_export(),
        JSONISH.map(json.dumps),
        st.text(ANY_CHAR, max_size=100).map(lambda t: t.encode("utf-8", "surrogatepass").decode("utf-8", "replace")),
    )

    valid = json.dumps([{"uuid": "c1", "name": "t", "chat_messages": [{"uuid": "m1", "sender": "human",
                                                                       "text": "hello"}]}])

    @SOME
    @example(document=valid, raw=None, fmt="auto", container="json")
    @given(document=documents, raw=st.one_of(st.none(), st.binary(max_size=100)),
           fmt=st.sampled_from(["auto", "auto", "coop", "chatgpt", "claude", "bogus"]),
           container=st.sampled_from(["json", "jsonl", "zip", "dir"]))
    def run(document, raw, fmt, container):
        data = raw if raw is not None else document.encode("utf-8")
        for old in tmp_path.glob("in*"):
            if old.is_dir():
                for inner in old.iterdir():
                    inner.unlink()
                old.rmdir()
            else:
                old.unlink()
        if container == "zip":
            path = tmp_path / "in.zip"
            with zipfile.ZipFile(path, "w") as archive:
                archive.writestr("conversations.json", data)
        elif container == "dir":
            path = tmp_path / "in_dir"
            path.mkdir()
            (path / "conversations.json").write_bytes(data)
        else:
            path = tmp_path / f"in.{container}"
            path.write_bytes(data)
        report = expect_coop_error(import_file, memory, path, fmt, importance=weights)
        if not isinstance(report, CoopError):
            assert all(problem.where and problem.reason for problem in report.problems)

    run()
    assert intact(memory)
    stats = memory.stats()
    assert stats["messages"] > 0 and stats["sessions"] > 0  # the fuzz did reach the writing code


# --- the model's replies -------------------------------------------------------------------------------------

# The notes of the pointing call (`growth/pointing.py`), mostly of the right shape with any field wrong: clause ids
# that exist, do not or are not ids; enums and garbage; values that rest on the message, do not, or are not text.
CLAUSE_IDS = st.one_of(st.lists(st.sampled_from(["c1", "c2", "c99", "c0", "", "1", "C1", " c1 "]), max_size=5),
                       st.sampled_from(["c1", "c2"]), st.lists(st.text(max_size=4), max_size=3))
VALUES = st.one_of(TEXT, st.sampled_from(["Lives in Paris", "Moved to Paris", "Paris", "Lives in Lyon",
                                          "Lives in Paris since 2019", "Does not live in Paris", "<value>",
                                          "Vit à Paris", "パリに住んでいる", "Lives in Paris?", ""]))
NOTE_OBJECTS = st.fixed_dictionaries({
    "clauses": MAYBE(CLAUSE_IDS),
    "kind": MAYBE(st.one_of(st.sampled_from(["fact", "instruction", "FACT", "rule"]), TEXT)),
    "topic": MAYBE(st.one_of(st.sampled_from(["home_city", "pet", "hobby", "answer_language", "instruction", "other",
                                               "city", ""]), TEXT)),
    "about": MAYBE(st.one_of(st.sampled_from(["user", "sister Ana", "me", "", "Ana"]), TEXT)),
    "polarity": MAYBE(st.sampled_from(["holds", "no_longer", "never", "NO_LONGER", "maybe", ""])),
    "modality": MAYBE(st.sampled_from(["stated", "planned", "considering", "asked", "hypothetical", "reported",
                                       "joke", "Stated", "sure", ""])),
    "value": MAYBE(VALUES)})
CHANGE_OBJECTS = st.fixed_dictionaries({"new": MAYBE(st.one_of(st.sampled_from(["n1", "n2", "n0", "n-1", "n²", "x"]),
                                                                st.text(max_size=4).map(lambda t: "n" + t))),
                                        "replaces": MAYBE(st.one_of(st.none(), st.sampled_from(["k1", "k2", "k9"]),
                                                                    st.integers(-5, 50), st.text(max_size=4)))})
REPLIES = st.one_of(
    st.fixed_dictionaries({"notes": MAYBE(st.lists(MAYBE(NOTE_OBJECTS), max_size=12))}).map(json.dumps),
    st.lists(NOTE_OBJECTS, max_size=8).map(json.dumps),
    st.fixed_dictionaries({"changes": MAYBE(st.lists(MAYBE(CHANGE_OBJECTS), max_size=4))}).map(json.dumps),
    st.fixed_dictionaries({"summary": MAYBE(TEXT), "notes": MAYBE(st.lists(MAYBE(NOTE_OBJECTS), max_size=4))})
    .map(json.dumps),
    JSONISH.map(json.dumps),
    TEXT,
    st.tuples(TEXT, JSONISH.map(json.dumps), TEXT).map(lambda t: f"{t[0]}\n```json\n{t[1]}\n```\n{t[2]}"),
)


def test_fuzzed_notes_and_changes_replies(memory):
    """Any reply to the pointing call and to the one question about changes: nothing raises; what is kept rests on
    the message (its words, no number it does not say); a fact of a category no topic files into never changes."""
    from coop.memory.growth.changes import model_asker, read_changes
    from coop.memory.growth.extract import ModelReplyError, extract_facts
    from coop.memory.growth.pointing import parse_notes
    from coop.memory.growth.reconcile import Candidate, FactWriter
    from coop.memory.language.terms import numbers

    said = "I moved to Paris, and I love it."
    memory.facts.add("Lives in Lyon", category="location", key="city")
    kept = memory.facts.add("Keeps three beehives", category="garden").fact_id
    labels = {"k1": kept, "k2": kept + 100}
    rounds = itertools.count()

    moved = {"clauses": ["c1"], "kind": "fact", "topic": "home_city", "about": "user", "polarity": "holds",
             "modality": "stated", "value": "Moved to Paris"}

    @MANY
    @given(reply=REPLIES, changes=REPLIES, limit=st.integers(0, 6))
    @example(reply=json.dumps({"notes": [moved, {**moved, "topic": "hobby", "value": "Moved to Paris, loves it"}]}),
             changes=json.dumps({"changes": [{"new": "n1", "replaces": "k1"}]}), limit=3)  # both kept
    @example(reply="{}", changes=json.dumps({"changes": [{"new": "n²", "replaces": "k1"}]}), limit=1)  # "²".isdigit()
    def run(reply, changes, limit):
        for parse in (lambda: parse_notes(reply, limit), lambda: read_changes(changes, 2, labels)):
            try:
                parse()
            except ModelReplyError:
                pass
        candidates = extract_facts(lambda messages: reply, said, limit)
        assert len(candidates) <= limit
        for candidate in candidates:
            assert candidate.evidence and set(candidate.evidence.split()) <= set(said.split())
            assert numbers(candidate.value, "en") <= numbers(said, "en")
        # a new amount of a known hobby: the table cannot decide, so the fuzzed answer to the question is read
        times = 10 + 2 * next(rounds)
        memory.facts.add(f"Visits Paris {times} times a year", category="hobbies")
        writer = FactWriter(memory, ExtractionConfig(), embedder=EMBEDDER, ask=model_asker(lambda messages: changes))
        for plan in writer.plan_exchange(candidates + [
                Candidate("Lives in Paris", category="location", key="city", language="en"),
                Candidate(f"Visits Paris {times + 1} times a year", category="hobbies", language="en")], said):
            expect_coop_error(writer.apply, plan)
        assert memory.facts.is_active(kept)

    run()
    assert intact(memory)


def test_fuzzed_consolidation_replies_are_all_or_nothing(memory):
    from coop.memory.growth.consolidate import consolidate
    from coop.memory.growth.reconcile import FactWriter

    config = load_config()

    @SOME
    @given(reply=REPLIES)
    def run(reply):
        session = memory.sessions.start()
        for i in range(2):
            memory.messages.add(session, "user" if i == 0 else "assistant", f"message {i}")
        memory.sessions.end(session)
        before = memory.db.scalar("SELECT count(*) FROM summaries")
        facts_before = memory.db.scalar("SELECT count(*) FROM fact_history")
        report = consolidate(memory, config, lambda messages: reply,
                             FactWriter(memory, config.memory.extraction, embedder=EMBEDDER),
                             session_id=session, ended=True)
        after = memory.db.scalar("SELECT count(*) FROM summaries")
        pending = memory.db.scalar("SELECT count(*) FROM messages WHERE consolidated_at IS NULL AND session_id = $1",
                                   (session,))
        if report.errors:  # nothing of the span was written
            assert (report.spans, after, pending) == (0, before, 2)
            assert memory.db.scalar("SELECT count(*) FROM fact_history") == facts_before
        else:  # done: with a summary, or none when the model said there was nothing worth one
            assert (report.spans, after - before, pending) == (1, len(report.summaries), 0)

    run()


TOOL_ARGS = st.one_of(
    st.fixed_dictionaries({}, optional={"query": MAYBE(TEXT), "limit": MAYBE(st.integers(-10**6, 10**6)),
                                        "kind": MAYBE(st.sampled_from(["fact", "message", "summary", "x"])),
                                        "id": MAYBE(st.one_of(st.sampled_from(["f1", "m1", "s1", "f999"]), TEXT)),
                                        "before": MAYBE(st.integers(-10**6, 10**6)),
                                        "after": MAYBE(st.integers(-10**6, 10**6)),
                                        "text": MAYBE(TEXT), "category": MAYBE(TEXT), "key": MAYBE(TEXT),
                                        "reason": MAYBE(TEXT), "extra": JSONISH}).map(json.dumps),
    JSONISH.map(json.dumps),
    TEXT,
)


def test_fuzzed_tool_calls_never_raise(seeded, scripted):
    from coop.chat.tools import MAX_RESULT_CHARS, TOOL_NAMES
    from coop.config.loading import apply_overrides

    config = apply_overrides(load_config(), {"model.name": "openai/test-model",
                                             "memory.extraction.enabled": False})
    session = scripted.session(seeded, config, embedder=lambda: EMBEDDER)
    answers = iter([True, False] * 10_000)
    session.tools.confirm = lambda question: next(answers)

    @MANY
    @given(name=st.one_of(st.sampled_from(sorted(TOOL_NAMES)), TEXT), arguments=TOOL_ARGS)
    def run(name, arguments):
        session.tools.start_turn()
        output = session.tools.run(name, arguments)
        assert len(output) <= MAX_RESULT_CHARS + 200
        assert isinstance(json.loads(output), dict)

    run()
    assert intact(seeded)
