"""Consumers of the MCP spool ``spool/mcp/<fleet>.ndjson[.<n>]`` (DESIGN.md §3, §11).

The MCP server appends kind-tagged records (``lease_request``, ``lease_release``, ``proposed``,
``handoff``, ...). Several parts of syncd consume different kinds, so each consumer keeps its
own watermark — ``spool/.state/mcp/<consumer>/<fleet>.json`` = ``{"files": {"<dev>:<inode>":
{"offset", "kinds": [every kind seen]}}}``, keyed by file identity like the session
watermarks — and reads every line, taking its own kinds and recording the others it saw.

A spool file is deleted only when every consumer in :data:`CONSUMERS` has read it to the end
*and* every kind any of them saw in it is handled by one of them (:func:`reap`): a file holding
a ``proposed`` record stays until a consumer of ``proposed`` exists and has read it. The live
file is first renamed aside (so new appends go to a fresh one) and deleted on a later pass once
it has been quiet for ``settle_secs`` and consumed again — the pattern the quarantine shipper
uses. Standard library only.
"""
from __future__ import annotations

import json
import os
import time

from lib import spool

CONSUMERS = {"leases": ("lease_request", "lease_release")}
"""Registered consumers and the record kinds each one handles. Add one here when a new part of
syncd consumes the MCP spool (its watermark starts at 0 for files already there)."""


def _state_path(paths, consumer: str, fleet_id: str) -> str:
    from lib.paths import safe_segment

    return os.path.join(paths.state_dir, "mcp", safe_segment(consumer), safe_segment(fleet_id) + ".json")


def _load_marks(path: str) -> dict:
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
        files = data.get("files") if isinstance(data, dict) else None
        return files if isinstance(files, dict) else {}
    except (OSError, ValueError):
        return {}


def _files(paths, fleet_id: str) -> list[str]:
    """This fleet's MCP spool files, oldest rotation (and set-aside) first, live file last."""
    from lib.paths import safe_segment

    group = spool.session_files(paths.runtime_spool("mcp")).get(safe_segment(fleet_id))
    return list(group["files"]) if group else []


class Batch:
    """Records of one consumer's kinds read in one go: ``records`` (dicts, oldest first);
    :meth:`commit` advances the watermark through the ``n`` first of them (or all)."""

    def __init__(self, path: str, marks: dict, records: list, positions: list, final: dict):
        self._path, self._marks = path, marks
        self.records = records
        self._positions = positions  # per record: {ident: (offset, kinds)} marks after it
        self._final = final          # marks after the whole batch (incl. foreign lines)

    def commit(self, n: int | None = None) -> None:
        """Persist progress through record ``n`` (default: the whole batch, including the
        other consumers' lines read past the last own record)."""
        marks = self._final if n is None or n >= len(self.records) else (self._positions[n - 1] if n > 0 else None)
        if marks is None:
            return
        spool.atomic_write(self._path, json.dumps({"files": marks, "updated_at": time.time()}, sort_keys=True).encode())


def read(paths, fleet_id: str, consumer: str, max_records: int = 1000) -> Batch:
    """Read this consumer's new records (kinds from :data:`CONSUMERS`) from the fleet's MCP
    spool. Lines that are not JSON objects with a string ``kind`` are skipped (recorded as kind
    ``"?"``: nobody can consume them, so they do not hold a file back)."""
    kinds = CONSUMERS[consumer]
    state = _state_path(paths, consumer, fleet_id)
    marks = _load_marks(state)
    records, positions = [], []
    current = {k: dict(v) for k, v in marks.items()}
    for f in _files(paths, fleet_id):
        ident = spool.file_identity(f)
        if ident is None:
            continue
        m = current.setdefault(ident, {"offset": 0, "kinds": []})
        if len(records) >= max_records:
            break
        lines, _ = spool.read_complete_lines(f, int(m.get("offset") or 0))
        off = int(m.get("offset") or 0)
        for raw in lines:
            off += len(raw) + 1
            try:
                rec = json.loads(raw)
            except ValueError:
                rec = None
            kind = rec.get("kind") if isinstance(rec, dict) and isinstance(rec.get("kind"), str) else "?"
            if kind not in m["kinds"]:
                m["kinds"] = sorted(set(m["kinds"]) | {kind})
            m["offset"] = off
            if kind in kinds:
                records.append(rec)
                positions.append({k: dict(v) for k, v in current.items()})
                if len(records) >= max_records:
                    break
    live = {spool.file_identity(f) for f in _files(paths, fleet_id)}
    final = {k: v for k, v in current.items() if k in live}
    return Batch(state, marks, records, positions, final)


def reap(paths, fleet_id: str, *, settle_secs: float = 2.0, log=None) -> int:
    """Delete (or set aside) this fleet's MCP spool files that every consumer has finished.

    A rotated or set-aside file is deleted when quiet for ``settle_secs`` and fully consumed;
    the live file, when fully consumed, is renamed aside for a later pass. Returns the number
    of files deleted.
    """
    handled = {k for kinds in CONSUMERS.values() for k in kinds} | {"?"}
    marks = {c: _load_marks(_state_path(paths, c, fleet_id)) for c in CONSUMERS}
    files = _files(paths, fleet_id)
    deleted = 0
    for f in files:
        ident = spool.file_identity(f)
        try:
            st = os.stat(f)
        except OSError:
            continue
        seen, done = set(), True
        for c in CONSUMERS:
            m = marks[c].get(ident) or {}
            if int(m.get("offset") or 0) < st.st_size:
                done = False
            seen |= set(m.get("kinds") or [])
        if not done or not seen <= handled or st.st_size == 0:
            continue
        if f.endswith(".ndjson"):
            spool.rotate(f)  # new appends go to a fresh file; this one goes on a later pass
            continue
        if time.time() - st.st_mtime < settle_secs:
            continue
        os.unlink(f)
        deleted += 1
        for c in CONSUMERS:  # forget the inode: a new spool file may reuse it
            if marks[c].pop(ident, None) is not None:
                spool.atomic_write(_state_path(paths, c, fleet_id),
                                   json.dumps({"files": marks[c], "updated_at": time.time()}, sort_keys=True).encode())
        if log:
            log("mcp_spool_reaped", file=os.path.basename(f), bytes=st.st_size)
    return deleted
