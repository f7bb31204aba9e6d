"""``make test`` installs or requires every server its tests need and prints its skips (issue 18, item 6)."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_make_test_requires_the_servers_and_prints_the_skip_summary():
    r = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "apt-get install -y -qq redis-server" in r.stdout  # installed when missing (as root)
    assert "redis-server is missing and cannot be installed here" in r.stdout  # else a loud failure
    pytest_line = [ln for ln in r.stdout.splitlines() if "-m pytest" in ln][-1]
    assert "CTXLAKE_TEST_REQUIRE_SERVERS=1" in pytest_line and " -rs " in pytest_line


def test_a_missing_server_fails_under_make_test_and_skips_otherwise(tmp_path):
    (tmp_path / "test_needs_server.py").write_text(
        "from tests.support.require import missing_server\n\n"
        "def test_needs_it():\n    missing_server('redis-server not installed')\n")
    env = {k: v for k, v in os.environ.items() if k != "CTXLAKE_TEST_REQUIRE_SERVERS"}
    env["PYTHONPATH"] = ROOT
    argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)]
    plain = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and "SKIPPED" in plain.stdout and "redis-server not installed" in plain.stdout
    strict = subprocess.run(argv, cwd=tmp_path, env=dict(env, CTXLAKE_TEST_REQUIRE_SERVERS="1"), capture_output=True,
                            text=True, timeout=120)
    assert strict.returncode == 1 and "redis-server not installed" in strict.stdout and "make test requires" in strict.stdout
