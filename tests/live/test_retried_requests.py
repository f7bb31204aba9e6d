"""A retried request is one request (issue #25): a runtime re-sending ``fleet_claim`` /
``fleet_release`` (same agent, same request) queues nothing new and is answered as the first time;
syncd applies a re-delivered or duplicated record once; a hook delivered twice changes the live
plane once."""
from __future__ import annotations

import json
import os

from lib import mcp_tools, syncpass
from lib.live import leases
from lib.store import open_store
from tests.live.conftest import REPO_ID
from tests.live.helpers import Log, hook, mcp_record, prompt, read_json, session_end, tool

F = "fleet-live"


def spooled(cfg) -> list[dict]:
    path = cfg.paths.mcp_spool(F)
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _stable(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k != "sync"}  # sync age moves with the clock


def test_a_retried_fleet_claim_is_queued_once_and_answered_as_the_first_time(home, cfg, git_repo):
    hook(home, "alice", prompt("sess-alice", git_repo, "rewrite the parser"))
    os.symlink("src", os.path.join(git_repo, "lnk"))
    alice = mcp_tools.Tools(mcp_tools.Context(cfg, cwd=git_repo))
    first = alice.fleet_claim({"paths": ["src/parser/"], "reason": "rewrite the parser"})
    again = alice.fleet_claim({"paths": ["src/parser/"], "reason": "rewrite the parser"})
    spelled = alice.fleet_claim({"paths": ["lnk/parser"], "reason": "rewrite the parser"})  # same files, other spelling
    assert _stable(again) == _stable(first) and spelled["record_id"] == first["record_id"]
    assert [r["kind"] for r in spooled(cfg)] == ["lease_request"]
    syncpass.run_pass(cfg, open_store(cfg.store), Log())
    after = alice.fleet_claim({"paths": ["src/parser/"], "reason": "rewrite the parser"})  # applied already: still one
    assert after["record_id"] == first["record_id"]
    assert spooled(cfg) == []  # applied and reclaimed; the retry queued nothing new
    other = alice.fleet_claim({"paths": ["src/parser/"], "reason": "a different reason"})  # another request
    assert other["record_id"] != first["record_id"]
    status = alice.fleet_status({})
    outcomes = {r["record_id"]: r["outcome"] for r in status["my_requests"]}
    assert outcomes[first["record_id"]]["outcome"] == "granted"
    (lease,) = status["leases"]
    assert (lease["path"], lease["epoch"]) == ("src/parser/", 1)


def test_a_retried_fleet_release_is_queued_once(home, cfg, git_repo):
    alice = mcp_tools.Tools(mcp_tools.Context(cfg, cwd=git_repo))
    first = alice.fleet_release({"paths": ["src/app.py"]})
    again = alice.fleet_release({"paths": ["./src//app.py"]})
    assert _stable(again) == _stable(first)
    everything = alice.fleet_release({})
    assert everything["record_id"] != first["record_id"]
    assert alice.fleet_release({})["record_id"] == everything["record_id"]
    assert [r["kind"] for r in spooled(cfg)] == ["lease_release", "lease_release"]


def test_syncd_applies_a_redelivered_record_once_and_answers_a_duplicate_with_the_first_outcome(home, cfg, git_repo):
    """claim (r1), release (r2), then r1 again (a spool line delivered twice): without the record
    identity the claim would be re-granted after its release (epoch 2)."""
    hook(home, "alice", prompt("sess-alice", git_repo, "parser"))
    p = cfg.paths
    key = leases.request_key("lease_request", "alice", None, [{"repo": REPO_ID, "rel": "src/app.py"}], reason="r", ttl=300)
    fields = dict(paths=["src/app.py"], reason="r", ttl_secs=300, cwd=git_repo, request_key=key,
                  requested_at="2026-05-01T10:00:00.000Z")
    r1 = mcp_record(p, "lease_request", "alice", **fields)
    r2 = mcp_record(p, "lease_release", "alice", all=True)
    mcp_record(p, "lease_request", "alice", record_id=r1, **fields)
    store = open_store(cfg.store)
    log = Log()
    syncpass.run_pass(cfg, store, log)
    reqs = read_json(p.leases(F))["requests"]
    assert reqs[r1]["outcome"] == "granted" and reqs[r2]["outcome"] == "released"
    assert read_json(p.leases(F))["leases"] == []
    raw, _ = leases.read(store, leases.lease_key(F, leases.resource_key(REPO_ID, "src/app.py")))
    assert raw["holder"] is None and raw["epoch"] == 1
    assert log.names().count("lease_request_applied") == 2 and log.names().count("lease_request_retried") == 1
    # a second record of the same request (another MCP server of the same agent) gets the first outcome
    r3 = mcp_record(p, "lease_request", "alice", **dict(fields, requested_at="2026-05-01T10:00:30.000Z"))
    syncpass.run_pass(cfg, store, Log())
    reqs = read_json(p.leases(F))["requests"]
    assert reqs[r3]["outcome"] == "granted" and reqs[r3]["retry_of"] == r1
    raw, _ = leases.read(store, leases.lease_key(F, leases.resource_key(REPO_ID, "src/app.py")))
    assert raw["holder"] is None and raw["epoch"] == 1  # not granted again


def test_a_hook_delivered_twice_changes_the_live_plane_once(home, cfg, git_repo):
    store = open_store(cfg.store)
    edit = tool("sess-alice", git_repo, "Edit", {"file_path": os.path.join(git_repo, "src/app.py"),
                                                 "old_string": "a", "new_string": "b"}, event="PostToolUse")
    hook(home, "alice", prompt("sess-alice", git_repo, "tidy the app"))
    for _ in range(2):
        hook(home, "alice", edit)
    mcp_record(cfg.paths, "lease_request", "alice", paths=["src/app.py"], reason="tidy", cwd=git_repo)
    syncpass.run_pass(cfg, store, Log())
    (agent,) = read_json(cfg.paths.roster(F))["agents"]
    assert [(t["path"], t["write"]) for t in agent["touched"]] == [("src/app.py", True)]
    for _ in range(2):
        hook(home, "alice", session_end("sess-alice", git_repo))
    log = Log()
    summary = syncpass.run_pass(cfg, store, log)
    assert summary["live"]["released"] == 1 and log.names().count("lease_released_session_ended") == 1
    assert log.names().count("agent_left") == 1 and read_json(cfg.paths.leases(F))["leases"] == []
