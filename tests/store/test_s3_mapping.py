"""S3 backend without a network: URL parsing, endpoint and addressing resolution, and the one
place botocore errors become store errors (responses injected with botocore's Stubber), plus the
logs and counters each outcome leaves behind."""
from __future__ import annotations

import logging
import subprocess
import sys
import threading

import pytest

from lib.store import (CREATE, Conflict, NotFound, PreconditionFailed, StoreError, Unavailable, count,
                       counters, retrying, update)
from lib.store.s3 import S3Store, is_aws_endpoint, parse_url

DATE = "Sun, 29 Nov 2026 20:00:00 GMT"
DATE_EPOCH = 1795982400.0


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    """Dummy credentials and an endpoint nothing listens on; nothing here opens a connection."""
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN",
                "AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-example")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


@pytest.fixture
def stubbed(aws_env):
    """``(store, stubber)`` for an S3Store aimed at a dead loopback port, with botocore's Stubber."""
    from botocore.stub import Stubber

    aws_env.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    store = S3Store("s3://bucket/pre")
    with Stubber(store._client) as stubber:
        yield store, stubber


def test_parse_url_splits_bucket_and_prefix():
    assert parse_url("s3://lake") == ("lake", "")
    assert parse_url("s3://lake/") == ("lake", "")
    assert parse_url("s3://lake/team/a/") == ("lake", "team/a/")
    with pytest.raises(ValueError):
        parse_url("s3:///nobucket")
    with pytest.raises(ValueError):
        parse_url("file:///x")


def test_importing_the_backend_does_not_import_boto3():
    code = "import sys, lib.store.s3, lib.doctor; sys.exit('boto3' in sys.modules or 'botocore' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_the_endpoint_comes_from_aws_endpoint_url_s3_then_aws_endpoint_url(aws_env):
    aws_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1111")
    assert S3Store("s3://b").endpoint == "http://127.0.0.1:1111"
    aws_env.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2222")
    store = S3Store("s3://b/p")
    assert store.endpoint == "http://127.0.0.1:2222" and store.path_style is True
    assert store.describe()["endpoint"] == "http://127.0.0.1:2222"
    assert store.credential_source() == "env"


def test_without_an_endpoint_the_store_is_aws_with_virtual_host_addressing(aws_env):
    aws_env.setenv("AWS_REGION", "eu-west-1")
    store = S3Store("s3://b/p")
    assert is_aws_endpoint(store.endpoint) and store.path_style is False and store.region == "eu-west-1"
    assert not is_aws_endpoint("https://acct.r2.cloudflarestorage.com")


def _error(stubber, method, code, status, message=""):
    stubber.add_client_error(method, service_error_code=code, service_message=message,
                             http_status_code=status, response_meta={"HTTPHeaders": {"date": DATE}})


@pytest.mark.parametrize("code,status,expected", [
    ("PreconditionFailed", 412, PreconditionFailed),
    ("ConditionalRequestConflict", 409, Conflict),
    ("OperationAborted", 409, Conflict),
    ("SlowDown", 503, Unavailable),
    ("ServiceUnavailable", 503, Unavailable),
    ("InternalError", 500, Unavailable),
    ("RequestTimeout", 400, Unavailable),
    ("TooManyRequests", 429, Unavailable),
    ("NoSuchKey", 404, PreconditionFailed),  # AWS: If-Match on a missing key
    ("NoSuchBucket", 404, StoreError),
    ("AccessDenied", 403, StoreError),
    ("InvalidAccessKeyId", 403, StoreError),
    ("SignatureDoesNotMatch", 403, StoreError),
    ("NotImplemented", 501, StoreError),
    ("InvalidArgument", 400, StoreError),
])
def test_cas_put_errors_map_to_the_store_error_tree(stubbed, code, status, expected):
    store, stubber = stubbed
    _error(stubber, "put_object", code, status)
    with pytest.raises(StoreError) as exc:
        store.put("live/f/leases/x.json", b"v", update('"abc"'))
    assert type(exc.value) is expected, f"{code} {status} -> {type(exc.value).__name__}"
    assert exc.value.key == "live/f/leases/x.json"
    assert exc.value.server_time == DATE_EPOCH
    assert isinstance(exc.value.__cause__, Exception)  # chained, but never a botocore type on top


@pytest.mark.parametrize("code,status,expected", [
    ("NoSuchKey", 404, NotFound), ("404", 404, NotFound), ("NoSuchBucket", 404, StoreError),
    ("SlowDown", 503, Unavailable), ("403", 403, StoreError),
])
def test_get_errors_map_to_the_store_error_tree(stubbed, code, status, expected):
    store, stubber = stubbed
    _error(stubber, "get_object", code, status)
    with pytest.raises(StoreError) as exc:
        store.get("a.json")
    assert type(exc.value) is expected


