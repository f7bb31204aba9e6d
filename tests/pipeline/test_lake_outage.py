"""A store outage in the middle of a Delta commit (docs/lake.md, "What a maintenance pass
commits"): nothing of the interrupted commit is visible to any reader, bronze and the ledger are
left as they were, and the next pass completes it — every event exactly once.

On the real SeaweedFS server through the fault-injecting proxy (tests/support/s3server.py
``StrippingProxy.outage``): the outage starts at the second data file of the commit, at the PUT
of the commit file itself, or lets the commit file land and eats the answer. On ``file://`` the
outage is a full disk (``RLIMIT_FSIZE``, the way tests/store/test_full_disk_and_bad_pointer.py
does it) while the commit's data files are written. maint runs the way production runs it:
``maint.py --once --json`` in a child process (the proxy lives in this one).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from lib import lake
from lib.store import open_store
from tests.conftest import FIXTURES, ROOT

FLEET = "legacy-fleet"
LEGACY = os.path.join(FIXTURES, "legacy-lake")


FULL_DISK = ("import resource, runpy, signal, sys\n"
             "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), like a full disk\n"
             "resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
             "sys.argv = ['maint.py', '--once', '--json']\n"
             "runpy.run_path('maint.py', run_name='__main__')\n")


def _maint(env: dict, disk_full_at: int | None = None) -> tuple[int, dict | None, str]:
    """``maint.py --once --json`` in a child process: ``(exit code, summary or None, stderr)``;
    with ``disk_full_at`` no file it writes can grow past that many bytes."""
    argv = [sys.executable, "maint.py", "--once", "--json"] if disk_full_at is None else \
        [sys.executable, "-c", FULL_DISK.format(limit=disk_full_at)]
    r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    return r.returncode, json.loads(lines[-1]) if lines else None, r.stderr


LEASE_TTL = 60
"""The maintenance lease of these passes (s): a pass the outage stopped could not release its
lease, so the next one starts once it lapsed (:func:`_next_pass`)."""


def _env(home: str, store_url: str, **extra) -> dict:
    cfg = os.path.join(home, "ctxlake.toml")
    with open(cfg, "w") as fh:
        fh.write(f"[leases]\nttl_secs = {LEASE_TTL}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_FLEET_ID=FLEET, CTXLAKE_AGENT_ID="maint-test", CTXLAKE_STORE=store_url,
               CTXLAKE_CONFIG=cfg, PYTHONPATH=ROOT, **extra)
    return env


def _next_pass(env: dict) -> tuple[int, dict | None, str]:
    """The next maintenance pass, as a CronJob would start it: again until the lease the
    interrupted pass left behind has lapsed (its TTL, plus slack for a loaded machine)."""
    deadline = time.monotonic() + LEASE_TTL * 4
    while True:
        rc, summary, err = _maint(env)
        if (summary or {}).get("ran", True) or time.monotonic() > deadline:
            return rc, summary, err
        time.sleep(2)


def _bronze(store) -> tuple[set, list[str]]:
    """The event identities over every bronze segment, and the segment keys."""
    keys, segs = set(), sorted(e.key for e in store.list("sessions/") if "/seg-" in e.key)
    for k in segs:
        keys.update(lake.event_key(env) for env in lake.decode(store.get(k).data))
    return keys, segs


def _view(store) -> dict:
    """What a reader sees: table version, ``Counter`` of event identities, ledger segments, and
    the data files the version references."""
    dt = lake.open_table(store, FLEET)
    t = lake.query(store, FLEET, "SELECT session_id, event_id FROM events")
    return {"version": dt.version(),
            "counts": Counter(zip(t.column("session_id").to_pylist(), t.column("event_id").to_pylist())),
            "ledger": set(lake.Ledger.load(store, FLEET).segments),
            "files": {a["path"] for a in lake._add_actions(dt)}}


def _data_files(store) -> set[str]:
    """Every object under the table root that is not log or bookkeeping (paths relative to it)."""
    root = lake.table_root(FLEET)
    return {e.key[len(root):] for e in store.list(root) if not e.key[len(root):].startswith("_")}


def _ship_new_events(store, n: int, seed: int) -> list[str]:
    """Add one segment to every sealed session of the fixture: ``n`` new events each, copies of
    its first event under new ids with incompressible content (so the commit's data files are
    large). Returns the new segment keys."""
    rng = random.Random(seed)
    out = []
    for sealed in sorted(e.key for e in store.list("sessions/") if e.key.endswith("/_SEALED")):
        prefix = sealed[:-len("_SEALED")]
        segs = sorted(e.key for e in store.list(prefix) if "/seg-" in e.key)
        first = lake.decode(store.get(segs[0]).data)[0]
        envs = [dict(first, event_id=f"{first['event_id'][:-6]}N{seed:01d}{i:04d}", event_type="assistant",
                     content=rng.randbytes(600).hex()) for i in range(n)]
        key = lake.segment_key(prefix, len(segs))
        store.put(key, lake.encode(envs))
        out.append(key)
    return out


def _assert_nothing_half_visible(store, before: dict, new_segments: list[str]) -> None:
    after = _view(store)
    assert after == before, "a reader sees part of the interrupted commit"
    assert not set(new_segments) & after["ledger"]
    for k in new_segments:  # bronze untouched
        assert store.get(k).data


def _assert_completed(store, before: dict, summary: dict) -> None:
    bronze, segs = _bronze(store)
    after = _view(store)
    assert summary["compacted"] == 1 and not summary.get("lake_error"), summary
    assert set(after["counts"]) == bronze and max(after["counts"].values()) == 1
    assert after["ledger"] == set(segs)
    history = lake.open_table(store, FLEET).history()
    assert [h["version"] for h in history if h["version"] > before["version"]] == [after["version"]], \
        "the interrupted pass and the one completing it made one commit between them"


# -- SeaweedFS through the fault-injecting proxy -------------------------------------------------

class Outage:
    """``StrippingProxy.outage`` for one pass: from the moment ``start`` matches a request, every
    request is refused (``"lose"``: only the commit file's PUT, applied but unanswered)."""

    def __init__(self, where: str):
        self.where, self.down, self.data_puts, self.lock = where, False, 0, threading.Lock()

    def __call__(self, method: str, key: str):
        commit = method == "PUT" and "/_delta_log/0" in key and key.endswith(".json")
        with self.lock:
            if self.where == "lose":
                if commit and not self.down:
                    self.down = True
                    return "lose"
                return None
            if method == "PUT" and "/dt=" in key and key.endswith(".parquet"):
                self.data_puts += 1
                if self.where == "data" and self.data_puts == 2:
                    self.down = True
            if commit and self.where == "commit":
                self.down = True
            return "refuse" if self.down else None


@pytest.fixture
def proxied(seaweed, monkeypatch, home):
    """``(proxy, store, env)``: a fresh prefix on the session server with the fixture's bronze,
    ``store`` talking to the server directly and ``env`` running maint through the proxy."""
    import uuid

    from tests.support.s3server import StrippingProxy, use_server_env

    proxy = StrippingProxy(seaweed, every=0)  # faithful: it only injects outages
    use_server_env(monkeypatch, seaweed)
    prefix = "t-" + uuid.uuid4().hex[:12]
    store = open_store(seaweed.url(prefix))
    for d, _, files in os.walk(os.path.join(LEGACY, "sessions")):
        for name in files:
            path = os.path.join(d, name)
            with open(path, "rb") as fh:
                store.put(os.path.relpath(path, LEGACY).replace(os.sep, "/"), fh.read())
    env = _env(home, seaweed.url(prefix), **seaweed.env())
    env["AWS_ENDPOINT_URL_S3"] = proxy.endpoint
    try:
        yield proxy, store, env
    finally:
        proxy.close()
        seaweed.wipe(prefix + "/")


@pytest.mark.parametrize("where", ["data", "commit"])
def test_an_outage_mid_commit_on_seaweedfs_shows_nothing_and_the_next_pass_completes_it(proxied, where):
    proxy, store, env = proxied
    rc, summary, err = _maint(env)
    assert rc == 0 and summary["compacted"] == 1, err
    before = _view(store)
    new = _ship_new_events(store, 40, seed=1)

    outage = Outage(where)
    proxy.outage = outage
    rc, summary, err = _maint(env)
    proxy.outage = None
    assert outage.down and proxy.faults > 0
    assert rc != 0, (summary, err)
    last = err.strip().splitlines()[-1]
    assert last.startswith("maint.py: ") and "Traceback" not in err, err  # one line saying what failed
    _assert_nothing_half_visible(store, before, new)
    orphans = _data_files(store) - before["files"]
    if where == "commit":
        assert orphans, "the commit's data files were written before the commit file"

    rc, summary, err = _next_pass(env)
    assert rc == 0, err
    _assert_completed(store, before, summary)
    # what the interrupted commit left is referenced by no version: vacuum deletes it later
    after = _view(store)
    assert not orphans & after["files"]
    assert summary["lake"]["unreferenced_files"] >= len(orphans)


def test_a_commit_whose_answer_the_outage_ate_lands_once(proxied):
    proxy, store, env = proxied
    rc, summary, err = _maint(env)
    assert rc == 0, err
    before = _view(store)
    _ship_new_events(store, 40, seed=2)
    proxy.outage = Outage("lose")
    rc, summary, err = _maint(env)
    proxy.outage = None
    assert proxy.faults == 1
    assert rc == 0, err
    events = [json.loads(ln) for ln in err.splitlines() if ln.startswith("{")]
    done = [e for e in events if e["event"] == "lake_commit_already_done"]
    assert done and done[0]["by_this_call"] is True, events  # the retry found its own commit
    _assert_completed(store, before, summary)
    assert summary["lake_version"] == before["version"] + 1


# -- file:// with a full disk ----------------------------------------------------------------------

def test_a_full_disk_mid_commit_on_file_shows_nothing_and_the_next_pass_completes_it(home, tmp_path):
    lakedir = str(tmp_path / "lake")
    shutil.copytree(LEGACY, lakedir)
    env = _env(home, "file://" + lakedir)
    store = open_store("file://" + lakedir)
    rc, summary, err = _maint(env)
    assert rc == 0 and summary["compacted"] == 1, err
    before = _view(store)
    # the bookkeeping before the commit (lease, probe, pass manifest) is a few KiB; each new
    # day's data file is about 40 × 1.2 KiB of incompressible text, past the 32 KiB limit
    new = _ship_new_events(store, 40, seed=3)
    rc, summary, err = _maint(env, disk_full_at=32 * 1024)
    assert rc == 6 and "Traceback" not in err, err  # lib/failures.py: the "disk" kind, one line saying so
    assert "maint.py: the local disk refused an operation" in err, err
    if summary is not None:
        assert summary["compacted"] == 0 and "lake_error" in summary, summary
    _assert_nothing_half_visible(store, before, new)

    rc, summary, err = _next_pass(env)
    assert rc == 0, err
    _assert_completed(store, before, summary)
    leftovers = _data_files(store) - _view(store)["files"]
    assert summary["lake"]["unreferenced_files"] >= len([p for p in leftovers if p.endswith(".parquet")])
