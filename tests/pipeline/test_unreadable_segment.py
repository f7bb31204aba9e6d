"""A sealed segment truncated in the store before maint merged it (docs/operations.md
"Unreadable segments"): ``ctxlake maint --once`` logs it at level error, counts it in its summary
(text and ``--json``), ``ctxlake status`` shows the count once syncd mirrored the pointer, the
other session is compacted, and no pass deletes the unreadable object, even past the bronze grace."""
from __future__ import annotations

import json
import os
import subprocess
import time

from lib import lake, maintenance, ship
from lib.importers.claude_code import import_path
from tests.conftest import FIXTURES, PYTHON, ROOT
from tests.pipeline import lakeutil

T = os.path.join(FIXTURES, "claude-transcripts")
HANG_GUARD = 300  # seconds; only stops a broken child from hanging the suite, never asserted on


def _run(env, *args):
    return subprocess.run([PYTHON, os.path.join(ROOT, "ctxlake.py"), *args], capture_output=True, text=True,
                          env=env, timeout=HANG_GUARD)


def test_truncated_segment_is_an_error_counted_everywhere_and_never_deleted(home):
    paths, store, cfg = lakeutil.setup(home)
    for name in ("spotter__short.jsonl", "spotter__tool_heavy.jsonl"):
        import_path(os.path.join(T, name), paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
    ship.ship_all(store, paths, batch_rows=500)
    segs = sorted(e.key for e in store.list("sessions/") if e.key.endswith("seg-000000.parquet"))
    assert len(segs) == 2
    bad = segs[0]
    good = store.get(bad).data
    with open(os.path.join(store.root, bad), "wb") as fh:  # truncated in place, as a bad copy leaves it
        fh.write(good[: len(good) // 3])
    env = dict(os.environ, PYTHONPATH=ROOT, CTXLAKE_HOME=home, CTXLAKE_FLEET_ID=lakeutil.FLEET,
               CTXLAKE_AGENT_ID=lakeutil.AGENT)
    r = _run(env, "maint", "--once")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(ln) for ln in r.stderr.splitlines() if ln.startswith("{")]
    assert [(ln["level"], ln["key"]) for ln in lines if ln["event"] == "segment_unreadable"] == [("error", bad)]
    assert "1 unreadable segment(s)" in r.stdout, r.stdout
    r = _run(env, "maint", "--once", "--json")
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["unreadable_segments"] == 1 and summary["unreadable_keys"] == [bad]
    other = lake.parse_session_prefix(segs[1])["session"]
    assert other in {e["session_id"] for e in lakeutil.compacted(store)}
    assert _run(env, "sync", "--once").returncode in (0, 1)
    st = _run(env, "status")
    assert any("1 unreadable segment(s)" in ln for ln in st.stdout.splitlines()), st.stdout
    assert json.loads(_run(env, "status", "--json").stdout)["unreadable_segments"] == 1
    # retention past the bronze grace deletes merged bronze, never the unreadable object
    later = time.time() + (cfg.lake.bronze_grace_hours + 24) * 3600
    out = maintenance.run_once(cfg, store, lambda *a, **k: None, now=lambda: later)
    assert out["retention"]["bronze"]["segments"] >= 1
    assert store.get(bad).data == good[: len(good) // 3]
    assert out["unreadable_segments"] == 1
    # the operator deletes it once inspected: the count goes away
    store.delete(bad)
    assert maintenance.run_once(cfg, store, lambda *a, **k: None)["unreadable_segments"] == 0
