#!/usr/bin/env python3
"""Benchmark: maint over N sealed sessions on file:// (DESIGN.md §12: 1,000 sessions ≤ 60 s,
≤ 1 GiB RSS). Builds the lake through the real path (spool → syncd shipping), then times one
``maint.py --once`` in a child process and reads its peak RSS.

    python bench/maint_scale.py [--sessions 1000] [--events 40]
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


def build_spool(home: str, sessions: int, events: int) -> int:
    """Spool ``sessions`` ended sessions of ``events`` envelopes each; returns envelopes written."""
    os.environ["CTXLAKE_HOME"] = home
    from lib import envelope, spool
    from lib.paths import Paths

    paths = Paths.from_env()
    n = 0
    for s in range(sessions):
        sid = f"bench-{s:05d}"
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--events", type=int, default=40)
    args = p.parse_args()
    home = tempfile.mkdtemp(prefix="ctxlake-bench-maint-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_FLEET_ID="bench", CTXLAKE_AGENT_ID="bench",
               CTXLAKE_CONFIG=os.path.join(home, "none.toml"))
    t0 = time.perf_counter()
    n = build_spool(home, args.sessions, args.events)
    t1 = time.perf_counter()
    r = subprocess.run([sys.executable, "syncd.py", "--once", "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    t2 = time.perf_counter()
    ship = json.loads(r.stdout)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t3 = time.perf_counter()
    r = subprocess.run([sys.executable, "maint.py", "--once", "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    t4 = time.perf_counter()
    rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    summary = json.loads(r.stdout)
    print(f"spooled {n} envelopes in {args.sessions} sessions: {t1 - t0:.1f}s")
    print(f"syncd --once shipped {ship['shipped']} in {ship['segments']} segments, sealed {ship['sealed']}: {t2 - t1:.1f}s")
    print(f"maint --once: {t4 - t3:.1f}s for {summary['sessions']} sessions "
          f"({summary['rows_out']} rows compacted, {summary['digested']} digests) "
          f"— budget 60 s: {'PASS' if t4 - t3 <= 60 else 'OVER'}")
    print(f"maint peak RSS: {rss_mib:.0f} MiB" + (f" (children high-water mark; syncd before it: {before / 1024:.0f} MiB)")
          + f" — budget 1024 MiB: {'PASS' if rss_mib <= 1024 else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
