"""``redis://`` backend for the live plane only (docs/design.md §8 "planned", issue #12).

Past roughly 50 active agents, heartbeats, the roster and leases on plain object storage run
into CAS contention and O(N) requests per poll interval (docs/architecture.md, the live plane's ceiling). This backend
keeps the exact Store contract so the live-plane code above it does not change; ``open_store``
routes only ``live/`` keys here (:class:`lib.store.routed.RoutedStore`) — sessions, claims and
snapshots stay on the lake.

Each object is a Redis hash ``<ns>obj:<key>`` = ``{d: bytes, e: etag, m: mtime_ms}``; a sorted
set ``<ns>index`` (all scores 0, so ordered by key) serves ``list(prefix)`` with
``ZRANGEBYLEX``. Every operation is one Lua script, atomic on the server, that also returns the
server's ``TIME`` — so every answer carries the store clock (invariant 6), and create-only /
compare-and-swap are decided by Redis alone. ETag = ``sha1`` of the bytes (``redis.sha1hex``).
No persistence is assumed: after a restart the live plane is empty and agents re-acquire by
create-only, so two holders are impossible (an empty key has none).

URL: ``redis://[user:password@]host:port[/db][?ns=prefix]`` (password from the URL or
``REDIS_PASSWORD``; TLS with ``rediss://``).
"""
from __future__ import annotations

import os
import urllib.parse
from typing import Iterator

from lib.sanitize import mask_url
from lib.store import CREATE, OVERWRITE, ListEntry, NotFound, Obj, PreconditionFailed, StoreError, Unavailable

_GET = """
local t = redis.call('TIME')
local v = redis.call('HMGET', KEYS[1], 'd', 'e', 'm')
return {t[1], t[2], v[1], v[2], v[3]}
"""
_PUT = """
local t = redis.call('TIME')
local mode = ARGV[2]
local cur = redis.call('HGET', KEYS[1], 'e')
if mode == 'create' and cur then return {t[1], t[2], 'exists'} end
if mode == 'update' and cur ~= ARGV[3] then return {t[1], t[2], 'changed'} end
local etag = '"' .. redis.sha1hex(ARGV[1]) .. '"'
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'e', etag, 'm', ms)
redis.call('ZADD', KEYS[2], 0, ARGV[4])
return {t[1], t[2], 'ok', etag, ms}
"""
_DEL = """
local t = redis.call('TIME')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return {t[1], t[2]}
"""


def _t(sec, usec) -> float:
    return int(sec) + int(usec) / 1e6


class RedisStore:
    """Store contract on Redis (see module docstring). ``url`` = ``redis://host:port/db?ns=...``."""

    conditional_writes_native = True
    """Create-only and If-Match are implemented here, not by a remote server: nothing to probe
    (:func:`lib.live.leases.require_conditional`)."""

    def __init__(self, url: str, client=None):
        import redis

        self.url = mask_url(url)  # what logs and reports show; the client gets the real one
        parsed = urllib.parse.urlparse(url)
        q = urllib.parse.parse_qs(parsed.query)
        self.ns = (q.get("ns") or ["ctxlake:"])[0]
        if client is None:
            clean = urllib.parse.urlunparse(parsed._replace(query=""))
            kwargs = {"socket_timeout": 5, "socket_connect_timeout": 3}
            if not parsed.password and os.environ.get("REDIS_PASSWORD"):
                kwargs["password"] = os.environ["REDIS_PASSWORD"]
            client = redis.Redis.from_url(clean, **kwargs)
        self.r = client
        self._errors = (redis.ConnectionError, redis.TimeoutError)
        self._rerr = redis.RedisError
        self._get = self.r.register_script(_GET)
        self._put = self.r.register_script(_PUT)
        self._del = self.r.register_script(_DEL)
        self._index = self.ns + "index"

    def _k(self, key: str) -> str:
        if not key or key.startswith("/"):
            raise ValueError(f"invalid store key {key!r}")
        return self.ns + "obj:" + key

    def _call(self, fn, key, *args):
        try:
            return fn(*args)
        except self._errors as exc:
            raise Unavailable(f"redis unreachable for {key}: {exc}", key) from exc
        except self._rerr as exc:
            raise StoreError(f"redis error on {key}: {exc}", key) from exc

    def get(self, key: str, if_none_match: str | None = None) -> Obj:
        sec, usec, data, etag, mtime = self._call(lambda: self._get(keys=[self._k(key)]), key)
        now = _t(sec, usec)
        if data is None:
            raise NotFound(f"no such key {key}", key, now)
        etag = etag.decode()
        if if_none_match is not None and if_none_match == etag:
            return Obj(None, etag, int(mtime) / 1000, now, modified=False)
        return Obj(bytes(data), etag, int(mtime) / 1000, now)

    def head(self, key: str) -> Obj:
        obj = self.get(key)
        return Obj(None, obj.etag, obj.last_modified, obj.server_time)

    def put(self, key: str, data: bytes, mode=OVERWRITE) -> Obj:
        if mode == CREATE:
            m, expect = "create", ""
        elif mode == OVERWRITE:
            m, expect = "overwrite", ""
        else:
            m, expect = "update", mode[1]
        res = self._call(lambda: self._put(keys=[self._k(key), self._index], args=[bytes(data), m, expect, key]), key)
        now = _t(res[0], res[1])
        status = res[2].decode() if isinstance(res[2], bytes) else res[2]
        if status == "exists":
            raise PreconditionFailed(f"{key} already exists", key, now)
        if status == "changed":
            raise PreconditionFailed(f"{key} changed (If-Match)", key, now)
        return Obj(None, res[3].decode(), int(res[4]) / 1000, now)

    def list(self, prefix: str) -> Iterator[ListEntry]:
        lo = b"[" + prefix.encode()
        hi = b"[" + prefix.encode() + b"\xff"
        keys = self._call(lambda: self.r.zrangebylex(self._index, lo, hi), prefix)
        if not keys:
            return iter([])
        pipe = self.r.pipeline(transaction=False)
        for k in keys:
            pipe.hmget(self._k(k.decode()), "d", "m")
        rows = self._call(pipe.execute, prefix)
        out = [ListEntry(k.decode(), len(d), int(m) / 1000) for k, (d, m) in zip(keys, rows) if d is not None]
        return iter(out)

    def delete(self, key: str) -> None:
        self._call(lambda: self._del(keys=[self._k(key), self._index], args=[key]), key)

    def clock(self) -> float:
        sec, usec = self._call(self.r.time, "TIME")
        return _t(sec, usec)
