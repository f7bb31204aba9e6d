"""The store contract (lib/store/__init__.py, docs/design.md §8), each behaviour written once and run
against every backend: ``memory://``, ``file://`` and a real S3 server (SeaweedFS)."""
from __future__ import annotations

import concurrent.futures
import hashlib
import os
import threading
import time

import pytest

from lib.store import CREATE, OVERWRITE, Conflict, NotFound, PreconditionFailed, update


def plausible(server_time) -> bool:
    """A store clock reading is an epoch-seconds float within a day of this host's clock (the
    test servers run on this machine; the bound only rules out units or epoch mistakes)."""
    return isinstance(server_time, float) and abs(server_time - time.time()) < 86400


# -- create-only -------------------------------------------------------------------------------

def test_create_only_succeeds_once_and_keeps_the_first_bytes(store):
    first = store.put("live/f/roster.json", b"first", CREATE)
    with pytest.raises(PreconditionFailed) as lost:
        store.put("live/f/roster.json", b"second", CREATE)
    assert lost.value.key == "live/f/roster.json"
    got = store.get("live/f/roster.json")
    assert got.data == b"first" and got.etag == first.etag


def test_overwrite_replaces_and_changes_the_etag(store):
    a = store.put("k.json", b"a")
    b = store.put("k.json", b"b", OVERWRITE)
    assert a.etag != b.etag
    assert store.get("k.json").data == b"b"


# -- compare-and-swap --------------------------------------------------------------------------

def test_cas_with_the_current_etag_wins(store):
    v1 = store.put("live/f/leases/x.json", b"v1", CREATE)
    v2 = store.put("live/f/leases/x.json", b"v2", update(v1.etag))
    got = store.get("live/f/leases/x.json")
    assert got.data == b"v2" and got.etag == v2.etag != v1.etag


def test_cas_with_a_stale_etag_loses_and_changes_nothing(store):
    v1 = store.put("live/f/leases/x.json", b"v1", CREATE)
    store.put("live/f/leases/x.json", b"v2", update(v1.etag))
    with pytest.raises(PreconditionFailed):
        store.put("live/f/leases/x.json", b"v3", update(v1.etag))
    assert store.get("live/f/leases/x.json").data == b"v2"


def test_cas_on_a_missing_key_loses(store):
    some = store.put("elsewhere.json", b"x")
    with pytest.raises(PreconditionFailed):
        store.put("live/f/leases/missing.json", b"v", update(some.etag))
    with pytest.raises(NotFound):
        store.get("live/f/leases/missing.json")


# -- reads -------------------------------------------------------------------------------------

def test_conditional_get_returns_not_modified_for_the_current_etag(store):
    v1 = store.put("snapshot/f/current.json", b'{"sha256": "a"}')
    same = store.get("snapshot/f/current.json", if_none_match=v1.etag)
    assert same.modified is False and same.data is None and same.etag == v1.etag
    other = store.get("snapshot/f/current.json", if_none_match='"not-the-etag"')
    assert other.modified is True and other.data == b'{"sha256": "a"}'
    store.put("snapshot/f/current.json", b'{"sha256": "b"}', update(v1.etag))
    changed = store.get("snapshot/f/current.json", if_none_match=v1.etag)
    assert changed.modified is True and changed.data == b'{"sha256": "b"}'


def test_head_returns_metadata_without_data(store):
    v = store.put("a/b.json", b"12345")
    h = store.head("a/b.json")
    assert h.data is None and h.etag == v.etag and plausible(h.last_modified)
    with pytest.raises(NotFound):
        store.head("a/missing.json")


def test_get_of_a_missing_key_is_not_found(store):
    with pytest.raises(NotFound) as exc:
        store.get("no/such/key.json")
    assert exc.value.key == "no/such/key.json"


# -- list --------------------------------------------------------------------------------------

def test_list_returns_keys_under_a_prefix_in_order_with_sizes(store):
    for key in ("live/f/agents/b.json", "live/f/agents/a.json", "live/f/agents2/c.json",
                "live/g/agents/d.json", "sessions/x.parquet"):
        store.put(key, key.encode())
    assert [e.key for e in store.list("live/f/agents/")] == ["live/f/agents/a.json", "live/f/agents/b.json"]
    assert [e.key for e in store.list("live/f/agents")] == [
        "live/f/agents/a.json", "live/f/agents/b.json", "live/f/agents2/c.json"]
    everything = list(store.list(""))
    assert [e.key for e in everything] == sorted(e.key for e in everything) and len(everything) == 5
    sizes = {e.key: e.size for e in everything}
    assert sizes["sessions/x.parquet"] == len(b"sessions/x.parquet")
    assert all(plausible(e.last_modified) for e in everything)
    assert list(store.list("nothing/here/")) == []


