"""The hash256-v1 embedder: deterministic, unit length, stored as 1,024 little-endian bytes."""
from __future__ import annotations

import math
import struct
import subprocess
import sys

import pytest

from lib.memory import embed
from tests.conftest import ROOT


def test_vector_has_256_components_and_unit_length():
    v = embed.hash_embed("cargo test needs RUSTFLAGS to be set")
    assert len(v) == 256
    assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5)


def test_text_without_tokens_embeds_to_zeros():
    assert not any(embed.hash_embed("the of and ... !!"))
    assert embed.cosine(embed.hash_embed(""), embed.hash_embed("x")) == 0.0


def test_same_text_is_identical_across_processes():
    here = embed.to_blob(embed.hash_embed("Flaky integration tests on CI"))
    code = "from lib.memory import embed; import sys; sys.stdout.buffer.write(embed.to_blob(embed.hash_embed('Flaky integration tests on CI')))"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PYTHONPATH": ROOT}).stdout
    assert here == there


def test_blob_is_little_endian_float32_and_round_trips():
    v = embed.hash_embed("postgres migrations")
    blob = embed.to_blob(v)
    assert len(blob) == embed.BLOB_BYTES == 1024
    assert list(struct.unpack("<256f", blob)) == list(v)
    assert list(embed.from_blob(blob)) == list(v)
    with pytest.raises(ValueError):
        embed.from_blob(blob[:-4], embed.DIM)
    with pytest.raises(ValueError):
        embed.from_blob(blob[:-3])
    with pytest.raises(ValueError):
        embed.to_blob([1.0] * 3)


def test_cosine_prefers_shared_words_and_ignores_stopwords_and_case():
    q = embed.hash_embed("How do I run the postgres migrations?")
    near = embed.hash_embed("Postgres migrations run with make migrate")
    far = embed.hash_embed("The frontend bundle is built by vite")
    assert embed.cosine(q, near) > 0.5 > embed.cosine(q, far)
    assert embed.cosine(embed.hash_embed("POSTGRES"), embed.hash_embed("the postgres")) == pytest.approx(1.0)


def test_registry_knows_only_what_it_can_compute():
    assert embed.get(embed.HASH_EMBEDDER_ID) is embed.hash_embed
    assert embed.get("no-such-embedder-256") is None
