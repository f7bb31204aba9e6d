"""Claude Code end to end: hooks installed mid-session, and the transcript backstop filling in
what they never saw (docs/runtimes.md "Transcript backstop").

One session in two parts under one id: ``claude -p`` runs a command before ctxlake is installed
(only the foreign recorder hook fires), then ``ctxlake install``, then ``claude -p --resume`` runs
another command. The hooks captured the second part only; syncd's seal reads the transcript the
SessionEnd payload names and appends what is missing; maint compacts it. The lake then holds both
parts, each event once, the filled ones marked ``imported``.
"""
from __future__ import annotations

import os

import pytest

from lib import identity
from tests.e2e.fake_model import text, tool
from tests.e2e.harness import ClaudeAgent, Fleet

AGENT = "cc-late"
BEFORE, AFTER = "part one, before the hooks", "part two, hooks installed"


@pytest.fixture(scope="module")
def run(claude_bin, model, tmp_path_factory, scenario_timer):
    with scenario_timer:
        fleet = Fleet(str(tmp_path_factory.mktemp("cc-late")))
        agent = ClaudeAgent(fleet, AGENT)
        model.script("late", [[tool("Bash", {"command": "echo before", "description": "before the hooks"})],
                              [text("Ran echo before.")],
                              [tool("Bash", {"command": "echo after", "description": "after the hooks"})],
                              [text("Ran echo after.")]])
        first = agent.run(model, "late", BEFORE)
        spool_before_install = fleet.spool("claude_code")
        agent.install()
        second = agent.run(model, "late", AFTER, resume=first["session_id"])
        sid = first["session_id"]
        out = {"fleet": fleet, "agent": agent, "sid": sid, "second": second, "recorded": agent.recorded(),
               "spool_before_install": spool_before_install, "hooked": fleet.spool("claude_code", sid)}
        out["pass"] = fleet.syncd_pass()
        out["again"] = fleet.syncd_pass()
        fleet.maint_once()
        out["rows"] = fleet.lake_events(sid)
    return out


def test_the_resumed_session_kept_its_id_and_the_first_part_was_not_hooked(run):
    assert run["second"]["session_id"] == run["sid"]
    assert run["spool_before_install"] == [], "nothing of ctxlake ran before install"
    hooked = run["hooked"]
    assert hooked, "the second part was captured by the hooks"
    assert not any(e.get("imported") for e in hooked)
    assert "toolu_e2e_late_t0_0" not in {e.get("message_id") for e in hooked}
    assert BEFORE not in {e.get("content") for e in hooked}


def test_the_backstop_filled_the_first_part_from_the_transcript(run):
    rows, sid = run["rows"], run["sid"]
    filled = [e for e in rows if e.get("imported")]
    assert run["pass"]["backstop_filled"] == len(filled) >= 4, (run["pass"], filled)
    assert run["again"]["backstop_filled"] == 0, "a sealed session is not reconciled again"
    print(f"\nbackstop filled {len(filled)} event(s): {sorted(e['event_type'] for e in filled)}")
    (call,) = [e for e in rows if e.get("message_id") == "toolu_e2e_late_t0_0"]
    assert call["imported"] and call["tool"]["name"] == "Bash" and call["tool"]["exit_code"] == 0
    assert call["event_id"] == identity.event_id(sid, "tool", "toolu_e2e_late_t0_0")
    assert "before" in call["tool"]["result"]
    (prompt,) = [e for e in rows if e["event_type"] == "prompt" and e["content"] == BEFORE]
    assert prompt["imported"]
    (start,) = [e for e in rows if e["event_id"] == identity.event_id(sid, "start")]
    assert start["imported"] and start["emitted_at"] <= prompt["emitted_at"]
    (end_one,) = [e for e in rows if e["event_type"] == "assistant" and e.get("content") == "Ran echo before."]
    assert end_one["imported"] and end_one["event_id"] == identity.event_id(sid, "stop", prompt["turn_id"])


def test_each_event_is_in_the_lake_once_whichever_path_captured_it(run):
    rows = run["rows"]
    assert len({e["event_id"] for e in rows}) == len(rows)
    calls = [e for e in rows if e["event_type"] == "tool_call" and "exit_code" in e["tool"]]
    assert sorted(e["message_id"] for e in calls) == ["toolu_e2e_late_t0_0", "toolu_e2e_late_t2_0"]
    assert sorted(e["content"] for e in rows if e["event_type"] == "prompt") == sorted([BEFORE, AFTER])
    ends = sorted(e["content"] for e in rows if e["event_type"] == "assistant")
    assert ends == ["Ran echo after.", "Ran echo before."], "one turn end per turn (a Stop the exit ended is filled)"
    hooked = {e["event_id"] for e in run["hooked"]}
    assert hooked <= {e["event_id"] for e in rows}, "every hook capture shipped"
    assert not any(e.get("imported") for e in rows if e["event_id"] in hooked), "a hook's capture is never replaced"


def test_no_hook_error_and_the_transcript_is_still_where_claude_code_wrote_it(run):
    assert run["fleet"].hook_errors() == ""
    assert os.path.exists(run["agent"].transcript(run["sid"]))
