"""litellm's model map (what each known model can do) read without importing litellm.

`llm.supports_tools` asks litellm; before litellm is loaded (the first seconds of `coop chat`, see
coop/model/lean.py) the same answer comes from the map litellm ships and reads itself when told to stay offline
(`LITELLM_LOCAL_MODEL_COST_MAP`): its backup JSON file, found beside the package without importing it. The file is
3 MB; one model's entry is found by its top-level key and only that entry is parsed (a few milliseconds instead of
a tenth of a second), the whole file only if its layout ever changes.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
MAP_FILE = "model_prices_and_context_window_backup.json"
_TOP_LEVEL = '\n    "{}": {{'  # how the file writes a model's key (json.dumps with indent=4)
_KNOWN_KEY = "sample_spec"  # the file's first entry: the layout is as expected when it is found so


@functools.cache
def map_text() -> str:
    """The map's text, or "" when it cannot be found or read (then nothing is known, as for a model not in it)."""
    try:
        spec = importlib.util.find_spec("litellm")  # a top-level package: found, not imported
        for location in list(spec.submodule_search_locations or []) if spec is not None else []:
            path = Path(location) / MAP_FILE
            if path.is_file():
                return path.read_text(encoding="utf-8")
    except (OSError, ValueError, ImportError) as exc:
        log.debug("litellm's model map could not be read: %s", exc)
    return ""


@functools.cache
def _whole_map() -> dict[str, Any]:
    try:
        data = json.loads(map_text() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def entry(key: str) -> dict[str, Any] | None:
    """The map's entry for `key`, or None."""
    text = map_text()
    if _TOP_LEVEL.format(_KNOWN_KEY) not in text:
        found = _whole_map().get(key)
        return found if isinstance(found, dict) else None
    at = text.find(_TOP_LEVEL.format(json.dumps(key)[1:-1]))
    if at < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, text.index("{", at))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def supports_function_calling(model: str) -> bool | None:
    """What the map says of `model`'s native tool calling (the full name, or the name after the provider when
    the entry is that provider's), None when the map does not know it: as litellm's `get_model_info` answers."""
    provider, _, bare = model.partition("/")
    found = entry(model)
    if found is None and bare:
        candidate = entry(bare)
        if candidate is not None and candidate.get("litellm_provider") == provider:
            found = candidate
    if found is None:
        return None
    known = found.get("supports_function_calling")
    return None if known is None else bool(known)
