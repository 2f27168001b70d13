"""A copy honours forgetting both ways (`coop memory migrate`): an item forgotten on either store goes from the
other before anything is copied, so a round trip never brings forgotten text back.

A forgotten record holds no text, only a hash keyed by its store's secret (`forget_key.py`). Both stores are at
hand during a copy, so each item of one is hashed with the other's key and compared with the other's records: a
match is the same text, forgotten there, and is forgotten here too (with a record of this store's own, so it is
not learned again here either). Records without a hash (carried by an import) cannot be matched, and are counted.
"""

from __future__ import annotations

from coop.memory.kinds import KINDS
from coop.memory.storage.interface import UserStore

REASON = "forgotten in the other store (migrate)"


def forgotten_elsewhere(keeper: UserStore, other: UserStore) -> list[tuple[str, int]]:
    """(kind, id) of `other`'s items whose text `keeper` has forgotten."""
    wanted: dict[str, set[str]] = {}
    for (kind, _), digest in keeper.copying.forgotten_hashes().items():
        wanted.setdefault(kind, set()).add(digest)
    return [(kind, item_id) for kind in KINDS if kind in wanted
            for item_id, text in other.copying.texts(kind) if keeper.forgotten.digest(text) in wanted[kind]]


def honour_forgets(source: UserStore, target: UserStore) -> dict[str, int]:
    """Forget on each store what the other forgot; how many went from each ({"source": n, "target": m})."""
    gone = {"source": 0, "target": 0}
    for keeper, other, side in ((source, target, "target"), (target, source, "source")):
        for kind, item_id in forgotten_elsewhere(keeper, other):
            if other.exists(kind, item_id):  # (a fact's forget may have taken a message with it)
                other.forget(kind, item_id, reason=REASON)
                gone[side] += 1
    return gone
