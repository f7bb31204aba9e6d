"""The Claude Code adapter and importer on what a real Claude Code run sent and wrote
(``tests/fixtures/captured/claude-code-2.1.332``, captured by ``make e2e-capture``: the CLI driven
by a scripted model through a shell command, a read, an edit, a write, two ctxlake MCP calls and a
failing command). Differences the real payloads showed are pinned here."""
from __future__ import annotations

import json
import os

from lib.importers import claude_code as importer
from tests.conftest import FIXTURES

CAPTURED = os.path.join(FIXTURES, "captured", "claude-code-2.1.332")


def _hooks() -> list[dict]:
    with open(os.path.join(CAPTURED, "hooks.json"), encoding="utf-8") as fh:
        return json.load(fh)


def test_every_captured_payload_maps_and_the_failure_keeps_its_exit_status(hook):
    payloads = _hooks()
    for p in payloads:
        assert isinstance(hook("claude_code", p), dict)
    assert hook.errors() == ""
    envs = hook.envelopes("claude_code")
    assert len(envs) == len(payloads), "every captured event is one envelope"
    (failure,) = [p for p in payloads if p["hook_event_name"] == "PostToolUseFailure"]
    assert failure["error"].startswith("Exit code 2\n") and "tool_response" not in failure
    (env,) = [e for e in envs if e.get("message_id") == failure["tool_use_id"] and "exit_code" in e["tool"]]
    assert env["tool"]["exit_code"] == 2 and env["tool"]["result"] == failure["error"]
    ok = [e for e in envs if e["event_type"] == "tool_call" and e["tool"].get("exit_code") == 0]
    assert len(ok) == 7 and all(e["tool"]["name"] != "Bash" or e["tool"]["result"] for e in ok)
    mcp = [e for e in envs if e["event_type"] == "tool_call" and e["tool"]["name"].startswith("mcp__ctxlake__")]
    assert {e["tool"]["name"] for e in mcp} == {"mcp__ctxlake__fleet_status", "mcp__ctxlake__memory_propose",
                                                "mcp__ctxlake__memory_search"}


def test_failure_exit_code_reads_the_shell_status_and_defaults_to_one():
    from lib.adapters.claude_code import failure_exit_code

    assert failure_exit_code("Exit code 2\nls: cannot access 'x'") == 2
    assert failure_exit_code("Exit code 127") == 127
    assert failure_exit_code("Exit code 0\n") == 1, "a failure is never status 0"
    assert failure_exit_code("String to replace not found in file.") == 1
    assert failure_exit_code(None) == 1


def test_import_of_the_captured_transcript_agrees_with_the_hooks(home):
    payloads = _hooks()
    sid = payloads[0]["session_id"]
    by_session, result, _ = importer.parse_file(os.path.join(CAPTURED, "transcript-first.jsonl"), fleet_id="f", agent_id="a")
    assert list(by_session) == [sid] and result.skipped_lines == 0
    imported = {e["message_id"]: e["tool"]["exit_code"] for e in by_session[sid] if e["event_type"] == "tool_call"}
    hooked = {p["tool_use_id"]: (2 if p["hook_event_name"] == "PostToolUseFailure" else 0)
              for p in payloads if p["session_id"] == sid and p["hook_event_name"].startswith("PostToolUse")}
    assert imported == hooked
    assert [e["content"] for e in by_session[sid] if e["event_type"] == "prompt"] == [
        next(p["prompt"] for p in payloads if p["hook_event_name"] == "UserPromptSubmit")]


def test_a_denied_edit_is_spooled_as_an_attempt_without_an_outcome(hook):
    """Captured from agent B of the lease scenario: the first Edit ran under policy ``warn``, the
    second was denied by our PreToolUse answer under ``block`` — Claude Code then fires no
    PostToolUse or PostToolUseFailure for it."""
    with open(os.path.join(CAPTURED, "hooks-lease-warn-block.json"), encoding="utf-8") as fh:
        payloads = json.load(fh)
    for p in payloads:
        hook("claude_code", p)
    by_id = {}
    for e in hook.envelopes("claude_code"):
        if e["event_type"] == "tool_call":
            by_id.setdefault(e["message_id"], []).append(e)
    assert [("exit_code" in e["tool"]) for e in by_id["toolu_e2e_b1_t0_0"]] == [False, True]
    assert [("exit_code" in e["tool"]) for e in by_id["toolu_e2e_b2_t0_0"]] == [False]
    assert [p["hook_event_name"] for p in payloads if p.get("tool_use_id") == "toolu_e2e_b2_t0_0"] == ["PreToolUse"]


def _newer() -> list[dict]:
    with open(os.path.join(CAPTURED, "hooks-newer-events.json"), encoding="utf-8") as fh:
        return json.load(fh)


def test_the_newer_events_and_fields_map_as_the_pinned_cli_sends_them(hook):
    """PostModelSwitch → ``model_switch``; an MCP call's ``mcp_server`` → ``tool.mcp_server``;
    SubagentStop's ``last_assistant_message`` → the sub-agent's ``assistant``, while its
    ``agent_transcript_path`` (a path on this host) stays off the envelope; PreModelSwitch and
    SubagentStart are not installed and capture nothing."""
    from lib import identity

    payloads = _newer()
    for p in payloads:
        assert isinstance(hook("claude_code", p), dict)
    envs = hook.envelopes("claude_code")
    (post,) = [p for p in payloads if p["hook_event_name"] == "PostModelSwitch"]
    (switch,) = [e for e in envs if e["event_type"] == "model_switch"]
    assert (switch["from_model"], switch["to_model"], switch["requested_model"], switch["switch_source"]) == \
        (post["from_model"], post["to_model"], post["requested_model"], "command")
    assert switch["event_id"] == identity.event_id(post["session_id"], "model_switch", post["prompt_id"],
                                                   post["from_model"], post["to_model"])
    assert switch["turn_id"] == post["prompt_id"]
    (pre,) = [p for p in payloads if p["hook_event_name"] == "PreToolUse"]
    (call,) = [e for e in envs if e.get("message_id") == pre["tool_use_id"]]
    assert call["tool"]["mcp_server"] == pre["mcp_server"]["name"] == "ctxlake"
    stops = [p for p in payloads if p["hook_event_name"] == "SubagentStop"]
    subs = [e for e in envs if e["event_type"] == "assistant"]
    assert sorted(e["content"] for e in subs) == sorted(p["last_assistant_message"] for p in stops)
    assert {e["parent_message_id"] for e in subs} == {"subagent:" + p["agent_id"] for p in stops}
    assert not any("agent_transcript_path" in json.dumps(e) for e in envs)
    assert len(envs) == 1 + 1 + len(stops), "PreModelSwitch and SubagentStart add no envelope"
    logged = [json.loads(ln) for ln in hook.errors().splitlines()]
    assert {e["event"] for e in logged} == {"PreModelSwitch", "SubagentStart"} and {e["step"] for e in logged} == {"map"}
