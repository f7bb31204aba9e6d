#!/usr/bin/env python3
"""ctxlake syncd: the per-host daemon (docs/design.md §1, §3, §13).

Usage::

    python syncd.py [--once] [--json]

Each pass: wait for in-flight hook captures → ship the spool to the lake (segments, seals,
quarantine records) → live plane (heartbeats, roster, lease requests from the MCP spool, lease
renewals; ``cache/<fleet>/roster.json`` and ``leases.json``, :mod:`lib.livesync`) → mirror the
current snapshot into the cache → render the briefing → write ``cache/<fleet>/sync.json``. Loops every ``sync.poll_secs`` until SIGTERM/SIGINT (the current
batch finishes, its watermark is written, the rest waits for the next start; exit 0). On a
laptop with no cluster it also runs one maintenance pass every ``sync.maint_every_secs``. JSON
log lines on stderr; with ``--once`` a summary on stdout. Exit 1 when a ``--once`` pass hit
errors (the spool is kept for the next).

With ``[sync] metrics_port`` set (the Helm chart sets it), loop mode serves ``/healthz``,
``/readyz`` and ``/metrics`` on ``[sync] metrics_addr`` (:mod:`lib.metrics`); ``--once`` never
opens a port.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time


def refresh_cache(cfg, store, log) -> dict:
    """Store → cache: snapshot mirror and briefing. Returns ``{snapshot_sha, briefing_chars}``.

    :raises: store errors (the caller logs them and keeps the last cache).
    """
    from lib import snapshot

    res = snapshot.fetch(store, cfg.fleet_id, cfg.paths.snapshot(cfg.fleet_id))
    if res["changed"]:
        log("snapshot_cached", sha256=res["sha256"])
    return {"snapshot_sha": res["sha256"], **render_briefing(cfg, log, have_snapshot=bool(res["sha256"]))}


def render_briefing(cfg, log, *, have_snapshot: bool = True) -> dict:
    """Render ``cache/<fleet>/briefing.json`` from the cached roster and snapshot; returns
    ``{"briefing_chars": n}``.

    The briefing shows the snapshot's newest handoff notes, the cached roster, the snapshot's
    recent sessions and, in summarize mode ``agent``, its agent-visible claims (``shadow`` and ``none`` show none). Both inputs are
    untrusted cache content: a roster that is not one (:func:`lib.cache_view.roster`) or a
    snapshot that cannot be read is logged as a warning (``briefing_input_unreadable``) and
    left out, so the briefing still renders from what is readable. Never raises on cache
    content; :raises OSError: the briefing file could not be written.
    """
    import sqlite3

    from lib import briefing, cache_view, snapshot
    from lib.clock import format_time

    paths = cfg.paths
    sessions, claims, handoffs = [], [], []
    if have_snapshot and os.path.exists(paths.snapshot(cfg.fleet_id)):
        try:
            conn = snapshot.open_readonly(paths.snapshot(cfg.fleet_id))
            try:
                # sessions with nothing to say (no prompt, no command) are not worth an agent's context
                sessions = [d for d in snapshot.recent_sessions(conn, 50)
                            if d.get("turn_count") or d.get("commands_ok") or d.get("commands_failed")][:5]
                if cfg.summarize_mode == "agent":
                    claims = snapshot.visible_claims(conn, 5)
                handoffs = snapshot.recent_handoffs(conn, 5)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log("briefing_input_unreadable", file="snapshot.bin", error=str(exc)[:200])
    view = cache_view.roster(paths.roster(cfg.fleet_id), time.time(), cfg.sync.presence_ttl_secs)
    if view["status"] == cache_view.UNREADABLE:
        log("briefing_input_unreadable", file="roster.json", error=str(view.get("detail"))[:200])
    text, ids = briefing.render(view["agents"], sessions, claims, handoffs=handoffs)
    cache_view.write(paths.briefing(cfg.fleet_id), {"text": text, "claim_ids": ids, "rendered_at": format_time()})
    return {"briefing_chars": len(text)}


def _hook_losses(cfg, log) -> int:
    """Keep the lost-events ledger reserved (:func:`lib.lost_events.reserve`) and report what
    hooks recorded in it since the last pass: ``hook_events_lost`` (``count``: in all, ``new``,
    the newest record) when its count grew. Returns the count, for the pass summary and
    ``/metrics``. A disk that refuses the reservation is logged (``hook_ledger_failed``), never
    raised: the pass goes on."""
    from lib import cache_view, lost_events

    try:
        lost_events.reserve(cfg.paths.hook_lost)
    except OSError as exc:
        log("hook_ledger_failed", error=str(exc)[:200], detail="hooks cannot record losses on a full disk")
    ledger = lost_events.read(cfg.paths.hook_lost)
    seen = (cache_view.read_raw(cfg.paths.sync_status(cfg.fleet_id)) or {}).get("hook_lost")
    seen = seen if isinstance(seen, int) else 0
    if ledger["count"] > seen:
        log("hook_events_lost", count=ledger["count"], new=ledger["count"] - seen,
            last=ledger["recent"][0] if ledger["recent"] else None,
            detail="hooks could not write their events or hook-errors.log (a full disk); free space on "
                   f"{os.path.dirname(cfg.paths.hook_lost)}'s filesystem")
    return ledger["count"]


def ingest_proposals(cfg, store, log) -> dict:
    """MCP ``proposed`` records → ClaimEvents in the store (:func:`lib.claims.ingest`); the
    consumer's offsets advance only after the events were written."""
    from lib import claims, mcp_records, spool

    records, commit = spool.consume_records(cfg.paths.mcp_spool(cfg.fleet_id), cfg.paths.mcp_consumer_state(cfg.fleet_id, "claims"))
    proposals = mcp_records.select(records, (mcp_records.PROPOSED,))
    tally = cfg.paths.claims_tally(cfg.fleet_id)
    out = claims.ingest(store, proposals, cfg.fleet_id, log=log, tally_path=tally) if proposals else {"proposed": 0, "rejected": 0}
    commit()
    return out


