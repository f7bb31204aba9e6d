"""The compacted lake as a Delta table (docs/lake.md): migration from the ``gen=<hash>`` layout,
MERGE on the event identity, idempotent and fenced commits, bad input, retention.

The starting lake is ``tests/fixtures/legacy-lake/``: bronze segments, digests and compacted
generations written by the code before the Delta table (see tests/fixtures/NOTICE.md), with
four real Claude Code sessions and, in ``dt=2026-02-10``, a superseded generation next to the
current one. maint runs in-process (``lib.maintenance.run_once``) against a ``file://`` copy of it.
"""
from __future__ import annotations

import json
import os
import shutil
from collections import Counter

import pytest

from lib import config, lake, maintenance, retention
from lib.store import open_store
from tests.conftest import FIXTURES

FLEET = "legacy-fleet"
LEGACY = os.path.join(FIXTURES, "legacy-lake")


class Log:
    def __init__(self):
        self.events = []

    def __call__(self, event, **fields):
        self.events.append((event, fields))

    def names(self):
        return [e for e, _ in self.events]


@pytest.fixture
def lakedir(tmp_path):
    root = tmp_path / "lake"
    shutil.copytree(LEGACY, root)
    return str(root)


def _cfg(home, monkeypatch, lakedir, **lake_knobs):
    monkeypatch.setenv("CTXLAKE_FLEET_ID", FLEET)
    monkeypatch.setenv("CTXLAKE_STORE", "file://" + lakedir)
    if lake_knobs:
        path = os.path.join(home, "ctxlake.toml")
        with open(path, "w") as fh:
            fh.write("[lake]\n" + "".join(f"{k} = {v}\n" for k, v in lake_knobs.items()))
        monkeypatch.setenv("CTXLAKE_CONFIG", path)
    return config.load()


def _bronze_keys(store):
    """{(session_id, event_id)} over every bronze segment, and the row count."""
    keys, rows = set(), 0
    for e in store.list("sessions/"):
        if "/seg-" in e.key:
            for env in lake.decode(store.get(e.key).data):
                keys.add(lake.event_key(env))
                rows += 1
    return keys, rows


def _table_keys(store):
    t = lake.query(store, FLEET, "SELECT session_id, event_id FROM events")
    return Counter(zip(t.column("session_id").to_pylist(), t.column("event_id").to_pylist()))


def _segment(store, prefix):
    return sorted(e.key for e in store.list(prefix) if "/seg-" in e.key)


def _sealed_prefixes(store):
    return sorted(e.key[:-len("_SEALED")] for e in store.list("sessions/") if e.key.endswith("/_SEALED"))


def _ship_new_event(store, seg: int, tag: str) -> str:
    """Add segment ``seg`` to the first sealed session: one new event (id ending in ``tag``)."""
    prefix = _sealed_prefixes(store)[0]
    envs = lake.decode(store.get(_segment(store, prefix)[0]).data)
    store.put(lake.segment_key(prefix, seg), lake.encode([dict(envs[0], event_id=envs[0]["event_id"][:-4] + tag)]))
    return prefix


# -- migration ---------------------------------------------------------------------------------

def test_migration_from_the_gen_layout_counts_every_event_once(home, monkeypatch, lakedir):
    import duckdb

    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    bronze, _ = _bronze_keys(store)
    # today's layout: a plain read_parquet over compacted/ counts the superseded generation again
    naive = duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{lakedir}/compacted/**/*.parquet')").fetchone()[0]
    assert naive > len(bronze)
    assert lake.legacy_keys(store, FLEET)

    log = Log()
    out = maintenance.run_once(cfg, store, log)
    assert out["ran"] and not out.get("lake_error") and out["compacted"] == 1, out
    counts = _table_keys(store)
    assert set(counts) == bronze and max(counts.values()) == 1
    assert out["migrated"] == 7 and lake.legacy_keys(store, FLEET) == []
    assert out["sessions"] == 4 and out["snapshot"]["published"]
    # now any engine sees each event once: DuckDB straight over the table folder via the log's files
    con = lake.duckdb_connect(store, FLEET)
    assert con.execute("SELECT count(*), count(DISTINCT (session_id, event_id)) FROM events").fetchone() == (len(bronze),) * 2
    # idempotent: a second pass finds nothing to do and commits nothing
    version = lake.open_table(store, FLEET).version()
    again = maintenance.run_once(cfg, store, Log())
    assert again["compacted"] == 0 and again.get("migrated") is None
    assert lake.open_table(store, FLEET).version() == version


