"""``s3://bucket[/prefix]`` backend: any S3-compatible object store through boto3 (docs/design.md §8).

Where it sits: syncd, maint, the operator CLI and the fleet operator reach the store through
:func:`lib.store.open_store`; this module is the only one that talks S3 (docs/design.md §14).

How each primitive maps onto S3:

- create-only  → ``PutObject`` with ``If-None-Match: *``; 412 → :class:`PreconditionFailed`.
- CAS          → ``PutObject`` with ``If-Match: <etag>``; 412 → :class:`PreconditionFailed`.
  AWS answers 404 ``NoSuchKey`` when the key is missing; that is a lost CAS too, so it is also
  :class:`PreconditionFailed` (same as the file and memory backends).
- 409 ``ConditionalRequestConflict`` (AWS: two conditional writes in flight) → :class:`Conflict`.
- conditional GET → ``GetObject`` with ``If-None-Match``; 304 → ``Obj(data=None, modified=False)``.
- ``server_time`` = the response's ``Date`` header (store clock, whole seconds; invariant 6).

Errors are translated in one place, :meth:`S3Store._errors`; no botocore type leaks upward:

======================================================  ==========================================
botocore / HTTP                                          raised
======================================================  ==========================================
412, ``PreconditionFailed``                               :class:`PreconditionFailed`
409 (``ConditionalRequestConflict``, ``OperationAborted``)  :class:`Conflict`
404, ``NoSuchKey`` (404 on an If-Match PUT: lost CAS)     :class:`NotFound` (:class:`PreconditionFailed`)
5xx except 501, 429, ``SlowDown``, ``RequestTimeout``,    :class:`Unavailable`
connection refused/reset, timeouts, truncated bodies
``NoSuchBucket``, 403 (``AccessDenied``,                  :class:`StoreError` with a message that says
``InvalidAccessKeyId``, ``SignatureDoesNotMatch``, ...),  what to fix: retrying cannot help, so these
missing credentials, TLS failures, 501, other 4xx         are deliberately *not* ``Unavailable``
======================================================  ==========================================

A missing bucket on ``HEAD`` is indistinguishable from a missing key (S3 sends no body with a
HEAD 404), so :meth:`S3Store.head` reports :class:`NotFound` there; every other call names the
missing bucket.

Configuration comes from boto3's own sources only: the endpoint from ``AWS_ENDPOINT_URL_S3`` /
``AWS_ENDPOINT_URL`` (or the shared config file), resolved by botocore itself; the region from
``AWS_DEFAULT_REGION`` or the profile, else ``AWS_REGION`` (what EKS, Lambda and the other SDKs
set, which botocore ignores), else ``us-east-1``; credentials from the default chain
(environment, shared files, SSO, container or instance role). A non-AWS endpoint gets path-style
addressing (self-hosted servers rarely have wildcard DNS).

botocore retries at most once (``total_max_attempts=2``, mostly to survive a pooled keep-alive
connection the server closed); real backoff is :func:`lib.store.retrying`, which logs each wait.
Every lost race, conflict and outage is logged as one ``ctxlake.store`` record and counted per
(key prefix, outcome) in :func:`lib.store.counters`.

A caveat shared with every S3 client: if a conditional PUT times out after the server applied
it, the retry reports :class:`PreconditionFailed` although this caller's bytes landed. Keys and
bytes are deterministic (invariant 2), so a caller that must know compares the stored ETag or
content with what it wrote.

Every write is one single-part ``PutObject`` (up to 5 GiB), never a multipart upload: on
SeaweedFS 4.48 a conditional ``CompleteMultipartUpload`` is not atomic (8 concurrent completions
with ``If-None-Match: *`` on one key produced 2, 1 and 8 winners in three rounds), while a
single-part conditional PUT had exactly one winner in every round tested.

boto3 is imported when an :class:`S3Store` is built, never at module import (docs/design.md §14).
"""
from __future__ import annotations

import base64
import contextlib
import email.utils
import hashlib
import os
import urllib.parse
from typing import Iterator

from lib.store import (CREATE, OVERWRITE, Conflict, ListEntry, NotFound, Obj, PreconditionFailed,
                       StoreError, Unavailable, count, key_prefix, log_event)

