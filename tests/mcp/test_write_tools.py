"""Write tools: kind-tagged spool records, "queued for sync" answers, the write guard, the
evidence rules, the spool cap as a visible tool error, and no way to write a promoted claim."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from lib import mcp_tools, spool
from tests.mcp.conftest import AGENT, FLEET, NOW, spool_lines, write_cache

SECRET = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 2
AWS = "AKIAIOSFODNN7EXAMPLE"
COMMON = {"kind", "record_id", "request_key", "fleet_id", "agent_id", "requested_at"}


def test_tools_list_has_the_eight_tools_and_no_memory_write(make_session):
    tools = make_session().request("tools/list")["result"]["tools"]
    names = [t["name"] for t in tools]
    assert names == ["fleet_status", "fleet_claim", "fleet_release", "fleet_history", "fleet_handoff",
                     "memory_search", "memory_propose", "memory_timeline"]
    assert not any("write" in n for n in names)
    for t in tools:
        assert t["inputSchema"]["type"] == "object" and t["inputSchema"]["additionalProperties"] is False
        assert t["inputSchema"] is mcp_tools.SCHEMAS[t["name"]] or t["inputSchema"] == mcp_tools.SCHEMAS[t["name"]]


def test_fleet_claim_spools_a_lease_request_and_answers_queued_never_granted(make_session, cfg, tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:Acme/App.git"], check=True)
    write_cache(cfg, "sync.json", {"last_run_at": "2027-01-15T07:59:00.000Z"})
    s = make_session(cwd=str(repo), session_id="sess-1")
    out = s.call("fleet_claim", {"paths": ["src/a.py", "src/", "src/a.py"], "reason": "splitting the module", "ttl_secs": 600})
    assert out["queued"] is True and out["status"] == "queued for sync"
    assert out["sync"] == {"last_run_at": "2027-01-15T07:59:00.000Z", "age_secs": 60}
    text = json.dumps(out).lower()
    assert "granted" not in text and "advisory" in text
    [rec] = spool_lines(cfg)
    assert COMMON | {"session_id"} <= set(rec)
    assert rec["kind"] == "lease_request" and rec["record_id"] == out["record_id"]
    assert (rec["fleet_id"], rec["agent_id"], rec["session_id"]) == (FLEET, AGENT, "sess-1")
    assert rec["paths"] == ["src/a.py", "src/"] and rec["ttl_secs"] == 600 and rec["reason"] == "splitting the module"
    assert rec["resources"] == [{"path": "src/a.py", "repo": "github.com/Acme/App", "rel": "src/a.py"},
                                {"path": "src/", "repo": "github.com/Acme/App", "rel": "src/"}]
    assert rec["requested_at"] == "2027-01-15T08:00:00.000Z"


def test_fleet_claim_mentions_holders_known_to_the_cache(make_session, cfg, tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write_cache(cfg, "leases.json", {"store_time": NOW, "refreshed_at": NOW, "leases": [
        {"resource": "k", "repo": str(repo), "path": "src/", "holder": "cc-02", "reason": "auth rewrite",
         "acquired_at": NOW, "expires_at": NOW + 120, "epoch": 1}]})
    out = make_session(cwd=str(repo), clock=lambda: NOW).call("fleet_claim", {"paths": ["src/x.py"], "reason": "fix"})
    assert out["held_by_others_as_of_cache"] == [{"path": "src/", "holder": "cc-02", "reason": "auth rewrite",
                                                  "expires_at": NOW + 120}]
    assert out["status"] == "queued for sync"


def test_default_ttl_comes_from_config(make_session, cfg):
    make_session().call("fleet_claim", {"paths": ["a"], "reason": "r"})
    assert spool_lines(cfg)[0]["ttl_secs"] == cfg.leases.ttl_secs == 300


def test_fleet_release_with_and_without_paths(make_session, cfg):
    s = make_session()
    s.call("fleet_release", {"paths": ["src/a.py"]})
    out = s.call("fleet_release")
    assert out["paths"] == "all you hold" and out["status"] == "queued for sync"
    first, second = spool_lines(cfg)
    assert first["kind"] == second["kind"] == "lease_release"
    assert first["paths"] == ["src/a.py"] and "all" not in first
    assert second["all"] is True and "paths" not in second
    assert s.call_raw("fleet_release", {"paths": []})["error"]["code"] == -32602


def test_fleet_handoff_spools_summary_status_next(make_session, cfg):
    out = make_session().call("fleet_handoff", {"summary": "auth tests green", "status": "in_progress", "next": "wire the UI"})
    assert out["status"] == "queued for sync"
    [rec] = spool_lines(cfg)
    assert rec["kind"] == "handoff"
    assert (rec["summary"], rec["status"], rec["next"]) == ("auth tests green", "in_progress", "wire the UI")
    assert COMMON <= set(rec) and "session_id" not in rec


@pytest.mark.parametrize("args", [
    {"summary": "x"}, {"summary": "x", "status": "finished"}, {"summary": 1, "status": "done"},
    {"summary": "x", "status": "done", "next": ["a"]}, {"summary": "", "status": "done"},
])
def test_fleet_handoff_bad_arguments_are_invalid_params(make_session, cfg, args):
    assert make_session().call_raw("fleet_handoff", args)["error"]["code"] == -32602
    assert spool_lines(cfg) == []


def test_blank_free_text_is_refused_in_band(make_session, cfg):
    s = make_session()
    assert "reason is blank" in s.refusal("fleet_claim", {"paths": ["a"], "reason": "   "})
    assert "summary is blank" in s.refusal("fleet_handoff", {"summary": " \n", "status": "done"})
    assert spool_lines(cfg) == []


# -- memory_propose --------------------------------------------------------------------------------

EVIDENCE = [{"session_id": "s-1", "message_id": "toolu_01"}, {"session_id": "s-2", "message_id": "toolu_02"}]


def test_memory_propose_spools_the_proposed_wire_shape_with_scope_agent(make_session, cfg):
    out = make_session().call("memory_propose", {"claim": "make migrate must run before the integration tests",
                                                 "type": "convention", "subject": "db",
                                                 "evidence": EVIDENCE + [dict(EVIDENCE[0], note="dup", extra={"x": 1})]})
    assert out["status"] == "queued for sync" and out["scope"] == "agent"
    [rec] = spool_lines(cfg)
    assert rec["kind"] == "proposed"
    assert set(rec) == COMMON | {"claim_id", "claim", "claim_type", "subject", "scope", "observed_by", "observed_at", "evidence"}
    assert rec["scope"] == "agent" and rec["observed_by"] == AGENT and rec["claim_id"] == out["claim_id"]
    assert rec["claim_type"] == "convention" and rec["subject"] == "db"
    assert rec["evidence"] == EVIDENCE  # de-duplicated, only the two citation fields
    with open(cfg.paths.mcp_spool(FLEET)) as fh:
        assert "promoted" not in fh.read()


def test_memory_propose_has_no_way_to_widen_scope(make_session, cfg):
    resp = make_session().call_raw("memory_propose", {"claim": "c", "type": "outcome", "subject": "s",
                                                      "evidence": EVIDENCE, "scope": "fleet"})
    assert resp["error"]["code"] == -32602 and "unknown argument `scope`" in resp["error"]["message"]
    assert "scope" not in mcp_tools.SCHEMAS["memory_propose"]["properties"]


@pytest.mark.parametrize("evidence, fragment", [
    ([], "no evidence, no claim"),
    ([{}], "citation(s) [0]"),
    ([{"session_id": "s"}], "citation(s) [0]"),
    ([{"session_id": "s", "message_id": ""}], "citation(s) [0]"),
    ([{"session_id": "s", "message_id": "m"}, {"session_id": "  ", "message_id": "m"}], "citation(s) [1]"),
])
def test_memory_propose_refuses_without_real_citations(make_session, cfg, evidence, fragment):
    text = make_session().refusal("memory_propose", {"claim": "c", "type": "outcome", "subject": "s", "evidence": evidence})
    assert fragment in text
    assert spool_lines(cfg) == []


@pytest.mark.parametrize("args", [
    {"claim": "c", "type": "outcome", "subject": "s"},
    {"claim": "c", "type": "rumour", "subject": "s", "evidence": EVIDENCE},
    {"claim": "c", "type": "outcome", "subject": "s", "evidence": {"session_id": "s", "message_id": "m"}},
    {"claim": "c", "type": "outcome", "subject": "s", "evidence": ["s-1/toolu_01"]},
    {"claim": "c", "type": "outcome", "subject": "s", "evidence": [{"session_id": 1, "message_id": "m"}]},
    {"claim": "c", "type": "outcome", "subject": "s", "evidence": EVIDENCE * 11},
])
def test_memory_propose_malformed_arguments_are_invalid_params(make_session, cfg, args):
    resp = make_session().call_raw("memory_propose", args)
    assert resp["error"]["code"] == -32602
    assert spool_lines(cfg) == []


def test_twenty_citations_pass_twenty_one_are_rejected_not_trimmed(make_session, cfg):
    s = make_session()
    cites = [{"session_id": f"s{i}", "message_id": f"m{i}"} for i in range(21)]
    s.call("memory_propose", {"claim": "c", "type": "outcome", "subject": "s", "evidence": cites[:20]})
    resp = s.call_raw("memory_propose", {"claim": "c", "type": "outcome", "subject": "s", "evidence": cites})
    assert resp["error"]["code"] == -32602 and "at most 20" in resp["error"]["message"]
    assert len(spool_lines(cfg)) == 1 and len(spool_lines(cfg)[0]["evidence"]) == 20


# -- the write guard -------------------------------------------------------------------------------

def test_secrets_in_any_write_argument_never_reach_the_spool(make_session, cfg):
    s = make_session(session_id="sess-9")
    s.call("fleet_claim", {"paths": [f"config/{AWS}.txt"], "reason": f"rotate {SECRET}"})
    s.call("fleet_handoff", {"summary": "db at postgres://app:hunter2pass@db:5432/x", "status": "blocked", "next": f"use {AWS}"})
    s.call("memory_propose", {"claim": f"the key is {SECRET}", "type": "environment", "subject": f"keys {AWS}",
                              "evidence": [{"session_id": f"s {SECRET}", "message_id": "m", "deep": {"k": [SECRET]}}]})
    with open(cfg.paths.mcp_spool(FLEET), encoding="utf-8") as fh:
        raw = fh.read()
    assert SECRET not in raw and AWS not in raw and "hunter2pass" not in raw
    assert raw.count("[ctxlake: withheld") >= 6
    quarantine = os.path.join(cfg.paths.quarantine_spool, FLEET + ".ndjson")
    with open(quarantine, encoding="utf-8") as fh:
        qraw = fh.read()
    assert SECRET not in qraw and AWS not in qraw
    q = [json.loads(line) for line in qraw.splitlines()]
    fields = {r["field"] for r in q}
    assert {"mcp.arguments.reason", "mcp.arguments.paths", "mcp.arguments.next", "mcp.arguments.claim",
            "mcp.arguments.subject", "mcp.arguments.evidence"} <= fields
    records = spool_lines(cfg)
    assert {r["event_id"] for r in q} <= {r["record_id"] for r in records}
    assert all(r["sha256"].startswith("sha256:") and r["rules_fired"] and r["session_id"] == "sess-9" for r in q)


def test_write_guard_scrubs_before_the_record_is_built(make_session, cfg, monkeypatch):
    seen = []
    real = spool.append

    def spy(path, line, **kw):
        seen.append(line)
        return real(path, line, **kw)

    monkeypatch.setattr(spool, "append", spy)
    make_session().call("fleet_handoff", {"summary": f"token {SECRET}", "status": "done"})
    assert seen and all(SECRET not in line for line in seen)


# -- spool cap: a tool error the agent can read ------------------------------------------------------

def test_spool_full_is_an_is_error_result_and_nothing_is_written(make_session, cfg, monkeypatch):
    monkeypatch.setattr(spool, "CAP_BYTES", 0)

    def full(path, line, **kw):
        raise spool.SpoolFull(f"spool directory {os.path.dirname(path)} is at its cap of 536870912 bytes")

    monkeypatch.setattr(spool, "append", full)
    s = make_session()
    for tool, args in (("fleet_claim", {"paths": ["a"], "reason": "r"}), ("fleet_release", {}),
                       ("fleet_handoff", {"summary": "s", "status": "done"}),
                       ("memory_propose", {"claim": "c", "type": "outcome", "subject": "s", "evidence": EVIDENCE})):
        text = s.refusal(tool, args)
        assert text.startswith("Not queued: the local MCP spool is full") and "ctxlake sync" in text
    assert s.call("fleet_status")["enabled"] is False  # the session keeps going


def test_real_spool_cap_surfaces_as_tool_error(make_session, cfg):
    mcp_dir = os.path.dirname(cfg.paths.mcp_spool(FLEET))
    os.makedirs(mcp_dir)
    with open(os.path.join(mcp_dir, "other.ndjson.1"), "wb") as fh:
        fh.truncate(spool.CAP_BYTES)  # sparse: counts toward the cap without using the disk
    text = make_session().refusal("fleet_handoff", {"summary": "s", "status": "done"})
    assert "spool is full" in text
    assert not os.path.exists(cfg.paths.mcp_spool(FLEET))


def test_unwritable_spool_is_an_is_error_result(make_session, cfg):
    os.makedirs(cfg.paths.spool_dir)
    with open(os.path.join(cfg.paths.spool_dir, "mcp"), "w") as fh:
        fh.write("a file where the directory should be")
    assert make_session().refusal("fleet_release", {}).startswith("Not queued: the local spool could not be written")


def test_records_are_one_ascii_line_each_even_with_odd_text(make_session, cfg):
    make_session().call("fleet_handoff", {"summary": "line1\nline2\u2028\u00e9\ud800", "status": "done"})
    with open(cfg.paths.mcp_spool(FLEET), "rb") as fh:
        data = fh.read()
    assert data.count(b"\n") == 1 and data.endswith(b"\n")
    data.decode("ascii")
    assert json.loads(data)["summary"].startswith("line1\nline2")
