"""Shipping: spool → Parquet segments in the lake, seal on session end (docs/design.md §2, §4, §5).

Why its own module: it is the one place that turns local spool bytes into store objects while
keeping invariant 2 — a spool line is deleted only after the store confirmed the segment that
holds it, and a replay after a crash duplicates nothing.

Per spooled session (files ``<sid>.ndjson.<n>`` oldest first, then ``<sid>.ndjson``):

1. read complete lines after the watermark offset of the file's identity (``dev:inode``);
2. record the batch as ``pending = {seg, file, start, end}`` in the watermark *before* the PUT,
   so a crash re-sends exactly the same bytes as the same segment number;
3. create-only PUT ``seg-<NNNNNN>.parquet``; a 412 on a pending segment means a previous try
   landed — its bytes are compared, and the watermark advances;
4. when ``<sid>.done`` exists (or the session never ended and is idle with its process gone,
   :mod:`lib.idle_seal`) and every file is consumed: reconcile the session with its
   transcript (:mod:`lib.backstop`: what the hooks missed is appended, and shipped by 1–3 in the
   same pass), then create ``_SEALED``, delete the spool files and ``.done``. The watermark is kept forever (a resumed session id must not restart at
   ``seg-000000``) but forgets the deleted files' identities (their inodes get reused).

Quarantine records (``spool/quarantine/*.ndjson``, never values) are shipped to
``quarantine/fleet=<f>/agent=<a>/dt=<d>/<ulid>.json`` create-only.
"""
from __future__ import annotations

import json
import os
import time

from lib import backstop, lake, spool
from lib.envelope import host_id, sha256_hex
from lib.store import CREATE, PreconditionFailed, retrying

SHIP_RUNTIMES = ("claude_code", "cursor", "hermes", "import")


class ShipStats:
    """Counters of one shipping pass (all ints): envelopes, segments, sealed, dropped_lines
    (spool lines that did not become events, each quarantined with its reason), backstop_filled
    (envelopes the transcript backstop appended), idle_sealed (sessions sealed without an end
    event, :mod:`lib.idle_seal`), quarantine_records, errors; ``session_errors``
    lists ``(session_file, message)``; ``last_quarantine_reason`` the last quarantined line's
    file, offset and reason; ``disk_error`` the first error that was the local disk refusing a
    write (:func:`lib.failures.disk_refusal`), else ``None``."""

    def __init__(self):
        self.envelopes = self.segments = self.sealed = self.dropped_lines = self.backstop_filled = 0
        self.quarantine_records = self.errors = self.idle_sealed = 0
        self.session_errors: list = []
        self.last_quarantine_reason: str | None = None
        self.disk_error: str | None = None

    def failed(self, where: str, exc: BaseException) -> None:
        """Count one error of ``where`` (a session file, ``quarantine``) and keep its cause."""
        from lib.failures import disk_refusal

        self.errors += 1
        self.session_errors.append((where, f"{type(exc).__name__}: {exc}"))
        self.disk_error = self.disk_error or disk_refusal(exc)

    def as_dict(self) -> dict:
        return {k: v for k, v in vars(self).items()}