def test_list_follows_pagination_past_a_thousand_keys(store):
    keys = [f"claims/events/k{i:05d}.json" for i in range(1234)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: store.put(k, b"{}"), keys))
    store.put("claims/other.json", b"{}")
    assert [e.key for e in store.list("claims/events/")] == keys


# -- delete ------------------------------------------------------------------------------------

def test_delete_removes_the_key_and_a_missing_key_is_not_an_error(store):
    store.put("_meta/probe/me/a.json", b"x")
    store.delete("_meta/probe/me/a.json")
    with pytest.raises(NotFound):
        store.get("_meta/probe/me/a.json")
    assert list(store.list("_meta/probe/me/")) == []
    store.delete("_meta/probe/me/a.json")
    store.delete("never/existed.json")
    store.put("_meta/probe/me/a.json", b"again", CREATE)  # create-only works again after delete


# -- races -------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads,rounds", [(16, 5)])
def test_threads_racing_create_and_cas_have_exactly_one_winner_per_round(store, threads, rounds):
    for r in range(rounds):
        key = f"live/f/leases/race-{r}.json"
        barrier = threading.Barrier(threads)
        outcomes: dict[str, list] = {"create": [], "cas": []}
        lock = threading.Lock()

        def contender(i):
            barrier.wait()
            try:
                store.put(key, f"created by {i}".encode(), CREATE)
                won = True
            except PreconditionFailed:
                won = False
            with lock:
                outcomes["create"].append(won)
            barrier.wait()  # every create has finished: everyone reads the same version
            seen = store.get(key).etag
            barrier.wait()
            try:
                store.put(key, f"swapped by {i}".encode(), update(seen))
                won = True
            except (PreconditionFailed, Conflict):
                won = False
            with lock:
                outcomes["cas"].append(won)

        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            for f in [pool.submit(contender, i) for i in range(threads)]:
                f.result()
        assert outcomes["create"].count(True) == 1, f"round {r}: create winners {outcomes['create']}"
        assert outcomes["cas"].count(True) == 1, f"round {r}: CAS winners {outcomes['cas']}"
        assert store.get(key).data.startswith(b"swapped by ")


# -- objects and keys --------------------------------------------------------------------------

@pytest.mark.slow
def test_a_100_mib_object_round_trips_intact(store):
    data = os.urandom(1 << 20) * 100  # 100 MiB
    v = store.put("snapshot/f/big.sqlite", data, CREATE)
    got = store.get("snapshot/f/big.sqlite")
    assert len(got.data) == len(data)
    assert hashlib.sha256(got.data).digest() == hashlib.sha256(data).digest()
    assert got.etag == v.etag == store.head("snapshot/f/big.sqlite").etag
    assert [e.size for e in store.list("snapshot/f/")] == [100 << 20]


UNUSUAL_KEYS = ["dir with spaces/file name.json", "ünïcødé/日本語/ключ.json", "emoji/🚀 launch.json",
                "signs/a+b=c&d;e,f@g$h.json", "percent/100%25 sure %2F.json", "quote/it's \"x\".json"]


@pytest.mark.parametrize("key", UNUSUAL_KEYS)
def test_keys_with_unicode_spaces_and_punctuation_round_trip(store, key):
    v = store.put(key, key.encode(), CREATE)
    assert store.get(key).data == key.encode()
    assert store.get(key, if_none_match=v.etag).modified is False
    assert [e.key for e in store.list(key.split("/")[0] + "/")] == [key]
    store.put(key, b"2", update(v.etag))
    store.delete(key)
    with pytest.raises(NotFound):
        store.head(key)


# -- the store clock ---------------------------------------------------------------------------

def test_server_time_is_the_store_clock_on_results_and_errors(store):
    before = store.clock()
    assert plausible(before)
    v = store.put("t.json", b"1", CREATE)
    assert plausible(v.server_time)
    assert plausible(store.get("t.json").server_time)
    assert plausible(store.head("t.json").server_time)
    assert plausible(store.get("t.json", if_none_match=v.etag).server_time)
    with pytest.raises(PreconditionFailed) as lost:
        store.put("t.json", b"2", CREATE)
    assert plausible(lost.value.server_time)
    with pytest.raises(NotFound) as missing:
        store.get("absent.json")
    assert plausible(missing.value.server_time)
    # The clock moves forward (whole-second resolution on S3, so allow equality).
    assert store.clock() >= before
