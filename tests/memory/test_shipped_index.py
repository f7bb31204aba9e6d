"""The vector index ships inside the snapshot (``claim_index``), so a new MCP server's first
search reads one row instead of decoding a blob per claim; it ranks exactly as the index built
from ``claims`` does, and a damaged row falls back to that build (docs/memory.md)."""
from __future__ import annotations

import os
import random
import sqlite3

import pytest

np = pytest.importorskip("numpy")

from lib.memory import claims, embed, snapshot  # noqa: E402
from lib.memory.memory_index import DenseIndex, SnapshotReader  # noqa: E402


def _rows(n=300, dim=embed.DIM):
    rng = random.Random(7)
    out = []
    for i in range(n):
        text = f"claim {i} about {rng.choice(['ci', 'docker', 'pytest', 'postgres'])}"
        vec = [rng.uniform(-1, 1) for _ in range(dim)]
        out.append({"claim_id": claims.claim_id("environment", text), "claim": text, "claim_type": "environment",
                    "subject": rng.choice(["Alice", "ci"]), "status": rng.choice(["promoted", "contested", "candidate"]),
                    "confidence": 0.7, "observed_by": "a", "observed_at": "2026-11-29", "independent_sessions": 1,
                    "visible_to_agents": rng.choice([1, 1, 0]), "embedding": embed.to_blob(vec), "embedder": "dense-test"})
    return out


def _write(tmp_path, rows, name="s.sqlite"):
    path = os.path.join(tmp_path, name)
    with open(path, "wb") as fh:
        fh.write(snapshot.build("f", [], rows))
    return path


def test_shipped_index_ranks_exactly_as_the_index_built_from_claims(tmp_path):
    rows = _rows()
    path = _write(tmp_path, rows)
    conn = snapshot.open_readonly(path)
    shipped = DenseIndex._from_shipped(conn, "dense-test")
    assert shipped is not None
    served = sorted(r["claim_id"] for r in rows if r["visible_to_agents"] == 1 and r["status"] != "candidate")
    assert shipped.ids == served
    conn.execute("SELECT 1")  # the reader keeps working on the same connection
    conn.close()
    con2 = sqlite3.connect(path)
    con2.execute("DROP TABLE claim_index")
    con2.commit()
    con2.close()
    built = DenseIndex.build(snapshot.open_readonly(path), "dense-test")
    q = [random.Random(1).uniform(-1, 1) for _ in range(embed.DIM)]
    for subject in (None, "alice", "ci"):
        a, _ = shipped.search(q, 20, subject)
        b, _ = built.search(q, 20, subject)
        assert [i for i, _ in a] == [i for i, _ in b]
        assert np.allclose([c for _, c in a], [c for _, c in b], atol=1e-6)


def test_a_damaged_shipped_index_falls_back_to_the_claims(tmp_path):
    path = _write(tmp_path, _rows(50))
    con = sqlite3.connect(path)
    con.execute("UPDATE claim_index SET n = n + 1")  # sizes no longer add up
    con.commit()
    con.close()
    conn = snapshot.open_readonly(path)
    assert DenseIndex._from_shipped(conn, "dense-test") is None
    assert len(DenseIndex.build(conn, "dense-test")) > 0


def test_the_same_claims_give_the_same_snapshot_bytes():
    rows = _rows(40)
    assert snapshot.build("f", [], rows) == snapshot.build("f", [], list(reversed(rows)))


def test_search_reads_the_shipped_index(tmp_path, monkeypatch):
    rows = _rows(60)
    monkeypatch.setitem(embed.EMBEDDERS, "dense-test", lambda text: [1.0] + [0.0] * (embed.DIM - 1))
    reader = SnapshotReader(_write(tmp_path, rows))
    monkeypatch.setattr(DenseIndex, "build", classmethod(lambda cls, conn, eid, chunk=8192: cls._from_shipped(conn, eid)))
    out = reader.search("claim about docker", 5)
    assert out["ranking"] == "fusion(fts5 bm25 0.30, cosine dense-test 0.70)"
