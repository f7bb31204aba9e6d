"""Embedders: WordLlama from its own wheel with the network blocked, the hashing fallback, and
the embedder id travelling with the snapshot (docs/design.md §10)."""
from __future__ import annotations

import pytest

from lib.memory import embed
from tests.memory.offline import vector_offline

pytestmark = pytest.mark.skipif(embed.WORDLLAMA_ID not in embed.EMBEDDERS, reason="wordllama wheel not installed")


def _cos(a, b):
    return sum(x * y for x, y in zip(a, b))


def test_wordllama_loads_from_the_wheel_with_sockets_blocked_and_imports_no_network_client():
    assert vector_offline("embed.wordllama_embed('run the tests with pytest')", ("wordllama",)) == "256 1.0 []"


def test_wordllama_vectors_equal_the_packages_own_output():
    from pathlib import Path

    import numpy as np
    import wordllama

    wl = wordllama.WordLlama.load(config="l2_supercat", dim=256, disable_download=True,
                                  cache_dir=Path(wordllama.__file__).parent)
    texts = ["pytest -x stops at the first failure", "the staging database is postgres 15"]
    ref = wl.embed(texts, norm=True)
    for i, t in enumerate(texts):
        assert np.allclose(np.array(embed.wordllama_embed(t)), ref[i], atol=1e-5)


def test_paraphrase_is_closer_than_an_unrelated_claim():
    q = embed.wordllama_embed("how do I run the unit tests")
    near = embed.wordllama_embed("run the test suite with pytest")
    far = embed.wordllama_embed("the production database runs postgres 15 on port 5432")
    assert _cos(q, near) > _cos(q, far)


def test_default_embedder_falls_back_to_hashing_without_the_wheels(monkeypatch):
    monkeypatch.delitem(embed.EMBEDDERS, embed.MINILM_ID, raising=False)
    assert embed.default_embedder()[0] == embed.WORDLLAMA_ID
    monkeypatch.delitem(embed.EMBEDDERS, embed.WORDLLAMA_ID)
    assert embed.default_embedder()[0] == embed.HASH_EMBEDDER_ID
    assert embed.get(embed.WORDLLAMA_ID) is None
