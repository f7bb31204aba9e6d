"""A host where MCP never ran has no ``spool/mcp/``: a sync pass says nothing about reclaiming it
and counts no error. A real reclaim failure (the lock path unusable) is logged and counted in the
pass's ``errors``. Both through the real ``syncd.py --once --json`` process."""
from __future__ import annotations

import json
import os
import subprocess

from lib.paths import Paths
from tests.conftest import PYTHON, ROOT

HANG_GUARD = 300  # seconds; only stops a broken child from hanging the suite, never asserted on


def _once(env):
    r = subprocess.run([PYTHON, os.path.join(ROOT, "syncd.py"), "--once", "--json"], capture_output=True, text=True,
                       env=env, timeout=HANG_GUARD)
    logs = [json.loads(ln) for ln in r.stderr.splitlines() if ln.startswith("{")]
    return r, json.loads(r.stdout.strip().splitlines()[-1]), logs


def test_no_mcp_spool_is_normal_and_a_real_reclaim_failure_counts(role_env, home):
    env = dict(role_env, CTXLAKE_FLEET_ID="f", CTXLAKE_AGENT_ID="a")
    r, summary, logs = _once(env)
    assert not [ln for ln in logs if ln["event"].startswith("mcp_spool_reclaim")], r.stderr
    assert not [ln for ln in logs if ln["level"] == "error"], r.stderr
    assert summary["errors"] == 0 and r.returncode == 0
    paths = Paths.from_env(env)
    os.makedirs(paths.mcp_spool_lock("f"))  # a directory where the lock file must be: open() fails
    with open(paths.mcp_spool("f"), "w", encoding="utf-8") as fh:
        fh.write("")
    r, summary, logs = _once(env)
    failed = [ln for ln in logs if ln["event"] == "mcp_spool_reclaim_failed"]
    assert failed and failed[0]["level"] == "error"
    assert summary["errors"] >= 1 and r.returncode != 0
