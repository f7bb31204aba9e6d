"""Live plane: advisory leases by compare-and-swap on the store (DESIGN.md §9).

Decisions are pure functions of (current record, store time, caller) — :func:`decide_acquire`,
:func:`decide_release` — tested without a store or a clock (STYLE.md §10). The I/O shell
(:func:`acquire`, :func:`release`) reads, decides and writes with create-only or ``If-Match``,
re-reading after a lost race. Expiry is judged by the store's clock (``server_time`` of the
response that carried the record), never the local one (invariant 6).

Leases are advisory: ctxlake warns (or denies through the runtime's own hook answer); it cannot
stop a process from writing a file, and git is the arbiter of code (invariant 5).

Lease record (``live/<fleet>/leases/<resource_key>.json``)::

    {"resource", "repo", "holder": agent_id|null, "session_id", "reason",
     "acquired_at", "expires_at" (store-clock epoch s), "epoch" (fencing counter)}

Only the standard library is imported here (the hook reads lease views through this module).
"""
from __future__ import annotations

import hashlib
import json
import time

ADVISORY_NOTE = "Leases are advisory: ctxlake cannot stop a write; git decides what lands."
MAINTENANCE = "_maintenance"


def resource_key(repo_id: str, path: str) -> str:
    """sha256 hex of ``repo_id \\0 path`` (DESIGN.md §9)."""
    return hashlib.sha256(f"{repo_id}\0{path}".encode("utf-8")).hexdigest()


def lease_key(fleet_id: str, resource: str) -> str:
    """Store key of a lease: ``live/<fleet>/leases/<resource>.json``."""
    from lib.paths import safe_segment

    return f"live/{safe_segment(fleet_id)}/leases/{safe_segment(resource)}.json"


def is_live(record: dict | None, now: float) -> bool:
    """True when ``record`` has a holder and ``expires_at`` is after ``now`` (store clock)."""
    return bool(record and record.get("holder") and float(record.get("expires_at") or 0) > now)


def valid_record(data) -> bool:
    """Hand check of a lease record's shape (garbage is treated as a free lease)."""
    return (isinstance(data, dict) and isinstance(data.get("epoch"), int)
            and (data.get("holder") is None or isinstance(data.get("holder"), str))
            and isinstance(data.get("expires_at", 0), (int, float)))


class Refused(Exception):
    """The lease is held by someone else: ``holder``, ``reason``, ``expires_at``, ``epoch``."""

    def __init__(self, record: dict):
        self.record = record
        self.holder = record.get("holder")
        self.reason = record.get("reason") or ""
        self.expires_at = record.get("expires_at")
        super().__init__(refusal_message([record]))


def decide_acquire(current: dict | None, *, holder: str, session_id: str | None, reason: str,
                   now: float, ttl: float, resource: str, repo: str | None = None) -> dict:
    """Next lease record when ``holder`` asks for it at store time ``now``.

    - absent, free or expired → held by ``holder``, ``epoch + 1``, expires ``now + ttl``;
    - already held by ``holder`` and unexpired → renewed (same epoch, new expiry);
    - held by another unexpired holder → :class:`Refused`.
    """
    if current is not None and not valid_record(current):
        current = None
    if is_live(current, now) and current["holder"] != holder:
        raise Refused(current)
    mine = is_live(current, now) and current["holder"] == holder
    epoch = int(current["epoch"]) if current else 0
    return {
        "resource": resource, "repo": repo, "holder": holder, "session_id": session_id, "reason": reason,
        "acquired_at": current["acquired_at"] if mine else now,
        "expires_at": now + ttl, "epoch": epoch if mine else epoch + 1,
    }


def decide_release(current: dict | None, *, holder: str, now: float) -> dict | None:
    """Next record when ``holder`` releases: free with the epoch kept; ``None`` = nothing to do
    (absent, already free, or held by someone else)."""
    if not current or not valid_record(current) or current.get("holder") != holder:
        return None
    out = dict(current)
    out.update(holder=None, released_at=now, expires_at=now)
    return out


def _load(obj) -> dict | None:
    try:
        data = json.loads(obj.data)
    except (TypeError, ValueError):
        return None
    return data if valid_record(data) else None


