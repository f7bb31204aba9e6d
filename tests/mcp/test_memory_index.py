"""The snapshot search internals: the sparse cosine scan (exact, and capped with exact
rescoring) and the bm25 budget for very common words."""
from __future__ import annotations

import random

import pytest

from lib import embed, memory_index
from tests.mcp.conftest import claim, write_snapshot

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


@pytest.fixture
def reader(cfg):
    rng = random.Random(7)
    rows = [claim(f"01X{i:05d}", " ".join(rng.choices(WORDS, k=rng.randint(3, 8))) + f" w{i}", subject=f"s{i % 5}",
                  claim_type="outcome" if i % 2 else "convention") for i in range(600)]
    rows.append(claim("01Y00000", "hidden alpha bravo", visible=0))
    write_snapshot(cfg, claims=rows)
    r = memory_index.SnapshotReader(cfg.paths.snapshot(cfg.fleet_id))
    r.conn()
    return r


def brute_force(reader, query, limit, **filters):
    rows = reader.conn().execute("SELECT claim_id, subject, claim_type, embedding FROM claims WHERE visible_to_agents = 1").fetchall()
    q = embed.hash_embed(query)
    scored = [(embed.cosine(q, embed.from_blob(r["embedding"])), r["claim_id"]) for r in rows
              if (not filters.get("subject") or r["subject"] == filters["subject"])
              and (not filters.get("claim_type") or r["claim_type"] == filters["claim_type"])]
    return [(cid, c) for c, cid in sorted(scored, key=lambda t: (-t[0], t[1])) if c > 0][:limit]


@pytest.mark.parametrize("query, filters", [("alpha", {}), ("bravo golf kilo", {}), ("alpha w17", {"subject": "s2"}),
                                            ("lima echo", {"claim_type": "outcome"})])
def test_uncapped_scan_equals_brute_force_cosine(reader, query, filters):
    index = reader.vector_index(embed.HASH_EMBEDDER_ID)
    hits, exact = index.search(embed.hash_embed(query), 25, **filters)
    assert exact is True
    want = brute_force(reader, query, 25, **filters)
    assert [round(c, 5) for _, c in hits] == [round(c, 5) for _, c in want]
    assert {cid for cid, _ in hits} <= {cid for cid, _ in want} | {cid for cid, c in want if c == want[-1][1]} | {cid for cid, _ in hits}
    assert "01Y00000" not in {cid for cid, _ in hits}


def test_capped_scan_reports_inexact_and_rescores_exactly(reader):
    index = reader.vector_index(embed.HASH_EMBEDDER_ID)
    q = embed.hash_embed("alpha bravo charlie")
    hits, exact = index.search(q, 10, scan_cap=50, exact_rows=reader.embeddings_by_id)
    assert exact is False and hits
    truth = dict(brute_force(reader, "alpha bravo charlie", 10_000))
    for cid, c in hits:
        assert c == pytest.approx(truth[cid], abs=1e-5)
    assert [c for _, c in hits] == sorted((c for _, c in hits), reverse=True)


def test_common_words_leave_bm25_but_still_count_as_lexical(reader, monkeypatch):
    monkeypatch.setattr(memory_index, "RANK_DF_BUDGET", 10)
    found = reader.search("alpha bravo", 5)
    assert len(found["hits"]) == 5 and found["truncated"] is True
    assert all(h["matched_by"] == ["fts5", "cosine"] or h["matched_by"] == ["cosine"] for h in found["hits"])
    rows = reader.claims_by_id([h["claim_id"] for h in found["hits"]])
    assert all({"alpha", "bravo"} & set(embed.tokens(r["claim"])) for r in rows.values())


def test_rare_word_leads_bm25_and_reaches_the_fused_hits(reader):
    assert reader.fts_ranked(memory_index.match_expr(["w123", "alpha"]), 5, None, None)[0] == "01X00123"
    hits = {h["claim_id"]: h for h in reader.search("w123 alpha", 5)["hits"]}
    assert hits["01X00123"]["matched_by"] == ["fts5", "cosine"]


def test_query_terms_are_distinct_and_stopword_free():
    assert memory_index.query_terms("How do I run the tests? Run THE tests!") == ["run", "tests"]
    assert memory_index.match_expr(['say "hi"', "x"]) == '"say ""hi""" OR "x"'
    assert memory_index.match_expr([]) is None
