"""A write answered "queued" is durable and happens once (issue #19).

- failure only when nothing was written: a refusal leaves no record, and an error after the
  record was written (a cache the answer reads being garbage, a disk that does not confirm)
  still answers ``queued``;
- a retry (the same request from the same agent session as its last write, within
  ``lib.live.leases.RETRY_SECS``) writes nothing and gets the first call's answer;
- ``memory_propose`` answers the content id the gate files the claim under.
"""
from __future__ import annotations

import json
import os

from lib import spool
from lib.memory import claims
from lib.live import leases
from tests.mcp.conftest import NOW, spool_lines, write_cache

EVIDENCE = [{"session_id": "s-1", "message_id": "toolu_01"}]
WRITES = [("fleet_claim", {"paths": ["src/a.py"], "reason": "refactor"}), ("fleet_release", {"paths": ["src/a.py"]}),
          ("fleet_handoff", {"summary": "half done", "status": "in_progress", "next": "finish b"}),
          ("memory_propose", {"claim": "make migrate runs first", "type": "convention", "subject": "db",
                              "evidence": EVIDENCE})]


def _stable(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k != "sync"}  # the sync age moves with the clock


def test_a_retried_identical_call_writes_once_and_answers_the_first_record(make_session, cfg):
    clock = {"t": NOW}
    s = make_session(clock=lambda: clock["t"], session_id="sess-1")
    for name, args in WRITES:
        first = s.call(name, args)
        clock["t"] += 30  # the agent's retry, half a minute later
        again = s.call(name, args)
        assert _stable(again) == _stable(first), name  # answered as the first time
    recs = spool_lines(cfg)
    assert [r["kind"] for r in recs] == ["lease_request", "lease_release", "handoff", "proposed"]
    assert len({r["request_key"] for r in recs}) == 4


def test_a_new_server_process_recognises_the_retry_too(make_session, cfg):
    first = make_session(session_id="sess-1").call(*WRITES[2])
    again = make_session(session_id="sess-1").call(*WRITES[2])  # the runtime restarted the server
    assert _stable(again) == _stable(first)
    assert len(spool_lines(cfg)) == 1


def test_the_same_call_is_new_when_it_is_not_a_retry(make_session, cfg):
    clock = {"t": NOW}
    s = make_session(clock=lambda: clock["t"], session_id="sess-1")
    claim = ("fleet_claim", {"paths": ["src/a.py"], "reason": "refactor"})
    ids = [s.call(*claim)["record_id"], s.call("fleet_release", {"paths": ["src/a.py"]})["record_id"]]
    ids.append(s.call(*claim)["record_id"])  # claim, release, claim again: three requests
    clock["t"] += leases.RETRY_SECS + 1
    ids.append(s.call(*claim)["record_id"])  # the same call after the window is a new request
    ids.append(make_session(clock=lambda: clock["t"], session_id="sess-2").call(*claim)["record_id"])  # another session
    assert len(set(ids)) == 5
    assert [r["kind"] for r in spool_lines(cfg)] == ["lease_request", "lease_release", "lease_request", "lease_request",
                                                     "lease_request"]


def test_a_write_whose_answer_hits_a_garbage_cache_still_answers_queued(make_session, cfg):
    # the issue's reproduction: refreshed_at 1e20 / last_run_at 1e308 made these writes answer isError after queueing
    write_cache(cfg, "leases.json", {"refreshed_at": 1e20, "store_time": -1e308, "leases": [
        {"holder": "b", "repo": None, "path": "/", "expires_at": 1e308}]})
    write_cache(cfg, "sync.json", b'{"last_run_at": 1e308}')
    s = make_session()
    for name, args in WRITES:
        assert s.call(name, args)["queued"] is True
    assert len(spool_lines(cfg)) == len(WRITES)


def test_a_line_the_disk_did_not_confirm_is_queued_not_failed(make_session, cfg, monkeypatch):
    real = os.fdatasync

    def eio(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", eio)
    out = make_session().call("fleet_handoff", {"summary": "s", "status": "done"})
    monkeypatch.setattr(os, "fdatasync", real)
    assert out["queued"] is True
    [rec] = spool_lines(cfg)
    assert rec["record_id"] == out["record_id"]


def test_a_short_write_leaves_no_record_and_the_next_one_whole(cfg, tmp_path):
    path = str(tmp_path / "mcp" / "f.ndjson")
    real_write = os.write
    calls = {"n": 0}

    def short(fd, data):
        calls["n"] += 1
        return real_write(fd, data[: len(data) // 2]) if calls["n"] == 1 else real_write(fd, data)

    os.write = short
    try:
        try:
            spool.append(path, json.dumps({"kind": "handoff", "record_id": "r1"}) + "\n", sync=True)
            raise AssertionError("a short write must raise")
        except OSError as exc:
            assert "short write" in str(exc)
    finally:
        os.write = real_write
    spool.append(path, json.dumps({"kind": "handoff", "record_id": "r2"}) + "\n", sync=True)
    lines, _ = spool.read_complete_lines(path, 0)
    recs, dropped = spool.decode_lines(lines)
    assert [r["record_id"] for r in recs] == ["r2"] and dropped == 1


def test_memory_propose_answers_the_id_the_gate_files_the_claim_under(make_session, cfg):
    out = make_session().call("memory_propose", {"claim": "  Make migrate runs FIRST ", "type": "convention",
                                                 "subject": "db", "evidence": EVIDENCE})
    assert out["claim_id"] == claims.claim_id("convention", "make migrate runs first")
    [rec] = spool_lines(cfg)
    assert rec["claim_id"] == out["claim_id"]
