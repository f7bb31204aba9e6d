"""Lease contention, the simulation and its checker: many agents fight for a few keys; an
independent checker proves safety (run by ``tests/live/test_contention.py`` for 10 s and by
``bench/lease_contention.py`` for 60 s).

Each simulated agent is a thread with its own store client (its own ``FileStore`` instance or
its own boto3 session and connection pool) running the exact code syncd, maint and
``ctxlake lease`` run (:func:`lib.live.leases.acquire_fresh`, :func:`lib.live.leases.renew`,
:func:`lib.live.leases.release_record`). It picks at random: acquire a random key, renew a key it holds,
release it, or *crash* — drop everything it holds without releasing and stay silent for up to a
TTL, so its leases expire by the store clock and are taken over.

Evidence, gathered independently of the agents' beliefs:

- every successful write (acquire, renew, release) is logged with the record written — its
  ``updated_at`` is the store time the decision was made at — and the moment the call returned;
- every refusal is logged with the record it named, the store time of that read and the moment
  the acquire call began;
- a checker thread per key reads the lease object continuously (its own client) and logs
  every version it sees.

:func:`verify` then proves, per key: each epoch has exactly one holder; holding intervals —
``[acquired_at, released_at or last expires_at)`` per epoch, in store time — never overlap, so
there was never more than one unexpired holder at any instant; every version the checker saw
is one the log has; every refusal named the holder of a version that was live at the refusal's
store time and had not been superseded by another holder's write before the refusal began.
Any failure is listed in ``violations``.

Numbers printed per backend: attempts (acquire calls), grants, refusals, 412s (lost races,
retried inside the CAS loop), renewals, releases, crashes, lost renewals, acquisition latency
p50/p95/p99 (successful acquire calls, wall clock, retries included). docs/design.md §12 budget:
exactly one holder at every instant and every loser told the holder (zero violations).
"""
from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

