"""Two Claude Code agents on one host, each in its own clone of one repository: the lease path
through the real clients.

Agent A (``cc-ann``) claims ``src/app.py`` with ``mcp__ctxlake__fleet_claim`` and keeps working
(a shell command that waits for the test to let it go), so its session stays open. ``syncd --once``
applies the request from the MCP spool against the store by compare-and-swap and writes the
cache's ``leases.json``. Agent B (``cc-ben``) then edits its own copy of ``src/app.py``:

- policy ``warn`` (the default): Claude Code runs the edit, and the warning our PreToolUse hook
  answered (holder, reason, expiry, "advisory") is in the next request the model receives;
- policy ``block`` (set in ctxlake.toml; syncd carries it into ``leases.json``): the edit is
  denied through Claude Code's own PreToolUse answer, the model is told why, and the file is
  unchanged.

When A's session ends, the next sync releases its lease.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.e2e import capture, runtimes
from tests.e2e.fake_model import after, result_text, text, tool, tool_result
from tests.e2e.harness import APP_PY, ClaudeAgent, Fleet

A, B = "cc-ann", "cc-ben"
REASON = "refactoring main() for the 2.0 API"
WAIT_SECS = 120
"""How long the test waits for agent A to reach its waiting command (a guard against a hung run,
not a timing assertion)."""


def _wait_for(predicate, what: str):
    deadline = time.monotonic() + WAIT_SECS
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def run(claude_bin, model, tmp_path_factory, scenario_timer):
    with scenario_timer:
        fleet = Fleet(str(tmp_path_factory.mktemp("leases")))
        ann, ben = ClaudeAgent(fleet, A), ClaudeAgent(fleet, B)
        ann.install()
        ben.install()
        gate = os.path.join(fleet.base, "let-ann-finish")
        model.script("a", [
            [tool("mcp__ctxlake__fleet_claim", {"paths": ["src/app.py"], "reason": REASON})],
            [tool("Bash", {"command": f"while [ ! -e '{gate}' ]; do sleep 0.1; done; echo done refactoring",
                           "description": "keep working", "timeout": 280000})],
            [tool("mcp__ctxlake__fleet_status", {})],
            [text("Refactor finished.")],
        ])
        proc = ann.start(model, "a", "Refactor main() in src/app.py; claim it first.")
        try:
            _wait_for(lambda: any(r["payload"].get("tool_name") == "Bash" for r in ann.recorded()),
                      "agent A to claim src/app.py and start its long command")
            requests = [r for r in fleet.mcp_records() if r.get("kind") == "lease_request"]
            fleet.syncd_once()
            leases_warn = fleet.cache_file("leases.json")

            model.script("b1", [[tool("Edit", {"file_path": os.path.join(ben.project, "src", "app.py"),
                                               "old_string": "return 1", "new_string": "return 2"})],
                                [text("Edited, with a warning.")]])
            ben.run(model, "b1", "Make main() return 2.")
            after_warn = ben.file("src/app.py")

            fleet.set_policy("block")
            fleet.syncd_once()
            leases_block = fleet.cache_file("leases.json")
            subprocess.run(["git", "checkout", "--", "src/app.py"], cwd=ben.project, check=True, capture_output=True)
            model.script("b2", [[tool("Edit", {"file_path": os.path.join(ben.project, "src", "app.py"),
                                               "old_string": "return 1", "new_string": "return 3"})],
                                [text("The edit was refused.")]])
            ben.run(model, "b2", "Make main() return 3.")
            after_block = ben.file("src/app.py")
        finally:
            open(gate, "w").close()
            ann_result = ann.finish(proc)
        fleet.syncd_once()
        out = {"fleet": fleet, "ann": ann, "ben": ben, "requests": requests, "leases_warn": leases_warn,
               "leases_block": leases_block, "leases_after": fleet.cache_file("leases.json"), "after_warn": after_warn,
               "after_block": after_block, "ann_result": ann_result, "a": model.bodies("a"), "b1": model.bodies("b1"),
               "b2": model.bodies("b2"), "model_url": model.url}
    if capture.capturing():
        norm = capture.normaliser_for(fleet, ben, [(ann.home, "/home/dev-a"), (r"%s" % out["model_url"], "http://127.0.0.1:8765")])
        d = capture.folder("claude-code", runtimes.CLAUDE_CODE_VERSION)
        capture.write_json(os.path.join(d, "hooks-lease-warn-block.json"), norm.value(capture.payloads(ben.recorded())), fleet)
    return out


def _lease_on_app(view: dict) -> dict:
    (lease,) = [x for x in view["leases"] if str(x.get("path") or x.get("resource") or "").endswith("src/app.py")]
    return lease


def test_fleet_claim_went_through_the_mcp_server_and_syncd_granted_it(run):
    (req,) = run["requests"]
    assert req["agent_id"] == A and req["paths"] == ["src/app.py"] and req["reason"] == REASON
    lease = _lease_on_app(run["leases_warn"])
    assert lease["holder"] == A and lease["reason"] == REASON
    status = json.loads(result_text(tool_result(run["a"], "toolu_e2e_a_t2_0")))
    assert [x["holder"] for x in status["leases"] if x.get("mine")] == [A]


def test_warn_policy_lets_the_edit_run_and_the_model_reads_the_warning(run):
    assert run["leases_warn"].get("policy", "warn") == "warn"
    assert run["after_warn"] == APP_PY.replace("return 1", "return 2"), "warn never blocks"
    (pre,) = [r["payload"] for r in run["ben"].recorded()
              if r["payload"]["hook_event_name"] == "PreToolUse" and r["payload"]["tool_use_id"] == "toolu_e2e_b1_t0_0"]
    assert pre["tool_name"] == "Edit"
    seen = json.dumps(after(run["b1"], "toolu_e2e_b1_t0_0"))
    assert f"held by {A} ({REASON})" in seen and "advisory" in seen
    assert tool_result(run["b1"], "toolu_e2e_b1_t0_0").get("is_error") is not True


def test_block_policy_denies_the_edit_and_the_file_is_unchanged(run):
    assert run["leases_block"]["policy"] == "block"
    assert run["after_block"] == APP_PY
    denied = tool_result(run["b2"], "toolu_e2e_b2_t0_0")
    assert denied.get("is_error") is True
    assert f"held by {A} ({REASON})" in result_text(denied) and "advisory" in result_text(denied)
    events = [r["payload"]["hook_event_name"] for r in run["ben"].recorded()
              if r["payload"].get("tool_use_id") == "toolu_e2e_b2_t0_0"]
    assert events[0] == "PreToolUse" and "PostToolUse" not in events
    spooled = [e for e in run["fleet"].spool("claude_code") if e.get("message_id") == "toolu_e2e_b2_t0_0"]
    assert spooled == [] or all(e["agent_id"] == B for e in spooled)


def test_the_lease_is_released_when_its_session_ends(run):
    assert run["ann_result"]["result"] == "Refactor finished."
    view = run["leases_after"]
    assert not [x for x in view["leases"] if x.get("holder") == A and str(x.get("path") or "").endswith("src/app.py")]
