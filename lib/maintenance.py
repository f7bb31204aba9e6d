"""The maintenance pass (docs/design.md §1, §9, §10): what ``maint.py --once`` runs.

One pass (:func:`run_once`): take the ``_maintenance`` lease (a second concurrent run returns
``ran: False`` naming the holder) → for each date partition of the fleet: compact sealed
sessions into the fleet's Delta table (one row per ``(session_id, event_id)``,
:mod:`lib.identity`) and digest every sealed session whose digest is missing or older than its
segments (one digest per session, over every partition it reached); an unreadable segment is
skipped, logged with its key and recorded under ``quarantine/maint/``, and the rest of the
fleet's work goes on → run the promotion gate → build the SQLite snapshot → publish it
content-addressed with a CAS pointer stamped with our lease epoch (fencing: a pass that lost
its lease stops without touching the pointer) → release the lease.

:func:`run_process` runs one pass as its own process (``maint.py --once --json``), for the
callers that must not hold the pass's memory (syncd's laptop maintenance, ``ctxlake migrate``).
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time


def _scan_sessions(store, fleet: str) -> dict:
    """``{dt: {prefix: {"segs": [...], "sealed": bool, "digest": bool}}}`` from one listing."""
    from lib import lake

    out: dict = {}
    for entry in store.list(lake.fleet_sessions_prefix(fleet)):
        info = lake.parse_session_prefix(entry.key)
        name = entry.key.rsplit("/", 1)[-1]
        sess = out.setdefault(info.get("dt", "?"), {}).setdefault(info["prefix"], {"segs": [], "sealed": False, "digest": False})
        if name.startswith("seg-"):
            sess["segs"].append(entry.key)
        elif name == "_SEALED":
            sess["sealed"] = True
        elif name == "digest.json":
            sess["digest"] = True
    return out


def _session_key(prefix: str) -> tuple:
    """``(runtime, agent, session)`` of a session prefix: one session across date partitions."""
    from lib import lake

    info = lake.parse_session_prefix(prefix)
    return info.get("runtime"), info.get("agent"), info.get("session")


def _quarantine_bad(store, fleet: str, bad: list, now) -> None:
    """Record each unreadable object once under ``quarantine/maint/fleet=<f>/`` (create-only;
    the object itself is left where it is, for an operator to inspect)."""
    from lib import keys
    from lib.clock import format_time
    from lib.envelope import sha256_hex
    from lib.store import CREATE, PreconditionFailed

    for item in bad:
        key = keys.maint_quarantine_key(fleet, sha256_hex(item['key'])[7:39])
        try:
            store.put(key, json.dumps({**item, "recorded_at": format_time(now())}, sort_keys=True).encode(), CREATE)
        except PreconditionFailed:
            pass


def _read_segments(store, fleet: str, keys: list[str], ledger, log, bad: list) -> list:
    """Arrow tables of the bronze segments ``keys`` (in key order). A segment that cannot be read
    or does not fit the lake schema goes to ``bad`` (quarantined by :func:`_quarantine_bad`,
    the segment itself left where it is) and into the ledger's ``quarantined`` with the reason,
    so it is never retried nor deleted; the pass goes on without it (docs/lake.md, bad input)."""
    import pyarrow as pa

    from lib import lake
    from lib.store import NotFound

    tables = []
    for key in keys:
        try:
            t = lake.read_table(store.get(key).data)
            missing = [c for c in lake.EVENT_KEY + ("emitted_at", "envelope_json") if c not in t.column_names]
            if missing:
                raise ValueError(f"no column {', '.join(missing)}")
            tables.append(t)
        except NotFound:
            continue  # deleted meanwhile: nothing to merge
        except (pa.ArrowException, OSError, ValueError) as exc:
            reason = f"{type(exc).__name__}: {exc}"[:300]
            bad.append({"key": key, "error": reason})
            ledger.quarantined[key] = reason
            log("segment_unreadable", level="error", key=key, error=reason,
                detail="set aside, never merged nor deleted; see docs/operations.md \"Unreadable segments\"")
    return tables


UNREADABLE_KEYS_SHOWN = 20
"""How many unreadable segment keys a summary lists (the count is always exact)."""


def _count_unreadable(ledger, sealed: dict, summary: dict) -> None:
    """``summary["unreadable_segments"]`` (int) and ``["unreadable_keys"]`` (the first
    :data:`UNREADABLE_KEYS_SHOWN`): segments the ledger set aside as unreadable that are still in
    the store, so every pass reports them until an operator deletes them (docs/operations.md
    "Unreadable segments")."""
    listed = {k for s in sealed.values() for k in s["segs"]}
    keys = sorted(k for k in ledger.quarantined if k in listed)
    summary["unreadable_segments"] = len(keys)
    summary["unreadable_keys"] = keys[:UNREADABLE_KEYS_SHOWN]


def _compact(cfg, store, scan: dict, epoch: int, renew, log, now, summary: dict) -> dict:
    """Merge every bronze segment of a sealed session that the table does not hold yet (plus the
    old ``gen=<hash>`` layout, once) into the fleet's Delta table: one commit for the pass.

    Returns ``{"touched": {session_id: set(dt)}, "table_ok": bool}``. Refuses to commit — and
    says why in ``summary["lake_error"]`` — when the store makes Delta commits unsafe
    (:func:`lib.lake.commit_safety`) or the table is unreadable; bronze is then left untouched.
    """
    from lib import lake
    from lib.ulid import new_ulid

    fleet = cfg.fleet_id
    state = {"touched": {}, "table_ok": False}
    sealed = {p: s for dt in scan.values() for p, s in dt.items() if s["sealed"]}
    summary["partitions"] = len({lake.parse_session_prefix(p)["dt"] for p in sealed})
    if not sealed and not store.url.startswith(("file://", "s3://")):
        return state  # nothing to compact on a store that cannot hold a table (memory:// unit tests)
    try:
        try:
            table = lake.open_table(store, fleet)
        except lake.TableError:
            if not lake.repair_checkpoints(store, fleet, log):
                raise
            table = lake.open_table(store, fleet)
    except lake.TableError as exc:
        summary["lake_error"] = str(exc)
        log("lake_unreadable", error=str(exc)[:500])
        return state
    ledger = lake.Ledger.load(store, fleet)
    if ledger.catch_up(table):
        ledger.save()  # a pass killed after its commit: what it merged is recorded now
    legacy = lake.legacy_pointers(store, fleet)
    new = sorted(k for p, s in sealed.items() for k in s["segs"]
                 if k not in ledger.segments and k not in ledger.quarantined)
    state["table_ok"] = True
    state["ledger"] = ledger
    _count_unreadable(ledger, sealed, summary)
    if not new and not legacy and not lake.legacy_keys(store, fleet):
        state["ledger"] = ledger
        return state
    unsafe = lake.commit_safety(store, fleet)
    if unsafe:
        summary["lake_error"] = unsafe
        log("lake_commit_refused", reason=unsafe)
        state["table_ok"] = table is not None
        return state
    renew.tick()
    tables = []  # old parts first: where bronze holds the same event too, its row (read later) wins
    for _, parts in legacy:
        for key in parts:
            try:
                tables.append(lake.read_table(store.get(key).data))
            except Exception as exc:  # an old part that cannot be read: bronze still has its rows
                log("legacy_part_unreadable", key=key, error=str(exc)[:300])
    bad: list = []
    tables += _read_segments(store, fleet, new, ledger, log, bad)
    if bad:
        _quarantine_bad(store, fleet, bad, now)
        summary["quarantined"] = sorted(b["key"] for b in bad)
        _count_unreadable(ledger, sealed, summary)
    renew.tick()
    if tables:
        import pyarrow as pa

        rows = lake.table_rows(pa.concat_tables(tables, promote_options="default"))
        pass_id = f"{epoch}-{new_ulid()}"
        consumed = [k for k in new if k not in ledger.quarantined]
        from lib.store import CREATE, PreconditionFailed

        try:
            store.put(lake.manifest_key(fleet, pass_id), json.dumps({"pass_id": pass_id, "maint_epoch": epoch,
                                                                     "segments": consumed}, sort_keys=True).encode(), CREATE)
        except PreconditionFailed:
            pass
        try:
            res = lake.commit(store, fleet, rows, epoch=epoch, pass_id=pass_id,
                              config=lake.table_config(cfg.lake.checkpoint_every, cfg.lake.log_retention_days,
                                                       cfg.lake.vacuum_hours),
                              log=log, before_commit=lambda: renew.tick(force=True), refuse_forged=True)
        except lake.Fenced:
            raise
        except lake.TableError as exc:  # outage or damage: nothing half-visible, bronze kept, next pass retries
            summary["lake_error"] = str(exc)
            log("lake_commit_failed", error=str(exc)[:500])
            return state
        summary["compacted"] = int(res["committed"])
        summary["rows_out"] = rows.num_rows
        summary["lake_version"] = res["version"]
        for sid, dt in zip(rows.column("session_id").to_pylist(), rows.column("dt").to_pylist()):
            state["touched"].setdefault(sid, set()).add(dt)
        ledger.catch_up(lake.open_table(store, fleet))
    if legacy or lake.legacy_keys(store, fleet):
        summary["migrated"] = _drop_legacy(store, fleet, log)
    ledger.save()
    state["ledger"] = ledger
    return state


def _drop_legacy(store, fleet: str, log) -> int:
    """Delete the ``gen=<hash>`` layout once its rows are in the table (after the commit: a pass
    killed before this point merges the same parts again, which changes nothing)."""
    from lib import lake
    from lib.store import NotFound

    keys = lake.legacy_keys(store, fleet)
    for key in sorted(keys, key=lambda k: k.endswith("/_CURRENT")):  # parts first, pointers last
        try:
            store.delete(key)
        except NotFound:
            pass
    if keys:
        log("lake_migrated", fleet=fleet, deleted=len(keys))
    return len(keys)


def _digests(cfg, store, scan: dict, lake_state: dict, renew, log, summary: dict) -> list[dict]:
    """Every sealed session's digest, one per session (its folders in several date partitions
    are one session; the digest lives in the first). A stored ``digest.json`` is reused unless
    the session got rows this pass or the digest schema changed; the others are computed from
    the session's rows read back from the table."""
    from lib import lake
    from lib.memory import digest as digestmod
    from lib.store import NotFound

    groups: dict[tuple, list[tuple[str, dict]]] = {}
    for dt in sorted(scan):
        for prefix, s in sorted(scan[dt].items()):
            if s["sealed"]:
                groups.setdefault(_session_key(prefix), []).append((prefix, s))
    touched = lake_state["touched"]
    digests, need = [], {}
    for gkey in sorted(groups, key=str):
        owner, s = groups[gkey][0]
        sid = gkey[2]
        d = None
        if sid not in touched and s["digest"]:
            try:
                d = json.loads(store.get(lake.digest_key(owner)).data)
            except (NotFound, ValueError):
                d = None
            if not isinstance(d, dict) or d.get("schema_version") != digestmod.DIGEST_SCHEMA_VERSION:
                d = None
        if d:
            digests.append(d)
        else:
            need[gkey] = owner
    if need and lake_state["table_ok"]:
        renew.tick()
        sids = {g[2] for g in need}
        dts = set().union(*(touched[s] for s in sids)) if all(s in touched for s in sids) else None
        envs = lake.session_envelopes(store, cfg.fleet_id, sorted(sids), dts=dts)
        for gkey in sorted(need, key=str):
            renew.tick()
            mine = [e for e in envs.get(gkey[2], []) if (e.get("runtime"), e.get("agent_id")) == gkey[:2]] \
                or envs.get(gkey[2], [])
            if not mine:
                continue
            d = digestmod.digest(mine)
            store.put(lake.digest_key(need[gkey]), json.dumps(d, sort_keys=True).encode())
            summary["digested"] += 1
            digests.append(d)
    return digests


