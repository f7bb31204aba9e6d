"""syncd's live-plane pass: heartbeats, roster, lease requests and renewals (docs/design.md §9).

Where it sits: one :class:`LivePlane` per syncd process, run once per pass after shipping
(syncd feeds it every shipped envelope through :meth:`LivePlane.observe`). Each pass:

1. which sessions of this fleet are open or ended (:func:`lib.live.activity.scan_spool`);
2. the store clock, once (every age and expiry below is judged by it — invariant 6);
3. lease requests from the MCP spool (``lease_request`` / ``lease_release``, own offsets via
   :func:`lib.spool.consume_records`) applied with the same CAS code as ``ctxlake lease`` and maint
   (:func:`lib.live.leases.hold`, :func:`lib.live.leases.release`); the outcome of each is kept by
   ``record_id``;
4. leases held for this host's agents renewed every ttl/5 while their session is open
   (:class:`lib.live.leases.Renewer`, the renewer maint uses for its lease too),
   released when it ends;
5. heartbeats written every ``heartbeat_secs`` (and at once when an agent joins or switches
   session), carrying forward what did not change; deleted when the agent's sessions end,
   with the roster edited at once so the agent disappears then, not after the TTL;
6. the roster read (conditional GET), rebuilt when due (``roster_secs`` + jitter, :func:`lib.live.presence.maybe_rebuild`);
7. the fleet's leases listed; ``cache/<fleet>/roster.json`` and ``leases.json`` written
   atomically.

When the store cannot be reached both cache files keep their last content and say so
(``stale_since``, ``error``; ``refreshed_at`` stays the last good refresh). The pass state
(sessions seen, heartbeats written, leases renewed here, request outcomes, the roster's etag)
lives in ``spool/.state/live/<fleet>.json`` so ``syncd --once`` runs carry it forward.
"""
from __future__ import annotations

import json
import os
import random
import time

from lib import cache_view, clock, mcp_records
from lib.live import activity, leases, presence
from lib.sanitize import clean

REQUESTS_KEPT = 500
"""Request outcomes kept in ``leases.json`` (newest); older ones age out after a day."""
REQUESTS_MAX_AGE = 86400
LOST_KEPT = 50
"""Lapsed-lease notices kept in ``leases.json``."""
TOUCH_WINDOW_SECS = 1800
"""A touched file stays in an agent's heartbeat for this long (store clock)."""


