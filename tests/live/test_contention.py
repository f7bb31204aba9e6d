"""Contention proof, short version (~10 s per backend; the 60 s run is
``bench/lease_contention.py``): 50 agents, each with its own store client, fight for 5 keys with
random acquire/renew/release/crash; an independent checker proves there was never more than one
unexpired holder per key and every refusal named the real holder (docs/design.md §9, §12)."""
from __future__ import annotations

import pytest

from tests.support import lease_contention as bench
from lib.store import open_store


def _prove(make_store):
    run = bench.simulate(make_store, agents=50, keys=5, seconds=10, ttl=2.0, seed=7)
    check = bench.verify(run)
    assert check["violations"] == [], check["violations"][:10]
    assert bench.double_holders(check) == 0
    s = run["stats"]
    # the run really exercised every transition: takeovers after crashes, refusals, lost races
    assert s["grants"] > 5 and s["refusals"] > 50 and s["releases"] > 0 and s["renewals"] > 0
    assert s.get("crashes", 0) > 0 and check["epochs"] == s["grants"]
    assert check["checked_observations"] > 0


def test_fifty_agents_on_file_store_never_overlap(tmp_path):
    url = "file://" + str(tmp_path / "lake")
    _prove(lambda: open_store(url))


@pytest.mark.s3
def test_fifty_agents_on_seaweedfs_never_overlap(s3_url):
    _prove(lambda: open_store(s3_url, log=lambda *a, **k: None))


@pytest.mark.s3
def test_fifty_agents_through_a_header_stripping_proxy_are_granted_nothing(stripping_proxy):
    """Where the store ignores If-None-Match/If-Match a lease could be granted twice: nothing is
    granted at all, every attempt is refused with the reason, and the checker finds no version."""
    _proxy, url = stripping_proxy
    run = bench.simulate(lambda: open_store(url, log=lambda *a, **k: None), agents=50, keys=5, seconds=3, ttl=2.0, seed=7)
    check = bench.verify(run)
    s = run["stats"]
    assert run["errors"] == [] and check["violations"] == [] and bench.double_holders(check) == 0
    assert s.get("grants", 0) == 0 and s.get("renewals", 0) == 0 and run["writes"] == []
    assert s["unsafe_refusals"] == s["attempts"] > 50 and all("ignored" in r for r in run["unsafe"])
    assert run["observations"] == []


def _rec(holder, epoch, at, ttl=3.0, acquired=None):
    return {"holder": holder, "epoch": epoch, "acquired_at": acquired if acquired is not None else at,
            "expires_at": at + ttl, "updated_at": at}


def test_the_checker_catches_two_holders_a_lost_update_and_a_stale_refusal():
    """The proof is only as good as its checker: feed it evidence of each failure."""
    k = "live/f/leases/k.json"
    a1, b1 = _rec("a", 1, 100.0), _rec("b", 1, 100.5)           # lost update: two holders share epoch 1
    c2 = _rec("c", 2, 101.0)                                      # acquired while a1 was unexpired
    released = dict(c2, holder=None, released_at=101.5, expires_at=101.5, updated_at=101.5)
    run = {"writes": [("acquire", k, a1, 10.0), ("acquire", k, b1, 10.1), ("acquire", k, c2, 11.0),
                      ("release", k, released, 11.5)],
           "refusals": [(k, c2, 101.2, 11.2), (k, c2, 101.9, 12.0), (k, _rec("ghost", 9, 50.0), 51.0, 1.0)],
           "observations": [(k, _rec("nobody-logged", 3, 102.0), 102.0)], "errors": []}
    v = "\n".join(bench.verify(run)["violations"])
    assert "epoch 1 written by 2 holders" in v
    assert "a release by None had landed before the refusal's call began" in v  # c2 named after its release
    assert "named ghost" in v and "checker saw a version nobody logged" in v
    ok = {"writes": [("acquire", k, a1, 10.0), ("acquire", k, dict(c2, acquired_at=103.0, updated_at=103.0,
                                                                   expires_at=106.0), 13.0)],
          "refusals": [(k, a1, 101.0, 11.0)], "observations": [(k, a1, 101.0)], "errors": []}
    assert bench.verify(ok)["violations"] == []
    overlap = {"writes": [("acquire", k, a1, 10.0), ("acquire", k, c2, 11.0)], "refusals": [], "observations": [],
               "errors": []}
    assert "two unexpired holders: a (epoch 1, until 103.000) and c (epoch 2, from 101.000)" in \
        bench.verify(overlap)["violations"][0]


@pytest.mark.redis
def test_fifty_agents_on_the_redis_live_store_never_overlap(redis_url):
    _prove(lambda: open_store(redis_url))
