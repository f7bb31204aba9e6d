#!/usr/bin/env python3
"""``ctxlake import claude-code`` throughput (MB/s of transcript) and peak RSS (a report, not a
test: always exits 0).

Usage::

    python bench/import_throughput.py [--mb 40] [--runs 3] [--baseline <checkout>]

Builds one transcript of about ``--mb`` MB from the real transcripts in
``tests/fixtures/claude-transcripts`` (each copy under a new session id, the way a long history
looks), then runs ``ctxlake.py import claude-code --path <file>`` as its own process, the way a
user runs it, into a fresh ``CTXLAKE_HOME`` each time. With ``--baseline`` (another checkout of
ctxlake, e.g. ``git archive main | tar -x -C /tmp/base``) the two are run interleaved, run by run,
so both see the same machine load. Peak RSS is the child's ``ru_maxrss`` (``os.wait4``); its CPU
time (user + system) is printed too, since on a loaded machine it varies far less than wall time.

Budget: peak RSS bounded (≤ 256 MiB whatever the file size: the importer streams) and
throughput ≥ 0.8× the baseline's.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_RSS_MB = 256
MIN_RATIO = 0.8


def build_transcript(path: str, target_mb: float) -> int:
    """Write ``path`` from the real fixture transcripts repeated under new session ids."""
    sources = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "claude-transcripts", "*.jsonl")))
    lines = []
    for src in sources:
        with open(src, "rb") as fh:
            lines.append([json.loads(raw) for raw in fh if raw.strip()])
    size, copy = 0, 0
    with open(path, "w") as out:
        while size < target_mb * 1e6:
            for recs in lines:
                for rec in recs:
                    if "sessionId" in rec:
                        rec = dict(rec, sessionId=f"{rec['sessionId']}-{copy}")
                    line = json.dumps(rec, ensure_ascii=False) + "\n"
                    out.write(line)
                    size += len(line.encode())
            copy += 1
    return size


def run_import(checkout: str, transcript: str) -> tuple[float, float, float]:
    """One import in a fresh home: ``(seconds, peak RSS MiB, CPU seconds user+system)``."""
    home = tempfile.mkdtemp(prefix="ctxlake-import-bench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_CONFIG=os.path.join(home, "none.toml"), CTXLAKE_FLEET_ID="bench",
               CTXLAKE_AGENT_ID="bench", PYTHONPATH=checkout)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, os.path.join(checkout, "ctxlake.py"), "import", "claude-code", "--path", transcript],
                            cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    err = proc.stderr.read().decode()[-500:]
    proc.stderr.close()
    shutil.rmtree(home, ignore_errors=True)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"import failed in {checkout}: {err}")
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mb", type=float, default=40)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--baseline", help="another ctxlake checkout to compare with, run interleaved")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="ctxlake-import-src-")
    transcript = os.path.join(tmp, "history.jsonl")
    size = build_transcript(transcript, args.mb)
    results: dict = {"this": []}
    if args.baseline:
        results["baseline"] = []
    for _ in range(args.runs):
        for name in results:
            checkout = ROOT if name == "this" else os.path.abspath(args.baseline)
            results[name].append(run_import(checkout, transcript))
    shutil.rmtree(tmp, ignore_errors=True)
    mb = size / 1e6
    print(f"transcript: {mb:.1f} MB, {args.runs} run(s) each")
    rates = {}
    for name, runs in results.items():
        best = min(t for t, _, _ in runs)
        rss = max(r for _, r, _ in runs)
        cpu = min(c for _, _, c in runs)
        rates[name] = mb / best
        print(f"  {name:9s} {rates[name]:6.2f} MB/s (best of {len(runs)}: {best:.2f} s)  peak RSS {rss:7.1f} MiB "
              f"({rss / MAX_RSS_MB:.2f}× the {MAX_RSS_MB} MiB budget); CPU {mb / cpu:6.2f} MB per CPU-second")
    if "baseline" in rates:
        print(f"  throughput ratio this/baseline: {rates['this'] / rates['baseline']:.2f} (budget ≥ {MIN_RATIO})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
