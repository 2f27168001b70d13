"""The lean runner for the default model (coop.memory.growth.onnx_embed) makes exactly fastembed's vectors, and is what
a local model directory loads, so a cold search does not import fastembed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = ["I adore long walks on mountain trails", "", " ", "x" * 5000, "word " * 600, "東京タワーの近くに住んでいます 😀",
         "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.", "probe"] * 5


@pytest.mark.real_model
@pytest.mark.slow  # two models over 40 texts, twice
def test_lean_runner_vectors_equal_fastembeds(real_model_dir):
    from fastembed import TextEmbedding

    from coop.memory.growth.onnx_embed import LeanOnnxModel

    reference = TextEmbedding(MODEL, specific_model_path=real_model_dir)
    lean = LeanOnnxModel(real_model_dir)
    for batch_size in (32, 3):
        want = np.stack(list(reference.embed(TEXTS, batch_size=batch_size)))
        got = np.stack(list(lean.embed(TEXTS, batch_size=batch_size)))
        assert got.dtype == want.dtype == np.float32 and got.shape == want.shape == (len(TEXTS), 384)
        assert np.abs(got - want).max() < 1e-6


@pytest.mark.real_model
def test_a_local_default_model_loads_without_importing_fastembed(real_model_dir):
    code = ("import sys; from coop.memory.growth.embedders import FastEmbedEmbedder; "
            f"e = FastEmbedEmbedder({MODEL!r}, 384, {real_model_dir!r}); v = e.embed_query('hiking'); "
            "assert v.shape == (384,) and abs(float((v * v).sum()) - 1) < 1e-5; "
            "assert e.id == 'fastembed/sentence-transformers/all-MiniLM-L6-v2/384'; "
            "print('fastembed' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_the_lean_runner_is_only_for_the_default_model_from_a_directory(tmp_path, monkeypatch):
    from coop.memory.growth.onnx_embed import usable

    (tmp_path / "model.onnx").write_bytes(b"")
    assert usable(MODEL, str(tmp_path))
    assert not usable(MODEL, None)  # fastembed's own cache: leave it to fastembed
    assert not usable("BAAI/bge-small-en-v1.5", str(tmp_path))
    assert not usable(MODEL, str(tmp_path / "missing"))
    monkeypatch.setenv("COOP_EMBEDDER_FASTEMBED", "1")
    assert not usable(MODEL, str(tmp_path))