def _carry_over(summary: dict, status_path: str) -> None:
    """Complete a pass ``summary`` for ``ctxlake status``: ``last_error`` (the first cause of this
    pass's errors, one line, or ``None``), ``last_ok_at`` (the last pass without errors) and,
    when this pass did not refresh the cache, the ``snapshot_sha`` the cache still holds (a
    failed pass leaves the cached snapshot and briefing intact, docs/design.md §9),
    ``quarantined_lines_total`` (spool lines quarantined in every pass so far) and
    ``last_quarantined`` (``{at, reason}`` of the last pass that quarantined one); nothing is
    carried over from a pass against another store (``ctxlake init --force`` moved the fleet)."""
    causes = [summary.get("cache_error"), (summary.get("live") or {}).get("live_error")]
    causes += [f"{where}: {why}" for where, why in summary.get("error_detail") or []]
    cause = next((c for c in causes if c), None)
    summary["last_error"] = " ".join(str(cause).split())[:300] if cause else (
        f"{summary['errors']} error(s), see syncd's log" if summary["errors"] else None)
    from lib import cache_view

    previous = cache_view.read_raw(status_path) or {}
    if previous.get("store") not in (None, summary.get("store")):
        previous = {}  # another store's passes say nothing about this one
    summary["last_ok_at"] = summary["last_run_at"] if not summary["errors"] else previous.get("last_ok_at")
    # quarantined spool lines, in all passes against this store: ctxlake status shows them
    total = previous.get("quarantined_lines_total")
    summary["quarantined_lines_total"] = (total if isinstance(total, int) else 0) + int(summary.get("dropped_lines") or 0)
    if summary.get("dropped_lines"):
        summary["last_quarantined"] = {"at": summary["last_run_at"], "reason": summary.get("last_quarantine_reason")}
    elif isinstance(previous.get("last_quarantined"), dict):
        summary["last_quarantined"] = previous["last_quarantined"]
    if not summary.get("snapshot_sha") and previous.get("snapshot_sha"):
        summary["snapshot_sha"] = previous["snapshot_sha"]