def _retention(cfg, store, lake_state: dict, log, now, summary: dict) -> dict:
    """Vacuum the table and delete compacted bronze past its grace (lib/retention.py), only when
    the table was read this pass; returns the table figures for the snapshot pointer."""
    from lib import lake, retention

    summary["retention"] = {}
    if not lake_state.get("table_ok") or "ledger" not in lake_state:
        return {}
    try:
        summary["retention"]["vacuum"] = retention.vacuum(store, cfg.fleet_id, cfg.lake.vacuum_hours, log)
        summary["retention"]["bronze"] = retention.bronze(store, lake_state["ledger"], cfg.lake.bronze_grace_hours,
                                                          now(), log)
        stats = retention.table_stats(store, cfg.fleet_id, cfg.lake.vacuum_hours)
    except lake.TableError as exc:
        log("lake_retention_skipped", error=str(exc)[:300])
        return {}
    if stats and "unreadable_segments" in summary:  # the pointer carries it to every host's status
        stats = dict(stats, unreadable_segments=summary["unreadable_segments"])
    summary["lake"] = stats
    return stats


def run_once(cfg, store, log, now=time.time) -> dict:
    """One maintenance pass; returns a summary dict (see module docstring)."""
    from lib import lake, retention
    from lib.memory import snapshot
    from lib.live import leases
    from lib.clock import format_time

    holder = f"maint@{socket.gethostname()}:{os.getpid()}"
    key = leases.lease_key(cfg.fleet_id, leases.MAINTENANCE)
    ttl = cfg.leases.ttl_secs
    try:
        lease = leases.acquire(store, key, holder=holder, reason="maintenance", ttl=ttl, resource=leases.MAINTENANCE,
                             floor_epoch=snapshot.pointer_epoch(store, cfg.fleet_id), log=log)
    except leases.Refused as exc:
        log("maint_skipped", holder=exc.holder, expires_at=exc.expires_at)
        until = format_time(exc.expires_at) if isinstance(exc.expires_at, (int, float)) else "its expiry"
        return {"ran": False, "held_by": exc.holder, "expires_at": exc.expires_at,
                "message": f"another maintenance pass holds the maintenance lease ({exc.holder}, until {until} by the store "
                           "clock); nothing to do: that pass does the work, and the next one runs after it "
                           "(see docs/operations.md, `maintenance skipped`)"}
    except leases.Unsafe as exc:  # no maintenance lease on a store that ignores conditional writes
        log("maint_refused", reason=exc.reason, detail=str(exc))
        return {"ran": False, "refused": exc.reason, "message": str(exc)}
    renew = leases.Renewer(store, key, holder=holder, ttl=ttl, epoch=lease["epoch"], log=log)
    summary = {"ran": True, "maint_epoch": lease["epoch"], "partitions": 0, "compacted": 0, "rows_out": 0,
               "digested": 0, "sessions": 0, "snapshot": None}
    try:
        scan = _scan_sessions(store, cfg.fleet_id)
        lake_state = _compact(cfg, store, scan, lease["epoch"], renew, log, now, summary)
        digests = _digests(cfg, store, scan, lake_state, renew, log, summary)
        renew.tick()
        from lib.memory import embed, gate

        emb = embed.default_embedder()
        intact: set = set()  # snapshot blobs this pass read back and hashed (publish skips their GET)
        cached = snapshot.previous_embeddings(store, cfg.fleet_id, emb[0], log=log, intact=intact) if emb else {}
        t_embed = time.monotonic()
        result = gate.run(store, cfg.fleet_id, digests, mode=cfg.summarize_mode, embedder=emb, cached=cached, log=log)
        claims = result["claims"]
        summary.update(promoted=result["promoted"], contested=result["contested"], claims=len(claims),
                       embedded=result["embedded"], embeddings_reused=result["embeddings_reused"],
                       gate_secs=round(time.monotonic() - t_embed, 3))
        summary["sessions"] = len(digests)
        meta = {"summarize_mode": cfg.summarize_mode, "embedder": emb[0] if emb else "none"}
        if emb and emb[0] in embed.RELEVANCE_FLOORS:
            meta.update(relevance_floor=embed.RELEVANCE_FLOORS[emb[0]],
                        relevance_floor_mixed=embed.RELEVANCE_FLOORS_MIXED[emb[0]])
        from lib import handoffs as handoffmod

        notes = handoffmod.load_recent(store, cfg.fleet_id, now=now())
        summary["handoffs"] = len(notes)
        data = snapshot.build(cfg.fleet_id, digests, claims, meta=meta, handoffs=notes)
        renew.tick()
        stats = _retention(cfg, store, lake_state, log, now, summary)
        renew.tick(force=True)  # still ours right before the swap; the pointer epoch fences the rest
        summary["snapshot"] = snapshot.publish(store, cfg.fleet_id, data, maint_epoch=lease["epoch"],
                                               built_at=format_time(now()), claim_count=len(claims),
                                               session_count=len(digests), lake_stats=stats, intact=intact,
                                               log=log)
        summary["retention"]["snapshot_blobs"] = retention.snapshot_blobs(store, cfg.fleet_id, cfg.lake.snapshot_keep_hours,
                                                                          now(), log)
    except (leases.Lost, leases.Unsafe, snapshot.StaleEpoch, lake.Fenced) as exc:
        # Fenced off: another maint took the lease (it lapsed while we worked) and may already
        # have published with a higher epoch. Stop without touching the pointer.
        log("maint_fenced_lost", epoch=lease["epoch"], error=str(exc)[:300])
        summary.update(fenced=True, message=f"maintenance lease lost while working (epoch {lease['epoch']}): {exc}")
    finally:
        try:
            leases.release(store, key, holder=holder)
        except leases.Unsafe as exc:  # turned unsafe mid-pass (periodic probe): the lease expires by TTL
            log("maint_refused", reason=exc.reason, detail="maintenance lease left to expire: " + str(exc))
    return summary


