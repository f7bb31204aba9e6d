"""Advisory leases by compare-and-swap on the store (docs/design.md §9).

Where it sits: agents ask for leases through the MCP spool and syncd applies them
(:mod:`lib.live.sync`); ``ctxlake lease`` and ``maint.py`` (the ``_maintenance`` lease) call the
same functions directly; the hook reads the cached view (:func:`read_view`,
:func:`conflicts_for_paths`) and never the store.

Decisions are pure functions of (current record, store time, caller) — :func:`decide_acquire`,
:func:`decide_renew`, :func:`decide_release` — tested without a store or a clock (docs/design.md §14).
The I/O shell (:func:`acquire`, :func:`renew`, :func:`release`) reads, decides and writes with
create-only (absent) or ``If-Match`` (present), re-reading after a lost race. Expiry is judged
by the store's clock (``server_time`` of the response that carried the record), never the local
one (invariant 6), so a host whose clock is off decides exactly like one whose clock is right.

Leases are advisory: ctxlake warns (or denies through the runtime's own hook answer); it cannot
stop a process from writing a file, and git is the arbiter of code (invariant 5).

Lease record (``live/<fleet>/leases/<resource_key>.json``)::

    {"resource": resource_key, "repo": repo_id|null, "path": repo-relative path ("dir/" holds
     a directory), "holder": agent_id|null, "session_id", "reason", "acquired_at",
     "expires_at", "updated_at" (store-clock epoch s of the last write), "epoch" (fencing
     counter: +1 per acquisition, kept on renew and release), "released_at"?}

A record that is not JSON or lacks these shapes is *garbage*: treated as free, logged
(``lease_garbage``) and overwritten by CAS. Nothing here imports ``json`` or ``hashlib`` at
module load: the hook's write-tool answer path imports this module (docs/design.md §12).
"""
from __future__ import annotations

import time

from lib.clock import parse_time, view_now
from lib.keys import lease_key, leases_prefix

ADVISORY_NOTE = "Leases are advisory: ctxlake cannot stop a write; git decides what lands."
MAINTENANCE = "_maintenance"
DEFAULT_TTL = 300
TTL_MIN, TTL_MAX = 30, 86400
"""The lease lifetimes (seconds, store clock) an agent or a user may ask for: at least
30 s (a renewal every ttl/5 must outpace a syncd pass), at most a day (a crashed holder must
not block a path for longer). One rule: ``fleet_claim``'s schema and ``ctxlake lease acquire
--ttl`` refuse anything outside; syncd clamps a spooled request into it."""


def resource_key(repo_id: str | None, path: str) -> str:
    """sha256 hex of ``repo_id \\0 path`` (docs/design.md §9); ``repo_id`` None counts as ``""``."""
    import hashlib

    return hashlib.sha256(f"{repo_id or ''}\0{path}".encode("utf-8")).hexdigest()


def epoch_secs(value) -> float | None:
    """Epoch seconds of a time in a record ctxlake writes in seconds (a lease's ``expires_at``,
    a request's ``requested_at``): :func:`lib.clock.parse_time` without the milliseconds
    reading. ``None`` when it holds no time."""
    return parse_time(value, millis=False)


def is_live(record: dict | None, now: float) -> bool:
    """True when ``record`` has a holder and ``expires_at`` is after ``now`` (store clock).

    The one expiry rule of the live plane (invariant 6): every reader of lease state — the CAS
    decisions here, ``ctxlake lease list``, ``ctxlake status``, the hook, ``fleet_status`` and
    ``/metrics`` — calls this (through :func:`unexpired` for cached views)."""
    if not isinstance(record, dict) or not isinstance(record.get("holder"), str) or not record["holder"]:
        return False
    exp = epoch_secs(record.get("expires_at"))
    return exp is not None and exp > now


def unexpired(records, now: float) -> list[dict]:
    """The held, unexpired leases among ``records`` at store time ``now`` (:func:`is_live`), each
    copied with ``expires_in_secs`` (int, store clock); anything not a dict is skipped."""
    return [dict(r, expires_in_secs=int(epoch_secs(r.get("expires_at")) - now))
            for r in (records if isinstance(records, list) else []) if is_live(r, now)]


def view_leases(view: dict, local_now: float | None = None) -> list[dict]:
    """:func:`unexpired` leases of a cached view (``cache/<fleet>/leases.json`` as a dict) now,
    by the store clock estimated with :func:`view_now`."""
    return unexpired(view.get("leases") if isinstance(view, dict) else None, view_now(view, local_now))


