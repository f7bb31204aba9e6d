"""Fixtures for ctxctl: run the CLI in-process in a scratch project with no config files.

Every test gets its own working directory (a fresh project with a ``.git`` marker), an
environment whose ``XDG_CONFIG_HOME`` points at an empty folder (so no user config leaks in),
and copies of the fixture files it asks for.
"""
from __future__ import annotations

import io
import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
ROOT = os.path.dirname(os.path.dirname(HERE))
CTXCTL = os.path.join(ROOT, "ctxctl.py")
PYTHON = sys.executable


class Run:
    """Result of one in-process ctxctl call."""

    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def __repr__(self):
        return f"Run(code={self.code}, out={self.out!r}, err={self.err!r})"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A scratch project directory (cwd) with a ``.git`` marker; returns its path (str)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".git").mkdir()
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.chdir(proj)
    return str(proj)


@pytest.fixture
def ctxctl(project):
    """``ctxctl(*argv, cwd=None)`` → :class:`Run`, executed in-process in the project."""
    import ctxctl as cli

    def run(*argv, cwd=None):
        out, err = io.StringIO(), io.StringIO()
        env = dict(os.environ)
        here = os.getcwd()
        if cwd:
            os.chdir(cwd)
        try:
            code = cli.main(list(argv), stdout=out, stderr=err, cwd=cwd or project, env=env)
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
        finally:
            os.chdir(here)
        return Run(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def fixture(project):
    """``fixture(name, dest=None)`` copies a fixture file into the project; returns the relative path."""
    def copy(name, dest=None):
        dest = dest or os.path.basename(name)
        target = os.path.join(project, dest)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        shutil.copyfile(os.path.join(FIXTURES, name), target)
        return dest

    return copy


@pytest.fixture
def write(project):
    """``write(relpath, text_or_bytes)`` creates a file in the project; returns the relative path."""
    def make(rel, content):
        target = os.path.join(project, rel)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(target, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as fh:
            fh.write(content)
        return rel

    return make
