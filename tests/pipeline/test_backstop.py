"""The transcript backstop (lib/backstop.py) on real input: Claude Code 2.1.332's hook payloads
and the transcript it wrote for the same session (``tests/fixtures/captured``), replayed through
the real hook, shipped and sealed by the real syncd shipping pass.

Whatever subset of hooks is lost (SessionEnd, which ends the session, always runs), the lake
after the seal holds exactly the events of a session whose hooks all ran, once each — except a
lost PreToolUse, which has no event of its own in the transcript (its call is one event with
its result).
"""
from __future__ import annotations

import json
import os
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib import identity
from tests.conftest import FIXTURES
from tests.pipeline.lakeutil import HookedHost

CAPTURED = os.path.join(FIXTURES, "captured", "claude-code-2.1.332")
SID = "00000000-0000-4000-8000-000000000001"


def _payloads() -> list[dict]:
    with open(os.path.join(CAPTURED, "hooks.json"), encoding="utf-8") as fh:
        return [p for p in json.load(fh) if p["session_id"] == SID]


PAYLOADS = _payloads()


class _Host(HookedHost):
    """A CTXLAKE_HOME with its file:// store and a copy of the session's transcript."""

    def __init__(self, base: str):
        super().__init__(base)
        self.transcript = os.path.join(base, "claude", "projects", "-home-dev-projects-demo", SID + ".jsonl")
        os.makedirs(os.path.dirname(self.transcript))
        shutil.copy(os.path.join(CAPTURED, "transcript-first.jsonl"), self.transcript)

    def hook(self, payload: dict) -> None:
        super().hook("claude_code", dict(payload, transcript_path=self.transcript))

    def sealed(self) -> bool:
        return any(entry.key.endswith("/_SEALED") for entry in self.store.list("sessions/"))


def _run(base: str, keep) -> _Host:
    return _Host(base).replay(PAYLOADS, keep)


def _ids(envs) -> set:
    return {identity.key(e) for e in envs}


def test_with_every_hook_run_the_backstop_fills_nothing(tmp_path):
    """The hooks' ids and the import's agree on real data: nothing is missing, nothing doubled."""
    host = _run(str(tmp_path), lambda i, p: True)
    stats = host.ship()
    assert stats.backstop_filled == 0 and stats.sealed == 1 and stats.errors == 0
    assert not any(e.get("imported") for e in host.shipped())
    assert ("transcript_reconciled", {"session": f"claude_code/{SID}", "filled": 0, "by_type": {}}) in host.logged


def test_a_stop_killed_at_exit_is_filled_with_the_stop_s_own_id(tmp_path):
    host = _run(str(tmp_path), lambda i, p: p["hook_event_name"] != "Stop")
    stats = host.ship()
    assert stats.backstop_filled == 1 and stats.sealed == 1
    (end,) = [e for e in host.shipped() if e["event_type"] == "assistant"]
    stop = next(p for p in PAYLOADS if p["hook_event_name"] == "Stop")
    assert end["imported"] and end["event_id"] == identity.event_id(SID, "stop", stop["prompt_id"])
    assert end["content"] == stop["last_assistant_message"] and "usage" not in end
    assert end["turn_id"] == stop["prompt_id"]


def test_hooks_installed_mid_session_the_first_part_is_filled(tmp_path):
    """Only the last two tool calls, the Stop and the session end were hooked."""
    host = _run(str(tmp_path), lambda i, p: i >= len(PAYLOADS) - 6)
    stats = host.ship()
    shipped = host.shipped()
    filled = [e for e in shipped if e.get("imported")]
    assert stats.backstop_filled == len(filled) and stats.sealed == 1
    types = sorted(e["event_type"] for e in filled)
    assert types == ["prompt", "session_start"] + ["tool_call"] * 5, types
    assert len(_ids(shipped)) == len(shipped), "no identity shipped twice"


def test_a_resumed_session_is_not_refilled_from_its_earlier_part(tmp_path):
    host = _run(str(tmp_path), lambda i, p: p["hook_event_name"] != "Stop")
    assert host.ship().backstop_filled == 1
    # `claude --resume`: the same session ends again; its earlier spool is gone, the ids stay
    host.hook(PAYLOADS[-1])
    stats = host.ship()
    assert stats.backstop_filled == 0 and stats.sealed == 1
    assert os.path.exists(host.paths.reconciled("claude_code", SID))


def test_a_transcript_that_is_gone_fills_nothing_and_the_session_still_seals(tmp_path):
    host = _run(str(tmp_path), lambda i, p: p["hook_event_name"] != "Stop")
    os.unlink(host.transcript)
    stats = host.ship()
    assert stats.backstop_filled == 0 and stats.sealed == 1 and stats.errors == 0
    (skip,) = [kw for ev, kw in host.logged if ev == "backstop_skipped"]
    assert "transcript unreadable" in skip["detail"]


_FULL: dict = {}


def _full_ids(base: str) -> set:
    if "ids" not in _FULL:
        host = _run(base, lambda i, p: True)
        host.ship()
        _FULL["ids"] = _ids(host.shipped())
    return _FULL["ids"]


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(st.integers(0, len(PAYLOADS) - 2)))
def test_any_lost_hooks_converge_to_the_lake_of_a_fully_hooked_session(tmp_path_factory, lost):
    full = _full_ids(str(tmp_path_factory.mktemp("full")))
    host = _run(str(tmp_path_factory.mktemp("lost")), lambda i, p: i not in lost)
    host.converges(full, {(SID, identity.event_id(SID, "tool_pre", PAYLOADS[i]["tool_use_id"]))
                          for i in lost if PAYLOADS[i]["hook_event_name"] == "PreToolUse"})
