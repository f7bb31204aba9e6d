#!/usr/bin/env python3
"""Benchmark: maint over N sealed sessions (docs/design.md §12: 1,000 sessions ≤ 60 s, ≤ 1 GiB RSS)
on file:// or on a real S3 server (SeaweedFS), and the cost of one MERGE pass as the Delta table
grows (docs/lake.md). Builds the lake through the real path (spool → syncd shipping) — or copies
the bronze of a lake built earlier (``--lake DIR``: building 1,000 sessions takes minutes on a
busy machine) — then times one ``maint.py --once`` in a child process and reads its peak RSS,
and reports the Delta table's size against the bronze and against the old ``gen=<hash>``
layout when the copied lake has one.

    python bench/maint_scale.py [--sessions 1000] [--events 40] [--lake DIR] [--store file|seaweedfs]
    python bench/maint_scale.py --merge-cost [--with-1m] [--batch-sessions 50]
"""
from __future__ import annotations

import argparse
import json
import os
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


def run_child(argv: list[str], env: dict) -> dict:
    """Run ``argv`` (from the repository root) to completion; ``{"wall_s", "rss_mib", "rc",
    "stdout", "stderr"}`` with the peak RSS of that process alone (``os.wait4``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"wall_s": wall, "rss_mib": usage.ru_maxrss / 1024, "rc": proc.returncode,
                "stdout": out.read().decode(errors="replace"), "stderr": err.read().decode(errors="replace")}


def seed_table(rows: int, chunk: int = 100_000) -> None:
    """Grow the fleet's Delta table of ``$CTXLAKE_STORE`` to ``rows`` rows over the 30 UTC days
    ending today, ``chunk`` rows per commit (a table grown by many passes has many files). Rows
    are the real Claude Code events of tests/fixtures/legacy-lake re-keyed (new event and session
    ids, also inside ``envelope_json``); their text repeats every 121 rows, so the table is
    smaller on disk than as many distinct events would be — the cost measured is per row."""
    import datetime
    import glob

    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import WriterProperties, write_deltalake

    from lib import lake
    from lib.store import open_store

    segs = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "legacy-lake", "sessions", "**", "seg-*.parquet"),
                            recursive=True))
    base = pa.concat_tables([pq.read_table(f) for f in segs], promote_options="default")
    base_eid, base_sid = base.column("event_id").to_pylist(), base.column("session_id").to_pylist()
    base_json = base.column("envelope_json").to_pylist()
    today = datetime.datetime.now(datetime.UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    store = open_store(os.environ["CTXLAKE_STORE"])
    for n, start in enumerate(range(0, rows, chunk)):
        size = min(chunk, rows - start)
        idx = [(start + x) % base.num_rows for x in range(size)]
        t = base.take(pa.array(idx))
        eids = [f"seed-{start + x:09d}" for x in range(size)]
        sids = [f"seed-{(start + x) // 40:07d}" for x in range(size)]
        raw = [base_json[i].replace(base_eid[i], e).replace(base_sid[i], sd) for i, e, sd in zip(idx, eids, sids)]
        days = [today - datetime.timedelta(days=((start + x) // 40) % 30) for x in range(size)]
        for name, values, typ in (("event_id", eids, pa.string()), ("session_id", sids, pa.string()),
                                  ("envelope_json", raw, pa.string()), ("emitted_at", days, pa.timestamp("ms", tz="UTC"))):
            t = t.set_column(t.schema.get_field_index(name), name, pa.array(values, type=typ))
        if n == 0:  # txn epoch 0: the timed maint pass holds epoch 1 or more, so it is not "already done"
            lake.commit(store, "bench", lake.table_rows(t), epoch=0, pass_id="0-seed")
        else:  # plain appends: quicker than a MERGE per chunk, and every key is new anyway
            uri, opts = lake.location(store, "bench")
            write_deltalake(uri, lake.table_rows(t), mode="append", storage_options=opts,
                            writer_properties=WriterProperties(compression="ZSTD"))  # as lake.commit writes


def merge_cost(sizes: list[int], sessions: int, events: int) -> list[dict]:
    """For each table size: seed the table (``--seed-table`` child), spool ``sessions`` new sealed
    sessions and ship them (``syncd.py --once``), then time one ``maint.py --once`` — the pass
    MERGEs them into today's partition, which the seeded table shares — and print its wall
    time and peak RSS against the budgets (docs/design.md §12) and against the same pass into
    an empty table (the baseline, run first and last: the machine's drift shows between them)."""
    results = []
    for n, size in enumerate([0, 0] + sizes + [0]):  # the first pass warms the page cache: not counted
        home = tempfile.mkdtemp(prefix="ctxlake-bench-merge-")
        env = _env(home)
        env["CTXLAKE_STORE"] = "file://" + os.path.join(home, "lake")
        seed = {"wall_s": 0.0}
        if size:
            seed = run_child([sys.executable, "bench/maint_scale.py", "--seed-table", str(size)], env)
            if seed["rc"]:
                raise SystemExit(f"seeding a {size}-row table failed: {seed['stderr'][-2000:]}")
        build_spool(home, sessions, events, prefix="new-")
        run_child([sys.executable, "syncd.py", "--once", "--json"], env)
        maint = run_child([sys.executable, "maint.py", "--once", "--json"], env)
        summary = json.loads(maint["stdout"].splitlines()[-1])
        if summary.get("compacted") != 1:
            raise SystemExit(f"the timed pass did not commit: {summary}")
        if n == 0:
            print(f"warm-up pass (not counted): {maint['wall_s']:.1f}s", flush=True)
            continue
        fig = summary.get("lake") or {}
        row = {"table_rows": size, "merged_rows": summary["rows_out"], "wall_s": maint["wall_s"],
               "rss_mib": maint["rss_mib"], "table_mib": fig.get("bytes", 0) / 1048576, "files": fig.get("files"),
               "seed_s": seed["wall_s"]}
        results.append(row)
        base = [r for r in results if r["table_rows"] == 0]
        ratio = row["wall_s"] / (sum(r["wall_s"] for r in base) / len(base))
        print(f"table of {size:>9,} rows: maint --once merging {row['merged_rows']} new rows ({sessions} sessions): "
              f"{row['wall_s']:6.1f}s ({ratio:.2f}× the empty-table pass, {row['wall_s'] / 60:.2f}× the 60 s budget), "
              f"peak RSS {row['rss_mib']:5.0f} MiB ({row['rss_mib'] / 1024:.2f}× the 1 GiB budget); after it the table "
              f"is {row['table_mib']:.1f} MiB in {row['files']} files (seeded in {row['seed_s']:.0f}s)", flush=True)
    return results


BEFORE: dict = {}


def before_pass(code_dir: str, lake_dir: str) -> None:
    """Time the old code's ``maint.py --once`` (``code_dir``, the ``gen=<hash>`` layout) on a copy
    of the bronze in ``lake_dir``; its lake stays in ``BEFORE["home"]`` for :func:`migrate_pass`."""
    import shutil

    home = tempfile.mkdtemp(prefix="ctxlake-bench-before-")
    shutil.copytree(os.path.join(lake_dir, "sessions"), os.path.join(home, "lake", "sessions"))
    env = _env(home)
    env["PYTHONPATH"] = code_dir
    r = run_child([sys.executable, os.path.join(code_dir, "maint.py"), "--once", "--json"], env)
    summary = json.loads(r["stdout"].splitlines()[-1])
    BEFORE.update(home=home, wall_s=r["wall_s"], rss_mib=r["rss_mib"])
    print(f"before (gen=<hash> layout): maint --once {r['wall_s']:.1f}s for {summary['sessions']} sessions "
          f"({summary['rows_out']} rows), peak RSS {r['rss_mib']:.0f} MiB — {r['wall_s'] / 60:.2f}× the 60 s budget")


def migrate_pass(old_home: str) -> None:
    """Time today's ``maint.py --once`` on a copy of the old code's lake: the one-time migration of
    the ``gen=<hash>`` layout (docs/lake.md) plus the first MERGE."""
    import shutil

    home = tempfile.mkdtemp(prefix="ctxlake-bench-migrate-")
    shutil.copytree(os.path.join(old_home, "lake"), os.path.join(home, "lake"))
    r = run_child([sys.executable, "maint.py", "--once", "--json"], _env(home))
    summary = json.loads(r["stdout"].splitlines()[-1])
    print(f"migration of that gen=<hash> lake: maint --once {r['wall_s']:.1f}s ({summary.get('migrated')} old objects "
          f"deleted), peak RSS {r['rss_mib']:.0f} MiB — {r['wall_s'] / 60:.2f}× the 60 s budget; then the store holds "
          f"{_tree_bytes(home, 'lake/compacted') / 1048576:.2f} MiB under compacted/")


def _env(home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_FLEET_ID="bench", CTXLAKE_AGENT_ID="bench",
               CTXLAKE_CONFIG=os.path.join(home, "none.toml"), PYTHONPATH=ROOT)
    return env


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--events", type=int, default=40)
    p.add_argument("--lake", help="copy the bronze of this lake folder instead of spooling and shipping")
    p.add_argument("--store", choices=("file", "seaweedfs"), default="file")
    p.add_argument("--before", metavar="DIR", help="a checkout of the code before the Delta table (git archive "
                   "2f197d2): its maint runs on a copy of the same bronze first (file:// only), then the "
                   "migration of its gen=<hash> layout is timed too")
    p.add_argument("--merge-cost", action="store_true",
                   help="time a maintenance pass MERGEing --batch-sessions new sessions into tables of 10k and 100k rows")
    p.add_argument("--with-1m", action="store_true", help="with --merge-cost: also a 1,000,000-row table (minutes)")
    p.add_argument("--batch-sessions", type=int, default=50, help="new sessions of the timed pass (--merge-cost)")
    p.add_argument("--seed-table", type=int, help=argparse.SUPPRESS)  # child of --merge-cost
    args = p.parse_args()
    if args.seed_table is not None:
        seed_table(args.seed_table)
        return 0
    if args.merge_cost:
        merge_cost([10_000, 100_000] + ([1_000_000] if args.with_1m else []), args.batch_sessions, args.events)
        return 0
    home = tempfile.mkdtemp(prefix="ctxlake-bench-maint-")
    env = _env(home)
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
            r = run_child([sys.executable, "syncd.py", "--once", "--json"], env)
            ship = json.loads(r["stdout"])
            print(f"syncd --once shipped {ship['shipped']} in {ship['segments']} segments, sealed {ship['sealed']}: "
                  f"{r['wall_s']:.1f}s")
        if args.before and args.store == "file":
            before_pass(args.before, os.path.join(home, "lake"))
        r = run_child([sys.executable, "maint.py", "--once", "--json"], env)
        wall, rss_mib = r["wall_s"], r["rss_mib"]
        summary = json.loads(r["stdout"].splitlines()[-1])
        print(f"maint --once on {args.store}: {wall:.1f}s for {summary['sessions']} sessions "
              f"({summary['rows_out']} rows compacted, {summary['digested']} digests"
              + (f", {summary['migrated']} old-layout objects migrated" if summary.get("migrated") else "") + ") "
              f"— {wall / 60:.2f}× the 60 s budget: {'PASS' if wall <= 60 else 'OVER'}")
        print(f"maint peak RSS: {rss_mib:.0f} MiB (that process alone) — {rss_mib / 1024:.2f}× the 1024 MiB budget: "
              f"{'PASS' if rss_mib <= 1024 else 'OVER'}")
        if BEFORE:
            print(f"after/before: {wall / BEFORE['wall_s']:.2f}× the wall time, {rss_mib / BEFORE['rss_mib']:.2f}× the "
                  "peak RSS of the gen=<hash> pass on the same bronze")
        lake_fig = summary.get("lake") or {}
        if lake_fig:
            print(f"Delta table: {lake_fig['bytes'] / 1048576:.2f} MiB in {lake_fig['files']} data file(s) + "
                  f"{lake_fig['state_bytes'] / 1024:.0f} KiB log and ledger")
        if args.before and args.store == "file":
            print(f"sizes — Delta table: {_tree_bytes(home, 'lake/compacted') / 1048576:.2f} MiB (log and ledger "
                  f"included); old gen=<hash> layout of the same bronze: "
                  f"{_tree_bytes(BEFORE['home'], 'lake/compacted') / 1048576:.2f} MiB; bronze: "
                  f"{_tree_bytes(home, 'lake/sessions') / 1048576:.2f} MiB")
            migrate_pass(BEFORE["home"])
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
