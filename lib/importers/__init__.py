"""Importers: a runtime's on-disk history → redacted envelopes in the spool (``ctxlake import``).

Imported envelopes carry ``imported: true`` and the event ids of :mod:`lib.identity` (derived
from the runtime's own ids, the same a hook derives), so importing the same history twice, or
after the hooks captured it, duplicates nothing in the lake. They go
through the same redaction as the hook (invariant 7) and land in ``spool/import/``, where syncd
ships and seals them like any other session.
"""
from __future__ import annotations



class ImportResult:
    """Per-source counts: ``path``, ``sessions`` (ids), ``envelopes``, ``skipped_lines`` (not
    JSON, or cut), ``repaired_lines`` (invalid UTF-8 replaced), ``records``."""

    def __init__(self, path: str):
        self.path = path
        self.sessions: set = set()
        self.envelopes = 0
        self.skipped_lines = 0
        self.records = 0
        self.repaired_lines = 0
