#!/usr/bin/env python3
"""ctxlake maint: the maintenance job (DESIGN.md §1, §9, §10).

Usage::

    python maint.py --once [--json]

One pass: take the ``_maintenance`` lease (a second concurrent run exits 0 naming the holder) →
for each date partition of the fleet: compact sealed sessions into ``gen=<hash>`` (one row
per ``(session_id, event_id)``, :mod:`lib.identity`) and digest every sealed session whose
digest is missing or older than its segments (one digest per session, over every partition it
reached); an unreadable segment or ``_CURRENT`` is skipped, logged with its key and recorded
under ``quarantine/maint/``, and the rest of the fleet's work goes on → build the
SQLite snapshot → publish it content-addressed with a CAS pointer stamped with our lease epoch →
release the lease. Logs are JSON lines on stderr; the summary goes to stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class LeaseRenewer:
    """Renews the maintenance lease (:func:`lib.live.renew`) when ``tick()`` is called ``ttl/5``
    seconds or more after the last renewal. Cadence only uses the monotonic clock; expiry is
    judged by the store. :raises lib.live.Lost: from ``tick()`` when the lease lapsed or was taken
    (the pass must stop: another maint may be working with a higher epoch). :raises
    lib.live.Unsafe: the periodic probe found the store ignoring conditional writes (stop too)."""

    def __init__(self, store, key, holder, ttl, log):
        self.store, self.key, self.holder, self.ttl, self.log = store, key, holder, ttl, log
        self.last = time.monotonic()
        self.epoch = None

    def tick(self, force: bool = False):
        from lib import live

        if force or time.monotonic() - self.last >= self.ttl / 5:
            rec = live.renew(self.store, self.key, holder=self.holder, ttl=self.ttl, log=self.log)
            if rec["epoch"] != self.epoch:
                raise live.Lost(rec)
            self.last = time.monotonic()


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


def _session_envelopes(store, seg_keys: list[str], log, bad: list) -> list[dict]:
    """The session's envelopes from its segments, one per identity (:func:`lib.identity.dedupe`:
    the session's own copies only, so a record another session copied stays in both). A segment
    that cannot be read or decoded is skipped, named in one log line and listed in ``bad``."""
    from lib import identity, lake
    from lib.store import NotFound

    envs = []
    for key in sorted(seg_keys):
        try:
            envs.extend(lake.decode(store.get(key).data))
        except NotFound:
            continue
        except Exception as exc:  # garbage, truncated or foreign bytes: skip it, keep the fleet going
            log("segment_unreadable", key=key, error=f"{type(exc).__name__}: {exc}"[:300])
            bad.append({"key": key, "error": f"{type(exc).__name__}: {exc}"[:300]})
    return identity.dedupe(envs)


def _quarantine_bad(store, fleet: str, bad: list, now) -> None:
    """Record each unreadable object once under ``quarantine/maint/fleet=<f>/`` (create-only;
    the object itself is left where it is, for an operator to inspect)."""
    from lib import lake
    from lib.envelope import format_time, sha256_hex
    from lib.store import CREATE, PreconditionFailed

    for item in bad:
        key = f"quarantine/maint/fleet={lake.safe_segment(fleet)}/{sha256_hex(item['key'])[7:39]}.json"
        try:
            store.put(key, json.dumps({**item, "recorded_at": format_time(now())}, sort_keys=True).encode(), CREATE)
        except PreconditionFailed:
            pass


def run_once(cfg, store, log, now=time.time) -> dict:
    """One maintenance pass; returns a summary dict (see module docstring)."""
    from lib import digest as digestmod
    from lib import lake, live, snapshot
    from lib.envelope import format_time
    from lib.store import CREATE, NotFound, PreconditionFailed, update

    holder = f"maint@{socket.gethostname()}:{os.getpid()}"
    key = live.lease_key(cfg.fleet_id, live.MAINTENANCE)
    ttl = cfg.leases.ttl_secs
    try:
        lease = live.acquire(store, key, holder=holder, reason="maintenance", ttl=ttl, resource=live.MAINTENANCE,
                             floor_epoch=snapshot.pointer_epoch(store, cfg.fleet_id), log=log)
    except live.Refused as exc:
        log("maint_skipped", holder=exc.holder, expires_at=exc.expires_at)
        return {"ran": False, "held_by": exc.holder, "expires_at": exc.expires_at, "message": str(exc)}
    except live.Unsafe as exc:  # no maintenance lease on a store that ignores conditional writes
        log("maint_refused", reason=exc.reason, detail=str(exc))
        return {"ran": False, "refused": exc.reason, "message": str(exc)}
    renew = LeaseRenewer(store, key, holder, ttl, log)
    renew.epoch = lease["epoch"]
    summary = {"ran": True, "maint_epoch": lease["epoch"], "partitions": 0, "compacted": 0, "rows_out": 0,
               "digested": 0, "sessions": 0, "snapshot": None}
    try:
        digests = []
        bad: list = []
        scan = _scan_sessions(store, cfg.fleet_id)
        groups: dict = {}  # one session across date partitions: its sealed prefixes, oldest first
        for dt in sorted(scan):
            for p, s in scan[dt].items():
                if s["sealed"]:
                    groups.setdefault(_session_key(p), []).append(p)
        segs_of = {p: s["segs"] for dt in scan for p, s in scan[dt].items()}
        for dt in sorted(scan):
            sealed = {p: s for p, s in scan[dt].items() if s["sealed"]}
            if not sealed:
                continue
            summary["partitions"] += 1
            # a session whose events reached several partitions is compacted as one: each
            # partition keeps the winners dated in it, so its generation covers all of them
            gsegs = {p: [k for q in groups[_session_key(p)] for k in segs_of[q]] for p in sealed}
            gen = lake.generation(gsegs)
            ckey = lake.current_key(cfg.fleet_id, dt)
            try:
                cur_obj = store.get(ckey)
                cur_etag = cur_obj.etag
                cur = json.loads(cur_obj.data)
                if not isinstance(cur, dict):
                    raise ValueError("not a JSON object")
            except NotFound:
                cur, cur_etag = {}, None
            except ValueError as exc:  # garbage or truncated: rebuilt below, replaced by CAS
                log("compaction_pointer_unreadable", key=ckey, error=str(exc)[:200])
                bad.append({"key": ckey, "error": f"unreadable _CURRENT: {exc}"[:300]})
                cur = {}
            cur_epoch = cur.get("maint_epoch")
            if not isinstance(cur_epoch, int) or isinstance(cur_epoch, bool):
                cur_epoch = 0
            if cur_epoch > lease["epoch"]:
                # Either a later maint took the lease (then renewing fails: we are fenced) or the
                # epoch was never issued by any lease (we still hold it: refuse it, rebuild).
                renew.tick(force=True)
                log("compaction_pointer_epoch_refused", key=ckey, epoch=cur_epoch, lease_epoch=lease["epoch"])
                bad.append({"key": ckey, "error": f"maint epoch {cur_epoch} no lease issued (lease at {lease['epoch']})"})
                cur = {}
            need_compact = cur.get("gen") != gen
            writer = lake.PartWriter(store, cfg.fleet_id, dt, gen) if need_compact else None
            for prefix in sorted(sealed):
                renew.tick()
                s = sealed[prefix]
                group = groups[_session_key(prefix)]
                owner = group[0] == prefix  # the session's digest lives in its first partition
                sources = lake.generation({p: segs_of[p] for p in group})
                d = None
                if owner and s["digest"]:
                    try:
                        d = json.loads(store.get(lake.digest_key(prefix)).data)
                        if d.get("schema_version") != digestmod.DIGEST_SCHEMA_VERSION or d.get("sources") != sources:
                            d = None
                    except (NotFound, ValueError, AttributeError):
                        d = None
                envs = None
                if writer:
                    envs = _session_envelopes(store, gsegs[prefix], log, bad)
                    writer.add([e for e in envs if e["emitted_at"][:10] == dt] if len(group) > 1 else envs)
                if owner and d is None:
                    if envs is None:
                        envs = _session_envelopes(store, gsegs[prefix], log, bad)
                    if envs:
                        d = digestmod.digest(envs)
                        d["sources"] = sources
                        store.put(lake.digest_key(prefix), json.dumps(d, sort_keys=True).encode())
                        summary["digested"] += 1
                if d:
                    digests.append(d)
            if writer:
                parts = writer.close()
                pointer = {"gen": gen, "parts": parts, "rows": writer.rows, "sessions": len(sealed),
                           "built_at": format_time(now()), "maint_epoch": lease["epoch"]}
                try:
                    store.put(ckey, json.dumps(pointer, sort_keys=True).encode(),
                              update(cur_etag) if cur_etag else CREATE)
                except PreconditionFailed:
                    log("compaction_pointer_race_lost", key=ckey)
                summary["compacted"] += 1
                summary["rows_out"] += writer.rows
                log("partition_compacted", key=ckey, gen=gen, parts=len(parts), rows=writer.rows, sessions=len(sealed))
        if bad:
            _quarantine_bad(store, cfg.fleet_id, bad, now)
            summary["quarantined"] = sorted({b["key"] for b in bad})
        renew.tick()
        from lib import embed, gate

        emb = embed.default_embedder()
        result = gate.run(store, cfg.fleet_id, digests, mode=cfg.summarize_mode, embedder=emb, log=log)
        claims = result["claims"]
        summary.update(promoted=result["promoted"], contested=result["contested"], claims=len(claims))
        summary["sessions"] = len(digests)
        meta = {"summarize_mode": cfg.summarize_mode, "embedder": emb[0] if emb else "none"}
        if emb and emb[0] in embed.RELEVANCE_FLOORS:
            meta.update(relevance_floor=embed.RELEVANCE_FLOORS[emb[0]],
                        relevance_floor_mixed=embed.RELEVANCE_FLOORS_MIXED[emb[0]])
        from lib import handoffs as handoffmod

        notes = handoffmod.load_recent(store, cfg.fleet_id, now=now())
        summary["handoffs"] = len(notes)
        data = snapshot.build(cfg.fleet_id, digests, claims, meta=meta, handoffs=notes)
        renew.tick(force=True)  # still ours right before the swap; the pointer epoch fences the rest
        summary["snapshot"] = snapshot.publish(store, cfg.fleet_id, data, maint_epoch=lease["epoch"],
                                               built_at=format_time(now()), claim_count=len(claims),
                                               session_count=len(digests), log=log)
    except (live.Lost, live.Unsafe, snapshot.StaleEpoch) as exc:
        # Fenced off: another maint took the lease (it lapsed while we worked) and may already
        # have published with a higher epoch. Stop without touching the pointer.
        log("maint_fenced_lost", epoch=lease["epoch"], error=str(exc)[:300])
        summary.update(fenced=True, message=f"maintenance lease lost while working (epoch {lease['epoch']}): {exc}")
    finally:
        try:
            live.release(store, key, holder=holder)
        except live.Unsafe as exc:  # turned unsafe mid-pass (periodic probe): the lease expires by TTL
            log("maint_refused", reason=exc.reason, detail="maintenance lease left to expire: " + str(exc))
    return summary


def main(argv=None, stdout=None) -> int:
    """``maint.py --once [--json]``: one maintenance pass. Exit 0 also when another run holds the
    lease; exit 1 when the store does not honour conditional writes (no maintenance lease there)."""
    from lib import config, logs
    from lib.store import open_store

    p = argparse.ArgumentParser(prog="maint.py", description="ctxlake maintenance: compaction, digests, snapshot.")
    p.add_argument("--once", action="store_true", help="one pass, then exit (the only mode; a CronJob repeats it)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    out = stdout or sys.stdout
    cfg = config.load()
    log = logs.setup("maint", fleet_id=cfg.fleet_id)
    store = open_store(cfg.store, log=log, live=cfg.live_store)
    log("maint_start", store=store.url)
    summary = run_once(cfg, store, log)
    if args.json:
        out.write(json.dumps(summary, sort_keys=True) + "\n")
    elif summary.get("refused"):
        out.write(f"maint: refused: {summary['message']}\n")
    elif not summary["ran"]:
        out.write(f"maintenance skipped: {summary['message']}\n")
    elif summary.get("fenced"):
        out.write(f"maintenance stopped: {summary['message']}\n")
    else:
        snap = summary["snapshot"] or {}
        out.write(f"maint: {summary['partitions']} partition(s), {summary['compacted']} compacted "
                  f"({summary['rows_out']} rows), {summary['digested']} new digest(s), "
                  f"snapshot {str(snap.get('sha256'))[:12]} ({snap.get('reason')}), "
                  f"{summary['sessions']} session(s), epoch {summary['maint_epoch']}\n")
    return 1 if summary.get("refused") else 0


if __name__ == "__main__":
    sys.exit(main())
