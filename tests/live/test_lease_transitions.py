"""Every transition of the lease state machine (docs/design.md §9): the pure decisions, then the
CAS shell on the in-memory store with a fake store clock.

States: absent · garbage · free (released) · held by me (live / expired) · held by another
(live / expired). Operations: acquire, renew, release.
"""
from __future__ import annotations

import json

import pytest

from lib.live import leases
from lib.store import Conflict, PreconditionFailed, Unavailable
from lib.store.memory import MemoryStore

K = "live/f/leases/x.json"


def held(holder="a", now=100.0, ttl=300.0, epoch=1, reason="refactor"):
    r = leases.decide_acquire(None, holder=holder, session_id="s", reason=reason, now=now, ttl=ttl, resource="k",
                            repo="github.com/o/r", path="src/x.py")
    return dict(r, epoch=epoch)


# -- acquire ---------------------------------------------------------------------------------

def test_absent_lease_is_taken_with_epoch_one():
    r = leases.decide_acquire(None, holder="a", session_id="s", reason="edit", now=100, ttl=300, resource="k")
    assert r["holder"] == "a" and r["epoch"] == 1 and r["expires_at"] == 400
    assert r["acquired_at"] == 100 and r["updated_at"] == 100


def test_held_lease_is_refused_naming_the_holder_reason_and_expiry():
    cur = held("a", reason="refactor parser")
    with pytest.raises(leases.Refused) as exc:
        leases.decide_acquire(cur, holder="b", session_id="t", reason="x", now=200, ttl=300, resource="k")
    assert exc.value.holder == "a" and exc.value.reason == "refactor parser" and exc.value.expires_at == 400
    assert exc.value.now == 200 and exc.value.epoch == 1
    msg = str(exc.value)
    assert "held by a (refactor parser)" in msg and "advisory" in msg and "in 3 min" in msg


def test_expired_lease_is_taken_over_by_store_clock_with_a_new_epoch():
    cur = held("a", now=100, ttl=300)
    r = leases.decide_acquire(cur, holder="b", session_id="t", reason="x", now=401, ttl=300, resource="k")
    assert r["holder"] == "b" and r["epoch"] == 2 and r["acquired_at"] == 401


def test_lease_is_expired_at_exactly_its_expiry_instant():
    cur = held("a", now=100, ttl=300)
    assert leases.is_live(cur, 399.999) and not leases.is_live(cur, 400)
    assert leases.decide_acquire(cur, holder="b", session_id=None, reason="", now=400, ttl=10, resource="k")["epoch"] == 2


def test_released_lease_is_taken_by_anyone_with_the_next_epoch():
    rel = leases.decide_release(held("a", epoch=4), holder="a", now=150)
    r = leases.decide_acquire(rel, holder="b", session_id=None, reason="", now=151, ttl=300, resource="k")
    assert r["holder"] == "b" and r["epoch"] == 5


def test_reacquiring_my_live_lease_renews_it_keeping_epoch_and_acquired_at():
    cur = held("a", now=100)
    r = leases.decide_acquire(cur, holder="a", session_id="s2", reason="new reason", now=200, ttl=300, resource="k")
    assert r["epoch"] == 1 and r["acquired_at"] == 100 and r["expires_at"] == 500
    assert r["reason"] == "new reason" and r["session_id"] == "s2" and r["path"] == "src/x.py"


def test_my_expired_lease_is_a_new_acquisition():
    cur = held("a", now=100, ttl=300)
    r = leases.decide_acquire(cur, holder="a", session_id="s", reason="", now=500, ttl=300, resource="k")
    assert r["epoch"] == 2 and r["acquired_at"] == 500


def test_garbage_record_is_treated_as_free():
    r = leases.decide_acquire({"holder": 5}, holder="a", session_id=None, reason="", now=1, ttl=10, resource="k")
    assert r["holder"] == "a" and r["epoch"] == 1


def test_floor_epoch_keeps_fencing_above_a_known_epoch():
    r = leases.decide_acquire(None, holder="m", session_id=None, reason="maintenance", now=1, ttl=10, resource="k",
                            floor_epoch=41)
    assert r["epoch"] == 42


# -- renew -----------------------------------------------------------------------------------

def test_renew_extends_my_live_lease_keeping_epoch():
    r = leases.decide_renew(held("a", now=100), holder="a", now=160, ttl=300)
    assert r["expires_at"] == 460 and r["epoch"] == 1 and r["acquired_at"] == 100 and r["updated_at"] == 160


@pytest.mark.parametrize("current,now", [
    (None, 100),                                        # absent
    ({"holder": [1]}, 100),                             # garbage
    (leases.decide_release(held("a"), holder="a", now=150), 160),  # released
    (held("a", now=100, ttl=300), 400),                 # mine, expired
    (held("b", now=100, ttl=300), 200),                 # someone else's
])
def test_renew_never_reacquires_a_lapsed_or_foreign_lease(current, now):
    with pytest.raises(leases.Lost):
        leases.decide_renew(current, holder="a", now=now, ttl=300)


