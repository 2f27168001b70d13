"""`coop mcp` through the SDK's in-process client: every tool, the profile resource, the read-only default, bad
arguments as tool errors, and `memory_record` feeding extraction. (tests/mcp/test_mcp_stdio.py drives a real
`coop mcp` process over stdio.)"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from coop.config.loading import Config
from coop.mcp.server import WRITE_TOOLS, MemoryServer, build_server
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.jobs import MemoryJobs
from coop.memory.retrieval.settings import RetrievalSettings
from coop.memory.tools.registry import MAX_RESULT_CHARS
from tests.notes import note, notes
from tests.scripted_model import said_in

EMBEDDER = HashEmbedder(64)


def make_server(memory, *, allow_writes: bool = False, complete=None, worker=None) -> tuple[Any, MemoryServer]:
    config = Config()
    jobs = MemoryJobs(config, complete, lambda: EMBEDDER)
    core = MemoryServer(memory, jobs, lambda: EMBEDDER, allow_writes=allow_writes, worker=worker,
                        settings=RetrievalSettings.from_config(config.memory))  # as coop/cli/mcp.py wires it
    return build_server(core), core


def call(server, name: str, arguments: dict[str, Any] | None = None):
    async def go():
        async with Client(server) as client:
            return await client.call_tool(name, arguments or {})

    return anyio.run(go)


def text(result) -> str:
    return result.content[0].text


def seed(memory) -> dict[str, int]:
    from coop.memory.growth.embedding import embed_pending

    session = memory.sessions.start("trip")
    first = memory.messages.add(session, "user", "We are planning a trip to Lisbon in May")
    middle = memory.messages.add(session, "assistant", "Lisbon in May is warm; book the tram tour early")
    last = memory.messages.add(session, "user", "My sister Ana will come along")
    fact = memory.facts.add("Is vegetarian", category="diet").fact_id
    rule = memory.facts.add("Answer in short sentences", category="instruction").fact_id
    embed_pending(memory, EMBEDDER)
    return {"first": first, "middle": middle, "last": last, "fact": fact, "rule": rule}


def test_the_host_sees_every_tool_with_guidance_and_writes_marked_read_only(memory):
    server, _ = make_server(memory)

    async def go():
        async with Client(server) as client:
            return await client.list_tools()

    tools = {tool.name: tool for tool in anyio.run(go).tools}
    assert set(tools) == {"memory_search", "memory_get", "memory_timeline", "memory_profile", "memory_context",
                          "memory_remember", "memory_forget", "memory_record"}
    assert tools["memory_context"].input_schema["required"] == ["question"]
    assert not tools["memory_context"].description.startswith("This server is read-only")
    assert "before answering" in tools["memory_search"].description.lower()
    for name in WRITE_TOOLS:
        assert tools[name].description.startswith("This server is read-only")
    assert not tools["memory_search"].description.startswith("This server is read-only")
    assert tools["memory_search"].input_schema["required"] == ["query"]


def test_search_get_and_timeline_read_the_users_memory(memory):
    ids = seed(memory)
    server, _ = make_server(memory)
    found = json.loads(text(call(server, "memory_search", {"query": "trip to Lisbon"})))
    assert f"m{ids['first']}" in [hit["id"] for hit in found["results"]]
    got = json.loads(text(call(server, "memory_get", {"id": f"f{ids['fact']}"})))
    assert got["text"] == "Is vegetarian" and got["category"] == "diet"
    around = json.loads(text(call(server, "memory_timeline", {"id": f"m{ids['middle']}", "before": 1, "after": 1})))
    assert [item["id"] for item in around["results"]] == [f"m{ids['first']}", f"m{ids['middle']}",
                                                          f"m{ids['last']}"]


def test_another_users_memory_is_out_of_reach(store, memory):
    other = store.user("bob")
    secret = other.facts.add("Bob's bank PIN hint: birthday", category="general").fact_id
    server, _ = make_server(memory)
    result = call(server, "memory_get", {"id": f"f{secret}"})
    assert result.is_error and "Bob" not in text(result)
    found = json.loads(text(call(server, "memory_search", {"query": "bank PIN hint"})))
    assert found["results"] == []


def test_the_profile_tool_and_resource_list_instructions_and_facts_with_ids_and_dates(memory):
    ids = seed(memory)
    server, _ = make_server(memory)
    profile = json.loads(text(call(server, "memory_profile")))
    assert profile["instructions"] and profile["instructions"][0].startswith(f"- f{ids['rule']} (since ")
    assert any(line.startswith(f"- f{ids['fact']} (since ") and line.endswith("Is vegetarian")
               for line in profile["facts"])

    async def read():
        async with Client(server) as client:
            listed = await client.list_resources()
            return listed, await client.read_resource("coop://profile")

    listed, resource = anyio.run(read)
    assert [str(r.uri) for r in listed.resources] == ["coop://profile"]
    body = resource.contents[0].text
    assert "Standing instructions:" in body and "Answer in short sentences" in body and "Is vegetarian" in body


def test_bad_arguments_are_tool_errors_with_a_hint_and_the_server_goes_on(memory):
    seed(memory)
    server, _ = make_server(memory)
    for name, arguments, expected in [
        ("memory_get", {"id": "x99"}, "hint:"),
        ("memory_get", {"id": "f999999"}, "f999999"),
        ("memory_timeline", {"id": "f1"}, "message id"),
        ("memory_search", {"query": "x", "kind": "nonsense"}, "kind"),
        ("memory_search", {"query": 42}, "query"),
    ]:
        result = call(server, name, arguments)
        assert result.is_error, (name, arguments)
        assert expected in text(result), text(result)
    assert not call(server, "memory_search", {"query": "Lisbon"}).is_error  # still serving


def test_results_keep_the_chats_limits(memory):
    session = memory.sessions.start()
    for i in range(30):
        memory.messages.add(session, "user", f"note {i} about the garden " + "long words " * 200)
    server, _ = make_server(memory)
    result = text(call(server, "memory_search", {"query": "garden", "limit": 500}))
    assert len(result) <= MAX_RESULT_CHARS
    assert len(json.loads(result)["results"]) <= 20


def test_read_only_by_default_every_write_is_refused_with_how_to_allow_it(memory):
    ids = seed(memory)
    server, _ = make_server(memory)
    before = memory.stats()
    for name, arguments in [("memory_remember", {"text": "Has a cat named Tom"}),
                            ("memory_forget", {"id": f"f{ids['fact']}"}),
                            ("memory_record", {"user_message": "hi", "assistant_reply": "hello"})]:
        result = call(server, name, arguments)
        assert result.is_error and "--allow-writes" in text(result)
    assert memory.stats() == before


def test_remember_goes_through_the_write_pipeline_with_its_dedup_and_supersede(memory):
    server, _ = make_server(memory, allow_writes=True)
    first = json.loads(text(call(server, "memory_remember", {"text": "Lives in Porto", "category": "location",
                                                              "key": "home city"})))
    again = json.loads(text(call(server, "memory_remember", {"text": "Lives in Porto", "category": "location",
                                                              "key": "home city"})))
    moved = json.loads(text(call(server, "memory_remember", {"text": "Lives in Lisbon", "category": "location",
                                                              "key": "home city"})))
    assert first["action"] == "ADD" and again["action"] == "MERGE" and again["id"] == first["id"]
    assert moved["action"] == "SUPERSEDE"
    assert [f.text for f in memory.facts.active()] == ["Lives in Lisbon"]


def test_forget_takes_the_facts_traces_along(memory):
    session = memory.sessions.start()
    said = memory.messages.add(session, "user", "My locker code is 4417")
    fact = memory.facts.add("Locker code is 4417", category="general").fact_id
    memory.sources.link(fact, [said])
    server, _ = make_server(memory, allow_writes=True)
    gone = json.loads(text(call(server, "memory_forget", {"id": f"f{fact}", "reason": "the user asked"})))
    assert gone["forgotten"] == f"f{fact}" and f"m{said}" in gone["with_it"]
    assert memory.stats()["messages"] == 0 and memory.stats()["facts_active"] == 0


def test_record_stores_the_exchange_and_extraction_learns_from_it(db, memory):
    def fast_model(messages: list[dict[str, Any]]) -> str:
        exchange = said_in(messages[-1]["content"]) or ""
        if "allergic to peanuts" in exchange:
            return notes(note("Is allergic to peanuts", "I am allergic to peanuts", topic="allergy"))(messages)
        return '{"notes": []}'

    class InlineWorker:  # runs each job at once on the same database, as the real worker would on its own
        def submit(self, name, job):
            job(memory.backend)

    server, core = make_server(memory, allow_writes=True, complete=fast_model, worker=InlineWorker())
    result = json.loads(text(call(server, "memory_record", {
        "user_message": "Please note: I am allergic to peanuts.",
        "assistant_reply": "Noted, I will avoid peanuts in recipes."})))
    assert len(result["recorded"]) == 2 and result["session_id"] == core.session_id
    assert [m.text for m in memory.messages.recent(core.session_id, 5)] == [
        "Please note: I am allergic to peanuts.", "Noted, I will avoid peanuts in recipes."]
    [learned] = memory.facts.active()
    assert learned.text == "Is allergic to peanuts"
    # the host's account of its conversation, not words typed into coop: the fact carries that source
    assert learned.source == "host"
    [source] = memory.sources.provenance(learned.item_id)
    assert source.origin == "host" and source.quote == "I am allergic to peanuts."  # the clause it cites
    assert memory.jobs.pending() == []
    empty = call(server, "memory_record", {"user_message": " ", "assistant_reply": "x"})
    assert empty.is_error and "user_message" in text(empty)


@pytest.mark.parametrize("name", ["memory_search", "memory_get"])
def test_a_bug_in_a_tool_is_an_error_result_not_a_crash(memory, monkeypatch, name):
    server, core = make_server(memory)
    monkeypatch.setattr(core.toolbox, name.removeprefix("memory_"),
                        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    result = call(server, name, {"query": "x"} if name == "memory_search" else {"id": "f1"})
    assert result.is_error and "see coop.log" in text(result)


def test_the_server_says_its_name_and_coops_version(memory):
    import coop

    server, _ = make_server(memory)

    async def go():
        async with Client(server) as client:
            return client.server_info

    info = anyio.run(go)
    assert (info.name, info.version) == ("coop", coop.__version__)