def test_migration_keeps_rows_that_only_the_old_parts_hold(home, monkeypatch, lakedir):
    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    bronze, _ = _bronze_keys(store)
    gone = [k for k in _segment(store, "sessions/") if "session=c64cc478" in k]
    for k in gone:
        store.delete(k)
    out = maintenance.run_once(cfg, store, Log())
    assert not out.get("lake_error"), out
    assert set(_table_keys(store)) == bronze  # the deleted session's rows came from its old generation


def test_ctxlake_migrate_moves_the_gen_layout_once_and_then_changes_nothing(home, monkeypatch, lakedir):
    import subprocess
    import sys

    from tests.conftest import ROOT

    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    bronze, _ = _bronze_keys(store)
    pending = len(lake.legacy_keys(store, FLEET))

    def migrate():
        r = subprocess.run([sys.executable, os.path.join(ROOT, "ctxlake.py"), "migrate", "--json"], capture_output=True,
                           text=True, timeout=600, check=False, env=dict(os.environ))
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    first = migrate()
    assert first == {"fleet": FLEET, "pending_before": pending, "migrated": pending, "already_done": False,
                     "table_version": 0}
    assert lake.legacy_keys(store, FLEET) == [] and set(_table_keys(store)) == bronze
    second = migrate()
    assert second == {"fleet": FLEET, "pending_before": 0, "migrated": 0, "already_done": True, "table_version": 0}
    assert max(_table_keys(store).values()) == 1


# -- MERGE on the event identity -------------------------------------------------------------

def test_a_reshipped_event_updates_its_row_and_never_duplicates(home, monkeypatch, lakedir):
    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    maintenance.run_once(cfg, store, Log())
    before = _table_keys(store)
    prefix = [p for p in _sealed_prefixes(store) if "session=55604662" in p][0]
    first = lake.read_table(store.get(_segment(store, prefix)[0]).data)
    envs = lake.decode(store.get(_segment(store, prefix)[0]).data)
    i, j = [n for n, e in enumerate(envs) if e["event_type"] != "session_start"][:2]
    later = "2099-01-01T00:00:00.000Z"  # a re-import after the transcript grew: observed later, so it wins
    changed = dict(envs[i], content="re-imported with a corrected transcript", observed_at=later)
    fresh = dict(envs[i], event_id=envs[i]["event_id"][:-4] + "ZZZZ", content="an event the first import missed")
    import pyarrow as pa  # envs[j] re-sent byte for byte (its spool line as envelope_json)

    store.put(lake.segment_key(prefix, 1), lake.encode(pa.concat_tables([lake.to_table([changed, fresh]), first.slice(j, 1)], promote_options="permissive")))
    log = Log()
    out = maintenance.run_once(cfg, store, log)
    assert out["compacted"] == 1 and out["rows_out"] == 3
    committed = dict(log.events)["lake_committed"]
    assert committed["inserted"] == 1 and committed["updated"] == 1  # envs[j] is unchanged: not rewritten
    after = _table_keys(store)
    assert sum(after.values()) == sum(before.values()) + 1 and max(after.values()) == 1
    row = lake.query(store, FLEET, f"SELECT content FROM events WHERE event_id = '{envs[i]['event_id']}'")
    assert row.column("content").to_pylist() == ["re-imported with a corrected transcript"]
    # the digest was recomputed from the table's rows for that session
    digest = json.loads(store.get(lake.digest_key(prefix)).data)
    assert digest["event_count"] == len(envs) + 1


