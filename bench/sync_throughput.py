#!/usr/bin/env python3
"""syncd shipping throughput against docs/design.md §12 (a report, not a test: always exits 0).

Usage::

    python bench/sync_throughput.py [--envelopes 200000] [--sessions 20] [--batch-rows 20000]

Writes ``--envelopes`` realistic envelopes (prompts, tool calls with results, assistant turns)
into the spool of a temporary ``CTXLAKE_HOME``, then, in the same process:

1. **bare pyarrow**: the same rows, already parsed, written the plainest way —
   ``pa.Table.from_pylist`` + ``pq.write_table`` (Zstd), one file per batch, to local disk;
2. **syncd**: :func:`lib.ship.ship_all` — spool lines → validated Parquet segments in a
   ``file://`` store, with its write-ahead watermarks, fsyncs and create-only PUTs.

Budget: syncd ≥ 50,000 envelopes/s and ≥ 0.5× the bare pyarrow rate.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FLEET, AGENT, RUNTIME = "benchfleet", "bench-agent", "claude_code"
MIN_RATE = 50_000
MIN_RATIO = 0.5


def templates(session: str) -> list[dict]:
    """One envelope of each shape, built (and redacted) by the real :class:`lib.envelope.Builder`."""
    from lib.envelope import Builder

    b = Builder(fleet_id=FLEET, agent_id=AGENT, runtime=RUNTIME, session_id=session, runtime_version="2.1.39")
    common = {"cwd": "/home/dev/acme-app", "repo": "github.com/acme/app", "branch": "main", "git_sha": "a" * 40}
    return [
        b.make("prompt", role="user", content="Fix the flaky test in tests/test_api.py and run the suite.", **common),
        b.make("tool_call", message_id="toolu_01", tool={
            "name": "Bash", "input": {"command": "pytest -q tests/test_api.py", "description": "run tests"},
            "result": {"stdout": "....F.\n1 failed, 5 passed in 0.42s", "stderr": "", "interrupted": False},
            "exit_code": 1, "duration_ms": 420, "paths": []}, **common),
        b.make("tool_call", message_id="toolu_02", tool={
            "name": "Edit", "input": {"file_path": "/home/dev/acme-app/tests/test_api.py", "old_string": "sleep(1)",
                                      "new_string": "wait_until(ready)"},
            "paths": ["/home/dev/acme-app/tests/test_api.py"]}, **common),
        b.make("assistant", role="assistant", content="The test waited on a fixed sleep; it now waits on the "
               "readiness probe. All 6 tests pass.", usage={"model": "claude-sonnet", "input_tokens": 1200,
                                                            "output_tokens": 85, "cache_read_tokens": 9000,
                                                            "cache_write_tokens": 0}, **common),
    ]


def write_spool(paths, n: int, sessions: int) -> tuple[list[str], list[dict]]:
    """Spool ``n`` envelopes over ``sessions`` sessions (one write per file); return the spool
    lines and one envelope per shape (for the bare writer's schema)."""
    from lib.clock import format_time
    from lib.envelope import sha256_hex
    from lib.ulid import new_ulid

    lines_all, shapes = [], []
    per = n // sessions
    for s in range(sessions):
        sid = f"bench-{s:03d}"
        tpl = templates(sid)
        if s == 0:
            shapes = tpl
        count = per + (n - per * sessions if s == sessions - 1 else 0)
        lines = []
        for i in range(count):
            e = dict(tpl[i % len(tpl)])
            e["event_id"] = new_ulid()
            e["emitted_at"] = format_time()
            if "content" in e:
                e["content"] = f"{e['content']} (#{i})"
                e["content_hash"] = sha256_hex(e["content"])
            lines.append(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
        path = paths.session_spool(RUNTIME, sid)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("".join(lines))
        lines_all.extend(lines)
    return lines_all, shapes


def bare_pyarrow(rows: list[dict], shapes: list[dict], out_dir: str, batch_rows: int) -> float:
    """Seconds to write ``rows`` with ``from_pylist`` + ``write_table`` (Zstd) in batches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.unify_schemas([pa.Table.from_pylist([s]).schema for s in shapes])
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    for k, start in enumerate(range(0, len(rows), batch_rows)):
        table = pa.Table.from_pylist(rows[start:start + batch_rows], schema=schema)
        pq.write_table(table, os.path.join(out_dir, f"part-{k:06d}.parquet"), compression="zstd")
    return time.perf_counter() - t0


def verdict(ok: bool) -> str:
    """``PASS`` or ``OVER`` (the budget line is exceeded)."""
    return "PASS" if ok else "OVER"


def main(argv=None) -> int:
    """Run the benchmark and print the report; always returns 0."""
    from lib import ship
    from lib.paths import Paths
    from lib.store.file import FileStore

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envelopes", type=int, default=200_000)
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--batch-rows", type=int, default=20_000, help="rows per segment (syncd's default)")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="ctxlake-bench-sync-") as base:
        paths = Paths.from_env({"CTXLAKE_HOME": base})
        t0 = time.perf_counter()
        lines, shapes = write_spool(paths, args.envelopes, args.sessions)
        gen_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        rows = [json.loads(line) for line in lines]
        parse_s = time.perf_counter() - t0
        bare_s = bare_pyarrow(rows, shapes, os.path.join(base, "bare"), args.batch_rows)
        del rows, lines

        store = FileStore(paths.default_store_url)
        t0 = time.perf_counter()
        stats = ship.ship_all(store, paths, batch_rows=args.batch_rows)
        ship_s = time.perf_counter() - t0
        seg_bytes = sum(e.size for e in store.list("sessions/"))

    n = args.envelopes
    ship_rate, bare_rate, bare_parse_rate = n / ship_s, n / bare_s, n / (bare_s + parse_s)
    print(f"sync throughput: {n} envelopes in {args.sessions} sessions, {args.batch_rows} rows per segment "
          f"(python {platform.python_version()}, {os.cpu_count()} cpu, load {os.getloadavg()[0]:.2f}; "
          f"spool written in {gen_s:.1f} s)")
    print(f"  syncd ship_all        {ship_s:7.2f} s  {ship_rate:10,.0f} envelopes/s  "
          f"({stats.segments} segments, {seg_bytes / 2**20:.1f} MiB, {stats.errors} errors, "
          f"{stats.envelopes} shipped)")
    print(f"  bare pyarrow          {bare_s:7.2f} s  {bare_rate:10,.0f} rows/s  (from_pylist + write_table)")
    print(f"  bare incl. json.loads {bare_s + parse_s:7.2f} s  {bare_parse_rate:10,.0f} rows/s  (for reference)")
    print(f"  rate       {ship_rate:10,.0f}/s  budget >= {MIN_RATE:,}/s  {verdict(ship_rate >= MIN_RATE)}")
    ratio = ship_rate / bare_rate
    print(f"  vs bare    {ratio:10.2f}x  budget >= {MIN_RATIO}x  {verdict(ratio >= MIN_RATIO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
