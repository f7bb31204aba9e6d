"""A query that names someone is answered with that person's claims or with nothing
(docs/memory.md, the relevance floor): never with another person's claim, nor with an
unrelated claim that only shares the name. Cases from LoCoMo's question shapes."""
from __future__ import annotations

import os

from lib.memory import claims, snapshot
from lib.memory.memory_index import SnapshotReader

PEOPLE = [("Jolene's mother passed away last year.", "Jolene"),
          ("Jolene spent two weeks in Bogota in March and loved the food.", "Jolene"),
          ("Deborah visited Bogota for a yoga retreat.", "Deborah"),
          ("Melanie realized self-care is important after her charity race.", "Melanie"),
          ("Caroline attended an LGBTQ support group and found it inspiring.", "Caroline"),
          ("Run the test suite with pytest -x before pushing.", "test runner")]


def _reader(tmp_path, rows=PEOPLE):
    spec = []
    for text, subject in rows:
        spec.append({"claim_id": claims.claim_id("environment", text), "claim": text, "claim_type": "environment",
                     "subject": subject, "status": "promoted", "confidence": 0.8, "observed_by": "a",
                     "observed_at": "2026-11-29", "independent_sessions": 2, "visible_to_agents": 1})
    path = os.path.join(tmp_path, "s.sqlite")
    with open(path, "wb") as fh:
        fh.write(snapshot.build("f", [], spec))
    return SnapshotReader(path)


def _texts(reader, q):
    hits = [h["claim_id"] for h in reader.search(q, 10)["hits"]]
    rows = reader.claims_by_id(hits)
    return [rows[h]["claim"] for h in hits]


def test_a_claim_sharing_only_the_name_is_not_an_answer(tmp_path):
    assert _texts(_reader(tmp_path), "When was Jolene in Bogota?") == [PEOPLE[1][0]]


def test_another_persons_claim_never_answers_a_question_about_someone(tmp_path):
    r = _reader(tmp_path)
    assert _texts(r, "What did Caroline realize after her charity race?") == []  # LoCoMo's adversarial shape
    assert PEOPLE[3][0] in _texts(r, "What did Melanie realize after her charity race?")


def test_names_are_proper_nouns_of_the_snapshot_and_topics_never_restrict(tmp_path):
    r = _reader(tmp_path)
    assert r.entities() == {"jolene", "deborah", "melanie", "caroline"}
    assert r.named_in("how does the TEST RUNNER work for jolene") == {"jolene"}
    assert _texts(r, "which flags does pytest take in the test runner") == [PEOPLE[5][0]]


def test_a_question_about_two_people_may_be_answered_about_either(tmp_path):
    got = _texts(_reader(tmp_path), "Did Jolene or Deborah go to Bogota?")
    assert set(got) == {PEOPLE[1][0], PEOPLE[2][0]}


def test_search_over_an_empty_or_corrupt_snapshot_degrades(tmp_path):
    empty = _reader(tmp_path, rows=[])
    assert empty.search("When was Jolene in Bogota?", 5)["hits"] == []
    bad = os.path.join(tmp_path, "bad.sqlite")
    with open(bad, "wb") as fh:
        fh.write(b"SQLite format 3\x00" + os.urandom(4096))
    from lib.memory.memory_index import Unavailable

    try:
        SnapshotReader(bad).search("Jolene", 5)
    except Unavailable as exc:
        assert exc.reason == "unreadable"
    else:
        raise AssertionError("a corrupt snapshot must read as unavailable, not as results")
