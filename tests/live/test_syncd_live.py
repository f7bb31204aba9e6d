"""syncd's live plane end to end on a temporary home: spooled sessions → heartbeats → roster →
cache; MCP lease requests → CAS → ``leases.json``; renewals and releases tied to sessions."""
from __future__ import annotations

import dataclasses
import json
import os

import pytest

from lib import syncpass
from lib.live import leases, presence, sync
from lib.store import open_store
from lib.store.memory import MemoryStore
from tests.live.conftest import REPO_ID, FakeClock
from tests.live.helpers import Log, hook, mcp_record, prompt, read_json, session_end, tool

F = "fleet-live"


def with_sync(cfg, **kw):
    return dataclasses.replace(cfg, sync=dataclasses.replace(cfg.sync, **kw))


def start_alice(home, repo, session="sess-alice"):
    hook(home, "alice", prompt(session, repo, "Split the lexer into tokens and spans\nthen run the tests"))
    hook(home, "alice", tool(session, repo, "Edit", {"file_path": os.path.join(repo, "src/parser/lexer.py"),
                                                     "old_string": "a", "new_string": "b"}))
    hook(home, "alice", tool(session, repo, "Read", {"file_path": os.path.join(repo, "README.md")}, use_id="toolu_02"))


def test_an_open_session_gets_a_heartbeat_roster_entry_and_briefing_line(home, cfg, git_repo):
    start_alice(home, git_repo)
    store = open_store(cfg.store)
    summary = syncpass.run_pass(cfg, store, Log())
    assert summary["errors"] == 0 and summary["live"]["heartbeats"] == 1
    beat = presence.read_heartbeat(store, F, "alice")
    assert beat["session_id"] == "sess-alice" and beat["task"] == "Split the lexer into tokens and spans"
    assert beat["repo"] == REPO_ID and beat["runtime"] == "claude_code" and beat["host_id"].startswith("sha256:")
    assert beat["paths"] == ["README.md", "src/parser/lexer.py"] or set(beat["paths"]) == {"README.md", "src/parser/lexer.py"}
    edits = {t["path"]: t["write"] for t in beat["touched"]}
    assert edits == {"src/parser/lexer.py": True, "README.md": False}
    stored = json.loads(store.get(presence.roster_key(F)).data)
    assert [a["agent_id"] for a in stored["agents"]] == ["alice"]
    cached = read_json(cfg.paths.roster(F))
    assert [a["agent_id"] for a in cached["agents"]] == ["alice"] and cached["store_time"] and cached["refreshed_at"]
    assert "alice (claude_code) — Split the lexer" in read_json(cfg.paths.briefing(F))["text"]


def test_heartbeat_rewrite_after_a_restart_keeps_session_task_and_paths(home, cfg, git_repo):
    start_alice(home, git_repo)
    store = open_store(cfg.store)
    syncpass.run_pass(cfg, store, Log())
    os.unlink(cfg.paths.live_state(F))  # syncd restarted and lost its memory; nothing new was spooled
    syncpass.run_pass(with_sync(cfg, heartbeat_secs=0), store, Log())
    beat = presence.read_heartbeat(store, F, "alice")
    assert beat["session_id"] == "sess-alice" and beat["task"].startswith("Split the lexer")
    assert "src/parser/lexer.py" in beat["paths"]


def test_an_ended_session_disappears_at_the_next_pass_not_after_the_ttl(home, cfg, git_repo):
    start_alice(home, git_repo)
    hook(home, "bob", prompt("sess-bob", git_repo, "Write the docs"))
    store = open_store(cfg.store)
    syncpass.run_pass(cfg, store, Log())
    assert {a["agent_id"] for a in read_json(cfg.paths.roster(F))["agents"]} == {"alice", "bob"}
    hook(home, "alice", session_end("sess-alice", git_repo))
    log = Log()
    syncpass.run_pass(cfg, store, log)
    assert ("agent_left", {"agent": "alice", "detail": "no open session: heartbeat deleted"}) in log.events
    assert presence.read_heartbeat(store, F, "alice") is None
    assert [a["agent_id"] for a in json.loads(store.get(presence.roster_key(F)).data)["agents"]] == ["bob"]
    assert [a["agent_id"] for a in read_json(cfg.paths.roster(F))["agents"]] == ["bob"]


