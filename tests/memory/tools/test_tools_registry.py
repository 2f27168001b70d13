"""The memory tools defined once (issue 28): the chat's tool specs and the MCP tools come from one registry; MCP
runs the engine's tools without importing coop.chat; one recorder stores an exchange for the chat and for MCP;
the MCP server's lock is never held through an embedding or a model call."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from coop.chat.session import ChatSession
from coop.chat.tools import TOOL_SPECS, MemoryTools
from coop.config.loading import Config, apply_overrides
from coop.config.sections import ExtractionConfig
from coop.mcp.server import MemoryServer, build_server
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.jobs import MemoryJobs
from coop.memory.growth.reconcile import FactWriter
from coop.memory.tools import registry
from coop.memory.tools.exchange import ExchangeRecorder
from coop.memory.tools.guard import Guard
from coop.memory.tools.toolbox import MemoryToolbox
from tests import REPO
from tests.scripted_model import ScriptedModel

EMBEDDER = HashEmbedder(64)
WAIT = 30.0  # generous: an event that should come comes in milliseconds


def listed_tools(core: MemoryServer) -> dict[str, Any]:
    async def go():
        async with Client(build_server(core)) as client:
            return await client.list_tools()

    return {tool.name: tool for tool in anyio.run(go).tools}


def test_the_chats_specs_and_the_mcp_tools_are_one_registrys(memory):
    core = MemoryServer(memory, MemoryJobs(Config(), None, lambda: EMBEDDER), lambda: EMBEDDER, allow_writes=True)
    mcp_tools = listed_tools(core)
    assert list(mcp_tools) == [tool.name for tool in registry.tools_for(registry.MCP)]
    chat = {spec["function"]["name"]: spec["function"] for spec in TOOL_SPECS}
    assert list(chat) == ["memory_search", "memory_get", "memory_timeline", "memory_write", "memory_forget"]
    shared = [tool for tool in registry.TOOLS if registry.CHAT in tool.fronts and registry.MCP in tool.fronts]
    assert {tool.name for tool in shared} == {"memory_search", "memory_get", "memory_timeline", "memory_remember",
                                              "memory_forget"}
    for tool in shared:
        in_chat, over_mcp = chat[tool.called(registry.CHAT)], mcp_tools[tool.name]
        assert in_chat["description"] == over_mcp.description == tool.description
        assert in_chat["parameters"] == over_mcp.input_schema == tool.parameters
    # a read-only server marks its write tools, and nothing else differs
    read_only = listed_tools(MemoryServer(memory, MemoryJobs(Config(), None, lambda: EMBEDDER), lambda: EMBEDDER))
    for tool in registry.tools_for(registry.MCP):
        expected = registry.READ_ONLY_NOTE + tool.description if tool.writes else tool.description
        assert read_only[tool.name].description == expected
        assert read_only[tool.name].input_schema == tool.parameters


def test_the_registrys_bounds_are_the_ones_applied_in_both(memory):
    session = memory.sessions.start()
    for i in range(30):
        memory.messages.add(session, "user", f"garden note {i}")
    limit = registry.find(registry.MCP, "memory_search").parameters["properties"]["limit"]
    chat = MemoryTools(memory, lambda: EMBEDDER, lambda: FactWriter(memory, ExtractionConfig()))
    in_chat = json.loads(chat.run("memory_search", json.dumps({"query": "garden note", "limit": 500})))
    core = MemoryServer(memory, MemoryJobs(Config(), None, lambda: EMBEDDER), lambda: EMBEDDER)
    over_mcp = json.loads(core.call("memory_search", {"query": "garden note", "limit": 500}))
    assert len(in_chat["results"]) == len(over_mcp["results"]) == limit["maximum"]
    default = json.loads(core.call("memory_search", {"query": "garden note"}))
    assert len(default["results"]) == limit["default"]


def test_mcp_serves_every_tool_without_importing_the_chat(tmp_path: Path):
    script = f"""
import json, sys
import anyio
from mcp import Client
from coop.config.loading import Config
from coop.mcp.server import MemoryServer, build_server
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.jobs import MemoryJobs
from coop.memory.storage.database import open_database
from coop.memory.storage.store import MemoryStore

embedder = HashEmbedder(64)
memory = MemoryStore(open_database({str(tmp_path / 'coop.db')!r})).user("ana")
fact = memory.facts.add("Is vegetarian", category="diet").fact_id
core = MemoryServer(memory, MemoryJobs(Config(), None, lambda: embedder), lambda: embedder, allow_writes=True)

async def go():
    async with Client(build_server(core)) as client:
        calls = [("memory_search", {{"query": "vegetarian"}}), ("memory_get", {{"id": f"f{{fact}}"}}),
                 ("memory_profile", {{}}), ("memory_context", {{"question": "what do I eat?"}}),
                 ("memory_remember", {{"text": "Plays the cello"}}),
                 ("memory_record", {{"user_message": "hi", "assistant_reply": "hello"}}),
                 ("memory_forget", {{"id": f"f{{fact}}"}})]
        return [(await client.call_tool(name, args)).is_error for name, args in calls]