# -- release ---------------------------------------------------------------------------------

def test_release_frees_keeping_the_epoch():
    rel = leases.decide_release(held("a", epoch=7), holder="a", now=250)
    assert rel["holder"] is None and rel["epoch"] == 7 and rel["released_at"] == 250 and rel["expires_at"] == 250
    assert not leases.is_live(rel, 250)


@pytest.mark.parametrize("current", [None, {"holder": 5}, held("b"), leases.decide_release(held("a"), holder="a", now=1)])
def test_release_of_what_is_not_mine_changes_nothing(current):
    assert leases.decide_release(current, holder="a", now=250) is None


# -- directories -------------------------------------------------------------------------------

def test_directory_lease_covers_paths_below_it_both_ways():
    assert leases.covers("src/", "src/a/b.py") and leases.covers("src/x.py", "src/x.py") and leases.covers("/", "any/thing")
    assert not leases.covers("src", "src/x.py") and not leases.covers("src/a/", "src/b.py")
    dir_lease = held("b", now=100) | {"path": "src/"}
    file_lease = held("c", now=100) | {"path": "lib/util.py"}
    views = [dir_lease, file_lease, held("a", now=100) | {"path": "docs/"}]
    hit = leases.covering_conflicts(views, holder="a", repo="github.com/o/r", path="src/x.py", now=200)
    assert [h["holder"] for h in hit] == ["b"]
    assert [h["holder"] for h in leases.covering_conflicts(views, holder="a", repo="github.com/o/r", path="lib/", now=200)] == ["c"]
    assert leases.covering_conflicts(views, holder="a", repo="github.com/other/r", path="src/x.py", now=200) == []
    assert leases.covering_conflicts(views, holder="a", repo="github.com/o/r", path="src/x.py", now=401) == []
    assert leases.covering_conflicts(views, holder="a", repo="github.com/o/r", path="docs/x.md", now=200) == []


def test_resource_key_is_shared_by_every_clone_of_a_repository(tmp_path):
    from tests.live.conftest import make_repo

    a = make_repo(tmp_path / "clone-a", "git@github.com:Org/Repo.git")
    make_repo(tmp_path / "clone-b", "https://user:tok@GitHub.com/Org/Repo")
    ra, rb = leases.resolve("src/app.py", a), leases.resolve(str(tmp_path / "clone-b" / "src" / "app.py"))
    assert ra == rb == {"repo": "github.com/Org/Repo", "path": "src/app.py"}
    assert leases.resource_key(ra["repo"], ra["path"]) == leases.resource_key(rb["repo"], rb["path"])
    assert leases.resolve("src/parser", a) == {"repo": "github.com/Org/Repo", "path": "src/parser/"}
    assert leases.resolve(str(tmp_path), None) is None


# -- the CAS shell ---------------------------------------------------------------------------

def test_acquire_and_release_through_the_store_use_the_store_clock(mem_store, store_clock):
    leases.acquire(mem_store, K, holder="a", ttl=300)
    with pytest.raises(leases.Refused):
        leases.acquire(mem_store, K, holder="b", ttl=300)
    store_clock.advance(301)
    rec = leases.acquire(mem_store, K, holder="b", ttl=300)
    assert rec["epoch"] == 2
    assert leases.release(mem_store, K, holder="b")
    assert not leases.release(mem_store, K, holder="b")
    assert leases.acquire(mem_store, K, holder="c", ttl=300)["epoch"] == 3


def test_renew_through_the_store_and_lost_after_a_takeover(mem_store, store_clock):
    leases.acquire(mem_store, K, holder="a", ttl=100)
    store_clock.advance(50)
    assert leases.renew(mem_store, K, holder="a", ttl=100)["expires_at"] == store_clock() + 100
    store_clock.advance(101)
    leases.acquire(mem_store, K, holder="b", ttl=100)
    with pytest.raises(leases.Lost) as exc:
        leases.renew(mem_store, K, holder="a", ttl=100)
    assert exc.value.record["holder"] == "b"


class RacingStore(MemoryStore):
    """Lets a rival write land between our read and our conditional write (once)."""

    def __init__(self, now, rival):
        super().__init__(now=now)
        self.rival, self.raced, self.puts = rival, False, []

    def put(self, key, data, mode="overwrite"):
        self.puts.append(mode)
        if not self.raced and mode != "overwrite":
            self.raced = True
            self.rival(self)
        return super().put(key, data, mode)


def test_lost_race_rereads_and_refuses_naming_the_winner(store_clock):
    def rival(store):
        MemoryStore.put(store, K, json.dumps(leases.decide_acquire(None, holder="winner", session_id=None, reason="first",
                                                                 now=store_clock(), ttl=300, resource="k")).encode(), "create")

    store = RacingStore(store_clock, rival)
    races = []
    with pytest.raises(leases.Refused) as exc:
        leases.acquire(store, K, holder="loser", ttl=300, log=lambda ev, **f: races.append(ev))
    assert exc.value.holder == "winner" and races == ["lease_race_lost"]


