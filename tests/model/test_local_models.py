"""Local models that extract reliably: the fast model is asked for a JSON schema, then JSON-object mode, then by
the prompt alone, moving on when the provider refuses a mode or the reply is not usable JSON, and starting next
time at the mode that worked; Ollama is told the context window each request needs; a model that cannot give
JSON is counted and said once per session. The scripted server plays a small model failing in each way."""

from __future__ import annotations

import json
import logging

from coop.chat.session import ChatSession
from coop.config.loading import Config, apply_overrides
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.extract import extract_facts, extraction_request
from coop.memory.growth.jobs import MemoryJobs
from coop.model import llm
from coop.model.json_modes import MODES_FILE, ModeMemory, StructuredCompleter

_REQUEST = extraction_request("I am vegetarian", limit=5)
assert _REQUEST is not None
NOTES = _REQUEST[1]  # the schema of the notes of "I am vegetarian" (one clause, c1), at most five of them
GOOD = json.dumps({"notes": [{"clauses": ["c1"], "kind": "fact", "topic": "diet", "about": "user",
                              "polarity": "holds", "modality": "stated", "value": "Is vegetarian"}]})
ECHO = json.dumps(NOTES["schema"])  # what some small models return: the schema, not data
PROSE = "Sure! The user is vegetarian, which is a durable fact worth remembering."


def completer(server, tmp_path, name: str = "openai/small-local") -> StructuredCompleter:
    model = llm.LiteLLMModel(llm.ModelSettings(name, api_base=server.api_base))
    return StructuredCompleter(model, name, ModeMemory(tmp_path / MODES_FILE))


def modes_sent(server) -> list[str]:
    formats = [r["body"].get("response_format") for r in server.requests if r["body"]]
    return [(f or {}).get("type", "prompt") + ("_schema" if (f or {}).get("schema") else "") for f in formats]


def extract(complete) -> list[str]:
    return [c.value for c in extract_facts(complete, "I am vegetarian", 5)]


def test_a_json_schema_is_asked_for_first_and_remembered(openai_server, tmp_path):
    openai_server.background_replies = [GOOD, GOOD]
    complete = completer(openai_server, tmp_path)
    assert extract(complete) == ["Is vegetarian"]
    sent = openai_server.requests[0]["body"]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"]["required"] == ["notes"]
    assert json.loads((tmp_path / MODES_FILE).read_text()) == {"openai/small-local": "json_schema"}


def test_a_model_that_refuses_json_schema_falls_back_and_starts_there_next_time(openai_server, tmp_path):
    openai_server.background_replies = [{"status": 400, "message": "response_format json_schema is not supported"},
                                         GOOD, GOOD]
    first = completer(openai_server, tmp_path)
    assert extract(first) == ["Is vegetarian"]
    assert modes_sent(openai_server) == ["json_schema", "json_object_schema"]
    again = completer(openai_server, tmp_path)  # a new process: the remembered mode comes from the file
    assert extract(again) == ["Is vegetarian"]
    assert modes_sent(openai_server) == ["json_schema", "json_object_schema", "json_object_schema"]
    assert first.unusable == again.unusable == 0


def test_prose_in_json_mode_and_an_echoed_schema_move_on_to_asking_in_the_prompt(openai_server, tmp_path):
    openai_server.background_replies = [ECHO, PROSE, PROSE, GOOD]
    complete = completer(openai_server, tmp_path)
    assert extract(complete) == ["Is vegetarian"]
    assert modes_sent(openai_server) == ["json_schema", "json_object_schema", "json_object", "prompt"]
    system = openai_server.requests[-1]["body"]["messages"][0]["content"]
    assert "It must match this JSON Schema" in system and '"notes"' in system
    assert ModeMemory(tmp_path / MODES_FILE).get("openai/small-local") == "prompt"


def test_a_model_that_never_gives_json_is_counted_logged_and_told_once(openai_server, tmp_path, memory, caplog):
    openai_server.background_default = PROSE
    complete = completer(openai_server, tmp_path)
    with caplog.at_level(logging.WARNING, logger="coop"):
        assert extract(complete) == [] and extract(complete) == []
    assert complete.unusable == 2
    assert any("returned no usable notes JSON" in r.getMessage() and "openai/small-local" in r.getMessage()
               for r in caplog.records)
    session = ChatSession(memory, Config(), embedder=lambda: HashEmbedder(16),
                          jobs=MemoryJobs(Config(), complete, lambda: HashEmbedder(16)))
    notices = session.take_notices()
    assert notices == ["memory: the fast model returned no usable JSON 2 times; facts from those exchanges were "
                       "not learned; see coop.log"]
    extract(complete)
    assert session.take_notices() == []  # once a session


def test_a_model_error_that_is_not_about_the_mode_is_not_retried_in_other_modes(openai_server, tmp_path):
    openai_server.background_replies = [{"status": 401, "message": "invalid key"}]
    complete = completer(openai_server, tmp_path)
    try:
        extract(complete)
    except llm.ModelError as exc:
        assert exc.kind is llm.ErrorKind.AUTH
    else:
        raise AssertionError("an auth error must propagate")
    assert modes_sent(openai_server) == ["json_schema"]


