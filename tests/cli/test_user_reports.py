"""A new user's reported bad inputs, each fed to the real ``ctxlake.py`` in its own process: one
line on stderr, the documented exit code (docs/operations.md "Exit codes"), never a traceback."""
from __future__ import annotations

import os

import pytest

from tests.cli.test_errors import Box, assert_one_line_failure


@pytest.fixture
def box(tmp_path):
    return Box(tmp_path)


@pytest.fixture
def inited(box):
    r = box.run("init", "--store", "file://" + os.path.join(box.tmp, "lake"), "--fleet", "team-a", "--agent-id", "alice")
    assert r.returncode == 0, r.stderr
    return box


@pytest.mark.parametrize("verb", [("status",), ("sync", "--once"), ("doctor",), ("claims",)])
def test_a_config_that_is_not_utf8_is_a_config_error(box, verb):
    os.makedirs(os.path.dirname(box.config))
    with open(box.config, "wb") as fh:
        fh.write(b'fleet_id = "team-a"\n# caf\xe9 \xff\xfe\x00\n')
    assert_one_line_failure(box.run(*verb), "config", box.config, "not UTF-8")