def ingest_handoffs(cfg, store, log) -> dict:
    """MCP ``handoff`` records → notes in the lake (:func:`lib.handoffs.ingest`, create-only);
    the consumer's offsets advance only after the notes were written."""
    from lib import handoffs, spool

    records, commit = spool.consume_records(cfg.paths.mcp_spool(cfg.fleet_id),
                                            cfg.paths.mcp_consumer_state(cfg.fleet_id, "handoffs"))
    out = handoffs.ingest(store, records, cfg.fleet_id, log=log)
    commit()
    return out


def reclaim_mcp_spool(cfg, log) -> dict:
    """Delete the MCP spool files every consumer (:data:`lib.paths.MCP_CONSUMERS`) has read to
    their end (:func:`lib.spool.reclaim_consumed`); returns ``{"files", "bytes"}`` reclaimed."""
    from lib import spool
    from lib.paths import MCP_CONSUMERS

    out = spool.reclaim_consumed(cfg.paths.mcp_spool(cfg.fleet_id),
                                 [cfg.paths.mcp_consumer_state(cfg.fleet_id, name) for name in MCP_CONSUMERS],
                                 cfg.paths.mcp_spool_lock(cfg.fleet_id))
    if out["files"]:
        log("mcp_spool_reclaimed", files=out["files"], bytes=out["bytes"])
    return out


def run_pass(cfg, store, log, should_stop=None, plane=None) -> dict:
    """One syncd pass; returns a summary dict with ``errors`` (0 when all went well).

    ``should_stop()`` (optional; syncd's SIGTERM flag) ends shipping between batches and skips
    the live plane, claim ingestion and the cache refresh, so a stopping daemon exits soon with
    every sent batch's watermark written; the summary then has ``interrupted: True``.
    ``cache_refreshed`` says whether the store → cache step ran to the end (readiness).

    ``plane`` is the process's :class:`lib.livesync.LivePlane` (built here when not given, as
    for ``--once``): it sees every shipped envelope, then runs the live plane (heartbeats,
    roster, lease requests and renewals) before the cache refresh renders the briefing.
    """
    from lib import cache_view, livesync, ship, spool
    from lib.clock import format_time

    plane = plane or livesync.LivePlane(cfg, log)
    disk = spool.disk_free(cfg.paths.spool_dir)
    if disk["low"]:  # hooks on this host are losing events and cannot log it themselves
        log("spool_disk_low", free_bytes=disk["free_bytes"], path=cfg.paths.spool_dir,
            detail="hooks cannot write events or hook-errors.log; free space on this filesystem")
    hook_lost = _hook_losses(cfg, log)
    if not spool.wait_for_hooks(cfg.paths.state_dir, timeout=5):
        log("hook_captures_still_running", detail="shipping what is complete; the rest goes next pass")
    stats = ship.ship_all(store, cfg.paths, batch_rows=cfg.sync.batch_rows, log=log, should_stop=should_stop,
                          observe=plane.observe, idle_secs=cfg.sync.idle_seal_secs)
    summary = {"shipped": stats.envelopes, "segments": stats.segments, "sealed": stats.sealed,
               "idle_sealed": stats.idle_sealed,
               "backstop_filled": stats.backstop_filled, "dropped_lines": stats.dropped_lines,
               "last_quarantine_reason": stats.last_quarantine_reason,
               "quarantine_records": stats.quarantine_records,
               "errors": stats.errors, "error_detail": stats.session_errors[:5], "cache_refreshed": False,
               "spool_disk": disk, "hook_lost": hook_lost}
    if should_stop is not None and should_stop():
        summary["interrupted"] = True
    else:
        live_summary = plane.run(store)
        if live_summary.get("live_error"):
            summary["errors"] += 1
        summary["live"] = live_summary
        for name, step, event in (("claims", ingest_proposals, "claim_ingest_failed"),
                                  ("handoffs", ingest_handoffs, "handoff_ingest_failed")):
            try:
                summary[name] = step(cfg, store, log)
            except Exception as exc:  # store outage: the records stay unconsumed for the next pass
                summary["errors"] += 1
                log(event, error=f"{type(exc).__name__}: {exc}"[:300])
        try:  # only files every consumer read to their end: a failed step above keeps its files
            summary["mcp_reclaimed"] = reclaim_mcp_spool(cfg, log)
        except OSError as exc:  # a full or read-only disk: the files stay, the next pass tries again
            log("mcp_spool_reclaim_failed", error=str(exc)[:300])
        try:
            summary.update(refresh_cache(cfg, store, log))
            summary["cache_refreshed"] = True
        except Exception as exc:  # store outage: keep the last cache, say so
            summary["errors"] += 1
            summary["cache_error"] = f"{type(exc).__name__}: {exc}"[:300]
            log("cache_refresh_failed", error=summary["cache_error"])
    summary["last_run_at"] = format_time()
    summary["store"] = store.url
    status_path = cfg.paths.sync_status(cfg.fleet_id)
    _carry_over(summary, status_path)
    try:
        cache_view.write(status_path, summary)
    except OSError as exc:
        log("status_write_failed", error=str(exc))
    return summary