def _no_surrogates(value):
    """``value`` (decoded JSON) with every lone surrogate in its strings and keys replaced by U+FFFD."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def _validate(records: list[dict], fleet_hint: str | None, rejects: list | None = None) -> tuple[list[dict], list[int], int]:
    """``(good records, their indexes, bad count)``; with ``rejects`` (a list) each bad record
    is appended as ``(record, reason)``."""
    from lib.clock import parse_time_strict
    from lib.envelope import check

    good, idx, bad = [], [], 0
    for i, r in enumerate(records):
        try:
            check(r)
            parse_time_strict(r["emitted_at"])  # the partition key: a line without a real time cannot be placed
        except (ValueError, OverflowError, TypeError, KeyError) as exc:
            bad += 1
            if rejects is not None:
                rejects.append((r, f"not a valid envelope: {exc}"))
            continue
        good.append(r)
        idx.append(i)
    return good, idx, bad


def _encode_batch(lines: list[bytes], log) -> tuple[bytes | None, dict | None, int, list]:
    """Parquet bytes for a batch of raw spool lines.

    Returns ``(data, first, rows, rejects)``: ``first`` = the first envelope's ``emitted_at,
    agent_id, fleet_id, runtime, session_id`` (they pin the lake key); ``rejects`` = ``[(raw
    bytes, reason, index in lines)]`` of the lines that cannot be events (the caller quarantines
    them at their own offsets, :func:`line_offsets`). Fast
    path: Arrow parses and checks the lines as they are (docs/design.md §12 throughput); if any
    line is malformed or invalid, the exact path parses them one by one, sets the bad ones
    aside with their reason, and encodes the rest.
    """
    keys = ("emitted_at", "agent_id", "fleet_id", "runtime", "session_id")
    try:
        table = lake.table_from_lines(lines)
        first = {k: table.column(k)[0].as_py() for k in keys if k != "emitted_at"}
        first["emitted_at"] = json.loads(lines[0])["emitted_at"]
        return lake.encode(table, shipped_by=host_id()), first, table.num_rows, []
    except ValueError as exc:
        log("segment_slow_path", reason=str(exc)[:200])
    rejects: list = []
    records, raws, line_of = [], [], []
    for li, raw in enumerate(lines):  # line by line, so a record that is not a valid envelope is set aside as its own bytes
        bad: list = []
        recs, _ = spool.decode_lines([raw], bad)
        rejects += [(r, why, li) for r, why in bad]
        records += recs
        raws += [raw] * len(recs)
        line_of += [li] * len(recs)
    invalid: list = []
    good, idx, _ = _validate(records, None, invalid)
    kept = set(idx)
    rejects += [(raws[i], why, line_of[i])
                for (i, (_, why)) in zip([i for i in range(len(records)) if i not in kept], invalid)]
    if not good:
        return None, None, 0, rejects
    # a lone surrogate (a runtime that cut a string mid-emoji) becomes U+FFFD; lake.to_table makes
    # every typed value holdable (numbers out of range → null, kept as they were in envelope_json)
    good = [_no_surrogates(r) for r in good]
    raw = [json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() for r in good]
    try:
        table = lake.table_from_lines(raw)
    except ValueError:
        table = lake.to_table(good, [r.decode() for r in raw])
    return lake.encode(table, shipped_by=host_id()), {k: good[0][k] for k in keys}, len(good), rejects


_EMITTED = b'"emitted_at":"'


def _line_date(raw: bytes) -> bytes | None:
    i = raw.find(_EMITTED)
    return raw[i + 14:i + 24] if i >= 0 else None


def _one_date(lines: list[bytes], start: int, end: int) -> tuple[list[bytes], int]:
    """The leading run of ``lines`` whose events share one date (``emitted_at[:10]``) and the
    byte offset after it: each segment goes to the partition of its events' own date
    (docs/architecture.md "Event identity"), so the same event reaches the same partition by
    every capture path."""
    first = next((d for d in map(_line_date, lines) if d), None)
    offset = start
    for i, raw in enumerate(lines):
        d = _line_date(raw)
        if d and d != first:
            return lines[:i], offset
        offset += len(raw) + 1
    return lines, end


def ship_session(store, paths, runtime: str, stem: str, group: dict, *, batch_rows: int, log,
                 stats: ShipStats, fleet_filter: str | None = None, should_stop=None, observe=None,
                 idle_secs: float | None = None, _ended: tuple | None = None) -> None:
    """Ship one spooled session. Raises store errors (the caller keeps going with others).

    ``should_stop()`` (optional) is asked before each batch: once it answers True the session is
    left as it stands — every batch already sent has its watermark written — and the rest ships
    on a later pass (syncd's graceful SIGTERM). ``observe(runtime, lines)`` sees each batch's raw
    spool lines once the store confirmed its segment. ``idle_secs`` (``[sync] idle_seal_secs``;
    ``None``: never) seals a session without an end marker once :func:`lib.idle_seal.idle_end`
    says it ended.
    """
    state = paths.watermark(runtime, stem)
    wm = spool.Watermark.load(state)
    for path in group["files"]:
        try:
            fh = open(path, "rb")  # identity and bytes from one open file: a rotation cannot swap them
        except FileNotFoundError:
            continue
        with fh:
            if _ship_file(store, paths, fh, path, runtime, wm, batch_rows=batch_rows, log=log, stats=stats,
                          should_stop=should_stop, observe=observe):
                return
    done, mark = _ended or _end_of(paths, runtime, stem, group, idle_secs)
    if done is None or not _all_consumed(paths, runtime, group, wm, stats, log):
        return
    if mark and wm.backstop != mark:
        filled = backstop.reconcile(paths, runtime, stem, group["files"], done, fleet_id=wm.fleet_id,
                                    agent_id=wm.agent_id, log=log)
        stats.backstop_filled += filled
        wm.backstop = mark
        wm.save()
        if filled:  # ship what the backstop appended now, so the session seals in this pass
            group = spool.session_files(paths.runtime_spool(runtime)).get(stem, group)
            ship_session(store, paths, runtime, stem, group, batch_rows=batch_rows, log=log, stats=stats,
                         fleet_filter=fleet_filter, should_stop=should_stop, observe=observe, _ended=(done, mark))
            return
    _seal(store, paths, runtime, stem, group, wm, done, stats, log)


def _end_of(paths, runtime: str, stem: str, group: dict, idle_secs: float | None) -> tuple:
    """``(end marker, its identity)`` of a session that ended, else ``(None, None)``: the
    hook's ``.done`` (missing a transcript path, the one the hooks recorded), or the end
    :func:`lib.idle_seal.idle_end` gives a session idle with its process gone."""
    from lib import idle_seal

    proc = paths.session_process(runtime, stem)
    if group.get("done"):
        done = _read_done(group["done"])
        if not isinstance(done.get("transcript_path"), str):
            recorded = idle_seal.read(proc).get("transcript_path")
            if isinstance(recorded, str):
                done["transcript_path"] = recorded
        return done, _done_identity(group["done"])
    if idle_secs is None or not group["files"]:
        return None, None
    idle = idle_seal.idle_end(group["files"], proc, idle_secs)
    return (idle, idle.pop("mark")) if idle else (None, None)


def _ship_file(store, paths, fh, path, runtime, wm, *, batch_rows, log, stats, should_stop, observe) -> bool:
    """Ship the new lines of one open spool file; True when ``should_stop()`` asked to stop."""
    st = os.fstat(fh.fileno())
    ident = spool.identity(st)
    while True:
        if should_stop is not None and should_stop():
            return True
        if wm.pending and wm.pending.get("file") == ident:
            start, end = int(wm.pending["start"]), int(wm.pending["end"])
            lines, got_end = spool.read_complete_lines(fh, start, max_bytes=end - start)
            if got_end != end:
                raise RuntimeError(f"spool file {path} shrank below a pending batch")
            seg = int(wm.pending["seg"])
        else:
            start = int(wm.files.get(ident, 0))
            lines, end = spool.read_complete_lines(fh, start, max_lines=batch_rows)
            if not lines:
                break
            lines, end = _one_date(lines, start, end)
            seg = wm.next_seg
        data, first, rows, rejects = _encode_batch(lines, log)
        if rejects:
            at = line_offsets(lines, start)
            quarantine_lines(paths, runtime, path, ident, start, [(raw, why) for raw, why, _ in rejects], wm, first,
                             log=log, stats=stats, offsets=[at[i] for _, _, i in rejects])
        if data is None:
            wm.files[ident] = end
            wm.pending = None
            wm.save()
            continue
        dt = first["emitted_at"][:10]
        if wm.partition_date is None:
            wm.partition_date = dt
            wm.agent_id = first["agent_id"]
            wm.fleet_id = first["fleet_id"]
            wm.runtime = first["runtime"]
        if dt not in wm.partitions:
            wm.partitions.append(dt)
        if not wm.pending:
            wm.pending = {"seg": seg, "file": ident, "start": start, "end": end}
            wm.save()
        prefix = lake.session_prefix(wm.fleet_id, dt, wm.runtime or runtime, wm.agent_id, first["session_id"])
        key = lake.segment_key(prefix, seg)
        try:
            retrying(lambda: store.put(key, data, CREATE), log=log, key=key)
        except PreconditionFailed:
            existing = store.get(key).data
            if existing != data:
                # A different batch already holds this number (e.g. the watermark was lost):
                # never overwrite; take the next free number. Compaction de-duplicates rows.
                log("segment_exists", key=key, detail="different bytes; using the next segment number")
                wm.next_seg = seg + 1
                wm.pending = None
                wm.save()
                continue
        stats.segments += 1
        stats.envelopes += rows
        if observe is not None:
            observe(runtime, lines)
        wm.files[ident] = end
        wm.next_seg = max(wm.next_seg, seg + 1)
        wm.pending = None
        wm.save()
        log("segment_shipped", key=key, rows=rows, bytes=len(data))
    return False


def line_offsets(lines: list[bytes], start: int) -> list[int]:
    """Byte offset of each of ``lines`` (read without their newline from offset ``start``,
    :func:`lib.spool.read_complete_lines`) in its spool file."""
    out, at = [], start
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


QUARANTINED_LINE_MAX = 1 << 20
"""Most bytes of one quarantined spool line kept (the rest is cut, marked ``truncated``)."""


def _field(raw: bytes, name: str) -> str | None:
    """The string value of ``"name":"…"`` in raw bytes that are not (all) JSON, or ``None``."""
    key = f'"{name}":"'.encode()
    i = raw.find(key)
    if i < 0:
        return None
    j = raw.find(b'"', i + len(key))
    return raw[i + len(key):j].decode("utf-8", "replace")[:200] if j > 0 else None


def quarantine_lines(paths, runtime: str, path: str, ident: str, start: int, rejects: list, wm, first: dict | None,
                     *, log, stats: ShipStats, size: int | None = None, offsets: list[int] | None = None) -> None:
    """Keep each spool line that cannot be an event, with its reason: one record per line in the
    quarantine spool (``spool/quarantine/<fleet>.ndjson``), which :func:`ship_quarantine` puts
    create-only at ``quarantine/fleet=<f>/agent=<a>/dt=<d>/<id>.json`` — so nothing a hook wrote
    is lost and the rest of the session ships (docs/operations.md "Quarantined spool lines").

    ``rejects`` = ``[(raw bytes, reason)]`` of the batch read at byte offset ``start`` of the file
    ``path`` (identity ``ident``); ``offsets``: each reject's own line offset (default ``start``
    for all: a single line); ``size``: the line's full length when ``raw`` holds only its head.
    A record is ``{id, kind: "spool_line", fleet_id, agent_id, session_id, runtime, spool_file,
    offset, reason, bytes, sha256, line | line_base64, truncated?, recorded_at}``; its ``id``
    derives from the file, the offset and the bytes, so a pass that crashed after writing it
    and repeats the batch stores it once. Spool lines were redacted before they were written, so
    the kept bytes are too. Counted in ``stats.dropped_lines`` (lines that did not become
    events) and the session's ``_SEALED`` ``dropped_lines``; logged once per batch
    (``spool_lines_quarantined``). :raises OSError: the quarantine spool cannot be written (the
    caller's pass fails and the batch is read again next pass: nothing is lost).
    """
    import base64
    import hashlib

    from urllib.parse import unquote

    from lib.clock import format_time

    first = first or {}
    session = unquote(os.path.basename(path).split(".ndjson")[0])  # the spool file is named for its session
    out = []
    for n, (raw, reason) in enumerate(rejects):
        digest = hashlib.sha256(raw).hexdigest()
        rid = hashlib.sha256(f"{ident}\0{start}\0{n}\0{digest}".encode()).hexdigest()[:32]
        rec = {"id": f"spool-line-{rid}", "kind": "spool_line",
               "fleet_id": wm.fleet_id or first.get("fleet_id") or _field(raw, "fleet_id") or "default",
               "agent_id": wm.agent_id or first.get("agent_id") or _field(raw, "agent_id") or "unknown",
               "session_id": first.get("session_id") or _field(raw, "session_id") or session,
               "runtime": first.get("runtime") or wm.runtime or runtime,
               "spool_file": os.path.basename(path), "offset": offsets[n] if offsets else start, "reason": reason,
               "bytes": size if size is not None else len(raw), "sha256": "sha256:" + digest,
               "recorded_at": format_time()}
        kept = raw[:QUARANTINED_LINE_MAX]
        try:
            rec["line"] = kept.decode("utf-8")
        except UnicodeDecodeError:
            rec["line_base64"] = base64.b64encode(kept).decode()
        if len(kept) < rec["bytes"]:
            rec["truncated"] = True
        out.append(json.dumps(rec, ensure_ascii=True, separators=(",", ":")) + "\n")
    for line in out:  # ship_quarantine renames the file aside every pass: it never needs rotating
        target = paths.quarantine_spool_file(json.loads(line)['fleet_id'])
        spool.append(target, line, sync=True, rotate_bytes=spool.CAP_BYTES)
    stats.dropped_lines += len(rejects)
    stats.last_quarantine_reason = f"{os.path.basename(path)} offset {offsets[-1] if offsets else start}: {rejects[-1][1]}"[:300]
    wm.dropped_lines += len(rejects)
    log("spool_lines_quarantined", file=os.path.basename(path), count=len(rejects), offset=start,
        reasons=sorted({why for _, why in rejects})[:5], detail="kept under quarantine/ with their reason")


def _all_consumed(paths, runtime, group, wm, stats, log) -> bool:
    """True when every spool file of the session is shipped to its end (a torn final line a
    crash left, older than 5 s, is quarantined and counted)."""
    for path in group["files"]:
        try:
            fh = open(path, "rb")
        except FileNotFoundError:
            return False  # rotated since the listing: not this pass
        with fh:
            st = os.fstat(fh.fileno())
            ident, size = spool.identity(st), st.st_size
            if wm.files.get(ident, 0) >= size:
                continue
            _, end = spool.read_complete_lines(fh, wm.files.get(ident, 0))
            if end < size and time.time() - st.st_mtime > 5:
                # a torn final line with no newline, left by a crash: it will never complete.
                fh.seek(end)
                tail = fh.read(min(size - end, QUARANTINED_LINE_MAX + 1))
                quarantine_lines(paths, runtime, path, ident, end, [(tail, "a final line with no newline: its writer "
                                                                    "died mid-write and it will never complete")],
                                 wm, None, log=log, stats=stats, size=size - end)
                wm.files[ident] = size
                wm.save()
            else:
                return False  # not fully shipped yet
    return True


def _read_done(path: str) -> dict:
    """The end marker's contents (``{}`` when unreadable or not an object)."""
    try:
        with open(path, "rb") as fh:
            done = json.loads(fh.read() or b"{}")
    except (OSError, ValueError):
        return {}
    return done if isinstance(done, dict) else {}


def _done_identity(path: str) -> str | None:
    """``dev:inode:mtime_ns`` of an end marker: the backstop runs once per marker (a resumed
    session that ends again writes a new one)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return f"{spool.identity(st)}:{st.st_mtime_ns}"


def _seal(store, paths, runtime, sid, group, wm, done, stats, log) -> None:
    if wm.partition_date is None:  # a session with no envelopes at all: nothing to seal
        _cleanup(group, wm, paths.session_process(runtime, sid))
        return
    from urllib.parse import unquote

    marker = {"session_id": unquote(sid), "runtime": wm.runtime or runtime, "segments": wm.next_seg,
              "dropped_lines": wm.dropped_lines, "partitions": sorted(wm.partitions or [wm.partition_date])}
    if isinstance(done, dict) and isinstance(done.get("transcript_path"), str):
        marker["transcript_path_hash"] = sha256_hex(done["transcript_path"])
    if done.get("event") == "idle":  # no end event came: sealed once idle (lib.idle_seal)
        marker["ended"] = {k: done[k] for k in ("event", "idle_secs", "process")}
    for dt in marker["partitions"]:  # every partition the session's events went to is sealed
        prefix = lake.session_prefix(wm.fleet_id, dt, wm.runtime or runtime, wm.agent_id, unquote(sid))
        try:
            store.put(lake.sealed_key(prefix), json.dumps(marker, sort_keys=True).encode(), CREATE)
        except PreconditionFailed:
            pass  # sealed before (a crash after the PUT, or a resumed session): fine
    wm.sealed = True
    wm.save()
    if not _cleanup(group, wm, paths.session_process(runtime, sid)):
        log("seal_deferred", key=lake.sealed_key(prefix), detail="lines were appended after the last batch; they ship next pass")
        return
    stats.sealed += 1
    if done.get("event") == "idle":
        stats.idle_sealed += 1
        log("session_sealed_idle", key=lake.sealed_key(prefix), idle_secs=done["idle_secs"], process=done["process"],
            detail="no end event came; idle with its runtime process gone or not knowable")
    log("session_sealed", key=lake.sealed_key(prefix), segments=wm.next_seg)


def _cleanup(group: dict, wm, proc_path: str) -> bool:
    """Delete a sealed session's spool files, then forget their identities, then ``.done`` and
    the process record at ``proc_path`` (:mod:`lib.idle_seal`); True when all of it went.

    Each file goes only if nothing was appended past its shipped offset
    (:func:`lib.spool.unlink_if_consumed`, under an exclusive lock appenders respect): a line a
    resumed session or a late capture wrote after the "all consumed" check keeps the file, and
    ``.done``, for the next pass. The identities must go once the files are gone: their inode
    numbers are free again, and the next spool file of a resumed session may get one of them
    (ext4 reuses them at once), which would then look already shipped. They go before
    ``.done``, so a crash in between leaves ``.done`` behind and the next pass does this again.
    The process record goes last: a resumed session's hooks write it again, and a record left by
    a crash only names a process for a session with no spool files, which nothing reads.
    """
    kept = False
    for path in group["files"]:
        gone = spool.unlink_if_consumed(path, wm.files)
        if gone is None:
            kept = True
        elif gone:
            wm.files.pop(gone, None)
    if not kept:
        wm.files = {}
    wm.save()
    if kept:
        return False
    for path in (group.get("done"), proc_path):
        try:
            if path:
                os.unlink(path)
        except FileNotFoundError:
            pass
    return True


def ship_quarantine(store, paths, *, log, stats: ShipStats) -> None:
    """Ship the quarantine spool in the pass that wrote it. Each ``<fleet>.ndjson`` is renamed
    aside to ``….<ms>.ship`` (new appends start a fresh file), its complete lines are put
    create-only (a record's ``id`` names its key, so a repeat stores it once), then the aside
    file is deleted by :func:`lib.spool.unlink_if_consumed` only when it holds no byte past what
    was read: a writer that opened it before the rename and appends late (it writes under a
    shared lock, :func:`lib.spool.append`) keeps it for the next pass, which ships the rest."""
    qdir = paths.quarantine_spool
    try:
        names = sorted(os.listdir(qdir))
    except FileNotFoundError:
        return
    for name in names:
        path = os.path.join(qdir, name)
        if name.endswith(".ndjson"):
            os.rename(path, f"{path}.{int(time.time() * 1000)}.ship")
    for name in sorted(os.listdir(qdir)):
        if not name.endswith(".ship"):
            continue
        path = os.path.join(qdir, name)
        with open(path, "rb") as fh:
            ident = spool.identity(os.fstat(fh.fileno()))
            data = fh.read()
        end = data.rfind(b"\n") + 1  # a line still being written is read next pass
        for raw in data[:end].splitlines():
            try:
                rec = json.loads(raw)
            except ValueError:
                stats.dropped_lines += 1
                continue
            if not isinstance(rec, dict):
                continue
            from lib.ulid import new_ulid

            rid = rec.get("id") or sha256_hex(raw)[7:33]
            key = lake.quarantine_key(rec.get("fleet_id", "default"), rec.get("agent_id", "unknown"),
                                      str(rec.get("recorded_at", ""))[:10] or time.strftime("%Y-%m-%d"),
                                      str(rid) if rec.get("id") else f"{rec.get('event_id', new_ulid())}-{rid}")
            try:
                store.put(key, json.dumps(rec, sort_keys=True).encode(), CREATE)
            except PreconditionFailed:
                pass
            stats.quarantine_records += 1
        spool.unlink_if_consumed(path, {ident: end})


def ship_all(store, paths, *, batch_rows: int = 20000, log=lambda *a, **k: None, should_stop=None,
             observe=None, idle_secs: float | None = None) -> ShipStats:
    """One shipping pass over every runtime spool directory and the quarantine spool.

    A failure in one session (store outage, unreadable watermark) is logged and counted; the
    others still ship, and the failed session's spool stays intact for the next pass.
    ``should_stop()`` (optional) ends the pass early between batches (see :func:`ship_session`).
    ``observe(runtime, lines)`` (the live plane) sees the raw lines of every shipped batch; an
    exception in it is logged and never stops shipping. ``idle_secs``: see :func:`ship_session`.
    """
    if observe is not None:
        watcher = observe

        def observe(runtime, lines):
            try:
                watcher(runtime, lines)
            except Exception as exc:
                log("live_observe_failed", error=f"{type(exc).__name__}: {exc}"[:300])

    stats = ShipStats()
    for runtime in SHIP_RUNTIMES:
        directory = paths.runtime_spool(runtime)
        for stem, group in sorted(spool.session_files(directory).items()):
            if should_stop is not None and should_stop():
                return stats
            try:
                ship_session(store, paths, runtime, stem, group, batch_rows=batch_rows, log=log, stats=stats,
                             should_stop=should_stop, observe=observe, idle_secs=idle_secs)
            except Exception as exc:  # keep going: one session must not stop the pass
                stats.failed(f"{runtime}/{stem}", exc)
                log("ship_failed", session=f"{runtime}/{stem}", error=f"{type(exc).__name__}: {exc}"[:300])
    try:
        ship_quarantine(store, paths, log=log, stats=stats)
    except Exception as exc:
        stats.failed("quarantine", exc)
        log("quarantine_ship_failed", error=f"{type(exc).__name__}: {exc}"[:300])
    return stats
