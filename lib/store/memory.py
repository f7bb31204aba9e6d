"""``memory://`` backend: an in-process fake with the exact semantics of the interface.

For unit tests of code above the store (leases, gate, syncd) without disk or network
(docs/design.md §14). ``clock`` can be replaced to simulate store time; ``fail_next`` injects faults.
Stores opened with the same ``memory://name`` in one process share their objects.
"""
from __future__ import annotations

import hashlib
import threading
import time
from typing import Iterator

from lib.store import CREATE, OVERWRITE, ListEntry, NotFound, Obj, PreconditionFailed

_NAMED: dict = {}


class MemoryStore:
    """Dict-backed store. ``now`` is a callable returning the store clock (default time.time)."""

    conditional_writes_native = True
    """Create-only and If-Match are implemented here, not by a remote server: nothing to probe
    (:func:`lib.live.leases.require_conditional`)."""

    def __init__(self, url: str = "memory://", now=time.time):
        self.url = url
        self.now = now
        self._objs: dict[str, tuple[bytes, str, float]] = {}
        self._lock = threading.Lock()
        self.fail_next: list[Exception] = []

    @classmethod
    def named(cls, url: str) -> "MemoryStore":
        """The shared instance for ``url`` (created on first use)."""
        if url not in _NAMED:
            _NAMED[url] = cls(url)
        return _NAMED[url]

    def _fault(self):
        if self.fail_next:
            raise self.fail_next.pop(0)

    def get(self, key: str, if_none_match: str | None = None) -> Obj:
        with self._lock:
            self._fault()
            if key not in self._objs:
                raise NotFound(f"no such key {key}", key, self.now())
            data, etag, mtime = self._objs[key]
            if if_none_match == etag:
                return Obj(None, etag, mtime, self.now(), modified=False)
            return Obj(data, etag, mtime, self.now())

    def head(self, key: str) -> Obj:
        obj = self.get(key)
        return Obj(None, obj.etag, obj.last_modified, obj.server_time)

    def put(self, key: str, data: bytes, mode=OVERWRITE) -> Obj:
        with self._lock:
            self._fault()
            cur = self._objs.get(key)
            if mode == CREATE:
                if cur is not None:
                    raise PreconditionFailed(f"{key} already exists", key, self.now())
            elif mode != OVERWRITE:
                if cur is None or cur[1] != mode[1]:
                    raise PreconditionFailed(f"{key} changed (If-Match)", key, self.now())
            etag = '"' + hashlib.md5(data).hexdigest() + '"'
            t = self.now()
            self._objs[key] = (bytes(data), etag, t)
            return Obj(None, etag, t, t)

    def list(self, prefix: str) -> Iterator[ListEntry]:
        with self._lock:
            self._fault()
            items = sorted((k, v) for k, v in self._objs.items() if k.startswith(prefix))
        return iter([ListEntry(k, len(v[0]), v[2]) for k, v in items])

    def delete(self, key: str) -> None:
        with self._lock:
            self._fault()
            self._objs.pop(key, None)

    def clock(self) -> float:
        return self.now()