def run_maint_process(log) -> dict | None:
    """One maintenance pass as its own process, ``maint.py --once --json`` beside this script, with
    this process's environment (so its config and store): role scripts run each other, they never
    import each other. Its JSON log lines share this stderr; returns its summary, or ``None`` (and
    logs ``maint_failed``) when it printed none — it crashed or could not start."""
    import subprocess

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "maint.py")
    try:
        r = subprocess.run([sys.executable, script, "--once", "--json"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    except OSError as exc:
        log("maint_failed", error=f"cannot start {script}: {exc}"[:300])
        return None
    try:
        return json.loads(r.stdout.decode("utf-8").strip().splitlines()[-1])
    except (ValueError, IndexError):
        log("maint_failed", error=f"maint.py --once exited {r.returncode} without a summary (its error is logged above)")
        return None


def main(argv=None, stdout=None, prog: str = "syncd.py") -> int:
    """``syncd.py [--once] [--json] [--foreground]``; see the module docstring. A failure to start
    (bad config, bad store URL) is one line on stderr and its exit code (lib/failures.py)."""
    from lib import failures

    argv = sys.argv[1:] if argv is None else argv
    prog = failures.prog_name(prog)
    return failures.run(prog, lambda a: _main(a, stdout or sys.stdout, prog), argv)


def _main(argv, out, prog) -> int:
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
    log = logs.setup("syncd", fleet_id=cfg.fleet_id, agent_id=cfg.agent_id)
    metrics = server = None
    if not args.once and cfg.sync.metrics_port:
        from lib import metrics as metricsmod

        metrics = metricsmod.SyncdMetrics(cfg.paths, cfg.fleet_id, stall_secs=cfg.sync.liveness_stall_secs)
        log = metrics.wrap_log(log)
    store = open_store(cfg.store, log=log, live=cfg.live_store)
    log("syncd_start", store=store.url, spool=cfg.paths.spool_dir, once=args.once)
    stopping = {"flag": False}

    def stop(signum, frame):
        stopping["flag"] = True
        log("syncd_stopping", signal=signum, detail="finishing the current batch")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
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
    from lib import livesync

    plane = livesync.LivePlane(cfg, log)
    while True:
        if metrics is not None:
            metrics.beat()
        summary = run_pass(cfg, store, log, should_stop=lambda: stopping["flag"], plane=plane)
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

                raise Failure("store", f"the pass had {summary['errors']} error(s), first: {summary['last_error']}; "
                                       "what was not shipped stays in the spool for the next pass (ctxlake doctor "
                                       "tests the store)")
            return 0
        if (not stopping["flag"] and cfg.sync.maint_every_secs
                and time.monotonic() - last_maint >= cfg.sync.maint_every_secs):
            run_maint_process(log)
            last_maint = time.monotonic()
        deadline = time.monotonic() + cfg.sync.poll_secs
        while not stopping["flag"] and time.monotonic() < deadline:
            time.sleep(0.2)
        if stopping["flag"]:
            log("syncd_stopped", shipped_last_pass=summary["shipped"], interrupted=bool(summary.get("interrupted")))
            return 0


if __name__ == "__main__":
    sys.exit(main())
