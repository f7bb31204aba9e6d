"""Claim embeddings are cached across snapshots by claim id and embedder (lib/memory/gate.py embed_claims,
lib/memory/snapshot.py previous_embeddings): a maintenance pass embeds only the claims the published
snapshot does not already carry. Real hook, syncd and maint (docs/memory.md)."""
from __future__ import annotations

import json
import os
import sqlite3

from lib.memory import embed, gate
from tests.memory.test_claim_flow import _propose, _run, _session, env  # noqa: F401  (env is a fixture)


def _snapshot_embeddings(home: str) -> dict:
    path = os.path.join(home, "cache", "mem", "snapshot.bin")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {cid: (eid, blob) for cid, eid, blob in conn.execute("SELECT claim_id, embedder, embedding FROM claims")}
    finally:
        conn.close()


def test_a_second_pass_embeds_only_the_new_claim(env, home):  # noqa: F811
    _session(env, "alice", "sess-a", "toolu_A1", home)
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice"))
    _propose(home, "alice", "sess-a", "toolu_A1", "01JREC0000000000000000000A")
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice"))
    first = json.loads(_run(["maint.py", "--once", "--json"], dict(env, CTXLAKE_AGENT_ID="alice")).stdout)
    assert (first["embedded"], first["embeddings_reused"]) == (1, 0)
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice"))
    before = _snapshot_embeddings(home)

    again = json.loads(_run(["maint.py", "--once", "--json"], dict(env, CTXLAKE_AGENT_ID="alice")).stdout)
    assert (again["embedded"], again["embeddings_reused"]) == (0, 1)

    _session(env, "bob", "sess-b", "toolu_B1", home)
    rec = os.path.join(home, "spool", "mcp", "mem.ndjson")
    with open(rec, "a") as fh:
        fh.write(json.dumps({"kind": "proposed", "record_id": "01JREC0000000000000000000D", "fleet_id": "mem",
                             "agent_id": "bob", "session_id": "sess-b", "requested_at": "2026-11-29T12:00:00.000Z",
                             "claim_id": "x", "claim": "The staging database is postgres 15", "claim_type": "environment",
                             "subject": "staging", "scope": "agent", "observed_by": "bob",
                             "observed_at": "2026-11-29T12:00:00.000Z",
                             "evidence": [{"session_id": "sess-b", "message_id": "toolu_B1"}]}) + "\n")
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="bob"))
    third = json.loads(_run(["maint.py", "--once", "--json"], dict(env, CTXLAKE_AGENT_ID="bob")).stdout)
    assert (third["embedded"], third["embeddings_reused"]) == (1, 1)
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="bob"))
    after = _snapshot_embeddings(home)
    assert len(after) == 2
    (old_id,) = before
    assert after[old_id] == before[old_id]  # the reused vector is byte-identical
    eid, _ = embed.default_embedder()
    assert {e for e, _ in after.values()} == {eid}
    assert {len(b) for _, b in after.values()} == {4 * embed.DIMS[eid]}


def test_a_cached_blob_of_the_wrong_size_is_recomputed_and_unknown_ids_are_embedded():
    folded = {"a" * 24: {"claim": "run pytest -x"}, "b" * 24: {"claim": "the staging database is postgres 15"}}
    good = embed.to_blob(embed.hash_embed("run pytest -x"))
    vectors, reused = gate.embed_claims(folded, embed.HASH_EMBEDDER_ID, embed.hash_embed, {"a" * 24: good, "b" * 24: b"\0" * 12})
    assert reused == 1 and set(vectors) == set(folded)
    assert list(vectors["b" * 24]) == list(embed.hash_embed("the staging database is postgres 15"))
    assert gate.embed_claims(folded, None, None, {}) == ({}, 0)


def test_an_unreadable_published_snapshot_means_no_cache_and_a_log_line_not_a_failure():
    from lib import lake
    from lib.memory import snapshot
    from lib.store import OVERWRITE
    from lib.store.memory import MemoryStore

    store, logged = MemoryStore(), []
    assert snapshot.previous_embeddings(store, "f", embed.HASH_EMBEDDER_ID) == {}  # nothing published yet
    vec = embed.hash_embed("run pytest -x")
    rows = [{"claim_id": "a" * 24, "claim": "run pytest -x", "claim_type": "outcome", "status": "promoted",
             "visible_to_agents": 1, "embedding": embed.to_blob(vec), "embedder": embed.HASH_EMBEDDER_ID}]
    data = snapshot.build("f", [], rows)
    snapshot.publish(store, "f", data, maint_epoch=1, built_at="2026-11-29T12:00:00Z", claim_count=1, session_count=0)
    assert snapshot.previous_embeddings(store, "f", embed.HASH_EMBEDDER_ID) == {"a" * 24: embed.to_blob(vec)}
    assert snapshot.previous_embeddings(store, "f", embed.MINILM_ID) == {}  # another embedder's space
    store.put(lake.snapshot_blob_key("f", snapshot.sha256(data)), b"not sqlite", OVERWRITE)
    got = snapshot.previous_embeddings(store, "f", embed.HASH_EMBEDDER_ID,
                                       log=lambda event, **kw: logged.append((event, kw)))
    assert got == {} and logged[0][0] == "embedding_cache_unavailable" and "does not match" in logged[0][1]["error"]
