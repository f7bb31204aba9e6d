"""The transcript backstop for Hermes (lib/backstop.py): at the seal of a Hermes session, what the
hooks missed is filled in from Hermes' own ``state.db``, on real input: hermes-agent 0.19.0's
hook payloads and the ``state.db`` of the same run (``tests/fixtures/captured/hermes-0.19.0``,
the database rebuilt from its rows and DDL), replayed through the real hook and sealed by the
real shipping pass on a ``file://`` store.

Whatever hooks are lost (on_session_end, which ends the session, always runs), the lake holds
the events of a fully hooked session once each, except a lost pre_tool_call, which has no event
of its own in ``state.db`` (the call and its result are one event there)."""
from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib import identity
from tests.pipeline.lakeutil import HookedHost
from tests.runtimes.test_captured_hermes import _load, _state_db

SID = "20260101_000000_000001"
PAYLOADS = [p for p in _load("hooks.json") if p["session_id"] == SID]


class _Host(HookedHost):
    """A CTXLAKE_HOME with its ``file://`` store, and a HERMES_HOME holding the run's state.db."""

    def __init__(self, base: str):
        hermes_home = os.path.join(base, "hermes")
        super().__init__(base, HERMES_HOME=hermes_home)
        self.hermes_home = hermes_home
        os.makedirs(self.hermes_home)
        _state_db(os.path.join(self.hermes_home, "state.db"))

    def hook(self, payload: dict) -> None:
        super().hook("hermes", payload)


def _run(base: str, keep) -> _Host:
    return _Host(base).replay(PAYLOADS, keep)


def test_with_every_hook_run_the_backstop_fills_nothing(tmp_path):
    """The hooks' ids and state.db's agree on a real run: nothing is missing, nothing doubled."""
    host = _run(str(tmp_path), lambda i, p: True)
    with open(host.paths.session_done("hermes", SID), encoding="utf-8") as fh:
        assert json.load(fh)["transcript_path"] == os.path.join(host.hermes_home, "state.db")
    stats = host.ship()
    assert stats.errors == 0 and stats.sealed == 1 and stats.backstop_filled == 0, host.logged
    assert ("transcript_reconciled", {"session": f"hermes/{SID}", "filled": 0, "by_type": {}}) in host.logged


def test_lost_post_hooks_are_filled_from_state_db_with_the_hooks_ids(tmp_path):
    lost = {"post_tool_call", "post_llm_call", "on_session_start", "pre_llm_call"}
    host = _run(str(tmp_path), lambda i, p: p["hook_event_name"] not in lost)
    stats = host.ship()
    shipped = host.shipped()
    filled = [e for e in shipped if e.get("imported")]
    assert stats.sealed == 1 and stats.backstop_filled == len(filled)
    assert sorted(e["event_type"] for e in filled) == ["assistant", "prompt", "session_start"] + ["tool_call"] * 6
    calls = {p["extra"]["tool_call_id"] for p in PAYLOADS if p["hook_event_name"] == "post_tool_call"}
    assert {e["event_id"] for e in filled if e["event_type"] == "tool_call"} == \
        {identity.event_id(SID, "tool", c) for c in calls}
    (reply,) = [e for e in filled if e["event_type"] == "assistant"]
    (post,) = [p for p in PAYLOADS if p["hook_event_name"] == "post_llm_call"]
    assert reply["content"] == post["extra"]["assistant_response"]
    assert len({identity.key(e) for e in shipped}) == len(shipped)


def test_a_state_db_that_is_gone_or_not_hermes_fills_nothing_and_the_session_seals(tmp_path):
    host = _run(str(tmp_path / "gone"), lambda i, p: p["hook_event_name"] != "post_llm_call")
    os.unlink(os.path.join(host.hermes_home, "state.db"))
    stats = host.ship()
    assert stats.backstop_filled == 0 and stats.sealed == 1 and stats.errors == 0
    assert [ev for ev, _ in host.logged if ev == "backstop_skipped"] == ["backstop_skipped"]
    host = _run(str(tmp_path / "junk"), lambda i, p: p["hook_event_name"] != "post_llm_call")
    with open(os.path.join(host.hermes_home, "state.db"), "wb") as fh:
        fh.write(b"not a database" * 100)
    stats = host.ship()
    assert stats.backstop_filled == 0 and stats.sealed == 1 and stats.errors == 0


_FULL: dict = {}


def _full_ids(base: str) -> set:
    if "ids" not in _FULL:
        host = _run(base, lambda i, p: True)
        host.ship()
        _FULL["ids"] = {identity.key(e) for e in host.shipped()}
    return _FULL["ids"]


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(st.integers(0, len(PAYLOADS) - 2)))
def test_any_lost_hooks_converge_to_the_lake_of_a_fully_hooked_session(tmp_path_factory, lost):
    full = _full_ids(str(tmp_path_factory.mktemp("full")))
    host = _run(str(tmp_path_factory.mktemp("lost")), lambda i, p: i not in lost)
    host.converges(full, {(SID, identity.event_id(SID, "tool_pre", p["extra"]["tool_call_id"]))
                          for i, p in enumerate(PAYLOADS) if i in lost and p["hook_event_name"] == "pre_tool_call"})


_KILLED_WRITER = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import sqlite3
from tests.runtimes.test_captured_hermes import fill_state
conn = sqlite3.connect(sys.argv[2], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
fill_state(conn)
os._exit(0)  # killed: the rows are committed in the write-ahead log, never checkpointed
"""


def test_rows_only_in_the_write_ahead_log_of_a_killed_hermes_are_read(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    host = _Host(str(tmp_path))
    db = os.path.join(host.hermes_home, "state.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, ROOT, db], check=True, timeout=120)
    assert os.path.getsize(db + "-wal") > 0
    for p in PAYLOADS:
        if p["hook_event_name"] != "post_llm_call":
            host.hook(p)
    stats = host.ship()
    assert stats.sealed == 1 and stats.backstop_filled == 1, host.logged
    (reply,) = [e for e in host.shipped() if e.get("imported")]
    assert reply["event_type"] == "assistant"
