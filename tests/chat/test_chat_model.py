"""The chat-model seam: `ChatSession` takes any `ChatModel`, failures are `ModelError`s whose kind is data, and
litellm's retries wait through an injectable sleep. The turn is driven in-process by `ScriptedModel`."""

from __future__ import annotations

import datetime

import pytest

from coop.chat.session import ChatSession
from coop.config.loading import Config, apply_overrides
from coop.errors import ErrorKind, ModelError
from coop.memory.growth.embedders import HashEmbedder
from coop.model import llm
from tests.scripted_model import ScriptedModel

EMBEDDER = HashEmbedder(64)


FACTS = "Known about the user (id, since when):\n"
TODAY = datetime.date.today().isoformat()


def session_with(memory, model: ScriptedModel, **overrides) -> ChatSession:
    config = apply_overrides(Config(), {"memory.extraction.enabled": False, **overrides})
    return ChatSession(memory, config, embedder=lambda: EMBEDDER, model=model)


def test_a_session_streams_from_the_model_it_was_given_with_memory_in_the_prompt(memory):
    memory.facts.add("The user is allergic to peanuts", importance=0.9)
    model = ScriptedModel(replies=["Skip the satay."])
    chat = session_with(memory, model)
    result = chat.turn("what should I cook for guests?")
    assert result.error is None and result.reply == "Skip the satay."
    assert f"{FACTS}- f1 (since {TODAY}): The user is allergic to peanuts" in model.system_prompt()
    assert model.requests[0]["messages"][-1] == {"role": "user", "content": "what should I cook for guests?"}
    assert model.requests[0]["tools"]  # memory tools are offered by default
    assert [m.text for m in memory.messages.recent(chat.session_id, 5)] == [
        "what should I cook for guests?", "Skip the satay."]


def test_a_model_that_refuses_tools_is_asked_again_without_them_by_error_kind(memory):
    refusal = ModelError("scripted: the model does not support functions", kind=ErrorKind.TOOLS_UNSUPPORTED)
    model = ScriptedModel(replies=[refusal, "plain answer", "second answer"])
    chat = session_with(memory, model)
    assert chat.turn("hello").reply == "plain answer"
    assert [bool(r["tools"]) for r in model.requests] == [True, False]
    chat.turn("again")
    assert model.requests[-1]["tools"] is None  # once refused, not offered again this session


def test_another_bad_request_is_an_error_not_a_retry_without_tools(memory):
    model = ScriptedModel(replies=[ModelError("scripted: bad request", kind=ErrorKind.BAD_REQUEST)])
    result = session_with(memory, model).turn("hello")
    assert isinstance(result.error, ModelError) and result.error.kind is ErrorKind.BAD_REQUEST
    assert len(model.requests) == 1


def test_no_model_configured_is_a_model_error_with_a_hint(memory):
    chat = ChatSession(memory, Config(), embedder=lambda: EMBEDDER)
    with pytest.raises(ModelError) as raised:
        chat.turn("hello")
    assert "no chat model configured" in raised.value.message and "api_base" in raised.value.hint


def test_slash_model_switches_through_the_model_factory(memory):
    made: list[str] = []

    def models(name: str) -> ScriptedModel:
        made.append(name)
        return ScriptedModel(name=name, replies=[f"hi from {name}"])

    config = apply_overrides(Config(), {"memory.extraction.enabled": False})
    chat = ChatSession(memory, config, embedder=lambda: EMBEDDER, model=ScriptedModel(), models=models)
    chat.use_model("ollama/llama3.1")
    assert chat.model_name == "ollama/llama3.1" and chat.turn("hello").reply == "hi from ollama/llama3.1"
    assert made == ["ollama/llama3.1"]


@pytest.mark.parametrize(("exception_name", "message", "kind"), [
    ("AuthenticationError", "invalid api key", ErrorKind.AUTH),
    ("NotFoundError", "model nope not found", ErrorKind.NOT_FOUND),
    ("RateLimitError", "slow down", ErrorKind.RATE_LIMIT),
    ("BadRequestError", "this model does not support tools", ErrorKind.TOOLS_UNSUPPORTED),
    ("BadRequestError", "max_tokens is too large", ErrorKind.BAD_REQUEST),
    ("InternalServerError", "boom", ErrorKind.SERVER),
    ("APIConnectionError", "Connection refused", ErrorKind.CONNECTION),
    ("Timeout", "Request timed out", ErrorKind.TIMEOUT),
])
def test_provider_exceptions_map_to_error_kinds(exception_name, message, kind):
    error_class = type(exception_name, (Exception,), {})
    mapped = llm.map_error(error_class(message), "openai/x", api_key="sk-secret-value")
    assert mapped.kind is kind
    assert "sk-secret-value" not in mapped.message
    assert exception_name not in mapped.message and "litellm" not in mapped.message  # said in words


def test_retries_wait_through_the_injected_sleep_and_stop_at_the_limit(openai_server):
    # (requests without coop's chat preamble take the server's background replies)
    openai_server.background_replies = [{"status": 503}, {"status": 503}, "third time lucky"]
    waits: list[float] = []
    model = llm.LiteLLMModel(llm.ModelSettings("openai/x", openai_server.api_base, timeout=60, retries=2,
                                               backoff_seconds=0.5), sleep=waits.append)
    assert "".join(d.text for d in model.stream([{"role": "user", "content": "hi"}])) == "third time lucky"
    assert waits == [0.5, 1.0]  # exponential backoff, and no real waiting in the test
    openai_server.background_replies = [{"status": 503}] * 3
    waits.clear()
    with pytest.raises(ModelError) as raised:
        list(model.stream([{"role": "user", "content": "hi"}]))
    assert raised.value.kind is ErrorKind.SERVER and waits == [0.5, 1.0]


