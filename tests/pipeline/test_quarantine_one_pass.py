"""One sync pass ships what it quarantined (docs/operations.md "Quarantined spool lines"): after
a single ``run_pass`` every damaged line of a real import is an object under ``quarantine/``,
nothing is left in ``spool/quarantine/`` and ``ctxlake status`` counts no unshipped file; each
record's ``offset`` is the byte offset of its own line in the spool file, not its batch's."""
from __future__ import annotations

import base64
import io
import json
import os

import ctxlake
from lib import config, syncpass
from lib.store import open_store
from tests.pipeline import lakeutil
from tests.pipeline.test_spool_quarantine import _damaged_spool


def _line_starts(data: bytes) -> list[tuple[int, bytes]]:
    out, at = [], 0
    for line in data.split(b"\n"):
        out.append((at, line))
        at += len(line) + 1
    return out


def test_one_pass_ships_the_quarantine_with_each_lines_own_offset(home, monkeypatch):
    monkeypatch.setenv("CTXLAKE_FLEET_ID", lakeutil.FLEET)
    monkeypatch.setenv("CTXLAKE_AGENT_ID", lakeutil.AGENT)
    cfg = config.load()
    store = open_store(cfg.store)
    path, _, damaged = _damaged_spool(cfg.paths)
    with open(path, "rb") as fh:
        starts = _line_starts(fh.read())
    summary = syncpass.run_pass(cfg, store, lambda *a, **k: None)
    assert summary["errors"] == 0 and summary["sealed"] == 1, summary
    kept = [json.loads(store.get(e.key).data) for e in store.list(f"quarantine/fleet={lakeutil.FLEET}/")]
    kept = [o for o in kept if o.get("kind") == "spool_line"]
    assert len(kept) == len(damaged)
    for o in kept:
        raw = o["line"].encode("utf-8") if "line" in o else base64.b64decode(o["line_base64"])
        at = [at for at, line in starts if line == raw] or [at for at, line in starts if line.startswith(raw)]
        assert at == [o["offset"]], (raw[:60], o["offset"])  # a fragment cut by a crash: its line's offset
    assert len({o["offset"] for o in kept}) == len(kept)
    assert os.listdir(cfg.paths.quarantine_spool) == []
    out = io.StringIO()
    assert ctxlake.main(["status", "--json"], stdout=out) == 0
    assert json.loads(out.getvalue())["spool_backlog"]["files"] == 0