class LivePlane:
    """The live plane of one syncd for one fleet.

    :param cfg: :class:`lib.config.Config` (fleet, paths, ``sync.*`` intervals, ``leases.ttl_secs``).
    :param log: ``log(event, **fields)``.
    :param clock: this host's clock (spool mtimes and cache ``refreshed_at`` only; decisions use
        the store clock).
    :param rand: ``random.random``-like source for the roster jitter.
    """

    def __init__(self, cfg, log, *, clock=None, rand=random.random):
        self.cfg, self.log, self.rand = cfg, log, rand
        self.clock = clock or (lambda: time.time())
        self.fleet = cfg.fleet_id
        self.lease_cache: dict = {}
        self.lease_view: list = []
        self.lease_view_time: float | None = None
        self.state = self._load()
        self.activity = activity.Activity(self.fleet, self.state["sessions"])

    # -- state ---------------------------------------------------------------------------
    def _load(self) -> dict:
        base = {"sessions": {}, "agents": {}, "held": {}, "requests": {}, "lost": [], "roster": {},
                "stale_since": None}
        try:
            with open(self.cfg.paths.live_state(self.fleet), "rb") as fh:
                data = json.loads(fh.read())
        except FileNotFoundError:
            return base
        except (OSError, ValueError, RecursionError) as exc:
            self.log("live_state_unreadable", error=str(exc)[:200], detail="starting from an empty live state")
            return base
        if isinstance(data, dict):
            for k, v in base.items():
                if k in data and (isinstance(data[k], type(v)) or (v is None and isinstance(data[k], (int, float)))):
                    base[k] = data[k]
        # entries are objects (anything else is a state file damaged by hand or by a bug: dropped)
        for k in ("sessions", "agents", "held", "requests"):
            base[k] = {ek: ev for ek, ev in base[k].items() if isinstance(ev, dict)}
        base["lost"] = [e for e in base["lost"] if isinstance(e, dict)]
        if base["stale_since"] is not None and leases.epoch_secs(base["stale_since"]) is None:
            base["stale_since"] = None
        return base

    def _save(self) -> None:
        from lib.spool import atomic_write

        self.state["sessions"] = self.activity.sessions
        atomic_write(self.cfg.paths.live_state(self.fleet), json.dumps(self.state, sort_keys=True).encode())

    def observe(self, runtime: str, lines: list[bytes]) -> None:
        """Raw spool lines of a batch syncd just shipped (see :func:`lib.live.activity.observe_lines`)."""
        activity.observe_lines(self.activity, runtime, lines)

    # -- the pass --------------------------------------------------------------------------
    def run(self, store) -> dict:
        """One live-plane pass against ``store``; returns a summary dict (``live_error`` set
        when the store failed — the caches then say they are stale)."""
        cfg = self.cfg
        summary = {"live_agents": 0, "heartbeats": 0, "lease_requests": 0, "renewed": 0, "released": 0,
                   "leases": 0, "roster": None}
        local = self.clock()
        try:
            open_keys, ended = activity.scan_spool(cfg.paths, self.fleet, self.activity,
                                                   idle_secs=cfg.sync.session_idle_secs, local_now=local)
            now = store.clock()
            offset = clock.offset(now, local)
            leases.require_conditional(store, leases.leases_prefix(self.fleet), log=self.log)
            self._requests(store, now, open_keys, summary)
            self._renewals(store, now, open_keys, ended, summary)
            upserts, removals = self._heartbeats(store, now, offset, open_keys, summary)
            current = self._roster(store, upserts, removals, summary)
            records, lnow = leases.list_leases(store, self.fleet, cache=self.lease_cache, log=self.log)
            self.lease_view, self.lease_view_time = records, lnow
            held = sorted((r for r in records if leases.is_live(r, lnow)), key=lambda r: (str(r.get("repo")), str(r.get("path"))))
            summary["leases"] = len(held)
            self._write_caches(current, removals, held, clock.offset(lnow, self.clock()))
            activity.forget(self.activity, ended)
            if self.state.get("stale_since"):
                self.log("live_view_recovered", stale_secs=round(self.clock() - self.state["stale_since"], 1))
            self.state["stale_since"] = None
        except leases.Unsafe as exc:  # the store ignores conditional writes: grant nothing, say so
            self._refuse(exc.reason, summary)
            activity.forget(self.activity, ended)
        except Exception as exc:  # store outage (or a bug): keep the last view, say how old it is
            from lib.failures import disk_refusal

            summary["live_error"] = f"{type(exc).__name__}: {exc}"[:300]
            summary["disk_error"] = disk_refusal(exc)
            self.log("live_pass_failed", error=summary["live_error"])
            self.state["stale_since"] = self.state.get("stale_since") or local
            self._write_stale(summary["live_error"])
        finally:
            try:
                self._save()
            except OSError as exc:  # a full disk must not stop syncd; the next pass tries again
                self.log("live_state_write_failed", error=str(exc)[:200])
        return summary

    def _refuse(self, reason: str, summary: dict) -> None:
        """The pass on a store that does not honour conditional writes (:class:`lib.live.leases.Unsafe`):
        nothing is granted, renewed or rebuilt; spooled lease requests are answered ``refused``
        with the reason (so ``fleet_status`` tells the agent), leases this host thought it held
        are forgotten (their records expire by TTL), and both cache views are written empty with
        ``refused`` = the reason, so the hook warns about nothing and ``ctxlake status`` says why.
        Logged once per pass (``live_plane_refused``)."""
        from lib import spool

        summary["live_refused"] = reason
        self.log("live_plane_refused", reason=reason, detail=str(leases.Unsafe(reason)))
        records, commit = spool.consume_records(self.cfg.paths.mcp_spool(self.fleet),
                                                self.cfg.paths.mcp_consumer_state(self.fleet, "leases"))
        now = self.clock()
        for rec in records:
            rid, agent = rec.get("record_id"), rec.get("agent_id")
            if rec.get("kind") in mcp_records.LEASE_KINDS and isinstance(rid, str) and rid and isinstance(agent, str) and agent:
                self.state["requests"][rid] = {"kind": rec.get("kind"), "agent_id": agent, "applied_at": now,
                                               "outcome": "refused", "error": str(leases.Unsafe(reason))}
                summary["lease_requests"] += 1
        commit()
        self.state["held"] = {}
        self.state["stale_since"] = None
        common = {"store_time": None, "refreshed_at": now, "stale_since": None, "refused": reason}
        views = ((self.cfg.paths.roster(self.fleet), dict(common, agents=[])),
                 (self.cfg.paths.leases(self.fleet), dict(common, leases=[], requests=self.state["requests"],
                                                          lost=self.state["lost"], policy=self.cfg.leases.policy)))
        for path, data in views:
            try:
                cache_view.write(path, data)
            except OSError as exc:
                self.log("live_cache_write_failed", path=os.path.basename(path), error=str(exc)[:200])

    # -- lease requests (MCP spool) -------------------------------------------------------
    def _requests(self, store, now: float, open_keys: set, summary: dict) -> None:
        """Apply this fleet's ``lease_request``/``lease_release`` records from the MCP spool.

        The consumer has its own offsets (``spool/.state/consumers/leases-<fleet>.json``, by
        file identity, :func:`lib.spool.consume_records`), committed only once every record
        read was applied; other kinds (``proposed``, ``handoff``) are left to their consumers
        and nothing here deletes the spool. A store failure mid-batch re-delivers the batch
        next pass: a record whose ``record_id`` already has an outcome is not applied again, and
        a retry of a request (same ``request_key`` from the same agent within
        :data:`lib.live.leases.RETRY_SECS`) gets the first one's outcome (:meth:`_retried`).
        """
        from lib import spool

        records, commit = spool.consume_records(self.cfg.paths.mcp_spool(self.fleet),
                                                self.cfg.paths.mcp_consumer_state(self.fleet, "leases"))
        mine = mcp_records.select(records, mcp_records.LEASE_KINDS)
        if mine and self.lease_view_time is None:  # first pass of this process: a view for the directory check
            self.lease_view, self.lease_view_time = leases.list_leases(store, self.fleet, cache=self.lease_cache, log=self.log)
        for rec in mine:
            retried = self._retried(rec)
            outcome = retried if retried is not None else self._apply(store, rec, now, open_keys)
            if outcome is not None:
                self.state["requests"][rec["record_id"]] = outcome
                self.log("lease_request_retried" if retried is not None else "lease_request_applied", record_id=rec["record_id"], agent=rec.get("agent_id"),
                         kind=rec.get("kind"), outcome=outcome["outcome"])
            summary["lease_requests"] += 1
        commit()
        self._trim_requests(now)

    def _retried(self, rec: dict) -> dict | None:
        """The outcome to report for ``rec`` without touching the store when it is a retry: the
        same ``record_id`` already applied (a re-delivered spool line), or another record of the
        same request (``request_key``, :func:`lib.live.leases.first_request`) from the same agent —
        answered with the first one's outcome plus ``retry_of``. ``None``: apply it."""
        reqs = self.state["requests"]
        rid, key = rec.get("record_id"), rec.get("request_key")
        if not isinstance(rid, str) or not rid:
            return None
        if rid in reqs:
            return reqs[rid]
        if not isinstance(key, str) or not key:
            return None
        mine = [dict(o, record_id=k) for k, o in reqs.items() if o.get("agent_id") == rec.get("agent_id")]
        at = leases.epoch_secs(rec.get("requested_at"))
        first = leases.first_request(mine, key, at) if at is not None else None
        if first is None:
            return None
        out = {k: v for k, v in first.items() if k != "record_id"}
        out.update(retry_of=first["record_id"], requested_at=rec.get("requested_at"))
        return out

    def _trim_requests(self, now: float) -> None:
        reqs = self.state["requests"]
        fresh = {k: v for k, v in reqs.items() if now - float(v.get("applied_at") or 0) <= REQUESTS_MAX_AGE}
        keep = sorted(fresh.items(), key=lambda kv: kv[1].get("applied_at") or 0)[-REQUESTS_KEPT:]
        self.state["requests"] = dict(keep)

    def _session_for(self, agent: str, session_id: str | None, open_keys: set) -> str | None:
        """The live-state key of ``agent``'s session ``session_id`` (or, when not given, of its
        most recently active open session); ``None`` when unknown."""
        sessions = self.activity.sessions
        if session_id:
            return next((k for k, s in sessions.items() if s.get("session_id") == session_id
                         and s.get("agent_id") == agent), None)
        mine = [k for k in open_keys if sessions.get(k, {}).get("agent_id") == agent]
        return max(mine, key=lambda k: sessions[k].get("last_at") or 0) if mine else None

    def _resources(self, rec: dict) -> tuple[list[dict], str | None]:
        """``([{"repo", "path"}], error)`` from a request's ``resources`` (resolved by the MCP
        server in the agent's own working tree) or else its ``paths`` against its ``cwd``."""
        res = rec.get("resources")
        out = []
        if isinstance(res, list) and res:
            for r in res:
                if not isinstance(r, dict) or not isinstance(r.get("rel"), str) or not r["rel"]:
                    return [], "malformed resources entry"
                if not isinstance(r.get("repo"), str) or not r["repo"]:
                    return [], f"not inside a git repository: {clean(str(r.get('path') or r['rel']), 300, True)}"
                out.append({"repo": r["repo"], "path": r["rel"]})
            return out, None
        paths = rec.get("paths")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
            return [], "no paths"
        cwd = rec.get("cwd") if isinstance(rec.get("cwd"), str) else None
        for p in paths:
            where = leases.resolve(p, cwd)
            if where is None:
                return [], f"not inside a git repository: {clean(p, 300, True)}"
            out.append(where)
        return out, None

    def _apply(self, store, rec: dict, now: float, open_keys: set) -> dict | None:
        """Apply one spooled request; returns its outcome, or ``None`` for a record too broken
        to answer (no ``record_id`` or ``agent_id``). Store errors propagate (the record stays
        in the spool and is applied on a later pass: acquire and release are idempotent)."""
        rid, agent, kind = rec.get("record_id"), rec.get("agent_id"), rec.get("kind")
        if not isinstance(rid, str) or not rid or not isinstance(agent, str) or not agent:
            self.log("lease_request_dropped", detail="record without record_id or agent_id")
            return None
        paths = rec.get("paths") if isinstance(rec.get("paths"), list) else None
        base = {"kind": kind, "agent_id": agent, "applied_at": now}
        for f in ("requested_at", "session_id", "request_key"):
            if isinstance(rec.get(f), str):
                base[f] = rec[f]
        if paths is not None:
            base["paths"] = paths
        if rec.get("fleet_id") not in (None, self.fleet):
            return dict(base, outcome="error", error=f"record for fleet {clean(str(rec.get('fleet_id')), 100, True)}")
        if kind == mcp_records.LEASE_REQUEST:
            return self._hold(store, rec, base, now, open_keys)
        return self._release(store, rec, base)

    def _hold(self, store, rec: dict, base: dict, now: float, open_keys: set) -> dict:
        agent = rec["agent_id"]
        resources, error = self._resources(rec)
        if error:
            return dict(base, outcome="error", error=error)
        try:
            ttl = int(rec.get("ttl_secs") or self.cfg.leases.ttl_secs)
        except (TypeError, ValueError):
            ttl = self.cfg.leases.ttl_secs
        ttl = min(leases.TTL_MAX, max(leases.TTL_MIN, ttl))  # the MCP schema refused the rest
        reason = clean(str(rec.get("reason") or ""), 500, True)
        skey = self._session_for(agent, rec.get("session_id") if isinstance(rec.get("session_id"), str) else None, open_keys)
        sid = rec.get("session_id") if isinstance(rec.get("session_id"), str) else (
            self.activity.sessions[skey]["session_id"] if skey else None)
        try:
            records = leases.hold(store, self.fleet, resources, holder=agent, session_id=sid, reason=reason, ttl=ttl,
                                 view=self.lease_view, view_time=self.lease_view_time, log=self.log)
        except leases.Refused as exc:
            r = exc.record
            return dict(base, outcome="refused", holder=r.get("holder"), reason=r.get("reason"),
                        expires_at=r.get("expires_at"), path=r.get("path"), repo=r.get("repo"), message=str(exc))
        for r in records:
            self._view_put(leases.lease_key(self.fleet, r["resource"]), r)
            self.state["held"][leases.lease_key(self.fleet, r["resource"])] = {
                "resource": r["resource"], "repo": r["repo"], "path": r["path"], "agent_id": agent,
                "session_key": skey, "ttl": ttl, "reason": reason, "renewed_at": r["updated_at"],
                "expires_at": r["expires_at"], "epoch": r["epoch"]}
        return dict(base, outcome="granted", expires_at=min(r["expires_at"] for r in records),
                    leases=[{"repo": r["repo"], "path": r["path"], "expires_at": r["expires_at"], "epoch": r["epoch"]}
                            for r in records])

    def _release(self, store, rec: dict, base: dict) -> dict:
        agent = rec["agent_id"]
        held = self.state["held"]
        if rec.get("all") or not (rec.get("paths") or rec.get("resources")):
            keys = {k for k, h in held.items() if h.get("agent_id") == agent}
            keys |= {r["key"] for r in self.lease_view if r.get("holder") == agent}
        else:
            resources, error = self._resources(rec)
            if error:
                return dict(base, outcome="error", error=error)
            keys = {leases.lease_key(self.fleet, leases.resource_key(r["repo"], r["path"])) for r in resources}
        released = []
        for key in sorted(keys):
            info = held.get(key) or next((r for r in self.lease_view if r.get("key") == key), {})
            rec = leases.release_record(store, key, holder=agent, log=self.log)
            if rec is not None:
                released.append({"repo": info.get("repo"), "path": info.get("path")})
                self._view_put(key, rec)
            held.pop(key, None)
        return dict(base, outcome="released", released=released)

    def _view_put(self, key: str, record: dict) -> None:
        """Keep the in-pass lease view (used by the directory check) current after our writes."""
        self.lease_view = [r for r in self.lease_view if r.get("key") != key] + [dict(record, key=key)]

    # -- renewals ---------------------------------------------------------------------------
    def _renewals(self, store, now: float, open_keys: set, ended: set, summary: dict) -> None:
        sessions = self.activity.sessions
        open_agents = {sessions[k]["agent_id"] for k in open_keys if k in sessions}
        ended_agents = {sessions[k]["agent_id"] for k in ended if k in sessions} - open_agents
        for key, h in sorted(self.state["held"].items()):
            agent, skey = h["agent_id"], h.get("session_key")
            ended_now = (skey in ended) if skey else agent in ended_agents
            renewable = (skey in open_keys) if skey else agent in open_agents
            if ended_now:
                leases.release(store, key, holder=agent, log=self.log)
                self.state["held"].pop(key)
                summary["released"] += 1
                self.log("lease_released_session_ended", key=key, agent=agent, path=h.get("path"))
            elif renewable:
                renewer = leases.Renewer(store, key, holder=agent, ttl=float(h["ttl"]),
                                         renewed_at=float(h.get("renewed_at") or 0), clock=lambda: now, log=self.log)
                try:
                    rec = renewer.tick()
                except leases.Lost as exc:
                    self.state["held"].pop(key)
                    lost = {"agent_id": agent, "repo": h.get("repo"), "path": h.get("path"), "at": exc.now,
                            "now_held_by": (exc.record or {}).get("holder") if leases.is_live(exc.record, exc.now or now) else None}
                    self.state["lost"] = (self.state["lost"] + [lost])[-LOST_KEPT:]
                    self.log("lease_lost", key=key, agent=agent, path=h.get("path"), now_held_by=lost["now_held_by"])
                    continue
                if rec is None:
                    continue  # renewed less than ttl/5 ago
                h.update(renewed_at=rec["updated_at"], expires_at=rec["expires_at"])
                summary["renewed"] += 1
            elif now >= float(h.get("expires_at") or 0):
                self.state["held"].pop(key)  # idle session: left to expire, now expired

    # -- heartbeats ---------------------------------------------------------------------------
    def _heartbeats(self, store, now: float, offset: float, open_keys: set, summary: dict) -> tuple[list, list]:
        from lib.envelope import host_id

        cfg = self.cfg
        fields = activity.summarize(self.activity, open_keys, offset=offset)
        agents = self.state["agents"]
        upserts, removals = [], []
        for agent in sorted(fields):
            f = fields[agent]
            st = agents.get(agent)
            if st and st.get("retired_at") is not None:
                if f["last_at"] <= st["retired_at"]:
                    continue  # retired elsewhere (the fleet operator) and nothing new since
                del agents[agent]  # it is working again: it rejoins
                st = None
            prev = st["heartbeat"] if st else presence.read_heartbeat(store, self.fleet, agent)
            joined = st is None
            switched = not prev or prev.get("session_id") != f["session_id"]
            if not (joined or switched or now - float(st["beat_at"]) >= cfg.sync.heartbeat_secs):
                continue
            if not joined and not switched and f["last_at"] <= float(st.get("activity_at") or 0) \
                    and not presence.heartbeat_exists(store, self.fleet, agent):
                # Idle since the last beat and the heartbeat is gone: someone retired this agent
                # (its pod ended, the operator released its leases and roster entry). Do not bring
                # it back until its session shows new activity.
                st["retired_at"] = f["last_at"]
                self.log("agent_retired_elsewhere", agent=agent, detail="heartbeat deleted by another process; "
                         "not rewritten until the agent shows new activity")
                continue
            touched = presence.merge_touched((prev or {}).get("touched"), f["touched"], now=now, window=TOUCH_WINDOW_SECS)
            changes = {"agent_id": agent, "fleet_id": self.fleet, "runtime": f["runtime"],
                       "host_id": f.get("host_id") or host_id(), "session_id": f["session_id"], "repo": f.get("repo"),
                       "branch": f.get("branch"), "task": f.get("task"), "touched": touched,
                       "paths": presence.paths_of(touched) or None}
            hb = presence.next_heartbeat(prev, changes, now)
            hb.pop("ended", None)
            presence.write_heartbeat(store, self.fleet, hb)
            agents[agent] = {"beat_at": now, "heartbeat": hb, "activity_at": f["last_at"]}
            summary["heartbeats"] += 1
            if joined:
                upserts.append(hb)
                self.log("agent_joined", agent=agent, session_id=f["session_id"])
        for agent in sorted(set(agents) - set(fields)):
            presence.delete_heartbeat(store, self.fleet, agent)
            del agents[agent]
            removals.append(agent)
            self.log("agent_left", agent=agent, detail="no open session: heartbeat deleted")
        summary["live_agents"] = len(fields)
        return upserts, removals

    # -- roster ---------------------------------------------------------------------------------
    def _roster(self, store, upserts: list, removals: list, summary: dict) -> dict | None:
        cfg = self.cfg
        rs = self.state["roster"]
        ttl = cfg.sync.presence_ttl_secs
        data, etag, rnow, modified = presence.read_roster(store, self.fleet, etag=rs.get("etag") if rs.get("data") else None)
        if not modified:
            data = rs.get("data")
        summary["roster"] = "read"
        if upserts or removals:
            edited, tag = presence.edit(store, self.fleet, upserts=upserts, removals=removals, ttl=ttl, log=self.log)
            if edited is not None:
                data, etag = edited, tag
                summary["roster"] = "edited"
        jitter = rs.get("jitter")
        if not isinstance(jitter, (int, float)):
            jitter = self.rand() * presence.REBUILD_JITTER * cfg.sync.roster_secs
        from lib.envelope import host_id

        data, etag, outcome = presence.maybe_rebuild(store, self.fleet, data, etag, rnow, interval=cfg.sync.roster_secs,
                                                   jitter=jitter, ttl=ttl, built_by=f"syncd@{host_id()[7:19]}", log=self.log)
        if outcome != "fresh":
            summary["roster"] = "rebuilt" if outcome == "rebuilt" else "theirs"
            jitter = self.rand() * presence.REBUILD_JITTER * cfg.sync.roster_secs
        self.state["roster"] = {"etag": etag, "data": data, "jitter": jitter}
        return data

    # -- cache ------------------------------------------------------------------------------------
    def _write_caches(self, current: dict | None, removals: list, held: list, offset: float) -> None:

        paths, ttl = self.cfg.paths, self.cfg.sync.presence_ttl_secs
        refreshed = self.clock()
        store_time = refreshed + offset
        mine = {a: s["heartbeat"] for a, s in self.state["agents"].items() if s.get("retired_at") is None}
        gone = set(removals) | {a for a, s in self.state["agents"].items() if s.get("retired_at") is not None}
        entries = [a for a in ((current or {}).get("agents") or [])
                   if isinstance(a, dict) and a.get("agent_id") not in mine and a.get("agent_id") not in gone]
        agents = presence.live_agents(entries + list(mine.values()), store_time, ttl)
        rost = {"agents": agents, "store_time": store_time, "refreshed_at": refreshed, "presence_ttl_secs": ttl,
                "built_at": (current or {}).get("built_at"), "stale_since": None}
        leases = {"store_time": store_time, "refreshed_at": refreshed, "leases": held,
                  "requests": self.state["requests"], "lost": self.state["lost"], "stale_since": None,
                  "policy": self.cfg.leases.policy}
        cache_view.write(paths.roster(self.fleet), rost)
        cache_view.write(paths.leases(self.fleet), leases)

    def _write_stale(self, error: str) -> None:
        """Keep the last roster and lease views, marked ``stale_since`` (local epoch s of the
        first failed refresh) with the ``error``; request outcomes applied before the failure
        are added. ``refreshed_at`` keeps naming the last good refresh."""

        paths = self.cfg.paths
        for path, empty in ((paths.roster(self.fleet), {"agents": []}), (paths.leases(self.fleet), {"leases": []})):
            data = cache_view.read_raw(path)
            if data is None:
                data = dict(empty, refreshed_at=None, store_time=None)
            data.update(stale_since=self.state["stale_since"], error=error)
            if "leases" in empty:
                data.update(requests=self.state["requests"], lost=self.state["lost"])
            try:
                cache_view.write(path, data)
            except OSError as exc:
                self.log("live_cache_write_failed", path=os.path.basename(path), error=str(exc)[:200])
