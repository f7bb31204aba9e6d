"""A store that sends the live plane (``live/`` keys) to one backend and everything else to the
lake (docs/design.md §8): the documented path past ~50 active agents is ``live_store = "redis://..."``
while ``sessions/``, ``claims/`` and ``snapshot/`` stay on S3 or a local folder.

The split is by key prefix only; each call goes to exactly one backend, so every guarantee of
the Store contract holds per key as before (there is no cross-key atomicity either way).
"""
from __future__ import annotations

from typing import Iterator

from lib.keys import LIVE_PREFIX

from lib.store import OVERWRITE, ListEntry, Obj



class RoutedStore:
    """``lake`` for every key except those under ``live/``, which go to ``live``."""

    def __init__(self, lake, live, prefix: str = LIVE_PREFIX):
        self.lake, self.live, self.prefix = lake, live, prefix
        self.url = lake.url
        self.live_url = live.url
        self.conditional_writes_native = getattr(live, "conditional_writes_native", False)  # leases live there

    def _pick(self, key: str):
        return self.live if key.startswith(self.prefix) else self.lake

    def get(self, key: str, if_none_match: str | None = None) -> Obj:
        return self._pick(key).get(key, if_none_match)

    def head(self, key: str) -> Obj:
        return self._pick(key).head(key)

    def put(self, key: str, data: bytes, mode=OVERWRITE) -> Obj:
        return self._pick(key).put(key, data, mode)

    def list(self, prefix: str) -> Iterator[ListEntry]:
        if prefix.startswith(self.prefix):
            return self.live.list(prefix)
        if self.prefix.startswith(prefix):  # a listing that spans both planes (e.g. "" or "l")
            merged = sorted(list(self.lake.list(prefix)) + list(self.live.list(self.prefix)), key=lambda e: e.key)
            return iter([e for e in merged if e.key.startswith(prefix)])
        return self.lake.list(prefix)

    def delete(self, key: str) -> None:
        self._pick(key).delete(key)

    def clock(self) -> float:
        """The live plane's clock: leases and presence are judged by it."""
        return self.live.clock()
