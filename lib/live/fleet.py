"""Fleet-wide views of the live plane that no single agent's syncd keeps (docs/design.md §9, §13).

Where it sits: the Kubernetes operator (``fleet_operator.py``) calls it when an agent pod ends
and on a timer for the ``CtxlakeFleet`` status; nothing on an agent's path uses it.

- :func:`retire_agent` — an agent is gone for good (its pod ended): release every lease it holds
  (CAS through :func:`lib.live.leases.release`), delete its heartbeat, and drop it from the roster by
  CAS, so teammates see it gone at their next cache refresh instead of after the 5-minute TTL.
  Every step is idempotent: retiring twice, or an agent that never existed, changes nothing.
- :func:`fleet_status` — live agents (heartbeats younger than the presence TTL by the store
  clock), leases held per agent, and the age of the published snapshot.

Decisions are pure functions (:func:`roster_without`, :func:`summarize`), tested without a
store; the I/O shells read, decide and write by CAS (docs/design.md §14).

Keys (docs/design.md §4)::

    live/<fleet>/agents/<agent_id>.json     heartbeat (plain overwrite by its own syncd)
    live/<fleet>/roster.json                fan-in of heartbeats; {"agents": [{agent_id, ...}], ...}
    live/<fleet>/leases/<resource>.json     one lease; holder = agent_id | null
    snapshot/<fleet>/current.json           {sha256, built_at, maint_epoch, ...}

What it refuses to do: decide from the local clock (ages use the store's ``server_time``), or
touch a lease held by anyone but the agent being retired.
"""
from __future__ import annotations

import json
from urllib.parse import unquote



# One definition of each live-plane key: the roster module's and the lease module's.
from lib.live.leases import leases_prefix  # noqa: E402  (live/<fleet>/leases/)
from lib.live.presence import agents_prefix as heartbeat_prefix  # noqa: E402  (live/<fleet>/agents/)
from lib.live.presence import heartbeat_key, roster_key  # noqa: E402


def roster_without(doc, agent_id: str):
    """The roster document with ``agent_id`` removed, or ``None`` when there is nothing to remove.

    Accepts both roster shapes: ``{"agents": [{"agent_id": ...}, ...]}`` and
    ``{"agents": {agent_id: {...}}}``; every other field is kept as it is.

    >>> roster_without({"agents": [{"agent_id": "a"}, {"agent_id": "b"}], "v": 1}, "a")
    {'agents': [{'agent_id': 'b'}], 'v': 1}
    """
    if not isinstance(doc, dict):
        return None
    agents = doc.get("agents")
    if isinstance(agents, list):
        kept = [a for a in agents if not (isinstance(a, dict) and a.get("agent_id") == agent_id)]
        return None if len(kept) == len(agents) else dict(doc, agents=kept)
    if isinstance(agents, dict) and agent_id in agents:
        return dict(doc, agents={k: v for k, v in agents.items() if k != agent_id})
    return None


def _remove_from_roster(store, fleet_id: str, agent_id: str, attempts: int = 8) -> bool:
    from lib.store import NotFound, PreconditionFailed, update

    key = roster_key(fleet_id)
    for _ in range(attempts):
        try:
            obj = store.get(key)
        except NotFound:
            return False
        try:
            doc = json.loads(obj.data)
        except (TypeError, ValueError):
            return False  # garbage roster: the next rebuild by any syncd replaces it
        nxt = roster_without(doc, agent_id)
        if nxt is None:
            return False
        try:
            store.put(key, json.dumps(nxt, sort_keys=True).encode(), update(obj.etag))
            return True
        except PreconditionFailed:
            continue  # someone rebuilt the roster meanwhile: read theirs, drop the agent again
    raise RuntimeError(f"roster {key}: lost {attempts} compare-and-swap races in a row")


