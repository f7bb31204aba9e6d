"""The promotion gate as a pure function, and claim identity/fold (docs/design.md §10)."""
from __future__ import annotations

from lib.memory import claims, gate


def _digest(sid, agent, ids, injected=()):
    return {"session_id": sid, "agent_id": agent, "ids": list(ids), "injected_claims": list(injected)}


def _proposed(text, ctype, agent, cites, eid, subject="tests"):
    return {"kind": "proposed", "event_id": eid, "claim_id": claims.claim_id(ctype, text), "claim": text,
            "claim_type": ctype, "subject": subject, "observed_by": agent,
            "evidence": [{"session_id": s, "message_id": m, "support": 1.0} for s, m in cites]}


def test_identical_text_is_one_claim_whatever_the_case_and_spacing():
    assert claims.claim_id("convention", "Run  pytest with -x.") == claims.claim_id("convention", "run pytest with -x")
    assert claims.claim_id("convention", "a") != claims.claim_id("outcome", "a")


def test_convention_needs_two_independent_sessions():
    text = "Run the test suite with pytest -x"
    ev = [_proposed(text, "convention", "alice", [("s1", "m1")], "01")]
    digests = [_digest("s1", "alice", ["m1"]), _digest("s2", "bob", ["m2"])]
    events, explain = gate.decide(claims.fold(ev), digests)
    cid = claims.claim_id("convention", text)
    assert events == [] and "needs 2" in explain[cid]
    ev.append(_proposed(text, "convention", "bob", [("s2", "m2")], "02"))
    events, explain = gate.decide(claims.fold(ev), digests)
    assert events[0]["kind"] == "promoted" and events[0]["independent_sessions"] == 2
    assert events[0]["confidence"] == 0.8


def test_a_session_that_was_shown_the_claim_does_not_corroborate_it():
    text = "Run the test suite with pytest -x"
    cid = claims.claim_id("convention", text)
    ev = [_proposed(text, "convention", "alice", [("s1", "m1")], "01"),
          _proposed(text, "convention", "bob", [("s2", "m2")], "02")]
    digests = [_digest("s1", "alice", ["m1"]), _digest("s2", "bob", ["m2"], injected=[cid])]
    events, explain = gate.decide(claims.fold(ev), digests)
    assert events == [] and "had been shown this claim" in explain[cid]


def test_evidence_that_resolves_to_nothing_holds_the_claim():
    ev = [_proposed("The DB is postgres 15", "environment", "alice", [("s1", "nope")], "01")]
    events, explain = gate.decide(claims.fold(ev), [_digest("s1", "alice", ["m1"])])
    assert events == [] and "no evidence resolves" in next(iter(explain.values()))


def test_unknown_observer_is_held_and_hypothesis_never_promotes():
    ev = [_proposed("X is flaky", "hypothesis", "alice", [("s1", "m1")], "01"),
          _proposed("The DB is postgres 15", "environment", "mallory", [("s1", "m1")], "02")]
    events, explain = gate.decide(claims.fold(ev), [_digest("s1", "alice", ["m1"])])
    assert [e for e in events if e["claim_id"] == claims.claim_id("hypothesis", "X is flaky")] == []
    assert "never auto-promote" in explain[claims.claim_id("hypothesis", "X is flaky")]
    assert "mallory" in explain[claims.claim_id("environment", "The DB is postgres 15")]


def test_preference_needs_human_approval():
    text = "Prefer small commits"
    ev = [_proposed(text, "preference", "alice", [("s1", "m1")], "01")]
    d = [_digest("s1", "alice", ["m1"])]
    assert gate.decide(claims.fold(ev), d)[0] == []
    ev.append({"kind": "approved", "claim_id": claims.claim_id("preference", text), "event_id": "02", "by": "human"})
    assert gate.decide(claims.fold(ev), d)[0][0]["kind"] == "promoted"