def test_commits_are_idempotent_per_epoch_and_fenced_by_a_newer_one(home, monkeypatch, lakedir):
    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    import pyarrow as pa

    rows = lake.table_rows(pa.concat_tables([lake.read_table(store.get(k).data) for k in _segment(store, "sessions/")]))
    first = lake.commit(store, FLEET, rows, epoch=5, pass_id="5-a")
    assert first["committed"] and first["version"] == 0
    retry = lake.commit(store, FLEET, rows, epoch=5, pass_id="5-a")  # the answer was lost: retried
    assert not retry["committed"] and lake.open_table(store, FLEET).version() == 0
    with pytest.raises(lake.Fenced):
        lake.commit(store, FLEET, rows, epoch=4, pass_id="4-late")
    same = lake.commit(store, FLEET, rows, epoch=6, pass_id="6-same")  # nothing changed: no commit at all
    assert not same["committed"] and lake.open_table(store, FLEET).version() == 0
    i = rows.column("event_type").to_pylist().index("assistant")
    later = dict(json.loads(rows.column("envelope_json")[i].as_py()), observed_at="2099-01-01T00:00:00.000Z")
    changed = rows.slice(i, 1).set_column(rows.schema.get_field_index("envelope_json"), "envelope_json",
                                          pa.array([json.dumps(later)], type=pa.string()))
    newer = lake.commit(store, FLEET, changed, epoch=6, pass_id="6-b")
    assert newer["committed"] and newer["inserted"] == 0 and newer["updated"] == 1
    dt = lake.open_table(store, FLEET)
    assert dt.transaction_version(lake.APP_ID) == 6
    meta = dt.history(limit=1)[0]
    assert meta["ctxlake.pass_id"] == "6-b" and meta["ctxlake.maint_epoch"] == "6"


# -- bad input -------------------------------------------------------------------------------

def test_an_unparseable_segment_is_quarantined_and_the_pass_goes_on(home, monkeypatch, lakedir):
    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    bronze, _ = _bronze_keys(store)
    prefix = _sealed_prefixes(store)[0]
    bad = lake.segment_key(prefix, 7)
    store.put(bad, b"PAR1 this is not a parquet file")
    out = maintenance.run_once(cfg, store, Log())
    assert not out.get("lake_error") and out["sessions"] == 4
    assert set(_table_keys(store)) == bronze
    records = [json.loads(store.get(e.key).data) for e in store.list("quarantine/")]
    assert [r["key"] for r in records] == [bad] and "ArrowInvalid" in records[0]["error"]
    assert out["quarantined"] == [bad]
    assert bad in lake.Ledger.load(store, FLEET).quarantined
    maintenance.run_once(cfg, store, Log())  # not retried every pass, never deleted
    assert len(list(store.list("quarantine/"))) == 1 and store.get(bad).data.startswith(b"PAR1 this")


def _log_dir(lakedir):
    return os.path.join(lakedir, "compacted", FLEET, "_delta_log")


