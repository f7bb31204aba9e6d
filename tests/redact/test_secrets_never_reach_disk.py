"""Issue #4 end to end: secrets pushed through every placement — hook (prompt, tool input, tool
output, assistant text), transcript import, an MCP write tool — then through syncd, maint and
the cache: not one of them appears in any byte under CTXLAKE_HOME or in the store."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT
from tests.redact.secrets_corpus import CONTEXT_CASES, SECRETS


def _run(args, env, stdin=None):
    r = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, input=stdin, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return r


def _variants(secret: str) -> set[bytes]:
    """The secret as raw UTF-8 and as it would look JSON-escaped (ASCII and not)."""
    out = {secret.encode()}
    for ensure_ascii in (True, False):
        out.add(json.dumps(secret, ensure_ascii=ensure_ascii)[1:-1].encode())
    return {v for v in out if len(v) >= 8}


# command-line passwords, each the first word of the Bash input the hook stores as compact JSON
# (a new user's report: every tool-specific rule missed them there)
CMDLINE_CASES = [("mysql -u root -pS3cr3tXq9 db", "S3cr3tXq9"), ("sqlcmd -S db -U sa -P Harb0rLamp77", "Harb0rLamp77"),
                 ("ldapsearch -x -D cn=admin -w C0pperMaple5 -b dc=x", "C0pperMaple5"),
                 ("zip -P Vi0letStone3 out.zip f", "Vi0letStone3"), ("smbclient //srv/s -U bob%Lant3rnSky9", "Lant3rnSky9"),
                 ("7z a -pF4lconRiver2 a.7z d", "F4lconRiver2"), ("mysqldump -uroot -pOrbitD3sk71 db", "OrbitD3sk71")]


def test_no_secret_reaches_any_byte_on_disk(home, tmp_path):
    assert len(SECRETS) >= 30
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), CTXLAKE_FLEET_ID="sec",
               CTXLAKE_AGENT_ID="alice", PYTHONPATH=ROOT)
    sid = "sess-secrets"
    tool_cases = [c for c in CONTEXT_CASES if c.field == "tool"]
    prose_cases = [c for c in CONTEXT_CASES if c.field != "tool"]
    payloads = [{"hook_event_name": "SessionStart", "session_id": sid, "source": "startup", "cwd": home}]
    for i, s in enumerate(SECRETS):
        where = i % 4
        if where == 0:
            payloads.append({"hook_event_name": "UserPromptSubmit", "session_id": sid, "prompt": f"use this key {s} please"})
        elif where == 1:
            payloads.append({"hook_event_name": "PreToolUse", "session_id": sid, "tool_name": "Write", "tool_use_id": f"t{i}",
                             "tool_input": {"file_path": f"{home}/config{i}.yaml", "content": f"api_key: {s}\n"}})
        elif where == 2:
            payloads.append({"hook_event_name": "PostToolUse", "session_id": sid, "tool_name": "Bash", "tool_use_id": f"t{i}",
                             "tool_input": {"command": "env"}, "tool_response": {"stdout": f"TOKEN={s}\nHOME=/root"}})
        else:
            payloads.append({"hook_event_name": "Stop", "session_id": sid, "last_assistant_message": f"I found {s} in the logs"})
    for i, c in enumerate(tool_cases):
        payloads.append({"hook_event_name": "PostToolUse", "session_id": sid, "tool_name": "Bash", "tool_use_id": f"c{i}",
                         "tool_input": {"command": "cat out.txt"}, "tool_response": {"stdout": c.text}})
    for i, (command, _) in enumerate(CMDLINE_CASES):
        payloads.append({"hook_event_name": "PreToolUse", "session_id": sid, "tool_name": "Bash", "tool_use_id": f"m{i}",
                         "tool_input": {"command": command}})
    for c in prose_cases:
        payloads.append({"hook_event_name": "UserPromptSubmit", "session_id": sid, "prompt": c.text})
    payloads.append({"hook_event_name": "PostToolUse", "session_id": sid, "tool_name": "Read", "tool_use_id": "aws",
                     "tool_input": {"file_path": "/home/dev/.aws/credentials"},
                     "tool_response": {"file": {"content": f"[default]\naws_secret_access_key = {SECRETS[0]}\n"}}})
    payloads.append({"hook_event_name": "SessionEnd", "session_id": sid, "reason": "exit"})
    for p in payloads:
        _run(["-I", "-S", "hook.py", "claude_code"], env, json.dumps(p).encode())

    # transcript import with secrets in a prompt, a tool input and a tool result
    transcript = tmp_path / "t.jsonl"
    recs = [
        {"type": "user", "sessionId": "imp", "uuid": "u1", "timestamp": "2026-11-29T10:00:00.000Z",
         "message": {"role": "user", "content": f"deploy with {SECRETS[1]}"}},
        {"type": "assistant", "sessionId": "imp", "uuid": "u2", "timestamp": "2026-11-29T10:00:01.000Z",
         "message": {"id": "msg_1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": f"curl -H 'x-key: {SECRETS[2]}' x"}}]}},
        {"type": "user", "sessionId": "imp", "uuid": "u3", "timestamp": "2026-11-29T10:00:02.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": f"ok {SECRETS[3]}"}]}},
    ]
    transcript.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    _run(["ctxlake.py", "import", "claude-code", "--path", str(transcript)], env)

    # an MCP write tool (the write guard scrubs every string at any depth)
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); from lib import config; "
            "from lib.mcp_tools import Context, Tools; "
            "t = Tools(Context(config.load(), session_id='sess-secrets')); "
            "t.fleet_handoff({'summary': 'token ' + sys.argv[2], 'status': 'done', 'next': 'rotate ' + sys.argv[3]}); "
            "t.memory_propose({'claim': 'the key is ' + sys.argv[4], 'type': 'environment', 'subject': 'keys', "
            "'evidence': [{'session_id': 'sess-secrets', 'message_id': 't2'}]})")
    _run(["-c", code, ROOT, SECRETS[4], SECRETS[5], SECRETS[6]], env)

    from lib.spool import wait_for_hooks

    wait_for_hooks(os.path.join(home, "spool", ".state"))
    _run(["syncd.py", "--once"], env)
    _run(["maint.py", "--once"], env)
    _run(["syncd.py", "--once"], env)

    with open(os.path.join(home, "canary.txt"), "w") as fh:  # proves the grep below can see a leak
        fh.write(json.dumps({"leak": CONTEXT_CASES[0].secret}))
    needles = {s: _variants(s) for s in SECRETS}
    needles.update({c.secret: _variants(c.secret) for c in CONTEXT_CASES})
    needles.update({secret: _variants(secret) for _, secret in CMDLINE_CASES})
    files = 0
    hits = []
    for root, _, names in os.walk(home):  # CTXLAKE_HOME holds spool, cache, logs and the file:// store
        for name in names:
            path = os.path.join(root, name)
            data = open(path, "rb").read()
            files += 1
            for secret, variants in needles.items():
                if any(v in data for v in variants):
                    hits.append((os.path.relpath(path, home), secret[:12] + "…"))
    assert files > 20 and os.path.isdir(os.path.join(home, "lake", "sessions"))
    assert [h for h in hits if h[0] != "canary.txt"] == [], hits
    assert [h[0] for h in hits] == ["canary.txt"]
