"""One syncd pass (docs/design.md §1, §3, §13): wait for in-flight hook captures → ship the spool
to the lake (segments, seals, quarantine records, :mod:`lib.ship`) → live plane (heartbeats,
roster, lease requests from the MCP spool, lease renewals, :mod:`lib.live.sync`) → the other MCP
spool consumers (:mod:`lib.mcp_ingest`) → mirror the current snapshot into the cache and render
the briefing (:func:`lib.briefing.refresh`) → write ``cache/<fleet>/sync.json``, the summary
``ctxlake status`` and ``/metrics`` read. ``syncd.py`` loops it."""
from __future__ import annotations

import os


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


def _carry_over(summary: dict, status_path: str, snapshot_path: str | None = None) -> None:
    """Complete a pass ``summary`` for ``ctxlake status``: ``last_error`` (the first cause of this
    pass's errors in the order the pass ran its steps — ship, live plane, MCP ingest, cache
    refresh — one line, or ``None``), ``last_ok_at`` (the last pass without errors) and,
    when this pass did not refresh the cache, the ``snapshot_sha`` the cache still holds (a
    failed pass leaves the cached snapshot and briefing intact, docs/design.md §9; none when
    ``snapshot_path``, the cached snapshot file, is gone: the cache holds no snapshot then),
    ``quarantined_lines_total`` (spool lines quarantined in every pass so far) and
    ``last_quarantined`` (``{at, reason}`` of the last pass that quarantined one); nothing is
    carried over from a pass against another store (``ctxlake init --force`` moved the fleet)."""
    causes = [f"{where}: {why}" for where, why in summary.get("error_detail") or []]  # in the pass's order:
    causes += [(summary.get("live") or {}).get("live_error"), *summary.get("ingest_errors", ()),  # ship, live,
               summary.get("cache_error")]  # ingest, cache refresh
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
    cached = snapshot_path is None or os.path.exists(snapshot_path)
    if not summary.get("snapshot_sha") and previous.get("snapshot_sha") and cached:
        summary["snapshot_sha"] = previous["snapshot_sha"]


def store_vanished(cfg, store, log, previous: dict) -> tuple[str | None, bool]:
    """``(why, seen)``: whether the fleet marker ``ctxlake init`` wrote (``_meta/fleets/<f>.json``,
    :func:`lib.keys.fleet_marker_key`) is gone from a store where an earlier pass saw it
    (``previous``: the last pass's summary, ``fleet_marker_seen`` its store URL). Gone means the
    store was wiped, or the URL now reaches another folder or bucket (an unmounted volume, a
    recreated bucket): ``why`` says so and the pass ships nothing, as a sink whose bucket was
    deleted refuses to write rather than create a new one (docs/operations.md "A store that
    vanished"). A store never initialised (no marker ever seen) is not judged; a store outage
    (any other error) is left to the steps that follow. One HEAD per pass."""
    from lib import keys
    from lib.store import NotFound, StoreError

    seen = previous.get("fleet_marker_seen") == store.url
    key = keys.fleet_marker_key(cfg.fleet_id)
    try:
        store.head(key)
        return None, True
    except NotFound:
        if not seen:
            return None, False
    except StoreError:
        return None, seen
    why = (f"the store {store.url} no longer holds {key}, which an earlier pass saw there: it was wiped or deleted, "
           "or the URL now reaches another folder or bucket (an unmounted volume?); nothing was shipped and the spool "
           "is kept; restore or remount the store, or run `ctxlake init` again to start a new lake there")
    log("store_vanished", level="error", store=store.url, key=key, detail=why)
    return why, True


