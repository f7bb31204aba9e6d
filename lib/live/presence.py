"""Presence: per-agent heartbeats and the fleet roster, on the store (docs/design.md §9).

Where it sits: syncd (:mod:`lib.live.sync`) writes the heartbeats of the agents spooling on its
host and keeps the fan-in roster fresh; every syncd mirrors the roster into
``cache/<fleet>/roster.json``; the briefing and ``fleet_status`` show it and the hook warns when
another live agent recently edited a file (:func:`recent_touches`).

- Heartbeat ``live/<fleet>/agents/<agent_id>.json`` — single owner (the agent's syncd), plain
  overwrite, carrying forward every field the new beat does not change (reference bug: an
  overwrite once cleared ``session_id``/``task``/``paths``). Deleted when the agent's last
  session ends, so it disappears at that beat and not after the TTL.
- Roster ``live/<fleet>/roster.json`` = ``{"agents": [heartbeat...], "built_at", "built_by",
  "presence_ttl_secs"}`` — rebuilt by any syncd at most every ``roster_secs`` + jitter from a
  listing of heartbeats and published by CAS; a 412 means someone else just did: use theirs.
  A host whose agent joins or leaves edits it at once (one CAS), so arrivals and departures do
  not wait for the next rebuild.
- Readers drop entries whose ``updated_at`` is older than ``presence_ttl_secs`` by the store
  clock (invariant 6).

Heartbeat fields: ``agent_id, fleet_id, runtime, host_id, session_id?, repo?, branch?, task?,
paths[]`` (recently touched, repo-relative, newest first), ``touched[]`` (``{repo, path, at,
tool, write}``, ``at`` in store-clock epoch s), ``updated_at`` (store-clock epoch s).

Decisions (:func:`next_heartbeat`, :func:`live_agents`, :func:`build_roster`,
:func:`rebuild_due`, :func:`edit_roster`) are pure. Nothing here imports ``json`` at module load:
the hook imports :func:`recent_touches` on a write tool's answer path.
"""
from __future__ import annotations

from lib.keys import agents_prefix, heartbeat_key, roster_key  # noqa: F401 - callers use roster.<key>

MAX_PATHS = 10
"""Paths shown per agent (``paths[]``)."""
MAX_TOUCHED = 20
"""Touched-file entries kept per agent (``touched[]``), newest first."""


# -- decisions (pure) -----------------------------------------------------------------------

def next_heartbeat(previous: dict | None, changes: dict, now: float) -> dict:
    """The heartbeat to write at store time ``now``: ``previous`` with every field of ``changes``
    that is not ``None`` replaced, everything else carried forward; ``updated_at = now``.
    Absent optionals stay absent (no nulls).

    >>> next_heartbeat({"agent_id": "a", "task": "fix", "paths": ["x"]}, {"branch": "b", "task": None}, 5)
    {'agent_id': 'a', 'task': 'fix', 'paths': ['x'], 'branch': 'b', 'updated_at': 5}
    """
    out = {k: v for k, v in (previous or {}).items() if v is not None}
    for k, v in changes.items():
        if v is not None:
            out[k] = v
    out.setdefault("paths", [])
    out["updated_at"] = now
    return out


def merge_touched(old, new, *, now: float, window: float, limit: int = MAX_TOUCHED) -> list[dict]:
    """Touched-file entries ``{repo, path, at, tool?, write?}`` from ``old`` (a previous
    heartbeat) and ``new`` (this beat), newest first, one per (repo, path) keeping the newest
    and OR-ing ``write``, without entries older than ``window`` seconds at store time ``now``,
    at most ``limit``."""
    best: dict = {}
    for t in list(old or []) + list(new or []):
        if not isinstance(t, dict) or not isinstance(t.get("path"), str) or not isinstance(t.get("at"), (int, float)):
            continue
        if now - t["at"] > window:
            continue
        k = (t.get("repo"), t["path"])
        prev = best.get(k)
        if prev is None or t["at"] >= prev["at"]:
            merged = dict(t)
            merged["write"] = bool(t.get("write") or (prev or {}).get("write"))
            best[k] = merged
        else:
            prev["write"] = bool(prev.get("write") or t.get("write"))
    return sorted(best.values(), key=lambda t: (-t["at"], t["path"]))[:limit]


def paths_of(touched: list[dict], limit: int = MAX_PATHS) -> list[str]:
    """The display list ``paths[]`` of a heartbeat: touched paths, newest first, unique."""
    out = []
    for t in touched:
        if t["path"] not in out:
            out.append(t["path"])
    return out[:limit]


