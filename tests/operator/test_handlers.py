"""The operator's handlers called directly, and the lib.live.fleet decisions under them (issue #9)."""
from __future__ import annotations

import json
import logging

import kopf
import pytest

import fleet_operator as op
from lib import config
from lib.live import fleet, leases
from lib.store import NotFound, OVERWRITE, PreconditionFailed, Unavailable, open_store
from tests.operator.conftest import FLEET, populate

LOG = logging.getLogger("test-operator")


def _memo(store, fleet_id=FLEET) -> kopf.Memo:
    memo = kopf.Memo()
    memo.cfg = config.load(environ={"CTXLAKE_HOME": "/nonexistent-home", "CTXLAKE_CONFIG": "/nonexistent.toml",
                                    "CTXLAKE_FLEET_ID": fleet_id})
    memo.store = store
    memo.retired = {}
    return memo


def _pod(agent="alice", phase="Running", uid="uid-1", fleet_label=None) -> dict:
    labels = {op.AGENT_LABEL: agent}
    if fleet_label:
        labels[op.FLEET_LABEL] = fleet_label
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{agent}-pod", "namespace": "ctx", "uid": uid,
                                                            "labels": labels}, "status": {"phase": phase}}


def _roster_ids(store, fleet_id=FLEET) -> list[str]:
    return [a["agent_id"] for a in json.loads(store.get(fleet.roster_key(fleet_id)).data)["agents"]]


def test_the_kopf_handler_returns_nothing_so_kopf_never_patches_the_pod(store):
    populate(store)
    assert op.agent_pod_event(type="DELETED", body=_pod(), memo=_memo(store), logger=LOG) is None
    assert _roster_ids(store) == ["bob"]


def test_a_running_agent_pod_changes_nothing(store):
    held = populate(store)
    assert op.retire_for_pod("MODIFIED", _pod(), _memo(store), LOG) is None
    assert all(leases.read(store, k)[0]["holder"] == "alice" for k in held["alice"])
    assert _roster_ids(store) == ["alice", "bob"]


@pytest.mark.parametrize("event_type,phase", [("MODIFIED", "Succeeded"), ("MODIFIED", "Failed"), ("DELETED", "Running")])
def test_an_ended_agent_pod_releases_its_leases_and_leaves_the_roster(store, event_type, phase):
    held = populate(store)
    out = op.retire_for_pod(event_type, _pod(phase=phase), _memo(store), LOG)
    assert sorted(out["leases_released"]) == sorted(held["alice"])
    assert out["heartbeat_deleted"] and out["roster_removed"]
    for key in held["alice"]:
        rec, _ = leases.read(store, key)
        assert rec["holder"] is None and rec["epoch"] == 1  # released by CAS, fencing epoch kept
    assert leases.read(store, held["bob"][0])[0]["holder"] == "bob"
    assert leases.read(store, leases.lease_key(FLEET, leases.MAINTENANCE))[0]["holder"] == "maint@node-1:7"
    with pytest.raises(NotFound):
        store.get(fleet.heartbeat_key(FLEET, "alice"))
    store.get(fleet.heartbeat_key(FLEET, "bob"))
    assert _roster_ids(store) == ["bob"]
    assert json.loads(store.get(fleet.roster_key(FLEET)).data)["built_by"] == "node-1"


def test_retiring_is_once_per_pod_and_idempotent_per_agent(store):
    populate(store)
    memo = _memo(store)
    assert op.retire_for_pod("DELETED", _pod(), memo, LOG)["leases_released"]
    assert op.retire_for_pod("DELETED", _pod(), memo, LOG) is None
    again = op.retire_for_pod("DELETED", _pod(uid="uid-2"), memo, LOG)
    assert again["leases_released"] == [] and not again["heartbeat_deleted"] and not again["roster_removed"]