errors = anyio.run(go)
print(json.dumps({{"errors": errors, "chat": sorted(m for m in sys.modules if m.startswith("coop.chat"))}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["errors"] == [False] * 7
    assert result["chat"] == []


def test_the_chat_and_mcp_record_an_exchange_through_one_recorder(memory, monkeypatch):
    recorded: list[tuple[str, str | None, int | None]] = []
    said = ExchangeRecorder.said

    def spy(self, role, text):
        message_id = said(self, role, text)
        recorded.append((role, self.origin, message_id))
        return message_id

    monkeypatch.setattr(ExchangeRecorder, "said", spy)
    config = apply_overrides(Config(), {"memory.extraction.enabled": False})
    chat = ChatSession(memory, config, embedder=lambda: EMBEDDER, model=ScriptedModel(replies=["Noted."]))
    turn = chat.turn("I keep bees in the garden")
    core = MemoryServer(memory, MemoryJobs(config, None, lambda: EMBEDDER), lambda: EMBEDDER, allow_writes=True)
    answer = json.loads(core.call("memory_record", {"user_message": "I keep bees in the garden",
                                                    "assistant_reply": "Noted."}))
    assert recorded == [("user", None, turn.user_message_id), ("assistant", None, turn.reply_message_id),
                        ("user", "host", int(answer["recorded"][0][1:])),
                        ("assistant", "host", int(answer["recorded"][1][1:]))]
    chat_user = memory.get("message", turn.user_message_id)
    host_user = memory.get("message", int(answer["recorded"][0][1:]))
    assert chat_user.importance == host_user.importance  # weighed by the same rule
    titles = {s["id"]: s["title"] for s in memory.sessions.recent()}
    assert titles[chat.session_id] == titles[core.session_id] == "I keep bees in the garden"


class SlowEmbedder:
    """The hash embedder, held at embedding one text until released: a remote API or a model loading."""

    def __init__(self, slow_text: str) -> None:
        self.id, self.dims = EMBEDDER.id, EMBEDDER.dims
        self.slow_text = slow_text
        self.inside, self.release = threading.Event(), threading.Event()

    def embed(self, texts):
        if self.slow_text in texts:
            self.inside.set()
            assert self.release.wait(WAIT)
        return EMBEDDER.embed(texts)

    def embed_query(self, text):
        return EMBEDDER.embed_query(text)


def test_another_mcp_call_runs_while_remember_embeds(memory):
    fact = memory.facts.add("Is vegetarian", category="diet").fact_id
    slow = SlowEmbedder("Plays the cello")
    core = MemoryServer(memory, MemoryJobs(Config(), None, lambda: slow), lambda: slow, allow_writes=True)
    answers: dict[str, Any] = {}
    remember = threading.Thread(target=lambda: answers.update(
        remember=json.loads(core.call("memory_remember", {"text": "Plays the cello"}))))
    remember.start()
    assert slow.inside.wait(WAIT)  # the fact is being embedded ...
    reader = threading.Thread(target=lambda: answers.update(
        get=json.loads(core.call("memory_get", {"id": f"f{fact}"})), profile=json.loads(core.call("memory_profile",
                                                                                                   {}))))
    reader.start()
    reader.join(WAIT)
    assert not reader.is_alive() and "remember" not in answers  # ... and the other calls were answered meanwhile
    assert answers["get"]["text"] == "Is vegetarian" and answers["profile"]["facts"]
    slow.release.set()
    remember.join(WAIT)
    assert answers["remember"]["action"] == "ADD"
    # embedded before the lock, its vector stored under it
    assert memory.get("fact", int(answers["remember"]["id"][1:])).embedder == EMBEDDER.id


def test_a_tools_write_is_decided_by_the_table_with_no_model_call_under_the_lock(memory):
    """The reconciler's model call that once ran inside a tool's write is gone: the table of slots decides (the
    city is one slot: a move supersedes it), and the one question about changes is never asked of a tool's write,
    so nothing but the database work holds the lock."""
    known = memory.facts.add("Lives in Lyon", category="location", key="home_city").fact_id

    def no_question(said, undecided):
        raise AssertionError("a tool's write asked the fast model")

    lock = threading.Lock()
    box = MemoryToolbox(memory, lambda: EMBEDDER,
                        lambda: FactWriter(memory, ExtractionConfig(), embedder=EMBEDDER, ask=no_question),
                        guard=Guard(lock), write_source="model")
    written = box.remember("Lives in Berlin", category="location", key="city")
    assert written["action"] == "SUPERSEDE"
    assert box.get(written["id"])["text"] == "Lives in Berlin"
    assert not memory.facts.is_active(known) and lock.acquire(blocking=False)