def valid_heartbeat(data) -> bool:
    """Hand check: an object with a non-empty string ``agent_id`` and a numeric ``updated_at``."""
    return (isinstance(data, dict) and isinstance(data.get("agent_id"), str) and bool(data["agent_id"])
            and isinstance(data.get("updated_at"), (int, float)) and not isinstance(data.get("updated_at"), bool))


def is_fresh(entry: dict, now: float, ttl: float) -> bool:
    """The one rule for a live agent (docs/design.md §9): ``entry`` is a valid heartbeat, not
    ended, whose ``updated_at`` (store-clock epoch seconds, written by the agent's syncd) is at
    most ``ttl`` seconds before store time ``now``. Every reader applies it: the roster build and
    edit here, the cached-roster view (:func:`lib.cache_view.roster`: the hook, ``fleet_status``,
    the briefing, ``ctxlake status``) and the operator's fleet status (:mod:`lib.live.fleet`).
    The heartbeat object's ``Last-Modified`` is not a second rule: the roster agents read is built
    from the bodies, so judging by it could count an agent the agents do not see."""
    return valid_heartbeat(entry) and not entry.get("ended") and now - float(entry["updated_at"]) <= ttl


def live_agents(entries, now: float, ttl: float) -> list[dict]:
    """Fresh entries (:func:`is_fresh`), one per ``agent_id`` (the newest), sorted by agent id."""
    best: dict = {}
    for e in entries or []:
        if is_fresh(e, now, ttl) and (e["agent_id"] not in best or e["updated_at"] > best[e["agent_id"]]["updated_at"]):
            best[e["agent_id"]] = e
    return [best[k] for k in sorted(best)]


def build_roster(heartbeats, *, now: float, ttl: float, built_by: str) -> dict:
    """A roster from listed heartbeats at store time ``now``: ``{"agents", "built_at",
    "built_by", "presence_ttl_secs"}`` with stale, ended and malformed entries left out."""
    return {"agents": live_agents(heartbeats, now, ttl), "built_at": now, "built_by": built_by,
            "presence_ttl_secs": ttl}


def rebuild_due(roster: dict | None, now: float, interval: float, jitter: float = 0.0) -> bool:
    """True when ``roster`` is missing, malformed, or was built ``interval + jitter`` seconds or
    more before store time ``now`` (or claims to be built in the future by more than that)."""
    if not isinstance(roster, dict) or not isinstance(roster.get("agents"), list):
        return True
    try:
        built = float(roster.get("built_at"))
    except (TypeError, ValueError):
        return True
    return abs(now - built) >= interval + jitter


REBUILD_JITTER = 1.0
"""Roster rebuild jitter: up to this fraction of the rebuild interval. A whole interval, so hosts'
due times spread across it and — with the re-read before rebuilding in :func:`maybe_rebuild` —
about one host rebuilds per interval. ``bench/fleet_scale.py`` measured a 10% window collapsing
into a rebuild herd (every host listing N heartbeats, all but one losing the CAS)."""


def maybe_rebuild(store, fleet_id: str, data: dict | None, etag: str | None, now: float, *, interval: float,
                  jitter: float, ttl: float, built_by: str, log=None) -> tuple[dict | None, str | None, str]:
    """Rebuild the roster if it is due (:func:`rebuild_due`), after one conditional re-read: a host
    that was beaten to it by a moment uses the fresh roster instead of listing every heartbeat.

    Returns ``(roster, etag, outcome)``; ``outcome`` is ``fresh`` (not due), ``theirs`` (someone
    had just rebuilt it, or won the CAS), or ``rebuilt``.
    """
    if not rebuild_due(data, now, interval, jitter):
        return data, etag, "fresh"
    fresh, fresh_etag, now, changed = read_roster(store, fleet_id, etag=etag)
    if changed and fresh is not None:
        data, etag = fresh, fresh_etag
        if not rebuild_due(data, now, interval, jitter):
            return data, etag, "theirs"
    data, etag, published = rebuild(store, fleet_id, etag=etag, ttl=ttl, built_by=built_by, log=log)
    return data, etag, "rebuilt" if published else "theirs"


