"""Collision warnings in hook.py: Claude Code PreToolUse on Edit/Write/MultiEdit/NotebookEdit
against the cached lease view and the roster's recent edits, as a real hook process
(``python -I -S hook.py claude_code``) with real-shaped payloads (docs/design.md §6, §9).

Answer fields per the Claude Code hooks reference: ``hookSpecificOutput.additionalContext``
(read by the model) and top-level ``systemMessage`` (shown to the user) under policy ``warn``;
``hookSpecificOutput.permissionDecision: "deny"`` with ``permissionDecisionReason`` under
``block``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from lib import syncpass
from lib.store import open_store
from tests.conftest import ROOT
from tests.live.conftest import REPO_ID, make_repo
from tests.live.helpers import Log, hook, mcp_record, prompt, tool

F = "fleet-live"


def run_hook(home, agent, payload, policy=None, runtime="claude_code"):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_CONFIG=os.path.join(home, "none.toml"), CTXLAKE_FLEET_ID=F,
               CTXLAKE_AGENT_ID=agent, CTXLAKE_HOOK_SYNC="1")
    if policy:
        env["CTXLAKE_LEASE_POLICY"] = policy
    r = subprocess.run([sys.executable, "-I", "-S", os.path.join(ROOT, "hook.py"), runtime],
                       input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=60)
    assert r.returncode == 0
    return json.loads(r.stdout.decode().strip())


def payload(repo, name, rel, session="sess-alice"):
    full = os.path.join(repo, rel)
    inputs = {"Edit": {"file_path": full, "old_string": "# placeholder", "new_string": "# edited"},
              "Write": {"file_path": full, "content": "print('hi')\n"},
              "MultiEdit": {"file_path": full, "edits": [{"old_string": "a", "new_string": "b"}]},
              "NotebookEdit": {"notebook_path": full, "new_source": "x = 1", "cell_id": "c1"}}
    return tool(session, repo, name, inputs[name])


@pytest.fixture
def bob_holds_parser(home, cfg, git_repo):
    """bob claimed ``src/parser/`` through the MCP spool and syncd applied it."""
    hook(home, "bob", prompt("sess-bob", git_repo, "rewrite the parser"))
    mcp_record(cfg.paths, "lease_request", "bob", paths=["src/parser/"], reason="rewrite the parser", cwd=git_repo)
    syncpass.run_pass(cfg, open_store(cfg.store), Log())
    return git_repo


@pytest.mark.parametrize("name,rel", [("Edit", "src/parser/lexer.py"), ("Write", "src/parser/new.py"),
                                      ("MultiEdit", "src/parser/lexer.py"), ("NotebookEdit", "src/parser/nb.ipynb")])
def test_warn_policy_tells_who_holds_it_why_and_until_when_without_blocking(home, bob_holds_parser, name, rel):
    ans = run_hook(home, "alice", payload(bob_holds_parser, name, rel))
    out = ans["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and "permissionDecision" not in out
    text = out["additionalContext"]
    assert "src/parser/ is held by bob (rewrite the parser) until" in text and "Z, in " in text
    assert "advisory" in text and ans["systemMessage"] == text


def test_block_policy_denies_through_the_documented_answer(home, bob_holds_parser):
    ans = run_hook(home, "alice", payload(bob_holds_parser, "Edit", "src/parser/lexer.py"), policy="block")
    out = ans["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "held by bob" in out["permissionDecisionReason"]
    assert "advisory" in out["permissionDecisionReason"] and "held by bob" in ans["systemMessage"]


def test_the_policy_syncd_cached_applies_unless_the_environment_overrides_it(home, cfg, bob_holds_parser):
    path = cfg.paths.leases(F)
    with open(path) as fh:
        view = json.load(fh)
    assert view["policy"] == "warn"
    view["policy"] = "block"
    with open(path, "w") as fh:
        json.dump(view, fh)
    edit = payload(bob_holds_parser, "Edit", "src/parser/lexer.py")
    assert run_hook(home, "alice", edit)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "permissionDecision" not in run_hook(home, "alice", edit, policy="warn")["hookSpecificOutput"]


def test_no_warning_outside_the_lease_for_the_holder_or_for_a_read(home, bob_holds_parser):
    repo = bob_holds_parser
    assert run_hook(home, "alice", payload(repo, "Edit", "src/app.py")) == {}
    assert run_hook(home, "bob", payload(repo, "Edit", "src/parser/lexer.py", session="sess-bob")) == {}
    read = tool("sess-alice", repo, "Read", {"file_path": os.path.join(repo, "src/parser/lexer.py")})
    assert run_hook(home, "alice", read) == {}


def test_another_clone_of_the_same_repository_sees_the_lease(home, bob_holds_parser, tmp_path):
    clone = make_repo(tmp_path / "elsewhere" / "widget-clone", "https://github.com/Example-Org/Widget")
    ans = run_hook(home, "alice", payload(clone, "Edit", "src/parser/lexer.py"))
    assert "held by bob" in ans["hookSpecificOutput"]["additionalContext"]


def test_an_expired_lease_is_judged_by_the_store_clock_in_the_cache(home, cfg, bob_holds_parser):
    path = cfg.paths.leases(F)
    with open(path) as fh:
        view = json.load(fh)
    # the store's clock ran an hour ahead of this host's when the cache was written
    view["store_time"] = view["refreshed_at"] + 3600
    with open(path, "w") as fh:
        json.dump(view, fh)
    assert run_hook(home, "alice", payload(bob_holds_parser, "Edit", "src/parser/lexer.py")) == {}


def test_recent_edits_of_another_live_agent_give_a_softer_warning_that_never_denies(home, cfg, git_repo):
    now = time.time()
    roster = {"store_time": now, "refreshed_at": now, "presence_ttl_secs": 300, "agents": [
        {"agent_id": "carol", "runtime": "claude_code", "session_id": "s-c", "task": "speed up the lexer",
         "paths": ["src/parser/lexer.py"], "updated_at": now - 20,
         "touched": [{"repo": REPO_ID, "path": "src/parser/lexer.py", "at": now - 260, "tool": "Edit", "write": True}]}]}
    os.makedirs(os.path.dirname(cfg.paths.roster(F)), exist_ok=True)
    with open(cfg.paths.roster(F), "w") as fh:
        json.dump(roster, fh)
    for policy in ("warn", "block"):
        ans = run_hook(home, "alice", payload(git_repo, "Edit", "src/parser/lexer.py"), policy=policy)
        out = ans["hookSpecificOutput"]
        assert "permissionDecision" not in out
        assert "carol edited src/parser/lexer.py 4 min ago (task: speed up the lexer)" in out["additionalContext"]
    assert run_hook(home, "carol", payload(git_repo, "Edit", "src/parser/lexer.py", session="s-c")) == {}


def test_a_broken_cache_fails_open(home, cfg, git_repo):
    os.makedirs(os.path.dirname(cfg.paths.leases(F)), exist_ok=True)
    for p in (cfg.paths.leases(F), cfg.paths.roster(F)):
        with open(p, "wb") as fh:
            fh.write(b"\x00{not json")
    assert run_hook(home, "alice", payload(git_repo, "Edit", "src/app.py")) == {}


def _fixture(runtime_dir, name):
    from tests.conftest import FIXTURES

    with open(os.path.join(FIXTURES, runtime_dir, name)) as fh:
        return json.load(fh)[0]


def test_cursor_pre_tool_use_write_is_told_and_denied_under_block(home, bob_holds_parser):
    p = _fixture("cursor-hooks", "agent__pre_tool_use_write.json")
    p["workspace_roots"] = [bob_holds_parser]
    p["tool_input"]["file_path"] = os.path.join(bob_holds_parser, "src", "parser", "lexer.py")
    warn = run_hook(home, "alice", p, runtime="cursor")
    assert warn["permission"] == "allow" and "held by bob (rewrite the parser)" in warn["agent_message"]
    assert warn["user_message"] == warn["agent_message"] and "advisory" in warn["user_message"]
    assert run_hook(home, "alice", p, policy="block", runtime="cursor")["permission"] == "deny"


def test_hermes_pre_tool_call_write_is_blocked_under_block(home, bob_holds_parser):
    p = _fixture("hermes-hooks", "authored__pre_tool_call_write_file.json")
    p["cwd"] = bob_holds_parser
    p["tool_input"]["path"] = "src/parser/lexer.py"
    ans = run_hook(home, "alice", p, policy="block", runtime="hermes")
    assert ans["action"] == "block" and "held by bob (rewrite the parser)" in ans["message"]
    assert run_hook(home, "alice", p, runtime="hermes") == {}  # warn: Hermes has no channel to tell the agent
