"""bench/field.py and its three readers (longmemeval.py, prefeval.py, locomo_plus.py): tiny records written here in
each data set's shape become the cases the benchmarks score (gold turns and sessions, dates as given, roles), a
quick run takes every type in turn, and the figures count what the rows hold. One case also goes through coop's
write path and turn with the hash embedder, to check that what the prompt shows maps back to the data's keys."""

from __future__ import annotations

import gzip
import json
from datetime import datetime

import pytest

from tests.bench._bench import load_bench


def _field():
    return load_bench("field")


def _lme_question(qid="q1", qtype="knowledge-update"):
    return {
        "question_id": qid, "question_type": qtype, "question": "Which bike do I ride now?", "answer": "a red one",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["filler_1", "answer_b", "answer_a"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 08:00", "2023/05/10 (Wed) 08:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "Tell me about tides."}, {"role": "assistant", "content": "The Moon."}],
            [{"role": "user", "content": "I swapped my blue bike for a red one.", "has_answer": True},
             {"role": "assistant", "content": "Enjoy the red bike.", "has_answer": False}],
            [{"role": "user", "content": "Any tips for a blue bike?", "has_answer": False},
             {"role": "assistant", "content": "You ride a blue bike, oil its chain.", "has_answer": True},
             {"role": "user", "content": "   "}],
        ],
        "answer_session_ids": ["answer_a", "answer_b"], "abstention": False,
    }


def test_longmemeval_reader_keeps_dates_as_given_and_splits_gold_by_role():
    lme = load_bench("longmemeval")
    case = lme.read_question(_lme_question())
    assert [s.key for s in case.history] == ["filler_1", "answer_b", "answer_a"]  # not re-sorted
    assert case.history[1].started == datetime(2023, 5, 20, 8, 0).timestamp()
    assert case.asked_at == datetime(2023, 6, 1, 10, 0).timestamp()
    assert case.turns["turn-user"] == {"answer_b#0"}
    assert case.turns["turn-all"] == {"answer_b#0", "answer_a#1"}
    assert case.sessions["session"] == {"answer_b"}  # answer_a holds no user evidence turn
    assert case.sessions["evidence sessions"] == {"answer_a", "answer_b"}
    assert case.history[2].messages[1].role == "assistant"


def test_longmemeval_load_leaves_abstention_out(tmp_path):
    lme = load_bench("longmemeval")
    path = tmp_path / "lme.json.gz"
    gone = {**_lme_question("q2_abs"), "abstention": True}
    path.write_bytes(gzip.compress(json.dumps([_lme_question(), gone]).encode()))
    assert [c.id for c in lme.load(path)] == ["q1"]


def test_prefeval_reader_builds_conversation_n_and_asks_a_day_later():
    pe = load_bench("prefeval")
    item = {"id": "explicit/t/000", "form": "explicit", "question": "Where should I eat tonight?",
            "preference_messages": [{"id": "p1", "role": "user", "content": "I never eat fish.", "pref_turn": True}]}
    filler = [{"id": f"d{i:03d}", "role": "user" if i % 2 else "assistant", "content": f"filler {i}"}
              for i in range(1, 41)]
    case = pe.read_item(item, filler, 10)
    messages = case.history[0].messages
    assert len(case.history) == 1 and len(messages) == 21
    assert [m.key for m in messages[:2]] == ["pref:p1", "filler:d001"]
    assert case.turns == {"preference turn": {"pref:p1"}, "preference block": {"pref:p1"}}
    assert case.asked_at == pytest.approx(pe.START + 20 * _field().MESSAGE_GAP_SECONDS + pe.ASKED_AFTER)


def test_locomo_plus_reader_roles_dates_and_cue():
    lp = load_bench("locomo_plus")
    item = {"sample_id": "lp-1", "relation_type": "goal",
            "conversation": {"speaker_a": "Ana", "speaker_b": "Ben",
                             "session_2_date_time": "1:00 pm on 3 May, 2023",
                             "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Back home?"}],
                             "session_1_date_time": "9:00 am on 1 May, 2023",
                             "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "I want to run a marathon.",
                                            "blip_caption": "a pair of shoes"}]},
            "cue": {"dia_ids": ["D1:1"]}, "trigger": {"date_time": "9:00 am on 1 June, 2023", "query": "My knees!"}}
    case = lp.read_item(item)
    assert [s.key for s in case.history] == ["session_1", "session_2"]
    first, second = case.history[0].messages[0], case.history[1].messages[0]
    assert (first.role, second.role) == ("user", "assistant")
    assert first.text == "Ana: I want to run a marathon. [image: a pair of shoes]"
    assert case.turns == {"cue": {"D1:1"}} and case.question == "My knees!"
    assert case.asked_at == datetime(2023, 6, 1, 9, 0).timestamp()