def test_a_corrupt_commit_file_stops_compaction_until_it_is_restored(home, monkeypatch, lakedir):
    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    maintenance.run_once(cfg, store, Log())
    prefix = _ship_new_event(store, 1, "NEW1")
    commit0 = os.path.join(_log_dir(lakedir), "00000000000000000000.json")
    good = open(commit0, "rb").read()
    with open(commit0, "wb") as fh:
        fh.write(good[: len(good) // 2])
    log = Log()
    out = maintenance.run_once(cfg, store, log)
    assert "cannot read the Delta table" in out["lake_error"] and "restore" in out["lake_error"]
    assert "lake_unreadable" in log.names() and out["compacted"] == 0
    assert len(_segment(store, prefix)) == 2  # bronze untouched
    with open(commit0, "wb") as fh:
        fh.write(good)
    out = maintenance.run_once(cfg, store, Log())
    assert not out.get("lake_error") and out["compacted"] == 1 and out["rows_out"] == 1


def test_a_missing_commit_file_is_reported_not_papered_over(home, monkeypatch, lakedir):
    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    maintenance.run_once(cfg, store, Log())
    _ship_new_event(store, 1, "NEW2")
    maintenance.run_once(cfg, store, Log())
    os.unlink(os.path.join(_log_dir(lakedir), "00000000000000000000.json"))
    out = maintenance.run_once(cfg, store, Log())
    assert "cannot read the Delta table" in out.get("lake_error", ""), out
    assert "restore the damaged _delta_log file" in out["lake_error"]  # the store lacks it too: really damaged


def test_a_partially_written_checkpoint_is_dropped_and_rebuilt_from_the_log(home, monkeypatch, lakedir):
    cfg = _cfg(home, monkeypatch, lakedir, checkpoint_every=1)
    store = open_store(cfg.store)
    maintenance.run_once(cfg, store, Log())
    _ship_new_event(store, 1, "NEW3")
    maintenance.run_once(cfg, store, Log())
    logdir = _log_dir(lakedir)
    ckpts = sorted(n for n in os.listdir(logdir) if ".checkpoint" in n)
    assert ckpts, os.listdir(logdir)
    path = os.path.join(logdir, ckpts[-1])
    data = open(path, "rb").read()
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
    with pytest.raises(lake.TableError):
        lake.open_table(store, FLEET)
    _ship_new_event(store, 2, "NEW4")
    log = Log()
    out = maintenance.run_once(cfg, store, log)
    assert not out.get("lake_error") and out["compacted"] == 1, out
    assert "lake_checkpoint_repaired" in log.names()
    counts = _table_keys(store)
    assert max(counts.values()) == 1 and len(counts) == len(_bronze_keys(store)[0])


def test_a_table_with_an_older_schema_gains_columns_without_a_rewrite(home, monkeypatch, lakedir):
    from deltalake import write_deltalake

    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    old_prefix = [p for p in _sealed_prefixes(store) if "session=5c0375b4" in p][0]
    old = lake.table_rows(lake.read_table(store.get(_segment(store, old_prefix)[0]).data))
    old = old.drop_columns(["rules_fired", "imported", "cost_usd"])  # an older table's columns
    uri, _ = lake.location(store, FLEET)
    write_deltalake(uri, old, partition_by=["dt"])
    old_files = set(lake.open_table(store, FLEET).file_uris())
    out = maintenance.run_once(cfg, store, Log())
    assert not out.get("lake_error"), out
    dt = lake.open_table(store, FLEET)
    names = [f.name for f in dt.schema().fields]
    assert {"rules_fired", "imported", "cost_usd"} <= set(names)
    assert old_files <= set(dt.file_uris())  # the old day's file was not rewritten
    assert [h["operation"] for h in dt.history()] == ["MERGE", "WRITE"]
    counts = _table_keys(store)
    assert max(counts.values()) == 1 and set(counts) == _bronze_keys(store)[0]
    t = lake.query(store, FLEET, f"SELECT imported FROM events WHERE session_id = '{old.column('session_id')[0]}'")
    assert set(t.column("imported").to_pylist()) == {None}  # added columns read as NULL in old files


# -- retention -------------------------------------------------------------------------------

def test_retention_deletes_only_what_is_safe(home, monkeypatch, lakedir):
    import dataclasses
    import time

    cfg = _cfg(home, monkeypatch, lakedir, bronze_grace_hours=72, snapshot_keep_hours=24)
    assert cfg.lake.vacuum_hours == 168
    store = open_store(cfg.store)
    t0 = time.time()  # the ledger dates segments by their Delta commit, which delta-rs stamps with this clock
    clock = [t0]
    out = maintenance.run_once(cfg, store, Log(), now=lambda: clock[0])
    bronze, _ = _bronze_keys(store)
    segs = _segment(store, "sessions/")
    assert out["retention"]["bronze"]["segments"] == 0  # inside the grace period
    # an update replaces a table file: unreferenced from then on, but younger than vacuum_hours
    prefix = _sealed_prefixes(store)[0]
    envs = lake.decode(store.get(_segment(store, prefix)[0]).data)
    e = [x for x in envs if x["event_type"] != "session_start"][0]
    store.put(lake.segment_key(prefix, 1), lake.encode([dict(e, content="corrected", observed_at="2099-01-01T00:00:00.000Z")]))
    clock[0] += 3600
    out = maintenance.run_once(cfg, store, Log(), now=lambda: clock[0])
    assert out["retention"]["vacuum"]["files"] == 0
    assert out["lake"]["unreferenced_files"] == 1 and out["lake"]["unreferenced_bytes"] > 0
    assert out["lake"]["vacuum_due_files"] == 0 and out["lake"]["bytes"] > 0
    # the status figures reach the snapshot pointer that syncd mirrors
    assert json.loads(store.get(lake.snapshot_pointer_key(FLEET)).data)["lake"] == out["lake"]
    # with vacuum_hours = 0 the next pass deletes it
    cfg = dataclasses.replace(cfg, lake=dataclasses.replace(cfg.lake, vacuum_hours=0))
    clock[0] += 3600
    out = maintenance.run_once(cfg, store, Log(), now=lambda: clock[0])
    assert out["retention"]["vacuum"]["files"] == 1 and out["retention"]["vacuum"]["bytes"] > 0
    assert out["lake"]["unreferenced_files"] == 0
    assert set(_table_keys(store)) == bronze
    # past the grace period: compacted bronze goes, markers and digests stay, the table keeps every row
    clock[0] = t0 + 73 * 3600
    out = maintenance.run_once(cfg, store, Log(), now=lambda: clock[0])
    assert out["retention"]["bronze"]["segments"] == len(segs) + 1
    assert _segment(store, "sessions/") == []
    assert len(_sealed_prefixes(store)) == 4 and all(store.head(lake.digest_key(p)) for p in _sealed_prefixes(store))
    assert set(_table_keys(store)) == bronze and out["sessions"] == 4
    assert lake.Ledger.load(store, FLEET).segments == {}


def test_snapshot_blobs_keep_the_current_and_the_previous(home, monkeypatch, lakedir):
    from lib.memory import snapshot

    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    shas = []
    for i in range(4):
        data = f"snapshot {i}".encode()
        snapshot.publish(store, FLEET, data, maint_epoch=i + 1, built_at="t", claim_count=0, session_count=0)
        shas.append(snapshot.sha256(data))
    now = store.clock()
    assert retention.snapshot_blobs(store, FLEET, 24, now, Log())["blobs"] == 0  # all younger than a day
    out = retention.snapshot_blobs(store, FLEET, 24, now + 25 * 3600, Log())
    left = sorted(e.key.rsplit("/", 1)[-1][:-7] for e in store.list(f"snapshot/{FLEET}/") if e.key.endswith(".sqlite"))
    assert out["blobs"] == 2 and left == sorted(shas[2:])
    assert json.loads(store.get(lake.snapshot_pointer_key(FLEET)).data)["previous"] == shas[2]


def test_status_and_metrics_show_the_lake_size_and_what_vacuum_frees(home, monkeypatch, lakedir):
    import io

    import ctxlake
    from lib.memory import snapshot
    from lib.metrics import SyncdMetrics

    cfg = _cfg(home, monkeypatch, lakedir)
    store = open_store(cfg.store)
    out = maintenance.run_once(cfg, store, Log())
    os.makedirs(os.path.dirname(cfg.paths.snapshot(FLEET)), exist_ok=True)
    snapshot.fetch(store, FLEET, cfg.paths.snapshot(FLEET))  # what syncd does every pass
    buf = io.StringIO()
    assert ctxlake.main(["status", "--json"], stdout=buf) == 0
    figures = json.loads(buf.getvalue())["lake"]
    assert figures["bytes"] == out["lake"]["bytes"] > 0 and figures["files"] == out["lake"]["files"]
    assert figures["vacuum_due_bytes"] == 0 and figures["version"] == lake.open_table(store, FLEET).version()
    buf = io.StringIO()
    ctxlake.main(["status"], stdout=buf)
    line = [ln for ln in buf.getvalue().splitlines() if ln.startswith("lake ")][0]
    assert "MiB in" in line and "next vacuum frees 0.0 MiB" in line
    text = SyncdMetrics(cfg.paths, FLEET).render().decode()
    assert f"ctxlake_lake_bytes {float(figures['bytes'])}" in text
    assert "ctxlake_lake_vacuum_due_bytes 0.0" in text
