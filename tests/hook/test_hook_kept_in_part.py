"""An event too large or too deeply nested to parse is kept in part, marked truncated, never
dropped (issue #16 item 13); a full spool disk shows in ``ctxlake status``. The hook runs as a
runtime runs it: ``python -I -S hook.py claude_code`` with the payload on stdin."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

from tests.conftest import FIXTURES, ROOT

HOOK = os.path.join(ROOT, "hook.py")


def _real_post_tool_use() -> dict:
    with open(os.path.join(FIXTURES, "captured", "claude-code-2.1.332", "hooks.json")) as fh:
        return next(p for p in json.load(fh) if p["hook_event_name"] == "PostToolUse")


def _hook(role_env, data: bytes):
    env = dict(role_env, CTXLAKE_FLEET_ID="f", CTXLAKE_AGENT_ID="a", CTXLAKE_HOOK_SYNC="1")
    r = subprocess.run([sys.executable, "-I", "-S", HOOK, "claude_code"], input=data, env=env, capture_output=True)
    assert r.returncode == 0 and json.loads(r.stdout) == {}
    return r


def _spooled(home):
    lines = []
    for f in glob.glob(os.path.join(home, "spool", "claude_code", "*.ndjson")):
        lines += [json.loads(l) for l in open(f)]
    return lines


def test_a_payload_over_the_stdin_limit_is_kept_in_part(home, role_env):
    p = _real_post_tool_use()
    p["tool_response"] = {"stdout": "x" * (65 << 20), "stderr": ""}
    _hook(role_env, json.dumps(p).encode())
    [env] = _spooled(home)
    assert env["truncated"] is True and env["event_type"] == "tool_call"
    assert env["session_id"] == p["session_id"] and env["message_id"] == p["tool_use_id"]
    assert "over the 67108864-byte limit" in env["tool"]["result"]


def test_a_payload_nested_too_deep_is_kept_in_part(home, role_env):
    p = _real_post_tool_use()
    body = json.dumps(p)
    deep = "[" * 100000 + "]" * 100000
    data = body[:-1] + ', "tool_response": ' + deep + "}"
    _hook(role_env, data.encode())
    [env] = _spooled(home)
    assert env["truncated"] is True and env["session_id"] == p["session_id"]
    assert "nested deeper" in env["tool"]["result"]


def test_status_says_when_the_spool_disk_is_low(home, role_env):
    code = ("import sys, io; sys.path.insert(0, %r); from lib import spool; spool.LOW_FREE_BYTES = 1 << 62; "
            "import ctxlake; sys.exit(ctxlake.main(['status']))" % ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=dict(role_env, CTXLAKE_FLEET_ID="f"), capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    assert "spool disk  LOW" in r.stdout.decode()
