"""The live plane on Redis, everything else on the lake, selected by ``live_store`` (issue #12)."""
from __future__ import annotations

import pytest

from lib.live import leases
from lib.store import CREATE, PreconditionFailed, Unavailable, open_store
from lib.store.routed import RoutedStore

pytestmark = pytest.mark.redis


def test_live_keys_go_to_redis_and_the_rest_to_the_lake(tmp_path, redis_url):
    store = open_store(f"file://{tmp_path}/lake", live=redis_url)
    assert isinstance(store, RoutedStore)
    store.put("live/f/roster.json", b"{}")
    store.put("sessions/fleet=f/x", b"1")
    assert [e.key for e in store.live.list("")] == ["live/f/roster.json"]
    assert [e.key for e in store.lake.list("")] == ["sessions/fleet=f/x"]
    assert [e.key for e in store.list("")] == ["live/f/roster.json", "sessions/fleet=f/x"]


def test_lease_state_machine_runs_unchanged_on_redis(redis_url, tmp_path):
    store = open_store(f"file://{tmp_path}/lake", live=redis_url)
    key = leases.lease_key("f", "res")
    rec = leases.acquire(store, key, holder="a", reason="edit", ttl=30)
    with pytest.raises(leases.Refused) as exc:
        leases.acquire(store, key, holder="b", reason="x", ttl=30)
    assert exc.value.holder == "a"
    assert leases.release(store, key, holder="a")
    assert leases.acquire(store, key, holder="b", reason="x", ttl=30)["epoch"] == rec["epoch"] + 1


def test_redis_restart_empties_the_live_plane_and_never_yields_two_holders(tmp_path):
    from tests.support.redisserver import redis_binary, start_redis
    from tests.support.require import missing_server

    if not redis_binary():
        missing_server("redis-server not installed: apt-get install redis-server (make test does)")
    server = start_redis()
    try:
        store = open_store(f"file://{tmp_path}/lake", live=server.url("restart"))
        key = leases.lease_key("f", "res")
        leases.acquire(store, key, holder="a", ttl=300)
        server.stop()
        with pytest.raises(Unavailable):
            leases.acquire(store, key, holder="b", ttl=300)
        server.restart()
        # the lease is gone with the data: the next claimant creates it; a second one is refused
        leases.acquire(store, key, holder="b", ttl=300)
        with pytest.raises(leases.Refused):
            leases.acquire(store, key, holder="a", ttl=300)
        with pytest.raises(PreconditionFailed):
            store.put(key, b"{}", CREATE)
    finally:
        server.stop()


def test_connection_refused_is_unavailable(tmp_path):
    store = open_store("redis://127.0.0.1:1/0")
    with pytest.raises(Unavailable):
        store.get("live/f/roster.json")
