"""SUPPORT_MIN is justified by a measurement on real transcripts (tests/memory/support_pairs.py,
printed by bench/claim_support.py;
docs/memory.md "Gate rules"): evidence that relates to a claim reaches it far more often than a
citation of another session's event does."""
from __future__ import annotations

from tests.memory import support_pairs as claim_support
from lib.memory import claims


def test_support_min_separates_related_from_forged_citations_on_real_transcripts():
    m = claim_support.measure(seed=0)
    assert m["n"] >= 200 and m["files"] >= 10
    rel = sum(s >= claims.SUPPORT_MIN for s in m["related"]) / len(m["related"])
    forged = sum(s >= claims.SUPPORT_MIN for s in m["unrelated"]) / len(m["unrelated"])
    # measured 2026-12-01: 0.58 vs 0.21 (docs/memory.md); the ratio is what the constant buys
    assert rel >= 2 * forged, (rel, forged)
    # a higher threshold always accepts fewer forged citations (the table's trade is monotone)
    rates = [sum(s >= t for s in m["unrelated"]) for t in claim_support.THRESHOLDS]
    assert rates == sorted(rates, reverse=True)


def test_first_claim_takes_a_sentence_with_content_words():
    assert claim_support.first_claim("Ok.\nThe tests run with pytest -q tests/redact here.") == \
        "The tests run with pytest -q tests/redact here."
    assert claim_support.first_claim("Done. Yes.") is None
