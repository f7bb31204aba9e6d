"""S3 backend under faults, against a real SeaweedFS: a missing bucket, wrong credentials, a server
that stops mid-run, and a proxy that drops conditional headers. Every failure must arrive as the
store error that tells the caller what to do next (docs/design.md §14)."""
from __future__ import annotations

import logging
import uuid

import pytest

from lib.store import (CREATE, NotFound, PreconditionFailed, StoreError, Unavailable, open_store,
                       retrying, update)
from tests.support.s3server import use_server_env

pytestmark = pytest.mark.s3


def _exactly_store_error(exc: BaseException) -> bool:
    """A configuration fault: a plain StoreError, none of the retry-or-race subclasses."""
    return type(exc) is StoreError


def test_a_missing_bucket_is_a_clear_store_error_not_a_missing_key(seaweed, monkeypatch):
    use_server_env(monkeypatch, seaweed)
    store = open_store(f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/p")
    for call in (lambda: store.put("a.json", b"x", CREATE), lambda: store.get("a.json"),
                 lambda: list(store.list("")), lambda: store.put("a.json", b"x")):
        with pytest.raises(StoreError) as exc:
            call()
        assert _exactly_store_error(exc.value), repr(exc.value)
        assert "does not exist" in str(exc.value) and "NoSuchBucket" in str(exc.value)


def test_the_server_refuses_a_wrong_secret(seaweed):
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError) as exc:
        seaweed.client(secret_key="not-the-secret").list_objects_v2(Bucket=seaweed.bucket)
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


@pytest.mark.parametrize("override", [{"AWS_SECRET_ACCESS_KEY": "wrong-secret"},
                                      {"AWS_ACCESS_KEY_ID": "AKIDUNKNOWN"}], ids=["secret", "key-id"])
def test_wrong_credentials_are_a_store_error_naming_the_credential_source(seaweed, monkeypatch, override):
    use_server_env(monkeypatch, seaweed, **override)
    store = open_store(seaweed.url())
    for call in (lambda: store.put("a.json", b"x", CREATE), lambda: store.get("a.json"),
                 lambda: store.head("a.json"), lambda: list(store.list(""))):
        with pytest.raises(StoreError) as exc:
            call()
        assert _exactly_store_error(exc.value), repr(exc.value)
        assert "refused" in str(exc.value) and "boto3 source: env" in str(exc.value)
        assert "wrong-secret" not in str(exc.value)


def test_a_server_stopped_mid_run_is_unavailable_and_retrying_gives_up(seaweed_factory, monkeypatch, caplog):
    server = seaweed_factory()
    use_server_env(monkeypatch, server)
    store = open_store(server.url("mid-run"))
    v = store.put("live/f/roster.json", b"1", CREATE)
    assert store.get("live/f/roster.json").data == b"1"
    server.stop()
    for call in (lambda: store.put("live/f/roster.json", b"2", update(v.etag)),
                 lambda: store.get("live/f/roster.json"), lambda: store.head("live/f/roster.json"),
                 lambda: list(store.list("live/")), lambda: store.delete("live/f/roster.json"),
                 store.clock):
        with pytest.raises(Unavailable):
            call()
    calls = []

    def attempt():
        calls.append(1)
        return store.get("live/f/roster.json")

    caplog.set_level(logging.INFO, logger="ctxlake.store")
    with pytest.raises(Unavailable):
        retrying(attempt, attempts=3, key="live/f/roster.json", sleep=lambda s: None)
    assert len(calls) == 3
    retries = [r for r in caplog.records if r.getMessage() == "store_retry"]
    assert [r.attempt for r in retries] == [1, 2]
    assert all(r.key_prefix == "live/f" and r.wait_s >= 0 for r in retries)


def test_a_server_ignoring_conditional_headers_lets_a_second_create_through(stripping_proxy):
    """The stripping proxy really simulates a store without conditional writes (doctor relies on it)."""
    _proxy, url = stripping_proxy
    store = open_store(url)
    first = store.put("k.json", b"1", CREATE)
    store.put("k.json", b"2", CREATE)  # accepted: the condition never reached the server
    store.put("k.json", b"3", update(first.etag))  # stale, accepted
    got = store.get("k.json", if_none_match=store.head("k.json").etag)
    assert got.modified is True and got.data == b"3"


def test_seaweedfs_answers_412_for_if_match_on_a_missing_key(s3_url):
    """AWS answers 404 NoSuchKey here, SeaweedFS 412; both must reach the caller as a lost CAS."""
    store = open_store(s3_url)
    with pytest.raises(PreconditionFailed):
        store.put("missing.json", b"x", update('"0123456789abcdef0123456789abcdef"'))
    with pytest.raises(NotFound):
        store.head("missing.json")
