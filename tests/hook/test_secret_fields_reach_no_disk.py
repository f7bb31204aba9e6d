"""Issue #17, red team: a secret in a field that is not the scrubbed text — the event name, the
tool name, the tool-use id, a file path, ``cwd``, the transcript path of the ``.done`` marker —
reaches no byte on disk: not the spool, the state folder, ``hook-errors.log``, a marker's file
name, the lake (segments, ``digest.json``, snapshot), the cache, nor syncd's and maint's JSON logs.
Real hook as the installer spawns it, real syncd and maint, payloads of the real fixtures."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import FIXTURES, ROOT

# provider shapes the marker rule catches (docs/security.md rule 1), assembled at run time so no
# secret scanner flags this file
SECRETS = ["ghp_" + "R8x2mQ7vL4nT9kW1pZ6cY3bH5sJ0dF8gA2eU", "AKIA" + "QYLPMN5HHHFPZAM2",
           "sk-ant-api03-" + "Xq7vL4nT9kW1pZ6cY3bH5sJ0dF8gA2eUR8x2mQ7vL4nT9kW1pZ6cY3bH5sJ0dF8g-AA"]


def _run(args, env, stdin=None):
    r = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, input=stdin, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return r


def _fixture(name: str) -> dict:
    with open(os.path.join(FIXTURES, "claude-hooks", name), encoding="utf-8") as fh:
        return json.load(fh)[0]


def test_a_secret_in_names_ids_and_paths_reaches_no_file_and_no_log(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), CTXLAKE_FLEET_ID="red",
               CTXLAKE_AGENT_ID="mallory", CTXLAKE_HOOK_SYNC="1", PYTHONPATH=ROOT)
    gh, akia, ant = SECRETS
    sid = "sess-fields"
    cwd = os.path.join(home, "work", f"proj-{akia}")
    read = _fixture("attio-mcp-server__post_tool_use.json")
    payloads = [
        {"hook_event_name": "SessionStart", "session_id": sid, "source": "startup", "cwd": cwd},
        {"hook_event_name": f"Notification{gh}", "session_id": sid, "cwd": cwd, "message": "x"},  # unmapped event name
        {"hook_event_name": "UserPromptSubmit", "session_id": sid, "cwd": cwd, "prompt": "read the task API",
         "prompt_id": f"p-{gh}"},
        dict(read, session_id=sid, cwd=cwd, tool_name=f"mcp__attio__{ant}", tool_use_id=f"toolu_{gh}",
             tool_input={"file_path": f"{cwd}/keys/{ant}/tasks.ts"}),
        {"hook_event_name": "SessionEnd", "session_id": sid, "cwd": cwd, "reason": "exit",
         "transcript_path": os.path.join(home, ".claude", "projects", f"-work-proj-{gh}", f"{sid}.jsonl")},
    ]
    for p in payloads:
        _run(["-I", "-S", "hook.py", "claude_code"], env, json.dumps(p).encode())
    logs = [_run(["syncd.py", "--once", "--json"], env), _run(["maint.py", "--once", "--json"], env),
            _run(["syncd.py", "--once", "--json"], env)]
    leaks = []
    for root, dirs, files in os.walk(home):
        for name in dirs + files:
            leaks += [f"file name {os.path.join(root, name)}" for s in SECRETS if s in name]
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                data = fh.read()
            leaks += [f"{path} holds {s[:6]}…" for s in SECRETS if s.encode() in data]
    for r in logs:
        leaks += [f"log line holds {s[:6]}…" for s in SECRETS for out in (r.stdout, r.stderr) if s.encode() in out]
    assert not leaks, leaks
    # the session was captured (not lost): its events are in the lake under the redacted names
    lake = os.path.join(home, "lake")
    assert any(n.endswith(".parquet") for _, _, ns in os.walk(lake) for n in ns)