def valid_record(data) -> bool:
    """Hand check of a lease record's shape (garbage is treated as a free lease)."""
    return (isinstance(data, dict) and isinstance(data.get("epoch"), int) and not isinstance(data.get("epoch"), bool)
            and (data.get("holder") is None or isinstance(data.get("holder"), str))
            and isinstance(data.get("expires_at", 0), (int, float)))


def covers(lease_path: str, path: str) -> bool:
    """True when a lease on ``lease_path`` covers ``path``: the same path, or ``lease_path`` is a
    directory (trailing ``/``) above it. Both repo-relative with ``/`` separators."""
    return lease_path in (path, "/") or (lease_path.endswith("/") and path.startswith(lease_path))


class Refused(Exception):
    """The lease is held by someone else: ``record`` (the holder's record as read), ``holder``,
    ``reason``, ``expires_at``, ``epoch`` and ``now`` (store time the refusal was decided at)."""

    def __init__(self, record: dict, now: float | None = None):
        self.record = record
        self.now = now
        self.holder = record.get("holder")
        self.reason = record.get("reason") or ""
        self.expires_at = record.get("expires_at")
        self.epoch = record.get("epoch")
        super().__init__(refusal_message([record], now))


class Lost(Exception):
    """A renewal found the lease no longer ours (expired, released or taken): ``record`` is
    what the store holds now (``None`` if absent or garbage), ``now`` the store time."""

    def __init__(self, record: dict | None, now: float | None = None):
        self.record, self.now = record, now
        who = (record or {}).get("holder")
        super().__init__(f"lease lost: now {'held by ' + who if who else 'free or expired'}")


class Unsafe(Exception):
    """The store does not honour conditional writes, so no lease, roster or maintenance lease is
    granted or taken on it (docs/design.md §8, §9). ``reason`` says which condition it ignored.

    Raised by every lease write (:func:`acquire`, :func:`renew`, :func:`release`, :func:`hold`)
    and by the roster's CAS writes (:mod:`lib.live.presence`) through :func:`require_conditional`."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"store does not honour conditional writes ({reason}): leases, roster and the maintenance "
                         "lease are refused on it; run `ctxlake doctor`, then use a store that honours "
                         "If-None-Match/If-Match (or set live_store to one)")


PROBE_ROUNDS = 3
"""Probe rounds run the first time a process writes a lease to a store (a store that honours
conditions only sometimes gets several chances to show it)."""
PROBE_SECS = 300
"""One more probe round at most this often (monotonic seconds) while the store is trusted."""

_VERDICTS: dict = {}
_VERDICTS_LOCK = None


def probe_key(key: str) -> str:
    """The probe object for live-plane key ``key`` (``live/<fleet>/...``): ``live/<fleet>/_probe.json``,
    under ``live/`` so a routed store probes the backend that holds the leases (``live_store``)
    and inside the fleet's prefix the roles may already write (docs/security.md)."""
    parts = key.split("/")
    return f"{parts[0]}/{parts[1]}/_probe.json" if len(parts) > 2 else f"{parts[0]}/_probe.json"


def probe_round(store, key: str) -> str | None:
    """One probe of the conditional writes leases rely on, against object ``key`` (created when
    absent, then only overwritten — nothing is deleted, so no role needs ``DeleteObject``):
    a create-only write over the existing object must lose (412), a write with the current ETag
    must win, a write with the now-stale ETag must lose. Every body is unique, so ETags that are
    content hashes (S3) differ between versions.

    Several processes may probe one key at once: a concurrent write can only turn an expected
    success into a refusal (read as "honoured", the round proves less), never make the store
    accept a write it had to refuse — so a verdict of "ignored" is never a false alarm.

    :returns: ``None`` when nothing that had to be refused was accepted, else the reason (one line).
    :raises lib.store.Unavailable: the store could not answer (no verdict).

    What it proves: that this store, at this moment, on this key, refused the writes it had to
    refuse. What it cannot prove: that every later conditional write will be honoured — a
    gateway that drops the headers only under load, after a failover or on some keys passes a
    probe it happens not to hit (docs/operations.md, "Conditional writes").
    """
    import json
    import secrets

    from lib.store import CREATE, Conflict, NotFound, PreconditionFailed, update

    def body() -> bytes:
        return json.dumps({"probe": secrets.token_hex(8)}).encode()

    try:
        store.head(key)
    except NotFound:
        try:
            store.put(key, body(), CREATE)
        except (PreconditionFailed, Conflict):
            pass  # another prober created it first
    try:
        store.put(key, body(), CREATE)
        return "If-None-Match: * ignored: a create-only write over an existing object was accepted"
    except (PreconditionFailed, Conflict):
        pass
    current = store.head(key).etag
    try:
        store.put(key, body(), update(current))
    except (PreconditionFailed, Conflict):
        return None  # another prober wrote in between: refused, as an honouring store must
    try:
        store.put(key, body(), update(current))
        return "If-Match ignored: a write against a stale ETag was accepted"
    except (PreconditionFailed, Conflict):
        return None


