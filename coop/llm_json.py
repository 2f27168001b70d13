"""How the fast model is asked for JSON, and what happens when it cannot give it.

Extraction, reconciliation and consolidation need JSON. Providers differ in how to ask: a JSON schema
(`response_format` with `json_schema`: OpenAI, Anthropic through litellm, Ollama, LM Studio, llama.cpp), JSON-object
mode, or nothing but the prompt. Small local models fail in their own ways: a 400 for `json_schema`, prose in
JSON-object mode, the schema echoed back instead of data. So each request tries the modes in that order, starting
with the one that last worked for the model (remembered across runs in `$COOP_HOME/model-json-modes.json`), and
moves on when the provider refuses the mode or the reply is not usable JSON. A request that no mode could answer
is counted (`unusable`, shown once per chat session) and logged with the model and the modes tried; it is never
silently an empty result.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from coop.errors import ErrorKind, ModelError
from coop.jsonreply import Schema, usable

log = logging.getLogger(__name__)

MODES = ("json_schema", "json_object", "prompt")
MODES_FILE = "model-json-modes.json"


class ModeMemory:
    """Which mode last worked for each model, in a small JSON file (None: kept in this process only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._modes: dict[str, str] = {}
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self._modes = {str(k): str(v) for k, v in data.items() if v in MODES} if isinstance(data, dict) \
                    else {}
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
            from coop.files import replace_file

            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                replace_file(self.path, lambda handle: json.dump(self._modes, handle, indent=2))
            except Exception as exc:  # remembering is an optimisation: never a failure of the request
                log.info("could not remember the JSON mode of %s: %s", model, exc)


def response_format(mode: str, schema: Schema) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": schema["name"], "schema": schema["schema"],
                                                       "strict": True}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def with_schema_in_prompt(messages: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    """The messages with the schema spelled out in the system prompt, for a model asked by the prompt alone."""
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

    def __call__(self, messages: list[dict[str, Any]], schema: Schema | None = None) -> str:
        if schema is None:
            return str(self.model.complete(messages, response_format={"type": "json_object"}))
        start = self.modes.get(self.name) or MODES[0]
        tried: list[str] = []
        reply = ""
        for mode in MODES[MODES.index(start):]:
            asked = with_schema_in_prompt(messages, schema) if mode == "prompt" else messages
            try:
                reply = str(self.model.complete(asked, response_format=response_format(mode, schema)))
            except ModelError as exc:
                if exc.kind in (ErrorKind.BAD_REQUEST, ErrorKind.OTHER) and mode != "prompt":
                    tried.append(f"{mode} (refused: {exc.message[:120]})")
                    log.info("%s refused %s mode for %s JSON: %s", self.name, mode, schema["name"], exc.message[:200])
                    continue  # the provider does not take this mode: the next one
                raise
            if usable(reply, schema):
                self.modes.set(self.name, mode)
                return reply
            tried.append(f"{mode} (no usable JSON: {reply[:80]!r})")
            log.info("%s gave no usable %s JSON in %s mode: %r", self.name, schema["name"], mode, reply[:200])
        with self._lock:
            self.unusable += 1
        log.warning("the fast model %s returned no usable %s JSON; tried %s", self.name, schema["name"],
                    "; ".join(tried))
        return reply
