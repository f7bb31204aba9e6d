#!/usr/bin/env python3
"""What a durable spool append costs on this machine (issue #19: a write answered "queued" is
durable before the answer).

Usage::

    python bench/spool_durability.py [--writes 300] [--dir DIR] [--rounds 3]

Appends one MCP-sized record (about 600 bytes, one line) per write to a file in ``--dir``
(default: a temporary directory under ``$CTXLAKE_HOME`` or ``~/.ctxlake``'s filesystem, i.e.
where the spool lives) with each mechanism, interleaved round by round so a busy machine
stretches all of them alike:

- ``plain``: ``open(O_APPEND)`` + ``write`` + ``close`` (the baseline: page cache only);
- ``fdatasync``: the same plus ``os.fdatasync`` before ``close`` (data and the size, not mtime);
- ``fsync``: the same plus ``os.fsync`` (data and all metadata);
- ``O_DSYNC``: opened with ``O_DSYNC``, so the ``write`` itself returns once the data is down;
- ``spool.append``: the real :func:`lib.spool.append` as the MCP server calls it (``sync=True``,
  with the spool lock).

Prints per-write median and p95 in microseconds and each as a ratio to ``plain``. The MCP
budget it is judged against: a write tool's whole answer within docs/design.md §12's 50 ms p95.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lib import spool  # noqa: E402

LINE = ('{"kind":"handoff","record_id":"01J0000000000000000000000","fleet_id":"bench","agent_id":"cc-01",'
        '"requested_at":"2026-12-01T09:00:00.000Z","summary":"' + "x" * 420 + '","status":"done"}\n').encode()


def plain(path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, LINE)
    os.close(fd)


def with_fdatasync(path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, LINE)
    os.fdatasync(fd)
    os.close(fd)


def with_fsync(path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, LINE)
    os.fsync(fd)
    os.close(fd)


def with_dsync(path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_DSYNC, 0o600)
    os.write(fd, LINE)
    os.close(fd)


def real_append(path):
    spool.append(path, LINE.decode(), sync=True, lock_path=path + ".lock")


MECHANISMS = {"plain": plain, "fdatasync": with_fdatasync, "fsync": with_fsync, "O_DSYNC": with_dsync,
              "spool.append": real_append}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--writes", type=int, default=300, help="writes per mechanism per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir", help="directory on the filesystem to measure (default: the spool's)")
    args = p.parse_args(argv)
    base = args.dir or os.environ.get("CTXLAKE_HOME") or os.path.expanduser("~")
    os.makedirs(base, exist_ok=True)
    times: dict[str, list[float]] = {name: [] for name in MECHANISMS}
    with tempfile.TemporaryDirectory(dir=base, prefix="spool-durability-") as tmp:
        for _ in range(args.rounds):
            for name, fn in MECHANISMS.items():
                path = os.path.join(tmp, f"{name}.ndjson")
                for _ in range(args.writes):
                    t0 = time.perf_counter()
                    fn(path)
                    times[name].append(time.perf_counter() - t0)
                os.unlink(path)
    base_median = statistics.median(times["plain"])
    print(f"{'mechanism':<14} {'median µs':>10} {'p95 µs':>10} {'× plain':>8}   ({args.rounds}×{args.writes} writes each, {base})")
    for name, ts in times.items():
        ts.sort()
        med, p95 = statistics.median(ts), ts[int(len(ts) * 0.95)]
        print(f"{name:<14} {med * 1e6:>10.0f} {p95 * 1e6:>10.0f} {med / base_median:>8.1f}")
    p95_real = times["spool.append"][int(len(times["spool.append"]) * 0.95)]
    print(f"spool.append p95 {p95_real * 1e3:.2f} ms = {p95_real / 0.050:.3f} of the 50 ms tool budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