def acquire(store, key: str, *, holder: str, session_id: str | None = None, reason: str = "",
            ttl: float = 300, resource: str | None = None, repo: str | None = None,
            attempts: int = 8, log=None) -> dict:
    """Acquire or renew the lease at ``key`` by create-only / CAS. Returns the record written.

    :raises Refused: another agent holds it (carries holder, reason, expiry).
    :raises lib.store.Unavailable: the store is unreachable (nothing was changed).
    :raises RuntimeError: lost ``attempts`` races in a row without a decision (412 storm).
    """
    from lib.store import CREATE, NotFound, PreconditionFailed, update

    for attempt in range(attempts):
        try:
            obj = store.get(key)
            current, etag, now = _load(obj), obj.etag, obj.server_time or store.clock()
            if current is None and log:
                log("lease_garbage", key=key, detail="unparseable lease record treated as free")
        except NotFound as exc:
            current, etag, now = None, None, exc.server_time or store.clock()
        record = decide_acquire(current, holder=holder, session_id=session_id, reason=reason, now=now,
                                ttl=ttl, resource=resource or key, repo=repo)
        data = json.dumps(record, sort_keys=True).encode()
        try:
            store.put(key, data, CREATE if etag is None else update(etag))
            return record
        except PreconditionFailed:
            if log:
                log("lease_race_lost", key=key, attempt=attempt + 1)
            continue
    raise RuntimeError(f"lease {key}: lost {attempts} compare-and-swap races in a row")


def release(store, key: str, *, holder: str, attempts: int = 8) -> bool:
    """Release ``holder``'s lease at ``key`` (CAS to free, epoch kept). True if released."""
    from lib.store import NotFound, PreconditionFailed, update

    for _ in range(attempts):
        try:
            obj = store.get(key)
        except NotFound:
            return False
        nxt = decide_release(_load(obj), holder=holder, now=obj.server_time or store.clock())
        if nxt is None:
            return False
        try:
            store.put(key, json.dumps(nxt, sort_keys=True).encode(), update(obj.etag))
            return True
        except PreconditionFailed:
            continue
    return False


def read(store, key: str) -> tuple[dict | None, float]:
    """``(record or None, store_time)`` for the lease at ``key``."""
    from lib.store import NotFound

    try:
        obj = store.get(key)
        return _load(obj), obj.server_time or store.clock()
    except NotFound as exc:
        return None, exc.server_time or store.clock()


def refusal_message(records: list[dict]) -> str:
    """Human/agent text naming each holder, reason and expiry, and that leases are advisory."""
    parts = []
    for r in records:
        exp = r.get("expires_at")
        when = time.strftime("%H:%M:%SZ", time.gmtime(float(exp))) if isinstance(exp, (int, float)) else "?"
        what = r.get("path") or r.get("resource") or "this resource"
        parts.append(f"{what} is held by {r.get('holder')} ({r.get('reason') or 'no reason given'}) until {when}")
    return "ctxlake: " + "; ".join(parts) + ". " + ADVISORY_NOTE


# -- hook side: the cached lease view -------------------------------------------------------

def read_view(path: str) -> dict:
    """``cache/<fleet>/leases.json`` as a dict; ``{}`` when missing or malformed (fail open)."""
    from lib import jsonfast

    try:
        with open(path, "rb") as fh:
            data = jsonfast.loads(fh.read(8 << 20))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and isinstance(data.get("leases", []), list) else {}


def conflicts_for_paths(view: dict, agent_id: str, paths: list[str], cwd: str | None,
                        local_now: float | None = None) -> list[dict]:
    """Leases in ``view`` held by another agent, unexpired, covering any of ``paths``.

    The view's ``store_time``/``refreshed_at`` pair gives the store-clock offset, so expiry is
    judged by the store clock even here (invariant 6). A lease on ``dir/`` covers every path
    below it.
    """
    leases = view.get("leases") or []
    if not leases or not paths:
        return []
    from lib import repo as repomod
    import os

    local_now = time.time() if local_now is None else local_now
    try:
        skew = float(view.get("store_time")) - float(view.get("refreshed_at"))
    except (TypeError, ValueError):
        skew = 0.0
    now = local_now + skew
    hits = []
    for p in paths:
        full = p if os.path.isabs(p) or not cwd else os.path.join(cwd, p)
        info = repomod.identify(full)
        if not info:
            continue
        rel = repomod.relative(full, info["root"])
        for lease in leases:
            if not isinstance(lease, dict) or lease.get("holder") in (None, agent_id):
                continue
            if not is_live(lease, now) or lease.get("repo") != info["repo_id"]:
                continue
            lp = str(lease.get("path") or "")
            if lp == rel or (lp.endswith("/") and rel.startswith(lp)):
                hits.append(dict(lease, path=lp))
    return hits
