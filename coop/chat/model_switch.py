"""`/model NAME`: a name is checked against the server's model list before the chat switches to it, so a typo is
told at once, with the closest name the server has, not as a failed turn later (coop/model/catalog.py asks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coop.errors import UsageError
from coop.model import catalog, llm

if TYPE_CHECKING:
    from coop.config.loading import Config

MAX_LISTED = 8


def checked_model(config: "Config", name: str, current: str) -> str | None:
    """None when the server lists `name`; a note when its list could not be had (the switch goes ahead); a
    UsageError with a did-you-mean when the server lists other models only."""
    settings = llm.model_settings(config, name)
    listing = catalog.check(name, settings.api_base, settings.api_key())
    if listing.listed:
        return None
    if listing.unknown:
        return f"note: {listing.why}; switched to {name} without checking that the server has it"
    shown = ", ".join(listing.models[:MAX_LISTED]) + (", …" if len(listing.models) > MAX_LISTED else "")
    hint = (f"did you mean /model {listing.suggestion}? " if listing.suggestion else "") + \
        (f"the server lists: {shown}" if listing.models else "the server lists no models")
    raise UsageError(f"the server at {listing.where} has no model '{name.partition('/')[2] or name}'; the chat "
                     f"stays with {current}", hint=hint)