def test_similar_but_different_claim_on_the_same_subject_contests_both():
    a = "Run the test suite with pytest -x"
    b = "Run the test suite with pytest -q"
    # each cites the other's session: a claim is never won on its proposer's own evidence
    ev = [_proposed(a, "environment", "alice", [("s2", "m2")], "01", subject="test runner")]
    d = [_digest("s1", "alice", ["m1"]), _digest("s2", "bob", ["m2"])]
    first, _ = gate.decide(claims.fold(ev), d)
    ev.append(dict(first[0], event_id="02"))
    ev.append(_proposed(b, "environment", "bob", [("s1", "m1")], "03", subject="Test runner"))
    events, explain = gate.decide(claims.fold(ev), d)
    kinds = sorted((e["kind"], e["claim_id"]) for e in events)
    assert kinds == sorted([("contested", claims.claim_id("environment", a)), ("contested", claims.claim_id("environment", b))])
    folded = claims.fold(ev + [dict(e, event_id=f"1{i}") for i, e in enumerate(events)])
    assert {c["status"] for c in folded.values()} == {"contested"}


def test_fold_is_rederivable_from_events_in_any_order():
    ev = [_proposed("A", "outcome", "alice", [("s1", "m1")], "01"), _proposed("A", "outcome", "bob", [("s2", "m2")], "02"),
          {"kind": "promoted", "claim_id": claims.claim_id("outcome", "A"), "event_id": "03", "independent_sessions": 2,
           "confidence": 0.8}]
    assert claims.fold(ev) == claims.fold(list(reversed(ev)))
    c = claims.fold(ev)[claims.claim_id("outcome", "A")]
    assert c["status"] == "promoted" and c["observers"] == ["alice", "bob"] and len(c["evidence"]) == 2


# -- issue #17: the gate cannot be won alone ------------------------------------------------

def _hd(sid, agent, host, ids):
    return dict(_digest(sid, agent, ids), host_id=host)


def test_a_claim_on_the_proposers_own_evidence_only_is_held():
    text = "The CI image has redis-server on PATH"
    ev = [_proposed(text, "environment", "mallory", [("s1", "m1")], "01")]
    events, explain = gate.decide(claims.fold(ev), [_hd("s1", "mallory", "h1", ["m1"])])
    assert events == [] and "proposer's own" in explain[claims.claim_id("environment", text)]


def test_a_second_agent_id_on_the_same_host_is_not_independent():
    text = "The CI image has redis-server on PATH"
    ev = [_proposed(text, "environment", "mallory", [("s1", "m1")], "01"),
          _proposed(text, "environment", "mallory-2", [("s2", "m2")], "02")]
    d = [_hd("s1", "mallory", "h1", ["m1"]), _hd("s2", "mallory-2", "h1", ["m2"])]
    events, explain = gate.decide(claims.fold(ev), d)
    assert events == [] and "proposer's own" in explain[claims.claim_id("environment", text)]


def test_another_agents_session_on_another_host_promotes_it():
    text = "The CI image has redis-server on PATH"
    ev = [_proposed(text, "environment", "alice", [("s2", "m2")], "01")]
    d = [_hd("s1", "alice", "h1", ["m1"]), _hd("s2", "bob", "h2", ["m2"])]
    events, _ = gate.decide(claims.fold(ev), d)
    assert [e["kind"] for e in events] == ["promoted"] and events[0]["independent_sessions"] == 1


def test_two_agents_on_two_hosts_corroborate_a_convention_but_two_sessions_of_one_do_not():
    text = "Run the test suite with pytest -x"
    one = [_proposed(text, "convention", "alice", [("s1", "m1"), ("s3", "m3")], "01")]
    d = [_hd("s1", "alice", "h1", ["m1"]), _hd("s3", "alice", "h1", ["m3"]), _hd("s2", "bob", "h2", ["m2"])]
    events, explain = gate.decide(claims.fold(one), d)
    assert events == [] and "needs 2" in explain[claims.claim_id("convention", text)]
    two = one + [_proposed(text, "convention", "bob", [("s2", "m2")], "02")]
    events, _ = gate.decide(claims.fold(two), d)
    assert events[0]["kind"] == "promoted" and events[0]["independent_sessions"] == 2


def test_evidence_unrelated_to_the_claim_does_not_count():
    text = "Deploys must use --force on main"
    ev = [dict(_proposed(text, "environment", "alice", [("s2", "m2")], "01"))]
    ev[0]["evidence"][0]["support"] = 0.0
    events, explain = gate.decide(claims.fold(ev), [_hd("s1", "alice", "h1", ["m1"]), _hd("s2", "bob", "h2", ["m2"])])
    assert events == [] and "relates to the claim" in explain[claims.claim_id("environment", text)]


