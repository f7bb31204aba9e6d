"""Logging set up once per process (docs/design.md §14): daemons write one JSON object per line on
stderr (``kubectl logs`` friendly); every event is a short phrase plus fields.

Usage::

    log = logs.setup("syncd", fleet_id="f", agent_id="a")
    log("segment_shipped", key="sessions/...", rows=120)

Library code takes a ``log(event, **fields)`` callable instead of configuring anything itself.
"""
from __future__ import annotations

import json
import sys
import time


def setup(role: str, stream=None, quiet: bool = False, **bound):
    """Return ``log(event, **fields)`` writing ``{"ts", "level", "role", "event", **bound, **fields}``.

    ``level`` is ``error`` for events ending in ``_failed``/``_error``, ``warn`` for
    ``*_dropped``/``*_retry``/``*_lost``, else ``info``; a ``level=`` field given by the caller wins
    (an event whose name does not say it). ``quiet`` drops ``info`` lines.
    """
    out = stream or sys.stderr

    def log(event: str, **fields):
        level = fields.pop("level", None) or ("error" if event.endswith(("_failed", "_error")) else
                 "warn" if event.endswith(("_dropped", "_retry", "_lost", "_garbage", "_exists")) else "info")
        if quiet and level == "info":
            return
        rec = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z", "level": level, "role": role,
               "event": event, **bound, **fields}
        try:
            out.write(json.dumps(rec, default=str) + "\n")
            out.flush()
        except (OSError, ValueError):
            pass

    return log
