"""The user's `timeout_seconds` bounds a request with all its retries (issue 45): each attempt gets what is left of
it, and no retry starts without at least `MIN_ATTEMPT_SECONDS` of it. Time is a fake clock the stand-in server
moves (no test here waits)."""

from __future__ import annotations

from typing import Any

import pytest

from coop.errors import ErrorKind, ModelError
from coop.model import lean, llm


class FakeServer:
    """Each attempt takes `takes` seconds of the fake clock (at most the timeout it was given), then fails."""

    def __init__(self, takes: float, error: type[Exception]) -> None:
        self.now, self.takes, self.error = 0.0, takes, error
        self.timeouts: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def request(self, model: str, api_base: str, api_key: Any, timeout: float, kwargs: dict[str, Any]) -> Any:
        self.timeouts.append(timeout)
        self.now += min(self.takes, timeout)
        raise self.error("no answer")


@pytest.mark.parametrize("takes, error, kind", [
    (1e9, lean.Timeout, ErrorKind.TIMEOUT),              # a hung server: the first attempt spends it all
    (2.0, lean.ServiceUnavailableError, ErrorKind.SERVER),  # a slow 503: retried while time is left
    (0.01, lean.RateLimitError, ErrorKind.RATE_LIMIT),   # a quick 429: every retry, within the budget
])
@pytest.mark.parametrize("timeout, retries", [(5.0, 2), (3.0, 5), (60.0, 2)])
def test_a_request_with_its_retries_never_outlasts_the_users_timeout(monkeypatch, takes, error, kind, timeout,
                                                                     retries):
    server = FakeServer(takes, error)
    monkeypatch.setattr(llm, "_litellm", None)
    monkeypatch.setattr(lean, "request", server.request)
    settings = llm.ModelSettings("openai/test-model", "http://127.0.0.1:9/v1", None, timeout=timeout,
                                 retries=retries)
    model = llm.LiteLLMModel(settings, sleep=server.sleep, clock=server.clock)
    with pytest.raises(ModelError) as failed:
        list(model.stream([{"role": "user", "content": "hi"}]))
    assert failed.value.kind is kind
    assert server.now <= timeout + 1e-9  # the whole request, retries and backoff included
    assert len(server.timeouts) <= retries + 1
    assert server.timeouts[0] == timeout and all(t >= llm.MIN_ATTEMPT_SECONDS for t in server.timeouts)
    if takes >= timeout:
        assert len(server.timeouts) == 1  # nothing left for another try
