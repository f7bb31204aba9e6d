"""Handoff notes: from an agent's ``fleet_handoff`` to the next session's briefing (docs/design.md §11).

The path, each leg idempotent so a replay changes nothing:

1. the MCP server spools a ``handoff`` record (``spool/mcp/<fleet>.ndjson``, :mod:`lib.mcp_tools`);
2. syncd writes it create-only to ``handoffs/fleet=<f>/dt=<requested date>/<record_id>.json``
   (:func:`ingest`; the key derives from the record, so a re-delivered record lands on itself);
3. maint reads the last :data:`KEEP_DAYS` days of them (:func:`load_recent`) into the snapshot's
   ``handoffs`` table (:func:`lib.memory.snapshot.build`);
4. every host's syncd mirrors the snapshot: the briefing shows the newest notes with their
   repository (:func:`lib.briefing.render`) and ``fleet_history`` returns them.

A note is one object::

    {record_id, fleet_id, agent_id, session_id?, repo?, branch?, status, summary, next?,
     requested_at}

Every field was redacted by the MCP server before it was spooled (invariant 7); strings are
capped again here because the spool is untrusted input to syncd.
"""
from __future__ import annotations

import json
import time

from lib import mcp_records
from lib.keys import handoff_key, handoffs_prefix
from lib.mcp_records import HANDOFF

KEEP_DAYS = 14
"""Handoffs older than this many days (by their date partition) leave the snapshot."""
SNAPSHOT_MAX = 500
"""Most handoffs one snapshot carries (newest first)."""
STATUSES = ("done", "in_progress", "blocked", "abandoned")
FIELDS = {"record_id": 64, "fleet_id": 200, "agent_id": 200, "session_id": 200, "repo": 512, "branch": 256,
          "status": 20, "summary": 8000, "next": 4000, "requested_at": 40}
"""The fields a note keeps, each with its cap in characters."""


def note(rec: dict) -> dict | None:
    """The note kept for a spooled ``handoff`` record, or ``None`` when the record has no
    ``record_id``, no summary, an unknown status or no ISO ``requested_at`` (logged by the
    caller, never raised)."""
    if rec.get("kind") != HANDOFF:
        return None
    out = {}
    for name, cap in FIELDS.items():
        v = rec.get(name)
        if isinstance(v, str) and v.strip():
            out[name] = v[:cap]
    when = out.get("requested_at", "")
    if not out.get("record_id") or not out.get("summary") or out.get("status") not in STATUSES \
            or len(when) < 10 or not when[:4].isdigit():
        return None
    return out


def ingest(store, records: list[dict], fleet: str, *, log=lambda *a, **k: None) -> dict:
    """Write the ``handoff`` records among ``records`` into the store, create-only.

    Returns ``{"handoffs": written, "replayed": already there, "dropped": malformed}``.
    :raises: store errors (the caller keeps its watermark, so the batch is re-delivered).
    """
    from lib.store import CREATE, PreconditionFailed

    out = {"handoffs": 0, "replayed": 0, "dropped": 0}
    for rec in mcp_records.select(records, (HANDOFF,)):
        n = note(rec)
        if n is None or rec.get("fleet_id") not in (None, fleet):
            out["dropped"] += 1
            log("handoff_dropped", record_id=str(rec.get("record_id"))[:64], detail="malformed record or another fleet")
            continue
        try:
            store.put(handoff_key(fleet, n["requested_at"][:10], n["record_id"]), json.dumps(n, sort_keys=True).encode(), CREATE)
            out["handoffs"] += 1
            log("handoff_shipped", record_id=n["record_id"], agent=n.get("agent_id"), repo=n.get("repo"))
        except PreconditionFailed:
            out["replayed"] += 1
    return out


def load_recent(store, fleet: str, *, now: float | None = None, days: int = KEEP_DAYS) -> list[dict]:
    """The notes of the last ``days`` date partitions, newest first, at most
    :data:`SNAPSHOT_MAX`; objects that are not valid notes are skipped, and a note whose
    ``(session_id, record_id)`` is stored twice (the same request spooled again on a later
    day) is kept once, at its first ``requested_at``."""
    from lib.store import NotFound

    now = time.time() if now is None else now
    dates = {time.strftime("%Y-%m-%d", time.gmtime(now - 86400 * i)) for i in range(days + 1)}
    out = []
    for dt in sorted(dates):
        for entry in store.list(handoffs_prefix(fleet, dt)):
            try:
                data = json.loads(store.get(entry.key).data.decode("utf-8"))
            except (NotFound, ValueError, UnicodeDecodeError, RecursionError):
                continue
            n = note(dict(data, kind=HANDOFF)) if isinstance(data, dict) else None
            if n is not None:
                out.append(n)
    first = {}
    for n in sorted(out, key=lambda n: (n["requested_at"], n["record_id"])):
        first.setdefault((n.get("session_id"), n["record_id"]), n)
    out = sorted(first.values(), key=lambda n: (n["requested_at"], n["record_id"]), reverse=True)
    return out[:SNAPSHOT_MAX]
