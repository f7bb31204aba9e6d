"""Importers: a runtime's on-disk history → redacted envelopes in the spool (``ctxlake import``).

Imported envelopes carry ``imported: true`` and deterministic event ids (derived from the
source record), so importing the same history twice duplicates nothing in the lake. They go
through the same redaction as the hook (invariant 7) and land in ``spool/import/``, where syncd
ships and seals them like any other session.
"""
from __future__ import annotations

import hashlib


def deterministic_event_id(ts_ms: int, *parts: str) -> str:
    """A ULID from a source record: its time (ms) + 80 bits of sha256 of ``parts`` joined with
    NUL, so re-importing the same record yields the same ``event_id`` (the lake de-duplicates)."""
    from lib.ulid import _encode

    rand = int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:10], "big")
    return _encode(max(0, ts_ms), 10) + _encode(rand, 16)


class ImportResult:
    """Per-source counts: ``path``, ``sessions`` (ids), ``envelopes``, ``skipped_lines`` (not
    JSON, or cut), ``repaired_lines`` (invalid UTF-8 replaced), ``records``,
    ``untitled_orphans`` (titles naming a session with no records in the file)."""

    def __init__(self, path: str):
        self.path = path
        self.sessions: set = set()
        self.envelopes = 0
        self.skipped_lines = 0
        self.records = 0
        self.repaired_lines = 0
        self.untitled_orphans = 0
