"""Hermes adapter on payloads captured from a real hermes-agent 0.19.0 run plus authored ones in
the same shape (``tests/fixtures/hermes-hooks``): results under ``extra`` (reference bug 12.2
#4, with a decoy), the pre_llm_call briefing answer, and the session boundary events."""
from __future__ import annotations

import json

from lib.adapters import hermes
from tests.runtimes.conftest import load_payloads

PAYLOADS = dict(load_payloads("hermes-hooks"))


def _one(name):
    return json.loads(json.dumps(PAYLOADS[name]))


def test_post_tool_call_reads_result_and_duration_from_extra(hook):
    p = _one("capture-0.19.0__post_tool_call.json")
    hook("hermes", p)
    (env,) = hook.envelopes("hermes")
    assert env["tool"]["name"] == "terminal" and env["tool"]["result"] == "hello"
    assert env["tool"]["exit_code"] == 0 and env["tool"]["duration_ms"] == p["extra"]["duration_ms"]
    assert env["message_id"] == p["extra"]["tool_call_id"] and env["turn_id"] == p["extra"]["turn_id"]
    assert env["session_id"] == p["session_id"] and env["cwd"] == p["cwd"]


def test_top_level_result_and_duration_are_a_decoy(hook):
    p = _one("authored__post_tool_call_write_file_decoy.json")
    assert p["result"].startswith("DECOY") and p["duration_ms"] == 999999
    hook("hermes", p)
    (env,) = hook.envelopes("hermes")
    assert "DECOY" not in json.dumps(env)
    assert json.loads(env["tool"]["result"]) == {"bytes_written": 31, "dirs_created": False}
    assert env["tool"]["duration_ms"] == 4 and env["tool"]["paths"] == ["src/report.py"]


def test_failed_command_and_tool_error_carry_exit_codes(hook):
    hook("hermes", _one("authored__post_tool_call_terminal_failed.json"))
    hook("hermes", _one("authored__post_tool_call_error.json"))
    failed, error = hook.envelopes("hermes")
    assert failed["tool"]["exit_code"] == 127 and "command not found" in failed["tool"]["result"]
    assert error["tool"]["exit_code"] == 1 and error["tool"]["result"] == "File not found: missing.txt"


def test_turn_text_is_captured_from_extra(hook):
    pre, post = _one("capture-0.19.0__pre_llm_call.json"), _one("capture-0.19.0__post_llm_call.json")
    hook("hermes", pre)
    hook("hermes", post)
    prompt, assistant = hook.envelopes("hermes")
    assert prompt["event_type"] == "prompt" and prompt["content"] == "make out.txt"
    assert assistant["event_type"] == "assistant" and assistant["content"] == "done"
    assert "conversation_history" not in json.dumps(prompt)


def test_pre_llm_call_answers_the_fenced_briefing(hook):
    assert hook("hermes", _one("capture-0.19.0__pre_llm_call.json"), "pre_llm_call") == {}
    hook.write_briefing("## Recent sessions\n- [github.com/acme/api, 2026-11-28] fixed the flaky login test", ["k1", "k2"])
    ans = hook("hermes", _one("capture-0.19.0__pre_llm_call.json"), "pre_llm_call")
    assert set(ans) == {"context"} and "fixed the flaky login test" in ans["context"]
    assert ans["context"].startswith("<ctxlake-briefing>") and ans["context"].endswith("</ctxlake-briefing>")
    assert hook.envelopes("hermes")[-1]["injected_context"] == ["k1", "k2"]


def test_other_events_answer_empty(hook):
    for name in ("capture-0.19.0__on_session_start.json", "capture-0.19.0__pre_tool_call.json",
                 "capture-0.19.0__post_tool_call.json", "capture-0.19.0__post_llm_call.json",
                 "capture-0.19.0__on_session_end.json", "authored__on_session_finalize.json"):
        p = _one(name)
        assert hook("hermes", p, p["hook_event_name"]) == {}, name


def test_session_end_and_finalize_end_the_session(hook):
    end = _one("capture-0.19.0__on_session_end.json")
    hook("hermes", end)
    assert hook.envelopes("hermes")[-1]["event_type"] == "session_end"
    # the end marker names Hermes' state.db, which the transcript backstop reads at the seal
    state_db = hermes.transcript_path({}, hook.env)
    assert hook.done("hermes", end["session_id"]) == {"event": "on_session_end", "transcript_path": state_db}
    fin = _one("authored__on_session_finalize.json")
    hook("hermes", fin, HERMES_HOME="/home/dev/.hermes")
    assert hook.envelopes("hermes")[-1]["content"] == "shutdown"
    assert hook.done("hermes", fin["session_id"]) == {"event": "on_session_finalize",
                                                      "transcript_path": "/home/dev/.hermes/state.db"}


def test_session_reset_is_answer_only_and_never_ends_the_new_session(hook):
    p = _one("authored__on_session_reset.json")
    assert hook("hermes", p, "on_session_reset") == {}
    assert hook.envelopes("hermes") == [] and hook.done("hermes", p["session_id"]) is None
    assert not hook.errors()


def test_write_tool_on_leased_path_is_blocked_only_under_block(tmp_path, hook):
    from tests.runtimes.test_cursor_adapter import _leased_repo

    root = _leased_repo(tmp_path, hook, "src/report.py")
    p = _one("authored__pre_tool_call_write_file.json")
    p["cwd"] = root
    assert hook("hermes", p, "pre_tool_call") == {}
    ans = hook("hermes", p, "pre_tool_call", CTXLAKE_LEASE_POLICY="block")
    assert ans["action"] == "block" and "held by bob" in ans["message"]
