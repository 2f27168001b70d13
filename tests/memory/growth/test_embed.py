"""Embedders: stable ids, unit vectors, dimension checks, graceful failure, and the three providers."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from coop.config.loading import EmbedderConfig
from coop.errors import EmbedderError
from coop.memory.growth.embedders import HashEmbedder, LiteLLMEmbedder, load_embedder
from coop.model import llm


def test_hash_embedder_is_deterministic_unit_length_and_word_sensitive():
    embedder = HashEmbedder(64)
    a, b, c = embedder.embed(["red apples", "red apples", "blue ocean"])
    assert embedder.id == "hash/tokens/64"
    assert np.allclose(a, b) and abs(float(np.linalg.norm(a)) - 1) < 1e-6
    assert float(a @ embedder.embed_query("apples")) > float(c @ embedder.embed_query("apples"))
    assert embedder.embed([]).shape == (0, 64)


def test_load_embedder_reports_a_missing_model_instead_of_raising(tmp_path):
    status = load_embedder(EmbedderConfig(provider="fastembed", model_path=str(tmp_path)))
    assert status.embedder is None
    assert "model.onnx" in status.error and "model_path" in status.hint
    assert status.configured_id == "fastembed/sentence-transformers/all-MiniLM-L6-v2/384"


def test_load_embedder_hash():
    status = load_embedder(EmbedderConfig(provider="hash", dims=32))
    assert status.embedder is not None and status.embedder.id == status.configured_id == "hash/tokens/32"


def _scripted_vector(text: str, dims: int = 16) -> list[float]:
    seed = int.from_bytes(hashlib.sha1(text.encode()).digest()[:4], "little")
    return list(np.random.default_rng(seed).standard_normal(dims))


def test_litellm_embedder_calls_the_configured_server(openai_server, monkeypatch):
    openai_server.embed = _scripted_vector
    monkeypatch.setenv("MY_EMBED_KEY", "sk-test-embed-123456")
    embedder = LiteLLMEmbedder("openai/text-embedding-3-small", 16, remote=llm.embed, api_base=openai_server.api_base,
                               api_key_env="MY_EMBED_KEY", batch_size=2)
    vectors = embedder.embed(["one", "two", "three"])
    assert vectors.shape == (3, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = np.asarray(_scripted_vector("two"), dtype=np.float32)
    assert np.allclose(vectors[1], expected / np.linalg.norm(expected), atol=1e-5)
    bodies = [r["body"] for r in openai_server.requests]
    assert [b["input"] for b in bodies] == [["one", "two"], ["three"]]  # batched in input order
    assert all(b["model"] == "text-embedding-3-small" for b in bodies)
    assert openai_server.requests[0]["authorization"] == "Bearer sk-test-embed-123456"
    assert embedder.id == "litellm/openai/text-embedding-3-small/16"


def test_litellm_embedder_detects_a_dimension_mismatch(openai_server):
    openai_server.embed = lambda text: _scripted_vector(text, 24)
    embedder = LiteLLMEmbedder("openai/text-embedding-3-small", 16, remote=llm.embed, api_base=openai_server.api_base)
    with pytest.raises(EmbedderError) as excinfo:
        embedder.embed(["hello"])
    assert "24-dimensional" in excinfo.value.message and "dims = 24" in excinfo.value.hint


def test_litellm_embedder_maps_provider_errors_without_the_key(openai_server, monkeypatch):
    openai_server.status = 401
    monkeypatch.setenv("MY_EMBED_KEY", "sk-secret-should-not-leak")
    embedder = LiteLLMEmbedder("openai/text-embedding-3-small", 16, remote=llm.embed, api_base=openai_server.api_base,
                               api_key_env="MY_EMBED_KEY")
    with pytest.raises(EmbedderError.__mro__[1]) as excinfo:  # ModelError
        embedder.embed(["hello"])
    assert "sk-secret-should-not-leak" not in excinfo.value.message
    assert excinfo.value.exit_code == 4 and excinfo.value.hint


@pytest.mark.real_model
def test_fastembed_real_model_loads_from_a_local_directory(real_model_dir):
    status = load_embedder(EmbedderConfig(provider="fastembed", model_path=real_model_dir))
    assert status.error is None
    embedder = status.embedder
    vectors = embedder.embed(["I adore long walks on mountain trails", "I owe Ana twenty euros"])
    assert vectors.shape == (2, 384)
    hiking = embedder.embed_query("hiking")
    assert float(vectors[0] @ hiking) > 0.655 > float(vectors[1] @ hiking)


@pytest.mark.real_model
def test_fastembed_dimension_mismatch_is_reported(real_model_dir):
    status = load_embedder(EmbedderConfig(provider="fastembed", model_path=real_model_dir, dims=768))
    assert status.embedder is None and "384" in status.error and "dims = 384" in status.hint


def test_a_batch_of_mixed_lengths_comes_back_in_the_callers_order(real_embedder):
    """Texts are embedded shortest first (less padding); each row must still be its own text's vector."""
    texts = ["a long message about the mountain trail we walked last summer with the dog and two friends",
             "hi", "my sister lives in Lisbon", "ok then", "the meeting moved to Thursday afternoon at three"]
    together = real_embedder.embed(texts)
    alone = np.stack([real_embedder.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)