def run_process(log=None, *, capture_stderr: bool = False) -> tuple[dict | None, str, int]:
    """One maintenance pass as its own process: ``maint.py --once --json`` beside ``lib/``, with
    this process's environment (so its config and store). Returns ``(summary, stderr, returncode)``:
    ``summary`` is the pass's JSON summary or ``None`` when it printed none (it crashed or could
    not start; with ``log`` given, ``maint_failed`` is logged then). Its JSON log lines share this
    process's stderr unless ``capture_stderr`` (then they come back as ``stderr``, text)."""
    import subprocess

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "maint.py")
    log = log or (lambda *a, **k: None)
    try:
        r = subprocess.run([sys.executable, script, "--once", "--json"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           stderr=subprocess.PIPE if capture_stderr else None)
    except OSError as exc:
        log("maint_failed", error=f"cannot start {script}: {exc}"[:300])
        return None, str(exc), 127
    err = r.stderr.decode("utf-8", "replace") if capture_stderr else ""
    try:
        return json.loads(r.stdout.decode("utf-8").strip().splitlines()[-1]), err, r.returncode
    except (ValueError, IndexError):
        log("maint_failed", error=f"maint.py --once exited {r.returncode} without a summary (its error is logged above)")
        return None, err, r.returncode


def migrate(args, cfg, out) -> int:
    """``ctxlake migrate [--json]``: move the compacted lake from the old ``gen=<hash>`` layout into
    the fleet's Delta table, once, by running one maintenance pass (:func:`run_process`) when any
    old object is left (docs/lake.md "Migration"); prints ``{"fleet", "migrated", "pending_before",
    "table_version", "already_done"}`` with ``--json``, else one line; returns the exit code.
    :raises lib.failures.Failure: ``store`` (the pass failed or the table is unreadable; nothing
    old deleted), ``refused`` (another pass holds the maintenance lease)."""
    from lib.failures import Failure

    from lib import lake
    from lib.store import open_store

    store = open_store(cfg.store, live=cfg.live_store)
    pending = len(lake.legacy_keys(store, cfg.fleet_id))
    report = {"fleet": cfg.fleet_id, "pending_before": pending, "migrated": 0, "already_done": not pending}
    if pending:
        # maint.py's own process, like syncd's; its log lines are not ours to print
        summary, err, code = run_process(capture_stderr=True)
        if summary is None:
            why = (err.strip().splitlines() or [f"exit {code}"])[-1]
            raise Failure("store", f"migrate: the maintenance pass failed ({why[:300]}); nothing of the old layout "
                                   "was deleted, run it again once that is fixed") from None
        if not summary.get("ran"):
            raise Failure("refused", f"migrate: {summary.get('message')}; the pass holding the maintenance lease migrates "
                                "the lake itself — run `ctxlake migrate` again after it to check")
        if summary.get("lake_error") or summary.get("fenced"):
            raise Failure("store", f"migrate: the lake was not migrated ({summary.get('lake_error') or summary.get('message')}); "
                                   "nothing of the old layout was deleted, run it again once that is fixed")
        report["migrated"] = summary.get("migrated") or 0
    try:
        table = lake.open_table(store, cfg.fleet_id)
    except lake.TableError as exc:
        raise Failure("store", f"migrate: {exc}") from None
    report["table_version"] = table.version() if table is not None else None
    if args.json:
        out.write(json.dumps(report, sort_keys=True) + "\n")
    elif report["already_done"]:
        out.write(f"migrate: nothing to migrate for fleet {cfg.fleet_id}: no gen=<hash> layout left "
                  f"(Delta table version {report['table_version']})\n")
    else:
        out.write(f"migrate: fleet {cfg.fleet_id}: the gen=<hash> layout is in the Delta table "
                  f"(version {report['table_version']}); {report['migrated']} old object(s) deleted\n")
    return 0
