"""The whole pipeline on the real S3-compatible server, selected only by the store URL (issue #3)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.s3


def _run(args, env, stdin=None, check=True):
    r = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, input=stdin, capture_output=True)
    if check and r.returncode != 0:
        raise AssertionError(f"{args} exited {r.returncode}: {r.stderr.decode()[-3000:]}")
    return r


def test_import_sync_maint_brief_on_seaweedfs(seaweed, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAKE_", "AWS_"))}
    env.update(seaweed.env())
    env.update(CTXLAKE_HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), CTXLAKE_FLEET_ID="fleet-s3",
               CTXLAKE_AGENT_ID="alice", CTXLAKE_HOOK_SYNC="1", PYTHONPATH=ROOT,
               CTXLAKE_STORE=seaweed.url(f"e2e-{uuid.uuid4().hex[:8]}"))
    _run(["ctxlake.py", "import", "claude-code", "--path", os.path.join(FIXTURES, "claude-transcripts", "spotter__short.jsonl")], env)
    for p in json.load(open(os.path.join(FIXTURES, "claude-hooks", "serverless-plugins__session_end.json"))):
        _run(["-I", "-S", "hook.py", "claude_code"], dict(env, CTXLAKE_AGENT_ID="bob"), json.dumps(p).encode())
    first = json.loads(_run(["syncd.py", "--once", "--json"], env).stdout)
    assert first["errors"] == 0 and first["sealed"] == 2
    m = json.loads(_run(["maint.py", "--once", "--json"], env).stdout)
    assert m["ran"] and m["snapshot"]["published"] and m["sessions"] == 2
    second = json.loads(_run(["syncd.py", "--once", "--json"], env).stdout)
    assert second["snapshot_sha"] == m["snapshot"]["sha256"]
    briefing = json.load(open(os.path.join(home, "cache", "fleet-s3", "briefing.json")))
    assert "mix phx.server" in briefing["text"]
    rows = json.loads(_run(["ctxlake.py", "query", "SELECT count(*) AS n FROM events WHERE event_type = 'tool_call'",
                            "--json"], env).stdout)
    assert rows[0]["n"] == 2
    doc = json.loads(_run(["ctxlake.py", "doctor", "--json"], env).stdout)
    assert doc and "SeaweedFS" in json.dumps(doc)


def test_syncd_keeps_the_spool_while_the_server_is_down_and_catches_up(seaweed_factory, home):
    server = seaweed_factory()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAKE_", "AWS_"))}
    env.update(server.env())
    env.update(CTXLAKE_HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), CTXLAKE_FLEET_ID="f",
               CTXLAKE_AGENT_ID="alice", PYTHONPATH=ROOT, CTXLAKE_STORE=server.url("down"))
    _run(["ctxlake.py", "import", "claude-code", "--path", os.path.join(FIXTURES, "claude-transcripts", "spotter__short.jsonl")], env)
    server.stop()
    r = _run(["syncd.py", "--once", "--json"], env, check=False)
    assert r.returncode == 4  # the store exit code (docs/operations.md)
    spooled = [n for n in os.listdir(os.path.join(home, "spool", "import")) if n.endswith(".ndjson")]
    assert spooled, "the spool must survive a store outage"
    server2 = seaweed_factory()
    env.update(server2.env())
    env["CTXLAKE_STORE"] = server2.url("up")
    ok = json.loads(_run(["syncd.py", "--once", "--json"], env).stdout)
    assert ok["errors"] == 0 and ok["sealed"] == 1 and ok["shipped"] == 9
