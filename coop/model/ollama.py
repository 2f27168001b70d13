"""Ollama's context window: it cuts a prompt longer than its window silently, so each request says how large a
window it needs (`ollama_context`, called by `coop.model.llm` for the `ollama` and `ollama_chat` providers)."""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("coop.llm")

OLLAMA_PROVIDERS = ("ollama", "ollama_chat")
REPLY_ROOM_TOKENS = 1024
MIN_CONTEXT_TOKENS = 2048


def _tokens(value: Any) -> int:
    """A rough count (3 characters a token: generous, so the window is never too small)."""
    return len(json.dumps(value, ensure_ascii=False)) // 3 + 1


def ollama_context(kwargs: dict[str, Any], limit: int, model: str) -> dict[str, Any]:
    """Ollama cuts a prompt longer than its context window silently (4,096 tokens or less by default), so every
    request says how large a window it needs: the prompt's estimated size plus room for the reply, in steps of
    1,024, at most `limit` (model.num_ctx). A prompt that would not fit even `limit` loses its oldest
    conversation messages (never the system prompt or the last message), and the log says so."""
    messages = list(kwargs.get("messages") or [])
    extra = _tokens(kwargs.get("tools")) if kwargs.get("tools") else 0
    dropped = 0
    while _tokens(messages) + extra + REPLY_ROOM_TOKENS > limit:
        droppable = [i for i, m in enumerate(messages[:-1]) if m.get("role") != "system"]
        if not droppable:
            break
        del messages[droppable[0]]
        dropped += 1
    need = _tokens(messages) + extra + REPLY_ROOM_TOKENS
    if dropped or need > limit:
        log.warning("%s: the prompt (about %d tokens) does not fit model.num_ctx = %d; %d oldest message(s) left "
                    "out%s", model, need, limit, dropped, "" if need <= limit else "; the server may cut the rest")
    window = min(limit, max(MIN_CONTEXT_TOKENS, -(-need // 1024) * 1024))
    return {**kwargs, "messages": messages, "num_ctx": window}