def test_a_quick_run_takes_every_group_in_turn():
    field = _field()
    cases = [field.Case(f"{g}{i}", g, "q", 0.0, []) for g in "bca" for i in range(3)]
    assert [c.id for c in field.stratified(cases, 4)] == ["a0", "b0", "c0", "a1"]
    assert len(field.stratified(cases, None)) == 9


def test_figures_count_what_the_rows_hold():
    field = _field()
    gold = field.Case("x", "g", "q", 0.0, [], turns={"t": frozenset({"m3"})}, sessions={"s": frozenset({"S2"})})
    none = field.Case("y", "g", "q", 0.0, [], turns={"t": frozenset()}, sessions={"s": frozenset()})
    row = field.Row(gold, ["m1", None, "m2", "m4", "m5", "m3"], ["S1", "S2"], ["m3"], {"m3": "S2"}, 100, 1.0, 2.0,
                    3.0)
    skipped = field.Row(none, [], [], [], {}, 0, 1.0, 2.0, 3.0)
    t = field.level_figures([row, skipped], "t")
    assert t == {"n": 1, "R_any@5": 0.0, "R_any@10": 1.0, "prompt": 1.0, "cut": 0.0}
    s = field.level_figures([row, skipped], "s")
    assert s == {"n": 1, "R_any@5": 1.0, "R_any@10": 1.0, "prompt": 1.0, "prompt_all": 1.0}


def test_a_case_goes_through_coops_write_path_and_turn(tmp_path):
    field, lme = _field(), load_bench("longmemeval")
    from common import Stores, load_embedder

    case = lme.read_question(_lme_question())
    with Stores(directory=tmp_path) as stores:
        [row] = field.run([case], load_embedder("hash"), config=field.config_with({}), stores=stores)
    keys = {m.key for s in case.history for m in s.messages}
    assert "answer_a#2" not in row.shown + row.searched  # the blank message is skipped, as the importer skips it
    assert set(row.shown) <= keys and set(row.searched) - {None} <= keys
    assert all(row.session_of[k] == k.split("#")[0] for k in row.shown)
    assert set(row.searched_sessions) <= {s.key for s in case.history}
    assert row.memory_tokens >= 0 and row.ingest_s > 0


def test_the_texts_a_bench_embeds_ahead_are_the_texts_the_ingest_asks_for(tmp_path):
    """`stored_texts` (what the vector cache fetches ahead, and what the throughput figure counts) is exactly what
    coop's embedding job asks the model for: short messages whole and by sentence, a long one by sentence only."""
    field, lme = _field(), load_bench("longmemeval")
    from common import Stores, load_embedder

    raw = _lme_question()
    story = " ".join(f"On day {i} we sailed further along the coast and the wind held." for i in range(30))
    raw["haystack_sessions"][0][1]["content"] = story
    case = lme.read_question(raw)
    inner, asked = load_embedder("hash"), []

    class Recording:
        id, dims = inner.id, inner.dims

        def embed(self, texts):
            asked.extend(texts)
            return inner.embed(texts)

        def embed_query(self, text):
            return inner.embed_query(text)

    with Stores(directory=tmp_path) as stores:
        field.ingest(stores.new("c"), case, Recording())
    assert sorted(asked) == sorted(field.stored_texts(case)) and story not in asked


def test_with_a_model_facts_are_learned_from_the_history_and_their_turns_counted(tmp_path, scripted):
    """`--extract`: each user message goes through coop's extraction job; a fact the prompt shows counts for the
    turn it was learned from (`learned`), and a rerun asks the model nothing it asked before (`KeptReplies`)."""
    from common import Stores, load_embedder

    from coop.config.loading import load_config
    from coop.memory.growth.jobs import MemoryJobs
    from tests.notes import note, notes

    field = _field()
    said, asked = "I never eat mushrooms, they make me ill.", "From now on, always answer me in Spanish."
    history = [field.Session("s", 1_700_000_000.0, [
        field.Message("pref", "user", said), field.Message("ack", "assistant", "Noted."),
        field.Message("filler", "user", "What is the capital of Peru?"), field.Message("lima", "assistant", "Lima."),
        field.Message("order", "user", asked), field.Message("vale", "assistant", "Vale.")])]
    case = field.Case("c", "explicit", "Suggest a pasta dish for dinner.", 1_700_100_000.0, history,
                      turns={"preference turn": frozenset({"pref"})})

    def answer(request):
        message = str(request["messages"][-1]["content"]).split("THE USER'S MESSAGE", 1)[-1]
        found = notes(note("Never eats mushrooms", said, topic="food")) if "mushrooms" in message else \
            notes(note("Always answer me in Spanish", asked, kind="instruction", topic="answer_language")) \
            if "Spanish" in message else notes()
        return found(request)

    embedder, config = load_embedder("hash"), field.config_with({})
    replies = tmp_path / "replies.jsonl"
    for run in range(2):
        scripted.completions = [answer, answer, answer]
        kept = field.KeptReplies(scripted, replies)
        jobs = MemoryJobs(load_config(), kept, embedder=lambda: embedder)
        with Stores(directory=tmp_path / f"run{run}") as stores:
            [row] = field.run([case], embedder, config=config, stores=stores, jobs=jobs)
        assert row.learned == ["pref", "order"] and row.instructions == [["order"]]
        assert field.level_figures([row], "preference turn")["learned"] == 1.0
        assert field.instruction_figures([row]) == {  # an instruction on no gold turn: one the data's user never gave
            "instructions_mean": 1.0, "stray_instructions_mean": 1.0, "prompts_with_a_stray_instruction": 1.0}
        assert (kept.calls, kept.kept) == ((3, 0) if run == 0 else (0, 3))
        if run == 0:  # a run stopped in the middle of writing a reply loses that one, and nothing before it
            replies.write_text(replies.read_text(encoding="utf-8") + '{"request": "cut sh', encoding="utf-8")


