"""The lost-events ledger: where a hook records a failure when even ``hook-errors.log`` cannot be
written (a full disk), so the loss is never silent (docs/operations.md "A full disk").

A full filesystem refuses every write that needs a new block, so the hook cannot append its
event to the spool, nor its error to ``hook-errors.log``. It can still overwrite bytes that are
already allocated: syncd keeps ``hook-lost.bin`` (:data:`SIZE` bytes, written out in full, never
sparse) beside the log, and the hook rewrites a slot of it in place. Layout: a header of
:data:`SLOT` bytes (``ctxlake-lost v1 count=<n>``), then :data:`SLOTS` slots of :data:`SLOT`
bytes each holding one JSON record (``ts, runtime, event, step, error``), space-padded, used
as a ring: the record of the ``n``-th loss is in slot ``(n-1) % SLOTS``. Writers hold an
exclusive ``flock`` (which needs no disk space). ``ctxlake status`` shows the count and the
newest records; syncd logs ``hook_events_lost`` when the count grew and exports it on
``/metrics``.

A copy-on-write filesystem (btrfs, ZFS) needs new blocks even to overwrite: there the ledger
cannot help, and syncd's ``spool_disk_low`` warning is what remains.

Standard library only (the hook writes it).
"""
from __future__ import annotations

import json
import os

SLOT = 256
"""Bytes per slot, and of the header."""
SLOTS = 15
"""Records kept (the newest ones)."""
SIZE = SLOT * (SLOTS + 1)
"""The ledger's size in bytes (4 KiB: one block of most filesystems)."""
_MAGIC = b"ctxlake-lost v1 count="


def _header(count: int) -> bytes:
    return (_MAGIC + b"%020d" % count).ljust(SLOT - 1, b" ") + b"\n"


def _count(header: bytes) -> int | None:
    if not header.startswith(_MAGIC):
        return None
    digits = header[len(_MAGIC):len(_MAGIC) + 20]
    return int(digits) if digits.isdigit() else None


def _dumps(rec: dict) -> bytes:
    return json.dumps(rec, ensure_ascii=True, separators=(",", ":")).encode()


def reserve(path: str) -> bool:
    """Make sure ``path`` is a ledger of :data:`SIZE` allocated bytes; keep one that already is
    (its count and records). Returns True when it had to be (re)written. Written to a temporary
    file, fsynced, then renamed, so a reader never sees half a ledger. :raises OSError: the disk
    refused (the caller logs it; the next pass tries again)."""
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == SIZE and _count(fh.read(SLOT)) is not None:
                return False
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, _header(0) + (b" " * (SLOT - 1) + b"\n") * SLOTS)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return True


def record(path: str, ts: str, runtime: str, event: str, step: str, error: str) -> bool:
    """Record one loss in the ledger at ``path`` by overwriting allocated bytes only. Returns
    False when there is no ledger to write (missing, or not :data:`SIZE` bytes: then nothing is
    written, so nothing can need a new block) or the write failed; never raises."""
    try:
        import fcntl

        fd = os.open(path, os.O_RDWR)
    except (OSError, ImportError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size != SIZE:
            return False
        count = _count(os.pread(fd, SLOT, 0))
        if count is None:
            return False
        rec = {"ts": ts[:40], "runtime": runtime[:40], "event": event[:60], "step": step[:20]}
        room = SLOT - 1 - len(_dumps(dict(rec, error="")))
        line = _dumps(dict(rec, error=error[:room]))
        while len(line) > SLOT - 1 and room > 0:  # escapes made it longer: cut the error text further
            room -= 16
            line = _dumps(dict(rec, error=error[:max(room, 0)]))
        os.pwrite(fd, line.ljust(SLOT - 1, b" ") + b"\n", SLOT * (1 + count % SLOTS))
        os.pwrite(fd, _header(count + 1), 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def read(path: str) -> dict:
    """``{"count": losses recorded so far, "recent": [records, newest first], "reserved": bool}``;
    a missing or unreadable ledger reads as no loss, ``reserved`` False."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(SIZE + 1)
    except OSError:
        return {"count": 0, "recent": [], "reserved": False}
    count = _count(data[:SLOT]) if len(data) == SIZE else None
    if count is None:
        return {"count": 0, "recent": [], "reserved": False}
    recent = []
    for n in range(count, max(0, count - SLOTS), -1):
        raw = data[SLOT * (1 + (n - 1) % SLOTS):SLOT * (2 + (n - 1) % SLOTS)]
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict):
            recent.append(rec)
    return {"count": count, "recent": recent, "reserved": True}
