"""Every reader of lease state judges expiry by the store clock through one rule
(:func:`lib.live.leases.is_live`), so ``ctxlake status``, the hook, ``ctxlake lease list``,
``fleet_status`` and ``/metrics`` agree — read all at once just before and just after a lease
expires (issue #25: ``status`` used to copy ``leases.json`` without checking ``expires_at``)."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import time

import ctxlake
from lib import mcp_tools, metrics, syncpass
from lib.live import leases
from lib.store import open_store
from tests.live.helpers import Log, hook, prompt, tool

F = "fleet-live"
TTLS = (4, 15, 60)
"""Lease lifetimes tried in turn, seconds: the first the five readers finish within is used."""


def _metric(text: str, name: str) -> float:
    line, = [x for x in text.splitlines() if x.startswith(name + " ")]
    return float(line.split()[1])


def read_all(home, cfg, repo) -> dict:
    """How many leases each reader says are held now (the hook: does bob's edit get warned)."""
    out = io.StringIO()
    assert ctxlake.main(["status", "--json"], out) == 0
    status = len(json.loads(out.getvalue())["leases"])
    out = io.StringIO()
    assert ctxlake.main(["lease", "list", "--json"], out) == 0
    listed = len(json.loads(out.getvalue()))
    bob = mcp_tools.Tools(mcp_tools.Context(dataclasses.replace(cfg, agent_id="bob"), cwd=repo, clock=time.time))
    fleet_status = len(bob.fleet_status({})["leases"])
    text = metrics.SyncdMetrics(cfg.paths, cfg.fleet_id).render().decode()
    answer = hook(home, "bob", tool("sess-bob", repo, "Edit", {"file_path": os.path.join(repo, "src/app.py"),
                                                              "old_string": "a", "new_string": "b"}))
    warned = int("held by alice" in json.dumps(answer))
    return {"status": status, "lease list": listed, "fleet_status": fleet_status,
            "/metrics": int(_metric(text, "ctxlake_leases_cached")), "hook": warned}


def test_status_hook_lease_list_fleet_status_and_metrics_agree_around_an_expiry(home, cfg, git_repo, monkeypatch):
    hook(home, "bob", prompt("sess-bob", git_repo, "tidy the app"))
    monkeypatch.chdir(git_repo)
    store = open_store(cfg.store)
    # A lease short enough to expire within the test, taken through the library call `ctxlake
    # lease acquire` makes (the CLI refuses a TTL under fleet_claim's 30 s floor). Every reader
    # must answer while it is held; on a loaded machine the first TTL may run out before the five
    # readers are done, so a longer one is taken then (the readers' answers are what is checked,
    # never how fast they came).
    for ttl in TTLS:
        leases.hold(store, F, [leases.resolve("src/app.py", git_repo)], holder="alice", reason="refactor", ttl=ttl)
        syncpass.run_pass(cfg, store, Log())  # leases.json now lists alice's lease; nothing renews it
        (record,), _ = leases.list_leases(store, F)
        assert record["holder"] == "alice"
        held = read_all(home, cfg, git_repo)
        if store.clock() < record["expires_at"]:
            break
        time.sleep(max(0.0, record["expires_at"] - store.clock()) + 0.3)
    else:
        raise AssertionError(f"the readers never finished within a lease of {TTLS[-1]} s")
    assert held == {k: 1 for k in ("status", "lease list", "fleet_status", "/metrics", "hook")}
    time.sleep(max(0.0, record["expires_at"] - store.clock()) + 0.3)  # past expiry by the store clock; no new pass
    assert read_all(home, cfg, git_repo) == {k: 0 for k in ("status", "lease list", "fleet_status", "/metrics", "hook")}
    out = io.StringIO()
    assert ctxlake.main(["status"], out) == 0
    assert "leases     0" in out.getvalue() and "held by alice" not in out.getvalue()
