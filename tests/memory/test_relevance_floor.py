"""memory_search returns nothing rather than the least-bad claim (docs/design.md §10)."""
from __future__ import annotations

import os

import pytest

from lib.memory import claims, embed, snapshot
from lib.memory.memory_index import SnapshotReader

CLAIMS = [("Configure pytest with `-x -q` in pytest.ini", "convention", "tests"),
          ("The staging database runs postgres 15 on port 5432", "environment", "database"),
          ("Run the Phoenix dev server in the background with mix phx.server", "convention", "dev server")]


def _snapshot(tmp_path, emb):
    rows = []
    for text, ctype, subject in CLAIMS:
        row = {"claim_id": claims.claim_id(ctype, text), "claim": text, "claim_type": ctype, "subject": subject,
               "status": "promoted", "confidence": 0.8, "observed_by": "a", "observed_at": "2026-11-29",
               "independent_sessions": 2, "visible_to_agents": 1}
        if emb:
            row.update(embedding=embed.to_blob(emb[1](text)), embedder=emb[0])
        rows.append(row)
    meta = {}
    if emb and emb[0] in embed.RELEVANCE_FLOORS:
        meta = {"relevance_floor": embed.RELEVANCE_FLOORS[emb[0]], "relevance_floor_mixed": embed.RELEVANCE_FLOORS_MIXED[emb[0]]}
    path = os.path.join(tmp_path, "s.sqlite")
    with open(path, "wb") as fh:
        fh.write(snapshot.build("f", [], rows, meta=meta))
    return SnapshotReader(path)


@pytest.mark.parametrize("emb", [None, (embed.HASH_EMBEDDER_ID, embed.hash_embed),
                                 pytest.param((embed.WORDLLAMA_ID, embed.get(embed.WORDLLAMA_ID)), id="wordllama",
                                              marks=pytest.mark.skipif(embed.WORDLLAMA_ID not in embed.EMBEDDERS,
                                                                       reason="wordllama not installed"))],
                         ids=["fts", "hash", "wordllama"])
def test_one_shared_common_word_is_not_an_answer(tmp_path, emb):
    r = _snapshot(tmp_path, emb)
    out = r.search("how do I configure a kafka consumer group", 5)
    assert out["hits"] == []
    assert any("relevance floor" in n for n in out["notes"])


@pytest.mark.parametrize("emb", [None, (embed.HASH_EMBEDDER_ID, embed.hash_embed)], ids=["fts", "hash"])
def test_two_shared_words_are_an_answer(tmp_path, emb):
    r = _snapshot(tmp_path, emb)
    hits = r.search("which port does the postgres database use", 5)["hits"]
    assert hits and hits[0]["claim_id"] == claims.claim_id("environment", CLAIMS[1][0])


@pytest.mark.skipif(embed.WORDLLAMA_ID not in embed.EMBEDDERS, reason="wordllama not installed")
def test_semantic_paraphrase_passes_the_calibrated_floor(tmp_path):
    r = _snapshot(tmp_path, (embed.WORDLLAMA_ID, embed.get(embed.WORDLLAMA_ID)))
    hits = r.search("how do I run the elixir web server without blocking", 5)["hits"]
    assert hits and hits[0]["claim_id"] == claims.claim_id("convention", CLAIMS[2][0])