_AUTH_CODES = frozenset({
    "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
    "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem", "InvalidSecurity",
    "AuthorizationHeaderMalformed", "InvalidClientTokenId", "UnrecognizedClientException", "403",
})
_TRANSIENT_CODES = frozenset({
    "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "Throttling",
    "ThrottlingException", "ThrottledException", "RequestThrottled", "RequestLimitExceeded",
    "TooManyRequests", "TooManyRequestsException", "BandwidthLimitExceeded", "RequestTimeoutException",
    "PriorRequestNotComplete", "EC2ThrottledException", "TransactionInProgressException",
})
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NotFound", "404"})
_CLOCK_KEY = "_meta/clock"
DELTA_RETRY = {"max_retries": "3", "retry_timeout": "20s"}
"""How long delta-rs's object store keeps retrying one request (docs/lake.md): its default is
10 retries over up to 180 s, so one commit during an outage would outlive the maintenance
lease; :func:`lib.lake.commit` retries whole commits itself, re-reading the table each time."""
_OUTCOME = {NotFound: "not_found", PreconditionFailed: "precondition_failed", Conflict: "conflict",
            Unavailable: "unavailable"}
# Log event per outcome. A lost race is normal, so its name avoids the ``_failed``/``_error``
# suffixes that lib/logs.py renders at error level (``_lost`` is a warning there).
_EVENT = {"precondition_failed": "store_race_lost", "conflict": "store_conflict_retry",
          "unavailable": "store_unavailable", "error": "store_error"}


