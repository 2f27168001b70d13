"""The commented example config: what `coop init` writes and `config.example.toml` holds, generated from the
config's own fields so that it can never drift from them."""

from __future__ import annotations

from typing import Any

from coop.config.loading import iter_keys, number_text, toml_value


def example_toml(values: dict[str, Any] | None = None) -> str:
    """The commented config `coop init` writes and `config.example.toml` holds: every key with its default, and
    the keys of `values` (dotted: `coop init --model`) set, uncommented."""
    values = values or {}
    lines = [
        "# coop configuration. Every key is shown with its default; uncomment and change what you need.",
        "# Environment variables override this file: COOP_<SECTION>_<KEY>, e.g. COOP_MODEL_NAME.",
        "# Validate it with `coop check`.",
    ]
    section = None
    for dotted, f in iter_keys():
        head, _, key = dotted.rpartition(".")
        if head != section:
            section = head
            lines += ["", f"[{head}]"]
        meta = f.metadata
        extra = []
        if meta.get("choices"):
            extra.append("one of " + ", ".join(meta["choices"]))
        if meta.get("min") is not None or meta.get("max") is not None:
            extra.append(f"{number_text(meta.get('min'))}..{number_text(meta.get('max'))}")
        lines.append(f"# {meta['help']}" + (f" ({'; '.join(extra)})" if extra else ""))
        lines.append(f"{key} = {toml_value(values[dotted])}" if dotted in values else
                     f"# {key} = {toml_value(f.default)}")
    return "\n".join(lines) + "\n"
