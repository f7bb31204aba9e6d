#!/usr/bin/env python3
"""ctxlake maint: the maintenance job (docs/design.md §1, §9, §10).

Usage::

    python maint.py --once [--json]

One pass of :func:`lib.maintenance.run_once` (lease → compaction → digests → gate → snapshot
→ publish → release; its docstring says what each step does). This script parses, wires the
config, log and store, and prints the summary: JSON log lines on stderr, the summary on stdout.
"""
from __future__ import annotations

import json
import sys


def main(argv=None, stdout=None, prog: str = "maint.py") -> int:
    """``maint.py --once [--json]``: one maintenance pass. Exit 0 also when another run holds the
    lease; exit 1 when the store does not honour conditional writes (no maintenance lease there).
    A failure is one line on stderr and its exit code (lib/failures.py)."""
    from lib import failures

    argv = sys.argv[1:] if argv is None else argv
    prog = failures.prog_name(prog)
    return failures.run(prog, lambda a: _main(a, stdout or sys.stdout, prog), argv)


def _main(argv, out, prog) -> int:
    from lib import config, logs, maintenance
    from lib.failures import Parser
    from lib.store import open_store

    p = Parser(prog=prog, description="ctxlake maintenance: compaction, digests, snapshot.")
    p.add_argument("--once", action="store_true", help="one pass, then exit (the only mode; a CronJob repeats it)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    cfg = config.load()
    sys.stderr.write(config.startup_notes(cfg, prog))
    log = logs.setup("maint", fleet_id=cfg.fleet_id)
    store = open_store(cfg.store, log=log, live=cfg.live_store)
    log("maint_start", store=store.url)
    summary = maintenance.run_once(cfg, store, log)
    if args.json:
        out.write(json.dumps(summary, sort_keys=True) + "\n")
    elif summary.get("refused"):
        from lib.failures import Failure

        raise Failure("refused", f"refused: {summary['message']}")
    elif not summary["ran"]:
        out.write(f"maintenance skipped: {summary['message']}\n")
    elif summary.get("fenced"):
        out.write(f"maintenance stopped: {summary['message']}\n")
    else:
        snap = summary["snapshot"] or {}
        if summary.get("lake_error"):
            out.write(f"maint: the lake was not compacted: {summary['lake_error']}\n")
        out.write(f"maint: {summary['partitions']} partition(s), {summary['compacted']} compacted "
                  f"({summary['rows_out']} rows), {summary['digested']} new digest(s), "
                  f"snapshot {str(snap.get('sha256'))[:12]} ({snap.get('reason')}), "
                  f"{summary['sessions']} session(s), epoch {summary['maint_epoch']}\n")
        if summary.get("unreadable_segments"):
            out.write(f"maint: {summary['unreadable_segments']} unreadable segment(s) set aside, not merged and never "
                      f"deleted (first: {summary['unreadable_keys'][0]}); see docs/operations.md \"Unreadable segments\"\n")
    return 1 if summary.get("refused") or summary.get("lake_error") else 0


if __name__ == "__main__":
    sys.exit(main())