def require_conditional(store, key: str, *, log=None, rounds: int = PROBE_ROUNDS, every: float = PROBE_SECS,
                        clock=time.monotonic) -> None:
    """Refuse (:class:`Unsafe`) unless ``store`` has been seen honouring conditional writes for
    live-plane key ``key`` (probed at :func:`probe_key`).

    Backends that implement the conditions in this process or by a script of ours (memory, file,
    Redis: ``conditional_writes_native``) are trusted without a probe; S3-compatible stores,
    whose server or gateway decides, are probed. The verdict is kept per store URL and probe key
    for the life of the process: the first call runs ``rounds`` probe rounds
    (:func:`probe_round`), later calls one more round once ``every`` seconds have passed. One
    failed round makes the store unsafe for the rest of the process (a store that ignored a
    condition once is never trusted again; restart after fixing it). ``log(event, **fields)``
    receives ``conditional_writes_probed`` with the outcome.

    :raises Unsafe: the store ignored a condition (now or earlier in this process).
    :raises lib.store.Unavailable: the probe could not reach the store (no verdict recorded).
    """
    global _VERDICTS_LOCK
    if getattr(store, "conditional_writes_native", False):
        return  # memory, file and Redis implement the conditions themselves
    if _VERDICTS_LOCK is None:
        import threading

        _VERDICTS_LOCK = threading.Lock()
    pkey = probe_key(key)
    ident = (getattr(store, "live_url", None) or store.url, store.url, pkey)
    with _VERDICTS_LOCK:
        v = _VERDICTS.get(ident)
        if v is not None and (v["reason"] or clock() - v["probed_at"] < every):
            if v["reason"]:
                raise Unsafe(v["reason"])
            return
        n = rounds if v is None else 1
        reason = None
        for _ in range(n):
            reason = probe_round(store, pkey)
            if reason:
                break
        _VERDICTS[ident] = {"reason": reason, "probed_at": clock()}
        if log:
            log("conditional_writes_probed", honoured=reason is None, rounds=n, reason=reason)
    if reason:
        raise Unsafe(reason)


def conditional_verdict(store, key: str) -> str | None:
    """The reason ``store`` was found unsafe for live-plane key ``key`` in this process, or
    ``None`` (trusted or not probed yet)."""
    v = _VERDICTS.get((getattr(store, "live_url", None) or store.url, store.url, probe_key(key)))
    return v["reason"] if v else None


# -- decisions (pure) -----------------------------------------------------------------------

def decide_acquire(current: dict | None, *, holder: str, session_id: str | None, reason: str,
                   now: float, ttl: float, resource: str, repo: str | None = None,
                   path: str | None = None, floor_epoch: int = 0) -> dict:
    """Next lease record when ``holder`` asks for it at store time ``now`` (epoch s).

    - absent, garbage, free or expired → held by ``holder``, ``epoch = max(epoch,
      floor_epoch) + 1``, ``acquired_at = now``, ``expires_at = now + ttl``;
    - held by ``holder`` and unexpired → renewed (same epoch and ``acquired_at``, new expiry,
      reason and session updated);
    - held by another unexpired holder → :class:`Refused` carrying that record.

    ``floor_epoch`` keeps the fencing counter above a value known from elsewhere (maint passes
    the snapshot pointer's epoch, so a lease object lost to garbage cannot reset fencing).
    """
    if current is not None and not valid_record(current):
        current = None
    if is_live(current, now) and current["holder"] != holder:
        raise Refused(current, now)
    mine = is_live(current, now) and current["holder"] == holder
    epoch = int(current["epoch"]) if current else 0
    out = {
        "resource": resource, "repo": repo, "path": path if path is not None else (current or {}).get("path"),
        "holder": holder, "session_id": session_id, "reason": reason,
        "acquired_at": current["acquired_at"] if mine else now,
        "expires_at": now + ttl, "updated_at": now,
        "epoch": epoch if mine else max(epoch, int(floor_epoch or 0)) + 1,
    }
    return out


