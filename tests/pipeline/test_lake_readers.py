"""Engines reading the fleet's Delta table as docs/lake.md shows: ``ctxlake query`` (DuckDB) with
no network at all, delta-rs, Polars. The table is built by maint from the bronze of
tests/fixtures/legacy-lake (real Claude Code sessions)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from lib import config, lake, maintenance
from lib.store import open_store
from tests.conftest import FIXTURES, ROOT

FLEET = "legacy-fleet"


@pytest.fixture
def table(tmp_path, home, monkeypatch):
    """``(table path, store, {(session_id, event_id)})`` after one maintenance pass."""
    root = tmp_path / "lake"
    shutil.copytree(os.path.join(FIXTURES, "legacy-lake"), root)
    monkeypatch.setenv("CTXLAKE_FLEET_ID", FLEET)
    monkeypatch.setenv("CTXLAKE_STORE", "file://" + str(root))
    cfg = config.load()
    store = open_store(cfg.store)
    keys = set()
    for e in store.list("sessions/"):
        if "/seg-" in e.key:
            keys |= {lake.event_key(env) for env in lake.decode(store.get(e.key).data)}
    out = maintenance.run_once(cfg, store, lambda *a, **k: None)
    assert not out.get("lake_error"), out
    return os.path.join(str(root), "compacted", FLEET), store, keys


def _no_network(cmd: list[str], env: dict) -> subprocess.CompletedProcess:
    """Run ``cmd`` in a new, empty network namespace (not even loopback is up)."""
    if not shutil.which("unshare") or subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode:
        pytest.skip("unshare -n is not permitted here (needs root or user namespaces)")
    return subprocess.run(["unshare", "-n"] + cmd, env=env, cwd=ROOT, capture_output=True, timeout=120)


def test_ctxlake_query_runs_duckdb_over_the_table_with_no_network(table, home):
    path, store, keys = table
    env = dict(os.environ, PYTHONPATH=ROOT)
    sql = "SELECT count(*) AS n, count(DISTINCT (session_id, event_id)) AS ids, count(DISTINCT dt) AS days FROM events"
    r = _no_network([sys.executable, "ctxlake.py", "query", sql, "--json"], env)
    assert r.returncode == 0, r.stderr.decode()[-2000:] + r.stdout.decode()
    row = json.loads(r.stdout)[0]
    assert row["n"] == row["ids"] == len(keys) and row["days"] >= 3
    r = _no_network([sys.executable, "ctxlake.py", "query",
                     "SELECT extension_name FROM duckdb_extensions() WHERE loaded ORDER BY 1", "--json"], env)
    loaded = {x["extension_name"] for x in json.loads(r.stdout)}
    assert not loaded & {"delta", "httpfs", "aws"}, loaded
    # a bad query is one line saying what failed and where the columns are listed
    r = _no_network([sys.executable, "ctxlake.py", "query", "SELECT nope FROM events"], env)
    said = (r.stdout + r.stderr).decode()
    assert r.returncode == 2 and said.count("\n") == 1 and "DESCRIBE events" in said, said


def test_delta_rs_reads_it_as_the_docs_show(table):
    from deltalake import DeltaTable, QueryBuilder
    import pyarrow as pa

    path, _, keys = table
    dt = DeltaTable(path)
    t = pa.table(QueryBuilder().register("events", dt).execute(
        "SELECT event_type, count(*) AS n FROM events GROUP BY 1").read_all())
    assert sum(t.column("n").to_pylist()) == len(keys)


def test_polars_reads_it_as_the_docs_show(table):
    pl = pytest.importorskip("polars", reason="polars is a test-only dependency (requirements-dev.txt)")
    path, _, keys = table
    df = pl.read_delta(path)
    assert df.height == len(keys) == df.select(["session_id", "event_id"]).unique().height
    by_agent = df.filter(pl.col("dt") >= "2025-01-01").group_by("agent_id").agg(pl.len())
    assert set(by_agent["agent_id"].to_list()) == {"alice", "bob"}
