"""Fleet ids outside ``[A-Za-z0-9._-]`` work end to end (docs/design.md §4, the tester's report
#3): ``ctxlake init`` accepts them, the installed-style hook captures under them, and
``sync --once``, ``maint --once``, ``query`` and the briefing work, on a ``file://`` store and on
the real S3 server (SeaweedFS, tests/support/s3server.py)."""
from __future__ import annotations

import json
import os
import uuid

import pytest

from tests.cli.test_errors import Box
from tests.conftest import FIXTURES
from tests.pipeline.lakeutil import init_and_capture

# the tester's ids: a space, a non-ASCII letter, a slash, a literal percent escape; and a tilde
# spelling what a percent encodes to in the table's folder name (an ESC byte was one too, until
# init refused control characters: tests/cli/test_errors.py)
REPORTED = ["a b", "ünï", "fl/eet", "x%2Fy", "a~25b"]


def _loop(box: Box, store_url: str, fleet: str) -> None:
    init_and_capture(box, store_url, fleet)
    for attempt in (1, 2):  # the second pass reads the table the first one committed
        maint = box.run("maint", "--once", "--json")
        assert maint.returncode == 0, maint.stderr
        assert "restore the damaged" not in maint.stderr
        summary = json.loads(maint.stdout)
        assert summary["ran"] and summary["sessions"] == 1, summary
    q = box.run("query", "SELECT fleet_id, count(*) AS n FROM events GROUP BY fleet_id", "--json")
    assert q.returncode == 0, q.stderr
    rows = json.loads(q.stdout)
    assert [r["fleet_id"] for r in rows] == [fleet] and rows[0]["n"] > 0, rows
    again = box.run("sync", "--once", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["snapshot_sha"] == summary["snapshot"]["sha256"], again.stderr
    status = box.run("status")  # reads the cached snapshot under cache/<encoded fleet>/
    assert status.returncode == 0 and "1 sessions" in status.stdout and "unreadable" not in status.stdout, status.stdout


@pytest.mark.parametrize("fleet", REPORTED, ids=["space", "umlaut", "slash", "percent", "tilde"])
def test_a_fleet_id_init_accepts_works_on_a_file_store(tmp_path, fleet):
    box = Box(tmp_path)
    store = os.path.join(box.tmp, "store")
    _loop(box, "file://" + store, fleet)
    # the table's folder is the one design.md §4 names, and nothing was written under a decoded name
    assert sorted(os.listdir(os.path.join(store, "compacted"))) == [fleet_folder(fleet)]


def fleet_folder(fleet: str) -> str:
    from lib.keys import table_segment

    return table_segment(fleet)


@pytest.mark.s3
@pytest.mark.parametrize("fleet", ["a b", "x%2Fy", "a~25b"], ids=["space", "percent", "tilde"])
def test_a_fleet_id_init_accepts_works_on_s3(tmp_path, seaweed, fleet):
    prefix = f"fleet-ids-{uuid.uuid4().hex[:8]}"
    box = Box(tmp_path, extra_env=seaweed.env())
    _loop(box, seaweed.url(prefix), fleet)
    keys = [o["Key"] for page in seaweed.client().get_paginator("list_objects_v2").paginate(
        Bucket=seaweed.bucket, Prefix=f"{prefix}/compacted/") for o in page.get("Contents", ())]
    assert keys and {k.split("/")[2] for k in keys} == {fleet_folder(fleet)}, keys


def _legacy_rows():
    from lib import lake

    root = os.path.join(FIXTURES, "legacy-lake", "sessions")
    seg = next(os.path.join(d, n) for d, _, names in sorted(os.walk(root)) for n in sorted(names) if n.startswith("seg-"))
    with open(seg, "rb") as fh:
        return lake.table_rows(lake.read_table(fh.read()))


def test_a_table_delta_rs_misresolves_is_not_called_damaged(tmp_path, monkeypatch):
    """The layout before the fix (the folder ``a%20b``, which delta-rs decodes to ``a b``): the
    log file it cannot find is in the store, so the error must not advise restoring a backup."""
    from lib import keys, lake
    from lib.paths import safe_segment
    from lib.store import open_store

    store = open_store("file://" + str(tmp_path / "store"))
    monkeypatch.setattr(keys, "table_segment", safe_segment)  # how the table folder was named before
    try:
        lake.commit(store, "a b", _legacy_rows(), epoch=1, pass_id="1-a")
    except lake.TableError:
        pass  # delta-rs wrote the first commit under a%20b/ and then looked for it under "a b/"
    assert store.head("compacted/a%20b/_delta_log/00000000000000000000.json")
    with pytest.raises(lake.TableError) as err:
        lake.open_table(store, "a b")
    assert "nothing is damaged" in str(err.value) and "restore" not in str(err.value), err.value
    monkeypatch.undo()
    assert lake.open_table(store, "a b") is None  # the new folder a~20b: no table yet, maint builds it from bronze


def test_a_store_written_before_the_fix_is_compacted_in_full(tmp_path, monkeypatch):
    """The tester's store as the earlier naming left it: sessions shipped under fleet ``a b`` and
    a table folder ``compacted/a%20b/`` delta-rs could never read back. No ledger was ever saved
    there, so the bronze is all still in place: the next pass builds ``compacted/a~20b/`` from it
    and every shipped event is queryable."""
    from lib import config, keys, lake, maintenance
    from lib.paths import safe_segment
    from lib.store import open_store

    box = Box(tmp_path)
    init_and_capture(box, "file://" + os.path.join(box.tmp, "store"), "a b")
    cfg = config.load(box.env, path=box.config)
    assert cfg.fleet_id == "a b"
    store = open_store(cfg.store)
    bronze = sum(len(lake.decode(store.get(e.key).data)) for e in store.list("sessions/") if "/seg-" in e.key)
    with monkeypatch.context() as m:
        m.setattr(keys, "table_segment", safe_segment)  # how the table folder was named before
        for _ in range(2):  # the tester's `maint --once`: exit 70 on the first pass, lake_error after
            try:
                before = maintenance.run_once(cfg, store, lambda e, **f: None)
            except lake.TableError as exc:
                assert "nothing is damaged" in str(exc)
                continue
            assert before["compacted"] == 0 and "cannot read the Delta table" in before["lake_error"], before
    assert not any(e.key.startswith("compacted/a%20b/_ctxlake/ledger") for e in store.list("compacted/"))
    after = maintenance.run_once(cfg, store, lambda e, **f: None)
    assert not after.get("lake_error") and after["compacted"] == 1, after
    n = lake.query(store, "a b", "SELECT count(*) AS n FROM events").column("n").to_pylist()
    assert n == [bronze] and bronze > 0
