"""Faults of the live plane: the store goes away, a lease object holds garbage, a host's clock
is ten minutes off (docs/design.md §9, invariants 6 and 12)."""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from lib import syncpass
from lib.live import leases, presence, sync
from lib.store import Unavailable, open_store
from lib.store.memory import MemoryStore
from tests.live.conftest import REPO_ID, FakeClock
from tests.live.helpers import Log, hook, mcp_record, prompt, read_json, tool

F = "fleet-live"


class DownStore:
    """A store that cannot be reached: every call raises :class:`Unavailable`."""

    url = "s3://unreachable/x"

    def __getattr__(self, name):
        def fail(*a, **k):
            raise Unavailable(f"{name}: connection refused", a[0] if a else None)
        return fail


def test_store_outage_keeps_the_last_view_and_says_how_old_it_is(home, cfg, git_repo):
    hook(home, "alice", prompt("sess-alice", git_repo, "split the lexer"))
    store = open_store(cfg.store)
    mcp_record(cfg.paths, "lease_request", "alice", paths=["src/parser/"], reason="split the lexer", cwd=git_repo)
    syncpass.run_pass(cfg, store, Log())
    good = read_json(cfg.paths.leases(F))
    good_roster = read_json(cfg.paths.roster(F))
    queued = mcp_record(cfg.paths, "lease_request", "alice", paths=["README.md"], reason="docs", cwd=git_repo)
    log = Log()
    summary = syncpass.run_pass(cfg, DownStore(), log)
    assert summary["errors"] >= 1 and "Unavailable" in summary["live"]["live_error"]
    stale = read_json(cfg.paths.leases(F))
    assert stale["leases"] == good["leases"] and stale["refreshed_at"] == good["refreshed_at"]
    assert stale["stale_since"] >= good["refreshed_at"] and "Unavailable" in stale["error"]
    assert queued not in stale["requests"]  # not applied, still in the spool
    stale_roster = read_json(cfg.paths.roster(F))
    assert stale_roster["agents"] == good_roster["agents"] and stale_roster["stale_since"] == stale["stale_since"]
    # the hook keeps warning from the last view while it is unexpired by the store clock
    ans = hook(home, "bob", tool("sess-bob", git_repo, "Edit", {"file_path": os.path.join(git_repo, "src/parser/lexer.py"),
                                                                "old_string": "a", "new_string": "b"}))
    assert "held by alice (split the lexer)" in ans["hookSpecificOutput"]["additionalContext"]
    # a second failed pass keeps the first failure time
    syncpass.run_pass(cfg, DownStore(), Log())
    assert read_json(cfg.paths.leases(F))["stale_since"] == stale["stale_since"]
    # the store comes back: the queued request is applied and the view is fresh again
    log = Log()
    syncpass.run_pass(cfg, store, log)
    back = read_json(cfg.paths.leases(F))
    assert back["stale_since"] is None and back["requests"][queued]["outcome"] == "granted"
    assert back["refreshed_at"] > good["refreshed_at"] and "live_view_recovered" in log.names()


def test_a_first_pass_without_a_store_writes_an_empty_view_marked_stale(home, cfg):
    syncpass.run_pass(cfg, DownStore(), Log())
    view = read_json(cfg.paths.leases(F))
    assert view["leases"] == [] and view["stale_since"] and view["refreshed_at"] is None
    assert leases.conflicts_for_paths(view, "a", ["x"], None) == []


def test_a_garbage_lease_object_is_treated_as_free_overwritten_by_cas_and_logged(home, cfg, git_repo):
    store = open_store(cfg.store)
    key = leases.lease_key(F, leases.resource_key(REPO_ID, "README.md"))
    store.put(key, b'{"holder": "ghost", "epoch": "seven"')  # truncated and mistyped
    rid = mcp_record(cfg.paths, "lease_request", "alice", paths=["README.md"], reason="docs", cwd=git_repo)
    log = Log()
    syncpass.run_pass(cfg, store, log)
    assert read_json(cfg.paths.leases(F))["requests"][rid]["outcome"] == "granted"
    assert ("lease_garbage" in log.names())
    rec, _ = leases.read(store, key)
    assert rec["holder"] == "alice" and rec["epoch"] == 1 and rec["path"] == "README.md"


def test_garbage_in_the_fleet_listing_is_shown_as_free(home, cfg):
    store = open_store(cfg.store)
    store.put(leases.lease_key(F, "0" * 64), b"\xff\xfe")
    log = Log()
    syncpass.run_pass(cfg, store, log)
    assert read_json(cfg.paths.leases(F))["leases"] == [] and "lease_garbage" in log.names()


