"""Fixtures for syncd tests: a spooled session of N envelopes and a free loopback port."""
from __future__ import annotations

import socket

import pytest


def spool_session(paths, session_id: str, n: int, *, fleet: str = "f", agent: str = "a", done: bool = False) -> str:
    """Append ``n`` prompt envelopes of one Claude Code session to the spool; returns the file."""
    from lib import spool
    from lib.envelope import Builder
    import json

    b = Builder(fleet_id=fleet, agent_id=agent, runtime="claude_code", session_id=session_id)
    path = paths.session_spool("claude_code", session_id)
    for i in range(n):
        spool.append(path, json.dumps(b.make("prompt", content=f"prompt number {i}", role="user")) + "\n")
    if done:
        with open(paths.session_done("claude_code", session_id), "w") as fh:
            fh.write("{}")
    return path


@pytest.fixture
def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
