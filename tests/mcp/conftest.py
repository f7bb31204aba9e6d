"""Fixtures for the MCP server tests: a fleet-scoped temporary home, a tool context with a fake
clock, an in-memory session, and snapshot/cache writers that use the real builders."""
from __future__ import annotations

import io
import json
import os

import pytest

from lib import jsonrpc, mcp_tools
from lib.memory import embed, snapshot
from lib.config import load
from lib.spool import atomic_write

FLEET = "fleet-t"
AGENT = "agent-a"
NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z, a fixed local clock


@pytest.fixture
def mcp_home(home, monkeypatch):
    """CTXLAKE_HOME with fleet ``fleet-t`` and agent ``agent-a`` in the environment."""
    monkeypatch.setenv("CTXLAKE_FLEET_ID", FLEET)
    monkeypatch.setenv("CTXLAKE_AGENT_ID", AGENT)
    return home


@pytest.fixture
def cfg(mcp_home):
    return load()


class Session:
    """One in-memory MCP session over a :class:`lib.jsonrpc.Server` (no subprocess)."""

    def __init__(self, ctx, protocol="2024-11-05"):
        self.ctx = ctx
        self.server = jsonrpc.Server("ctxlake", "test", mcp_tools.build_tools(ctx), instructions=mcp_tools.INSTRUCTIONS,
                                     log=lambda *a, **k: None)
        self.next_id = 0
        if protocol:
            self.request("initialize", {"protocolVersion": protocol, "capabilities": {}, "clientInfo": {"name": "t"}})

    def request(self, method, params=None) -> dict:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        out = self.server.handle(json.dumps(msg).encode())
        assert out is not None
        return json.loads(out)

    def call_raw(self, name, arguments=None) -> dict:
        """The JSON-RPC answer to ``tools/call``."""
        params = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.request("tools/call", params)

    def call(self, name, arguments=None) -> dict:
        """The tool's decoded JSON payload; asserts the call was answered as a non-error result."""
        resp = self.call_raw(name, arguments)
        assert "result" in resp, resp
        assert resp["result"]["isError"] is False, resp["result"]["content"][0]["text"]
        return json.loads(resp["result"]["content"][0]["text"])

    def refusal(self, name, arguments=None) -> str:
        """The text of an ``isError: true`` result; asserts it was one."""
        resp = self.call_raw(name, arguments)
        assert "result" in resp, resp
        assert resp["result"]["isError"] is True, resp
        return resp["result"]["content"][0]["text"]


@pytest.fixture
def make_session(cfg, tmp_path):
    """``make_session(clock=..., session_id=..., cwd=...)`` → :class:`Session` in the temp home."""

    def make(clock=lambda: NOW, session_id=None, cwd=None, protocol="2024-11-05", config=None):
        ctx = mcp_tools.Context(config or cfg, session_id=session_id, cwd=cwd or str(tmp_path), clock=clock)
        return Session(ctx, protocol)

    return make


def claim(claim_id: str, text: str, *, subject="build", claim_type="environment", status="promoted", visible=1,
          confidence=0.8, independent=2, observed_by="cc-03", observed_at="2026-09-09T10:00:00.000Z",
          embedder=embed.HASH_EMBEDDER_ID, embedding=True) -> dict:
    """A snapshot claim row, embedded with ``hash256-v1`` unless told otherwise."""
    row = {"claim_id": claim_id, "claim": text, "claim_type": claim_type, "subject": subject, "status": status,
           "confidence": confidence, "observed_by": observed_by, "observed_at": observed_at,
           "independent_sessions": independent, "evidence": [{"session_id": "s1", "message_id": "m1"}],
           "visible_to_agents": visible, "updated_at": observed_at}
    if embedding:
        row["embedding"] = embed.to_blob(embed.hash_embed(text + " " + subject))
        row["embedder"] = embedder
    return row


def digest(session_id: str, *, ended_at: str, repo="github.com/acme/app", summary="fixed the build", agent_id="cc-01",
           files=("src/a.py",), outcome="clean") -> dict:
    """A session digest row for the snapshot's ``sessions`` table."""
    return {"session_id": session_id, "fleet_id": FLEET, "agent_id": agent_id, "runtime": "claude_code", "repo": repo,
            "branch": "main", "started_at": ended_at, "ended_at": ended_at, "duration_ms": 1000, "turn_count": 2,
            "event_count": 9, "commands_ok": 3, "commands_failed": 1, "files_touched": list(files),
            "commands": [{"tool": "Bash", "command": "pytest -q", "exit_code": 1, "is_test": True}],
            "tests_run": ["pytest -q"], "commits": [], "usage": {"input_tokens": 10}, "outcome": outcome,
            "friction": [], "summary": summary, "imported": False}


def write_snapshot(cfg, claims=(), digests=(), meta=None) -> str:
    """Build a snapshot with :func:`lib.memory.snapshot.build` and place it as ``cache/<fleet>/snapshot.bin``."""
    data = snapshot.build(cfg.fleet_id, list(digests), list(claims), meta={"summarize_mode": "agent", **(meta or {})})
    path = cfg.paths.snapshot(cfg.fleet_id)
    atomic_write(path, data, mode=0o644)
    return path


def write_cache(cfg, name: str, data) -> str:
    """Write ``cache/<fleet>/<name>`` (a dict is JSON-encoded, bytes are written as they are)."""
    path = os.path.join(cfg.paths.fleet_cache(cfg.fleet_id), name)
    atomic_write(path, data if isinstance(data, bytes) else json.dumps(data).encode(), mode=0o644)
    return path


def spool_lines(cfg) -> list[dict]:
    """Records in ``spool/mcp/<fleet>.ndjson``."""
    try:
        with open(cfg.paths.mcp_spool(cfg.fleet_id), "rb") as fh:
            return [json.loads(line) for line in fh.read().splitlines()]
    except FileNotFoundError:
        return []


def frames(data: bytes) -> list[dict]:
    """Decode a stdout buffer: every line must be exactly one JSON-RPC 2.0 frame."""
    out = []
    for line in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
        msg = json.loads(line)
        assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", line[:200]
        assert ("result" in msg) != ("error" in msg), line[:200]
        assert "id" in msg
        out.append(msg)
    return out


def run_session(server, lines: list[bytes]) -> list[dict]:
    """Feed ``lines`` (each gets a newline) through ``server.serve`` and decode the answers."""
    out = io.BytesIO()
    assert server.serve(io.BytesIO(b"".join(line + b"\n" for line in lines)), out) == 0
    return frames(out.getvalue()) if out.getvalue() else []
