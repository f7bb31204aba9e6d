"""The MCP spool has a life cycle (issue #19): MCP servers append, syncd's consumers (leases,
claims, handoffs) apply every record kind behind their watermarks, and files every consumer
read to their end are reclaimed — so a week of heavy use stays far under the 512 MiB cap, and
reclaiming never loses a record a concurrent appender wrote."""
from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import subprocess

from lib import config, handoffs, mcp_tools, spool, syncpass
from lib.paths import MCP_CONSUMERS
from lib.store import open_store

FLEET = "fleet-week"
ORIGIN = "https://github.com/acme/widget.git"


def _repo(path) -> str:
    os.makedirs(path, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", ORIGIN], check=True)
    os.makedirs(os.path.join(path, "src"), exist_ok=True)
    return str(path)


PASSES_PER_DAY, CALLS_PER_PASS = 4, 25


def _dir_bytes(cfg) -> int:
    return spool.dir_bytes(cfg.paths.runtime_spool("mcp"))


def test_a_compressed_week_of_heavy_use_drains_and_stays_far_under_the_cap(home, monkeypatch, tmp_path):
    """7 days × 4 syncd passes; between passes 8 agents make 25 write calls (handoffs, claims,
    releases, proposals) with the largest arguments the schemas allow (8,000-character
    handoffs, 2,000-character claims). Every record is applied, the spool is empty after each
    pass and never holds more than one pass's worth: a small fraction of what the week queued,
    and a far smaller one of the cap."""
    monkeypatch.setenv("CTXLAKE_FLEET_ID", FLEET)
    cfg = config.load()
    repo = _repo(tmp_path / "widget")
    store = open_store(cfg.store)
    clock = {"t": 1_800_000_000.0}
    sessions = [mcp_tools.Tools(mcp_tools.Context(dataclasses.replace(cfg, agent_id=f"agent-{a}"), session_id=f"s-{a}",
                                                  cwd=repo, clock=lambda: clock["t"]))
                for a in range(8)]
    tools = [{t.name: t.handler for t in s.list()} for s in sessions]
    written = peak = 0
    handoff_ids = []
    for day in range(7):
        for _ in range(PASSES_PER_DAY):
            for call in range(CALLS_PER_PASS):
                clock["t"] += 86400 / PASSES_PER_DAY / CALLS_PER_PASS
                t = tools[call % 8]
                n = f"{day}-{call}-{clock['t']:.0f}"
                if call % 5 == 0:
                    out = t["fleet_handoff"]({"summary": f"handoff {n} " + "s" * 7980, "status": "in_progress",
                                              "next": "n" * 3990})
                    handoff_ids.append(out["record_id"])
                elif call % 5 == 1:
                    out = t["memory_propose"]({"claim": f"claim {n} " + "c" * 1980, "type": "outcome", "subject": "build",
                                               "evidence": [{"session_id": "s-0", "message_id": f"m-{n}"}] * 1})
                elif call % 5 in (2, 3):
                    out = t["fleet_claim"]({"paths": [f"src/f{call}.py"], "reason": f"work {n} " + "r" * 980})
                else:
                    out = t["fleet_release"]({})
                assert out["queued"] is True and not out.get("replayed"), out
                peak = max(peak, _dir_bytes(cfg))
            written += _dir_bytes(cfg)
            summary = syncpass.run_pass(cfg, store, lambda *a, **k: None)
            assert not summary["errors"], summary
            assert _dir_bytes(cfg) == 0, "every consumer read the spool to its end: nothing left on disk"
    notes = handoffs.load_recent(store, FLEET, now=clock["t"], days=30)
    assert sorted(n["record_id"] for n in notes) == sorted(handoff_ids)  # every handoff applied once
    assert peak <= written / (7 * PASSES_PER_DAY) * 1.5, (peak, written)  # one pass's worth, not the week's
    assert peak < spool.CAP_BYTES / 1000, peak


def _appender(path: str, lock: str, worker: int, n: int) -> None:
    for i in range(n):
        spool.append(path, json.dumps({"kind": "handoff", "record_id": f"w{worker}-{i}"}) + "\n", lock_path=lock,
                     rotate_bytes=4096)


def test_reclaiming_while_many_processes_append_loses_and_repeats_nothing(tmp_path):
    """4 processes append 400 records each (rotating every 4 KiB) while this one consumes with
    two consumers and reclaims in a loop; every record is read exactly once by each consumer."""
    path = str(tmp_path / "mcp" / "f.ndjson")
    lock = str(tmp_path / "mcp" / "f.lock")
    states = [str(tmp_path / "state" / f"{name}.json") for name in MCP_CONSUMERS[:2]]
    os.makedirs(os.path.dirname(path))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_appender, args=(path, lock, w, 400)) for w in range(4)]
    for p in procs:
        p.start()
    seen = {s: [] for s in states}
    reclaimed = 0

    def drain():
        nonlocal reclaimed
        for s in states:
            records, commit = spool.consume_records(path, s)
            seen[s] += [r["record_id"] for r in records]
            commit()
        reclaimed += spool.reclaim_consumed(path, states, lock)["files"]

    while any(p.is_alive() for p in procs):
        drain()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    drain()
    drain()
    expected = sorted(f"w{w}-{i}" for w in range(4) for i in range(400))
    for s in states:
        assert sorted(seen[s]) == expected  # none lost, none twice
    assert reclaimed > 1 and not [n for n in os.listdir(os.path.dirname(path)) if ".ndjson" in n]


def test_nothing_is_reclaimed_while_one_consumer_is_behind(tmp_path):
    path = str(tmp_path / "mcp" / "f.ndjson")
    lock = str(tmp_path / "mcp" / "f.lock")
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    spool.append(path, json.dumps({"kind": "handoff", "record_id": "r1"}) + "\n", lock_path=lock)
    records, commit = spool.consume_records(path, a)
    commit()
    assert spool.reclaim_consumed(path, [a, b], lock) == {"files": 0, "bytes": 0}  # b has not read it
    records, commit = spool.consume_records(path, b)
    assert [r["record_id"] for r in records] == ["r1"]
    commit()
    assert spool.reclaim_consumed(path, [a, b], lock)["files"] == 1
    assert not os.path.exists(path)
    spool.append(path, json.dumps({"kind": "handoff", "record_id": "r2"}) + "\n", lock_path=lock)  # maybe the same inode
    for s in (a, b):
        assert [r["record_id"] for r in spool.consume_records(path, s)[0]] == ["r2"]
