#!/usr/bin/env python3
"""ctxlake syncd: the per-host daemon (docs/design.md §1, §3, §13).

Usage::

    python syncd.py [--once] [--json]

Each pass is :func:`lib.syncpass.run_pass` (ship the spool → live plane → MCP spool consumers
→ snapshot mirror and briefing → ``cache/<fleet>/sync.json``; its docstring says more). This
script parses, wires config, log, store and metrics, and loops every ``sync.poll_secs`` until
SIGTERM/SIGINT (the current batch finishes, its watermark is written, the rest waits for the
next start; exit 0). A stop signal during startup stops it too, before its first pass: run as a
script, both are blocked from the first line (``ctxlake sync`` blocks them before it becomes
this process), so one that arrives early stays pending until the handlers are in place (also
when the daemon inherited SIGINT ignored, as ``cmd &`` in a script leaves it). On a
laptop with no cluster it also runs one maintenance pass every ``sync.maint_every_secs``. JSON
log lines on stderr; with ``--once`` a summary on stdout. Exit 1 when a ``--once`` pass hit
errors (the spool is kept for the next).

With ``[sync] metrics_port`` set (the Helm chart sets it), loop mode serves ``/healthz``,
``/readyz`` and ``/metrics`` on ``[sync] metrics_addr`` (:mod:`lib.metrics`); ``--once`` never
opens a port.
"""
from __future__ import annotations

import signal
import sys

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
"""The signals that stop the daemon (see the module docstring)."""
if __name__ == "__main__":  # before any slow import: an early stop signal waits for _main's handlers
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

import json  # noqa: E402
import time  # noqa: E402


def main(argv=None, stdout=None, prog: str = "syncd.py") -> int:
    """``syncd.py [--once] [--json] [--foreground]``; see the module docstring. A failure to start
    (bad config, bad store URL) is one line on stderr and its exit code (lib/failures.py)."""
    from lib import failures

    argv = sys.argv[1:] if argv is None else argv
    prog = failures.prog_name(prog)
    return failures.run(prog, lambda a: _main(a, stdout or sys.stdout, prog), argv)


def _main(argv, out, prog) -> int:
    stopping = {"flag": False, "signal": None, "log": None}

    def stop(signum, frame):
        stopping["flag"], stopping["signal"] = True, signum
        if stopping["log"] is not None:
            stopping["log"]("syncd_stopping", signal=signum, detail="finishing the current batch")

    for signum in STOP_SIGNALS:  # installed first, then a signal held back since startup arrives
        signal.signal(signum, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    from lib import config, logs
    from lib.failures import Parser
    from lib.store import open_store

    p = Parser(prog=prog, description="ctxlake sync daemon: spool → store → cache.")
    p.add_argument("--once", action="store_true", help="one pass, then exit")
    p.add_argument("--foreground", action="store_true",
                   help="run the loop in this terminal (the default: syncd never daemonizes itself)")
    p.add_argument("--json", action="store_true", help="with --once: print the pass summary as JSON")
    args = p.parse_args(argv)
    cfg = config.load()
    sys.stderr.write(config.startup_notes(cfg, prog))
    log = logs.setup("syncd", fleet_id=cfg.fleet_id, agent_id=cfg.agent_id)
    metrics = server = None
    if not args.once and cfg.sync.metrics_port:
        from lib import metrics as metricsmod

        metrics = metricsmod.SyncdMetrics(cfg.paths, cfg.fleet_id, stall_secs=cfg.sync.liveness_stall_secs)
        log = metrics.wrap_log(log)
    stopping["log"] = log
    store = open_store(cfg.store, log=log, live=cfg.live_store)
    log("syncd_start", store=store.url, spool=cfg.paths.spool_dir, once=args.once)
    if stopping["flag"]:
        log("syncd_stopped", signal=stopping["signal"], detail="stop signal during startup: no pass ran")
        return 0
    if metrics is not None:
        server = metricsmod.serve(metrics, cfg.sync.metrics_addr, cfg.sync.metrics_port)
        log("metrics_listening", addr=server.addr, port=server.port, paths="/healthz /readyz /metrics")
    try:
        return _loop(cfg, store, log, args, out, stopping, metrics)
    finally:
        if server is not None:
            server.stop()


def _loop(cfg, store, log, args, out, stopping, metrics) -> int:
    last_maint = time.monotonic()
    from lib import maintenance, syncpass
    from lib.live import sync

    plane = sync.LivePlane(cfg, log)
    while True:
        if metrics is not None:
            metrics.beat()
        summary = syncpass.run_pass(cfg, store, log, should_stop=lambda: stopping["flag"], plane=plane)
        if metrics is not None:
            metrics.observe_pass(summary)
        if args.once:
            if args.json:
                out.write(json.dumps(summary, sort_keys=True) + "\n")
            else:
                out.write(f"sync: shipped {summary['shipped']} envelope(s) in {summary['segments']} segment(s), "
                          f"sealed {summary['sealed']} session(s), {summary['errors']} error(s)"
                          + (f", snapshot {summary['snapshot_sha'][:12]}" if summary.get("snapshot_sha") else "") + "\n")
            if summary["errors"]:
                from lib.failures import Failure

                if summary.get("disk_error"):  # this host's disk, not the store: doctor would not help
                    raise Failure("disk", f"the pass had {summary['errors']} error(s): the local disk refused a write: "
                                          f"{summary['disk_error']}; free space on that filesystem (CTXLAKE_HOME "
                                          f"{cfg.paths.home}) and run again; what was not shipped stays in the spool")
                raise Failure("store", f"the pass had {summary['errors']} error(s), first: {summary['last_error']}; "
                                       "what was not shipped stays in the spool for the next pass (ctxlake doctor "
                                       "tests the store)")
            return 0
        if (not stopping["flag"] and cfg.sync.maint_every_secs
                and time.monotonic() - last_maint >= cfg.sync.maint_every_secs):
            maintenance.run_process(log)
            last_maint = time.monotonic()
        deadline = time.monotonic() + cfg.sync.poll_secs
        while not stopping["flag"] and time.monotonic() < deadline:
            time.sleep(0.2)
        if stopping["flag"]:
            log("syncd_stopped", shipped_last_pass=summary["shipped"], interrupted=bool(summary.get("interrupted")))
            return 0


if __name__ == "__main__":
    sys.exit(main())
