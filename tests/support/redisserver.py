"""A real ``redis-server`` for tests and benchmarks (issue #12), on 127.0.0.1.

- :func:`start_redis` — plain helper, no pytest: starts Debian's ``redis-server`` on a free
  loopback port with no persistence (``--save ""``, ``--appendonly no``) in its own temporary
  directory, waits for ``PING``, returns a :class:`RedisServer` with ``url(ns)``, ``stop()`` and
  ``restart()`` (same port, empty data — what a crashed cache server looks like).
- pytest fixtures — ``redis_server`` (one per session; skipped with a stated reason when the
  binary is absent: ``.ci/run`` installs it) and ``redis_url`` (a fresh namespace per test).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest

from tests.support.require import missing_server

_HOST = "127.0.0.1"


def redis_binary() -> str | None:
    """Path of ``redis-server`` or ``None``."""
    return shutil.which("redis-server") or (os.path.exists("/usr/bin/redis-server") and "/usr/bin/redis-server") or None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((_HOST, 0))
        return s.getsockname()[1]


class RedisServer:
    """A running ``redis-server``: ``port``, ``url(ns)``, ``stop()``, ``restart()``."""

    def __init__(self, binary: str, port: int, workdir: str):
        self.binary, self.port, self.workdir = binary, port, workdir
        self.proc = None

    def start(self, timeout: float = 20.0) -> "RedisServer":
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", _HOST, "--save", "", "--appendonly", "no",
             "--dir", self.workdir, "--protected-mode", "yes", "--logfile", os.path.join(self.workdir, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((_HOST, self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer PING on {_HOST}:{self.port}")

    def url(self, ns: str | None = None) -> str:
        """``redis://127.0.0.1:<port>/0?ns=<ns>:`` (a fresh namespace when ``ns`` is None)."""
        return f"redis://{_HOST}:{self.port}/0?ns={ns or 't-' + uuid.uuid4().hex[:10]}:"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> None:
        """Stop and start on the same port with no data (no persistence configured)."""
        self.stop()
        self.start()


def start_redis() -> RedisServer:
    """Start a private redis-server on a free loopback port. :raises RuntimeError: no binary."""
    binary = redis_binary()
    if not binary:
        raise RuntimeError("redis-server not found: apt-get install redis-server")
    return RedisServer(binary, _free_port(), tempfile.mkdtemp(prefix="ctxlake-redis-")).start()


@pytest.fixture(scope="session")
def redis_server():
    """The session's redis-server; skipped when the binary is absent (``.ci/run`` installs it)."""
    if not redis_binary():
        missing_server("redis-server not installed: apt-get install redis-server (make test and .ci/run do)")
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.workdir, ignore_errors=True)


@pytest.fixture
def redis_url(redis_server):
    """A fresh ``redis://`` URL (own namespace) on the session's server."""
    return redis_server.url()