def edit_roster(roster: dict | None, *, upserts=(), removals=(), now: float, ttl: float) -> dict:
    """``roster`` with the entries of ``removals`` (agent ids) dropped and ``upserts``
    (heartbeats) put in, pruned by ``ttl`` at store time ``now``; ``built_at`` is kept (an edit
    is not a rebuild) and ``edited_at = now``."""
    base = dict(roster) if isinstance(roster, dict) else {"built_at": 0, "built_by": None}
    gone = set(removals) | {u.get("agent_id") for u in upserts}
    agents = [a for a in (base.get("agents") or []) if isinstance(a, dict) and a.get("agent_id") not in gone]
    base["agents"] = live_agents(agents + list(upserts), now, ttl)
    base["presence_ttl_secs"] = ttl
    base["edited_at"] = now
    return base


# -- I/O shell -------------------------------------------------------------------------------

def _dump(data: dict) -> bytes:
    import json

    return json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")


def _load(data: bytes):
    import json

    try:
        return json.loads(data)
    except (TypeError, ValueError, UnicodeDecodeError):
        return None


def write_heartbeat(store, fleet_id: str, record: dict) -> None:
    """Overwrite ``record["agent_id"]``'s heartbeat (single owner: plain PUT).
    :raises lib.store.Unavailable:"""
    store.put(heartbeat_key(fleet_id, record["agent_id"]), _dump(record))


def delete_heartbeat(store, fleet_id: str, agent_id: str) -> None:
    """Remove ``agent_id``'s heartbeat (its last session ended). :raises lib.store.Unavailable:"""
    store.delete(heartbeat_key(fleet_id, agent_id))


def heartbeat_exists(store, fleet_id: str, agent_id: str) -> bool:
    """True when ``agent_id``'s heartbeat object exists (one HEAD). :raises lib.store.Unavailable:"""
    from lib.store import NotFound

    try:
        store.head(heartbeat_key(fleet_id, agent_id))
        return True
    except NotFound:
        return False


def read_heartbeat(store, fleet_id: str, agent_id: str) -> dict | None:
    """``agent_id``'s stored heartbeat, or ``None`` (absent or malformed)."""
    from lib.store import NotFound

    try:
        data = _load(store.get(heartbeat_key(fleet_id, agent_id)).data)
    except NotFound:
        return None
    return data if valid_heartbeat(data) else None


def read_roster(store, fleet_id: str, etag: str | None = None) -> tuple[dict | None, str | None, float, bool]:
    """``(roster or None, etag, store_time, modified)``. With ``etag`` the GET is conditional:
    ``modified`` False (and roster ``None``) means the caller's copy is current. A malformed
    roster reads as ``None`` with its etag (the next rebuild replaces it by CAS)."""
    from lib.store import NotFound

    try:
        obj = store.get(roster_key(fleet_id), if_none_match=etag) if etag else store.get(roster_key(fleet_id))
    except NotFound as exc:
        return None, None, exc.server_time or store.clock(), True
    now = obj.server_time or store.clock()
    if not obj.modified:
        return None, obj.etag, now, False
    data = _load(obj.data)
    ok = isinstance(data, dict) and isinstance(data.get("agents"), list)
    return (data if ok else None), obj.etag, now, True


def list_heartbeats(store, fleet_id: str) -> list[dict]:
    """Every readable heartbeat of the fleet (one GET per listed key; malformed ones skipped)."""
    from lib.store import NotFound

    out = []
    for entry in store.list(agents_prefix(fleet_id)):
        try:
            data = _load(store.get(entry.key).data)
        except NotFound:
            continue
        if valid_heartbeat(data):
            out.append(data)
    return out


def rebuild(store, fleet_id: str, *, etag: str | None, ttl: float, built_by: str, log=None) -> tuple[dict, str | None, bool]:
    """Rebuild the roster from the heartbeats and publish it by CAS against ``etag`` (the
    version the caller read; ``None`` = absent → create-only).

    :returns: ``(roster, etag, published)``; on a lost race (412) ``published`` is False and
        the roster is the one the winner just wrote (re-read).
    :raises lib.live.leases.Unsafe: the store does not honour conditional writes (nothing written).
    :raises lib.store.Unavailable:
    """
    from lib.live import leases
    from lib.store import CREATE, Conflict, PreconditionFailed, update

    leases.require_conditional(store, roster_key(fleet_id), log=log)
    heartbeats = list_heartbeats(store, fleet_id)
    now = store.clock()
    roster = build_roster(heartbeats, now=now, ttl=ttl, built_by=built_by)
    try:
        obj = store.put(roster_key(fleet_id), _dump(roster), CREATE if etag is None else update(etag))
        if log:
            log("roster_rebuilt", agents=len(roster["agents"]), heartbeats=len(heartbeats))
        return roster, obj.etag, True
    except (PreconditionFailed, Conflict):
        if log:
            log("roster_race_lost", detail="another syncd rebuilt the roster just now; using theirs")
        theirs, tag, _, _ = read_roster(store, fleet_id)
        return (theirs if theirs is not None else roster), tag, False