def test_the_fleet_label_picks_the_fleet(store):
    populate(store, "team-b")
    populate(store, FLEET)
    out = op.retire_for_pod("DELETED", _pod(fleet_label="team-b"), _memo(store), LOG)
    assert out["fleet_id"] == "team-b" and len(out["leases_released"]) == 2
    assert _roster_ids(store, "team-b") == ["bob"] and _roster_ids(store, FLEET) == ["alice", "bob"]


def test_a_pod_without_the_agent_label_is_ignored(store):
    populate(store)
    pod = _pod(phase="Succeeded")
    del pod["metadata"]["labels"][op.AGENT_LABEL]
    assert op.retire_for_pod("DELETED", pod, _memo(store), LOG) is None


def test_roster_removal_survives_a_concurrent_rebuild(store):
    populate(store)

    class Racing:
        """Another syncd republishes the roster (adding carol) between our read and our CAS."""

        def __init__(self, inner):
            self.inner, self.raced = inner, False

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def put(self, key, data, mode=OVERWRITE):
            if key == fleet.roster_key(FLEET) and not self.raced:
                self.raced = True
                doc = json.loads(self.inner.get(key).data)
                doc["agents"].append({"agent_id": "carol", "updated_at": self.inner.clock()})
                self.inner.put(key, json.dumps(doc).encode(), OVERWRITE)
            return self.inner.put(key, data, mode)

    racing = Racing(store)
    out = fleet.retire_agent(racing, FLEET, "alice")
    assert racing.raced and out["roster_removed"]
    assert _roster_ids(store) == ["bob", "carol"]


def test_fleet_status_handler_patches_live_agents_leases_and_snapshot_age(store):
    populate(store)
    patch = kopf.Patch()
    op.fleet_status(spec={"fleetId": FLEET}, name="team-a", memo=_memo(store), patch=patch, logger=LOG)
    st = patch["status"]
    assert st["fleetId"] == FLEET and st["liveAgents"] == 2 and st["agents"] == ["alice", "bob"]
    assert st["leasesHeld"] == 3
    assert st["leasesByAgent"] == [{"agentId": "alice", "leases": 2}, {"agentId": "bob", "leases": 1}]
    assert st["maintenanceHolder"] == "maint@node-1:7"
    assert st["lastSnapshotAt"] == "2020-01-01T00:00:00.000Z" and st["lastSnapshotAgeSeconds"] > 86400
    assert st["error"] is None
    op.retire_for_pod("DELETED", _pod(), _memo(store), LOG)
    patch = kopf.Patch()
    op.fleet_status(spec={"fleetId": FLEET}, name="team-a", memo=_memo(store), patch=patch, logger=LOG)
    assert patch["status"]["liveAgents"] == 1 and patch["status"]["leasesByAgent"] == [{"agentId": "bob", "leases": 1}]


def test_fleet_status_reports_a_store_outage_on_the_resource():
    store = open_store("memory://operator-outage")
    store.fail_next.append(Unavailable("store down (test)"))
    patch = kopf.Patch()
    op.fleet_status(spec={"fleetId": FLEET}, name="team-a", memo=_memo(store), patch=patch, logger=LOG)
    assert patch["status"]["error"].startswith("Unavailable: store down") and "liveAgents" not in patch["status"]


# -- pure decisions --------------------------------------------------------------------------

def test_retirement_leaves_a_document_that_is_not_a_roster_to_the_next_rebuild(store):
    """One roster shape, one editor: a roster whose ``agents`` is not a list is not edited (the
    next rebuild by any syncd replaces it); the leases and the heartbeat still go."""
    held = populate(store)
    odd = json.dumps({"agents": {"alice": {}, "bob": {}}}).encode()
    store.put(fleet.roster_key(FLEET), odd, OVERWRITE)
    out = fleet.retire_agent(store, FLEET, "alice")
    assert not out["roster_removed"] and store.get(fleet.roster_key(FLEET)).data == odd
    assert sorted(out["leases_released"]) == sorted(held["alice"]) and out["heartbeat_deleted"]


