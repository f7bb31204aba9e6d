"""Hermes end to end: a ``hermes -z`` run killed with SIGKILL mid-session never fires
on_session_end; syncd seals the session once idle with its process gone, and the transcript
backstop reconciles it with Hermes' own ``state.db`` (docs/operations.md "Sessions that never
ended", docs/runtimes.md "Transcript backstop").

The model answers the first request with a command, then never answers the second: while Hermes
waits for it, the test kills Hermes by its pid. With ``[sync] idle_seal_secs = 1`` syncd's real
pass seals the session; whatever ``state.db`` holds of it by then and the hooks missed is filled
in, each event once.
"""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from lib import idle_seal
from tests.e2e.fake_model import text, tool
from tests.e2e.harness import Fleet, HermesAgent

AGENT = "hermes-killed"


@pytest.fixture(scope="module")
def run(hermes_bin, model, tmp_path_factory, scenario_timer):
    with scenario_timer:
        fleet = Fleet(str(tmp_path_factory.mktemp("hermes-killed")))
        fleet.set_sync("idle_seal_secs", 1)
        agent = HermesAgent(fleet, AGENT, model, "hk")
        agent.install()
        reached, release = threading.Event(), threading.Event()

        def hang(request):
            reached.set()
            release.wait(300)
            return [text("nobody reads this: Hermes was killed")]

        model.script("hk", [[tool("terminal", {"command": "echo before-kill"})], hang])
        proc = agent.start("run a command, then get killed")
        try:
            assert reached.wait(240), "Hermes never asked for the turn after the command"
            fleet.wait_hooks()
            (sid,) = {r["payload"]["session_id"] for r in agent.recorded()}
            out = {"fleet": fleet, "sid": sid, "pid": proc.pid, "recorded": agent.recorded(),
                   "record": idle_seal.read(os.path.join(fleet.home, "spool", ".state", "hermes", sid + ".proc")),
                   "alive": fleet.syncd_pass()}
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            release.set()
        time.sleep(1.5)  # idle_seal_secs = 1: the spool is idle by then
        fleet.wait_hooks()
        out["spool"] = fleet.spool("hermes", sid)
        out["killed"] = fleet.syncd_pass()
        fleet.maint_once()
        out["rows"] = fleet.lake_events(sid)
    return out


def test_the_hooks_recorded_hermes_and_its_state_db(run):
    assert run["record"]["pid"] == run["pid"], run["record"]
    assert run["record"]["transcript_path"].endswith(os.path.join(".hermes", "state.db"))
    assert run["alive"]["sealed"] == 0, "the session is open while Hermes runs"
    assert "on_session_end" not in {r["event"] for r in run["recorded"]}, "SIGKILL: no end event"


def test_the_killed_session_was_sealed_and_reconciled_with_state_db(run):
    p = run["killed"]
    assert p["errors"] == 0 and p["sealed"] == 1 and p["idle_sealed"] == 1, p
    rows = run["rows"]
    filled = sorted(e["event_type"] for e in rows if e.get("imported"))
    print(f"\nHermes idle seal: backstop filled {p['backstop_filled']} event(s): {filled}")
    assert p["backstop_filled"] == len(filled)
    ids = [e["event_id"] for e in rows]
    assert len(ids) == len(set(ids))
    calls = [e for e in rows if e["event_type"] == "tool_call" and "exit_code" in e["tool"]]
    assert [c["tool"]["name"] for c in calls] == ["terminal"] and "before-kill" in calls[0]["tool"]["result"]
    assert run["fleet"].hook_errors() == ""
