"""Maintenance survives a bad object (issue #16 item 14): a garbage or truncated sealed segment
and a garbage ``_CURRENT`` are skipped, named in one log line and recorded under
``quarantine/maint/``; the rest of the fleet's work finishes; a ``_CURRENT`` carrying an epoch no
lease issued is refused, not obeyed."""
from __future__ import annotations

import json
import os

from lib import lake, maintenance
from lib.importers.claude_code import import_path
from lib.store import CREATE
from tests.conftest import FIXTURES
from tests.pipeline import lakeutil

T = os.path.join(FIXTURES, "claude-transcripts")


def _lake_of_two_sessions(home):
    paths, store, cfg = lakeutil.setup(home)
    for name in ("spotter__short.jsonl", "spotter__tool_heavy.jsonl"):
        import_path(os.path.join(T, name), paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
    lakeutil.ship_and_maint(paths, store, cfg)
    return paths, store, cfg


def test_a_corrupt_segment_is_skipped_quarantined_and_named(home):
    paths, store, cfg = _lake_of_two_sessions(home)
    seg = sorted(e.key for e in store.list("sessions/") if e.key.endswith("seg-000000.parquet"))[0]
    good = store.get(seg).data
    prefix = lake.parse_session_prefix(seg)["prefix"]
    store.put(lake.segment_key(prefix, 7), good[: len(good) // 2], CREATE)  # truncated
    store.put(lake.segment_key(prefix, 8), b"not parquet at all", CREATE)  # garbage
    logs = []
    summary = maintenance.run_once(cfg, store, lambda ev, **kw: logs.append((ev, kw)))
    assert summary["ran"] and summary["snapshot"] and summary["sessions"] == 2
    named = {kw.get("key") for ev, kw in logs if ev == "segment_unreadable"}
    assert {lake.segment_key(prefix, 7), lake.segment_key(prefix, 8)} <= named
    assert set(summary["quarantined"]) >= {lake.segment_key(prefix, 7), lake.segment_key(prefix, 8)}
    recorded = [json.loads(store.get(e.key).data)["key"] for e in store.list("quarantine/maint/")]
    assert lake.segment_key(prefix, 8) in recorded
    rows = lakeutil.compacted(store)
    assert len({r["session_id"] for r in rows}) == 2  # the rest of the fleet's work finished


def test_an_epoch_no_lease_issued_is_refused(home):
    """A Delta commit carrying a maintenance epoch far above any the lease issued (written by a
    hand with store credentials) would fence every maint forever if obeyed; it is refused."""
    from deltalake import CommitProperties, DeltaTable, Transaction

    paths, store, cfg = _lake_of_two_sessions(home)
    uri, opts = lake.location(store, lakeutil.FLEET)
    forged = CommitProperties(app_transactions=[Transaction(app_id=lake.APP_ID, version=10 ** 18)])
    DeltaTable(uri, storage_options=opts).alter.set_table_properties({"delta.appendOnly": "false"},
                                                                      commit_properties=forged)
    import_path(os.path.join(T, "spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"), paths,
                fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
    from lib import ship

    ship.ship_all(store, paths, batch_rows=500)  # something new, so the next pass commits
    logs = []
    summary = maintenance.run_once(cfg, store, lambda ev, **kw: logs.append((ev, kw)))
    assert summary["ran"] and not summary.get("fenced"), summary
    assert any(ev == "lake_txn_epoch_refused" and kw["recorded"] == 10 ** 18 for ev, kw in logs)
    assert DeltaTable(uri, storage_options=opts).transaction_version(lake.APP_ID) == summary["maint_epoch"]
    again = maintenance.run_once(cfg, store, lambda *a, **k: None)
    assert again["ran"] and not again.get("fenced")
