"""The main job end to end on the embedded file:// store, on real fixtures (issue #2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, ROOT

PY = sys.executable


def _run(args, env, stdin=None, check=True):
    r = subprocess.run([PY, *args], cwd=ROOT, env=env, input=stdin, capture_output=True)
    if check and r.returncode != 0:
        raise AssertionError(f"{args} exited {r.returncode}: {r.stderr.decode()[-3000:]}")
    return r


@pytest.fixture
def env(home):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    e.update(CTXLAKE_HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), CTXLAKE_FLEET_ID="fleet-e2e",
             CTXLAKE_AGENT_ID="alice", CTXLAKE_HOOK_SYNC="1", PYTHONPATH=ROOT)
    return e


def _replay(env, name, agent):
    with open(os.path.join(FIXTURES, "claude-hooks", name)) as fh:
        payloads = json.load(fh)
    for p in payloads:
        r = _run(["-I", "-S", "hook.py", "claude_code"], dict(env, CTXLAKE_AGENT_ID=agent), json.dumps(p).encode())
        assert json.loads(r.stdout.decode().strip()) is not None
    return len(payloads)


def test_import_hooks_sync_maint_brief_query(env, home):
    _run(["ctxlake.py", "import", "claude-code", "--path", os.path.join(FIXTURES, "claude-transcripts", "spotter__short.jsonl")], env)
    _run(["ctxlake.py", "import", "claude-code", "--path", os.path.join(FIXTURES, "claude-transcripts", "spotter__tool_heavy.jsonl")], env)
    _replay(env, "serverless-plugins__session_end.json", "bob")
    _replay(env, "serverless-plugins__user_prompt_submit.json", "bob")
    out = _run(["syncd.py", "--once", "--json"], env)
    first = json.loads(out.stdout)
    assert first["errors"] == 0 and first["sealed"] >= 3 and first["shipped"] > 20
    m = json.loads(_run(["maint.py", "--once", "--json"], env).stdout)
    assert m["ran"] and m["snapshot"]["published"] and m["sessions"] >= 3
    _run(["syncd.py", "--once"], env)
    # sessions: one line per sealed session, with commands ok/failed
    sessions = json.loads(_run(["ctxlake.py", "sessions", "--json"], env).stdout)
    short = [s for s in sessions if s["session_id"] == "55604662-cf2a-4331-851a-ec234028f8ca"][0]
    assert short["commands_failed"] == 1 and short["agent_id"] == "alice"  # the failed Bash; a failed Glob is no command
    assert short["summary"].startswith("mix phx.server doesnt seem to start")
    # the briefing a new SessionStart receives, fenced, naming a real session
    start = {"session_id": "new-one", "hook_event_name": "SessionStart", "source": "startup", "cwd": home}
    ans = json.loads(_run(["-I", "-S", "hook.py", "claude_code", "SessionStart"], dict(env, CTXLAKE_AGENT_ID="carol"),
                          json.dumps(start).encode()).stdout)
    ctx = ans["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith("<ctxlake-briefing>") and ctx.endswith("</ctxlake-briefing>")
    assert "mix phx.server" in ctx and "## Recent sessions" in ctx and len(ctx.encode()) <= 8192
    # each session line names its agent and the files it touched (issue 18)
    line = next(ln for ln in ctx.splitlines() if "mix phx.server" in ln)
    assert line.startswith("- [alice in ")
    # these fixture sessions only read files, and only written or edited files are "touched" (issue 16)
    assert not any(s.get("files_touched") for s in sessions) and " — files: " not in ctx
    # the SessionStart envelope recorded what was injected
    spool_file = os.path.join(home, "spool", "claude_code", "new-one.ndjson")
    env0 = json.loads(open(spool_file).readline())
    assert env0["event_type"] == "session_start"
    # DuckDB over the compacted lake: events per type per session
    rows = json.loads(_run(["ctxlake.py", "query", "SELECT session_id, event_type, count(*) AS n FROM events "
                                                   "GROUP BY ALL ORDER BY 1, 2", "--json"], env).stdout)
    by = {(r["session_id"], r["event_type"]): r["n"] for r in rows}
    assert by[("55604662-cf2a-4331-851a-ec234028f8ca", "tool_call")] == 2
    # a second maint over the same lake publishes nothing new: same bytes, same sha
    again = json.loads(_run(["maint.py", "--once", "--json"], env).stdout)
    assert again["snapshot"]["reason"] == "already current" and again["compacted"] == 0
    assert again["snapshot"]["sha256"] == m["snapshot"]["sha256"]


def test_second_maint_exits_zero_naming_the_holder(env, home):
    sys.path.insert(0, ROOT)
    from lib.live import leases
    from lib.store import open_store

    store = open_store("file://" + os.path.join(home, "lake"))
    leases.acquire(store, leases.lease_key("fleet-e2e", leases.MAINTENANCE), holder="maint@other-host:42", reason="maintenance",
                 ttl=300, resource=leases.MAINTENANCE)
    r = _run(["maint.py", "--once"], env)
    assert r.returncode == 0
    assert "maint@other-host:42" in r.stdout.decode()


def test_corrupt_snapshot_cache_is_replaced_on_next_sync(env, home):
    _run(["ctxlake.py", "import", "claude-code", "--path", os.path.join(FIXTURES, "claude-transcripts", "spotter__short.jsonl")], env)
    _run(["syncd.py", "--once"], env)
    _run(["maint.py", "--once"], env)
    _run(["syncd.py", "--once"], env)
    snap = os.path.join(home, "cache", "fleet-e2e", "snapshot.bin")
    good = open(snap, "rb").read()
    with open(snap, "wb") as fh:
        fh.write(b"not a sqlite file")
    st = json.loads(_run(["ctxlake.py", "status", "--json"], env).stdout)
    assert "unreadable snapshot" in st["snapshot"]["error"]
    _run(["syncd.py", "--once"], env)
    assert open(snap, "rb").read() == good


def test_store_outage_keeps_spool_and_catches_up(env, home, tmp_path):
    _run(["ctxlake.py", "import", "claude-code", "--path", os.path.join(FIXTURES, "claude-transcripts", "spotter__short.jsonl")], env)
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the store folder should be")
    bad = dict(env, CTXLAKE_STORE="file://" + str(blocked / "lake"))
    r = _run(["syncd.py", "--once", "--json"], bad, check=False)
    assert r.returncode == 4 and json.loads(r.stdout)["errors"] >= 1  # the store exit code (docs/operations.md)
    assert os.listdir(os.path.join(home, "spool", "import")), "spool must be kept while the store is down"
    ok = json.loads(_run(["syncd.py", "--once", "--json"], env).stdout)
    assert ok["sealed"] == 1 and ok["errors"] == 0
    assert not [n for n in os.listdir(os.path.join(home, "spool", "import")) if n.endswith(".ndjson")]


def test_snapshot_build_is_deterministic():
    sys.path.insert(0, ROOT)
    from lib.memory import snapshot

    digests = [{"session_id": f"s{i}", "fleet_id": "f", "agent_id": "a", "runtime": "claude_code", "ended_at": f"2026-01-0{i}",
                "files_touched": ["x"], "commands": [], "usage": {}, "friction": [], "summary": "s"} for i in range(1, 4)]
    assert snapshot.build("f", digests, []) == snapshot.build("f", list(reversed(digests)), [])


def test_an_unchanged_snapshot_costs_one_conditional_get(tmp_path):
    sys.path.insert(0, ROOT)
    from lib.memory import snapshot
    from lib.store.memory import MemoryStore

    store = MemoryStore("memory://cond")
    data = snapshot.build("f", [], [])
    snapshot.publish(store, "f", data, maint_epoch=1, built_at="t", claim_count=0, session_count=0)
    cache = str(tmp_path / "snapshot.bin")
    assert snapshot.fetch(store, "f", cache)["changed"]
    calls = []
    real_get = store.get
    store.get = lambda key, if_none_match=None: calls.append((key, if_none_match)) or real_get(key, if_none_match)
    again = snapshot.fetch(store, "f", cache)
    assert not again["changed"] and again["sha256"] == snapshot.sha256(data)
    assert len(calls) == 1 and calls[0][1] is not None  # the pointer only, conditionally; no blob, no re-hash