def test_the_operator_and_the_agents_apply_one_live_agent_rule(store, tmp_path):
    """A heartbeat object rewritten just now (fresh Last-Modified) whose ``updated_at`` is past the
    presence TTL: the roster the agents read leaves it out, the cached view of that roster (hook,
    ``fleet_status``, ``ctxlake status``) too, and so does the operator's fleet status."""
    from lib import cache_view
    from lib.live import presence

    populate(store)
    now = store.clock()
    store.put(fleet.heartbeat_key(FLEET, "bob"), json.dumps({"agent_id": "bob", "fleet_id": FLEET, "runtime": "cursor",
                                                           "updated_at": now - 301}).encode(), OVERWRITE)
    _, etag, _, _ = presence.read_roster(store, FLEET)
    roster, _, published = presence.rebuild(store, FLEET, etag=etag, ttl=300, built_by="test")
    assert published
    status = fleet.fleet_status(store, FLEET, presence_ttl=300)
    assert [a["agent_id"] for a in roster["agents"]] == status["agents"] == ["alice"]
    bob_roster = dict(roster, agents=roster["agents"] + [{"agent_id": "bob", "updated_at": now - 301}])
    cached = tmp_path / "roster.json"
    cached.write_text(json.dumps({**bob_roster, "store_time": now, "refreshed_at": now}))
    view = cache_view.roster(str(cached), now, 300)
    assert [a["agent_id"] for a in view["agents"]] == ["alice"] and view["dropped_stale"] == 1


def test_summarize_counts_only_fresh_heartbeats_and_unexpired_leases():
    now = 10_000.0
    records = [{"holder": "a", "expires_at": now + 5, "resource": "r1", "epoch": 1},
               {"holder": "a", "expires_at": now - 5, "resource": "r2", "epoch": 1},  # expired
               {"holder": None, "expires_at": now + 5, "resource": "r3", "epoch": 2},  # free
               {"holder": "maint@x", "expires_at": now + 5, "resource": leases.MAINTENANCE, "epoch": 3}]
    heartbeats = [{"agent_id": "a", "updated_at": now - 10}, {"agent_id": "old", "updated_at": now - 301},
                  {"agent_id": "never"}, {"agent_id": "gone", "updated_at": now, "ended": True}]
    s = fleet.summarize(heartbeats, records,
                        {"built_at": "garbage"}, now - 42, now=now, presence_ttl=300)
    assert s["agents"] == ["a"] and s["live_agents"] == 1
    assert s["leases_held"] == 1 and s["leases_by_agent"] == {"a": 1} and s["maintenance_holder"] == "maint@x"
    assert s["snapshot_age_s"] == 42 and s["snapshot_built_at"] is None
    assert fleet.summarize([], [], None, None, now=now, presence_ttl=300)["snapshot_age_s"] is None


def test_pod_end_detection():
    assert op.pod_ended("DELETED", {"status": {"phase": "Running"}})
    assert op.pod_ended(None, {"status": {"phase": "Succeeded"}})
    assert not op.pod_ended("MODIFIED", {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
                                          "status": {"phase": "Running"}})
    assert op.agent_of(_pod(fleet_label="x"), "d") == ("x", "alice")
    assert op.agent_of(_pod(), "d") == ("d", "alice")
    by_name = _pod(agent="")
    by_name["metadata"]["name"] = "agents-7c9f-x2"
    assert op.agent_of(by_name, "d") == ("d", "agents-7c9f-x2")
    assert op.agent_of({"metadata": {"name": "web", "labels": {"app": "web"}}}, "d") is None


def test_heartbeat_keys_follow_the_design_layout():
    assert fleet.heartbeat_key("f", "a b") == "live/f/agents/a%20b.json"
    assert fleet.roster_key("f") == "live/f/roster.json"
    assert fleet.leases_prefix("f") == "live/f/leases/"
    with pytest.raises(PreconditionFailed):  # sanity: the fake store enforces create-only
        s = open_store("memory://operator-sanity")
        s.put("k", b"1", "create")
        s.put("k", b"1", "create")