def retire_agent(store, fleet_id: str, agent_id: str, log=None) -> dict:
    """Release ``agent_id``'s leases, delete its heartbeat, remove it from the roster.

    Returns ``{"agent_id", "fleet_id", "leases_released": [keys], "heartbeat_deleted": bool,
    "roster_removed": bool}``. Leases held by others are never touched (each release is a CAS
    that re-checks the holder).

    :raises lib.store.Unavailable: the store is unreachable (steps done so far stay done;
        calling again finishes the rest).
    """
    from lib.live import leases
    from lib.store import NotFound

    released = []
    for entry in store.list(leases_prefix(fleet_id)):
        record, _ = leases.read(store, entry.key)
        if record and record.get("holder") == agent_id and leases.release(store, entry.key, holder=agent_id):
            released.append(entry.key)
    hb = heartbeat_key(fleet_id, agent_id)
    try:
        store.head(hb)
        existed = True
    except NotFound:
        existed = False
    if existed:
        store.delete(hb)
    removed = _remove_from_roster(store, fleet_id, agent_id)
    result = {"agent_id": agent_id, "fleet_id": fleet_id, "leases_released": released,
              "heartbeat_deleted": existed, "roster_removed": removed}
    if log:
        log("agent_retired", agent=agent_id, fleet=fleet_id, leases_released=len(released),
            heartbeat_deleted=existed, roster_removed=removed)
    return result


def summarize(heartbeats: list[tuple[str, float | None]], records: list[dict], pointer: dict | None,
              pointer_modified: float | None, *, now: float, presence_ttl: float) -> dict:
    """Fleet status from plain inputs (all times store-clock epoch seconds).

    :param heartbeats: ``(agent_id, last_modified)`` per heartbeat object.
    :param records: lease records (as stored); only live ones (holder set, unexpired) count, and
        the maintenance lease is reported apart.
    :param pointer: the snapshot pointer (``built_at`` ISO time) or ``None``;
        ``pointer_modified`` is its object's ``last_modified`` (used when ``built_at`` is bad).
    :returns: ``{"live_agents": int, "agents": [sorted ids], "leases_held": int,
        "leases_by_agent": {agent: n}, "maintenance_holder": str|None,
        "snapshot_built_at": str|None, "snapshot_age_s": int|None}``.
    """
    from lib.live import leases
    from lib.clock import parse_time_strict

    agents = sorted({a for a, t in heartbeats if t is not None and now - t <= presence_ttl})
    by_agent: dict[str, int] = {}
    maintenance = None
    for rec in records:
        if not leases.is_live(rec, now):
            continue
        if rec.get("resource") == leases.MAINTENANCE:
            maintenance = rec.get("holder")
            continue
        by_agent[rec["holder"]] = by_agent.get(rec["holder"], 0) + 1
    built_at, age = None, None
    if pointer:
        t = pointer_modified
        try:
            t = parse_time_strict(pointer["built_at"])
            built_at = pointer["built_at"]
        except (KeyError, TypeError, AttributeError, ValueError):
            pass  # no usable built_at: the pointer object's own store time stands in
        age = None if t is None else max(0, int(now - t))
    return {"live_agents": len(agents), "agents": agents, "leases_held": sum(by_agent.values()),
            "leases_by_agent": dict(sorted(by_agent.items())), "maintenance_holder": maintenance,
            "snapshot_built_at": built_at, "snapshot_age_s": age}


def fleet_status(store, fleet_id: str, *, presence_ttl: float = 300) -> dict:
    """Read the live plane and the snapshot pointer and :func:`summarize` them.

    Costs one listing of heartbeats, one listing plus one GET per lease, and one GET of the
    snapshot pointer. :raises lib.store.Unavailable: the store is unreachable.
    """
    from lib import lake
    from lib.live import leases
    from lib.store import NotFound

    now = store.clock()
    heartbeats = []
    prefix = heartbeat_prefix(fleet_id)
    for entry in store.list(prefix):
        name = entry.key[len(prefix):]
        if name.endswith(".json") and "/" not in name:
            heartbeats.append((unquote(name[:-5]), entry.last_modified))
    records = []
    for entry in store.list(leases_prefix(fleet_id)):
        record, server_time = leases.read(store, entry.key)
        if record:
            records.append(record)
        now = server_time or now
    try:
        obj = store.get(lake.snapshot_pointer_key(fleet_id))
        pointer = json.loads(obj.data)
        pointer_modified = obj.last_modified
        now = obj.server_time or now
    except (NotFound, ValueError):
        pointer, pointer_modified = None, None
    return summarize(heartbeats, records, pointer if isinstance(pointer, dict) else None, pointer_modified,
                     now=now, presence_ttl=presence_ttl)
