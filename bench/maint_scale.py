#!/usr/bin/env python3
"""Benchmark: maint over N sealed sessions (docs/design.md §12: 1,000 sessions ≤ 60 s, ≤ 1 GiB RSS)
on file:// or on a real S3 server (SeaweedFS), and the cost of one MERGE pass as the Delta table
grows (docs/lake.md). Builds the lake through the real path (spool → syncd shipping) — or copies
the bronze of a lake built earlier (``--lake DIR``: building 1,000 sessions takes minutes on a
busy machine) — then times one ``maint.py --once`` in a child process and reads its peak RSS,
and reports the Delta table's size against the bronze and against the old ``gen=<hash>``
layout when the copied lake has one.

    python bench/maint_scale.py [--sessions 1000] [--events 40] [--lake DIR] [--store file|seaweedfs]
    python bench/maint_scale.py --merge-cost 10000,100000 [--batch 10000]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def build_spool(home: str, sessions: int, events: int, prefix: str = "bench-") -> int:
    """Spool ``sessions`` ended sessions of ``events`` envelopes each (ids ``<prefix>NNNNN``);
    returns envelopes written."""
    os.environ["CTXLAKE_HOME"] = home
    from lib import envelope, spool
    from lib.paths import Paths

    paths = Paths.from_env()
    n = 0
    for s in range(sessions):
        sid = f"{prefix}{s:05d}"
        b = envelope.Builder(fleet_id="bench", agent_id=f"agent-{s % 20}", runtime="claude_code", session_id=sid)
        lines = [b.make("session_start", cwd="/srv/example-repo")]
        lines.append(b.make("prompt", role="user", content=f"task {s}: fix the flaky test in module {s % 37}"))
        for i in range(events - 3):
            lines.append(b.make("tool_call", message_id=f"toolu_{s}_{i}", tool={
                "name": "Bash", "input": {"command": f"pytest tests/test_{i % 9}.py -x"},
                "result": "." * 200 + f" {i} passed", "exit_code": int(i % 11 == 0), "paths": [f"src/mod_{i % 13}.py"]}))
        lines.append(b.make("session_end"))
        target = paths.session_spool("claude_code", sid)
        for e in lines:
            spool.append(target, envelope.dumps(e))
        spool.atomic_write(paths.session_done("claude_code", sid), b"{}")
        n += len(lines)
    return n


def _tree_bytes(root: str, sub: str, skip_gen: bool = False) -> int:
    """Bytes of the files under ``root/sub`` (``skip_gen``: the Delta table's files only)."""
    total = 0
    for d, dirs, files in os.walk(os.path.join(root, sub)):
        if skip_gen:
            dirs[:] = [x for x in dirs if not x.startswith("gen=")]
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files if not (skip_gen and f == "_CURRENT"))
    return total


def _copy_bronze(src_lake: str, store) -> tuple[int, int]:
    """Upload ``sessions/`` (and an old ``compacted/`` layout) of a lake folder into ``store``;
    returns (objects, bytes)."""
    n = size = 0
    for sub in ("sessions", "compacted"):
        for d, _, files in os.walk(os.path.join(src_lake, sub)):
            for f in files:
                path = os.path.join(d, f)
                with open(path, "rb") as fh:
                    data = fh.read()
                store.put(os.path.relpath(path, src_lake).replace(os.sep, "/"), data)
                n, size = n + 1, size + len(data)
    return n, size