def test_support_is_the_share_of_claim_terms_in_the_cited_event():
    env = {"tool": {"name": "Bash", "input": '{"command":"which redis-server"}', "result": "/usr/bin/redis-server"}}
    assert claims.support("The CI image has redis-server on PATH", env) >= claims.SUPPORT_MIN
    git = {"tool": {"name": "Bash", "input": '{"command":"git status"}', "result": "nothing to commit"}}
    assert claims.support("Deploys must use --force on main", git) == 0.0


def _promote_then_propose(a, b, subject="Maria"):
    """``a`` promoted (alice, citing bob's session), then ``b`` proposed (bob, citing alice's)."""
    ev = [_proposed(a, "environment", "alice", [("s2", "m2")], "01", subject=subject)]
    d = [_digest("s1", "alice", ["m1"]), _digest("s2", "bob", ["m2"])]
    first, _ = gate.decide(claims.fold(ev), d)
    assert first[0]["kind"] == "promoted"
    ev.append(dict(first[0], event_id="02"))
    ev.append(_proposed(b, "environment", "bob", [("s1", "m1")], "03", subject=subject))
    return gate.decide(claims.fold(ev), d)


def test_near_duplicates_about_one_person_corroborate_instead_of_contesting():
    # two LoCoMo observations about one person: similar (word overlap 0.6+), nothing denied
    events, _ = _promote_then_propose("Maria volunteers at a homeless shelter.",
                                      "Maria volunteers at a homeless shelter every week.")
    assert [e["kind"] for e in events] == ["promoted"]


def test_a_negation_or_a_different_value_is_a_contradiction():
    events, _ = _promote_then_propose("docker build works offline in this repo",
                                      "docker build does not work offline in this repo", subject="docker")
    assert sorted(e["kind"] for e in events) == ["contested", "contested"]
    events, _ = _promote_then_propose("the staging API listens on port 8080", "the staging API listens on port 9090",
                                      subject="staging api")
    assert sorted(e["kind"] for e in events) == ["contested", "contested"]


def test_a_claim_promoted_then_contested_in_the_same_pass_explains_the_contest():
    a, b = "the staging API listens on port 8080", "the staging API listens on port 9090"
    ev = [_proposed(a, "environment", "alice", [("s2", "m2")], "01", subject="staging api"),
          _proposed(b, "environment", "bob", [("s1", "m1")], "02", subject="staging api")]
    d = [_digest("s1", "alice", ["m1"]), _digest("s2", "bob", ["m2"])]
    events, explain = gate.decide(claims.fold(ev), d)
    assert {e["kind"] for e in events} >= {"contested"}
    assert all(v.startswith("contested") for v in explain.values()), explain


def test_the_proposal_cap_is_per_agent_per_day_across_sync_passes(tmp_path):
    from lib.store.memory import MemoryStore

    store, tally = MemoryStore(), str(tmp_path / "tally.json")
    day = "2026-11-29T10:00:00.000Z"
    recs = [{"kind": "proposed", "fleet_id": "f", "agent_id": "alice", "claim": f"fact number {i}",
             "claim_type": "environment", "subject": "s", "record_id": f"r{i:03d}", "requested_at": day,
             "evidence": [{"session_id": "s1", "message_id": f"m{i}"}]} for i in range(130)]
    reasons = []
    log = lambda event, **kw: reasons.append(kw.get("reason", "")) if event == "claim_rejected" else None  # noqa: E731
    claims.ingest(store, recs[:70], "f", tally_path=tally, log=log)
    claims.ingest(store, recs[70:], "f", tally_path=tally, log=log)  # a later pass, same day
    assert sum("rate limit" in r for r in reasons) == 30
    other = [dict(r, requested_at="2026-11-30T00:00:01.000Z", record_id="n" + r["record_id"]) for r in recs[:5]]
    reasons.clear()
    claims.ingest(store, other, "f", tally_path=tally, log=log)
    assert not any("rate limit" in r for r in reasons)  # a new UTC day starts a new count
