"""The MCP server's own records have one identity each, by every try (issue #16).

A record's id derives from its session, its kind, the request and the session's previous write
(``lib.mcp_tools.record_id``, docs/architecture.md "Event identity"). A server that wrote a
record but lost its memo of it (killed before it wrote ``mcp-last``, or a disk that refused that
file) writes the same record again when the runtime repeats the call — with the same id — and
syncd's consumers (handoffs, claims, leases) against a real ``file://`` store apply it once. The
same request in another session is another record.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess

from lib import config, handoffs, mcp_tools, syncpass
from lib.store import open_store

FLEET = "fleet-ident"
CALLS = [("fleet_handoff", {"summary": "parser half done", "status": "in_progress", "next": "finish the lexer"}),
         ("memory_propose", {"claim": "make migrate runs before the tests", "type": "convention", "subject": "db",
                             "evidence": [{"session_id": "s-1", "message_id": "toolu_01"}]}),
         ("fleet_claim", {"paths": ["src/parser.py"], "reason": "rewrite the parser"})]


def _tools(cfg, session_id, cwd, clock):
    ctx = mcp_tools.Context(dataclasses.replace(cfg, agent_id="alice"), session_id=session_id, cwd=cwd, clock=clock)
    return {t.name: t.handler for t in mcp_tools.Tools(ctx).list()}


def _spooled(cfg) -> list[dict]:
    folder = os.path.dirname(cfg.paths.mcp_spool(FLEET))
    out = []
    for name in sorted(os.listdir(folder)):
        if ".ndjson" in name:
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                out += [json.loads(line) for line in fh if line.strip()]
    return out


def test_a_call_repeated_after_the_server_lost_its_memo_is_one_record_in_the_store(home, monkeypatch, tmp_path):
    monkeypatch.setenv("CTXLAKE_FLEET_ID", FLEET)
    cfg = config.load()
    repo = str(tmp_path / "widget")
    subprocess.run(["git", "init", "-q", repo], check=True)
    clock = {"t": 1_800_000_000.0}
    first = _tools(cfg, "s-1", repo, lambda: clock["t"])
    ids = [first[name](args)["record_id"] for name, args in CALLS]
    for name in os.listdir(os.path.dirname(cfg.paths.mcp_last_write(FLEET, "alice", "s-1"))):
        os.remove(os.path.join(os.path.dirname(cfg.paths.mcp_last_write(FLEET, "alice", "s-1")), name))
    clock["t"] += 5
    again = _tools(cfg, "s-1", repo, lambda: clock["t"])  # the runtime restarted the server and repeats the calls
    assert [again[name](args)["record_id"] for name, args in CALLS] == ids
    other = _tools(cfg, "s-2", repo, lambda: clock["t"])  # the same requests from another session
    other_ids = [other[name](args)["record_id"] for name, args in CALLS]
    assert not set(other_ids) & set(ids)

    spooled = _spooled(cfg)
    assert len(spooled) == 9 and len({r["record_id"] for r in spooled}) == 6  # written twice, one identity

    events = []
    store = open_store(cfg.store)
    summary = syncpass.run_pass(cfg, store, lambda event, **kw: events.append((event, kw)))
    assert not summary["errors"], summary
    notes = handoffs.load_recent(store, FLEET, now=clock["t"])
    assert sorted(n["record_id"] for n in notes) == sorted([ids[0], other_ids[0]])
    claim_events = [e.key for e in store.list(f"claims/events/fleet={FLEET}/")]
    assert len(claim_events) == 2, claim_events  # one per session (rejected: the citation is not in the lake)
    applied = [kw["record_id"] for event, kw in events if event == "lease_request_applied"]
    assert sorted(applied) == sorted([ids[2], other_ids[2]])  # the repeated line is not applied again
