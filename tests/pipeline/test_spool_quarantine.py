"""A spool line that cannot be an event is quarantined with its reason, never silently dropped,
and the rest of its session ships (issue #16, "No line lost between hook and lake").

The spool is a real import (``ctxlake import`` of a real Claude Code transcript) into which the
damage a crash, a buggy writer or a full disk leaves is spliced: garbage, a record cut in half
and then followed on the same line by a whole one, invalid UTF-8, a JSON array, a JSON object
that is not an envelope, a final line with no newline. One real ``syncd`` pass ships the
session; every damaged line is then an object under ``quarantine/`` holding its exact bytes and
why it was set aside, and ``ctxlake status`` says so.
"""
from __future__ import annotations

import base64
import io
import json
import os
import time

import ctxlake
from lib import config, ship, syncpass
from lib.importers.claude_code import import_path
from lib.store import open_store
from tests.conftest import FIXTURES
from tests.pipeline import lakeutil

REAL = os.path.join(FIXTURES, "claude-transcripts", "claude-reliability__hello-world-script.transcript.jsonl")


def _damaged_spool(paths) -> tuple[str, list[bytes], list[bytes]]:
    """Import the real transcript, then rewrite its spool file with damage spliced in. Returns
    ``(spool file, the good lines, the damaged lines as they are on disk)``."""
    import_path(REAL, paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
    folder = paths.runtime_spool("import")
    [name] = [n for n in os.listdir(folder) if n.endswith(".ndjson")]
    path = os.path.join(folder, name)
    with open(path, "rb") as fh:
        good = fh.read().splitlines()
    assert len(good) >= 6
    cut = good[2][: len(good[2]) // 2]
    damage = [b"\x00\x00garbage a full disk left behind",  # not JSON
              cut + good[3],  # a record cut by a crash, the next writer's whole record after it
              b'{"schema_version":"1","content":"caf\xe9 latin-1"}',  # invalid UTF-8
              b'["an", "array"]',  # JSON, not an object
              b'{"schema_version":"1","event_type":"prompt"}']  # an object that is not an envelope
    lines = good[:2] + damage[:1] + [damage[1]] + damage[2:] + good[4:]
    with open(path, "wb") as fh:
        fh.write(b"\n".join(lines) + b"\n" + good[2][:40])  # and a torn final line with no newline
    old = time.time() - 60
    os.utime(path, (old, old))  # the torn tail is old: its writer is gone
    kept = [damage[0], cut, damage[2], damage[3], damage[4], good[2][:40]]
    return path, good[:2] + good[3:], kept


def test_damaged_lines_are_quarantined_with_their_reason_and_the_session_ships(home, monkeypatch):
    monkeypatch.setenv("CTXLAKE_FLEET_ID", lakeutil.FLEET)
    monkeypatch.setenv("CTXLAKE_AGENT_ID", lakeutil.AGENT)
    cfg = config.load()
    store = open_store(cfg.store)
    _, good, damaged = _damaged_spool(cfg.paths)
    events = []
    summary = syncpass.run_pass(cfg, store, lambda event, **kw: events.append((event, kw)))
    assert summary["errors"] == 0 and summary["sealed"] == 1, (summary, events)
    assert summary["dropped_lines"] == len(damaged) and summary["shipped"] == len(good)
    assert [kw["count"] for e, kw in events if e == "spool_lines_quarantined"] == [5, 1]

    # the quarantine spool ships once it settled (a hook may still be appending to it)
    ship.ship_quarantine(store, cfg.paths, log=lambda *a, **k: None, stats=ship.ShipStats(), settle_secs=0)
    objects = [json.loads(store.get(e.key).data) for e in store.list(f"quarantine/fleet={lakeutil.FLEET}/")]
    kept = [o for o in objects if o.get("kind") == "spool_line"]
    assert len(kept) == len(damaged)
    by_bytes = {}
    for o in kept:
        raw = o["line"].encode("utf-8") if "line" in o else base64.b64decode(o["line_base64"])
        by_bytes[raw] = o
        assert o["reason"] and o["session_id"] and o["runtime"] == "claude_code" and o["agent_id"] == lakeutil.AGENT
        assert o["sha256"].startswith("sha256:") and o["bytes"] == len(raw)
    assert set(by_bytes) == set(damaged), "each damaged line is kept byte for byte"
    reasons = {raw: by_bytes[raw]["reason"] for raw in damaged}
    assert reasons[damaged[0]].startswith("not JSON")
    assert "fragment cut by a crash" in reasons[damaged[1]]
    assert "a JSON list, not an object" == reasons[damaged[3]]
    assert reasons[damaged[4]].startswith("not a valid envelope")
    assert "no newline" in reasons[damaged[5]]
    assert "line_base64" in by_bytes[damaged[2]]

    # the rest of the session is in the lake, and its seal counts what was set aside
    from lib import maintenance

    maintenance.run_once(cfg, store, lambda *a, **k: None)
    rows = lakeutil.compacted(store)
    assert sorted(e["event_id"] for e in rows) == sorted(json.loads(g)["event_id"] for g in good)
    [sealed] = [json.loads(store.get(e.key).data) for e in store.list("sessions/") if e.key.endswith("/_SEALED")]
    assert sealed["dropped_lines"] == len(damaged)

    out = io.StringIO()
    assert ctxlake.main(["status"], stdout=out) == 0
    line = [ln for ln in out.getvalue().splitlines() if ln.startswith("quarantine ")]
    assert line and f"{len(damaged)} spool line(s)" in line[0] and "no newline" in line[0], out.getvalue()
    out = io.StringIO()
    assert ctxlake.main(["status", "--json"], stdout=out) == 0
    assert json.loads(out.getvalue())["quarantined_lines"] == len(damaged)


def test_a_pass_repeated_after_a_crash_stores_each_quarantined_line_once(home, monkeypatch):
    """The quarantine records' ids derive from the file, the offset and the bytes: a pass that
    wrote them and died before its watermark moved writes them again, and the store keeps one."""
    monkeypatch.setenv("CTXLAKE_FLEET_ID", lakeutil.FLEET)
    cfg = config.load()
    store = open_store(cfg.store)
    path, _, damaged = _damaged_spool(cfg.paths)
    os.remove(path[: -len(".ndjson")] + ".done")  # still open: the spool stays for the second pass
    damaged = damaged[:-1]  # a torn tail is judged only once the session is done
    state_dir = os.path.join(cfg.paths.state_dir, "import")
    before = {n: open(os.path.join(state_dir, n), "rb").read() for n in os.listdir(state_dir)} if os.path.isdir(state_dir) else {}
    ship.ship_all(store, cfg.paths)
    for n in os.listdir(state_dir):  # the crash: the watermark never moved
        p = os.path.join(state_dir, n)
        if n in before:
            open(p, "wb").write(before[n])
        else:
            os.remove(p)
    ship.ship_all(store, cfg.paths)
    ship.ship_quarantine(store, cfg.paths, log=lambda *a, **k: None, stats=ship.ShipStats(), settle_secs=0)
    kept = [e.key for e in store.list(f"quarantine/fleet={lakeutil.FLEET}/")]
    assert len(kept) == len(damaged)
    assert os.path.exists(path)
