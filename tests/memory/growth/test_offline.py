"""A machine without the embedding model: coop never goes to the model hub on its own, says so in one line at
once, and works on full text; `coop memory embedder pull` is the way to ask for the download."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coop.config.loading import EmbedderConfig
from coop.memory.growth import embedders
from coop.memory.growth.embedders import load_embedder, missing_model


@pytest.fixture
def no_model(tmp_path, monkeypatch) -> dict[str, str]:
    """fastembed configured, with neither the provisioned directory nor anything in fastembed's cache."""
    env = {"COOP_MEMORY_EMBEDDER_PROVIDER": "fastembed", "FASTEMBED_CACHE_PATH": str(tmp_path / "fastembed-cache"),
           "COOP_MODEL_CACHE": str(tmp_path / "no-provisioned-model")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # coop itself must not reach for the hub
    return env


def test_a_missing_model_is_reported_without_loading_fastembed(no_model):
    code = ("import sys; from coop.config.loading import EmbedderConfig; "
            "from coop.memory.growth.embedders import load_embedder; "
            "s = load_embedder(EmbedderConfig()); print(s.embedder is None, 'fastembed' in sys.modules); "
            "print(s.error); print(s.hint)")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         timeout=60).stdout.splitlines()
    assert out[0] == "True False"  # no embedder, and fastembed (which would go to the hub) never imported
    assert out[1] == "the embedding model all-MiniLM-L6-v2 is not on this machine"
    assert "coop memory embedder pull" in out[2]


def test_search_without_the_model_says_so_in_one_line_and_finds_by_words(no_model, run_cli):
    assert run_cli("memory", "add", "I adore long walks on mountain trails").exit_code == 0
    result = run_cli("memory", "search", "mountain")
    assert result.exit_code == 0 and "mountain trails" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: no embedder: the embedding model all-MiniLM-L6-v2 is not on this machine; "
                        "using full-text search only"]
    assert "Could not download" not in result.stderr and "ERROR" not in result.stderr


def test_a_model_in_fastembeds_cache_is_found_and_loaded_without_downloads(no_model, monkeypatch):
    cached = Path(no_model["FASTEMBED_CACHE_PATH"]) / "models--qdrant--all-MiniLM-L6-v2-onnx" / "snapshots" / "x"
    cached.mkdir(parents=True)
    (cached / "model.onnx").write_bytes(b"")
    assert missing_model(EmbedderConfig()) is None
    seen: dict[str, object] = {}

    class FakeTextEmbedding:
        def __init__(self, model, **kwargs):
            seen.update(kwargs, model=model)

        def embed(self, texts, batch_size=32):
            return [[1.0] + [0.0] * 383 for _ in texts]

    import fastembed

    monkeypatch.setattr(fastembed, "TextEmbedding", FakeTextEmbedding)
    status = load_embedder(EmbedderConfig())
    assert status.embedder is not None and seen["local_files_only"] is True  # the cache, never the hub


def test_downloads_happen_only_when_the_setting_allows_them(no_model, monkeypatch):
    seen: dict[str, object] = {}

    class FakeTextEmbedding:
        def __init__(self, model, **kwargs):
            seen.update(kwargs)

        def embed(self, texts, batch_size=32):
            return [[1.0] + [0.0] * 383 for _ in texts]

    import fastembed

    monkeypatch.setattr(fastembed, "TextEmbedding", FakeTextEmbedding)
    assert missing_model(EmbedderConfig(download=True)) is None
    assert load_embedder(EmbedderConfig(download=True)).embedder is not None
    assert seen["local_files_only"] is False


def test_embedder_status_and_pull_when_the_model_is_there(run_cli, real_model_dir, monkeypatch):
    monkeypatch.setenv("COOP_MEMORY_EMBEDDER_PROVIDER", "fastembed")
    monkeypatch.setenv("COOP_MEMORY_EMBEDDER_MODEL_PATH", real_model_dir)
    status = run_cli("memory", "embedder", "status")
    assert status.exit_code == 0 and real_model_dir in status.stdout
    pulled = run_cli("memory", "embedder", "pull")
    assert pulled.exit_code == 0 and "already on this machine" in pulled.stdout


def test_embedder_status_without_the_model_is_a_one_line_error(no_model, run_cli):
    result = run_cli("memory", "embedder", "status")
    assert result.exit_code == 4
    assert result.stderr.splitlines()[0] == "error: the embedding model all-MiniLM-L6-v2 is not on this machine"
    assert "coop memory embedder pull" in result.stderr


def test_pull_for_a_remote_embedder_is_a_usage_error(run_cli, monkeypatch):
    monkeypatch.setenv("COOP_MEMORY_EMBEDDER_PROVIDER", "litellm")
    result = run_cli("memory", "embedder", "pull")
    assert result.exit_code == 2 and "no local model to pull" in result.stderr


def test_the_cache_check_reads_fastembeds_own_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "elsewhere"))
    assert embedders.fastembed_cache_dir() == tmp_path / "elsewhere"


def test_a_pulled_model_is_kept_in_coops_model_folder_not_the_temporary_one(tmp_path, monkeypatch, run_cli):
    """fastembed's own default is the system's temporary folder, which a reboot may empty: a pull goes beside
    the provisioned model, and the status finds it there."""
    import tempfile

    monkeypatch.delenv("FASTEMBED_CACHE_PATH", raising=False)
    monkeypatch.setenv("COOP_MEMORY_EMBEDDER_PROVIDER", "fastembed")
    monkeypatch.delenv("COOP_MODEL_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    cache = embedders.fastembed_cache_dir()
    assert cache == tmp_path / "user" / ".cache" / "coop-models" / "fastembed"
    assert cache != Path(tempfile.gettempdir()) / "fastembed_cache"  # fastembed's own default
    (cache / "models--qdrant--all-MiniLM-L6-v2-onnx" / "snapshots" / "x").mkdir(parents=True)
    (cache / "models--qdrant--all-MiniLM-L6-v2-onnx" / "snapshots" / "x" / "model.onnx").write_bytes(b"onnx")
    status = run_cli("memory", "embedder", "status")
    assert status.exit_code == 0 and f"in fastembed's cache, {cache}" in " ".join(status.stdout.split())
