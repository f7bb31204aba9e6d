"""Shared fixtures: a temporary CTXLAKE_HOME per test, the environment to run role scripts in,
and the path of the fixtures folder. Server fixtures (SeaweedFS) live in their own plugin."""
from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")

pytest_plugins = ["tests.support.s3server", "tests.support.redisserver"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh CTXLAKE_HOME with no config file; returns its path (str)."""
    h = tmp_path / "ctxlake-home"
    h.mkdir()
    for var in ("CTXLAKE_STORE", "CTXLAKE_FLEET_ID", "CTXLAKE_AGENT_ID", "CTXLAKE_SPOOL_DIR",
                "CTXLAKE_CACHE_DIR", "CTXLAKE_LEASE_POLICY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CTXLAKE_HOME", str(h))
    monkeypatch.delenv("CTXLAKE_CONFIG", raising=False)  # an explicit path that names no file is refused
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # so the default place holds no config
    return str(h)


@pytest.fixture
def role_env(home):
    """Environment for running role scripts as subprocesses in the temporary home."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT
    return env


PYTHON = sys.executable
