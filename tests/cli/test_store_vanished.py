"""The store folder deleted under a running syncd (session 4 finding 5): the tester's steps on a
file:// store, through the real ``ctxlake.py`` and ``hook.py``. syncd must log ``store_vanished``
and ship nothing (no empty store silently recreated), ``status`` must say the last sync failed and
what to do, ``sync --once`` exits 4; ``ctxlake init`` again starts a new lake there and shipping
resumes with the spool that was kept."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

from tests.cli.test_errors import ROOT, assert_one_line_failure

PAYLOAD = os.path.join(ROOT, "tests", "fixtures", "claude-hooks", "attio-mcp-server__pre_tool_use.json")


def _hook(box, payloads) -> None:
    for p in payloads:
        r = subprocess.run([sys.executable, "-I", "-S", os.path.join(ROOT, "hook.py"), "claude_code",
                            p["hook_event_name"], "--fleet=team-a", "--agent=alice"],
                           input=json.dumps(p).encode(), capture_output=True, env=box.env, timeout=120)
        assert r.returncode == 0


def _wait(cond, what: str, proc=None, secs: float = 180) -> None:
    end = time.monotonic() + secs  # generous: a loaded 2-core machine
    while time.monotonic() < end:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"syncd exited {proc.returncode} while waiting for {what}")
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_store_deleted_under_syncd_is_an_error_not_a_new_empty_store(inited):
    store = os.path.join(inited.tmp, "lake")
    status_file = os.path.join(inited.home, ".ctxlake", "cache", "team-a", "sync.json")
    payloads = json.load(open(PAYLOAD))
    _hook(inited, payloads[:3])
    log_path = os.path.join(inited.tmp, "syncd.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "ctxlake.py"), "sync"], stdout=subprocess.DEVNULL,
                                stderr=log, env=inited.env, cwd=inited.home)
    try:
        _wait(lambda: os.path.exists(status_file) and json.load(open(status_file)).get("fleet_marker_seen"),
              "a first pass that saw the fleet marker", proc)
        for name in os.listdir(store):  # rm -rf store/* store/.ctxlake-store
            path = os.path.join(store, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
        _hook(inited, payloads[3:6])  # a session goes on meanwhile
        _wait(lambda: "store_vanished" in open(log_path).read(), "syncd's store_vanished line", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    line = next(json.loads(ln) for ln in open(log_path) if '"store_vanished"' in ln)
    assert line["level"] == "error" and "_meta/fleets/team-a.json" in line["key"]
    assert "sessions" not in os.listdir(store), os.listdir(store)  # nothing recreated, nothing shipped there
    st = inited.run("status")
    assert "FAILED" in st.stdout and "no longer holds _meta/fleets/team-a.json" in st.stdout, st.stdout
    nxt = next(ln for ln in st.stdout.splitlines() if ln.startswith("next"))
    assert "restore or remount the store" in nxt and "ctxlake init" in nxt, nxt
    assert_one_line_failure(inited.run("sync", "--once"), "store", "no longer holds _meta/fleets/team-a.json")
    assert json.loads(inited.run("status", "--json").stdout)["spool_backlog"]["bytes"] > 0  # the spool is kept
    # the operator means it: init again starts a new lake there, and the kept spool ships
    r = inited.run("init", "--store", "file://" + store, "--fleet", "team-a", "--agent-id", "alice")
    assert r.returncode == 0, r.stderr
    r = inited.run("sync", "--once")
    assert r.returncode == 0, r.stderr
    assert "sessions" in os.listdir(store)
