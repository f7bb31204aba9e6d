"""Fleet-wide views of the live plane that no single agent's syncd keeps (docs/design.md §9, §13).

Where it sits: the Kubernetes operator (``fleet_operator.py``) calls it when an agent pod ends
and on a timer for the ``CtxlakeFleet`` status; nothing on an agent's path uses it.

- :func:`retire_agent` — an agent is gone for good (its pod ended): release every lease it holds
  (CAS through :func:`lib.live.leases.release`), delete its heartbeat, and drop it from the roster
  with the one roster editor (:func:`lib.live.presence.edit`, CAS), so teammates see it gone at their next cache refresh instead of after the 5-minute TTL.
  Every step is idempotent: retiring twice, or an agent that never existed, changes nothing.
- :func:`fleet_status` — live agents by the one rule every reader uses
  (:func:`lib.live.presence.is_fresh`: a heartbeat whose ``updated_at`` is younger than the
  presence TTL by the store clock), leases held per agent, and the age of the published snapshot.

Decisions are pure functions (:func:`summarize`), tested without a
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

# One definition of each live-plane key: the roster module's and the lease module's.
from lib.live.leases import leases_prefix  # (live/<fleet>/leases/)
from lib.live.presence import heartbeat_key, roster_key  # noqa: F401 - the operator keys its retries on roster_key


def retire_agent(store, fleet_id: str, agent_id: str, log=None, *, presence_ttl: float = 300) -> dict:
    """Release ``agent_id``'s leases, delete its heartbeat, remove it from the roster.

    Returns ``{"agent_id", "fleet_id", "leases_released": [keys], "heartbeat_deleted": bool,
    "roster_removed": bool}``. Leases held by others are never touched (each release is a CAS
    that re-checks the holder). The roster is edited by the one roster editor,
    :func:`lib.live.presence.edit` (CAS, re-read on a lost race; entries older than
    ``presence_ttl`` by the store clock pruned on the way, as every edit does), and only when it
    lists the agent.

    :raises lib.store.Unavailable: the store is unreachable (steps done so far stay done;
        calling again finishes the rest).
    """
    from lib.live import leases, presence
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
    current, _, _, _ = presence.read_roster(store, fleet_id)
    removed = False
    if current is not None and any(isinstance(a, dict) and a.get("agent_id") == agent_id for a in current["agents"]):
        written, _ = presence.edit(store, fleet_id, removals=[agent_id], ttl=presence_ttl, log=log)
        removed = written is not None
    result = {"agent_id": agent_id, "fleet_id": fleet_id, "leases_released": released,
              "heartbeat_deleted": existed, "roster_removed": removed}
    if log:
        log("agent_retired", agent=agent_id, fleet=fleet_id, leases_released=len(released),
            heartbeat_deleted=existed, roster_removed=removed)
    return result


def summarize(heartbeats: list[dict], records: list[dict], pointer: dict | None,
              pointer_modified: float | None, *, now: float, presence_ttl: float) -> dict:
    """Fleet status from plain inputs (all times store-clock epoch seconds).

    :param heartbeats: heartbeat records (as stored); an agent is live by the one rule,
        :func:`lib.live.presence.is_fresh` (its ``updated_at`` within ``presence_ttl`` of ``now``).
    :param records: lease records (as stored); only live ones (holder set, unexpired) count, and
        the maintenance lease is reported apart.
    :param pointer: the snapshot pointer (``built_at`` ISO time) or ``None``;
        ``pointer_modified`` is its object's ``last_modified`` (used when ``built_at`` is bad).
    :returns: ``{"live_agents": int, "agents": [sorted ids], "leases_held": int,
        "leases_by_agent": {agent: n}, "maintenance_holder": str|None,
        "snapshot_built_at": str|None, "snapshot_age_s": int|None}``.
    """
    from lib.clock import parse_time_strict
    from lib.live import leases, presence

    agents = [h["agent_id"] for h in presence.live_agents(heartbeats, now, presence_ttl)]
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

    Costs one listing plus one GET per heartbeat (the body's ``updated_at`` decides who is live,
    as for the roster every agent reads), one listing plus one GET per lease, and one GET of the
    snapshot pointer. :raises lib.store.Unavailable: the store is unreachable.
    """
    from lib import lake
    from lib.live import leases, presence
    from lib.store import NotFound

    now = store.clock()
    heartbeats = presence.list_heartbeats(store, fleet_id)
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
