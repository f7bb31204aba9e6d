"""The maintenance lease is an ordinary lease (same code path) and its epoch fences the snapshot
pointer: a maint whose lease lapsed while it worked cannot swap the pointer (docs/design.md §9)."""
from __future__ import annotations

import json

import pytest

from lib import lake, maintenance
from lib.memory import snapshot
from lib.live import leases
from tests.live.helpers import Log

F = "fleet-live"


def pointer(store):
    return json.loads(store.get(lake.snapshot_pointer_key(F)).data)


def test_publish_with_a_stale_epoch_raises_and_leaves_the_pointer(mem_store):
    snapshot.publish(mem_store, F, b"new snapshot", maint_epoch=5, built_at="t", claim_count=0, session_count=0)
    with pytest.raises(snapshot.StaleEpoch):
        snapshot.publish(mem_store, F, b"old snapshot", maint_epoch=4, built_at="t", claim_count=0, session_count=0)
    assert pointer(mem_store)["maint_epoch"] == 5 and pointer(mem_store)["sha256"] == snapshot.sha256(b"new snapshot")


def test_second_maint_is_refused_naming_the_holder(cfg, mem_store):
    leases.acquire(mem_store, leases.lease_key(F, leases.MAINTENANCE), holder="maint@other:1", reason="maintenance",
                 ttl=300, resource=leases.MAINTENANCE)
    out = maintenance.run_once(cfg, mem_store, Log())
    assert not out["ran"] and out["held_by"] == "maint@other:1" and "maint@other:1" in out["message"] and "nothing to do" in out["message"]


def _lapse_and_take_over(mem_store, store_clock, cfg, monkeypatch):
    """While maint A builds its snapshot, its lease lapses and maint B runs a whole pass."""
    real_build = snapshot.build
    seen = {"b": None, "started": False}

    def build(*a, **k):
        data = real_build(*a, **k)
        if not seen["started"]:
            seen["started"] = True
            store_clock.advance(cfg.leases.ttl_secs + 1)  # A stalled longer than its TTL
            monkeypatch.setattr(maintenance.socket, "gethostname", lambda: "host-b")
            seen["b"] = maintenance.run_once(cfg, mem_store, Log())
            monkeypatch.setattr(maintenance.socket, "gethostname", lambda: "host-a")
            return data + b"-from-a"  # A's bytes differ from B's
        return data

    monkeypatch.setattr(snapshot, "build", build)
    monkeypatch.setattr(maintenance.socket, "gethostname", lambda: "host-a")
    return seen


def test_a_maint_whose_lease_lapsed_stops_before_the_swap(cfg, mem_store, store_clock, monkeypatch):
    seen = _lapse_and_take_over(mem_store, store_clock, cfg, monkeypatch)
    log = Log()
    a = maintenance.run_once(cfg, mem_store, log)
    b = seen["b"]
    assert b["ran"] and b["snapshot"]["published"] and b["maint_epoch"] == a["maint_epoch"] + 1
    assert a["fenced"] and a["snapshot"] is None and "maint_fenced_lost" in log.names()
    assert pointer(mem_store)["maint_epoch"] == b["maint_epoch"]
    assert pointer(mem_store)["sha256"] == b["snapshot"]["sha256"]


def test_even_without_noticing_the_lapse_a_stale_epoch_cannot_swap_the_pointer(cfg, mem_store, store_clock, monkeypatch):
    seen = _lapse_and_take_over(mem_store, store_clock, cfg, monkeypatch)
    monkeypatch.setattr(leases.Renewer, "tick", lambda self, force=False: None)  # a maint that never checks
    log = Log()
    a = maintenance.run_once(cfg, mem_store, log)
    assert a["fenced"] and "maint epoch" in a["message"]
    assert pointer(mem_store)["maint_epoch"] == seen["b"]["maint_epoch"]
    assert pointer(mem_store)["sha256"] == seen["b"]["snapshot"]["sha256"]
