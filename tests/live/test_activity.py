"""What syncd learns about its agents from the envelopes it ships and the spool it scans."""
from __future__ import annotations

import os

from lib.live import activity
from lib.paths import Paths
from tests.live.conftest import REPO_ID
from tests.live.helpers import hook, prompt, session_end

F = "fleet-live"


def env(session, etype, at="2026-05-01T10:00:00.000Z", agent="alice", fleet=F, **kw):
    return {"fleet_id": fleet, "agent_id": agent, "runtime": "claude_code", "session_id": session,
            "event_type": etype, "emitted_at": at, **kw}


def test_observe_keeps_the_task_and_classifies_touched_files(git_repo):
    a = activity.Activity(F)
    a.observe("claude_code", [
        env("s1", "prompt", content="\u200bFix the\u202e lexer\nand more", cwd=git_repo, repo=REPO_ID, branch="main"),
        env("s1", "tool_call", at="2026-05-01T10:00:05.000Z", cwd=git_repo,
            tool={"name": "Edit", "paths": [os.path.join(git_repo, "src/parser/lexer.py")]}),
        env("s1", "tool_call", at="2026-05-01T10:00:06.000Z", cwd=git_repo, tool={"name": "Read", "paths": ["README.md"]}),
        env("s9", "prompt", content="other fleet", fleet="elsewhere"),
    ])
    s = a.sessions["claude_code/s1"]
    assert s["task"] == "Fix the lexer" and s["repo"] == REPO_ID and s["branch"] == "main"
    touched = {t["path"]: t["write"] for t in s["touched"].values()}
    assert touched == {"src/parser/lexer.py": True, "README.md": False}
    assert list(a.sessions) == ["claude_code/s1"]
    a.observe("import", [env("s2", "prompt", content="history")])
    assert "claude_code/s2" not in a.sessions and "import/s2" not in a.sessions


def test_a_session_resumed_after_its_end_is_open_again():
    a = activity.Activity(F)
    a.observe("claude_code", [env("s1", "session_end", at="2026-05-01T10:00:00.000Z")])
    assert a.sessions["claude_code/s1"]["ended"]
    a.observe("claude_code", [env("s1", "prompt", at="2026-05-01T11:00:00.000Z", content="back")])
    assert not a.sessions["claude_code/s1"].get("ended")


def test_summarize_takes_the_latest_open_session_and_converts_times_to_the_store_clock():
    a = activity.Activity(F)
    a.observe("claude_code", [env("old", "prompt", at="2026-05-01T09:00:00.000Z", content="old task", repo="r1")])
    a.observe("claude_code", [env("new", "tool_call", at="2026-05-01T10:00:00.000Z", repo="r2", cwd="/nowhere",
                                  tool={"name": "Edit", "paths": ["/nowhere/x.py"]})])
    out = activity.summarize(a, {"claude_code/old", "claude_code/new"}, offset=100.0)
    f = out["alice"]
    assert f["session_id"] == "new" and f["repo"] == "r2" and f["task"] == "old task"
    (t,) = f["touched"]
    assert t["path"] == "x.py" and t["repo"] == "r2" and t["at"] == a.sessions["claude_code/new"]["last_at"] + 100
    assert activity.summarize(a, set(), offset=0) == {}


def test_scan_spool_finds_open_idle_and_ended_sessions(home, git_repo):
    paths = Paths.from_env({"CTXLAKE_HOME": home})
    hook(home, "alice", prompt("open-1", git_repo, "a"))
    hook(home, "alice", prompt("idle-1", git_repo, "b"))
    hook(home, "alice", prompt("done-1", git_repo, "c"))
    hook(home, "alice", session_end("done-1", git_repo))
    hook(home, "zed", prompt("foreign", git_repo, "d"), fleet="other-fleet")
    idle = paths.session_spool("claude_code", "idle-1")
    os.utime(idle, (os.path.getmtime(idle) - 7200,) * 2)
    a = activity.Activity(F)
    import time

    open_keys, ended = activity.scan_spool(paths, F, a, idle_secs=1800, local_now=time.time())
    assert open_keys == {"claude_code/open-1"} and ended == {"claude_code/done-1"}
    assert a.sessions["claude_code/open-1"]["agent_id"] == "alice" and "claude_code/foreign" not in a.sessions
    os.unlink(paths.session_spool("claude_code", "open-1"))  # sealed and cleaned up by the shipper
    open_keys, ended = activity.scan_spool(paths, F, a, idle_secs=1800, local_now=time.time())
    assert "claude_code/open-1" in ended and not open_keys


def test_shipped_lines_are_folded_parsing_only_what_presence_needs(git_repo, monkeypatch):
    import json

    from lib.clock import parse_time

    lines = [json.dumps(e, separators=(",", ":")).encode() for e in [
        env("s1", "session_start", at="2026-05-01T10:00:00.000Z", cwd=git_repo, repo=REPO_ID),
        env("s1", "tool_call", at="2026-05-01T10:00:01.000Z", tool={"name": "Bash", "input": {"command": "ls"},
                                                                    "paths": []}),
        env("s1", "prompt", at="2026-05-01T10:00:01.500Z", content="an earlier prompt"),
        env("s1", "prompt", at="2026-05-01T10:00:02.000Z", content="Port the lexer"),
        env("s1", "tool_call", at="2026-05-01T10:00:03.000Z", cwd=git_repo,
            tool={"name": "Write", "paths": [os.path.join(git_repo, "src/app.py")]}),
        env("s1", "tool_call", at="2026-05-01T10:00:04.000Z", cwd=git_repo,
            tool={"name": "Read", "input": "x", "result": "y", "paths": [os.path.join(git_repo, "src/app.py")]}),
        env("s1", "assistant", at="2026-05-01T10:00:09.000Z", content="done"),
    ]]
    parsed = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda raw, *a, **k: parsed.append(raw) or real(raw, *a, **k))
    a = activity.Activity(F)
    activity.observe_lines(a, "claude_code", lines)
    assert len(parsed) == 3  # the first line, the last prompt, one distinct paths list — not Bash, not the reply
    s = a.sessions["claude_code/s1"]
    assert s["task"] == "Port the lexer"
    (t,) = s["touched"].values()
    assert t["path"] == "src/app.py" and t["write"] is True and t["tool"] == "Read"  # written, then read
    assert t["at"] == parse_time("2026-05-01T10:00:04.000Z")
    assert s["last_at"] == parse_time("2026-05-01T10:00:09.000Z")
