"""A new user's reported bad inputs, each fed to the real ``ctxlake.py`` in its own process: one
line on stderr, the documented exit code (docs/operations.md "Exit codes"), never a traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lib.failures import CLOSED_PIPE
from tests.cli.test_errors import ROOT, assert_one_line_failure, box, inited  # noqa: F401 - fixtures


@pytest.mark.parametrize("verb", [("status",), ("sync", "--once"), ("doctor",), ("claims",)])
def test_a_config_that_is_not_utf8_is_a_config_error(box, verb):
    os.makedirs(os.path.dirname(box.config))
    with open(box.config, "wb") as fh:
        fh.write(b'fleet_id = "team-a"\n# caf\xe9 \xff\xfe\x00\n')
    assert_one_line_failure(box.run(*verb), "config", box.config, "not UTF-8")


def test_a_reader_that_goes_away_ends_the_command_quietly(inited):
    """``ctxlake query ... | head -c 10``: the output is far larger than a pipe's buffer, so the
    writer is blocked when the reader closes; it must exit 141 with nothing on stderr."""
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "ctxlake.py"), "query", "SELECT * FROM range(200000)"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=inited.env, cwd=inited.home)
    assert len(p.stdout.read(10)) == 10
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == CLOSED_PIPE, err
    assert [ln for ln in err.splitlines() if "note:" not in ln] == [], err
