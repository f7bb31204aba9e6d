"""The spool: the durability boundary between an agent and the store (docs/design.md §2, §3).

Write side (hook, MCP server, import): :func:`append` writes one record as one ``write`` on an
``O_APPEND`` descriptor, so concurrent writers never interleave lines; files rotate at 32 MiB
and a runtime directory stops accepting at 512 MiB (:class:`SpoolFull`). Appends (shared
``flock``), rotations and deletions after shipping (exclusive ``flock``, :func:`rotate`,
:func:`unlink_if_consumed`) are safe against each other by construction: no line is ever
written to a file that is being, or has been, deleted, and no rotation replaces another's file.

Read side (syncd): :func:`read_complete_lines` returns whole lines after a byte offset; offsets
live in :class:`Watermark` files keyed by file identity ``dev:inode`` (not name, so rotation
cannot confuse them). A line is only deleted with its file, after the store confirmed the
segment that contains it (invariant 2).

Standard library only.
"""
from __future__ import annotations

import json
import os
import re
import time

ROTATE_BYTES = 32 << 20
"""A spool file is renamed to ``<name>.<n>`` once it reaches 32 MiB (docs/design.md §3)."""
CAP_BYTES = 512 << 20
"""A spool directory refuses new records once it holds 512 MiB (docs/design.md §3)."""

_ROTATED = re.compile(r"^(?P<base>.+\.ndjson)\.(?P<n>\d+)$")


LOW_FREE_BYTES = 64 << 20
"""Below this much free space on the spool's filesystem, syncd logs ``spool_disk_low`` every pass
and ``ctxlake status`` says so: a hook on a full disk cannot even write its error log."""


def disk_free(directory: str) -> dict:
    """``{free_bytes, total_bytes, low}`` of the filesystem holding ``directory`` (its nearest
    existing ancestor); ``low`` when free space is under :data:`LOW_FREE_BYTES`."""
    d = os.path.abspath(directory)
    while not os.path.exists(d) and os.path.dirname(d) != d:
        d = os.path.dirname(d)
    st = os.statvfs(d)
    free = st.f_bavail * st.f_frsize
    return {"free_bytes": free, "total_bytes": st.f_blocks * st.f_frsize, "low": free < LOW_FREE_BYTES}


class SpoolFull(OSError):
    """The spool directory reached its cap; the record was not written."""


class NotDurable(OSError):
    """The whole line was written, but the disk did not confirm it (``fdatasync`` failed): the
    record exists and will be read, it may not survive a power loss."""


def dir_bytes(directory: str) -> int:
    """Total size in bytes of the regular files directly inside ``directory`` (0 if absent)."""
    total = 0
    try:
        with os.scandir(directory) as it:
            for entry in it:
                try:
                    if entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
                except OSError:
                    pass
    except FileNotFoundError:
        return 0
    return total


