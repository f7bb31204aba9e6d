"""A truncated snapshot blob in the store (the tester's report #4): every sync refuses it with a
message naming the fix, ``ctxlake doctor`` reports it, and the next ``maint --once`` re-publishes
the bytes its name promises, after which sync caches it again; on a ``file://`` store and on the
real S3 server (SeaweedFS, tests/support/s3server.py)."""
from __future__ import annotations

import json
import os
import uuid

import pytest

from tests.cli.test_errors import Box
from tests.pipeline.lakeutil import init_and_capture

FLEET = "team"


def _published(box: Box) -> str:
    maint = box.run("maint", "--once", "--json")
    assert maint.returncode == 0, maint.stderr
    snap = json.loads(maint.stdout)["snapshot"]
    assert snap["published"], snap
    sync = box.run("sync", "--once")
    assert sync.returncode == 0, sync.stderr
    return snap["sha256"]


def _wedged_then_healed(box: Box, sha: str, truncate) -> None:
    truncate(f"snapshot/{FLEET}/{sha}.sqlite")
    cached = os.path.join(box.env["CTXLAKE_HOME"], "cache", FLEET, "snapshot.bin")
    os.unlink(cached)  # a new host, or a wiped cache
    for _ in range(2):  # every pass refuses it, and says what fixes it
        sync = box.run("sync", "--once")
        assert sync.returncode == 4, sync.stderr
        assert "does not match its name" in sync.stderr and "ctxlake maint --once" in sync.stderr, sync.stderr
    doctor = box.run("doctor")
    assert "Current snapshot blob" in doctor.stdout and "5000 bytes" in doctor.stdout, doctor.stdout
    assert "verdict: all primitives work, but the current snapshot blob is damaged" in doctor.stdout, doctor.stdout
    maint = box.run("maint", "--once", "--json")
    assert maint.returncode == 0, maint.stderr
    snap = json.loads(maint.stdout)["snapshot"]
    assert snap == {"published": True, "sha256": sha, "reason": "blob repaired"}, snap
    assert "snapshot_blob_repaired" in maint.stderr
    sync = box.run("sync", "--once", "--json")
    assert sync.returncode == 0 and json.loads(sync.stdout)["snapshot_sha"] == sha, sync.stderr
    with open(cached, "rb") as fh:
        import hashlib

        assert hashlib.sha256(fh.read()).hexdigest() == sha
    doctor = box.run("doctor")
    assert "verdict: all primitives work\n" in doctor.stdout, doctor.stdout
    idle = box.run("maint", "--once", "--json")
    assert json.loads(idle.stdout)["snapshot"]["reason"] == "already current", idle.stdout


def test_a_truncated_blob_on_a_file_store_is_reported_and_republished(tmp_path):
    box = Box(tmp_path)
    store = os.path.join(box.tmp, "store")
    init_and_capture(box, "file://" + store, FLEET)
    sha = _published(box)

    def truncate(key):
        os.truncate(os.path.join(store, *key.split("/")), 5000)  # the tester's `truncate -s 5000`

    _wedged_then_healed(box, sha, truncate)


@pytest.mark.s3
def test_a_truncated_blob_on_s3_is_reported_and_republished(tmp_path, seaweed):
    prefix = f"snap-blob-{uuid.uuid4().hex[:8]}"
    box = Box(tmp_path, extra_env=seaweed.env())
    init_and_capture(box, seaweed.url(prefix), FLEET)
    sha = _published(box)
    client = seaweed.client()

    def truncate(key):
        full = f"{prefix}/{key}"
        body = client.get_object(Bucket=seaweed.bucket, Key=full)["Body"].read()
        client.put_object(Bucket=seaweed.bucket, Key=full, Body=body[:5000])

    _wedged_then_healed(box, sha, truncate)


class _CountingStore:
    """A memory:// store that counts the GETs of each key (the I/O a maint pass repeats)."""

    def __init__(self):
        from lib.store.memory import MemoryStore

        self.inner, self.gets = MemoryStore(), {}

    def get(self, key, *a, **k):
        self.gets[key] = self.gets.get(key, 0) + 1
        return self.inner.get(key, *a, **k)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _sqlite_bytes() -> bytes:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE claims (claim_id TEXT, embedder TEXT, embedding BLOB)")
    conn.execute("INSERT INTO claims VALUES ('c1', 'e', x'00000000')")
    conn.commit()
    data = conn.serialize()
    conn.close()
    return data


def test_an_idle_pass_reads_the_current_blob_once_and_a_damaged_one_is_still_repaired():
    from lib import lake
    from lib.memory import snapshot

    store, data = _CountingStore(), _sqlite_bytes()
    sha = snapshot.sha256(data)
    blob = lake.snapshot_blob_key(FLEET, sha)
    kw = dict(maint_epoch=1, built_at="t", claim_count=1, session_count=0)
    assert snapshot.publish(store, FLEET, data, **kw)["reason"] == "published"
    # maint's order: the embedding cache reads the current blob back, then the pass publishes
    store.gets.clear()
    intact: set = set()
    assert snapshot.previous_embeddings(store, FLEET, "e", intact=intact) == {"c1": b"\0\0\0\0"}
    assert intact == {sha}
    assert snapshot.publish(store, FLEET, data, intact=intact, **kw)["reason"] == "already current"
    assert store.gets[blob] == 1, "the blob the embedding cache hashed is not fetched again"
    # damaged: the cache's hash check fails, so publish reads it back itself and repairs it
    store.inner.put(blob, data[:5000])
    intact = set()
    assert snapshot.previous_embeddings(store, FLEET, "e", intact=intact) == {} and intact == set()
    assert snapshot.publish(store, FLEET, data, intact=intact, **kw)["reason"] == "blob repaired"
    assert store.inner.get(blob).data == data
