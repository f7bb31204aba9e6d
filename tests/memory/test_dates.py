"""A query that names a date ranks the claims observed then first (docs/memory.md, "Ranking"):
the window :func:`lib.memory.memory_index.dates_named` reads, and its effect through a real snapshot,
with the hashing embedder (reciprocal ranks) and with no embedding at all (FTS5 only)."""
from __future__ import annotations

import os

from hypothesis import given, settings, strategies as st

from lib.memory import claims, embed, snapshot
from lib.memory.memory_index import SnapshotReader, dates_named

# Two claims about the same thing, told in sessions three months apart (LoCoMo's question shape).
MAY = "Gina got a positive response from a wholesaler for her clothing store."
AUGUST = "Gina found a new supplier of fabric for her clothing store and is happy with it."
OTHER = "Gina designed her clothing store space to be cozy and inviting for her customers."


def _reader(tmp_path, embedder=None):
    spec = []
    for text, when in ((MAY, "2023-05-02T13:56:00"), (AUGUST, "2023-08-17T10:00:00"), (OTHER, "2023-01-20T09:00:00")):
        row = {"claim_id": claims.claim_id("environment", text), "claim": text, "claim_type": "environment",
               "subject": "Gina", "status": "promoted", "confidence": 0.8, "observed_by": "a",
               "observed_at": when, "independent_sessions": 2, "visible_to_agents": 1}
        if embedder:
            row["embedding"], row["embedder"] = embed.to_blob(embedder(text)), embed.HASH_EMBEDDER_ID
        spec.append(row)
    path = os.path.join(tmp_path, "s.sqlite")
    with open(path, "wb") as fh:
        fh.write(snapshot.build("f", [], spec))
    return SnapshotReader(path)


def test_the_dates_a_query_names():
    assert dates_named("What did Gina find for her clothing store on 1 February, 2023?") == ("2023-01-29", "2023-02-03")
    assert dates_named("what did we decide on March 3rd, 2024") == ("2024-02-29", "2024-03-05")
    assert dates_named("deploy notes from 2026-11-29") == ("2026-11-26", "2026-12-01")
    assert dates_named("What did Dave record in August 2023?") == ("2023-08-01", "2023-09-01")
    assert dates_named("what broke in 2026-12") == ("2026-12-01", "2027-01-01")
    assert dates_named("an impossible 30 February, 2023") == ("2023-02-01", "2023-03-01")  # its month stands
    for nothing in ("Which outdoor spot did Joanna visit in May?", "port 2023 on host 12", "", "v1.2-2023"):
        assert dates_named(nothing) is None


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=80))
def test_any_text_names_a_valid_window_or_none(text):
    got = dates_named(text)
    assert got is None or (len(got) == 2 and got[0] < got[1] and all(len(d) == 10 for d in got))


def test_a_named_date_ranks_the_claims_observed_then_first(tmp_path):
    for embedder in (None, embed.hash_embed):
        r = _reader(tmp_path, embedder)
        try:
            for q, want in (("What did Gina find for her clothing store on 3 May, 2023?", MAY),
                            ("What did Gina find for her clothing store in August 2023?", AUGUST)):
                out = r.search(q, 3)
                rows = r.claims_by_id([h["claim_id"] for h in out["hits"]])
                assert rows[out["hits"][0]["claim_id"]]["claim"] == want, (embedder, q)
                assert "observed_at" in out["hits"][0]["matched_by"]
                assert all("observed_at" not in h["matched_by"] for h in out["hits"][1:])
            undated = r.search("What did Gina find for her clothing store?", 3)["hits"]
            assert all("observed_at" not in h["matched_by"] for h in undated)
        finally:
            r.close()
            os.unlink(r.path)
