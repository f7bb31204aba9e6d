"""Leases, roster and the maintenance lease on a store that does not honour conditional writes
(issue #25): behind the header-stripping proxy in front of a real SeaweedFS nothing is granted,
syncd and maint say so once per pass, ``ctxlake status`` shows why, the hooks keep answering and
capturing; a gateway that drops conditions only sometimes is caught by the repeated probe."""
from __future__ import annotations

import io
import json
import os
import threading

import pytest

import ctxlake
from lib import config, maintenance, syncpass
from lib.live import leases, presence
from lib.store import Unavailable, open_store
from lib.store.memory import MemoryStore
from tests.live.conftest import REPO_ID
from tests.live.helpers import Log, hook, mcp_record, prompt, read_json, tool
from tests.support.s3server import StrippingProxy, use_server_env

F = "fleet-live"


@pytest.fixture
def proxied_cfg(home, stripping_proxy, monkeypatch):
    """Config for fleet-live / alice whose store is reached through the stripping proxy."""
    _proxy, url = stripping_proxy
    monkeypatch.setenv("CTXLAKE_STORE", url)
    monkeypatch.setenv("CTXLAKE_FLEET_ID", F)
    monkeypatch.setenv("CTXLAKE_AGENT_ID", "alice")
    return config.load()


@pytest.mark.s3
def test_eight_two_agent_races_through_the_stripping_proxy_grant_nothing(proxied_cfg, git_repo, monkeypatch):
    """The issue's attack: 8 concurrent alice/bob claims of one file. Before: 3 of 8 double grants."""
    store_url = proxied_cfg.store
    outcomes = []
    for i in range(8):
        barrier = threading.Barrier(2)

        def claim(agent):
            store = open_store(store_url)
            barrier.wait()
            try:
                leases.hold(store, F, [{"repo": REPO_ID, "path": f"src/race-{i}.py"}], holder=agent, reason="race")
                outcomes.append("granted")
            except leases.Unsafe as exc:
                outcomes.append(("unsafe", exc.reason))

        threads = [threading.Thread(target=claim, args=(a,)) for a in ("alice", "bob")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert len(outcomes) == 16 and "granted" not in outcomes
    assert all("ignored" in reason for _, reason in outcomes)
    assert list(open_store(store_url).list(leases.leases_prefix(F))) == []  # not one lease object written
    out = io.StringIO()
    monkeypatch.chdir(git_repo)
    assert ctxlake.main(["lease", "acquire", "src/app.py", "--reason", "x"], out, out) == 1
    line, = out.getvalue().splitlines()
    assert line.startswith("ctxlake: lease acquire: store does not honour conditional writes (")
    assert "run `ctxlake doctor`" in line


@pytest.mark.s3
def test_syncd_and_maint_refuse_and_say_so_once_per_pass_while_hooks_keep_capturing(home, proxied_cfg, git_repo):
    cfg = proxied_cfg
    hook(home, "alice", prompt("sess-alice", git_repo, "split the lexer"))
    rid = mcp_record(cfg.paths, "lease_request", "alice", paths=["src/parser/"], reason="split", cwd=git_repo)
    store = open_store(cfg.store)
    for _ in range(2):
        log = Log()
        summary = syncpass.run_pass(cfg, store, log)
        assert "ignored" in summary["live"]["live_refused"] and "live_error" not in summary["live"]
        assert log.names().count("live_plane_refused") == 1
    leases_view, roster_view = read_json(cfg.paths.leases(F)), read_json(cfg.paths.roster(F))
    assert leases_view["leases"] == [] and "ignored" in leases_view["refused"]
    assert roster_view["agents"] == [] and roster_view["refused"] == leases_view["refused"]
    req = leases_view["requests"][rid]
    assert req["outcome"] == "refused" and "does not honour conditional writes" in req["error"]
    assert list(store.list(leases.leases_prefix(F))) == [] and list(store.list(presence.roster_key(F))) == []
    # status says why there are no leases
    out = io.StringIO()
    assert ctxlake.main(["status"], out) == 0
    assert "leases     0 (refused: the store does not honour conditional writes: If-None-Match" in out.getvalue()
    # the hooks keep answering and capturing: bob edits the file alice asked for, no lease warning
    answer = hook(home, "bob", tool("sess-bob", git_repo, "Edit", {"file_path": os.path.join(git_repo, "src/parser/lexer.py"),
                                                                  "old_string": "a", "new_string": "b"}))
    assert "lease" not in json.dumps(answer).lower()
    with open(cfg.paths.session_spool("claude_code", "sess-bob"), "rb") as fh:
        assert any((json.loads(line).get("tool") or {}).get("name") == "Edit" for line in fh if line.strip())
    # maint takes no maintenance lease there: refused, logged once, exit 1
    log = Log()
    summary = maintenance.run_once(cfg, store, log)
    assert summary["ran"] is False and "ignored" in summary["refused"]
    assert log.names().count("maint_refused") == 1
    assert list(store.list(leases.leases_prefix(F))) == []


@pytest.mark.s3
def test_a_gateway_dropping_conditions_only_sometimes_passes_one_round_and_fails_the_repeats(seaweed, monkeypatch):
    proxy = StrippingProxy(seaweed, every=5)  # every 5th conditional request loses its headers
    use_server_env(monkeypatch, seaweed, AWS_ENDPOINT_URL_S3=proxy.endpoint)
    url = seaweed.url()
    try:
        store = open_store(url)
        key = leases.leases_prefix(F)
        assert leases.probe_round(store, leases.probe_key(key)) is None  # nothing stripped yet: one round proves little
        log = Log()
        with pytest.raises(leases.Unsafe) as err:
            leases.require_conditional(store, key, log=log)
        assert proxy.stripped == 1 and "ignored" in err.value.reason
        assert log.events[-1][1]["honoured"] is False
        with pytest.raises(leases.Unsafe):  # sticky for the process: never trusted again
            leases.acquire(store, leases.lease_key(F, "k"), holder="alice")
    finally:
        proxy.close()
        seaweed.wipe(url.split("/", 3)[3] + "/")


def test_the_verdict_is_probed_again_periodically_and_an_outage_records_none():
    clock = [0.0]
    store = MemoryStore("memory://probe-periodic")
    store.conditional_writes_native = False  # probe it like a remote S3 store (it honours every condition)
    log = Log()
    key = leases.lease_key(F, "k")
    leases.require_conditional(store, key, log=log, clock=lambda: clock[0])
    assert [f["rounds"] for e, f in log.events] == [leases.PROBE_ROUNDS]
    leases.require_conditional(store, key, log=log, clock=lambda: clock[0])  # within PROBE_SECS: cached
    clock[0] += leases.PROBE_SECS
    leases.require_conditional(store, key, log=log, clock=lambda: clock[0])
    assert [f["rounds"] for e, f in log.events] == [leases.PROBE_ROUNDS, 1]
    assert [e.key for e in store.list("live/")] == [f"live/{F}/_probe.json"]  # one object, overwritten, never deleted
    down = MemoryStore("memory://probe-down")
    down.conditional_writes_native = False
    down.fail_next = [Unavailable("store down")]
    with pytest.raises(Unavailable):
        leases.require_conditional(down, key)
    assert leases.conditional_verdict(down, key) is None
    leases.require_conditional(down, key)  # the next call probes afresh and trusts it