def merge_cost(sizes: list[int], batch: int) -> None:
    """Time one maintenance commit of ``batch`` new rows (one day) into tables of each size (rows
    spread over 30 days), in this process. Rows are a real segment's envelopes re-keyed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from lib import envelope, lake
    from lib.store import open_store

    b = envelope.Builder(fleet_id="bench", agent_id="agent-0", runtime="claude_code", session_id="seed")
    seed = [b.make("tool_call", message_id=f"toolu_{i}", tool={"name": "Bash", "input": {"command": f"pytest t{i}.py"},
                                                               "result": "." * 200, "exit_code": 0, "paths": ["src/a.py"]})
            for i in range(1000)]
    base = lake.to_table(seed)

    def rows(n: int, tag: str, days: int):
        reps = -(-n // base.num_rows)
        t = pa.concat_tables([base] * reps).slice(0, n)
        i = pa.array([str(x) for x in range(n)])
        t = t.set_column(t.schema.get_field_index("event_id"), "event_id", pc.binary_join_element_wise(t.column("event_id"), i, tag))
        t = t.set_column(t.schema.get_field_index("session_id"), "session_id",
                         pc.binary_join_element_wise(pa.array([f"s{x // 40}" for x in range(n)]), pa.array([tag] * n), "-"))
        day = pa.array([f"2026-11-{1 + (x * days // n):02d}T12:00:00.000Z" for x in range(n)]).cast(pa.timestamp("ms", tz="UTC"))
        return lake.table_rows(t.set_column(t.schema.get_field_index("emitted_at"), "emitted_at", day))

    for size in sizes:
        home = tempfile.mkdtemp(prefix="ctxlake-bench-merge-")
        store = open_store("file://" + home)
        lake.commit(store, "bench", rows(size, "old", 30), epoch=1, pass_id="1-seed")
        new = rows(batch, "new", 1)
        t0 = time.perf_counter()
        res = lake.commit(store, "bench", new, epoch=2, pass_id="2-bench")
        dt = time.perf_counter() - t0
        print(f"MERGE of {batch} new rows into a {size:,}-row table (30 days): {dt:.2f}s "
              f"(inserted {res['inserted']}, table {_tree_bytes(home, 'compacted', True) / 1048576:.1f} MiB)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--events", type=int, default=40)
    p.add_argument("--lake", help="copy the bronze of this lake folder instead of spooling and shipping")
    p.add_argument("--store", choices=("file", "seaweedfs"), default="file")
    p.add_argument("--merge-cost", help="comma-separated table sizes (rows) to time one MERGE pass against")
    p.add_argument("--batch", type=int, default=10000, help="rows of the timed MERGE pass (--merge-cost)")
    args = p.parse_args()
    if args.merge_cost:
        merge_cost([int(x) for x in args.merge_cost.split(",")], args.batch)
        return 0
    home = tempfile.mkdtemp(prefix="ctxlake-bench-maint-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_FLEET_ID="bench", CTXLAKE_AGENT_ID="bench",
               CTXLAKE_CONFIG=os.path.join(home, "none.toml"))
    server = None
    if args.store == "seaweedfs":
        from tests.support.s3server import start_seaweed

        server = start_seaweed()
        env.update(server.env(), CTXLAKE_STORE=server.url("bench"))
    try:
        t0 = time.perf_counter()
        if args.lake:
            from lib.store import open_store

            os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
            n, size = _copy_bronze(args.lake, open_store(env.get("CTXLAKE_STORE") or "file://" + os.path.join(home, "lake")))
            print(f"copied {n} objects ({size / 1048576:.1f} MiB) of {args.lake}: {time.perf_counter() - t0:.1f}s")
        else:
            n = build_spool(home, args.sessions, args.events)
            t1 = time.perf_counter()
            print(f"spooled {n} envelopes in {args.sessions} sessions: {t1 - t0:.1f}s")
            r = subprocess.run([sys.executable, "syncd.py", "--once", "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
            ship = json.loads(r.stdout)
            print(f"syncd --once shipped {ship['shipped']} in {ship['segments']} segments, sealed {ship['sealed']}: "
                  f"{time.perf_counter() - t1:.1f}s")
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t3 = time.perf_counter()
        r = subprocess.run([sys.executable, "maint.py", "--once", "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
        t4 = time.perf_counter()
        rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        summary = json.loads(r.stdout)
        print(f"maint --once on {args.store}: {t4 - t3:.1f}s for {summary['sessions']} sessions "
              f"({summary['rows_out']} rows compacted, {summary['digested']} digests"
              + (f", {summary['migrated']} old-layout objects migrated" if summary.get("migrated") else "") + ") "
              f"— {(t4 - t3) / 60:.2f}× the 60 s budget: {'PASS' if t4 - t3 <= 60 else 'OVER'}")
        print(f"maint peak RSS: {rss_mib:.0f} MiB (children high-water mark; before it: {before / 1024:.0f} MiB)"
              f" — {rss_mib / 1024:.2f}× the 1024 MiB budget: {'PASS' if rss_mib <= 1024 else 'OVER'}")
        lake_fig = summary.get("lake") or {}
        if lake_fig:
            print(f"Delta table: {lake_fig['bytes'] / 1048576:.2f} MiB in {lake_fig['files']} data file(s) + "
                  f"{lake_fig['state_bytes'] / 1024:.0f} KiB log and ledger")
        if args.lake and args.store == "file":
            old = _tree_bytes(args.lake, "compacted")
            print(f"old gen=<hash> layout of the same data: {old / 1048576:.2f} MiB; bronze: "
                  f"{_tree_bytes(args.lake, 'sessions') / 1048576:.1f} MiB")
    finally:
        if server:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
