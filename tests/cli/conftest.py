"""Fixtures of the CLI tests: ``box``, a new user (tests.cli.test_errors.Box), and ``inited``,
that user after ``ctxlake init`` (fleet team-a, a file:// lake under the box)."""
from __future__ import annotations

import os

import pytest

from tests.cli.test_errors import Box


@pytest.fixture
def box(tmp_path):
    return Box(tmp_path)


@pytest.fixture
def inited(box):
    r = box.run("init", "--store", "file://" + os.path.join(box.tmp, "lake"), "--fleet", "team-a", "--agent-id", "alice")
    assert r.returncode == 0, r.stderr
    return box