def decide_renew(current: dict | None, *, holder: str, now: float, ttl: float) -> dict:
    """Next record when ``holder`` renews: only a lease ``holder`` holds unexpired at store time
    ``now`` is extended to ``now + ttl`` (epoch, acquired_at, reason kept).

    :raises Lost: absent, garbage, free, expired or held by someone else — a renewal never
        re-acquires, so a lapse is always visible to the caller.
    """
    if current is None or not valid_record(current) or not is_live(current, now) or current["holder"] != holder:
        raise Lost(current if current is not None and valid_record(current) else None, now)
    out = dict(current)
    out.update(expires_at=now + ttl, updated_at=now)
    return out


def decide_release(current: dict | None, *, holder: str, now: float) -> dict | None:
    """Next record when ``holder`` releases: free (``holder`` null), epoch kept, ``expires_at``
    and ``released_at`` = ``now``. ``None`` = nothing to do (absent, garbage, already free, or
    held by someone else — releasing never touches another agent's lease)."""
    if not current or not valid_record(current) or current.get("holder") != holder:
        return None
    out = dict(current)
    out.update(holder=None, released_at=now, expires_at=now, updated_at=now)
    return out


def covering_conflicts(records: list[dict], *, holder: str, repo: str | None, path: str, now: float) -> list[dict]:
    """Unexpired leases in ``records`` held by others that overlap ``(repo, path)``: a directory
    lease above ``path``, or (when ``path`` is a directory) a lease below it. The exact key
    itself is left to the CAS decision. Advisory pre-check: there is no cross-key atomicity."""
    out = []
    for r in records:
        if not isinstance(r, dict) or r.get("repo") != repo or r.get("holder") in (None, holder):
            continue
        lp = r.get("path")
        if not isinstance(lp, str) or lp == path or not is_live(r, now):
            continue
        if covers(lp, path) or covers(path, lp):
            out.append(r)
    return out


# -- I/O shell -------------------------------------------------------------------------------

def _load(obj) -> dict | None:
    import json

    try:
        data = json.loads(obj.data)
    except (TypeError, ValueError):
        return None
    return data if valid_record(data) else None


def _dump(record: dict) -> bytes:
    import json

    return json.dumps(record, sort_keys=True).encode()


def _get(store, key: str, log=None) -> tuple[dict | None, str | None, float]:
    """``(record or None, etag or None, store_time)``; garbage is logged and returned as None
    with its etag (so the CAS that overwrites it is against that exact version)."""
    from lib.store import NotFound

    try:
        obj = store.get(key)
    except NotFound as exc:
        return None, None, exc.server_time or store.clock()
    record = _load(obj)
    if record is None and log:
        log("lease_garbage", key=key, bytes=len(obj.data or b""),
            detail="unparseable lease record treated as free; it will be overwritten by compare-and-swap")
    return record, obj.etag, obj.server_time or store.clock()


def _cas(store, key: str, decide, *, attempts: int, log=None):
    """Read → ``decide(current, now)`` → create-only / If-Match write, retried on a lost race
    (412) or a 409. ``decide`` returns the record to write or ``None`` (nothing to write).
    Returns ``(record_written_or_None, current_read, now)``."""
    import random

    from lib.store import CREATE, Conflict, PreconditionFailed, update

    require_conditional(store, key, log=log)
    for attempt in range(attempts):
        current, etag, now = _get(store, key, log)
        record = decide(current, now)
        if record is None:
            return None, current, now
        try:
            store.put(key, _dump(record), CREATE if etag is None else update(etag))
            return record, current, now
        except PreconditionFailed:
            if log:
                log("lease_race_lost", key=key, attempt=attempt + 1)
        except Conflict:
            if log:
                log("lease_race_lost", key=key, attempt=attempt + 1, conflict=True)
            time.sleep(random.uniform(0, 0.05 * (attempt + 1)))
    raise RuntimeError(f"lease {key}: lost {attempts} compare-and-swap races in a row")