def run_pass(cfg, store, log, should_stop=None, plane=None) -> dict:
    """One syncd pass; returns a summary dict with ``errors`` (0 when all went well) and
    ``disk_error``: the first error that was this host's disk refusing a write (full, over quota,
    read-only: :func:`lib.failures.disk_refusal`), else ``None``; ``sync --once`` then exits 6,
    not 4 (docs/operations.md "Exit codes").

    ``should_stop()`` (optional; syncd's SIGTERM flag) ends shipping between batches and skips
    the live plane, claim ingestion and the cache refresh, so a stopping daemon exits soon with
    every sent batch's watermark written; the summary then has ``interrupted: True``.
    ``cache_refreshed`` says whether the store → cache step ran to the end (readiness).

    ``plane`` is the process's :class:`lib.live.sync.LivePlane` (built here when not given, as
    for ``--once``): it sees every shipped envelope, then runs the live plane (heartbeats,
    roster, lease requests and renewals) before the cache refresh renders the briefing.
    """
    from lib import briefing, cache_view, mcp_ingest, ship, spool
    from lib.live import sync
    from lib.failures import disk_refusal

    plane = plane or sync.LivePlane(cfg, log)
    disk = spool.disk_free(cfg.paths.spool_dir)
    if disk["low"]:  # hooks on this host are losing events and cannot log it themselves
        log("spool_disk_low", free_bytes=disk["free_bytes"], path=cfg.paths.spool_dir,
            detail="hooks cannot write events or hook-errors.log; free space on this filesystem")
    hook_lost = _hook_losses(cfg, log)
    status_path = cfg.paths.sync_status(cfg.fleet_id)
    previous = cache_view.read_raw(status_path) or {}
    vanished, marker_seen = store_vanished(cfg, store, log, previous if previous.get("store") == store.url else {})
    if vanished:
        summary = {"shipped": 0, "segments": 0, "sealed": 0, "idle_sealed": 0, "backstop_filled": 0, "dropped_lines": 0,
                   "quarantine_records": 0, "errors": 1, "error_detail": [("store", vanished)], "cache_refreshed": False,
                   "spool_disk": disk, "hook_lost": hook_lost, "disk_error": None, "store_vanished": vanished,
                   "fleet_marker_seen": store.url}
        return _finish(summary, store, status_path, log, cfg.paths.snapshot(cfg.fleet_id))
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
               "spool_disk": disk, "hook_lost": hook_lost, "disk_error": stats.disk_error,
               "fleet_marker_seen": store.url if marker_seen else None}

    def failed(exc: BaseException) -> None:  # one more error; the first local disk refusal is kept
        summary["errors"] += 1
        summary["disk_error"] = summary["disk_error"] or disk_refusal(exc)

    if should_stop is not None and should_stop():
        summary["interrupted"] = True
    else:
        live_summary = plane.run(store)
        if live_summary.get("live_error"):
            summary["errors"] += 1
            summary["disk_error"] = summary["disk_error"] or live_summary.get("disk_error")
        summary["live"] = live_summary
        for name, step, event in (("claims", mcp_ingest.ingest_proposals, "claim_ingest_failed"),
                                  ("handoffs", mcp_ingest.ingest_handoffs, "handoff_ingest_failed")):
            try:
                summary[name] = step(cfg, store, log)
            except Exception as exc:  # store outage: the records stay unconsumed for the next pass
                failed(exc)
                summary.setdefault("ingest_errors", []).append(f"{name}: {type(exc).__name__}: {exc}"[:300])
                log(event, error=f"{type(exc).__name__}: {exc}"[:300])
        try:  # only files every consumer read to their end: a failed step above keeps its files
            summary["mcp_reclaimed"] = mcp_ingest.reclaim_mcp_spool(cfg, log)
        except OSError as exc:  # a full or read-only disk: the files stay, the next pass tries again
            failed(exc)
            log("mcp_spool_reclaim_failed", error=str(exc)[:300])
        try:
            summary.update(briefing.refresh(cfg, store, log))
            summary["cache_refreshed"] = True
        except Exception as exc:  # store outage: keep the last cache, say so
            failed(exc)
            summary["cache_error"] = f"{type(exc).__name__}: {exc}"[:300]
            log("cache_refresh_failed", error=summary["cache_error"])
    return _finish(summary, store, status_path, log, cfg.paths.snapshot(cfg.fleet_id))


def _finish(summary: dict, store, status_path: str, log, snapshot_path: str | None = None) -> dict:
    """Date ``summary``, complete it (:func:`_carry_over`; ``snapshot_path`` is the cached
    snapshot file) and write it for ``ctxlake status``."""
    from lib import cache_view
    from lib.clock import format_time
    from lib.failures import disk_refusal

    summary["last_run_at"] = format_time()
    summary["store"] = store.url
    _carry_over(summary, status_path, snapshot_path)
    try:
        cache_view.write(status_path, summary)
    except OSError as exc:
        log("status_write_failed", error=str(exc))
        summary["disk_error"] = summary["disk_error"] or disk_refusal(exc)
    return summary