def edit(store, fleet_id: str, *, upserts=(), removals=(), ttl: float, attempts: int = 5, log=None) -> tuple[dict | None, str | None]:
    """Apply :func:`edit_roster` to the stored roster by CAS (re-read on a lost race).
    Returns ``(roster, etag)`` as written, or ``(None, None)`` after ``attempts`` lost races
    (the next rebuild brings the change in anyway). :raises lib.live.leases.Unsafe: the store does not
    honour conditional writes. :raises lib.store.Unavailable:"""
    from lib.live import leases
    from lib.store import CREATE, Conflict, PreconditionFailed, update

    leases.require_conditional(store, roster_key(fleet_id), log=log)
    for _ in range(attempts):
        current, etag, now, _ = read_roster(store, fleet_id)
        nxt = edit_roster(current, upserts=upserts, removals=removals, now=now, ttl=ttl)
        try:
            obj = store.put(roster_key(fleet_id), _dump(nxt), CREATE if etag is None else update(etag))
            return nxt, obj.etag
        except (PreconditionFailed, Conflict):
            if log:
                log("roster_race_lost", detail="roster changed while editing; retrying")
    return None, None


# -- hook side: the cached roster view ------------------------------------------------------

def read_view(path: str) -> dict:
    """``cache/<fleet>/roster.json`` as a dict; ``{}`` when missing or malformed (fail open)."""
    from lib.cache_view import read_for_hook

    data = read_for_hook(path)
    return data if isinstance(data.get("agents", []), list) else {}


def recent_touches(view: dict, agent_id: str, paths: list[str], cwd: str | None,
                   local_now: float | None = None) -> list[dict]:
    """Edits of any of ``paths`` by *other* live agents, from the cached roster.

    Returns ``[{"agent_id", "path", "at", "ago_secs", "task"?}]`` (newest per agent and path).
    Presence and age are judged by the store clock through the view's ``store_time`` /
    ``refreshed_at`` pair; entries older than the view's ``presence_ttl_secs`` are ignored.
    Only write-tool touches count (two agents reading one file is no collision).
    """
    agents = view.get("agents") or []
    if not agents or not paths:
        return []
    from lib.live import leases

    now = leases.view_now(view, local_now)
    try:
        ttl = float(view.get("presence_ttl_secs") or 300)
    except (TypeError, ValueError):
        ttl = 300.0
    wanted = {(repo_id, rel) for _, repo_id, rel in leases.locate(paths, cwd)}
    if not wanted:
        return []
    hits = {}
    for a in agents:
        if not isinstance(a, dict) or a.get("agent_id") == agent_id or not is_fresh(a, now, ttl):
            continue
        for t in a.get("touched") or []:
            if not isinstance(t, dict) or not t.get("write") or (t.get("repo"), t.get("path")) not in wanted:
                continue
            try:
                at = float(t.get("at"))
            except (TypeError, ValueError):
                continue
            k = (a["agent_id"], t["path"])
            if k not in hits or at > hits[k]["at"]:
                hit = {"agent_id": a["agent_id"], "path": t["path"], "at": at, "ago_secs": max(0, int(now - at))}
                if isinstance(a.get("task"), str) and a["task"]:
                    hit["task"] = a["task"]
                hits[k] = hit
    return sorted(hits.values(), key=lambda h: -h["at"])


def touch_message(touches: list[dict]) -> str:
    """Softer warning text: "agent X edited <path> N min ago (task: ...)", sanitized, with the
    advisory note."""
    from lib.live.leases import ADVISORY_NOTE
    from lib.sanitize import clean

    parts = []
    for t in touches[:5]:
        mins = int(t.get("ago_secs") or 0) // 60
        ago = f"{mins} min ago" if mins else "less than a minute ago"
        line = f"{clean(str(t['agent_id']), 120, True)} edited {clean(str(t['path']), 300, True)} {ago}"
        if t.get("task"):
            line += f" (task: {clean(t['task'], 160, True)})"
        parts.append(line)
    return ("ctxlake: another live agent is working here: " + "; ".join(parts)
            + ". Coordinate before overlapping edits. " + ADVISORY_NOTE)

