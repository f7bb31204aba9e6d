"""A session resumed after it was sealed ships its new lines (docs/design.md §2 invariant 2, §3).

Watermarks are kept after sealing (so a resumed session id does not restart at ``seg-000000``)
and key spool files by identity ``dev:inode``. Once sealing deleted the spool files, their
inode numbers are free: ext4 hands the very same number to the next file created in that
folder — typically the resumed session's new spool file. A watermark that still maps that
identity to the old file's offset would skip the new lines, and the next seal would delete
them unshipped.
"""
from __future__ import annotations

import os

from lib import envelope, lake, ship, spool
from lib.paths import Paths
from lib.store.file import FileStore


def _setup(home: str):
    paths = Paths.from_env({"CTXLAKE_HOME": home})
    return paths, FileStore(paths.default_store_url)


def _append(paths, builder, n: int, tag: str) -> list[str]:
    ids = []
    for i in range(n):
        e = builder.make("prompt", role="user", content=f"{tag} {i}")
        spool.append(paths.session_spool("claude_code", builder.session_id), envelope.dumps(e))
        ids.append(e["event_id"])
    return ids


def _end(paths, sid: str) -> None:
    spool.atomic_write(paths.session_done("claude_code", sid), b'{"event":"SessionEnd"}')


def _shipped(store) -> list[str]:
    return [e["event_id"] for entry in store.list("sessions/") if entry.key.endswith(".parquet")
            for e in lake.decode(store.get(entry.key).data)]


def _resume_cycle(home: str) -> tuple[list[str], list[str]]:
    """Ship and seal a session, resume it, ship and seal again; return (spooled ids, shipped ids)."""
    paths, store = _setup(home)
    b = envelope.Builder(fleet_id="f", agent_id="a", runtime="claude_code", session_id="s-resumed")
    path = paths.session_spool("claude_code", "s-resumed")
    ids = _append(paths, b, 40, "first run")
    _end(paths, "s-resumed")
    stats = ship.ship_all(store, paths, batch_rows=300)
    assert stats.sealed == 1 and not os.path.exists(path)

    ids += _append(paths, b, 7, "after resume")  # `claude --resume`: same session id, new spool file
    ship.ship_all(store, paths, batch_rows=300)
    _end(paths, "s-resumed")
    stats = ship.ship_all(store, paths, batch_rows=300)
    assert stats.errors == 0 and stats.sealed == 1
    assert not os.path.exists(path)
    return ids, _shipped(store)


def test_resumed_session_ships_lines_of_a_file_that_reuses_an_inode(home, monkeypatch):
    """Every spool file of the session gets the same identity, as on ext4 when the freed inode
    is handed out again (made deterministic here: whether ext4 reuses it depends on what else
    was created in between)."""
    monkeypatch.setattr(spool, "identity", lambda st: f"{st.st_dev}:4242")
    ids, shipped = _resume_cycle(home)
    assert sorted(shipped) == sorted(ids), f"{len(set(ids) - set(shipped))} line(s) never shipped"



def test_a_resumed_session_start_clears_a_stale_end_marker(home, monkeypatch):
    import io
    import json as _json

    from lib import hookproc
    from lib.paths import Paths

    monkeypatch.setenv("CTXLAKE_FLEET_ID", "f")
    monkeypatch.setenv("CTXLAKE_AGENT_ID", "a")
    paths = Paths.from_env()
    for p in ({"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "exit"},):
        hookproc.run(["claude_code"], io.BytesIO(_json.dumps(p).encode()), io.StringIO(), detach=False)
    assert os.path.exists(paths.session_done("claude_code", "s1"))
    resume = {"hook_event_name": "SessionStart", "session_id": "s1", "source": "resume"}
    hookproc.run(["claude_code"], io.BytesIO(_json.dumps(resume).encode()), io.StringIO(), detach=False)
    assert not os.path.exists(paths.session_done("claude_code", "s1"))
