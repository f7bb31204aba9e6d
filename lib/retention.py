"""Retention: what maint deletes, and the lake's size (docs/lake.md, "Retention").

Where it sits: the last step of a maintenance pass, under the maintenance lease, after the
pass's Delta commit and before the snapshot is published. Four things are deleted, each with a
knob in ``[lake]`` (:class:`lib.config.LakeConfig`):

- table files no longer referenced by the current Delta version, once they have been
  unreferenced for ``vacuum_hours`` (Delta VACUUM; also files of a commit that never landed);
- bronze segments the ledger (:class:`lib.lake.Ledger`) says the table holds, ``bronze_grace_hours``
  after the commit that merged them; ``_SEALED`` and ``digest.json`` stay (they are tiny and say
  the session exists), quarantined segments are never deleted;
- snapshot blobs that are neither the current one nor the one before it, once older than
  ``snapshot_keep_hours``;
- Delta log entries older than ``log_retention_days`` behind the newest checkpoint (delta-rs
  writes a checkpoint every ``checkpoint_every`` commits).

It refuses to delete anything when the table cannot be read, and never touches ``live/``,
``claims/`` or ``quarantine/``.
"""
from __future__ import annotations

import json


def _vacuum_candidates(dt, hours: int, uri: str, sizes: dict) -> list[str]:
    """Paths (relative to the table root) a VACUUM with ``hours`` retention would delete now and
    that still exist (the log keeps naming a removed file until its tombstone expires)."""
    found = (_rel(p, uri) for p in dt.vacuum(retention_hours=hours, dry_run=True, enforce_retention_duration=False,
                                              full=True))
    return sorted(p for p in found if p in sizes)


def _sizes(store, root: str) -> dict[str, int]:
    """``{path relative to root: bytes}`` of every object under the table root, from one listing."""
    return {e.key[len(root):]: e.size for e in store.list(root)}


def _rel(path: str, root_uri: str) -> str:
    """A vacuum path made relative to the table root (delta-rs answers either form)."""
    from urllib.parse import unquote

    path = unquote(path)
    root_uri = root_uri.rstrip("/") + "/"
    for prefix in (root_uri, "file://" + root_uri):
        if path.startswith(prefix):
            return path[len(prefix):]
    return path.lstrip("/")


def table_stats(store, fleet: str, vacuum_hours: int) -> dict:
    """The table's size and what vacuum would free.

    Returns ``{"version", "files", "bytes"}`` (live data files of the current version),
    ``"unreferenced_files"/"unreferenced_bytes"`` (every data file no version needs any more:
    what vacuum frees once each is ``vacuum_hours`` old) and ``"vacuum_due_files"/
    "vacuum_due_bytes"`` (what the next vacuum deletes now), plus ``"state_bytes"`` (the Delta
    log and maint's ledger). ``{}`` when there is no table. :raises lib.lake.TableError."""
    from lib import lake

    dt = lake.open_table(store, fleet)
    if dt is None:
        return {}
    root = lake.table_root(fleet)
    uri, _ = lake.location(store, fleet)
    sizes = _sizes(getattr(store, "lake", store), root)
    live = lake._add_actions(dt)
    unref = _vacuum_candidates(dt, 0, uri, sizes)
    due = _vacuum_candidates(dt, vacuum_hours, uri, sizes)
    state = sum(n for k, n in sizes.items() if k.startswith(("_delta_log/", "_ctxlake/")))
    return {"version": dt.version(), "files": len(live), "bytes": sum(int(a["size_bytes"] or 0) for a in live),
            "unreferenced_files": len(unref), "unreferenced_bytes": sum(sizes.get(p, 0) for p in unref),
            "vacuum_due_files": len(due), "vacuum_due_bytes": sum(sizes.get(p, 0) for p in due),
            "state_bytes": state}


def vacuum(store, fleet: str, hours: int, log) -> dict:
    """Delete table files unreferenced for ``hours`` or more; ``{"files", "bytes"}`` freed.
    Runs (and so commits VACUUM START/END to the log) only when there is something to delete;
    then drops log entries past ``delta.logRetentionDuration`` behind the newest checkpoint."""
    from lib import lake

    dt = lake.open_table(store, fleet)
    if dt is None:
        return {"files": 0, "bytes": 0}
    root = lake.table_root(fleet)
    uri, _ = lake.location(store, fleet)
    sizes = _sizes(getattr(store, "lake", store), root)
    due = _vacuum_candidates(dt, hours, uri, sizes)
    freed = 0
    if due:
        freed = sum(sizes[p] for p in due)
        dt.vacuum(retention_hours=hours, dry_run=False, enforce_retention_duration=False, full=True)
        log("lake_vacuumed", files=len(due), bytes=freed)
    dt = lake.open_table(store, fleet)
    dt.cleanup_metadata()
    return {"files": len(due), "bytes": freed}


def bronze(store, ledger, grace_hours: int, now: float, log) -> dict:
    """Delete bronze segments the table has held for ``grace_hours`` (0 = never); ``{"segments",
    "bytes"}`` deleted. The ledger forgets them (so it does not grow forever) and is saved."""
    from lib import lake
    from lib.store import NotFound

    if grace_hours <= 0:
        return {"segments": 0, "bytes": 0}
    cutoff = now - grace_hours * 3600
    due = sorted(k for k, at in ledger.segments.items() if at and at <= cutoff and k not in ledger.quarantined)
    sizes = {e.key: e.size for e in store.list(lake.fleet_sessions_prefix(ledger.fleet))} if due else {}
    freed = 0
    for key in due:
        freed += sizes.get(key, 0)
        try:
            store.delete(key)
        except NotFound:
            pass
        del ledger.segments[key]
    if due:
        ledger.save()
        log("bronze_segments_deleted", segments=len(due), bytes=freed)
    return {"segments": len(due), "bytes": freed}


def snapshot_blobs(store, fleet: str, keep_hours: int, now: float, log) -> dict:
    """Delete snapshot blobs of ``fleet`` other than the current one and the one before it
    (``current.json``'s ``sha256`` and ``previous``) once older than ``keep_hours``;
    ``{"blobs", "bytes"}`` deleted. Nothing is deleted while the pointer is unreadable."""
    from lib import lake
    from lib.store import NotFound

    try:
        ptr = json.loads(store.get(lake.snapshot_pointer_key(fleet)).data)
        keep = {ptr["sha256"], ptr.get("previous")}
    except (NotFound, ValueError, KeyError, TypeError):
        return {"blobs": 0, "bytes": 0}
    cutoff = now - keep_hours * 3600
    prefix = lake.snapshot_pointer_key(fleet).rsplit("/", 1)[0] + "/"
    deleted, freed = 0, 0
    for e in list(store.list(prefix)):
        name = e.key[len(prefix):]
        if not name.endswith(".sqlite") or name[:-7] in keep:
            continue
        if e.last_modified is None or e.last_modified > cutoff:
            continue
        try:
            store.delete(e.key)
        except NotFound:
            continue
        deleted += 1
        freed += e.size
    if deleted:
        log("snapshot_blobs_deleted", blobs=deleted, bytes=freed)
    return {"blobs": deleted, "bytes": freed}
