"""Sealing and rotation are safe against concurrent appenders by construction (issue #16 items
11, 12): many real processes appending with the real :func:`lib.spool.append` and a tiny
rotation threshold, while syncd's shipping seals and deletes; not one line lost."""
from __future__ import annotations

import multiprocessing as mp
import os
import time

from lib import envelope, lake, ship, spool
from lib.paths import Paths
from lib.store.file import FileStore

CTX = mp.get_context("fork")


def _rotating_writer(path: str, tag: int, n: int, rotate_bytes: int) -> None:
    for i in range(n):
        spool.append(path, f'{{"w":{tag},"i":{i},"pad":"{"x" * 40}"}}\n', rotate_bytes=rotate_bytes)


def test_concurrent_rotations_lose_no_line(tmp_path):
    path = str(tmp_path / "mcp" / "f.ndjson")
    writers, per = 8, 1500
    procs = [CTX.Process(target=_rotating_writer, args=(path, w, per, 2048)) for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    seen = []
    for name in os.listdir(tmp_path / "mcp"):
        with open(tmp_path / "mcp" / name, "rb") as fh:
            seen.extend(fh.read().splitlines())
    assert len(seen) == writers * per
    assert len(set(seen)) == writers * per
    assert len(os.listdir(tmp_path / "mcp")) > 100  # it did rotate, many times


def _session_writer(home: str, tag: int, n: int, q) -> None:
    paths = Paths.from_env({"CTXLAKE_HOME": home})
    b = envelope.Builder(fleet_id="f", agent_id="a", runtime="claude_code", session_id="s-race")
    ids = []
    for i in range(n):
        e = b.make("prompt", role="user", content=f"writer {tag} line {i}")
        spool.append(paths.session_spool("claude_code", "s-race"), envelope.dumps(e), rotate_bytes=65536)
        ids.append(e["event_id"])
        time.sleep(0.01)
        if i % 7 == 0:  # the session ends (and is resumed by the next line), as a resumed session does
            spool.atomic_write(paths.session_done("claude_code", "s-race"), b'{"event":"SessionEnd"}')
    q.put(ids)


def test_sealing_while_sessions_append_loses_no_line(home):
    paths = Paths.from_env({"CTXLAKE_HOME": home})
    store = FileStore(paths.default_store_url)
    ship.ship_all(store, paths, batch_rows=5000)  # warm (pyarrow loaded) before the writers start
    q = CTX.Queue()
    procs = [CTX.Process(target=_session_writer, args=(home, w, 300, q)) for w in range(4)]
    for p in procs:
        p.start()
    passes = 0
    while any(p.is_alive() for p in procs) or passes < 3:
        stats = ship.ship_all(store, paths, batch_rows=5000)
        assert stats.errors == 0, stats.session_errors
        passes += 1
    written = [i for _ in procs for i in q.get(timeout=60)]
    for p in procs:
        p.join()
    spool.atomic_write(paths.session_done("claude_code", "s-race"), b'{"event":"SessionEnd"}')
    for _ in range(3):
        ship.ship_all(store, paths, batch_rows=5000)
    shipped = {e["event_id"] for entry in store.list("sessions/") if entry.key.endswith(".parquet")
               for e in lake.decode(store.get(entry.key).data)}
    assert passes > 5
    assert set(written) <= shipped, f"{len(set(written) - shipped)} of {len(written)} lines lost"
    assert not [n for n in os.listdir(paths.runtime_spool("claude_code")) if ".ndjson" in n]
