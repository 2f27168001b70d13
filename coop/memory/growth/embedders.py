"""Embedders: the three kinds of `Embedder` (fastembed, a remote API through litellm, hash), with stable ids.

An embedder's id is `provider/model/dims` and is stored beside every vector it makes, so vectors from two models
(or two sizes of one model) are never compared: a search only reads vectors whose id equals the loaded
embedder's. Every embedder returns float32 rows of unit length, so a dot product is the cosine.

Loading can fail (no model on an offline machine, a missing key): `load_embedder` then returns the reason
instead of raising, and coop runs on full-text retrieval alone until `coop memory reembed` fills the vectors in.
coop never downloads a model on its own: a model that is not on disk is reported at once (`missing_model`, a
look at the disk) unless `memory.embedder.download` is set; `coop memory embedder pull` downloads it when asked.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop.errors import EmbedderError
from coop.memory.embedder import Embedder, embedder_id

if TYPE_CHECKING:
    import numpy as np
    from fastembed import TextEmbedding
    from numpy.typing import NDArray

    from coop.config.loading import EmbedderConfig
    from coop.memory.growth.onnx_embed import LeanOnnxModel

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# The provision tool writes here by default; coop looks here before asking fastembed to download anything.
PROVISIONED_DIR_NAME = "all-MiniLM-L6-v2-onnx"
REQUIRED_MODEL_FILES = ("model.onnx", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _normalise(matrix: "np.ndarray") -> "np.ndarray":
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float32)
    norms: NDArray[np.float32] = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows / norms


def _check_shape(matrix: "np.ndarray", count: int, dims: int, what: str) -> "np.ndarray":
    if matrix.ndim != 2 or matrix.shape[0] != count:
        raise EmbedderError(f"{what} returned {matrix.shape[0] if matrix.ndim else 0} vectors for {count} texts",
                            hint="check the embedding provider")
    if matrix.shape[1] != dims:
        raise EmbedderError(f"{what} returned {matrix.shape[1]}-dimensional vectors, the config says {dims}",
                            hint=f"set memory.embedder.dims = {matrix.shape[1]}, then run `coop memory reembed`")
    return matrix


class HashEmbedder:
    """Deterministic bag-of-words vectors from hashed tokens: no semantics, for tests and for machines with no
    model at all. Texts sharing words get a positive cosine, which is enough to exercise every code path."""

    def __init__(self, dims: int = 384) -> None:
        self.dims = dims
        self.id = embedder_id("hash", "tokens", dims)

    def _one(self, text: str) -> "np.ndarray":
        import numpy as np

        vector = np.zeros(self.dims, dtype=np.float32)
        for token in re.findall(r"\w+", text.casefold()):
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self.dims
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        if not vector.any():
            vector[0] = 1.0
        return vector

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return _normalise(np.stack([self._one(t) for t in texts]))

    def embed_query(self, text: str) -> "np.ndarray":
        row: np.ndarray = self.embed([text])[0]
        return row


def model_cache() -> Path:
    """coop's folder of local models: `COOP_MODEL_CACHE`, else ~/.cache/coop-models."""
    return Path(os.environ.get("COOP_MODEL_CACHE") or Path.home() / ".cache" / "coop-models")


def provisioned_model_dir() -> Path:
    """Where `provision-embedder-model` puts the default model unless told otherwise."""
    return model_cache() / PROVISIONED_DIR_NAME


def fastembed_cache_dir() -> Path:
    """Where fastembed keeps what `coop memory embedder pull` downloaded: `FASTEMBED_CACHE_PATH` when set, else
    coop's model folder; never fastembed's own default, the system's temporary folder, which a reboot may
    empty."""
    return Path(os.environ.get("FASTEMBED_CACHE_PATH") or model_cache() / "fastembed")


def in_fastembed_cache(model: str) -> bool:
    """Whether a download of `model` seems to be in fastembed's cache: a directory named after the model with an
    ONNX file under it. A cheap look at the disk, so a machine without the model learns so at once, without
    importing fastembed or asking the hub."""
    name = model.split("/")[-1].casefold()
    cache = fastembed_cache_dir()
    try:
        entries = [p for p in cache.iterdir() if name in p.name.casefold()]
    except OSError:
        return False
    return any(next(entry.rglob("*.onnx"), None) is not None for entry in entries)


def missing_model(config: "EmbedderConfig") -> str | None:
    """Why the configured fastembed model cannot be loaded without a download, or None when it can (or when
    downloads are allowed, or another provider is configured)."""
    if config.provider != "fastembed" or config.download or resolve_model_path(config) is not None:
        return None
    if in_fastembed_cache(config.model):
        return None
    return f"the embedding model {config.model.split('/')[-1]} is not on this machine"


MISSING_MODEL_HINT = ("run `coop memory embedder pull` to download it (about 90 MB), or set "
                      "memory.embedder.model_path to a local model directory; until then search uses full text")


def resolve_model_path(config: "EmbedderConfig") -> str | None:
    """The local model directory to load: `model_path` if set, else the provisioned default (for the default
    model only); None means fastembed's own cache, which may download from the model hub."""
    if config.model_path:
        return str(Path(config.model_path).expanduser())
    if config.model == DEFAULT_MODEL and (provisioned_model_dir() / "model.onnx").is_file():
        return str(provisioned_model_dir())
    return None