def append(path: str, line: str, *, cap_bytes: int = CAP_BYTES, rotate_bytes: int = ROTATE_BYTES,
           sync: bool = False, lock_path: str | None = None) -> int:
    """Append one complete line (must end with ``\\n``) to ``path``; return bytes written.

    Creates the directory (mode 0700) when missing. Rotates ``path`` to ``path.<n>`` first when
    it has reached ``rotate_bytes``. The write happens under a shared ``flock`` on the file
    itself, and a file found unlinked once the lock is held (syncd deleted it after shipping, or
    a rotation raced) is never written: the line goes to a fresh file at ``path``. With
    :func:`unlink_if_consumed` and :func:`rotate` (exclusive lock) this makes appending,
    rotating and deleting after shipping safe against each other by construction. With ``sync``
    the line is on stable storage when this returns (``fdatasync`` of the file, and ``fsync`` of
    the directory when the file was just created; ``bench/spool_durability.py`` measures the
    cost). With ``lock_path`` the append also holds a shared ``flock`` on that file, so a
    reclaimer holding it exclusively (:func:`reclaim_consumed`) never deletes a file a writer is
    appending to. :raises SpoolFull: the directory holds ``cap_bytes`` already. :raises OSError:
    the disk refused the write (full, read-only, permissions): no record was written (a partial
    line is ended with a newline, so readers drop it as one unparseable line). :raises
    NotDurable: with ``sync``, the line was written but not confirmed on disk.
    """
    import fcntl

    if not line.endswith("\n") or "\n" in line[:-1]:
        raise ValueError("a spool record is exactly one line ending in a newline")
    data = line.encode("utf-8", "surrogatepass")
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    lock_fd = _lock(lock_path, shared=True) if lock_path else None
    try:
        if dir_bytes(directory) + len(data) > cap_bytes:
            raise SpoolFull(f"spool directory {directory} is at its cap of {cap_bytes} bytes")
        try:
            if os.stat(path).st_size >= rotate_bytes:
                rotate(path, rotate_bytes)
        except FileNotFoundError:
            pass
        while True:
            created = False
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            except FileNotFoundError:
                fd, created = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), True
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                if os.fstat(fd).st_nlink == 0:
                    continue  # deleted between our open and our lock: write to the new file instead
                n = os.write(fd, data)
                if n != len(data):  # a short write on a full disk: never leave half a line silently
                    try:  # end the fragment, so it is one unparseable line and the next record stays whole
                        os.write(fd, b"\n")
                    except OSError:
                        pass
                    raise OSError(f"short write to {path}: {n} of {len(data)} bytes")
                if sync:
                    try:
                        os.fdatasync(fd)
                        if created:
                            _fsync_dir(directory)
                    except OSError as exc:
                        raise NotDurable(exc.errno, f"written but not confirmed on disk: {exc.strerror or exc}") from exc
                return n
            finally:
                os.close(fd)
    finally:
        if lock_fd is not None:
            os.close(lock_fd)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _lock(path: str, *, shared: bool) -> int:
    """An open descriptor of ``path`` (created when missing) holding ``flock`` (shared or
    exclusive, blocking); closing it releases the lock."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rotate(path: str, min_bytes: int = 0) -> str | None:
    """Move ``path`` to ``path.<n>`` with the next free ``n``; return the new name, or ``None``
    when there was nothing to rotate (gone, another process rotated it first, or smaller than
    ``min_bytes`` by now).

    Safe with any number of concurrent rotators and appenders: it holds an exclusive ``flock``
    on the file (appenders hold a shared one while they write), re-checks that ``path`` still
    names that file, and claims ``path.<n>`` with ``link`` (which never replaces an existing
    name: on a collision it tries ``n + 1``), then unlinks ``path``.
    """
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        st = os.fstat(fd)
        try:
            cur = os.stat(path)
        except FileNotFoundError:
            return None
        if st.st_nlink == 0 or (cur.st_dev, cur.st_ino) != (st.st_dev, st.st_ino) or st.st_size < min_bytes:
            return None
        directory, base = os.path.split(path)
        existing = [int(m.group("n")) for name in os.listdir(directory)
                    if (m := _ROTATED.match(name)) and m.group("base") == base]
        n = max(existing, default=0) + 1
        while True:
            target = f"{path}.{n}"
            try:
                os.link(path, target)
                break
            except FileExistsError:
                n += 1
        os.unlink(path)
        return target
    finally:
        os.close(fd)


def unlink_if_consumed(path: str, offsets: dict) -> str | None:
    """Delete ``path`` if it holds no byte past its shipped offset (``offsets``: file identity
    ``dev:inode`` → offset, as in :class:`Watermark`); return the identity it had when it was
    deleted (or ``""`` when it was already gone), ``None`` when it stays.

    Holds an exclusive ``flock`` across the identity check, the size check and the unlink, so
    an appender (shared lock) either wrote before — then the size shows it and the file stays —
    or finds the file unlinked and writes to a new one (:func:`append`); and a file rotated away
    and replaced at ``path`` meanwhile is judged by its own offset, never another file's.
    """
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return ""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        st = os.fstat(fd)
        ident = identity(st)
        try:
            cur = os.stat(path)
        except FileNotFoundError:
            return None  # renamed (rotated) meanwhile: judged under its new name next pass
        if (cur.st_dev, cur.st_ino) != (st.st_dev, st.st_ino) or st.st_size > int(offsets.get(ident, 0)):
            return None
        os.unlink(path)
        return ident
    finally:
        os.close(fd)


def session_files(directory: str) -> dict[str, dict]:
    """Group a runtime spool directory by session.

    Returns ``{session_file_stem: {"files": [paths, oldest rotation first, live file last],
    "done": path_or_None}}``. Ignores everything that is not ``*.ndjson``, ``*.ndjson.<n>`` or
    ``*.done``.
    """
    groups: dict[str, dict] = {}
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return groups
    rotated: dict[str, list] = {}
    for name in names:
        full = os.path.join(directory, name)
        if name.endswith(".ndjson"):
            groups.setdefault(name[:-7], {"files": [], "done": None, "live": None})["live"] = full
        elif name.endswith(".done"):
            groups.setdefault(name[:-5], {"files": [], "done": None, "live": None})["done"] = full
        elif m := _ROTATED.match(name):
            stem = m.group("base")[:-7]
            rotated.setdefault(stem, []).append((int(m.group("n")), full))
            groups.setdefault(stem, {"files": [], "done": None, "live": None})
    for stem, g in groups.items():
        g["files"] = [p for _, p in sorted(rotated.get(stem, []))] + ([g["live"]] if g["live"] else [])
        del g["live"]
    return groups


def identity(st: os.stat_result) -> str:
    """A spool file's identity ``"<dev>:<inode>"`` from its ``stat`` (of an open descriptor,
    so a rotation between a stat by name and an open by name cannot swap two files)."""
    return f"{st.st_dev}:{st.st_ino}"


def read_complete_lines(path, offset: int, max_lines: int | None = None,
                        max_bytes: int = 64 << 20) -> tuple[list[bytes], int]:
    """Read whole lines of ``path`` (a file name, or a file opened ``rb``) starting at byte
    ``offset``.

    Returns ``(lines_without_newline, end_offset)``: a trailing line without its newline (a
    writer mid-``write`` or a crash) is not returned and ``end_offset`` stops before it. Reads
    at most ``max_bytes`` and ``max_lines`` so a large backlog streams in batches.
    """
    lines: list[bytes] = []
    end = offset
    fh = open(path, "rb") if isinstance(path, str) else path
    try:
        fh.seek(offset)
        budget = max_bytes
        while budget > 0 and (max_lines is None or len(lines) < max_lines):
            raw = fh.readline(budget + 1)
            if not raw or not raw.endswith(b"\n"):
                break
            lines.append(raw[:-1])
            end += len(raw)
            budget -= len(raw)
    finally:
        if isinstance(path, str):
            fh.close()
    return lines, end


_RECOVER = b'{"schema_version":'


def decode_lines(lines: list[bytes], rejects: list | None = None) -> tuple[list[dict], int]:
    """Parse spool lines into dicts; return ``(records, dropped_count)``.

    A line spliced by a crash (half a record followed by a whole one, since the next writer
    appends after the fragment) is recovered: the last ``{"schema_version":`` inside it is
    parsed on its own. What cannot be parsed is counted, never raised; with ``rejects`` (a
    list) each such line — or the fragment before a recovered record — is appended to it as
    ``(raw bytes, reason)`` for the caller to quarantine.
    """
    out, dropped = [], 0
    for raw in lines:
        if not raw.strip():
            continue
        reason = None
        try:
            rec = json.loads(raw)
            if isinstance(rec, dict):
                out.append(rec)
                continue
            reason = f"a JSON {type(rec).__name__}, not an object"
        except ValueError as exc:
            try:
                raw.decode("utf-8")
                reason = f"not JSON: {exc}"
            except UnicodeDecodeError as bad:
                reason = f"not UTF-8 (byte {bad.start}), so not JSON"
        except RecursionError:
            reason = "not JSON this parser can hold: nested too deep"
        idx = raw.rfind(_RECOVER)
        if idx > 0:
            try:
                rec = json.loads(raw[idx:])
                if isinstance(rec, dict):
                    out.append(rec)
                    dropped += 1  # the fragment before it is lost (it was never complete)
                    if rejects is not None:
                        rejects.append((raw[:idx], "a fragment cut by a crash, followed on the same line by a whole record"))
                    continue
            except (ValueError, RecursionError):
                pass
        dropped += 1
        if rejects is not None:
            rejects.append((raw, reason))
    return out, dropped


class Watermark:
    """Upload progress of one spooled session (``spool/.state/<runtime>/<session>.json``).

    ``files`` maps file identity ``dev:inode`` → confirmed byte offset; ``next_seg`` is the next
    segment number; ``pending`` = ``{seg, file, start, end}`` is the batch being uploaded (written
    *before* the PUT, so a crash re-sends the same bytes as the same segment); ``partitions`` lists
    every date partition the session's segments went to (an event goes to the partition of its
    own ``emitted_at``; ``partition_date`` is the first of them); ``agent_id``, ``fleet_id`` and
    ``runtime`` (of the first envelope) pin the rest of the lake key; ``backstop`` names the end
    marker (``dev:inode:mtime_ns``) the transcript backstop last ran for (:mod:`lib.backstop`). Kept after sealing: a resumed session id must not reuse
    ``seg-000000`` (reference bug 12.2 #19).
    """

    # a plain class, not a dataclass: the hook imports this module, and building a dataclass
    # costs it milliseconds at every start

    def __init__(self, path: str, files: dict | None = None, next_seg: int = 0, pending: dict | None = None,
                 partition_date: str | None = None, partitions: list | None = None, agent_id: str | None = None,
                 fleet_id: str | None = None, runtime: str | None = None, sealed: bool = False,
                 dropped_lines: int = 0, backstop: str | None = None):
        self.path, self.files, self.next_seg, self.pending = path, {} if files is None else files, next_seg, pending
        self.partition_date, self.partitions = partition_date, [] if partitions is None else partitions
        self.agent_id, self.fleet_id, self.runtime = agent_id, fleet_id, runtime
        self.sealed, self.dropped_lines, self.backstop = sealed, dropped_lines, backstop

    def __repr__(self) -> str:
        return f"Watermark({self.path!r}, next_seg={self.next_seg}, files={self.files!r}, pending={self.pending!r})"

    @classmethod
    def load(cls, path: str) -> "Watermark":
        """Read a watermark; a missing file is a fresh one.

        :raises ValueError: the file exists but is not a valid watermark (never guessed: the
            caller logs it and leaves the session's spool untouched).
        """
        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read())
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError, RecursionError) as exc:
            raise ValueError(f"unreadable watermark {path}: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("files", {}), dict):
            raise ValueError(f"unreadable watermark {path}: not an object")
        return cls(path, files=dict(data.get("files", {})), next_seg=int(data.get("next_seg", 0)),
                   pending=data.get("pending"), partition_date=data.get("partition_date"),
                   partitions=list(data.get("partitions") or ([data["partition_date"]] if data.get("partition_date") else [])),
                   agent_id=data.get("agent_id"), fleet_id=data.get("fleet_id"), runtime=data.get("runtime"),
                   sealed=bool(data.get("sealed")), dropped_lines=int(data.get("dropped_lines", 0)),
                   backstop=data.get("backstop"))

    def save(self) -> None:
        """Write atomically (temp file, fsync, rename)."""
        data = {"files": self.files, "next_seg": self.next_seg, "pending": self.pending,
                "partition_date": self.partition_date, "partitions": self.partitions, "agent_id": self.agent_id,
                "fleet_id": self.fleet_id, "runtime": self.runtime, "sealed": self.sealed, "dropped_lines": self.dropped_lines,
                "backstop": self.backstop, "updated_at": time.time()}
        atomic_write(self.path, json.dumps(data, sort_keys=True).encode())


def atomic_write(path: str, data, mode: int = 0o600, *, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically: temp file in the same dir, fsync (unless
    ``fsync=False``: atomic but not durable), rename. ``data`` is bytes, or an iterable of bytes
    chunks written in turn (a file larger than memory should hold at once). On any failure (a
    full disk) the temp file is removed and the old ``path`` is left as it was. :raises OSError:
    as the disk did."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        try:
            for chunk in ((data,) if isinstance(data, (bytes, bytearray, memoryview)) else data):
                view = memoryview(chunk)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def backlog(spool_dir: str, state_dir: str | None = None) -> dict:
    """Unshipped spool bytes for status and metrics: ``{bytes, files, oldest_mtime}``.

    A file counts only for the bytes past its confirmed watermark offset (shipped lines of a
    still-open session stay on disk until the session is sealed, but are not backlog).
    """
    offsets: dict = {}
    if state_dir and os.path.isdir(state_dir):
        for root, _, names in os.walk(state_dir):
            for name in names:
                if name.endswith(".json"):
                    try:
                        with open(os.path.join(root, name), "rb") as fh:
                            offsets.update(json.loads(fh.read()).get("files") or {})
                    except (OSError, ValueError, AttributeError, RecursionError):
                        continue
    total, files, oldest = 0, 0, None
    for root, dirs, names in os.walk(spool_dir):
        dirs[:] = [d for d in dirs if d != ".state"]
        for name in names:
            if ".ndjson" not in name:
                continue
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:
                continue
            pending = st.st_size - int(offsets.get(identity(st), 0))
            if pending <= 0:
                continue
            total += pending
            files += 1
            oldest = st.st_mtime if oldest is None else min(oldest, st.st_mtime)
    return {"bytes": total, "files": files, "oldest_mtime": oldest}


def wait_for_hooks(state_dir: str, timeout: float = 10.0) -> bool:
    """Wait until no detached hook capture is in flight (they hold ``hooks.lock`` shared).

    Returns True when none is running, False on timeout. Used by syncd before a pass and by
    tests, so an event whose hook already answered is not missed by a ``--once`` run.
    """
    import fcntl

    from lib.paths import hooks_lock_path

    path = hooks_lock_path(state_dir)
    if not os.path.exists(path):
        return True
    fd = os.open(path, os.O_RDWR)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.01)
    finally:
        os.close(fd)


def consume_records(base_path: str, state_path: str, *, max_records: int = 10000) -> tuple[list[dict], callable]:
    """Read new records of a rotating spool file (``base_path`` and ``base_path.<n>``) for one
    consumer whose offsets live in ``state_path`` (keyed by file identity).

    Returns ``(records, commit)``: call ``commit()`` only after the records were applied, so a
    crash re-delivers them (consumers must be idempotent). Several consumers may read the same
    file with their own ``state_path``; none deletes it: :func:`reclaim_consumed` does, once
    every consumer has read a file to its end.
    """
    offsets = _load_offsets(state_path) or {}  # missing or garbage: read from the start (consumers are idempotent)
    files = _spool_files(base_path)
    records, new_offsets = [], dict(offsets)
    for path in files:
        try:  # identity and bytes from one descriptor: a rotation between a stat by name and an
            fh = open(path, "rb")  # open by name would apply one file's offset to another file
        except FileNotFoundError:
            continue  # rotated or reclaimed since the listing: read under its new name next pass
        with fh:
            st = os.fstat(fh.fileno())
            ident = identity(st)
            lines, end = read_complete_lines(fh, offsets.get(ident, 0), max_lines=max_records - len(records))
        recs, _ = decode_lines(lines)
        records.extend(recs)
        new_offsets[ident] = end
        if len(records) >= max_records:
            break

    def commit():
        atomic_write(state_path, json.dumps({"files": new_offsets}).encode())

    return records, commit


def _load_offsets(state_path: str) -> dict | None:
    """A consumer's ``{file identity: byte offset}`` (offsets that are not non-negative ints are
    left out); ``{}`` when the file is missing, ``None`` when it is unreadable or not one."""
    try:
        with open(state_path, "rb") as fh:
            data = json.loads(fh.read())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return None
    return {k: v for k, v in files.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def _spool_files(base_path: str) -> list[str]:
    """``base_path``'s rotations (oldest first) and ``base_path`` itself, those that exist."""
    directory, base = os.path.split(base_path)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    rotated = sorted((int(m.group("n")), n) for n in names if (m := _ROTATED.match(n)) and m.group("base") == base)
    return [os.path.join(directory, n) for _, n in rotated] + ([base_path] if base in names else [])


def reclaim_consumed(base_path: str, state_paths: list[str], lock_path: str) -> dict:
    """Delete the files of a rotating spool (``base_path`` and ``base_path.<n>``) that every
    consumer in ``state_paths`` (:func:`consume_records` offsets) has read to their end.

    Holds ``lock_path`` exclusively (appenders hold it shared, :func:`append` ``lock_path``), so
    no writer is between its size check and its write: a file whose size equals every
    consumer's offset has no unread line and none on its way. Each consumer's offset of a file
    is dropped *before* the file is unlinked, so a later file that reuses the inode number is
    read from its start (a crash in between re-delivers the file: consumers are idempotent).
    Returns ``{"files": n, "bytes": n}`` reclaimed. :raises OSError: state or unlink failed.
    """
    offsets = [_load_offsets(sp) for sp in state_paths]
    out = {"files": 0, "bytes": 0}
    if any(o is None for o in offsets):
        return out  # an unreadable watermark: reclaim nothing rather than guess
    fd = _lock(lock_path, shared=False)
    try:
        done = []
        for path in _spool_files(base_path):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            ident = identity(st)
            if all(o.get(ident, -1) >= st.st_size for o in offsets):
                done.append((path, ident, st.st_size))
        if not done:
            return out
        gone = {ident for _, ident, _ in done}
        for sp, o in zip(state_paths, offsets):
            atomic_write(sp, json.dumps({"files": {k: v for k, v in o.items() if k not in gone}}).encode())
        for path, _, size in done:
            os.unlink(path)
            out["files"] += 1
            out["bytes"] += size
    finally:
        os.close(fd)
    return out