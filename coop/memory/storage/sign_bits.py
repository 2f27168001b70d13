"""Sign bits of a vector (one bit per dimension, 1 where the value is positive): what the vector leg's Hamming
pre-selection compares (`bit_index.py`), and `coop_sign_bits()` in SQL (registered on every connection, so a
migration can fill `embeddings.bits`). numpy is imported when first needed: opening a connection stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def sign_bits(matrix: "np.ndarray") -> "np.ndarray":
    """Each row's sign bits packed into uint8 (eight dimensions a byte, the first in the highest bit)."""
    import numpy as np

    return np.packbits(np.asarray(matrix) > 0, axis=-1)


def sign_bits_blob(vector: bytes | None) -> bytes | None:
    """`coop_sign_bits(vector)` in SQL: the packed sign bits of a float32 vector blob."""
    import numpy as np

    if vector is None:
        return None
    return bytes(sign_bits(np.frombuffer(vector, dtype=np.float32)).tobytes())
