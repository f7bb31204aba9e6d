"""A fleet on a store with two agents, their heartbeats, a roster and leases (docs/design.md §9)."""
from __future__ import annotations

import itertools
import json

import pytest

from lib.live import fleet, leases
from lib.store import OVERWRITE, open_store

FLEET = "team-a"
_n = itertools.count()


def populate(store, fleet_id: str = FLEET) -> dict:
    """alice holds two leases, bob one, maint the maintenance lease; both heartbeat; roster of two.
    Returns ``{"alice": [keys], "bob": [keys]}``."""
    held = {"alice": [], "bob": []}
    for agent, paths in (("alice", ["src/a.py", "src/b.py"]), ("bob", ["docs/"])):
        for p in paths:
            key = leases.lease_key(fleet_id, leases.resource_key("git@example.com:org/repo", p))
            leases.acquire(store, key, holder=agent, reason=f"editing {p}", ttl=300, repo="git@example.com:org/repo")
            held[agent].append(key)
        store.put(fleet.heartbeat_key(fleet_id, agent),  # as syncd writes it: updated_at by the store clock
                  json.dumps({"agent_id": agent, "fleet_id": fleet_id, "runtime": "claude_code",
                              "updated_at": store.clock()}).encode(), OVERWRITE)
    leases.acquire(store, leases.lease_key(fleet_id, leases.MAINTENANCE), holder="maint@node-1:7", reason="maintenance",
                 ttl=300, resource=leases.MAINTENANCE)
    now = store.clock()
    roster = {"agents": [{"agent_id": "alice", "runtime": "claude_code", "updated_at": now},
                         {"agent_id": "bob", "runtime": "cursor", "updated_at": now}], "built_at": now, "built_by": "node-1"}
    store.put(fleet.roster_key(fleet_id), json.dumps(roster).encode(), OVERWRITE)
    store.put(f"snapshot/{fleet_id}/current.json",
              json.dumps({"sha256": "0" * 64, "built_at": "2020-01-01T00:00:00.000Z", "maint_epoch": 1}).encode(),
              OVERWRITE)
    return held


@pytest.fixture(params=["memory", "file"])
def store(request, tmp_path):
    """An empty store: ``memory://`` (unique name) or ``file://`` in a temporary folder."""
    if request.param == "memory":
        return open_store(f"memory://operator-{next(_n)}")
    return open_store(f"file://{tmp_path / 'lake'}")
