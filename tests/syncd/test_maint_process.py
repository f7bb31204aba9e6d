"""syncd's periodic maintenance pass runs ``maint.py`` as its own process (issue 20: no role
script imports another), against the same config and store, and a pass that cannot run is one
``maint_failed`` log line, never an exception in the daemon's loop."""
from __future__ import annotations

import os

from lib import keys
from lib.store import open_store
from tests.syncd.conftest import spool_session


def test_the_maintenance_pass_runs_as_a_process_on_the_daemons_store(home, tmp_path, monkeypatch):
    from lib import config, maintenance, syncpass

    lake = tmp_path / "lake"
    monkeypatch.setenv("CTXLAKE_STORE", "file://" + str(lake))
    monkeypatch.setenv("CTXLAKE_FLEET_ID", "f")
    cfg = config.load()
    spool_session(cfg.paths, "s-maint", 3, done=True)
    store = open_store(cfg.store)
    logged = []
    assert syncpass.run_pass(cfg, store, lambda e, **f: logged.append(e))["shipped"] > 0
    summary = maintenance.run_process(lambda e, **f: logged.append((e, f)))[0]
    assert summary is not None and summary["ran"] and summary["snapshot"]["sha256"], summary
    assert store.get(keys.snapshot_pointer_key("f")).data  # published on the store syncd ships to
    assert "maint_failed" not in [e for e in logged if isinstance(e, str)]


def test_a_maintenance_pass_that_cannot_start_is_logged_not_raised(home, tmp_path, monkeypatch):
    from lib import maintenance
    bad = tmp_path / "bad.toml"
    bad.write_text("[sync]\npoll_sec = 2\n")  # a typo: maint refuses the config (exit 78, no summary)
    monkeypatch.setenv("CTXLAKE_CONFIG", str(bad))
    logged = []
    assert maintenance.run_process(lambda e, **f: logged.append((e, f)))[0] is None
    assert [e for e, _ in logged] == ["maint_failed"] and "without a summary" in logged[0][1]["error"]
    assert os.environ.get("CTXLAKE_PROG") is None