def test_connection_failures_and_truncated_bodies_are_unavailable(stubbed, monkeypatch):
    from botocore.exceptions import EndpointConnectionError, ReadTimeoutError, ResponseStreamingError

    store, _ = stubbed
    for exc in (EndpointConnectionError(endpoint_url="http://127.0.0.1:9"),
                ReadTimeoutError(endpoint_url="http://127.0.0.1:9"),
                ResponseStreamingError(error="connection reset")):
        def boom(*a, _exc=exc, **kw):
            raise _exc
        monkeypatch.setattr(store._client, "put_object", boom)
        with pytest.raises(Unavailable):
            store.put("a.json", b"x", CREATE)


def test_missing_credentials_are_a_store_error(aws_env):
    aws_env.delenv("AWS_ACCESS_KEY_ID")
    aws_env.delenv("AWS_SECRET_ACCESS_KEY")
    aws_env.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    store = S3Store("s3://bucket")
    assert store.credential_source() is None
    with pytest.raises(StoreError) as exc:
        store.get("a.json")
    assert type(exc.value) is StoreError and "credential" in str(exc.value)


def test_a_304_is_not_modified_and_a_get_carries_the_date_header(stubbed):
    import datetime
    import io

    from botocore.response import StreamingBody

    store, stubber = stubbed
    stubber.add_client_error("get_object", service_error_code="304", http_status_code=304,
                             response_meta={"HTTPHeaders": {"date": DATE, "etag": '"e1"'}})
    stubber.add_response("get_object", {
        "Body": StreamingBody(io.BytesIO(b"data"), 4), "ETag": '"e2"',
        "LastModified": datetime.datetime(2026, 11, 29, 19, 0, tzinfo=datetime.timezone.utc),
        "ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {"date": DATE, "server": "MinIO"}}})
    same = store.get("a.json", if_none_match='"e1"')
    assert (same.data, same.modified, same.etag, same.server_time) == (None, False, '"e1"', DATE_EPOCH)
    got = store.get("a.json")
    assert (got.data, got.etag, got.server_time) == (b"data", '"e2"', DATE_EPOCH)
    assert store.describe()["server"] == "MinIO"


def test_lost_races_are_logged_and_counted_per_key_prefix(stubbed, caplog):
    store, stubber = stubbed
    caplog.set_level(logging.INFO, logger="ctxlake.store")
    before = counters()
    _error(stubber, "put_object", "PreconditionFailed", 412)
    _error(stubber, "put_object", "ConditionalRequestConflict", 409)
    for _ in range(2):
        with pytest.raises((PreconditionFailed, Conflict)):
            store.put("live/fleet-a/roster.json", b"v", CREATE)
    after = counters()
    assert after.get(("live/fleet-a", "precondition_failed"), 0) - before.get(("live/fleet-a", "precondition_failed"), 0) == 1
    assert after.get(("live/fleet-a", "conflict"), 0) - before.get(("live/fleet-a", "conflict"), 0) == 1
    events = [(r.getMessage(), r.key_prefix, r.op, r.status) for r in caplog.records if r.name == "ctxlake.store"]
    assert events == [("store_race_lost", "live/fleet-a", "put", 412),
                      ("store_conflict_retry", "live/fleet-a", "put", 409)]


def test_retrying_retries_conflicts_then_returns_and_counts_each_retry(caplog):
    caplog.set_level(logging.INFO, logger="ctxlake.store")
    outcomes = [Conflict("409"), Unavailable("503"), "done"]
    before = counters().get(("live/g", "retry"), 0)

    def op():
        item = outcomes.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    waits = []
    assert retrying(op, key="live/g/leases/k.json", sleep=waits.append) == "done"
    assert counters()[("live/g", "retry")] - before == 2
    assert len(waits) == 2 and all(0 <= w <= 0.4 for w in waits)
    logged = [r for r in caplog.records if r.getMessage() == "store_retry"]
    assert [(r.key_prefix, r.attempt, r.error) for r in logged] == [("live/g", 1, "Conflict"), ("live/g", 2, "Unavailable")]


def test_retrying_does_not_retry_a_lost_race():
    calls = []

    def op():
        calls.append(1)
        raise PreconditionFailed("412")

    with pytest.raises(PreconditionFailed):
        retrying(op, sleep=lambda s: None)
    assert calls == [1]


def test_counters_are_thread_safe():
    before = counters().get(("bench/x", "ok"), 0)
    threads = [threading.Thread(target=lambda: [count("bench/x", "ok") for _ in range(1000)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counters()[("bench/x", "ok")] - before == 8000
