"""The object-store interface every plane is built on (docs/design.md §8).

Error tree (the type tells the caller what to do next)::

    StoreError
     ├── NotFound            the key does not exist
     ├── PreconditionFailed  lost a race (If-None-Match / If-Match failed) — normal, not a fault
     ├── Conflict            S3 409 ConditionalRequestConflict — retry the whole read-decide-write
     └── Unavailable         outage, 5xx, throttling, timeout — back off and retry later

Every error and every :class:`Obj` carries ``server_time``: the store's clock (epoch seconds)
from the response that produced it, used for every expiry decision (invariant 6).

Observability: each retry, lost race or outage is one structured record for the ``log`` callable
the caller passes (the daemons pass their ``lib.logs.setup`` writer: one JSON line on stderr);
without one, :func:`log_event` hands it to the standard ``ctxlake.store`` logger, on which no
role installs a handler (so the CLI stays quiet about INFO records), and
:func:`count` / :func:`counters` keep a process-wide tally per (key prefix, outcome) for a
``/metrics`` endpoint (docs/design.md §13: "412 count by key prefix").

Backends: ``file://`` (:mod:`lib.store.file`), ``s3://`` (:mod:`lib.store.s3`), ``memory://``
(:mod:`lib.store.memory`, a fake for unit tests). Build one with :func:`open_store`. Only
role scripts that are allowed the network call it (docs/design.md §1).
"""
from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Iterator, Protocol

__all__ = ["StoreError", "NotFound", "PreconditionFailed", "Conflict", "Unavailable", "Obj",
           "ListEntry", "Store", "OVERWRITE", "CREATE", "update", "open_store", "retrying", "key_prefix",
           "log_event", "count", "counters"]

OVERWRITE = "overwrite"
CREATE = "create"


def update(etag: str) -> tuple:
    """Put mode "replace only if the current version's ETag is ``etag``" (``If-Match``)."""
    return ("update", etag)


class StoreError(Exception):
    """Base of store errors; ``key`` and ``server_time`` (store clock, epoch s, or None)."""

    def __init__(self, message: str, key: str | None = None, server_time: float | None = None):
        super().__init__(message)
        self.key = key
        self.server_time = server_time


class NotFound(StoreError):
    """The key does not exist."""


class PreconditionFailed(StoreError):
    """A conditional write lost: the key exists (create) or changed (update). Normal."""


class Conflict(StoreError):
    """The store saw a concurrent conditional write in flight (S3 409). Retry."""


class Unavailable(StoreError):
    """The store cannot be reached or refused service. Back off and retry; lose nothing."""


@dataclass(frozen=True)
class Obj:
    """One object version: ``data`` bytes (``None`` when a conditional GET matched),
    ``etag`` (opaque string; compare only for equality), ``last_modified`` and
    ``server_time`` (store clock, epoch seconds), ``modified`` False for a 304."""

    data: bytes | None
    etag: str
    last_modified: float | None
    server_time: float | None
    modified: bool = True


@dataclass(frozen=True)
class ListEntry:
    """One listed key: ``key`` (relative to the store prefix), ``size`` bytes, ``last_modified``."""

    key: str
    size: int
    last_modified: float | None


class Store(Protocol):
    """What every backend implements. Keys are ``/``-separated, relative to the store URL."""

    url: str

    def get(self, key: str, if_none_match: str | None = None) -> Obj:
        """Read ``key``. With ``if_none_match`` equal to the current ETag, return
        ``Obj(data=None, modified=False)``. :raises NotFound, Unavailable:"""

    def head(self, key: str) -> Obj:
        """Metadata only (``data`` is ``None``). :raises NotFound, Unavailable:"""

    def put(self, key: str, data: bytes, mode=OVERWRITE) -> Obj:
        """Write ``data``. ``mode`` = ``OVERWRITE``, ``CREATE`` (If-None-Match: *) or
        ``update(etag)`` (If-Match). Returns the new version (``data`` None).
        :raises PreconditionFailed, Conflict, Unavailable:"""

    def list(self, prefix: str) -> Iterator[ListEntry]:
        """Every key starting with ``prefix``, in key order, across all pages."""

    def delete(self, key: str) -> None:
        """Delete ``key``; deleting a missing key is not an error."""

    def clock(self) -> float:
        """The store's current time (epoch seconds), from a cheap request's ``Date``."""


