"""Cursor adapter on payloads with Cursor's real shapes (``tests/fixtures/cursor-hooks``):
the verified corrections of reference bug 12.2 #3 and the documented answers."""
from __future__ import annotations

import json
import os
import time

from tests.runtimes.conftest import load_payloads

PAYLOADS = dict(load_payloads("cursor-hooks"))
EMAIL = "pat.lee@example.org"


def _one(name):
    return json.loads(json.dumps(PAYLOADS[name]))


def test_session_is_conversation_id_even_without_session_id(hook):
    p = _one("ide__before_shell_execution.json")
    assert "session_id" not in p
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["session_id"] == p["conversation_id"] and env["runtime"] == "cursor"


def test_double_encoded_tool_output_gives_output_text_and_exit_code(hook):
    p = _one("agent__post_tool_use.json")
    assert isinstance(p["tool_output"], str)
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["tool"]["result"].startswith("....F\nFAILED tests/test_stock.py::test_reorder")
    assert '"exitCode"' not in env["tool"]["result"]
    assert env["tool"]["exit_code"] == 1
    assert env["tool"]["duration_ms"] == 2417  # float ms → int
    assert env["tool"]["name"] == "Shell" and env["message_id"] == p["tool_use_id"]


def test_cwd_comes_from_workspace_roots_when_cwd_is_empty(hook):
    p = _one("agent__pre_tool_use.json")
    assert p["cwd"] == ""
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["cwd"] == p["workspace_roots"][0]


def test_runtime_version_is_cursor_version(hook):
    p = _one("agent__session_start.json")
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["runtime_version"] == p["cursor_version"] and env["event_type"] == "session_start"


def test_after_shell_execution_is_not_double_encoded(hook):
    p = _one("agent__after_shell_execution.json")
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["tool"]["result"] == p["output"] and env["tool"]["duration_ms"] == 2417
    assert json.loads(env["tool"]["input"]) == {"command": p["command"]}


def test_post_tool_use_failure_is_exit_1_with_the_error_message(hook):
    p = _one("agent__post_tool_use_failure.json")
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["tool"]["exit_code"] == 1 and env["tool"]["result"] == p["error_message"]


def test_after_agent_response_carries_text_and_tokens(hook):
    p = _one("agent__after_agent_response.json")
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["event_type"] == "assistant" and env["content"] == p["text"]
    assert env["usage"]["input_tokens"] == 18234 and env["usage"]["output_tokens"] == 412


def test_after_file_edit_names_the_file(hook):
    p = _one("ide__after_file_edit.json")
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["tool"]["name"] == "Edit" and env["tool"]["paths"] == [p["file_path"]]


def test_session_end_writes_done_with_transcript_path(hook):
    p = _one("agent__session_end.json")
    hook("cursor", p)
    (env,) = hook.envelopes("cursor")
    assert env["event_type"] == "session_end" and env["content"] == "completed"
    assert hook.done("cursor", p["conversation_id"]) == {"event": "sessionEnd", "transcript_path": p["transcript_path"]}


def test_user_email_never_reaches_the_spool(hook):
    for name, p in load_payloads("cursor-hooks"):
        assert p.get("user_email") == EMAIL, name
        hook("cursor", p)
    text = hook.spool_text()
    assert EMAIL not in text and "user_email" not in text
    assert not hook.errors()


def test_gate_events_answer_allow_and_prompt_answers_continue(hook):
    assert hook("cursor", _one("agent__pre_tool_use.json"), "preToolUse") == {"permission": "allow"}
    assert hook("cursor", _one("ide__before_shell_execution.json"), "beforeShellExecution") == {"permission": "allow"}
    assert hook("cursor", _one("ide__before_read_file.json"), "beforeReadFile") == {"permission": "allow"}
    assert hook("cursor", _one("ide__before_mcp_execution.json"), "beforeMCPExecution") == {"permission": "allow"}
    assert hook("cursor", _one("agent__before_submit_prompt.json"), "beforeSubmitPrompt") == {"continue": True}
    assert hook("cursor", _one("agent__stop.json"), "stop") == {}