def test_an_idle_session_is_not_presence(home, cfg, git_repo):
    start_alice(home, git_repo)
    old = os.path.getmtime(cfg.paths.session_spool("claude_code", "sess-alice")) - cfg.sync.session_idle_secs - 5
    os.utime(cfg.paths.session_spool("claude_code", "sess-alice"), (old, old))
    store = open_store(cfg.store)
    assert syncpass.run_pass(cfg, store, Log())["live"]["live_agents"] == 0
    assert presence.read_heartbeat(store, F, "alice") is None


def test_lease_requests_from_the_mcp_spool_are_applied_within_one_pass(home, cfg, git_repo):
    start_alice(home, git_repo)
    hook(home, "bob", prompt("sess-bob", git_repo, "docs"))
    store = open_store(cfg.store)
    p = cfg.paths
    r1 = mcp_record(p, "lease_request", "alice", paths=["src/parser/"], reason="split the lexer", ttl_secs=600,
                    cwd=git_repo)
    syncpass.run_pass(cfg, store, Log())
    view = read_json(p.leases(F))
    assert view["requests"][r1]["outcome"] == "granted" and view["requests"][r1]["agent_id"] == "alice"
    (lease,) = view["leases"]
    assert (lease["holder"], lease["path"], lease["repo"], lease["reason"]) == ("alice", "src/parser/", REPO_ID, "split the lexer")
    assert lease["expires_at"] - view["store_time"] == pytest.approx(600, abs=5) and lease["session_id"] == "sess-alice"
    # bob (the MCP server's format: resources resolved in bob's working tree) asks for a file below it
    r2 = mcp_record(p, "lease_request", "bob", paths=["src/parser/lexer.py"], reason="typo",
                    resources=[{"path": "src/parser/lexer.py", "repo": REPO_ID, "rel": "src/parser/lexer.py"}],
                    ttl_secs=300, cwd=git_repo)
    r3 = mcp_record(p, "lease_request", "bob", paths=["src/parser/"], reason="me too", cwd=git_repo)
    syncpass.run_pass(cfg, store, Log())
    reqs = read_json(p.leases(F))["requests"]
    for rid in (r2, r3):
        assert reqs[rid]["outcome"] == "refused" and reqs[rid]["holder"] == "alice"
        assert reqs[rid]["reason"] == "split the lexer" and reqs[rid]["expires_at"] == lease["expires_at"]
        assert "advisory" in reqs[rid]["message"]
    r4 = mcp_record(p, "lease_release", "alice", all=True)
    r5 = mcp_record(p, "lease_request", "bob", paths=["src/parser/lexer.py"], reason="typo", cwd=git_repo)
    syncpass.run_pass(cfg, store, Log())
    view = read_json(p.leases(F))
    assert view["requests"][r4]["outcome"] == "released" and view["requests"][r4]["released"][0]["path"] == "src/parser/"
    assert view["requests"][r5]["outcome"] == "granted"
    assert [(x["holder"], x["path"]) for x in view["leases"]] == [("bob", "src/parser/lexer.py")]
    raw, _ = leases.read(store, leases.lease_key(F, leases.resource_key(REPO_ID, "src/parser/")))
    assert raw["holder"] is None and raw["epoch"] == 1  # released keeps the epoch


def test_a_request_outside_a_repository_is_answered_with_an_error(home, cfg, tmp_path):
    rid = mcp_record(cfg.paths, "lease_request", "alice", paths=["notes.txt"], reason="x", cwd=str(tmp_path))
    syncpass.run_pass(cfg, open_store(cfg.store), Log())
    out = read_json(cfg.paths.leases(F))["requests"][rid]
    assert out["outcome"] == "error" and "not inside a git repository" in out["error"]


def test_other_mcp_record_kinds_are_left_for_their_consumers(home, cfg, git_repo):
    p = cfg.paths
    mcp_record(p, "proposed", "alice", claim_id="c1", claim="tests need docker", claim_type="environment")
    rid = mcp_record(p, "lease_request", "alice", paths=["README.md"], reason="docs", cwd=git_repo)
    mcp_record(p, "handoff", "alice", summary="done with docs", status="done")
    store = open_store(cfg.store)
    log = Log()
    for _ in range(3):
        syncpass.run_pass(cfg, store, log)
    assert log.names().count("lease_request_applied") == 1  # consumed once, by its watermark
    assert read_json(p.leases(F))["requests"][rid]["outcome"] == "granted"
    kinds = []
    for name in os.listdir(p.runtime_spool("mcp")):
        with open(os.path.join(p.runtime_spool("mcp"), name)) as fh:
            kinds += [json.loads(line)["kind"] for line in fh]
    assert kinds == []  # every consumer read the file to its end: reclaimed


