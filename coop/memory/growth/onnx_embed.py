"""A lean runner for the default model (all-MiniLM-L6-v2) from a local directory: onnxruntime and tokenizers only.

`fastembed` imports about half a second of modules a search never uses (its model hub client, image and sparse
models), which is most of a cold `coop memory search`. For the one model coop ships by default, loaded from a
local directory (`memory.embedder.model_path` or the provisioned one), this module does what fastembed does for
it (fastembed 0.7-0.9 `PooledNormalizedEmbedding`), step for step, so the vectors are the same to float
rounding and keep the same embedder id: the tokenizer truncates at the smaller of `model_max_length` and
`max_length` from tokenizer_config.json and pads each batch to its longest text with the pad token of
tokenizer.json; the model gets input_ids, attention_mask and zero token_type_ids; token states are mean-pooled
over the attention mask in float64, L2-normalised, then cast to float32.
`tests/memory/growth/test_retrieval_embedder.py` checks the two against each other on the real model.
`COOP_EMBEDDER_FASTEMBED=1` turns this off (fastembed for everything).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

LEAN_MODELS = ("sentence-transformers/all-MiniLM-L6-v2",)


def usable(model: str, model_path: str | None) -> bool:
    """True when the lean runner can stand in for fastembed: the default model, from a local directory."""
    return (model in LEAN_MODELS and model_path is not None and not os.environ.get("COOP_EMBEDDER_FASTEMBED")
            and (Path(model_path) / "model.onnx").is_file())


class LeanOnnxModel:
    """`embed(texts, batch_size)` yields one unit-length float32 row per text, like fastembed's `TextEmbedding`."""

    def __init__(self, model_dir: str) -> None:
        import onnxruntime as ort
        from tokenizers import AddedToken, Tokenizer

        directory = Path(model_dir)
        config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
        special = json.loads((directory / "special_tokens_map.json").read_text(encoding="utf-8"))
        model_config_path = directory / "config.json"
        model_config = json.loads(model_config_path.read_text(encoding="utf-8")) if model_config_path.is_file() else {}
        limits = [v for v in (config.get("model_max_length"), config.get("max_length"))
                  if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**62]
        if not limits:
            raise ValueError(f"no maximum context length in {directory / 'tokenizer_config.json'}")
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        truncation = tokenizer.truncation or {}
        tokenizer.enable_truncation(max_length=min(limits),
                                    direction=config.get("truncation_side") or truncation.get("direction", "right"))
        for value in special.values():
            for token in value if isinstance(value, list) else [value]:
                tokenizer.add_special_tokens([token] if isinstance(token, str) else [AddedToken(**token)])
        padding = tokenizer.padding or {}
        pad_token = padding.get("pad_token") or config.get("pad_token")
        pad_id = padding.get("pad_id", model_config.get("pad_token_id"))
        if pad_id is None and pad_token is not None:
            pad_id = tokenizer.token_to_id(pad_token)
        if pad_token is None or pad_id is None:
            raise ValueError(f"no pad token for {directory}")
        tokenizer.enable_padding(direction=config.get("padding_side") or padding.get("direction", "right"),
                                 pad_id=pad_id, pad_type_id=padding.get("pad_type_id", 0), pad_token=pad_token,
                                 pad_to_multiple_of=padding.get("pad_to_multiple_of"), length=None)
        self.tokenizer = tokenizer
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Threads that spin between runs take a core from the rest of the turn (search runs beside the query's
        # embedding) and from whatever else the machine does: a query took 5.3 ms without spinning and 9.9 ms
        # with it on a busy 2-core machine.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(directory / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {node.name for node in self.session.get_inputs()}

    def _batch(self, texts: list[str]) -> "np.ndarray":
        import numpy as np

        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self.inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        states: np.ndarray = self.session.run(None, feed)[0]
        summed = np.sum(states, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled: NDArray[np.float64] = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norms: NDArray[np.float64] = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(states.dtype, copy=False)

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> Iterator["np.ndarray"]:
        texts = list(texts)
        for start in range(0, len(texts), batch_size):
            yield from self._batch(texts[start:start + batch_size])
