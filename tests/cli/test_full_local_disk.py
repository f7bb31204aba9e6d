"""``ctxlake sync --once`` on a full local disk (session 4 finding 9): CTXLAKE_HOME on a 2 MiB
tmpfs filled to the last byte, the store on another filesystem, a real session spooled by the
hook first. The pass must exit 6 ("the local disk refused a write", docs/operations.md "Exit
codes"), not 4 ("store"), and ``status``'s ``next`` line must name the disk, not "nothing"."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cli.test_errors import ROOT, Box, assert_one_line_failure

PAYLOAD = os.path.join(ROOT, "tests", "fixtures", "claude-hooks", "attio-mcp-server__pre_tool_use.json")


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield str(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(directory: str) -> None:
    with open(os.path.join(directory, "fill"), "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    with open(os.path.join(directory, "fill-tail"), "wb", buffering=0) as fh:  # the last partial block
        try:
            while True:
                fh.write(b"\0" * 512)
        except OSError:
            pass


def test_sync_once_on_a_full_local_disk_exits_6_and_status_names_the_disk(tmp_path, small_disk):
    home = os.path.join(small_disk, "ctxhome")
    box = Box(tmp_path / "box")
    box.env["CTXLAKE_HOME"] = home
    r = box.run("init", "--store", "file://" + str(tmp_path / "store"), "--fleet", "team-a", "--agent-id", "alice")
    assert r.returncode == 0, r.stderr
    for p in json.load(open(PAYLOAD))[:3]:  # a real session in the spool, through the hook as installed
        h = subprocess.run([sys.executable, "-I", "-S", os.path.join(ROOT, "hook.py"), "claude_code",
                            p["hook_event_name"], "--fleet=team-a", "--agent=alice", f"--home={home}"],
                           input=json.dumps(p).encode(), capture_output=True, env=box.env, timeout=120)
        assert h.returncode == 0
    assert box.run("sync", "--once").returncode == 0  # one good pass first: status has a last sync
    for p in json.load(open(PAYLOAD))[3:6]:
        subprocess.run([sys.executable, "-I", "-S", os.path.join(ROOT, "hook.py"), "claude_code",
                        p["hook_event_name"], "--fleet=team-a", "--agent=alice", f"--home={home}"],
                       input=json.dumps(p).encode(), capture_output=True, env=box.env, timeout=120)
    _fill(small_disk)
    r = box.run("sync", "--once")
    line = assert_one_line_failure(r, "disk", "local disk", "No space left on device", "free space")
    assert "doctor" not in line, line
    st = box.run("status")
    assert st.returncode == 0, st.stderr
    nxt = next(ln for ln in st.stdout.splitlines() if ln.startswith("next"))
    assert "free space" in nxt and home in nxt and "nothing" not in nxt, st.stdout