def key_prefix(key: str, depth: int = 2) -> str:
    """The first ``depth`` segments of ``key`` — the label for per-prefix counters and logs."""
    return "/".join(key.split("/")[:depth])


_LOGGER = logging.getLogger("ctxlake.store")
_COUNTS: dict[tuple[str, str], int] = {}
_COUNTS_LOCK = threading.Lock()


def log_event(event: str, **fields) -> None:
    """Log ``event`` (a short phrase such as ``store_retry``) at INFO on the ``ctxlake.store``
    logger with ``fields`` as structured ``extra`` attributes; the default for callers that pass
    no ``log`` (no role installs a handler on it: the daemons pass their ``lib.logs`` writer
    instead). Field names must not collide with
    ``logging.LogRecord`` attributes (``msg``, ``args``, ``name``, ``module``, ...)."""
    _LOGGER.info(event, extra=fields)


def count(prefix: str, outcome: str, n: int = 1) -> None:
    """Add ``n`` to the process-wide counter for (``prefix``, ``outcome``); thread-safe.

    ``prefix`` is a :func:`key_prefix` label; ``outcome`` one of ``ok``, ``not_found``,
    ``precondition_failed``, ``conflict``, ``unavailable``, ``error``, ``retry``."""
    with _COUNTS_LOCK:
        _COUNTS[(prefix, outcome)] = _COUNTS.get((prefix, outcome), 0) + n


def counters() -> dict[tuple[str, str], int]:
    """A snapshot copy of every counter: ``{(key_prefix, outcome): count}`` since process start
    (for a Prometheus ``/metrics`` endpoint; never reset)."""
    with _COUNTS_LOCK:
        return dict(_COUNTS)


def retrying(fn, *, attempts: int = 6, base: float = 0.2, cap: float = 5.0, log=log_event, key: str = "",
             sleep=time.sleep):
    """Call ``fn()`` retrying :class:`Unavailable` and :class:`Conflict` with full-jitter backoff.

    Waits ``uniform(0, min(cap, base * 2**attempt))`` seconds between tries (AWS architecture
    blog, "Exponential Backoff and Jitter"); at most ``attempts`` calls, then re-raises. Each
    retry is reported to ``log(event, **fields)`` with key prefix, attempt and wait (default:
    :func:`log_event`, the ``ctxlake.store`` logger; ``log=None`` silences it) and counted as
    outcome ``retry`` under the key's prefix in :func:`counters`.
    """
    for attempt in range(attempts):
        try:
            return fn()
        except (Unavailable, Conflict) as exc:
            if attempt == attempts - 1:
                raise
            wait = random.uniform(0, min(cap, base * (2 ** attempt)))
            count(key_prefix(key), "retry")
            if log:
                log("store_retry", key_prefix=key_prefix(key), attempt=attempt + 1, wait_s=round(wait, 3),
                    error=type(exc).__name__, detail=str(exc)[:200])
            sleep(wait)


def open_store(url: str, log=None, live: str | None = None) -> Store:
    """Build the backend for ``url``: ``file:///abs/path``, ``s3://bucket[/prefix]``, ``memory://name``
    (``redis://`` is accepted for the live plane). With ``live`` (config ``live_store``), keys
    under ``live/`` go to that backend instead (:class:`lib.store.routed.RoutedStore`).

    ``log(event, **fields)`` (e.g. from ``lib.logs.setup``) receives the S3 backend's lost-race,
    conflict and outage events; default :func:`log_event` (the ``ctxlake.store`` logger).

    :raises ValueError: unknown scheme or malformed URL.
    """
    if live and live != url:
        from lib.store.routed import RoutedStore

        return RoutedStore(open_store(url, log=log), open_store(live, log=log))
    if url.startswith("file://"):
        from lib.store.file import FileStore

        return FileStore(url)
    if url.startswith(("redis://", "rediss://")):
        from lib.store.redis import RedisStore

        return RedisStore(url)
    if url.startswith("s3://"):
        from lib.store.s3 import S3Store

        return S3Store(url, log=log or log_event)
    if url.startswith("memory://"):
        from lib.store.memory import MemoryStore

        return MemoryStore.named(url)
    from lib.sanitize import mask_url

    raise ValueError(f"unsupported store URL {mask_url(url)!r}: use file://, s3://, memory:// (or redis:// for live_store)")
