"""Lease decisions as pure functions, and the I/O shell on the in-memory store (DESIGN.md §9)."""
from __future__ import annotations

import pytest

from lib import live
from lib.store.memory import MemoryStore


def test_absent_lease_is_taken_with_epoch_one():
    r = live.decide_acquire(None, holder="a", session_id="s", reason="edit", now=100, ttl=300, resource="k")
    assert r["holder"] == "a" and r["epoch"] == 1 and r["expires_at"] == 400


def test_held_lease_is_refused_naming_the_holder():
    cur = live.decide_acquire(None, holder="a", session_id="s", reason="refactor", now=100, ttl=300, resource="k")
    with pytest.raises(live.Refused) as exc:
        live.decide_acquire(cur, holder="b", session_id="t", reason="x", now=200, ttl=300, resource="k")
    assert exc.value.holder == "a" and "refactor" in str(exc.value) and "advisory" in str(exc.value)


def test_expired_lease_is_taken_over_by_store_clock_with_a_new_epoch():
    cur = live.decide_acquire(None, holder="a", session_id="s", reason="r", now=100, ttl=300, resource="k")
    r = live.decide_acquire(cur, holder="b", session_id="t", reason="x", now=401, ttl=300, resource="k")
    assert r["holder"] == "b" and r["epoch"] == 2


def test_renew_keeps_epoch_and_release_frees_keeping_epoch():
    cur = live.decide_acquire(None, holder="a", session_id="s", reason="r", now=100, ttl=300, resource="k")
    ren = live.decide_acquire(cur, holder="a", session_id="s", reason="r", now=200, ttl=300, resource="k")
    assert ren["epoch"] == 1 and ren["expires_at"] == 500 and ren["acquired_at"] == 100
    rel = live.decide_release(ren, holder="a", now=250)
    assert rel["holder"] is None and rel["epoch"] == 1
    assert live.decide_release(ren, holder="b", now=250) is None


def test_garbage_record_is_treated_as_free():
    r = live.decide_acquire({"holder": 5}, holder="a", session_id=None, reason="", now=1, ttl=10, resource="k")
    assert r["holder"] == "a" and r["epoch"] == 1


def test_acquire_and_release_through_the_store_use_the_store_clock():
    clock = {"t": 1000.0}
    store = MemoryStore(now=lambda: clock["t"])
    live.acquire(store, "live/f/leases/x.json", holder="a", ttl=300)
    with pytest.raises(live.Refused):
        live.acquire(store, "live/f/leases/x.json", holder="b", ttl=300)
    clock["t"] += 301
    rec = live.acquire(store, "live/f/leases/x.json", holder="b", ttl=300)
    assert rec["epoch"] == 2
    assert live.release(store, "live/f/leases/x.json", holder="b")
    assert live.acquire(store, "live/f/leases/x.json", holder="c", ttl=300)["epoch"] == 3