# -- renewals and releases on the store clock -----------------------------------------------------

@pytest.fixture
def plane_env(home, cfg, git_repo):
    clock = FakeClock()
    store = MemoryStore(now=clock)
    cfg = with_sync(cfg, heartbeat_secs=60, roster_secs=60)
    log = Log()
    plane = sync.LivePlane(cfg, log, rand=lambda: 0.0)
    return cfg, store, clock, plane, log, git_repo


def run(plane, store):
    summary = plane.run(store)
    assert "live_error" not in summary, summary
    return summary


def test_held_leases_are_renewed_every_ttl_fifth_while_the_session_is_open_and_released_at_its_end(home, plane_env):
    cfg, store, clock, plane, log, repo = plane_env
    start_alice(home, repo)
    mcp_record(cfg.paths, "lease_request", "alice", paths=["src/app.py"], reason="app", ttl_secs=100, cwd=repo)
    run(plane, store)
    key = leases.lease_key(F, leases.resource_key(REPO_ID, "src/app.py"))
    first = leases.read(store, key)[0]
    assert first["expires_at"] == clock() + 100
    clock.advance(10)
    assert run(plane, store)["renewed"] == 0          # not due before ttl/5
    clock.advance(11)
    assert run(plane, store)["renewed"] == 1
    assert leases.read(store, key)[0]["expires_at"] == clock() + 100 and leases.read(store, key)[0]["epoch"] == first["epoch"]
    hook(home, "alice", session_end("sess-alice", repo))
    assert run(plane, store)["released"] == 1
    assert leases.read(store, key)[0]["holder"] is None


def test_a_lapsed_lease_taken_by_another_is_reported_lost(home, plane_env):
    cfg, store, clock, plane, log, repo = plane_env
    start_alice(home, repo)
    mcp_record(cfg.paths, "lease_request", "alice", paths=["src/app.py"], reason="app", ttl_secs=100, cwd=repo)
    run(plane, store)
    clock.advance(150)  # this syncd was away longer than the TTL
    key = leases.lease_key(F, leases.resource_key(REPO_ID, "src/app.py"))
    leases.acquire(store, key, holder="carol", reason="hotfix", ttl=100, resource="k", repo=REPO_ID, path="src/app.py")
    run(plane, store)
    view = read_json(cfg.paths.leases(F))
    assert view["lost"][-1]["path"] == "src/app.py" and view["lost"][-1]["now_held_by"] == "carol"
    assert "lease_lost" in log.names() and plane.state["held"] == {}


def test_the_roster_is_rebuilt_at_most_every_roster_secs_across_hosts(tmp_path, monkeypatch, git_repo):
    from lib import config

    clock = FakeClock()
    store = MemoryStore(now=clock)
    planes = []
    for host, agent in (("h1", "alice"), ("h2", "bob")):
        h = tmp_path / host
        h.mkdir()
        env = {"CTXLAKE_HOME": str(h), "CTXLAKE_CONFIG": str(h / "none.toml"), "CTXLAKE_FLEET_ID": F,
               "CTXLAKE_AGENT_ID": agent}
        c = config.load(env)
        hook(str(h), agent, prompt(f"sess-{agent}", git_repo, f"{agent}'s task"))
        log = Log()
        planes.append((sync.LivePlane(with_sync(c, roster_secs=60), log, rand=lambda: 0.0), log))
    for plane, _ in planes:
        run(plane, store)
    rebuilt = lambda: sum(log.names().count("roster_rebuilt") for _, log in planes)  # noqa: E731
    assert rebuilt() == 1
    for step in range(5):  # 5 × 20 s: at most one rebuild per 60 s, by whichever host is due first
        clock.advance(20)
        for plane, _ in planes:
            run(plane, store)
    assert rebuilt() == 2
    agents = {a["agent_id"] for a in json.loads(store.get(presence.roster_key(F)).data)["agents"]}
    assert agents == {"alice", "bob"}


