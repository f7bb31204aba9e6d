"""Fixtures for the live plane: a fake store clock, a memory store on it, a temporary git
repository with an ``origin``, and a config for a temporary CTXLAKE_HOME."""
from __future__ import annotations

import os
import subprocess

import pytest

from lib import config
from lib.store.memory import MemoryStore

ORIGIN = "git@github.com:Example-Org/Widget.git"
REPO_ID = "github.com/Example-Org/Widget"


class FakeClock:
    """A settable clock (epoch seconds): ``clock()`` reads it, ``clock.advance(s)`` moves it."""

    def __init__(self, t: float = 1_800_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, secs: float) -> None:
        self.t += secs


@pytest.fixture
def store_clock():
    """The store's clock, independent of this host's (``time.time`` is never consulted by it)."""
    return FakeClock()


@pytest.fixture
def mem_store(store_clock):
    """A fresh in-memory store whose clock is :func:`store_clock`."""
    return MemoryStore(now=store_clock)


def make_repo(path, origin: str = ORIGIN) -> str:
    """``git init`` + ``git remote add origin`` in ``path`` with a couple of files; returns it."""
    os.makedirs(path, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    os.makedirs(os.path.join(path, "src", "parser"), exist_ok=True)
    for rel in ("src/parser/lexer.py", "src/app.py", "README.md"):
        with open(os.path.join(path, rel), "w") as fh:
            fh.write("# placeholder\n")
    return str(path)


@pytest.fixture
def git_repo(tmp_path):
    """A temporary git repository whose origin normalizes to :data:`REPO_ID`."""
    return make_repo(tmp_path / "widget")


@pytest.fixture
def cfg(home, monkeypatch):
    """Config for fleet ``fleet-live`` and agent ``alice`` in the temporary home (file:// store)."""
    monkeypatch.setenv("CTXLAKE_FLEET_ID", "fleet-live")
    monkeypatch.setenv("CTXLAKE_AGENT_ID", "alice")
    return config.load()
