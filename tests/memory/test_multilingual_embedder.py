"""The multilingual embedder the README names ("Other languages") is one the config takes, fastembed offers at the
dimensions the README gives, and coop has thresholds for: its own profile, not the generic fallback."""

from __future__ import annotations

import re
import tomllib

from coop.config.loading import build_config
from coop.memory.embedder import GENERIC, MINILM, MULTILINGUAL_MINILM, MULTILINGUAL_MODEL, embedder_id, profile_of
from tests import REPO

SECTION = (REPO / "README.md").read_text(encoding="utf-8").split("\n## Other languages\n", 1)[1].split("\n## ", 1)[0]


def readme_config() -> dict:
    return tomllib.loads(re.search(r"```toml\n(.*?)```", SECTION, re.DOTALL).group(1))


def test_the_readme_config_is_valid_and_names_the_model_with_a_profile():
    embedder = build_config(readme_config()).memory.embedder
    assert (embedder.provider, embedder.model, embedder.dims) == ("fastembed", MULTILINGUAL_MODEL, 384)
    loaded = type("Loaded", (), {"id": embedder_id("fastembed", embedder.model, embedder.dims)})()
    assert profile_of(loaded) is MULTILINGUAL_MINILM and MULTILINGUAL_MINILM is not GENERIC
    assert MULTILINGUAL_MINILM.name == "paraphrase-multilingual-MiniLM-L12-v2"


def test_its_figures_are_minilms_until_measured():
    """The profile's docstring says why: a distilled copy of a MiniLM's vector space, its weights not reachable
    where it was written. A measurement changes this test with the figures."""
    assert {**vars(MULTILINGUAL_MINILM), "name": ""} == {**vars(MINILM), "name": ""}


def test_fastembed_offers_the_model_at_the_readmes_dimensions_and_size():
    from fastembed import TextEmbedding

    [described] = [m for m in TextEmbedding.list_supported_models() if m["model"] == MULTILINGUAL_MODEL]
    assert described["dim"] == 384 and "Multilingual" in described["description"]
    assert f"about {round(described['size_in_GB'] * 1000)} MB" in SECTION  # `embedder pull`'s line
    assert "128 input tokens" in described["description"] and "128 tokens" in SECTION
