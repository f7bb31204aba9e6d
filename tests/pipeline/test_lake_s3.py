"""The Delta commit path on a real S3 server (SeaweedFS ``weed mini``, tests/support/s3server.py):
two maintenance passes racing one commit, and a store that ignores conditional writes
(docs/lake.md)."""
from __future__ import annotations

import os
import threading
from collections import Counter


from lib import config, lake, maintenance
from lib.store import open_store
from tests.conftest import FIXTURES

FLEET = "legacy-fleet"


class Log:
    def __init__(self):
        self.events, self._lock = [], threading.Lock()

    def __call__(self, event, **fields):
        with self._lock:
            self.events.append((event, fields))

    def names(self):
        return [e for e, _ in self.events]


def _upload_legacy(store) -> None:
    """Put the bronze of tests/fixtures/legacy-lake (real sessions) into ``store``."""
    root = os.path.join(FIXTURES, "legacy-lake")
    for d, _, files in os.walk(os.path.join(root, "sessions")):
        for name in files:
            path = os.path.join(d, name)
            with open(path, "rb") as fh:
                store.put(os.path.relpath(path, root).replace(os.sep, "/"), fh.read())


def _rows(store):
    import pyarrow as pa

    keys = sorted(e.key for e in store.list("sessions/") if "/seg-" in e.key)
    return lake.table_rows(pa.concat_tables([lake.read_table(store.get(k).data) for k in keys]))


def _counts(store):
    t = lake.query(store, FLEET, "SELECT session_id, event_id FROM events")
    return Counter(zip(t.column("session_id").to_pylist(), t.column("event_id").to_pylist()))


def test_two_passes_racing_one_commit_on_seaweedfs(s3_url):
    store = open_store(s3_url)
    _upload_legacy(store)
    rows = _rows(store)
    first = rows.slice(0, 50)
    assert lake.commit(store, FLEET, first, epoch=3, pass_id="3-a")["committed"]
    barrier = threading.Barrier(2, timeout=60)
    calls: dict = {}

    def at_commit(name):
        calls[name] = calls.get(name, 0) + 1
        if calls[name] == 1:
            barrier.wait()  # both passes read version 0 and write at the same moment

    results, log = {}, Log()

    def run(name, epoch):
        try:
            results[name] = lake.commit(store, FLEET, rows, epoch=epoch, pass_id=f"{epoch}-{name}", log=log,
                                        before_commit=lambda: at_commit(name))
        except lake.Fenced as exc:
            results[name] = exc

    threads = [threading.Thread(target=run, args=("old", 4)), threading.Thread(target=run, args=("new", 5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert "lake_commit_retry" in log.names(), log.events  # one of the two lost the race and retried
    dt = lake.open_table(store, FLEET)
    committed = [r for r in results.values() if isinstance(r, dict) and r["committed"]]
    assert len(committed) == 1 and dt.version() == 1
    if isinstance(results["old"], lake.Fenced):  # the newer epoch won: the older one yields
        assert dt.transaction_version(lake.APP_ID) == 5
    else:  # the older won: the newer re-read the table, found every row there, committed nothing
        assert results["old"]["committed"] and not results["new"]["committed"]
    counts = _counts(store)
    assert len(counts) == rows.num_rows and max(counts.values()) == 1


def test_doctor_and_maint_refuse_delta_commits_behind_the_stripping_proxy(stripping_proxy, home, monkeypatch):
    from lib import doctor

    proxy, url = stripping_proxy
    result = doctor.run(url, "doctor-test")
    assert result["delta_commits"]["ok"] is False and "maint refuses to commit" in result["delta_commits"]["detail"]
    # the live plane elsewhere (its leases are safe), the lake behind the proxy: maint gets its
    # lease but must not commit the table
    monkeypatch.setenv("CTXLAKE_STORE", url)
    monkeypatch.setenv("CTXLAKE_LIVE_STORE", "memory://lake-s3-live")
    monkeypatch.setenv("CTXLAKE_FLEET_ID", FLEET)
    cfg = config.load()
    store = open_store(cfg.store, live=cfg.live_store)
    _upload_legacy(store)
    log = Log()
    out = maintenance.run_once(cfg, store, log)
    assert out["ran"] and "does not honour conditional writes" in out["lake_error"], out
    assert "lake_commit_refused" in log.names()
    assert lake.open_table(store, FLEET) is None  # nothing committed
    assert list(store.list(lake.table_root(FLEET) + "_delta_log/")) == []


def test_doctor_says_delta_commits_are_safe_on_seaweedfs(s3_url):
    from lib import doctor

    result = doctor.run(s3_url, "doctor-test")
    assert result["delta_commits"]["ok"] is True
    assert "Delta table commits" in doctor.render_table(result)