from lib.live import leases


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def simulate(make_store, *, agents: int = 50, keys: int = 5, seconds: float = 10.0, ttl: float = 3.0,
             seed: int = 1, fleet: str = "contention", pause: float = 0.02) -> dict:
    """Run the fight for ``seconds`` and return the evidence and counters.

    :param make_store: builds one store client (called once per agent and once per checker).
    :param ttl: lease TTL in store-clock seconds; agents renew at ``ttl/5``-ish random moments.
    :returns: ``{"writes": [(kind, key, record, landed)], "refusals": [(key, record, now, started)],
        "observations": [(key, record|None, server_time)], "stats": {...}, "keys": [...]}`` where
        ``now``/``server_time`` are store times and ``landed``/``started`` this host's wall clock
        when a write call returned / an acquire call began.
    """
    from lib.store import NotFound

    key_names = [leases.lease_key(fleet, leases.resource_key("bench/repo", f"file-{i}.py")) for i in range(keys)]
    clients = [make_store() for _ in range(agents)]
    checkers = [make_store() for _ in range(keys)]
    lock = threading.Lock()
    writes, refusals, observations = [], [], []
    latencies: list[float] = []
    stats = defaultdict(int)
    stop = threading.Event()
    errors: list[str] = []
    unsafe: list[str] = []

    def count(name, n=1):
        with lock:
            stats[name] += n

    def race_log(event, **fields):
        if event == "lease_race_lost":
            count("412s")
        elif event == "lease_garbage":
            count("garbage")

    def agent(i: int):
        rnd = random.Random(seed * 1000 + i)
        store, me = clients[i], f"agent-{i:02d}"
        holding: dict = {}
        try:
            while not stop.is_set():
                if holding and rnd.random() < 0.6:
                    k = rnd.choice(sorted(holding))
                    r = rnd.random()
                    if r < 0.6:
                        try:
                            rec = leases.renew(store, k, holder=me, ttl=ttl, log=race_log)
                            with lock:
                                writes.append(("renew", k, rec, time.time()))
                            count("renewals")
                        except leases.Lost:
                            holding.pop(k, None)
                            count("lost")
                    elif r < 0.9:
                        rec = leases.release_record(store, k, holder=me, log=race_log)
                        holding.pop(k, None)
                        if rec is not None:
                            with lock:
                                writes.append(("release", k, rec, time.time()))
                            count("releases")
                    else:
                        holding.clear()  # crash: nothing released; silent for up to a TTL
                        count("crashes")
                        stop.wait(rnd.uniform(0, ttl))
                else:
                    k = rnd.choice(key_names)
                    count("attempts")
                    t0, started = time.perf_counter(), time.time()
                    try:
                        rec, fresh = leases.acquire_fresh(store, k, holder=me, session_id=f"s-{i}", reason=f"work {i}",
                                                        ttl=ttl, resource=k, repo="bench/repo", log=race_log)
                    except leases.Refused as exc:
                        with lock:
                            refusals.append((k, exc.record, exc.now, started))
                        count("refusals")
                    except leases.Unsafe as exc:  # the store ignores conditional writes: nothing is granted
                        with lock:
                            unsafe.append(exc.reason)
                        count("unsafe_refusals")
                    else:
                        with lock:
                            latencies.append(time.perf_counter() - t0)
                            writes.append(("acquire" if fresh else "renew", k, rec, time.time()))
                        count("grants" if fresh else "renewals")
                        holding[k] = True
                stop.wait(rnd.uniform(0, pause))
        except Exception as exc:  # an agent dying is reported, never hidden
            with lock:
                errors.append(f"{me}: {type(exc).__name__}: {exc}")

    def checker(j: int):
        store, k = checkers[j], key_names[j]
        while not stop.is_set():
            try:
                obj = store.get(k)
                rec = leases._load(obj)
                with lock:
                    observations.append((k, rec, obj.server_time))
            except NotFound:
                pass
            except Exception as exc:
                with lock:
                    errors.append(f"checker {j}: {type(exc).__name__}: {exc}")
                return

    threads = [threading.Thread(target=agent, args=(i,), daemon=True) for i in range(agents)]
    threads += [threading.Thread(target=checker, args=(j,), daemon=True) for j in range(keys)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    stats["elapsed_s"] = round(time.perf_counter() - started, 1)
    stats["observations"] = len(observations)
    lat_ms = [x * 1000 for x in latencies]
    stats.update(latency_ms_p50=_pct(lat_ms, 0.50), latency_ms_p95=_pct(lat_ms, 0.95), latency_ms_p99=_pct(lat_ms, 0.99))
    return {"writes": writes, "refusals": refusals, "observations": observations, "stats": dict(stats),
            "keys": key_names, "errors": errors, "unsafe": unsafe}



def _sig(rec: dict) -> tuple:
    return (rec.get("epoch"), rec.get("holder"), rec.get("expires_at"), rec.get("updated_at"))


_RANK = {"acquire": 0, "renew": 1, "release": 2}


def verify(run: dict) -> dict:
    """Check the evidence of :func:`simulate` (see the module docstring).

    Holding intervals and liveness use the store times the records carry. Staleness of a
    refusal uses local wall-clock brackets only: each write is logged with the moment its call
    returned (after which any read must see it or a later version), each refusal with the
    moment its acquire call began. A refusal is wrong if it named anyone but the holder of the
    version it read, if that version was not live at the refusal's store time, or if a version
    with another holder (a release or a takeover) had already landed before the refusal's call
    began — the store would then have served a stale version.

    :returns: ``{"violations": [str], "epochs": n, "checked_refusals": n, "checked_observations": n}``.
    """
    violations: list[str] = []
    by_key: dict = defaultdict(lambda: defaultdict(list))
    logged = defaultdict(set)
    chains: dict = defaultdict(list)
    for kind, key, rec, landed in run["writes"]:
        by_key[key][rec["epoch"]].append((kind, rec))
        logged[key].add(_sig(rec))
        chains[key].append((rec["epoch"], _RANK[kind], rec["updated_at"], kind, rec, landed))
    intervals: dict = {}
    for key, epochs in by_key.items():
        spans = []
        for e, recs in epochs.items():
            held = [r for kind, r in recs if kind != "release"]
            released = [r for kind, r in recs if kind == "release"]
            holders = {r["holder"] for r in held}
            if len(holders) != 1:
                violations.append(f"{key[-12:]}: epoch {e} written by {len(holders)} holders {sorted(map(str, holders))}")
                continue
            starts = {r["acquired_at"] for r in held}
            if len(starts) != 1:
                violations.append(f"{key[-12:]}: epoch {e} has several acquisition times {sorted(starts)}")
            start = min(starts)
            if released:
                end = min(r["released_at"] for r in released)
                if any(r["updated_at"] > end for r in held):
                    violations.append(f"{key[-12:]}: epoch {e} renewed after its release")
            else:
                end = max(r["expires_at"] for r in held)
            spans.append((start, end, e, holders.pop()))
        spans.sort(key=lambda s: (s[0], s[2]))
        for a, b in zip(spans, spans[1:]):
            if b[2] <= a[2]:
                violations.append(f"{key[-12:]}: epoch {b[2]} acquired after epoch {a[2]} (epochs must increase)")
            if b[0] < a[1]:
                violations.append(f"{key[-12:]}: two unexpired holders: {a[3]} (epoch {a[2]}, until {a[1]:.3f}) "
                                  f"and {b[3]} (epoch {b[2]}, from {b[0]:.3f})")
        intervals[key] = spans
        chains[key].sort(key=lambda c: c[:3])
    positions = {key: {_sig(c[4]): i for i, c in enumerate(chain)} for key, chain in chains.items()}
    # for each chain position: the earliest landing of a later write by a different holder
    first_other: dict = {}
    for key, chain in chains.items():
        out, best = [None] * len(chain), {}
        for i in range(len(chain) - 1, -1, -1):
            h = chain[i][4].get("holder")
            out[i] = {k: v for k, v in best.items() if k != h}
            cur = best.get(h)
            if cur is None or chain[i][5] < cur[5]:
                best = dict(best)
                best[h] = chain[i]
        first_other[key] = out
    for key, rec, t in run["observations"]:
        if rec is not None and _sig(rec) not in logged[key]:
            violations.append(f"{key[-12:]}: checker saw a version nobody logged: epoch {rec.get('epoch')} "
                              f"holder {rec.get('holder')} at {t}")
    for key, rec, t, started in run["refusals"]:
        spans = {s[2]: s for s in intervals.get(key, [])}
        s = spans.get(rec.get("epoch"))
        if s is None or s[3] != rec.get("holder") or _sig(rec) not in logged[key]:
            violations.append(f"{key[-12:]}: refusal at {t} named {rec.get('holder')} (epoch {rec.get('epoch')}), "
                              f"not a version the log has")
            continue
        if not (s[0] <= t < float(rec["expires_at"])):
            violations.append(f"{key[-12:]}: refusal at {t} named {rec.get('holder')} whose lease was not live then")
        later = [c for c in first_other[key][positions[key][_sig(rec)]].values() if c[5] < started]
        if later:
            violations.append(f"{key[-12:]}: refusal named {rec.get('holder')} but a {later[0][3]} by "
                              f"{later[0][4].get('holder')} had landed before the refusal's call began")
    violations += [f"error: {e}" for e in run.get("errors", [])]
    return {"violations": violations, "epochs": sum(len(v) for v in intervals.values()),
            "checked_refusals": len(run["refusals"]), "checked_observations": len(run["observations"])}


def run_backend(name: str, make_store, *, agents: int, keys: int, seconds: float, ttl: float, seed: int) -> dict:
    """:func:`simulate` then :func:`verify`; returns the counters, the check and the backend name."""
    result = simulate(make_store, agents=agents, keys=keys, seconds=seconds, ttl=ttl, seed=seed)
    check = verify(result)
    return {"backend": name, **result["stats"], "epochs": check["epochs"], "violations": check["violations"],
            "checked_refusals": check["checked_refusals"], "double_holders": double_holders(check)}


def double_holders(check: dict) -> int:
    """How many of :func:`verify`'s violations are two holders at once (overlapping unexpired
    holding intervals, or one epoch written by two holders)."""
    return sum("two unexpired holders" in v or "written by" in v for v in check["violations"])
