#!/usr/bin/env python3
"""Benchmark: what retention reclaims over a simulated month (docs/lake.md, "Retention").

Each simulated day ships ``--sessions`` sealed sessions through the real path (spool → syncd's
shipping), and maint runs ``--passes`` times; the maintenance pass gets a clock that advances by a
day per day (bronze grace and snapshot blob age are judged by it; the ledger dates segments by
their Delta commit, so ``now`` is real time plus the simulated days). Table vacuum is judged by
delta-rs on file times, which a simulation cannot age, so it runs with ``vacuum_hours = 0``
(what a week-old unreferenced file costs is the same bytes a week later). Prints the store size
by prefix at the end with retention on, against the same month with every deletion off.

    python bench/retention_month.py [--days 30] [--sessions 20] [--events 40] [--passes 3]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _size(root: str, sub: str) -> int:
    total = 0
    for d, _, files in os.walk(os.path.join(root, sub)):
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    return total


def month(retain: bool, days: int, sessions: int, events: int, passes: int) -> dict:
    """Run the month; returns bytes by prefix of the store at the end."""
    home = tempfile.mkdtemp(prefix="ctxlake-bench-month-")
    os.environ.update(CTXLAKE_HOME=home, CTXLAKE_FLEET_ID="bench", CTXLAKE_AGENT_ID="bench",
                      CTXLAKE_CONFIG=os.path.join(home, "none.toml"))
    from lib import maintenance
    from bench.maint_scale import build_spool
    from lib import config, ship
    from lib.paths import Paths
    from lib.store import open_store

    cfg = config.load()
    knobs = dict(vacuum_hours=0) if retain else dict(bronze_grace_hours=0, snapshot_keep_hours=24 * 365 * 10,
                                                       vacuum_hours=24 * 365 * 10)
    cfg = dataclasses.replace(cfg, lake=dataclasses.replace(cfg.lake, **knobs))
    store, paths = open_store(cfg.store), Paths.from_env()
    t0 = time.time()
    for day in range(days):
        build_spool(home, sessions, events, prefix=f"d{day:02d}-")
        ship.ship_all(store, paths, batch_rows=5000)
        for p in range(passes):
            clock = t0 + day * 86400 + p * 3600
            maintenance.run_once(cfg, store, lambda *a, **k: None, now=lambda c=clock: c)
    lake_root = os.path.join(home, "lake")
    return {sub: _size(lake_root, sub) for sub in ("sessions", "compacted", "snapshot")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--sessions", type=int, default=20, help="sealed sessions per day")
    p.add_argument("--events", type=int, default=40)
    p.add_argument("--passes", type=int, default=3, help="maintenance passes per day")
    args = p.parse_args()
    kept = month(False, args.days, args.sessions, args.events, args.passes)
    pruned = month(True, args.days, args.sessions, args.events, args.passes)
    print(f"{args.days} days × {args.sessions} sessions × {args.events} events, {args.passes} maint passes a day")
    for sub in kept:
        print(f"  {sub + '/':<11} no retention {kept[sub] / 1048576:8.2f} MiB   retention {pruned[sub] / 1048576:8.2f} MiB"
              f"   reclaimed {(kept[sub] - pruned[sub]) / 1048576:8.2f} MiB")
    total_k, total_p = sum(kept.values()), sum(pruned.values())
    print(f"  total       no retention {total_k / 1048576:8.2f} MiB   retention {total_p / 1048576:8.2f} MiB"
          f"   ({total_p / total_k:.2f}× the size)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
