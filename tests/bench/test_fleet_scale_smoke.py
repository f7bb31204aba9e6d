"""Smoke test: ``bench/fleet_scale.py`` runs a tiny fleet against a real redis-server and prints a row."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support.redisserver import redis_binary
from tests.support.require import missing_server

pytestmark = pytest.mark.redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_fleet_scale_prints_a_redis_row():
    if not redis_binary():
        missing_server("redis-server not installed: apt-get install redis-server (make test does)")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "fleet_scale.py"), "--sizes", "5",
                          "--seconds", "2", "--backends", "redis"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert re.search(r"^redis\s+5\s+\d+\.\d", out.stdout, re.M), out.stdout + out.stderr
    assert "verdict redis:" in out.stdout