def parse_url(url: str) -> tuple[str, str]:
    """Split ``s3://bucket[/prefix]`` into ``(bucket, prefix)``; ``prefix`` is ``""`` or ends in ``/``.

    >>> parse_url("s3://lake/team-a")
    ('lake', 'team-a/')

    :raises ValueError: not an ``s3://`` URL, or no bucket name.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"not an s3:// store URL with a bucket: {url!r}")
    prefix = parts.path.strip("/")
    return parts.netloc, (prefix + "/" if prefix else "")


def is_aws_endpoint(endpoint: str | None) -> bool:
    """True when ``endpoint`` is an Amazon S3 host (``*.amazonaws.com[.cn]``) or not set."""
    if not endpoint:
        return True
    host = (urllib.parse.urlsplit(endpoint).hostname or "").lower()
    return host.endswith(".amazonaws.com") or host.endswith(".amazonaws.com.cn")


def _http_time(value: str | None) -> float | None:
    """Epoch seconds of an HTTP date (RFC 7231 IMF-fixdate), ``None`` if absent or unparsable."""
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _date(headers: dict | None) -> float | None:
    """Epoch seconds of a response's ``Date`` header — the store's clock (invariant 6)."""
    return _http_time((headers or {}).get("date"))


def _headers(response: dict) -> dict:
    return response.get("ResponseMetadata", {}).get("HTTPHeaders", {}) or {}


def _status(exc) -> int | None:
    return exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")


def _status_text(status, code: str) -> str:
    """``403 AccessDenied``, or just ``403`` when the server sent no code but the status."""
    return str(status) if not code or code == str(status) else f"{status} {code}"


class S3Store:
    """An S3 bucket (optionally under a key prefix) as a :class:`lib.store.Store`.

    ``url`` = ``s3://bucket[/prefix]``; keys passed to every method are relative to the prefix.
    ``log(event, **fields)`` receives one call per lost race, conflict, outage or config error
    (default :func:`lib.store.log_event`, the ``ctxlake.store`` logger).

    Attributes: ``bucket``, ``prefix``, ``endpoint`` (resolved endpoint URL), ``region``,
    ``path_style`` (bool), ``server_header`` (the ``Server`` header of the latest response, for
    backend identification by ``ctxlake doctor``).

    :raises ValueError: malformed URL.
    """

    def __init__(self, url: str, *, log=log_event):
        import boto3
        from botocore.config import Config

        self.bucket, self.prefix = parse_url(url)
        self.url = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        self._log = log
        self.server_header: str | None = None
        self._session = boto3.session.Session()
        self.region = self._session.region_name or os.environ.get("AWS_REGION") or "us-east-1"
        base = dict(
            retries={"mode": "standard", "total_max_attempts": 2},
            connect_timeout=5, read_timeout=30, max_pool_connections=32,
            user_agent_extra="ctxlake",
            # We send Content-MD5 ourselves, which every S3-compatible server checks; the newer
            # CRC "flexible checksums" trip several non-AWS servers.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        client = self._session.client("s3", region_name=self.region, config=Config(**base))
        self.endpoint = client.meta.endpoint_url  # botocore resolved AWS_ENDPOINT_URL[_S3] itself
        self.path_style = not is_aws_endpoint(self.endpoint)
        if self.path_style:
            client = self._session.client("s3", region_name=self.region, endpoint_url=self.endpoint,
                                          config=Config(s3={"addressing_style": "path"}, **base))
        self._client = client

    # -- helpers -------------------------------------------------------------
    def _full(self, key: str) -> str:
        if not key or key.startswith("/"):
            raise ValueError(f"invalid store key {key!r}")
        return self.prefix + key

    def _seen(self, headers: dict) -> float | None:
        server = headers.get("server")
        if server:
            self.server_header = server
        return _date(headers)

    def delta_storage_options(self) -> dict:
        """Storage options for delta-rs (``deltalake``) to reach the same bucket as this store:
        endpoint, region and addressing resolved here, credentials from boto3's default chain
        (frozen now; a table handle is short-lived), ``conditional_put=etag`` so each Delta
        commit is a create-only PUT of ``_delta_log/<n>.json`` (docs/lake.md). Never logged.

        :raises StoreError: boto3's default chain finds no credentials.
        """
        opts = {"AWS_REGION": self.region, "conditional_put": "etag",
                "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false" if self.path_style else "true", **DELTA_RETRY}
        if self.endpoint and not is_aws_endpoint(self.endpoint):
            opts["AWS_ENDPOINT_URL"] = self.endpoint
            if self.endpoint.startswith("http://"):
                opts["AWS_ALLOW_HTTP"] = "true"
        creds = self._session.get_credentials()
        if creds is None:
            raise StoreError(f"s3://{self.bucket}/{self.prefix}: boto3's default credential chain found no usable "
                             "credentials for the Delta table: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a role")
        frozen = creds.get_frozen_credentials()
        opts.update(AWS_ACCESS_KEY_ID=frozen.access_key, AWS_SECRET_ACCESS_KEY=frozen.secret_key)
        if frozen.token:
            opts["AWS_SESSION_TOKEN"] = frozen.token
        return opts

    def credential_source(self) -> str | None:
        """Name of the boto3 credential provider that supplied credentials (``env``,
        ``shared-credentials-file``, ``iam-role``, ``container-role``, ``sso``, ...), or ``None``
        when the default chain finds none. Never the credential itself (invariant 11)."""
        try:
            creds = self._session.get_credentials()
        except Exception:  # a broken provider must not break the report that diagnoses it
            return None
        return getattr(creds, "method", None) if creds is not None else None

    def describe(self) -> dict:
        """Backend identity for ``doctor``: ``{"backend": "s3", "url", "bucket", "prefix",
        "endpoint", "region", "path_style", "server"}`` — no credential material."""
        return {"backend": "s3", "url": self.url, "bucket": self.bucket, "prefix": self.prefix,
                "endpoint": self.endpoint, "region": self.region, "path_style": self.path_style,
                "server": self.server_header}

    @contextlib.contextmanager
    def _errors(self, op: str, key: str, cas: bool = False):
        """Translate every botocore/urllib3 failure raised inside the block into the store error
        tree, log and count it. ``op`` names the call for messages; ``cas`` marks an If-Match PUT
        (404 there means "lost the race", not "not found")."""
        from botocore import exceptions as bx

        prefix = key_prefix(key)
        where = f"{op} s3://{self.bucket}/{self.prefix}{key}"
        try:
            yield
        except StoreError:
            raise
        except bx.ClientError as exc:
            err = self._client_error(exc, where, key, cas)
            self._note(err, op, prefix, status=_status(exc), code=str(exc.response.get("Error", {}).get("Code", "")))
            raise err from exc
        except (bx.NoCredentialsError, bx.PartialCredentialsError, bx.CredentialRetrievalError) as exc:
            err = StoreError(f"{where}: boto3's default credential chain found no usable credentials "
                             f"({type(exc).__name__}); set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                             f"AWS_PROFILE or a role", key)
            self._note(err, op, prefix, code=type(exc).__name__)
            raise err from exc
        except bx.SSLError as exc:
            err = StoreError(f"{where}: TLS failure talking to {self.endpoint} ({exc}); check the "
                             f"endpoint URL and CA bundle", key)
            self._note(err, op, prefix, code="SSLError")
            raise err from exc
        except (bx.ConnectionError, bx.HTTPClientError, bx.IncompleteReadError, OSError) as exc:
            err = Unavailable(f"{where}: cannot reach {self.endpoint}: {exc}", key)
            self._note(err, op, prefix, code=type(exc).__name__)
            raise err from exc
        except bx.BotoCoreError as exc:
            err = StoreError(f"{where}: {exc}", key)
            self._note(err, op, prefix, code=type(exc).__name__)
            raise err from exc
        except Exception as exc:
            # urllib3 errors can escape botocore while a response body streams.
            if type(exc).__module__.startswith("urllib3"):
                err = Unavailable(f"{where}: connection failed mid-response: {exc}", key)
                self._note(err, op, prefix, code=type(exc).__name__)
                raise err from exc
            raise
        else:
            count(prefix, "ok")

    def _client_error(self, exc, where: str, key: str, cas: bool) -> StoreError:
        """The store error for one S3 error response (see the module table)."""
        error = exc.response.get("Error", {}) or {}
        code = str(error.get("Code", ""))
        message = error.get("Message") or ""
        status = _status(exc)
        now = self._seen(_headers(exc.response))
        if code == "NoSuchBucket":
            return StoreError(f"{where}: bucket {self.bucket!r} does not exist at {self.endpoint} "
                              f"(NoSuchBucket); create it or fix the store URL", key, now)
        if code == "RequestTimeTooSkewed":
            return StoreError(f"{where}: this host's clock is too far from the store's for request "
                              f"signing (RequestTimeTooSkewed); fix NTP on this host", key, now)
        if status == 403 or code in _AUTH_CODES:
            return StoreError(f"{where}: refused by the store ({_status_text(status, code)}): check the "
                              f"credentials (boto3 source: {self.credential_source() or 'none'}) "
                              f"and the bucket policy", key, now)
        if status == 412 or code == "PreconditionFailed":
            return PreconditionFailed(f"{where}: precondition failed (412): "
                                      f"{'key changed or missing (If-Match)' if cas else 'key already exists (If-None-Match)'}", key, now)
        if status == 409:
            return Conflict(f"{where}: concurrent conditional write (409 {code}); retry", key, now)
        if status == 404 or code in _NOT_FOUND_CODES:
            if cas:
                return PreconditionFailed(f"{where}: key does not exist (If-Match)", key, now)
            return NotFound(f"{where}: no such key", key, now)
        if status == 501 or code == "NotImplemented":
            return StoreError(f"{where}: the server does not implement this request (501 {code}: "
                              f"{message}); run `ctxlake doctor` to see which primitives work", key, now)
        if (status or 0) >= 500 or status == 429 or code in _TRANSIENT_CODES:
            return Unavailable(f"{where}: store unavailable ({status} {code}): {message}", key, now)
        return StoreError(f"{where}: failed ({status} {code}): {message}", key, now)

    def _note(self, err: StoreError, op: str, prefix: str, **fields) -> None:
        outcome = _OUTCOME.get(type(err), "error")
        count(prefix, outcome)
        if outcome != "not_found" and self._log:
            self._log(_EVENT[outcome], key_prefix=prefix, op=op, backend="s3",
                      **{k: v for k, v in fields.items() if v is not None})

    # -- interface -----------------------------------------------------------
    def get(self, key: str, if_none_match: str | None = None) -> Obj:
        """Read ``key`` with one ``GetObject``. With ``if_none_match`` equal to the current ETag the
        server answers 304 and this returns ``Obj(data=None, modified=False)``.

        :returns: ``Obj(data, etag, last_modified, server_time)``; times are store-clock epoch s.
        :raises NotFound, Unavailable, StoreError:
        """
        from botocore.exceptions import ClientError

        kw = {"Bucket": self.bucket, "Key": self._full(key)}
        if if_none_match is not None:
            kw["IfNoneMatch"] = if_none_match
        with self._errors("get", key):
            try:
                resp = self._client.get_object(**kw)
            except ClientError as exc:
                if _status(exc) != 304:
                    raise
                headers = _headers(exc.response)
                return Obj(None, headers.get("etag", if_none_match), _http_time(headers.get("last-modified")),
                           self._seen(headers), modified=False)
            data = resp["Body"].read()
        return Obj(data, resp["ETag"], resp["LastModified"].timestamp(), self._seen(_headers(resp)))

    def head(self, key: str) -> Obj:
        """Metadata of ``key`` (``HeadObject``; ``data`` is ``None``).

        :raises NotFound: the key — or, indistinguishably for HEAD, the bucket — does not exist.
        :raises Unavailable, StoreError:
        """
        with self._errors("head", key):
            resp = self._client.head_object(Bucket=self.bucket, Key=self._full(key))
        return Obj(None, resp["ETag"], resp["LastModified"].timestamp(), self._seen(_headers(resp)))

    def put(self, key: str, data: bytes, mode=OVERWRITE) -> Obj:
        """Write ``data`` (bytes, one ``PutObject``, up to 5 GiB) under ``key``.

        ``mode``: ``OVERWRITE``; ``CREATE`` sends ``If-None-Match: *``; ``update(etag)`` sends
        ``If-Match: etag``. Returns ``Obj(None, etag, last_modified, server_time)`` where
        ``last_modified`` is the response ``Date`` (S3 returns no Last-Modified on PUT).

        :raises PreconditionFailed: the key exists (create), or changed or vanished (update).
        :raises Conflict: 409, another conditional write was in flight; retry the read-decide-write.
        :raises Unavailable, StoreError:
        :raises ValueError: unknown ``mode``.
        """
        data = bytes(data)
        kw = {"Bucket": self.bucket, "Key": self._full(key), "Body": data,
              "ContentMD5": base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()}
        cas = False
        if mode == CREATE:
            kw["IfNoneMatch"] = "*"
        elif mode != OVERWRITE:
            kind, etag = mode
            if kind != "update":
                raise ValueError(f"unknown put mode {mode!r}")
            kw["IfMatch"] = etag
            cas = True
        with self._errors("put", key, cas=cas):
            resp = self._client.put_object(**kw)
        now = self._seen(_headers(resp))
        return Obj(None, resp["ETag"], now, now)

    def list(self, prefix: str) -> Iterator[ListEntry]:
        """Every key under ``prefix`` (relative to the store prefix), in key order, following
        ``ListObjectsV2`` continuation tokens page by page (1,000 keys per page).

        Lazy: errors (:class:`Unavailable`, :class:`StoreError`) surface while iterating.
        """
        return self._list(prefix)

    def _list(self, prefix: str) -> Iterator[ListEntry]:
        paginator = self._client.get_paginator("list_objects_v2")
        cut = len(self.prefix)
        with self._errors("list", prefix):
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
                self._seen(_headers(page))
                for item in page.get("Contents", ()):
                    if item["Key"].endswith("/"):  # folder markers some servers and consoles create
                        continue
                    yield ListEntry(item["Key"][cut:], item["Size"], item["LastModified"].timestamp())

    def delete(self, key: str) -> None:
        """Delete ``key`` (``DeleteObject``); a missing key is not an error.

        :raises Unavailable, StoreError:
        """
        from botocore.exceptions import ClientError

        with self._errors("delete", key):
            try:
                self._client.delete_object(Bucket=self.bucket, Key=self._full(key))
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "NoSuchKey":
                    raise

    def clock(self) -> float:
        """The store's current time (epoch seconds, whole-second resolution) from the ``Date``
        header of a ``HEAD`` on ``_meta/clock`` (a 404 carries the date just as well).

        :raises Unavailable, StoreError: unreachable, refused, or no ``Date`` header.
        """
        from botocore.exceptions import ClientError

        with self._errors("clock", _CLOCK_KEY):
            try:
                headers = _headers(self._client.head_object(Bucket=self.bucket, Key=self._full(_CLOCK_KEY)))
            except ClientError as exc:
                if _status(exc) != 404:
                    raise
                headers = _headers(exc.response)
        now = self._seen(headers)
        if now is None:
            raise StoreError(f"clock s3://{self.bucket}: the store sent no Date header", _CLOCK_KEY)
        return now
