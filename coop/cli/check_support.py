"""`coop check`: what the configured models support, and (with `--probe`) how they answer.

Without `--probe` nothing is sent: litellm's capability data for the chat model (native tool calling: yes, no, or
not in its model list, as any local model name is) and what coop has learned from earlier requests (the JSON mode
that worked for the fast model, how the chat model called tools). With `--probe`, one small JSON request to the
fast model and one tool request to the chat model, each timed: the mode that worked and how tools were called
are reported (and remembered, as a chat would), and a probe slower than its timeout
(`model.fast_timeout_seconds`, `model.timeout_seconds`) is a warning: on a laptop CPU a 1-2B model takes 5-170 s
a call.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from coop.errors import CoopError, ErrorKind

if TYPE_CHECKING:
    from coop.config.loading import Config

Check = tuple[str, str, str, "str | None"]  # (severity, name, message, hint): check.py makes its Checks of them


def ok(name: str, message: str) -> Check:
    return ("ok", name, message, None)


def warning(name: str, message: str, hint: str | None = None) -> Check:
    return ("warning", name, message, hint)

PROBE_FACT = "I live in Porto and I am vegetarian."
PROBE_TOOL = "Look up what you remember about my city with the memory_search tool."


def _slow(name: str, seconds: float, limit: float, setting: str) -> Check | None:
    if seconds <= limit:
        return None
    return warning(name, f"the probe took {seconds:.1f} s, more than {setting} ({limit:g} s)",
                   f"raise {setting} in [model]: requests this slow are abandoned")


def known_support(config: "Config") -> list[Check]:
    """What is known without a request: litellm's data and what earlier requests taught coop."""
    from coop.chat.textcalls import TOOLS_FILE, tool_support
    from coop.config.loading import coop_home
    from coop.model.json_modes import MODES_FILE, ModeMemory
    from coop.model.llm import supports_tools

    model, fast = config.model.name, config.model.fast or config.model.name
    native = supports_tools(model)
    listed = {True: "lists it with native tool calling", False: "lists it without native tool calling",
              None: "does not list it (a local model): coop offers tools and reads calls written as text"}[native]
    learned = tool_support(coop_home() / TOOLS_FILE).get(model)
    tools = f"tools: litellm {listed}" + (f"; it called them {learned}" if learned in ("native", "text") else
                                          "; it refused them: tools are off" if learned == "none" else "")
    mode = ModeMemory(coop_home() / MODES_FILE).get(fast)
    json_line = f"JSON from {fast}: " + (f"{mode} mode worked" if mode else "no request yet (`coop check --probe`)")
    return [ok("model support", tools), ok("fast model JSON", json_line)]


def probe_support(config: "Config") -> list[Check]:
    """One timed JSON request to the fast model and one tool request to the chat model."""
    from coop.chat.textcalls import TOOLS_FILE, parse_calls, tool_support
    from coop.chat.tools import TOOL_NAMES, TOOL_SPECS
    from coop.config.loading import coop_home
    from coop.memory.growth.extract import extraction_request
    from coop.model.jsonreply import usable
    from coop.model.llm import chat_model, fast_complete

    checks: list[Check] = []
    complete = fast_complete(config)
    if complete is not None:
        started = time.perf_counter()
        try:
            request = extraction_request(PROBE_FACT)
            assert request is not None  # the probe's sentence is the user's own words
            messages, schema, _ = request
            reply = complete(messages, schema=schema)
            seconds = time.perf_counter() - started
            mode = complete.modes.get(complete.name)
            checks.append(ok("JSON probe", f"{complete.name}: usable JSON in {mode} mode, {seconds:.1f} s")
                          if usable(reply, schema) else
                          warning("JSON probe", f"{complete.name} gave no usable JSON in any mode ({seconds:.1f} s)",
                                  "facts will not be learned with this fast model: try a larger one"))
            checks += [c for c in [_slow("JSON probe", seconds, config.model.fast_timeout_seconds,
                                         "model.fast_timeout_seconds")] if c]
        except CoopError as exc:
            checks.append(_failed("JSON probe", exc, "model.fast_timeout_seconds"))
    model = chat_model(config)
    started = time.perf_counter()
    try:
        deltas = list(model.stream([{"role": "system", "content": "You are coop, a helpful assistant."},
                                    {"role": "user", "content": PROBE_TOOL}], tools=TOOL_SPECS[:1]))
        seconds = time.perf_counter() - started
        native = [c for d in deltas for c in d.tool_calls]
        _, written = parse_calls("".join(d.text for d in deltas), TOOL_NAMES)
        how = "native" if native else "text" if written else None
        if how:
            tool_support(coop_home() / TOOLS_FILE).set(model.name, how)
        checks.append(ok("tool probe", f"{model.name} called the tool {'natively' if native else 'in its text'}"
                                       f" ({seconds:.1f} s)") if how else
                      warning("tool probe", f"{model.name} answered without calling the tool ({seconds:.1f} s)",
                              "small models often ignore tools: `coop chat --no-tools` keeps prompts short"))
        checks += [c for c in [_slow("tool probe", seconds, config.model.timeout_seconds,
                                     "model.timeout_seconds")] if c]
    except CoopError as exc:
        if getattr(exc, "kind", None) is ErrorKind.TOOLS_UNSUPPORTED:
            tool_support(coop_home() / TOOLS_FILE).set(model.name, "none")
            checks.append(ok("tool probe", f"{model.name} refuses tools: they are off for it"))
        else:
            checks.append(_failed("tool probe", exc, "model.timeout_seconds"))
    return checks


def _failed(name: str, exc: CoopError, setting: str) -> Check:
    if getattr(exc, "kind", None) is ErrorKind.TIMEOUT:
        return warning(name, f"no answer in time: {exc.message}", f"raise {setting} in [model]")
    return warning(name, exc.message, exc.hint)
