"""SIGTERM/SIGINT: syncd finishes the current batch, writes watermarks and exits 0 (issue #9)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from lib import config, spool
from lib.store import open_store
from tests.conftest import ROOT
from tests.syncd.conftest import spool_session


def _segments(store, fleet="f") -> list[str]:
    return sorted(e.key for e in store.list(f"sessions/fleet={fleet}/") if e.key.rsplit("/", 1)[-1].startswith("seg-"))


def test_stop_request_ends_the_pass_after_the_current_batch(home, tmp_path, monkeypatch):
    from lib import syncpass
    f = tmp_path / "c.toml"
    f.write_text("[sync]\nbatch_rows = 10\n")
    monkeypatch.setenv("CTXLAKE_CONFIG", str(f))
    cfg = config.load()
    spool_session(cfg.paths, "s-stop", 35)
    store = open_store("memory://graceful-stop")
    flag = {"stop": False}

    def log(event, **fields):
        if event == "segment_shipped":
            flag["stop"] = True  # SIGTERM arrives while the first batch is in flight

    first = syncpass.run_pass(cfg, store, log, should_stop=lambda: flag["stop"])
    assert first["interrupted"] is True and first["cache_refreshed"] is False
    assert first["shipped"] == 10 and len(_segments(store)) == 1
    # the watermark of the batch that was sent is on disk: the backlog is exactly the rest
    left = spool.backlog(cfg.paths.spool_dir, cfg.paths.state_dir)
    assert left["files"] == 1 and left["bytes"] > 0
    # the next start ships the rest, nothing twice
    second = syncpass.run_pass(cfg, store, lambda *a, **k: None)
    assert second["shipped"] == 25 and second["cache_refreshed"] is True
    assert len(_segments(store)) == 4
    assert spool.backlog(cfg.paths.spool_dir, cfg.paths.state_dir)["bytes"] == 0


def _wait_for(url: str, want: int, proc, deadline_s: float = 60) -> bytes:
    """Poll ``url`` until it answers ``want`` (bounded; fails if syncd exits first)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"syncd exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == want:
                    return r.read()
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} never answered {want}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_syncd_daemon_serves_metrics_and_exits_zero_on_signal(home, role_env, tmp_path, free_port, signum):
    cfg_file = tmp_path / "ctxlake.toml"
    cfg_file.write_text(f'fleet_id = "f"\n[sync]\npoll_secs = 0.5\nmaint_every_secs = 0\n'
                        f'metrics_port = {free_port}\nmetrics_addr = "127.0.0.1"\n')
    env = dict(role_env, CTXLAKE_CONFIG=str(cfg_file))
    paths = config.load(env).paths
    spool_session(paths, "s-daemon", 25)
    proc = subprocess.Popen([sys.executable, "syncd.py"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{free_port}"
        ready = json.loads(_wait_for(base + "/readyz", 200, proc))
        assert ready["ready"] is True and ready["alive"] is True
        text = _wait_for(base + "/metrics", 200, proc).decode()
        assert "ctxlake_envelopes_shipped_total 25.0" in text
        assert "ctxlake_spool_backlog_bytes 0.0" in text
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()[-2000:]
    events = [json.loads(line)["event"] for line in err.decode().splitlines() if line.startswith("{")]
    assert "metrics_listening" in events and events[-1] == "syncd_stopped"
    assert "syncd_stopping" in events
    # watermarks were written and the server is gone with the process
    state = os.path.join(paths.state_dir, "claude_code", "s-daemon.json")
    assert json.load(open(state))["next_seg"] == 1
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{free_port}/healthz", timeout=5)


def test_syncd_once_never_opens_the_metrics_port(home, role_env, tmp_path, free_port):
    cfg_file = tmp_path / "ctxlake.toml"
    cfg_file.write_text(f"[sync]\nmetrics_port = {free_port}\n")
    env = dict(role_env, CTXLAKE_CONFIG=str(cfg_file))
    r = subprocess.run([sys.executable, "syncd.py", "--once", "--json"], cwd=ROOT, env=env, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert b"metrics_listening" not in r.stderr
