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
