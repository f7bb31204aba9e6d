"""fleet_operator.py under the real kopf engine (KopfRunner) against a fake API server on
127.0.0.1: an agent pod ends → its leases, heartbeat and roster entry go; the CtxlakeFleet's
status follows (issue #9)."""
from __future__ import annotations

import json
import os
import time

import kopf
import pytest
from kopf.testing import KopfRunner

from lib.live import fleet, leases
from lib.store import NotFound, open_store
from tests.conftest import ROOT
from tests.operator.conftest import FLEET, populate
from tests.operator.fake_kube import FakeKube

NS = "agents"


def _until(what: str, check, deadline_s: float = 30):
    """Poll ``check()`` until it returns something truthy (bounded; not a timing assertion)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A fake API server with one CtxlakeFleet, one running agent pod and one other pod; the
    ctxlake config in the environment; the store populated with alice and bob."""
    lake = tmp_path / "lake"
    store = open_store(f"file://{lake}")
    held = populate(store)
    cfg = tmp_path / "ctxlake.toml"
    cfg.write_text(f'store = "file://{lake}"\nfleet_id = "{FLEET}"\n')
    for var in ("CTXLAKE_STORE", "CTXLAKE_FLEET_ID", "CTXLAKE_AGENT_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CTXLAKE_CONFIG", str(cfg))
    monkeypatch.setenv("CTXLAKE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CTXLAKE_OPERATOR_STATUS_SECS", "0.5")
    with FakeKube() as kube:
        kube.put("ctxlakefleets", {"metadata": {"name": "team-a", "namespace": NS}, "spec": {"fleetId": FLEET}})
        kube.put("pods", {"metadata": {"name": "alice-0", "namespace": NS, "uid": "pod-alice-0",
                                       "labels": {"ctxlake.io/agent-id": "alice"}},
                          "status": {"phase": "Running"}})
        kube.put("pods", {"metadata": {"name": "web-0", "namespace": NS, "uid": "pod-web-0", "labels": {"app": "web"}},
                          "status": {"phase": "Running"}})
        yield kube, store, held


def test_operator_retires_an_ended_agent_pod_and_reports_fleet_status(cluster):
    kube, store, held = cluster
    path = os.path.join(ROOT, "fleet_operator.py")
    registry = kopf.OperatorRegistry()  # kopf re-executes the file: its handlers land here

    @kopf.on.login(registry=registry)
    def login(**_):
        return kopf.ConnectionInfo(server=kube.url, default_namespace=NS)

    default_registry = kopf.get_default_registry()
    try:
        with KopfRunner(["run", "--standalone", "--namespace", NS, "--verbose", path],
                        registry=registry, timeout=30) as runner:
            status = _until("the CtxlakeFleet status shows two agents",
                            lambda: (kube.get("ctxlakefleets", NS, "team-a").get("status") or {}).get("liveAgents") == 2
                            and kube.get("ctxlakefleets", NS, "team-a")["status"])
            assert status["leasesHeld"] == 3
            assert status["leasesByAgent"] == [{"agentId": "alice", "leases": 2}, {"agentId": "bob", "leases": 1}]
            assert status["fleetId"] == FLEET and status["lastSnapshotAgeSeconds"] > 0
            # the timer's finalizer went on by kopf's JSON patch; status went to the subresource
            # (kopf may patch the finalizer after the first timer tick: wait for it, bounded)
            _until("the finalizer is on", lambda: "ctxlake.io/fleet-operator" in (
                kube.get("ctxlakefleets", NS, "team-a")["metadata"].get("finalizers") or []))
            assert any(p.endswith("/status") for p, _ in kube.patches)
            # nothing happened to a running agent or a pod without the label
            assert leases.read(store, held["alice"][0])[0]["holder"] == "alice"

            # the agent's pod finishes
            pod = kube.get("pods", NS, "alice-0")
            pod["status"]["phase"] = "Succeeded"
            kube.put("pods", pod)
            _until("alice's leases are released",
                   lambda: all(leases.read(store, k)[0]["holder"] is None for k in held["alice"]))
            _until("alice left the roster", lambda: [a["agent_id"] for a in json.loads(
                store.get(fleet.roster_key(FLEET)).data)["agents"]] == ["bob"])
            with pytest.raises(NotFound):
                store.get(fleet.heartbeat_key(FLEET, "alice"))
            status = _until("the status follows",
                            lambda: (kube.get("ctxlakefleets", NS, "team-a").get("status") or {}).get("liveAgents") == 1
                            and kube.get("ctxlakefleets", NS, "team-a")["status"])
            assert status["agents"] == ["bob"] and status["leasesByAgent"] == [{"agentId": "bob", "leases": 1}]
            assert leases.read(store, held["bob"][0])[0]["holder"] == "bob"
            kube.delete("pods", NS, "alice-0")  # a later DELETED of the same pod does no more work
    finally:
        kopf.set_default_registry(default_registry)
    assert runner.exit_code == 0, runner.output[-3000:]
    assert runner.exception is None
    assert "agent alice of fleet team-a retired: 2 lease(s) released" in runner.output
    assert runner.output.count("retired:") == 1
    # least privilege held: kopf asked for no CRD or namespace watch and posted no events
    assert not [r for r in kube.requests if "customresourcedefinitions" in r or "/namespaces?" in r]
    assert not [r for r in kube.unknown if r.startswith("POST")], kube.unknown
    assert not [r for r in kube.requests if r.startswith("PATCH") and "/pods/" in r]  # pods are read-only to it