def acquire(store, key: str, *, holder: str, session_id: str | None = None, reason: str = "",
            ttl: float = DEFAULT_TTL, resource: str | None = None, repo: str | None = None,
            path: str | None = None, floor_epoch: int = 0, attempts: int = 8, log=None) -> dict:
    """Acquire or renew the lease at ``key`` by create-only / CAS; returns the record written.

    ``ttl`` in seconds by the store clock. ``log(event, **fields)`` receives ``lease_race_lost``
    per lost race and ``lease_garbage`` when an unreadable record is overwritten.

    :raises Refused: another agent holds it unexpired (carries its record, holder, reason, expiry).
    :raises lib.store.Unavailable: the store is unreachable (nothing was changed).
    :raises RuntimeError: lost ``attempts`` races in a row without a decision (412 storm).
    """
    return acquire_fresh(store, key, holder=holder, session_id=session_id, reason=reason, ttl=ttl,
                         resource=resource, repo=repo, path=path, floor_epoch=floor_epoch,
                         attempts=attempts, log=log)[0]


def acquire_fresh(store, key: str, *, holder: str, session_id: str | None = None, reason: str = "",
                  ttl: float = DEFAULT_TTL, resource: str | None = None, repo: str | None = None,
                  path: str | None = None, floor_epoch: int = 0, attempts: int = 8, log=None) -> tuple[dict, bool]:
    """:func:`acquire`, also telling whether this call took the lease (``True``: new epoch) or
    renewed one ``holder`` already held (``False``)."""
    def decide(current, now):
        return decide_acquire(current, holder=holder, session_id=session_id, reason=reason, now=now, ttl=ttl,
                              resource=resource or key, repo=repo, path=path, floor_epoch=floor_epoch)

    record, current, _ = _cas(store, key, decide, attempts=attempts, log=log)
    return record, not (current and current.get("epoch") == record["epoch"])


def renew(store, key: str, *, holder: str, ttl: float = DEFAULT_TTL, attempts: int = 8, log=None) -> dict:
    """Extend ``holder``'s unexpired lease at ``key`` to store time + ``ttl``; returns the record.

    :raises Lost: the lease is not ``holder``'s any more (expired, released, taken, garbage).
    :raises lib.store.Unavailable: the store is unreachable.
    """
    record, _, _ = _cas(store, key, lambda cur, now: decide_renew(cur, holder=holder, now=now, ttl=ttl),
                        attempts=attempts, log=log)
    return record


RENEW_FRACTION = 5
"""A held lease is renewed once ``ttl / RENEW_FRACTION`` seconds have passed since its last renewal
(docs/design.md §9): four renewals in a row can fail before it lapses."""


def renew_due(renewed_at: float, now: float, ttl: float) -> bool:
    """True when ``ttl / RENEW_FRACTION`` seconds or more passed from ``renewed_at`` to ``now``
    (seconds on one clock: the store's for the leases syncd holds for its agents, the monotonic
    one for a maintenance pass). Cadence only: expiry is judged by the store."""
    return now - renewed_at >= ttl / RENEW_FRACTION


class Renewer:
    """The one lease renewer: keeps ``holder``'s lease at ``key`` held while its holder works.
    :meth:`tick` renews it (:func:`renew`) when :func:`renew_due` says so by ``clock``
    (``time.monotonic`` for a pass; syncd passes the store time it read this pass and the store
    time of the last renewal as ``renewed_at``). With ``epoch`` given, a renewal that finds another
    epoch is a lost lease (fencing: someone else acquired it in between)."""

    def __init__(self, store, key: str, *, holder: str, ttl: float, epoch: int | None = None,
                 renewed_at: float | None = None, clock=time.monotonic, log=None):
        self.store, self.key, self.holder, self.ttl, self.epoch, self.clock, self.log = \
            store, key, holder, ttl, epoch, clock, log
        self.renewed_at = clock() if renewed_at is None else renewed_at

    def tick(self, force: bool = False) -> dict | None:
        """Renew when due (always with ``force``); returns the renewed record, ``None`` when not
        due. :raises Lost: the lease lapsed or was taken, or came back with another epoch (the
        holder must stop: another may be working under a higher epoch). :raises Unsafe: the
        periodic probe found the store ignoring conditional writes (stop too).
        :raises lib.store.Unavailable:"""
        if not force and not renew_due(self.renewed_at, self.clock(), self.ttl):
            return None
        rec = renew(self.store, self.key, holder=self.holder, ttl=self.ttl, log=self.log)
        if self.epoch is not None and rec["epoch"] != self.epoch:
            raise Lost(rec)
        self.renewed_at = self.clock()
        return rec


