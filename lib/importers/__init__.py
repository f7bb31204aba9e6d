"""Importers: a runtime's on-disk history → redacted envelopes in the spool (``ctxlake import``).

Imported envelopes carry ``imported: true`` and deterministic event ids (derived from the
source record), so importing the same history twice duplicates nothing in the lake. They go
through the same redaction as the hook (invariant 7) and land in ``spool/import/``, where syncd
ships and seals them like any other session.
"""
