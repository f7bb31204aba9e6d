"""Redaction: nothing that looks like a secret reaches disk (docs/design.md §7, invariant 7).

The package's public surface; the rules live in :mod:`lib.redact.providers` (being split into
one module per concept) and :mod:`lib.redact.cmdline`."""
from __future__ import annotations

from lib.redact.providers import (  # noqa: F401
    CLEAN, ENTROPY_MIN_LEN, ENTROPY_THRESHOLD, ENTROPY_THRESHOLD_MIXED, MAX_SCAN_BYTES, MAX_SCAN_CHARS,
    PLACEHOLDER, PLACEHOLDER_CARD, PLACEHOLDER_SECRET, PLACEHOLDER_SSN, STATUS_ORDER, Outcome, _DOT_MARKERS,
    _START_MARKERS, denied_in_command, denied_path, fold, fold_confusables, scrub, scrub_deep, shannon_entropy,
    withheld, withhold_path)
