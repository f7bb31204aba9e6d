"""Helpers for driving the live plane like production does: hook payloads through the real
hook code, MCP spool records in the MCP server's format, syncd passes."""
from __future__ import annotations

import io
import json
import os

from lib import hookproc


def hook(home: str, agent: str, payload: dict, fleet: str = "fleet-live", env_extra: dict | None = None) -> dict:
    """Run one hook invocation in-process (capture synchronous) as ``agent``; returns the answer."""
    env = {"CTXLAKE_HOME": home, "XDG_CONFIG_HOME": os.path.join(home, "xdg"), "CTXLAKE_FLEET_ID": fleet,
           "CTXLAKE_AGENT_ID": agent, **(env_extra or {})}
    out = io.StringIO()
    hookproc.run(["claude_code"], io.BytesIO(json.dumps(payload).encode()), out, environ=env, detach=False)
    return json.loads(out.getvalue().strip().splitlines()[0])


def prompt(session: str, cwd: str, text: str) -> dict:
    """A UserPromptSubmit payload shaped like Claude Code's."""
    return {"session_id": session, "transcript_path": f"/home/dev/.claude/projects/widget/{session}.jsonl", "cwd": cwd, "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit", "prompt": text}


def tool(session: str, cwd: str, name: str, tool_input: dict, event: str = "PreToolUse", use_id: str = "toolu_01") -> dict:
    """A PreToolUse/PostToolUse payload shaped like Claude Code's."""
    p = {"session_id": session, "transcript_path": f"/home/dev/.claude/projects/widget/{session}.jsonl", "cwd": cwd, "permission_mode": "default",
         "hook_event_name": event, "tool_name": name, "tool_input": tool_input, "tool_use_id": use_id}
    if event == "PostToolUse":
        p["tool_response"] = {"success": True}
    return p


def session_end(session: str, cwd: str) -> dict:
    return {"session_id": session, "transcript_path": f"/home/dev/.claude/projects/widget/{session}.jsonl", "cwd": cwd,
            "hook_event_name": "SessionEnd", "reason": "exit"}


_N = {"n": 0}


def mcp_record(paths_obj, kind: str, agent: str, fleet: str = "fleet-live", **fields) -> str:
    """Append one MCP spool record (``lease_request`` / ``lease_release`` / any kind); returns its id."""
    from lib import spool

    _N["n"] += 1
    rid = fields.pop("record_id", f"01REC{_N['n']:06d}")
    rec = {"kind": kind, "record_id": rid, "fleet_id": fleet, "agent_id": agent,
           "requested_at": "2026-05-01T10:00:00.000Z", **fields}
    spool.append(paths_obj.mcp_spool(fleet), json.dumps(rec) + "\n")
    return rid


def read_json(path: str):
    with open(path, "rb") as fh:
        return json.loads(fh.read())


class Log:
    """A ``log(event, **fields)`` that remembers events."""

    def __init__(self):
        self.events: list = []

    def __call__(self, event, **fields):
        self.events.append((event, fields))

    def names(self) -> list:
        return [e for e, _ in self.events]
