"""``ctxlake sessions`` labels (issue #16 item 9), on real transcripts through the real CLI,
syncd and maint: a header; the repository's name, never a path; files written or edited only;
the runtime's own title, else the first typed prompt; cost only where the runtime reported one."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from lib.memory.digest import repo_label
from tests.conftest import FIXTURES, ROOT

T = os.path.join(FIXTURES, "claude-transcripts")


def _run(args, env):
    r = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return r.stdout.decode()


def test_sessions_lists_real_sessions_with_readable_labels(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), CTXLAKE_FLEET_ID="f",
               CTXLAKE_AGENT_ID="alice", PYTHONPATH=ROOT)
    for name in ("spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", "claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"):
        _run(["ctxlake.py", "import", "claude-code", "--path", os.path.join(T, name)], env)
    _run(["syncd.py", "--once"], env)
    _run(["maint.py", "--once"], env)
    _run(["syncd.py", "--once"], env)
    text = _run(["ctxlake.py", "sessions"], env)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["STARTED", "DURATION", "AGENT"] and "TITLE" in lines[0]
    rows = {r["session_id"]: r for r in json.loads(_run(["ctxlake.py", "sessions", "--json"], env))}
    spotter = rows["8463c716-a2ea-4c14-9efa-87158ebd9f20"]
    viewer = rows["fe5e1c67-53e7-4862-81ae-d0e013e3270b"]
    assert spotter["repo"] == "spotter" and "/" not in viewer["repo"]
    assert viewer["title"] == "Empty Repo Setup: CLAUDE.md Foundation Created"
    assert any(l.endswith("Empty Repo Setup: CLAUDE.md Foundation Created") for l in lines)
    assert spotter["summary"].startswith("Work on bead spotter-fum")  # no title: the first typed prompt
    for r in (spotter, viewer):
        assert r["usage"]["cost_usd"] is None  # Claude Code transcripts report no cost
    written = set()
    with open(os.path.join(T, "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"), "rb") as fh:
        for line in fh:
            rec = json.loads(line)
            for b in (rec.get("message") or {}).get("content") or [] if rec.get("type") == "assistant" else []:
                if isinstance(b, dict) and b.get("type") == "tool_use" and b["name"] in ("Edit", "Write", "MultiEdit"):
                    written.add(b["input"].get("file_path"))
    assert set(spotter["files_touched"]) <= written and spotter["files_touched"]


def test_repo_labels_never_hold_a_path():
    assert repo_label("github.com/acme/app", "/home/alice/app") == "acme/app"
    assert repo_label(None, "/home/dev/projects/spotter-worktrees/spotter-gqc") == "spotter"
    assert repo_label("/home/alice/src/app/.claude/worktrees/1", None) == "app"
    assert repo_label(None, "C:\\Users\\alice\\code\\proj") == "proj"
    assert repo_label(None, "/home/alice") == "~" and repo_label(None, "C:\\Users\\alice") == "~"