def release(store, key: str, *, holder: str, attempts: int = 8, log=None) -> bool:
    """Release ``holder``'s lease at ``key`` (CAS to free, epoch kept). True if this call freed
    it; False when there was nothing of ``holder``'s to free.

    :raises lib.store.Unavailable: the store is unreachable.
    """
    return release_record(store, key, holder=holder, attempts=attempts, log=log) is not None


def release_record(store, key: str, *, holder: str, attempts: int = 8, log=None) -> dict | None:
    """:func:`release`, returning the free record written (``None`` when nothing was freed)."""
    record, _, _ = _cas(store, key, lambda cur, now: decide_release(cur, holder=holder, now=now),
                        attempts=attempts, log=log)
    return record


def read(store, key: str, log=None) -> tuple[dict | None, float]:
    """``(record or None, store_time)`` for the lease at ``key`` (garbage reads as None)."""
    record, _, now = _get(store, key, log)
    return record, now


def list_leases(store, fleet_id: str, cache: dict | None = None, log=None) -> tuple[list[dict], float]:
    """Every readable lease record of the fleet (held or free), each with its store ``key``,
    and the store time of the listing: ``([record + {"key"}], now)``.

    ``cache`` (``{key: [etag, record]}``, updated in place) turns repeat reads into conditional
    GETs (``If-None-Match``; a 304 carries no body). Garbage records are logged and skipped.
    :raises lib.store.Unavailable: the store is unreachable.
    """
    from lib.store import NotFound

    cache = {} if cache is None else cache
    out, seen = [], set()
    now = store.clock()
    for entry in store.list(leases_prefix(fleet_id)):
        key = entry.key
        seen.add(key)
        etag, record = (cache.get(key) or (None, None))
        try:
            obj = store.get(key, if_none_match=etag) if etag else store.get(key)
        except NotFound:
            cache.pop(key, None)
            continue
        if obj.modified:
            record = _load(obj)
            if record is None:
                if log:
                    log("lease_garbage", key=key, detail="unparseable lease record; shown as free")
                cache.pop(key, None)
                continue
            cache[key] = [obj.etag, record]
        if obj.server_time:
            now = max(now, obj.server_time)
        out.append(dict(record, key=key))
    for key in [k for k in cache if k not in seen]:
        del cache[key]
    return out, now


def resolve(path: str, cwd: str | None = None) -> dict | None:
    """``{"repo": repo_id, "path": repo-relative path}`` for a path on this host (relative
    paths against ``cwd``): the lease key's parts by :func:`lib.repo.canonical_path` — symlinks,
    ``.``/``..``, repeated ``/`` and (where the file system folds it) case resolved, so every
    spelling of one file is one key; an existing directory or a trailing ``/`` is a directory
    claim (``dir/``), the root ``/``. ``None`` when the path (or a symlink's target) is not inside
    a git repository. Reads ``.git`` only, never runs ``git``."""
    from lib import repo as repomod

    info = repomod.locate(path, cwd)
    return {"repo": info["repo_id"], "path": info["path"]} if info else None