def test_a_409_conflict_is_retried(mem_store):
    calls = {"n": 0}
    orig = mem_store.put

    def flaky(key, data, mode="overwrite"):
        calls["n"] += 1
        if calls["n"] == 1:
            raise Conflict("409 ConditionalRequestConflict", key)
        return orig(key, data, mode)

    mem_store.put = flaky
    assert leases.acquire(mem_store, K, holder="a", ttl=10)["holder"] == "a" and calls["n"] == 2


def test_unavailable_store_changes_nothing_and_says_so(mem_store):
    mem_store.fail_next = [Unavailable("down", K)]
    with pytest.raises(Unavailable):
        leases.acquire(mem_store, K, holder="a", ttl=10)
    assert leases.read(mem_store, K)[0] is None


def test_garbage_lease_object_is_overwritten_by_cas_and_logged(mem_store):
    mem_store.put(K, b"\x00not json{", "overwrite")
    events = []
    rec = leases.acquire(mem_store, K, holder="a", ttl=10, log=lambda ev, **f: events.append(ev))
    assert rec["holder"] == "a" and rec["epoch"] == 1 and "lease_garbage" in events
    assert json.loads(mem_store.get(K).data)["holder"] == "a"


def test_garbage_overwrite_is_compare_and_swap_against_that_exact_version(store_clock):
    def rival(store):  # someone repairs the garbage first
        MemoryStore.put(store, K, json.dumps(leases.decide_acquire(None, holder="b", session_id=None, reason="fix",
                                                                 now=store_clock(), ttl=300, resource="k")).encode())

    store = RacingStore(store_clock, rival)
    MemoryStore.put(store, K, b"garbage")
    with pytest.raises(leases.Refused):
        leases.acquire(store, K, holder="a", ttl=10)
    assert store.puts[0] != "create" and store.puts[0][0] == "update"


def test_claim_is_all_or_nothing_and_keeps_renewals(mem_store):
    res = [{"repo": "r", "path": "a.py"}, {"repo": "r", "path": "b.py"}, {"repo": "r", "path": "c.py"}]
    leases.hold(mem_store, "f", [res[0]], holder="me", reason="first", ttl=100)
    leases.hold(mem_store, "f", [res[2]], holder="other", reason="theirs", ttl=100)
    with pytest.raises(leases.Refused) as exc:
        leases.hold(mem_store, "f", res, holder="me", reason="all three", ttl=100)
    assert exc.value.holder == "other"
    state = {r["path"]: leases.read(mem_store, leases.lease_key("f", leases.resource_key("r", r["path"])))[0] for r in res}
    assert state["a.py"]["holder"] == "me"          # held before this call: kept
    assert state["b.py"]["holder"] is None          # taken by this call: rolled back
    assert state["c.py"]["holder"] == "other"


def test_claim_under_another_agents_directory_lease_is_refused(mem_store):
    leases.hold(mem_store, "f", [{"repo": "r", "path": "src/"}], holder="other", reason="restructure", ttl=100)
    view, now = leases.list_leases(mem_store, "f")
    with pytest.raises(leases.Refused) as exc:
        leases.hold(mem_store, "f", [{"repo": "r", "path": "src/x.py"}], holder="me", ttl=100, view=view, view_time=now)
    assert exc.value.holder == "other" and "restructure" in str(exc.value)


def test_list_leases_uses_conditional_reads_and_skips_garbage(mem_store):
    leases.hold(mem_store, "f", [{"repo": "r", "path": "a.py"}], holder="me", ttl=100)
    mem_store.put(leases.lease_key("f", "garbage"), b"[]")
    cache = {}
    first, _ = leases.list_leases(mem_store, "f", cache=cache)
    seen = []
    orig = mem_store.get
    mem_store.get = lambda key, if_none_match=None: seen.append(if_none_match) or orig(key, if_none_match)
    second, _ = leases.list_leases(mem_store, "f", cache=cache)
    assert [r["path"] for r in first] == [r["path"] for r in second] == ["a.py"]
    assert any(tag for tag in seen)  # the readable lease was read with If-None-Match


def test_store_errors_propagate_from_release(mem_store):
    leases.acquire(mem_store, K, holder="a", ttl=10)
    mem_store.fail_next = [Unavailable("down", K)]
    with pytest.raises(Unavailable):
        leases.release(mem_store, K, holder="a")
    assert leases.read(mem_store, K)[0]["holder"] == "a"


def test_412_storm_gives_up_with_a_clear_error(mem_store):
    def always_lose(key, data, mode="overwrite"):
        raise PreconditionFailed("412", key)

    mem_store.put = always_lose
    with pytest.raises(RuntimeError, match="lost 3 compare-and-swap races"):
        leases.acquire(mem_store, K, holder="a", ttl=10, attempts=3)