def test_session_start_answers_the_briefing_when_cached(hook):
    assert hook("cursor", _one("agent__session_start.json"), "sessionStart") == {}
    hook.write_briefing("## Live agents\n- bob (claude_code) — refactoring stock")
    ans = hook("cursor", _one("agent__session_start.json"), "sessionStart")
    assert "bob (claude_code)" in ans["additional_context"] and ans["additional_context"].startswith("<ctxlake-briefing>")
    assert hook.envelopes("cursor")[-1]["injected_context"] == ["c1"]


def _leased_repo(tmp_path, hook, path_in_repo):
    root = tmp_path / "inventory-api"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/inventory-api.git\n')
    now = time.time()
    cache = os.path.join(hook.home, "cache", hook.fleet)
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, "leases.json"), "w") as fh:
        json.dump({"store_time": now, "refreshed_at": now, "leases": [
            {"path": path_in_repo, "repo": "github.com/acme/inventory-api", "holder": "bob", "reason": "reworking stock model",
             "expires_at": now + 600, "epoch": 1}]}, fh)
    return str(root)


def test_write_on_a_path_leased_by_another_agent_is_denied_under_block(tmp_path, hook):
    root = _leased_repo(tmp_path, hook, "app/models/stock.py")
    p = _one("agent__pre_tool_use_write.json")
    p["workspace_roots"] = [root]
    p["tool_input"]["file_path"] = root + "/app/models/stock.py"
    warn = hook("cursor", p, "preToolUse")
    assert warn["permission"] == "allow" and "held by bob" in warn["agent_message"] and "advisory" in warn["agent_message"]
    block = hook("cursor", p, "preToolUse", CTXLAKE_LEASE_POLICY="block")
    assert block["permission"] == "deny" and "reworking stock model" in block["user_message"]
    p["tool_input"]["file_path"] = root + "/app/models/other.py"
    assert hook("cursor", p, "preToolUse", CTXLAKE_LEASE_POLICY="block") == {"permission": "allow"}


def test_answer_path_reads_no_payload_for_fixed_answers(hook):
    """Events whose answer is fixed answer before stdin is read (an empty stdin still answers)."""
    import io

    from lib.hookproc import run

    out = io.StringIO()
    run(["cursor", "beforeSubmitPrompt"], io.BytesIO(b""), out, environ=hook.env, detach=False)
    assert json.loads(out.getvalue()) == {"continue": True}


def test_a_session_wired_twice_keeps_one_copy_of_each_event_with_an_id(tmp_path):
    """Cursor runs the hooks of the user's and the project's ``hooks.json`` both: with ctxlake
    in each, every payload is captured twice. Through shipping and maint into the Delta table,
    each event Cursor gave an id (tool-use id, a turn's generation id, the session for start and
    end) is one row; only what Cursor gives no id (preCompact, a cursor-agent turn whose
    generation id is the conversation id, afterFileEdit) stays two copies — never merged by a
    guess (docs/architecture.md "Event identity")."""
    from lib import identity
    from tests.pipeline import lakeutil

    order = {"sessionStart": 0, "sessionEnd": 2}  # as Cursor fires them: start first, end last
    payloads = sorted((p for _, p in load_payloads("cursor-hooks")), key=lambda p: order.get(p["hook_event_name"], 1))
    at = time.time()

    def lake(where, wirings):
        paths, store, cfg = lakeutil.setup(str(tmp_path / where))
        for _ in range(wirings):
            for i, p in enumerate(payloads):
                lakeutil.capture_at(paths, "cursor", p, at + i)
        lakeutil.ship_and_maint(paths, store, cfg)
        return lakeutil.compacted(store)

    once, again, twice = lake("a", 1), lake("b", 1), lake("t", 2)
    ids = lambda rows: {identity.key(e) for e in rows}
    derived = ids(once) & ids(again)  # a ULID differs between two captures; Cursor's ids do not
    assert len(twice) == len(ids(twice)) == len(derived) + 2 * (len(once) - len(derived))
    assert derived <= ids(twice)
    for e in once:
        own_turn = e.get("turn_id") not in (None, e["session_id"])
        has_id = (e["event_type"] in ("session_start", "session_end")
                  or (e["event_type"] == "tool_call" and e.get("message_id"))
                  or (e["event_type"] in ("prompt", "assistant") and own_turn))
        assert (identity.key(e) in derived) == bool(has_id), e
    kinds = {e["event_type"] for e in once if identity.key(e) in derived}
    assert {"session_start", "session_end", "tool_call", "prompt"} <= kinds  # (no IDE afterAgentResponse fixture)