def test_ollama_is_told_the_context_window_each_request_needs(openai_server, tmp_path):
    openai_server.background_replies = [GOOD, GOOD]
    model = llm.LiteLLMModel(llm.ModelSettings("ollama_chat/llama3.1", api_base=openai_server.url, num_ctx=8192))
    model.complete([{"role": "user", "content": "I am vegetarian"}], response_format={"type": "json_object"})
    model.complete([{"role": "user", "content": "word " * 9000}], response_format={"type": "json_object"})
    small, large = (r["body"]["options"]["num_ctx"] for r in openai_server.requests)
    assert small == 2048 and 4096 <= large <= 8192 and large % 1024 == 0
    assert all(r["path"] == "/api/chat" for r in openai_server.requests)


def test_a_prompt_beyond_num_ctx_loses_its_oldest_turns_not_its_system_prompt_or_question(openai_server, caplog):
    openai_server.replies = ["ok"]
    model = llm.LiteLLMModel(llm.ModelSettings("ollama_chat/llama3.1", api_base=openai_server.url, num_ctx=4096))
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"old turn {i} " + "filler " * 400}
               for i in range(10)]
    messages = [{"role": "system", "content": "You are coop, remember things."}, *history,
                {"role": "user", "content": "the question"}]
    with caplog.at_level(logging.WARNING, logger="coop"):
        list(model.stream(messages))
    body = openai_server.requests[0]["body"]
    sent = body["messages"]
    assert sent[0]["content"].startswith("You are coop") and sent[-1]["content"] == "the question"
    assert "old turn 0 " not in json.dumps(sent) and "old turn 9 " in json.dumps(sent)
    assert body["options"]["num_ctx"] == 4096
    assert any("does not fit model.num_ctx = 4096" in r.getMessage() for r in caplog.records)


def test_num_ctx_is_a_setting_and_zero_leaves_the_server_default(openai_server):
    config = apply_overrides(Config(), {"model.name": "ollama_chat/llama3.1", "model.api_base": openai_server.url})
    assert llm.model_settings(config).num_ctx == 8192
    openai_server.background_replies = [GOOD]
    off = apply_overrides(config, {"model.num_ctx": 0})
    llm.LiteLLMModel(llm.model_settings(off)).complete([{"role": "user", "content": "hi"}])
    assert "num_ctx" not in (openai_server.requests[0]["body"].get("options") or {})


LLAMA_CPP_REFUSAL = {"status": 500, "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', "
                                               "'type'), 'msg': \"Input should be 'text' or 'json_object'\"}]"}


def test_llama_cpp_refusing_json_schema_with_a_500_falls_through_at_once_and_is_remembered(openai_server, tmp_path):
    """llama-cpp-python answers json_schema with HTTP 500, which litellm calls InternalServerError: it is a refused
    mode, not a server failure, so it is asked once (never retried), the next mode follows at once, and the file
    remembers it even before that mode has answered."""
    seen: list[str] = []

    def after_refusal(body):
        seen.append(json.loads((tmp_path / MODES_FILE).read_text())["openai/small-local"])
        return GOOD

    openai_server.background_replies = [LLAMA_CPP_REFUSAL, after_refusal, GOOD]
    complete = completer(openai_server, tmp_path)
    assert extract(complete) == ["Is vegetarian"]
    assert modes_sent(openai_server) == ["json_schema", "json_object_schema"]
    assert seen == ["json_object_schema"]
    sent = openai_server.requests[1]["body"]["response_format"]
    assert sent == {"type": "json_object", "schema": NOTES["schema"]}  # the schema the server enforces
    assert extract(completer(openai_server, tmp_path)) == ["Is vegetarian"]  # a new process starts there
    assert modes_sent(openai_server)[-1] == "json_object_schema"


def test_a_500_that_is_not_about_the_mode_is_still_retried_as_a_server_failure(openai_server, tmp_path):
    openai_server.background_replies = [{"status": 500, "message": "out of memory"}, GOOD]
    assert extract(completer(openai_server, tmp_path)) == ["Is vegetarian"]
    assert modes_sent(openai_server) == ["json_schema", "json_schema"]  # the same mode, retried


def test_json_calls_are_made_at_temperature_zero_with_a_token_cap(openai_server, tmp_path):
    from coop.model.json_modes import JSON_MAX_TOKENS

    openai_server.background_replies = [PROSE, PROSE, PROSE, GOOD]
    extract(completer(openai_server, tmp_path))
    bodies = [r["body"] for r in openai_server.requests]
    assert len(bodies) == 4
    assert all(b["temperature"] == 0 and b["max_tokens"] == JSON_MAX_TOKENS for b in bodies)
    # the modes without a schema in the request carry it in the prompt
    assert ["It must match this JSON Schema" in b["messages"][0]["content"] for b in bodies] == \
        [False, False, True, True]


def test_comments_and_trailing_commas_in_the_reply_are_tolerated(openai_server, tmp_path):
    reply = """{"notes": [{"clauses": ["c1",], "kind": "fact", "topic": "diet", // high conf
        "about": "user", /* the user's own words */ "polarity": "holds", "modality": "stated",
        "value": "Is vegetarian",},],}"""
    openai_server.background_replies = [reply]
    complete = completer(openai_server, tmp_path)
    assert extract(complete) == ["Is vegetarian"]
    assert modes_sent(openai_server) == ["json_schema"] and complete.unusable == 0
