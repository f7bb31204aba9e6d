"""Claude Code end to end: the newer hook events and fields, as the pinned CLI sends them
(docs/runtimes.md "Claude Code").

Two ``claude -p`` runs of one agent with ``ctxlake install``: ``/model claude-haiku-4-5`` then a
prompt, in one stream-json session (Claude Code runs ``/model`` as a local command:
PreModelSwitch, PostModelSwitch, no model call), and a turn that
calls an MCP tool and delegates to a sub-agent (``Task``: SubagentStart, SubagentStop with
``agent_transcript_path`` and ``last_assistant_message``). A recorder hook also listens on
PreModelSwitch and SubagentStart, which ctxlake does not install. ``make e2e-capture`` saves the
payloads as ``tests/fixtures/captured/claude-code-<v>/hooks-newer-events.json``.
"""
from __future__ import annotations

import json
import os

import pytest

from lib import identity
from tests.e2e import capture, runtimes
from tests.e2e.fake_model import text, tool
from tests.e2e.harness import ClaudeAgent, Fleet

AGENT = "cc-newer"
SUB_PROMPT = "say hi from the sub-agent"
LISTEN_ONLY = ("PreModelSwitch", "SubagentStart")


def _delegate(request):
    first = (request["body"].get("messages") or [{}])[0].get("content")
    first = first if isinstance(first, str) else json.dumps(first)
    if SUB_PROMPT in first:  # the sub-agent's own conversation
        return [text("hi from the sub-agent")]
    return [tool("mcp__ctxlake__fleet_status", {})]


@pytest.fixture(scope="module")
def run(claude_bin, model, tmp_path_factory, scenario_timer):
    with scenario_timer:
        fleet = Fleet(str(tmp_path_factory.mktemp("cc-newer")))
        agent = ClaudeAgent(fleet, AGENT)
        settings_path = os.path.join(agent.home, ".claude", "settings.json")
        with open(settings_path) as fh:
            settings = json.load(fh)
        for event in LISTEN_ONLY:
            settings["hooks"][event] = [{"matcher": "*", "hooks": [{"type": "command",
                                                                    "command": agent.recorder_command(event)}]}]
        with open(settings_path, "w") as fh:
            json.dump(settings, fh, indent=2)
        agent.install()
        # `/model` and then a prompt in one live session: `claude -p "/model …"` alone can exit
        # before its model-switch hooks ran (seen in two full-suite runs)
        model.script("switch", [[text("ok")]])
        switch = agent.run_messages(model, "switch", ["/model claude-haiku-4-5", "say ok"])
        # the sub-agent runs in the background; the main agent's `sleep` keeps the session open
        # while the sub-agent's async SubagentStop capture runs (one still running at exit is ended)
        model.script("newer", [_delegate, [tool("Task", {"description": "greet", "prompt": SUB_PROMPT,
                                                         "subagent_type": "general-purpose"})],
                               [tool("Bash", {"command": "sleep 3", "description": "wait for the sub-agent"})],
                               [text("The sub-agent said hi.")]])
        work = agent.run(model, "newer", "check the fleet, then ask a sub-agent to say hi")
        out = {"fleet": fleet, "agent": agent, "recorded": agent.recorded(), "switch": switch["session_id"],
               "work": work["session_id"], "model_url": model.url}
        out["spool"] = fleet.spool("claude_code")
    if capture.capturing():
        norm = capture.normaliser_for(fleet, agent, [(out["model_url"], "http://127.0.0.1:8765")])
        wanted = {"PreModelSwitch", "PostModelSwitch", "SubagentStart", "SubagentStop", "PreToolUse"}
        keep = [p for p in capture.payloads(out["recorded"]) if p.get("hook_event_name") in wanted
                and (p["hook_event_name"] != "PreToolUse" or p.get("mcp_server"))]
        d = capture.folder("claude-code", runtimes.CLAUDE_CODE_VERSION)
        capture.write_json(os.path.join(d, "hooks-newer-events.json"), norm.value(keep), fleet)
    return out


def _payloads(run, event):
    return [p for p in capture.payloads(run["recorded"]) if p.get("hook_event_name") == event]


def test_a_model_switch_is_one_model_switch_event(run):
    (post,) = _payloads(run, "PostModelSwitch")
    assert post["to_model"] == "claude-haiku-4-5" and post["source"] == "command"
    (pre,) = _payloads(run, "PreModelSwitch")  # listened to for the capture; ctxlake does not install it
    assert pre["prompt_id"] == post["prompt_id"]
    (env,) = [e for e in run["spool"] if e["event_type"] == "model_switch"]
    assert env["session_id"] == run["switch"] and env["to_model"] == "claude-haiku-4-5"
    assert env["from_model"] == post["from_model"] and env["switch_source"] == "command"
    assert env["event_id"] == identity.event_id(run["switch"], "model_switch", post["prompt_id"], post["from_model"],
                                                post["to_model"])


def test_an_mcp_call_names_its_server_and_a_sub_agent_its_transcript_and_last_message(run):
    (pre,) = [p for p in _payloads(run, "PreToolUse") if p.get("mcp_server")]
    assert pre["mcp_server"]["name"] == "ctxlake"
    calls = [e for e in run["spool"] if e["event_type"] == "tool_call" and e["tool"]["name"] == "mcp__ctxlake__fleet_status"]
    assert calls and all(e["tool"]["mcp_server"] == "ctxlake" for e in calls)
    stops = _payloads(run, "SubagentStop")
    assert stops and all(p["agent_transcript_path"].endswith(".jsonl") for p in stops)
    mine = [e for e in run["spool"] if e["event_type"] == "assistant" and str(e.get("parent_message_id", "")).startswith("subagent:")]
    assert sorted(e["content"] for e in mine) == sorted(p["last_assistant_message"] for p in stops)
    assert "agent_transcript_path" not in json.dumps(run["spool"]), "a host's path stays on the host"


def test_no_newer_payload_carries_a_scratchpad_dir_and_every_one_a_prompt_id(run):
    payloads = capture.payloads(run["recorded"])
    assert not [p for p in payloads if "scratchpad_dir" in p], "2.1.332 sends no scratchpad_dir in these runs"
    turn = [p for p in payloads if p["hook_event_name"] not in ("SessionStart",)]
    assert all(isinstance(p.get("prompt_id"), str) for p in turn)
    assert run["fleet"].hook_errors() == ""