def test_a_host_that_stops_beating_drops_out_of_every_view_after_the_ttl(tmp_path, git_repo):
    from lib import config

    clock = FakeClock()
    store = MemoryStore(now=clock)
    planes = {}
    for host, agent in (("h1", "alice"), ("h2", "bob")):
        h = tmp_path / host
        h.mkdir()
        c = config.load({"CTXLAKE_HOME": str(h), "CTXLAKE_CONFIG": str(h / "x.toml"), "CTXLAKE_FLEET_ID": F,
                         "CTXLAKE_AGENT_ID": agent})
        hook(str(h), agent, prompt(f"sess-{agent}", git_repo, "work"))
        planes[agent] = (sync.LivePlane(with_sync(c, roster_secs=60), Log(), rand=lambda: 0.0), c)
    for plane, _ in planes.values():
        run(plane, store)
    bob_plane, bob_cfg = planes["bob"]
    for _ in range(4):  # alice's host is gone (no more passes); bob's keeps running
        clock.advance(100)
        run(bob_plane, store)
    cached = read_json(bob_cfg.paths.roster(F))
    assert [a["agent_id"] for a in cached["agents"]] == ["bob"]
    assert [a["agent_id"] for a in json.loads(store.get(presence.roster_key(F)).data)["agents"]] == ["bob"]


def test_an_agent_retired_by_the_fleet_operator_is_not_resurrected_until_it_works_again(home, plane_env):
    from lib.live import fleet

    cfg, store, clock, plane, log, repo = plane_env
    start_alice(home, repo)
    syncpass.run_pass(cfg, store, log, plane=plane)  # shipped: the plane knows alice's activity
    mcp_record(cfg.paths, "lease_request", "alice", paths=["src/app.py"], reason="app", ttl_secs=100, cwd=repo)
    run(plane, store)
    assert presence.read_heartbeat(store, F, "alice") is not None
    out = fleet.retire_agent(store, F, "alice")  # her pod ended; the operator cleans up at once
    assert out["heartbeat_deleted"] and len(out["leases_released"]) == 1
    for _ in range(3):  # heartbeats fall due; the session file is still there, idle
        clock.advance(61)
        run(plane, store)
    assert presence.read_heartbeat(store, F, "alice") is None
    assert "agent_retired_elsewhere" in log.names() and plane.state["held"] == {}
    assert read_json(cfg.paths.roster(F))["agents"] == []
    hook(home, "alice", prompt("sess-alice", repo, "back to work"))  # new activity: she rejoins
    syncpass.run_pass(cfg, store, log, plane=plane)
    assert presence.read_heartbeat(store, F, "alice")["task"] == "back to work"


def test_fleet_claim_and_release_through_the_real_mcp_tools(home, cfg, git_repo):
    """The MCP server's fleet_claim/fleet_release queue records; syncd applies them in one pass;
    fleet_status then reports the outcome and the lease (docs/design.md §9, §11)."""
    import time

    from lib import mcp_tools

    hook(home, "alice", prompt("sess-alice", git_repo, "rewrite the parser"))
    alice = mcp_tools.Tools(mcp_tools.Context(cfg, cwd=git_repo))
    queued = alice.fleet_claim({"paths": ["src/parser/"], "reason": "rewrite the parser"})
    assert queued["queued"] is True
    store = open_store(cfg.store)
    syncpass.run_pass(cfg, store, Log())
    status = alice.fleet_status({})
    mine = [r for r in status["my_requests"] if r["record_id"] == queued["record_id"]]
    assert mine and mine[0]["outcome"]["outcome"] == "granted"
    assert [(x["holder"], x["path"], x["mine"]) for x in status["leases"]] == [("alice", "src/parser/", True)]
    bob_cfg = dataclasses.replace(cfg, agent_id="bob")
    bob = mcp_tools.Tools(mcp_tools.Context(bob_cfg, cwd=git_repo, clock=time.time))
    answer = bob.fleet_claim({"paths": ["src/parser/lexer.py"], "reason": "typo"})
    assert [h["holder"] for h in answer["held_by_others_as_of_cache"]] == ["alice"]
    syncpass.run_pass(cfg, store, Log())
    out = read_json(cfg.paths.leases(F))["requests"][answer["record_id"]]
    assert out["outcome"] == "refused" and out["holder"] == "alice" and out["reason"] == "rewrite the parser"
    released = alice.fleet_release({})
    syncpass.run_pass(cfg, store, Log())
    assert read_json(cfg.paths.leases(F))["requests"][released["record_id"]]["outcome"] == "released"
    assert read_json(cfg.paths.leases(F))["leases"] == []
