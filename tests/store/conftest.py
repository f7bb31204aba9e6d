"""Store fixtures: ``store`` is one fresh, empty store per test, parametrized over every backend
(``memory://``, ``file://`` on a temporary folder, ``s3://`` on the session's SeaweedFS server,
``redis://`` on the session's redis-server — the live-plane backend),
so each behaviour in the conformance suite is written once (docs/design.md §14)."""
from __future__ import annotations

import uuid

import pytest

from lib.store import open_store
from lib.store.file import FileStore
from lib.store.memory import MemoryStore

BACKENDS = [pytest.param("memory", id="memory"), pytest.param("file", id="file"),
            pytest.param("s3", id="s3", marks=pytest.mark.s3), pytest.param("redis", id="redis", marks=pytest.mark.redis)]


def make_store(kind: str, request, tmp_path):
    """A fresh empty store of ``kind`` (``memory`` | ``file`` | ``s3``)."""
    if kind == "memory":
        return MemoryStore(f"memory://{uuid.uuid4().hex}")
    if kind == "file":
        return FileStore(f"file://{tmp_path}/lake")
    if kind == "redis":
        return open_store(request.getfixturevalue("redis_url"))
    return open_store(request.getfixturevalue("s3_url"))


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    """One fresh store per backend; the S3 one lives under a random prefix wiped afterwards."""
    return make_store(request.param, request, tmp_path)


@pytest.fixture
def backend(store) -> str:
    """The scheme of the current ``store`` (``memory`` | ``file`` | ``s3``)."""
    return store.url.split("://", 1)[0]
