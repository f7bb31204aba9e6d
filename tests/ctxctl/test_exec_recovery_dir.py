"""Where ``ctxctl exec`` keeps full outputs (the tester's report #6, docs/ctxctl.md): a per-user
0700 directory under ``$TMPDIR``, never a foreign-owned or symlinked one, bounded by age and total
size on every exec (``[exec] full_output_hours`` / ``full_output_mib``). Each case runs the real
``ctxctl.py`` in its own process with its own ``TMPDIR``, as an agent's shell does."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from tests.ctxctl.conftest import CTXCTL

FOLDED = "seq 1 200"  # the tester's command: 200 lines, folded, so its full output is kept


def _exec(tmp_path, *argv, config: str | None = None):
    tmpdir = tmp_path / "tmpx"
    tmpdir.mkdir(exist_ok=True)
    proj = tmp_path / "ws"
    proj.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCTL_")}
    env.update(TMPDIR=str(tmpdir), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    extra = []
    if config:
        path = tmp_path / "ctxctl.toml"
        path.write_text(config)
        extra = ["--config", str(path)]
    r = subprocess.run([sys.executable, CTXCTL, *extra, "exec", *argv, "--json"], capture_output=True, text=True,
                       env=env, cwd=proj, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr, str(tmpdir)


def _private(tmpdir: str) -> str:
    return os.path.join(tmpdir, f"ctxctl-exec-{os.getuid()}")


def test_the_full_output_goes_to_a_private_per_user_directory(tmp_path):
    doc, _, tmpdir = _exec(tmp_path, FOLDED)
    assert os.path.dirname(doc["full_output"]) == _private(tmpdir)
    st = os.lstat(_private(tmpdir))
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
    with open(doc["full_output"]) as fh:
        assert fh.read() == "".join(f"{i}\n" for i in range(1, 201))


def test_a_looser_directory_of_ours_is_narrowed_to_0700(tmp_path):
    tmpdir = tmp_path / "tmpx"
    tmpdir.mkdir()
    os.mkdir(_private(str(tmpdir)))
    os.chmod(_private(str(tmpdir)), 0o777)
    doc, _, _ = _exec(tmp_path, FOLDED)
    assert stat.S_IMODE(os.lstat(_private(str(tmpdir))).st_mode) == 0o700 and os.path.exists(doc["full_output"])


@pytest.mark.skipif(os.getuid() != 0, reason="planting a directory owned by another user needs root")
def test_a_directory_another_user_owns_is_never_written_into(tmp_path):
    """The tester's setup: ``ctxctl-exec`` pre-created by ``nobody`` with mode 777 (and the
    per-user name too): the output is shown, nothing is written there, and stderr says why."""
    tmpdir = tmp_path / "tmpx"
    tmpdir.mkdir()
    for name in ("ctxctl-exec", f"ctxctl-exec-{os.getuid()}"):
        path = os.path.join(tmpdir, name)
        os.mkdir(path)
        os.chown(path, 65534, 65534)
        os.chmod(path, 0o777)
    doc, err, _ = _exec(tmp_path, FOLDED)
    assert "full_output" not in doc and "1\n2\n" in doc["compressed"]
    assert "full output not kept" in doc["warning"] and "owned by uid 65534" in doc["warning"], doc
    for name in ("ctxctl-exec", f"ctxctl-exec-{os.getuid()}"):
        assert os.listdir(os.path.join(tmpdir, name)) == []


def test_a_symlink_in_its_place_is_refused(tmp_path):
    tmpdir = tmp_path / "tmpx"
    tmpdir.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, _private(str(tmpdir)))
    doc, _, _ = _exec(tmp_path, FOLDED)
    assert "full_output" not in doc and "full output not kept" in doc["warning"], doc
    assert os.listdir(target) == [] and os.path.islink(_private(str(tmpdir)))


def _plant(private: str, prefix: str, n: int, size: int, age_secs: float) -> list:
    """``n`` kept outputs ``<prefix>NNNN.log`` of ``size`` bytes, the newest ``age_secs`` old,
    one minute apart."""
    os.makedirs(private, mode=0o700, exist_ok=True)
    names, now = [], time.time()
    for i in range(n):
        name = f"{prefix}{i:04d}.log"
        path = os.path.join(private, name)
        with open(path, "wb") as fh:
            fh.write(b"x" * size)
        t = now - age_secs - (n - i) * 60
        os.utime(path, (t, t))
        names.append(name)
    return names


def test_what_is_kept_is_bounded_by_age_and_total_size(tmp_path):
    """The tester's day: 337 kept files, 23 MiB. Yesterday's go by age; of today's, the oldest go
    until the rest fit in ``full_output_mib``; the current run's file always stays."""
    private = _private(str(tmp_path / "tmpx"))
    old = _plant(private, "old", 40, 70_000, age_secs=25 * 3600)
    today = _plant(private, "day", 297, 70_000, age_secs=60)
    doc, _, _ = _exec(tmp_path, FOLDED, config="[exec]\nfull_output_mib = 8\n")
    left = sorted(os.listdir(private))
    total = sum(os.path.getsize(os.path.join(private, n)) for n in left)
    assert os.path.basename(doc["full_output"]) in left
    assert 7 * 1024 * 1024 < total <= 8 * 1024 * 1024, total
    assert not set(old) & set(left)
    kept = [n for n in today if n in left]
    assert kept == today[len(today) - len(kept):]  # the newest of today's stay


def test_the_defaults_keep_a_day_of_output_and_prune_what_is_older(tmp_path):
    private = _private(str(tmp_path / "tmpx"))
    stale = _plant(private, "old", 3, 1000, age_secs=25 * 3600)
    os.makedirs(private, exist_ok=True)
    fresh = os.path.join(private, "f" * 16 + ".log")
    with open(fresh, "wb") as fh:
        fh.write(b"y" * 1000)
    partial = os.path.join(private, ".partial-killed")
    with open(partial, "wb") as fh:
        fh.write(b"z")
    t = time.time() - 2 * 3600
    os.utime(partial, (t, t))
    doc, _, _ = _exec(tmp_path, FOLDED)
    left = set(os.listdir(private))
    assert left == {os.path.basename(fresh), os.path.basename(doc["full_output"])}, (left, stale)
