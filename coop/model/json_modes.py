"""How the fast model is asked for JSON, and what happens when it cannot give it.

Extraction, reconciliation and consolidation need JSON. Providers differ in how to ask: a JSON schema
(`response_format` with `json_schema`: OpenAI, Anthropic through litellm, Ollama, LM Studio), JSON-object mode
with the schema embedded (`{"type": "json_object", "schema": ...}`, which llama-cpp-python's server enforces as
a grammar), plain JSON-object mode, or nothing but the prompt. Small local models fail in their own ways: a 400
or a 500 for `json_schema` (llama-cpp-python: "Input should be 'text' or 'json_object'"), prose in JSON-object
mode, the schema echoed back instead of data. So each request tries the modes in that order, starting with the
one remembered for the model (in `$COOP_HOME/model-json-modes.json`), and moves on at once when the provider
refuses a mode (any 4xx or 5xx about response_format, a schema or validation: `refuses_mode`; never retried as a
server failure) or the reply is not usable JSON. A refusal is remembered at once (the next request starts at
the next mode), and so is the mode that worked. Every JSON call is made at temperature 0 with a token cap
(`JSON_MAX_TOKENS`): a local server's default temperature (0.8) makes extraction a lottery, and a small model
without a cap can run on for minutes. A request that no mode could answer is counted (`unusable`, shown once per
chat session) and logged with the model and the modes tried; it is never silently an empty result.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

from coop.errors import ErrorKind, ModelError
from coop.model.jsonreply import Schema, usable

log = logging.getLogger(__name__)

MODES = ("json_schema", "json_object_schema", "json_object", "prompt")
MODES_FILE = "model-json-modes.json"
JSON_TEMPERATURE = 0.0
JSON_MAX_TOKENS = 1024  # five facts with their quotes take about 400 tokens; a summary with facts about 700

# What a server says when it refuses the JSON mode it was asked for: llama-cpp-python answers json_schema with
# HTTP 500 "Input should be 'text' or 'json_object'" (litellm: InternalServerError), others a 400 or 422 about
# response_format, the schema or validation.
_MODE_WORDS = re.compile(r"response_format|response format|json_schema|json_object|json schema|schema|grammar|"
                         r"validation|input should be|unprocessable", re.IGNORECASE)
_MODE_KINDS = frozenset({ErrorKind.BAD_REQUEST, ErrorKind.SERVER, ErrorKind.OTHER, ErrorKind.NOT_FOUND})


def refuses_mode(error: ModelError, asked: dict[str, Any] | None) -> bool:
    """Whether `error`, the answer to a request that asked for `asked` (a response_format), refuses that mode:
    any 4xx or 5xx whose message is about response_format, a schema or validation. Such an error is never
    retried as a server failure: the next mode is asked at once."""
    return asked is not None and error.kind in _MODE_KINDS and bool(_MODE_WORDS.search(error.message))




class ModeMemory:
    """Which mode last worked for each model, in a small JSON file (None: kept in this process only); also how a
    model calls tools (`coop.chat.textcalls`), with its own `allowed` values."""

    def __init__(self, path: Path | None, allowed: tuple[str, ...] = MODES) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._modes: dict[str, str] = {}
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self._modes = {str(k): str(v) for k, v in data.items() if v in allowed} \
                    if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._modes = {}

    def get(self, model: str) -> str | None:
        return self._modes.get(model)

    def set(self, model: str, mode: str) -> None:
        with self._lock:
            if self._modes.get(model) == mode:
                return
            self._modes[model] = mode
            if self.path is None:
                return
            from coop.files.writing import replace_file

            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                replace_file(self.path, lambda handle: json.dump(self._modes, handle, indent=2))
            except Exception as exc:  # remembering is an optimisation: never a failure of the request
                log.info("could not remember the JSON mode of %s: %s", model, exc)


def response_format(mode: str, schema: Schema) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": schema["name"], "schema": schema["schema"],
                                                       "strict": True}}
    if mode == "json_object_schema":  # llama-cpp-python turns the schema into a grammar the reply must follow
        return {"type": "json_object", "schema": schema["schema"]}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def with_schema_in_prompt(messages: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    """The messages with the schema spelled out in the system prompt, for a model asked in plain JSON-object mode
    or by the prompt alone (nothing else tells it the shape)."""
    note = ("\n\nAnswer with one JSON object and nothing else: no prose, no code fence, not the schema itself. "
            f"It must match this JSON Schema:\n{json.dumps(schema['schema'])}")
    if messages and messages[0].get("role") == "system":
        return [{**messages[0], "content": str(messages[0]["content"]) + note}, *messages[1:]]
    return [{"role": "system", "content": note.strip()}, *messages]


class StructuredCompleter:
    """The fast model as the memory engine's `complete(messages, schema=...)`, with the fallback chain. Without a
    schema it is plain JSON-object mode, as before."""

    takes_schema = True

    def __init__(self, model: Any, name: str, modes: ModeMemory) -> None:
        self.model = model  # a LiteLLMModel (or anything with complete(messages, response_format=...))
        self.name = name
        self.modes = modes
        self.unusable = 0  # requests no mode could answer with usable JSON, in this process
        self._lock = threading.Lock()

    def _complete(self, messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        return str(self.model.complete(messages, response_format=response_format, temperature=JSON_TEMPERATURE,
                                       max_tokens=JSON_MAX_TOKENS))

    def __call__(self, messages: list[dict[str, Any]], schema: Schema | None = None) -> str:
        if schema is None:
            return self._complete(messages, {"type": "json_object"})
        start = self.modes.get(self.name) or MODES[0]
        tried: list[str] = []
        reply = ""
        for mode in MODES[MODES.index(start):]:
            asked = with_schema_in_prompt(messages, schema) if mode in ("json_object", "prompt") else messages
            try:
                reply = self._complete(asked, response_format(mode, schema))
            except ModelError as exc:
                if exc.kind in REFUSALS and mode != "prompt":
                    tried.append(f"{mode} (refused: {exc.message[:120]})")
                    log.info("%s refused %s mode for %s JSON: %s", self.name, mode, schema["name"], exc.message[:200])
                    self.modes.set(self.name, MODES[MODES.index(mode) + 1])  # remembered: not asked again
                    continue  # the provider does not take this mode: the next one, at once
                raise
            if usable(reply, schema):
                self.modes.set(self.name, mode)
                return reply
            tried.append(f"{mode} (no usable JSON)")  # the reply at DEBUG only: it may quote the user's words
            log.info("%s gave no usable %s JSON in %s mode (%d characters)", self.name, schema["name"], mode,
                     len(reply))
            log.debug("%s's reply in %s mode: %r", self.name, mode, reply[:200])
        with self._lock:
            self.unusable += 1
        log.warning("the fast model %s returned no usable %s JSON; tried %s", self.name, schema["name"],
                    "; ".join(tried))
        return reply


REFUSALS = (ErrorKind.MODE_REFUSED, ErrorKind.BAD_REQUEST, ErrorKind.OTHER)
