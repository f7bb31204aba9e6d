"""The snapshot search internals: the sparse cosine scan (exact, and capped with exact
rescoring) and the bm25 budget for very common words."""
from __future__ import annotations

import random

import pytest

from lib.memory import embed, memory_index
from tests.mcp.conftest import claim, write_snapshot

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


@pytest.fixture
def reader(cfg):
    rng = random.Random(7)
    rows = [claim(f"01X{i:05d}", " ".join(rng.sample(WORDS, k=rng.randint(3, 8))) + f" w{i}", subject=f"s{i % 5}",
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


def _dense(text: str):
    """A toy dense embedder: every component non-zero, deterministic per text."""
    rng = random.Random(text)
    return [rng.gauss(0, 1) for _ in range(embed.DIM)]


@pytest.fixture
def dense_reader(cfg, monkeypatch):
    monkeypatch.setitem(embed.EMBEDDERS, "toy-dense-v1", _dense)
    rows = []
    for i in range(300):
        row = claim(f"01D{i:05d}", f"dense claim number {i}", subject=f"s{i % 3}", claim_type="outcome" if i % 2 else "convention",
                    embedder="toy-dense-v1")
        row["embedding"] = embed.to_blob(_dense(f"v{i}"))
        rows.append(row)
    rows.append(dict(rows[0], claim_id="01E00000", visible_to_agents=0))
    write_snapshot(cfg, claims=rows)
    r = memory_index.SnapshotReader(cfg.paths.snapshot(cfg.fleet_id))
    r.conn()
    return r


@pytest.mark.parametrize("filters", [{}, {"subject": "S1"}, {"claim_type": "outcome"}, {"subject": "nope"}])
def test_dense_embedder_uses_the_matrix_and_equals_brute_force(dense_reader, filters):
    index = dense_reader.vector_index("toy-dense-v1")
    assert isinstance(index, memory_index.DenseIndex) and len(index) == 300
    q = _dense("v7")
    hits, exact = index.search(q, 20, **filters)
    assert exact is True
    rows = dense_reader.conn().execute("SELECT claim_id, subject, claim_type, embedding FROM claims WHERE visible_to_agents = 1")
    want = sorted(((embed.cosine(q, embed.from_blob(r["embedding"])), r["claim_id"]) for r in rows
                   if (not filters.get("subject") or r["subject"].lower() == filters["subject"].lower())
                   and (not filters.get("claim_type") or r["claim_type"] == filters["claim_type"])),
                  key=lambda t: (-t[0], t[1]))
    want = [(cid, c) for c, cid in want if c > 0][:20]
    assert [cid for cid, _ in hits] == [cid for cid, _ in want]
    assert [round(c, 4) for _, c in hits] == [round(c, 4) for _, c in want]
    if not filters:
        assert hits[0] == ("01D00007", pytest.approx(1.0))


def test_semantic_hit_without_a_shared_word_needs_the_floor(dense_reader):
    found = dense_reader.search("v7", 5)  # no claim contains the word v7; only the embedding matches
    assert [h["claim_id"] for h in found["hits"]] == ["01D00007"]
    assert found["hits"][0]["matched_by"] == ["cosine"] and found["ranking"] == "fusion(fts5 bm25 0.30, cosine toy-dense-v1 0.70)"


def test_a_failing_embedder_degrades_to_fts_with_a_note(dense_reader, monkeypatch):
    def broken(text):
        raise OSError("weights missing")

    monkeypatch.setitem(embed.EMBEDDERS, "toy-dense-v1", broken)
    found = dense_reader.search("dense claim 42", 3)
    assert found["ranking"] == "fts5 bm25 only" and "weights missing" in found["notes"][0]
    assert found["hits"] and all(h["matched_by"] == ["fts5"] for h in found["hits"])