class FastEmbedEmbedder:
    """fastembed's ONNX models on the CPU. Imported on first use: importing fastembed costs about a second. The
    default model from a local directory runs through `onnx_embed.LeanOnnxModel` instead, which makes the same
    vectors without importing fastembed (a faster cold start); the id stays fastembed's."""

    def __init__(self, model: str, dims: int, model_path: str | None = None, batch_size: int = 32, *,
                 download: bool = False) -> None:
        self.dims = dims
        self.id = embedder_id("fastembed", model, dims)
        self.batch_size = batch_size
        if model_path is not None:
            missing = [f for f in REQUIRED_MODEL_FILES if not (Path(model_path) / f).is_file()]
            if missing:
                raise EmbedderError(f"model directory {model_path} lacks {', '.join(missing)}",
                                    hint="point memory.embedder.model_path at a complete fastembed model directory")
        try:
            from coop.memory.growth import onnx_embed

            self._model: LeanOnnxModel | TextEmbedding
            # the default model from a local directory: no fastembed import
            if model_path is not None and onnx_embed.usable(model, model_path):
                self._model = onnx_embed.LeanOnnxModel(model_path)
            else:
                from fastembed import TextEmbedding
                from loguru import logger

                logger.disable("fastembed")  # its download errors would be printed over the REPL; ours say it
                kwargs: dict[str, Any] = {"specific_model_path": model_path} if model_path else {}
                self._model = TextEmbedding(model, cache_dir=str(fastembed_cache_dir()), local_files_only=not download,
                                            **kwargs)
        except Exception as exc:
            raise EmbedderError(f"cannot load embedding model {model}: {type(exc).__name__}: {str(exc)[:200]}",
                                hint="set memory.embedder.model_path to a local model directory "
                                     "(see the README: provision-embedder-model)") from None
        probe = self.embed(["probe"])
        if probe.shape[1] != dims:
            raise EmbedderError(f"model {model} makes {probe.shape[1]}-dimensional vectors, the config says {dims}",
                                hint=f"set memory.embedder.dims = {probe.shape[1]}")

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        # Shortest first: a batch is padded to its longest text, so batches of like lengths waste less work
        # (a backlog of mixed messages embeds markedly faster); the rows are put back in the callers' order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        try:
            rows = list(self._model.embed([texts[i] for i in order], batch_size=self.batch_size))
        except Exception as exc:
            raise EmbedderError(f"embedding failed: {type(exc).__name__}: {str(exc)[:200]}",
                                hint="run `coop check`") from None
        matrix = _check_shape(np.asarray(rows), len(texts), self.dims, "fastembed")
        restored = np.empty_like(matrix)
        restored[order] = matrix
        return _normalise(restored)

    def embed_query(self, text: str) -> "np.ndarray":
        row: np.ndarray = self.embed([text])[0]
        return row


# A remote embedding call: (model, texts, api_base, api_key) -> one vector per text. `coop.model.llm.embed` is the one
# coop uses; the engine takes it as a value so that it never imports litellm itself.
RemoteEmbed = Callable[..., "list[list[float]]"]


class LiteLLMEmbedder:
    """A remote embedding model through litellm (OpenAI, Voyage, Cohere, or any OpenAI-compatible api_base)."""

    def __init__(self, model: str, dims: int, api_base: str = "", api_key_env: str = "",
                 batch_size: int = 64, *, remote: RemoteEmbed) -> None:
        if not model:
            raise EmbedderError("memory.embedder.model is empty", hint="name a litellm embedding model")
        self.model = model
        self.dims = dims
        self.id = embedder_id("litellm", model, dims)
        self.api_base = api_base or None
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.remote = remote

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        api_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            rows.extend(self.remote(self.model, list(texts[start:start + self.batch_size]),
                                  api_base=self.api_base, api_key=api_key))
        return _normalise(_check_shape(np.asarray(rows, dtype=np.float32), len(texts), self.dims, self.model))

    def embed_query(self, text: str) -> "np.ndarray":
        row: np.ndarray = self.embed([text])[0]
        return row


@dataclass(frozen=True)
class EmbedderStatus:
    """What happened when the configured embedder was loaded: the embedder, or why there is none."""

    embedder: Embedder | None
    configured_id: str
    error: str | None = None
    hint: str | None = None


def load_embedder(config: "EmbedderConfig", *, remote: RemoteEmbed | None = None) -> EmbedderStatus:
    """Build the configured embedder; never raises, so a missing model only turns the vector leg off. `remote`
    makes the calls of a litellm embedder (`coop.services` passes `coop.model.llm.embed`)."""
    configured = embedder_id(config.provider, config.model if config.provider != "hash" else "tokens", config.dims)
    try:
        if config.provider == "hash":
            embedder: Embedder = HashEmbedder(config.dims)
        elif config.provider == "fastembed":
            missing = missing_model(config)
            if missing is not None:
                raise EmbedderError(missing, hint=MISSING_MODEL_HINT)
            embedder = FastEmbedEmbedder(config.model, config.dims, resolve_model_path(config), config.batch_size,
                                         download=config.download)
        elif config.provider == "litellm":
            if remote is None:
                raise EmbedderError("no way to reach a remote embedding model here",
                                    hint="load the embedder through coop.services")
            embedder = LiteLLMEmbedder(config.model, config.dims, config.api_base, config.api_key_env,
                                       config.batch_size, remote=remote)
        else:
            raise EmbedderError(f"unknown embedder provider {config.provider!r}",
                                hint="use fastembed, litellm or hash")
    except EmbedderError as exc:
        return EmbedderStatus(None, configured, exc.message, exc.hint)
    return EmbedderStatus(embedder, configured)
