"""``file://`` backend: the embedded store on a local folder (docs/design.md §8).

- ETag = sha256 hex of the object's bytes (so equal content ⇒ equal ETag, like S3 single-part).
- Create-only: the bytes go to a temp file which is ``link()``-ed to the key — atomic, fails
  with EEXIST when someone got there first, and never exposes a partial object.
- CAS and overwrite: an ``fcntl.flock`` on a per-key lock file, compare, then ``rename``.
  Safe across processes and threads on one host; not across hosts (use S3 for that).
- Clock: this host's clock — it *is* the store's clock for a local folder.

Layout: objects at ``<root>/<key>``; locks and temp files under ``<root>/.ctxlake-store/``,
which :meth:`FileStore.list` never shows. Keys may not start with ``.`` or contain ``..``.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import threading
import time
import urllib.parse
from typing import Iterator

from lib.store import (CREATE, OVERWRITE, ListEntry, NotFound, Obj, PreconditionFailed, StoreError,
                       Unavailable)

_INTERNAL = ".ctxlake-store"


def _etag(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest() + '"'


class FileStore:
    """Objects as files under a root directory. ``url`` = ``file:///abs/path`` (``~`` expanded)."""

    conditional_writes_native = True
    """Create-only and If-Match are implemented here, not by a remote server: nothing to probe
    (:func:`lib.live.leases.require_conditional`)."""

    def __init__(self, url: str):
        raw = url[len("file://"):]
        if not raw.strip():  # "file://" would silently be the current directory (a git work tree, say)
            raise ValueError(f"store URL {url!r} names no folder; write file:///abs/path")
        root = os.path.abspath(os.path.expanduser(urllib.parse.unquote(raw)))
        self.url = "file://" + root
        self.root = root
        self._tmp = os.path.join(root, _INTERNAL, "tmp")
        self._locks = os.path.join(root, _INTERNAL, "locks")
        self._tlock = threading.Lock()

    # -- helpers -------------------------------------------------------------
    def _path(self, key: str) -> str:
        parts = key.split("/")
        if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts) or parts[0].startswith("."):
            raise ValueError(f"invalid store key {key!r}")
        return os.path.join(self.root, *parts)

    def _stat_obj(self, path: str, data: bytes | None, etag: str) -> Obj:
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            mtime = None
        return Obj(data=data, etag=etag, last_modified=mtime, server_time=time.time())

    def _tmpfile(self, data: bytes) -> str:
        os.makedirs(self._tmp, exist_ok=True)
        tmp = os.path.join(self._tmp, f"{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}")
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:  # a full disk mid-write: leave no partial temp file behind
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return tmp

    def _lock(self, key: str):
        os.makedirs(self._locks, exist_ok=True)
        name = hashlib.sha256(key.encode()).hexdigest()
        return _FileLock(os.path.join(self._locks, name))

    def _wrap_os(self, exc: OSError, key: str):
        if exc.errno in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EDQUOT):
            return Unavailable(f"file store cannot write {key}: {exc.strerror}", key, time.time())
        return StoreError(f"file store error on {key}: {exc}", key, time.time())

    # -- interface -----------------------------------------------------------
    def get(self, key: str, if_none_match: str | None = None) -> Obj:
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise NotFound(f"no such key {key}", key, time.time()) from None
        except OSError as exc:
            raise self._wrap_os(exc, key) from exc
        etag = _etag(data)
        if if_none_match is not None and if_none_match == etag:
            return Obj(None, etag, os.stat(path).st_mtime, time.time(), modified=False)
        return self._stat_obj(path, data, etag)

    def head(self, key: str) -> Obj:
        obj = self.get(key)
        return Obj(None, obj.etag, obj.last_modified, obj.server_time)

    def put(self, key: str, data: bytes, mode=OVERWRITE) -> Obj:
        path = self._path(key)
        etag = _etag(data)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = self._tmpfile(data)
            try:
                if mode == CREATE:
                    try:
                        os.link(tmp, path)
                    except FileExistsError:
                        raise PreconditionFailed(f"{key} already exists", key, time.time()) from None
                else:
                    with self._lock(key):
                        if mode != OVERWRITE:
                            kind, expected = mode
                            if kind != "update":
                                raise ValueError(f"unknown put mode {mode!r}")
                            try:
                                with open(path, "rb") as fh:
                                    current = _etag(fh.read())
                            except FileNotFoundError:
                                raise PreconditionFailed(f"{key} does not exist (If-Match)", key, time.time()) from None
                            if current != expected:
                                raise PreconditionFailed(f"{key} changed (If-Match)", key, time.time())
                        os.replace(tmp, path)
                        tmp = None
            finally:
                if tmp:
                    try:
                        os.unlink(tmp)
                    except FileNotFoundError:
                        pass
        except OSError as exc:
            raise self._wrap_os(exc, key) from exc
        return self._stat_obj(path, None, etag)

    def list(self, prefix: str) -> Iterator[ListEntry]:
        directory, _, _ = prefix.rpartition("/")
        start = os.path.join(self.root, *directory.split("/")) if directory else self.root
        found = []
        for root, dirs, files in os.walk(start):
            if root == self.root:
                dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel_root = os.path.relpath(root, self.root)
            rel_root = "" if rel_root == "." else rel_root.replace(os.sep, "/") + "/"
            dirs[:] = [d for d in dirs if (rel_root + d + "/").startswith(prefix) or prefix.startswith(rel_root + d + "/")]
            for name in files:
                key = rel_root + name
                if key.startswith(prefix):
                    try:
                        st = os.stat(os.path.join(root, name))
                    except FileNotFoundError:
                        continue
                    found.append(ListEntry(key, st.st_size, st.st_mtime))
        found.sort(key=lambda e: e.key)
        return iter(found)

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            with self._lock(key) as lock:  # the key's lock file goes with it (unlinked while held)
                try:
                    os.unlink(path)
                finally:
                    lock.unlink()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise self._wrap_os(exc, key) from exc
        parent = os.path.dirname(path)
        while parent != self.root:  # prune empty folders so list() stays cheap
            try:
                os.rmdir(parent)
            except OSError:
                break
            parent = os.path.dirname(parent)

    def clock(self) -> float:
        return time.time()


class _FileLock:
    """Exclusive ``flock`` on a lock file, held for a ``with`` block (cross-process).

    The holder may :meth:`unlink` the file (``delete`` removes a key's lock with the key); a
    waiter that then gets the flock of the unlinked inode sees that the path no longer names it
    and locks the path afresh, so two holders never lock two different files for one key."""

    def __init__(self, path: str):
        self.path = path
        self.fd = None

    def __enter__(self):
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return self
            os.close(fd)  # the holder before us removed it: lock the file the path names now

    def unlink(self) -> None:
        """Remove the lock file while holding it (missing already is fine)."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        return False