def hold(store, fleet_id: str, resources: list[dict], *, holder: str, session_id: str | None = None,
         reason: str = "", ttl: float = DEFAULT_TTL, view: list[dict] | None = None,
         view_time: float | None = None, log=None) -> list[dict]:
    """Acquire one lease per ``{"repo", "path"}`` in ``resources``, all or nothing.

    Resources are taken in key order; when one is refused, the leases this call newly took are
    released again (renewals of leases ``holder`` already had are kept) and :class:`Refused` is
    raised for the first holder found. ``view`` (records from :func:`list_leases`, read at
    store time ``view_time``) adds the advisory directory check: a lease under another agent's
    directory lease, or a directory lease over another agent's file lease, is refused too.

    :returns: the records written, in the order of ``resources``.
    :raises Refused: see above. :raises lib.store.Unavailable: (leases taken so far are kept
        and reported by the caller's next view; they expire by TTL if never renewed).
    """
    items = sorted(((resource_key(r.get("repo"), r["path"]), r) for r in resources), key=lambda x: x[0])
    taken, done = [], {}
    try:
        for rk, r in items:
            if view:
                now = view_time if view_time is not None else store.clock()
                over = covering_conflicts(view, holder=holder, repo=r.get("repo"), path=r["path"], now=now)
                if over:
                    raise Refused(over[0], now)
            rec, fresh = acquire_fresh(store, lease_key(fleet_id, rk), holder=holder, session_id=session_id,
                                       reason=reason, ttl=ttl, resource=rk, repo=r.get("repo"), path=r["path"], log=log)
            if fresh:
                taken.append(rk)
            done[rk] = rec
    except Refused:
        for rk in taken:
            try:
                release(store, lease_key(fleet_id, rk), holder=holder, log=log)
            except Exception as exc:  # the lease expires by TTL; say so
                if log:
                    log("lease_rollback_failed", resource=rk, error=f"{type(exc).__name__}: {exc}"[:200])
        raise
    return [done[resource_key(r.get("repo"), r["path"])] for r in resources]


# -- messages --------------------------------------------------------------------------------

def _clock(ts) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(float(ts)))
    except (TypeError, ValueError, OverflowError):
        return "?"


def refusal_message(records: list[dict], now: float | None = None) -> str:
    """Agent/human text naming each holder, reason and expiry (UTC, plus minutes left when the
    store time ``now`` is known), ending with the advisory note (invariant 5). Values come from
    the store or the cache, so each is sanitized onto one bounded line (invariant 9)."""
    from lib.sanitize import clean

    parts = []
    for r in records:
        exp = r.get("expires_at")
        when = _clock(exp)
        if now is not None and isinstance(exp, (int, float)):
            left = max(0, int(round((float(exp) - now) / 60)))
            when += f", in {left} min" if left else ", within a minute"
        what = clean(str(r.get("path") or r.get("resource") or "this resource"), 300, True)
        who = clean(str(r.get("holder")), 120, True)
        why = clean(str(r.get("reason") or "no reason given"), 200, True)
        parts.append(f"{what} is held by {who} ({why}) until {when}")
    return "ctxlake: " + "; ".join(parts) + ". " + ADVISORY_NOTE


# -- hook side: the cached lease view -------------------------------------------------------

def read_view(path: str) -> dict:
    """``cache/<fleet>/leases.json`` as a dict; ``{}`` when missing or malformed (fail open)."""
    from lib.cache_view import read_for_hook

    data = read_for_hook(path)
    return data if isinstance(data.get("leases", []), list) else {}


def locate(paths: list[str], cwd: str | None) -> list[tuple[str, str, str]]:
    """``[(given_path, repo_id, repo-relative path)]`` for the paths inside a git repository,
    keyed exactly as leases are (:func:`resolve`)."""
    out = []
    for p in paths:
        where = resolve(p, cwd)
        if where:
            out.append((p, where["repo"], where["path"]))
    return out


def conflicts_for_paths(view: dict, agent_id: str, paths: list[str], cwd: str | None,
                        local_now: float | None = None) -> list[dict]:
    """Leases in ``view`` held by another agent, unexpired, covering any of ``paths``.

    The view's ``store_time``/``refreshed_at`` pair gives the store-clock offset, so expiry is
    judged by the store clock even here (invariant 6). A lease on ``dir/`` covers every path
    below it. Returns the lease dicts with ``path`` set.
    """
    leases = view.get("leases") or []
    if not leases or not paths:
        return []
    now = view_now(view, local_now)
    hits = []
    for _, repo_id, rel in locate(paths, cwd):
        for lease in leases:
            if not isinstance(lease, dict) or lease.get("holder") in (None, agent_id):
                continue
            if not is_live(lease, now) or lease.get("repo") != repo_id:
                continue
            lp = str(lease.get("path") or "")
            if lp and covers(lp, rel):
                hits.append(dict(lease, path=lp))
    return hits


RETRY_SECS = 120
"""An identical lease request (same :func:`request_key`) within this many seconds of the first is
a retry of it (a runtime re-sending a tool call): applied once, answered as the first."""


