"""Two agents on two hosts (two CTXLAKE_HOMEs, one store), through the real pipeline (issue #19):

alice (host A) works in her clone of github.com/acme/widget: hooks capture her session, she calls
``fleet_handoff`` and ``memory_propose`` through the official MCP client. ``syncd --once`` on A,
``maint --once``, then ``syncd --once`` on B. bob (host B, another clone of the same repository)
then sees alice's note in the briefing his SessionStart hook injects and in ``fleet_history``;
and the claim alice proposed is found under the very id ``memory_propose`` answered: in
``ctxlake claims --explain``, in the snapshot, and — once a human approved it — in bob's
``memory_search``.
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import anyio
import pytest

from tests.conftest import PYTHON, ROOT

mcp = pytest.importorskip("mcp", reason="the official MCP SDK is pinned in requirements-dev.txt")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

FLEET = "fleet-two"
ORIGIN = "git@github.com:acme/widget.git"
REPO_ID = "github.com/acme/widget"
SESSION = "7f1e0c9a-2b44-4c1d-9e57-3a1f2b6c8d90"
SUMMARY = "lexer rewritten to a table-driven scanner; parser still uses the old token names"
NEXT = "rename TOKEN_* in src/parser/grammar.py, then run pytest tests/parser"


def _clone(path) -> str:
    os.makedirs(path)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", ORIGIN], check=True)
    os.makedirs(os.path.join(path, "src", "parser"))
    return str(path)


def _env(home: str, agent: str, store: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(PYTHONPATH=ROOT, CTXLAKE_HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), CTXLAKE_STORE=store,
               CTXLAKE_FLEET_ID=FLEET, CTXLAKE_AGENT_ID=agent, CTXLAKE_HOOK_SYNC="1", CTXLAKE_MCP_QUIET="1")
    return env


def _run(env, *argv, cwd=ROOT, stdin=b"") -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, *argv], input=stdin, env=env, cwd=cwd, capture_output=True, check=True, timeout=300)


def _hook(env, cwd, payload) -> dict:
    out = _run(env, os.path.join(ROOT, "hook.py"), "claude_code", cwd=cwd, stdin=json.dumps(payload).encode())
    return json.loads(out.stdout)


def _payload(event: str, cwd: str, **extra) -> dict:
    return {"session_id": SESSION, "transcript_path": f"/home/alice/.claude/projects/widget/{SESSION}.jsonl", "cwd": cwd,
            "permission_mode": "default", "hook_event_name": event, **extra}


async def _calls(env, cwd, calls) -> list[dict]:
    params = StdioServerParameters(command=PYTHON, args=[os.path.join(ROOT, "mcp_server.py")], env=env, cwd=cwd)
    out = []
    async with Client(params) as client:
        for name, args in calls:
            result = await client.call_tool(name, args)
            assert result.is_error is False, (name, result.content[0].text)
            out.append(json.loads(result.content[0].text))
    return out


def test_a_handoff_reaches_another_agent_on_another_host(tmp_path):
    store = "file://" + str(tmp_path / "lake")
    alice = _env(str(tmp_path / "host-a"), "alice", store)
    bob = _env(str(tmp_path / "host-b"), "bob", store)
    repo_a, repo_b = _clone(tmp_path / "a" / "widget"), _clone(tmp_path / "b" / "widget")

    # alice's session, captured by the hook
    _hook(alice, repo_a, _payload("UserPromptSubmit", repo_a, prompt="rewrite the lexer as a table-driven scanner"))
    edit = {"file_path": os.path.join(repo_a, "src/parser/lexer.py"), "old_string": "a", "new_string": "b"}
    _hook(alice, repo_a, _payload("PreToolUse", repo_a, tool_name="Edit", tool_input=edit, tool_use_id="toolu_01LEX"))
    _hook(alice, repo_a, _payload("PostToolUse", repo_a, tool_name="Edit", tool_input=edit, tool_use_id="toolu_01LEX",
                                  tool_response={"success": True}))
    alice_mcp = dict(alice, CTXLAKE_SESSION_ID=SESSION)
    handoff, proposal = anyio.run(_calls, alice_mcp, repo_a, [
        ("fleet_handoff", {"summary": SUMMARY, "status": "in_progress", "next": NEXT}),
        ("memory_propose", {"claim": "the table-driven lexer lives in src/parser/lexer.py", "type": "preference",
                            "subject": "parser", "evidence": [{"session_id": SESSION, "message_id": "toolu_01LEX"}]})])
    assert handoff["queued"] is True and proposal["queued"] is True
    _hook(alice, repo_a, _payload("SessionEnd", repo_a, reason="exit"))

    # host A ships, maintenance runs once for the fleet, host B syncs
    _run(alice, os.path.join(ROOT, "syncd.py"), "--once")
    assert os.listdir(os.path.join(alice["CTXLAKE_HOME"], "spool", "mcp")) == [FLEET + ".lock"]  # drained, reclaimed
    _run(alice, os.path.join(ROOT, "maint.py"), "--once")
    _run(bob, os.path.join(ROOT, "syncd.py"), "--once")

    # bob's next session in his clone of the repository: the briefing carries alice's note
    start = _hook(bob, repo_b, {"session_id": "b-1", "hook_event_name": "SessionStart", "cwd": repo_b, "source": "startup"})
    text = start["hookSpecificOutput"]["additionalContext"]
    assert "## Handoffs" in text and SUMMARY in text and NEXT in text
    line = next(li for li in text.splitlines() if SUMMARY in li)
    assert REPO_ID in line and "alice" in line and "in_progress" in line

    # ... and fleet_history, for that repository
    [history] = anyio.run(_calls, bob, repo_b, [("fleet_history", {"repo": REPO_ID})])
    [note] = [h for h in history["handoffs"] if h["record_id"] == handoff["record_id"]]
    assert note["agent_id"] == "alice" and note["summary"] == SUMMARY and note["next"] == NEXT
    assert note["repo"] == REPO_ID and note["session_id"] == SESSION

    # the claim is found under the id memory_propose answered (a preference: a person approves it, since
    # an agent citing only its own session cannot promote a claim, docs/memory.md)
    cid = proposal["claim_id"]
    listed = _run(bob, os.path.join(ROOT, "ctxlake.py"), "claims", "--explain").stdout.decode()
    assert cid in listed
    with sqlite3.connect(os.path.join(bob["CTXLAKE_HOME"], "cache", FLEET, "snapshot.bin")) as conn:
        assert conn.execute("SELECT count(*) FROM claims WHERE claim_id = ?", (cid,)).fetchone()[0] == 1
    _run(bob, os.path.join(ROOT, "ctxlake.py"), "claims", "--approve", cid)
    _run(bob, os.path.join(ROOT, "maint.py"), "--once")
    _run(bob, os.path.join(ROOT, "syncd.py"), "--once")
    [search] = anyio.run(_calls, bob, repo_b, [("memory_search", {"query": "table-driven lexer"})])
    assert cid in [r["claim_id"] for r in search["results"]], search