def test_a_client_error_is_not_retried(openai_server):
    openai_server.background_replies = [{"status": 401, "message": "bad key"}, "never reached"]
    waits: list[float] = []
    model = llm.LiteLLMModel(llm.ModelSettings("openai/x", openai_server.api_base, timeout=60), sleep=waits.append)
    with pytest.raises(ModelError) as raised:
        model.complete([{"role": "user", "content": "hi"}])
    assert raised.value.kind is ErrorKind.AUTH and waits == []


def test_the_idle_timer_never_ends_a_session_during_a_turn(memory):
    """`end_if_idle` runs on a timer thread; a turn in progress (or starting) must not have its session ended
    under it, and once the turn is over an idle spell does end it."""
    import threading

    class RecordingWorker:
        def __init__(self) -> None:
            self.jobs: list[str] = []

        def submit(self, name, job) -> None:
            self.jobs.append(name)

        def take_notices(self) -> list[str]:
            return []

    inside, release = threading.Event(), threading.Event()

    def slow_reply(messages):
        inside.set()
        release.wait(10)
        return "done"

    worker = RecordingWorker()
    config = apply_overrides(Config(), {"memory.extraction.enabled": False})
    chat = ChatSession(memory, config, embedder=lambda: None, model=ScriptedModel(replies=[slow_reply]),
                       worker=worker)  # type: ignore[arg-type]
    turn = threading.Thread(target=chat.turn, args=("hello",))
    turn.start()
    assert inside.wait(10)
    first_session = chat.session_id
    assert chat.end_if_idle(0) is False and worker.jobs == []  # mid-turn: never
    release.set()
    turn.join(10)
    assert chat.end_if_idle(0) is True
    assert [job for job in worker.jobs if job != "embed new messages"] == ["end the idle session"]
    assert [m.text for m in memory.messages.recent(first_session, 5)] == ["hello", "done"]


@pytest.mark.real_model
@pytest.mark.parametrize("small_talk", ["Hello!", "How's it going?", "What's up?", "Thanks, that's all for now.",
                                        "Good morning!"])
def test_small_talk_recalls_nothing(memory, real_embedder, small_talk):
    from coop.memory.growth.embedding import embed_pending

    session = memory.sessions.start()
    for text in ("Hello! How's it going with the new job?", "It's going well, thanks for asking!",
                 "Good morning! I'm going hiking with my sister Ana today.", "Thanks, that's all for now, bye!",
                 "What's up with your car? Is the gearbox fixed?", "My sister Ana is a dentist in Porto."):
        memory.messages.add(session, "user", text)
    embed_pending(memory, real_embedder)
    config = apply_overrides(Config(), {"memory.extraction.enabled": False})
    chat = ChatSession(memory, config, embedder=lambda: real_embedder, model=ScriptedModel())
    prompt = chat.prepare(small_talk)
    assert [r.item.text for r in prompt.recalled if r.reason == "relevance"] == []
    assert "Relevant past conversation" not in prompt.messages[0]["content"]
    # and a real question about the same memory still finds its answer
    prompt = chat.prepare("What does my sister do for a living?")
    assert "My sister Ana is a dentist in Porto." in [r.item.text for r in prompt.recalled]


@pytest.mark.parametrize(("text", "salient"), [
    ("Remember that I get motion sick on boats.", True),
    ("Please keep in mind that I am vegetarian.", True),
    ("Remember when we went hiking in the Alps?", False),    # reminiscing
    ("Do you remember what my dog is called?", False),       # a question
    ("I remember that trip very well.", False),
    ("Actually, I think that's fine.", False),                # "actually" as filler
    ("Actually I'm not vegetarian any more.", True),          # a correction
])
def test_only_requests_and_corrections_are_salient(text, salient):
    from coop.config.loading import ImportanceConfig
    from coop.memory.growth.importance import message_importance

    assert (message_importance("user", text, ImportanceConfig()) >= 0.85) is salient


def test_salient_messages_are_deduplicated_ranked_and_bounded(memory, hash_embedder):
    """An import full of the same 'Remember that...' line costs one line, and salience never takes more than a
    quarter of the memory budget, so what the turn is about still fits."""
    from coop.memory.growth.embedding import embed_pending

    session = memory.sessions.start()
    for _ in range(39):
        memory.messages.add(session, "user", "Remember that I get motion sick on long bus rides.", importance=0.9)
    for i in range(12):
        memory.messages.add(session, "user", f"Remember that locker {i} holds my {i} spare keyboard keys.",
                           importance=0.9)
    embed_pending(memory, hash_embedder)
    config = apply_overrides(Config(), {"memory.extraction.enabled": False})
    chat = ChatSession(memory, config, embedder=lambda: hash_embedder, model=ScriptedModel())
    prompt = chat.prepare("which locker holds the spare keyboard keys?")
    salient = [r for r in prompt.recalled if r.reason == "salience"]
    texts = [r.item.text for r in salient]
    assert texts.count("Remember that I get motion sick on long bus rides.") <= 1
    assert texts and "locker" in texts[0]  # ordered by relevance to the turn
    from coop.memory.retrieval.context import past_line
    from coop.memory.text import estimate_tokens

    assert sum(estimate_tokens(past_line(r)) for r in salient) <= prompt.tokens["memory_budget"] // 4
