"""Issue #7 acceptance: two agents corroborate a convention independently; a third session's
briefing carries it with "2 independent sessions". Real hook, syncd, maint; proposals arrive
as MCP spool records."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

CONVENTION = "Run the test suite with `pytest -x -q` from the repo root"


def _run(args, env, stdin=None):
    r = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, input=stdin, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return r


@pytest.fixture
def env(home):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    e.update(CTXLAKE_HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), CTXLAKE_FLEET_ID="mem",
             CTXLAKE_HOOK_SYNC="1", PYTHONPATH=ROOT)
    return e


def _session(env, agent, sid, tool_id, cwd):
    e = dict(env, CTXLAKE_AGENT_ID=agent, HOSTNAME=f"{agent}-laptop")  # one host per agent
    for p in ({"hook_event_name": "SessionStart", "session_id": sid, "source": "startup", "cwd": cwd},
              {"hook_event_name": "UserPromptSubmit", "session_id": sid, "prompt": "make the tests pass", "cwd": cwd},
              {"hook_event_name": "PostToolUse", "session_id": sid, "tool_name": "Bash", "tool_use_id": tool_id,
               "tool_input": {"command": "pytest -x -q"}, "tool_response": {"stdout": "3 passed"}, "cwd": cwd},
              {"hook_event_name": "SessionEnd", "session_id": sid, "reason": "exit", "cwd": cwd}):
        r = _run(["-I", "-S", "hook.py", "claude_code"], e, json.dumps(p).encode())
    return r


def _propose(home, agent, sid, tool_id, record_id):
    rec = {"kind": "proposed", "record_id": record_id, "fleet_id": "mem", "agent_id": agent, "session_id": sid,
           "requested_at": "2026-11-29T12:00:00.000Z", "claim_id": "agent-chosen-id", "claim": CONVENTION,
           "claim_type": "convention", "subject": "tests", "scope": "agent", "observed_by": agent,
           "observed_at": "2026-11-29T12:00:00.000Z", "evidence": [{"session_id": sid, "message_id": tool_id}]}
    os.makedirs(os.path.join(home, "spool", "mcp"), exist_ok=True)
    with open(os.path.join(home, "spool", "mcp", "mem.ndjson"), "a") as fh:
        fh.write(json.dumps(rec) + "\n")


def _claims(env, *extra):
    return json.loads(_run(["ctxlake.py", "claims", "--json", *extra], dict(env, CTXLAKE_AGENT_ID="ops")).stdout)


def test_two_independent_sessions_promote_a_convention_into_the_briefing(env, home):
    _session(env, "alice", "sess-a", "toolu_A1", home)
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice", HOSTNAME="alice-laptop"))
    _propose(home, "alice", "sess-a", "toolu_A1", "01JREC0000000000000000000A")
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice", HOSTNAME="alice-laptop"))
    _run(["maint.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice"))
    (c,) = _claims(env)
    assert c["status"] == "candidate" and "convention needs 2" in c["explain"]

    _session(env, "bob", "sess-b", "toolu_B1", home)
    _propose(home, "bob", "sess-b", "toolu_B1", "01JREC0000000000000000000B")
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="bob", HOSTNAME="bob-laptop"))
    out = json.loads(_run(["maint.py", "--once", "--json"], dict(env, CTXLAKE_AGENT_ID="bob")).stdout)
    assert out["promoted"] == 1
    (c,) = _claims(env, "--status", "promoted")
    assert c["independent_sessions"] == 2 and c["confidence"] == 0.8 and c["observers"] == ["alice", "bob"]
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="carol"))

    start = {"hook_event_name": "SessionStart", "session_id": "sess-c", "source": "startup", "cwd": home}
    ans = json.loads(_run(["-I", "-S", "hook.py", "claude_code", "SessionStart"], dict(env, CTXLAKE_AGENT_ID="carol"),
                          json.dumps(start).encode()).stdout)
    text = ans["hookSpecificOutput"]["additionalContext"]
    assert CONVENTION in text and "2 independent sessions" in text and "conf 0.80" in text
    env_c = json.loads(open(os.path.join(home, "spool", "claude_code", "sess-c.ndjson")).readline())
    assert env_c["injected_context"] == [c["claim_id"]]


def test_citation_of_another_fleets_session_is_rejected_with_a_reason(env, home):
    _session(env, "alice", "sess-a", "toolu_A1", home)
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice", HOSTNAME="alice-laptop"))
    _propose(home, "alice", "sess-of-another-fleet", "toolu_X", "01JREC0000000000000000000C")
    out = json.loads(_run(["syncd.py", "--once", "--json"], dict(env, CTXLAKE_AGENT_ID="alice")).stdout)
    assert out["claims"] == {"proposed": 0, "rejected": 1}
    _run(["maint.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice"))
    (c,) = _claims(env)
    assert c["status"] == "rejected" and "no citation resolves" in c["reason"]
    # replaying the same spool record writes nothing new
    os.unlink(os.path.join(home, "spool", ".state", "consumers", "claims-mem.json"))
    _run(["syncd.py", "--once"], dict(env, CTXLAKE_AGENT_ID="alice", HOSTNAME="alice-laptop"))
    assert len([1 for root, _, n in os.walk(os.path.join(home, "lake", "claims", "events")) for _ in n]) == 1