def request_key(kind: str, agent_id: str, session_id: str | None, resources=None, *, reason: str = "",
                ttl: int | None = None, everything: bool = False) -> str:
    """Identity of a lease request for retry detection: sha256 hex of the kind, agent, session and
    what is asked — the resolved ``resources`` (``{"repo", "rel"|"path"}``, order and duplicates
    ignored, so any spelling of the same paths is the same request), ``reason``, ``ttl`` and
    ``everything`` (release all). Two calls with one key inside :data:`RETRY_SECS` are one request."""
    import hashlib
    import json

    what = sorted({(str(r.get("repo")), str(r.get("rel") if "rel" in r else r.get("path"))) for r in resources or []
                   if isinstance(r, dict)})
    body = json.dumps([kind, agent_id, session_id, what, reason, ttl, bool(everything)], separators=(",", ":"))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def first_request(candidates, key: str, now: float) -> dict | None:
    """The earliest of ``candidates`` (request records or outcomes carrying ``request_key`` and
    ``requested_at``, ISO or epoch s) with ``request_key == key`` requested within
    :data:`RETRY_SECS` before ``now`` (epoch s, the requester's clock); ``None`` if there is none."""
    best = None
    for c in candidates or []:
        if not isinstance(c, dict) or c.get("request_key") != key:
            continue
        at = epoch_secs(c.get("requested_at"))
        if at is None or not (now - RETRY_SECS <= at <= now + RETRY_SECS):
            continue
        if best is None or at < best[0]:
            best = (at, c)
    return best[1] if best else None


def run_cli(args, cfg, out) -> int:
    """``ctxlake lease acquire|release|list [PATH...]`` (``claim``: the old name of ``acquire``), directly on the store with the code syncd
    uses: paths resolve against the current directory's git repository (:func:`resolve`); one line
    per lease to ``out`` (JSON for ``list --json``); returns the exit code.
    :raises lib.failures.Failure: ``usage`` (a path outside a repository, none named), ``refused``
    (another holder, or a store that ignores conditional writes)."""
    import json
    import os

    from lib.failures import Failure
    from lib.store import open_store

    store = open_store(cfg.store, live=cfg.live_store)  # leases live where syncd keeps them
    holder = args.holder or cfg.agent_id
    view, now = list_leases(store, cfg.fleet_id)
    if args.action == "list":
        held = [r for r in view if is_live(r, now)]
        if args.json:
            out.write(json.dumps(held, sort_keys=True) + "\n")
            return 0
        from lib.sanitize import for_terminal as t

        for r in sorted(held, key=lambda r: (str(r.get("repo")), str(r.get("path")))):
            out.write(f"{t(r.get('repo') or '-')}  {t(r.get('path') or r.get('resource'))}  held by {t(r.get('holder'))} "
                      f"({t(r.get('reason') or 'no reason')}), {max(0, int(float(r['expires_at']) - now))} s left, "
                      f"epoch {t(r.get('epoch'))}\n")
        out.write(f"{len(held)} lease(s) held in fleet {t(cfg.fleet_id)}. {ADVISORY_NOTE}\n")
        return 0
    resources = []
    for p in args.paths:
        where = resolve(p, os.getcwd())
        if where is None:
            raise Failure("usage", f"lease: {p} is not inside a git repository (leases are keyed by repository and path)")
        resources.append(where)
    if args.action in ("acquire", "claim"):
        if not resources:
            raise Failure("usage", "lease acquire: name at least one path")
        try:
            records = hold(store, cfg.fleet_id, resources, holder=holder, reason=args.reason or "",
                           ttl=args.ttl or cfg.leases.ttl_secs, view=view, view_time=now)
        except Refused as exc:
            raise Failure("refused", f"lease acquire: {str(exc).removeprefix('ctxlake: ')}") from None
        except Unsafe as exc:
            raise Failure("refused", f"lease acquire: {exc}") from None
        for r in records:
            out.write(f"acquired {r['path']} in {r['repo']} as {holder} until "
                      f"{time.strftime('%H:%M:%SZ', time.gmtime(r['expires_at']))} (epoch {r['epoch']})\n")
        out.write("acquire again to renew before it expires. " + ADVISORY_NOTE + "\n")
        return 0
    keys = ([lease_key(cfg.fleet_id, resource_key(r["repo"], r["path"])) for r in resources] if resources
            else [r["key"] for r in view if r.get("holder") == holder])
    try:
        freed = sum(release(store, k, holder=holder) for k in keys)
    except Unsafe as exc:
        raise Failure("refused", f"lease release: {exc}") from None
    out.write(f"released {freed} lease(s) held by {holder}\n")
    return 0
