"""Text another fleet member wrote into the store never reaches an operator's terminal with its
control characters (session 4 finding 7): the tester's agent id and lease reason, fed through the
real ``ctxlake.py`` of two hosts sharing one file:// store."""
from __future__ import annotations

import os

from tests.cli.test_errors import Box
from tests.cli.test_user_reports import _repo

HOSTILE_ID = "mal\x1b]0;PWNED\x07\x1b[2J"  # retitles the terminal, then clears the screen
HOSTILE_REASON = "r\x1b[31mRED\x9b2J"  # a CSI colour and a C1 CSI


def _no_controls(text: str) -> None:
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F})
    assert not bad, (bad, text)


def test_lease_list_and_status_print_no_control_characters_from_the_store(inited):
    store = "file://" + os.path.join(inited.tmp, "lake")
    other = Box(os.path.join(inited.tmp, "host-f"))
    r = other.run("init", "--store", store, "--fleet", "team-a", "--agent-id", "mallory")
    assert r.returncode == 0, r.stderr
    repo = _repo(other)
    r = other.run("lease", "acquire", "src/b.py", "--holder", HOSTILE_ID, "--reason", HOSTILE_REASON, "--ttl", "600",
                  cwd=repo)
    assert r.returncode == 0, r.stderr
    listed = inited.run("lease", "list", cwd=_repo(inited))
    assert listed.returncode == 0, listed.stderr
    _no_controls(listed.stdout)
    assert "held by mal]0;PWNED[2J (r[31mRED2J)" in listed.stdout, listed.stdout  # the text stays readable
    assert inited.run("sync", "--once").returncode == 0
    status = inited.run("status")
    assert status.returncode == 0, status.stderr
    _no_controls(status.stdout)
    assert "src/b.py held by mal]0;PWNED[2J" in status.stdout, status.stdout