def test_a_model_call_that_fails_costs_its_own_facts_only_and_is_counted(tmp_path, scripted):
    """`--extract` over hours of history: one extraction whose model call fails (a timeout) is counted and skipped,
    as the chat's worker skips it; the run goes on and learns from the messages after it."""
    from common import Stores, load_embedder

    from coop.config.loading import load_config
    from coop.errors import ErrorKind, ModelError
    from coop.memory.growth.jobs import MemoryJobs
    from tests.notes import note, notes

    field = _field()
    slow, said = "Tell me a long story about ships.", "I never eat mushrooms, they make me ill."
    history = [field.Session("s", 1_700_000_000.0, [
        field.Message("slow", "user", slow), field.Message("story", "assistant", "Once upon a time."),
        field.Message("pref", "user", said), field.Message("ack", "assistant", "Noted.")])]
    case = field.Case("c", "explicit", "Suggest a pasta dish for dinner.", 1_700_100_000.0, history,
                      turns={"preference turn": frozenset({"pref"})})

    def answer(request):
        message = str(request["messages"][-1]["content"]).split("THE USER'S MESSAGE", 1)[-1]
        if "ships" in message:
            raise ModelError("the model did not answer in 600 s", kind=ErrorKind.TIMEOUT)
        return notes(note("Never eats mushrooms", said, topic="food"))(request)

    embedder = load_embedder("hash")
    scripted.completion_default = answer
    jobs = MemoryJobs(load_config(), scripted, embedder=lambda: embedder)
    with Stores(directory=tmp_path) as stores:
        [row] = field.run([case], embedder, config=field.config_with({}), stores=stores, jobs=jobs)
    assert row.failed_jobs == 1 and row.learned == ["pref"]
    assert field.report([row])["failed_extraction_jobs"] == 1


def test_a_run_that_learned_nothing_reports_it_as_nothing():
    field = _field()
    gold = field.Case("x", "g", "q", 0.0, [], turns={"t": frozenset({"m3"})})
    row = field.Row(gold, [], [], [], {}, 0, 1.0, 2.0, 3.0, learned=[])
    assert field.level_figures([row], "t")["learned"] == 0.0
    assert "learned" not in field.level_figures([field.Row(gold, [], [], [], {}, 0, 1.0, 2.0, 3.0)], "t")
    assert field.instruction_figures([row]) == {} and field.instruction_figures(
        [field.Row(gold, [], [], [], {}, 0, 1.0, 2.0, 3.0, learned=[], instructions=[])])["instructions_mean"] == 0.0


def test_a_run_may_be_cut_to_named_cases(tmp_path, monkeypatch, capsys):
    """`--case ID` scores only the cases named (a sample of one conversation for `--extract`); a name the data does
    not hold is a usage error that names it, before anything runs."""
    lme = load_bench("longmemeval")
    from common import BenchError

    path = tmp_path / "lme.json.gz"
    path.write_bytes(gzip.compress(json.dumps([_lme_question("q1"), _lme_question("q2")]).encode()))
    monkeypatch.setenv("COOP_HOME", str(tmp_path / "home"))
    common = ["--data", str(path), "--embedder", "hash", "--cache", str(tmp_path / "v.sqlite"), "--json", "--quiet"]
    assert lme.main([*common, "--case", "q2"]) == 0
    assert json.loads(capsys.readouterr().out)["cases"] == 1
    with pytest.raises(BenchError):
        lme.main([*common, "--case", "q9"])
    assert "--case q9: no such case" in capsys.readouterr().err
