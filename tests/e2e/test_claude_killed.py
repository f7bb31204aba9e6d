"""Claude Code end to end: a session killed with SIGKILL mid-turn never sends SessionEnd; syncd
seals it once idle with its process gone, and the session resumed afterwards ends with each event
once (docs/operations.md "Sessions that never ended").

``claude -p`` runs a command, then the model's next answer never comes: while Claude Code waits
for it, the test kills the CLI with SIGKILL (by its own pid). No SessionEnd, no ``.done``. With
``[sync] idle_seal_secs = 1`` syncd's real pass seals the session, running the transcript backstop
from the transcript path the hooks recorded. Then ``claude -p --resume`` goes on with the same
session to a real end; syncd seals it again and maint compacts both parts.
"""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from lib import idle_seal
from tests.e2e.fake_model import text, tool
from tests.e2e.harness import ClaudeAgent, Fleet

AGENT = "cc-killed"
FIRST, SECOND = "run a command, then get killed", "go on after the kill"


class _Hang:
    """A model turn that does not answer until released (the first time it is asked)."""

    def __init__(self):
        self.reached, self.release, self.session = threading.Event(), threading.Event(), None
        self.calls = 0

    def __call__(self, request):
        self.calls += 1
        if self.calls == 1:
            self.session = request["headers"].get("x-claude-code-session-id")
            self.reached.set()
            self.release.wait(300)
            return [text("nobody reads this: the CLI was killed")]
        return [text("Resumed after the kill.")]


@pytest.fixture(scope="module")
def run(claude_bin, model, tmp_path_factory, scenario_timer):
    with scenario_timer:
        fleet = Fleet(str(tmp_path_factory.mktemp("cc-killed")))
        fleet.set_sync("idle_seal_secs", 1)
        agent = ClaudeAgent(fleet, AGENT)
        agent.install()
        hang = _Hang()
        model.script("killed", [[text("Running it."), tool("Bash", {"command": "echo before-kill",
                                                                    "description": "one command"})],
                                hang, [text("Resumed after the kill.")]])
        proc = agent.start(model, "killed", FIRST)
        try:
            assert hang.reached.wait(240), "Claude Code never asked for the turn after the command"
            fleet.wait_hooks()
            sid = hang.session
            out = {"fleet": fleet, "sid": sid, "pid": proc.pid,
                   "record": idle_seal.read(os.path.join(fleet.home, "spool", ".state", "claude_code", sid + ".proc")),
                   "alive": fleet.syncd_pass()}
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            hang.release.set()
        out["done_after_kill"] = os.path.exists(os.path.join(fleet.home, "spool", "claude_code", sid + ".done"))
        time.sleep(1.5)  # idle_seal_secs = 1: the spool is idle by then
        fleet.wait_hooks()
        out["killed"] = fleet.syncd_pass()
        out["resumed_run"] = agent.run(model, "killed", SECOND, resume=sid)
        out["resumed"] = fleet.syncd_pass()
        fleet.maint_once()
        out["rows"] = fleet.lake_events(sid)
    return out


def test_the_hooks_recorded_claude_code_itself_as_the_session_s_process(run):
    assert run["record"]["pid"] == run["pid"], run["record"]
    assert run["record"]["transcript_path"].endswith(run["sid"] + ".jsonl")
    assert run["alive"]["sealed"] == 0, "the session is open while Claude Code runs"


def test_the_killed_session_was_sealed_once_idle_with_the_backstop(run):
    assert not run["done_after_kill"], "SIGKILL: no SessionEnd ran"
    p = run["killed"]
    assert p["errors"] == 0 and p["sealed"] == 1 and p["idle_sealed"] == 1, p
    filled = sorted(e["event_type"] for e in run["rows"] if e.get("imported"))
    print(f"\nidle seal of the killed session: backstop filled {p['backstop_filled']} event(s): {filled}")
    # the killed turn's end (its text) and the session's end came from the transcript; the end
    # the resumed session's SessionEnd hooked later is the same event, one row in the lake
    assert p["backstop_filled"] >= 2 and "assistant" in filled, filled


def test_the_resumed_session_ended_with_each_event_once(run):
    assert run["resumed_run"]["session_id"] == run["sid"]
    p = run["resumed"]
    assert p["errors"] == 0 and p["sealed"] == 1 and p["idle_sealed"] == 0, p
    print(f"\nseal after the resume: backstop filled {p['backstop_filled']} event(s)")
    rows = run["rows"]
    ids = [e["event_id"] for e in rows]
    assert len(ids) == len(set(ids))
    assert sorted(e["content"] for e in rows if e["event_type"] == "prompt") == sorted([FIRST, SECOND])
    calls = [e for e in rows if e["event_type"] == "tool_call" and "exit_code" in e["tool"]]
    assert [c["tool"]["name"] for c in calls] == ["Bash"] and "before-kill" in calls[0]["tool"]["result"]
    assert sum(e["event_type"] == "session_end" for e in rows) == 1
    assert run["fleet"].hook_errors() == ""
