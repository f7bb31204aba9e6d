"""A full disk is never silent (issue #16 item 13): when the hook can write neither its event nor
``hook-errors.log``, it records the loss in the lost-events ledger (``lib.lost_events``), which
needs no new block, and on stderr; syncd logs ``hook_events_lost`` and exports it on
``/metrics``, and ``ctxlake status`` shows it.

The full disk is made with ``RLIMIT_FSIZE`` in the hook's own process, which draws the same
boundary a full filesystem does: every write that would grow a file past the limit is refused
(``EFBIG`` where the disk says ``ENOSPC``; the hook treats both as the ``OSError`` they are),
while overwriting bytes already allocated below it succeeds. The log and the session's spool
file already hold the limit's worth of earlier lines, as on a disk that filled up mid-session.
The hook runs as Claude Code runs it (``python -I -S hook.py``, plus ``-B``: under the limit a
``.pyc`` write is cut short rather than refused, and would leave a truncated cache file behind),
synchronously and detached.
"""
from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys

import pytest

import ctxlake
from lib import config, lost_events, spool, syncpass
from lib.metrics import SyncdMetrics
from lib.store import open_store
from tests.conftest import FIXTURES, ROOT

LIMIT = lost_events.SIZE  # the ledger lies wholly below the limit: it can be overwritten, nothing can grow


def _full_disk():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as ENOSPC would
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def _payload() -> dict:
    with open(os.path.join(FIXTURES, "claude-hooks", "serverless-plugins__user_prompt_submit.json"), encoding="utf-8") as fh:
        return json.load(fh)[0]


def _fill(path: str, line: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "ab") as fh:
        while fh.tell() < LIMIT:
            fh.write(line)


@pytest.mark.parametrize("mode", ["sync", "detached"])
def test_a_hook_on_a_full_disk_is_counted_where_the_operator_looks(home, role_env, monkeypatch, mode):
    monkeypatch.setenv("CTXLAKE_FLEET_ID", "f")
    cfg = config.load()
    store = open_store(cfg.store)
    events = []
    first = syncpass.run_pass(cfg, store, lambda e, **kw: events.append((e, kw)))
    assert first["hook_lost"] == 0 and os.path.getsize(cfg.paths.hook_lost) == lost_events.SIZE  # reserved

    payload = _payload()
    _fill(cfg.paths.hook_errors, b'{"ts":"2026-11-30T00:00:00Z","step":"map","error":"an older line"}\n')
    _fill(cfg.paths.session_spool("claude_code", payload["session_id"]), b'{"older": "line of this session"}\n')
    logged = os.path.getsize(cfg.paths.hook_errors)

    env = dict(role_env, CTXLAKE_FLEET_ID="f", CTXLAKE_AGENT_ID="a")
    env.pop("CTXLAKE_HOOK_SYNC", None)
    if mode == "sync":
        env["CTXLAKE_HOOK_SYNC"] = "1"
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", os.path.join(ROOT, "hook.py"), "claude_code"],
                          input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=120,
                          preexec_fn=_full_disk)
    assert proc.returncode == 0 and isinstance(json.loads(proc.stdout), dict)  # the runtime is answered: fail open
    if mode == "detached":
        assert spool.wait_for_hooks(cfg.paths.state_dir, timeout=60)
    else:
        err = [json.loads(ln) for ln in proc.stderr.decode().splitlines() if ln.startswith("{")]
        assert err and err[-1]["step"] == "capture" and "File too large" in err[-1]["error"], proc.stderr
    assert os.path.getsize(cfg.paths.hook_errors) == logged  # the log could not grow

    ledger = lost_events.read(cfg.paths.hook_lost)
    assert ledger["count"] == 1
    [rec] = ledger["recent"]
    assert rec["runtime"] == "claude_code" and rec["event"] == "UserPromptSubmit" and rec["step"] == "capture"
    assert "File too large" in rec["error"] and "hook-errors.log" in rec["error"]

    out = io.StringIO()
    assert ctxlake.main(["status"], stdout=out) == 0
    [line] = [ln for ln in out.getvalue().splitlines() if ln.startswith("hook LOST")]
    assert "1 time(s)" in line and "UserPromptSubmit" in line

    events.clear()
    summary = syncpass.run_pass(cfg, store, lambda e, **kw: events.append((e, kw)))
    [(_, lost)] = [(e, kw) for e, kw in events if e == "hook_events_lost"]
    assert lost["count"] == 1 and lost["new"] == 1 and lost["last"]["event"] == "UserPromptSubmit"
    assert summary["hook_lost"] == 1
    metrics = SyncdMetrics(cfg.paths, "f")
    metrics.observe_pass(summary)
    assert metrics.registry.get_sample_value("ctxlake_hook_events_lost") == 1
    events.clear()
    syncpass.run_pass(cfg, store, lambda e, **kw: events.append((e, kw)))
    assert not [e for e, _ in events if e == "hook_events_lost"], "reported once, not every pass"


def test_the_ledger_keeps_the_newest_records_and_never_grows(tmp_path):
    path = str(tmp_path / "hook-lost.bin")
    assert lost_events.record(path, "t", "claude_code", "Stop", "capture", "x") is False  # no ledger: nothing written
    assert not os.path.exists(path)
    assert lost_events.reserve(path) is True and lost_events.reserve(path) is False
    for i in range(lost_events.SLOTS + 5):
        assert lost_events.record(path, f"t{i}", "cursor", "postToolUse", "capture", "E" * 1000 + f" {i}")
    assert os.path.getsize(path) == lost_events.SIZE
    got = lost_events.read(path)
    assert got["count"] == lost_events.SLOTS + 5
    assert [r["ts"] for r in got["recent"]] == [f"t{i}" for i in range(lost_events.SLOTS + 4, 4, -1)]
    assert all(len(json.dumps(r, separators=(",", ":"))) < lost_events.SLOT and r["error"].startswith("EEEE")
               for r in got["recent"])  # a long error is cut to fit its slot