def test_a_garbage_maintenance_lease_cannot_reset_fencing(cfg, mem_store):
    from lib import lake, maintenance

    mem_store.put(lake.snapshot_pointer_key(F), json.dumps({"sha256": "0" * 64, "maint_epoch": 12}).encode())
    mem_store.put(leases.lease_key(F, leases.MAINTENANCE), b"garbage")
    log = Log()
    summary = maintenance.run_once(cfg, mem_store, log)
    assert summary["ran"] and summary["maint_epoch"] == 13 and "lease_garbage" in log.names()
    assert json.loads(mem_store.get(lake.snapshot_pointer_key(F)).data)["maint_epoch"] == 13


# -- clock skew: a host whose clock is ten minutes off decides exactly like the others ----------

def _decisions(home, cfg, git_repo, monkeypatch, skew: float) -> dict:
    """Run a fixed scenario with this process's clock ``skew`` seconds off; the store clock is
    its own (a fake that never reads ``time.time``). Returns every decision made."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + skew)
    try:
        clock = FakeClock()
        store = MemoryStore(now=clock)
        out = {}
        key = leases.lease_key(F, "skew")
        leases.acquire(store, key, holder="a", reason="r", ttl=300)
        with pytest.raises(leases.Refused) as exc:
            leases.acquire(store, key, holder="b", reason="x", ttl=300)
        out["refused_by"] = (exc.value.holder, exc.value.expires_at - clock())
        clock.advance(299)
        with pytest.raises(leases.Refused):
            leases.acquire(store, key, holder="b", reason="x", ttl=300)
        clock.advance(1)
        out["takeover_epoch"] = leases.acquire(store, key, holder="b", reason="x", ttl=300)["epoch"]
        # the live plane on this host: heartbeat, roster and lease request, all on the store clock
        hook(home, "alice", prompt(f"sess-{skew}", git_repo, "work"))
        rid = mcp_record(cfg.paths, "lease_request", "alice", paths=["src/app.py"], reason="app", ttl_secs=120,
                         cwd=git_repo)
        plane = sync.LivePlane(cfg, Log(), rand=lambda: 0.0)
        assert "live_error" not in plane.run(store)
        beat = presence.read_heartbeat(store, F, "alice")
        out["heartbeat_age"] = clock() - beat["updated_at"]
        view = read_json(cfg.paths.leases(F))
        out["request"] = view["requests"][rid]["outcome"]
        out["lease_left"] = view["requests"][rid]["expires_at"] - clock()
        # the hook on this host judges expiry through the cached store_time/refreshed_at pair
        target = os.path.join(git_repo, "src", "app.py")
        out["hook_sees_lease"] = [h["holder"] for h in leases.conflicts_for_paths(view, "bob", [target], None)]
        clock.advance(119)
        assert "live_error" not in plane.run(store)
        out["roster"] = [a["agent_id"] for a in read_json(cfg.paths.roster(F))["agents"]]
        clock.advance(400)  # lease and heartbeat both long expired by the store clock
        out["after_expiry"] = [h["holder"] for h in leases.conflicts_for_paths(
            {**view, "store_time": clock(), "refreshed_at": time.time()}, "bob", [target], None)]
        out["stale_roster"] = presence.live_agents([beat], clock(), cfg.sync.presence_ttl_secs)
        return out
    finally:
        monkeypatch.setattr(time, "time", real)


@pytest.mark.parametrize("skew", [600.0, -600.0])
def test_a_host_ten_minutes_off_makes_the_same_decisions(home, cfg, git_repo, monkeypatch, skew):
    baseline = _decisions(home, cfg, git_repo, monkeypatch, 0.0)
    shutil.rmtree(os.path.join(cfg.paths.state_dir, "live"), ignore_errors=True)  # a fresh host for the skewed run
    skewed = _decisions(home, cfg, git_repo, monkeypatch, skew)
    assert skewed == baseline
    assert baseline["refused_by"] == ("a", 300) and baseline["takeover_epoch"] == 2
    assert baseline["request"] == "granted" and baseline["lease_left"] == 120 and baseline["heartbeat_age"] == 0
    assert baseline["hook_sees_lease"] == ["alice"] and baseline["after_expiry"] == []
    assert baseline["roster"] == ["alice"] and baseline["stale_roster"] == []


@pytest.mark.s3
def test_on_a_real_s3_server_expiry_follows_the_servers_clock_not_ours(s3_url, monkeypatch):
    store = open_store(s3_url)
    key = leases.lease_key(F, "skew-s3")
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 600)  # this host is ten minutes fast
    rec = leases.acquire(store, key, holder="a", reason="r", ttl=2)
    server_now = store.clock()
    assert abs(rec["expires_at"] - 2 - server_now) <= 2  # stamped with the server's Date, not ours
    with pytest.raises(leases.Refused):
        leases.acquire(store, key, holder="b", reason="x", ttl=2)  # by our clock it expired 10 min ago
    while store.clock() < rec["expires_at"]:
        time.sleep(0.2)  # waits for the server's clock; asserts nothing about durations
    assert leases.acquire(store, key, holder="b", reason="x", ttl=2)["epoch"] == 2
