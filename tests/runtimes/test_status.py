"""``ctxlake status`` lists live agents with task and age from the cached roster, by the one
live-agent rule every reader applies (docs/design.md §9: an agent whose ``updated_at`` is past
the presence TTL by the store clock is not live, here as in ``fleet_status``), and stays robust
when the roster (untrusted cache content) is missing, malformed or oddly shaped."""
from __future__ import annotations

import io
import json
import os
import re
import time

import ctxlake


def _status(home, roster_text=None, leases_text=None):
    cache = os.path.join(home, "cache", "default")
    os.makedirs(cache, exist_ok=True)
    if roster_text is not None:
        with open(os.path.join(cache, "roster.json"), "w") as fh:
            fh.write(roster_text)
    if leases_text is not None:
        with open(os.path.join(cache, "leases.json"), "w") as fh:
            fh.write(leases_text)
    out = io.StringIO()
    assert ctxlake.main(["status"], stdout=out) == 0
    return out.getvalue()


def test_status_shows_live_agents_with_task_and_store_clock_age(home):
    now = time.time()
    roster = {"store_time": now + 3600, "refreshed_at": now,  # the store clock runs an hour ahead of ours
              "agents": [{"agent_id": "alice", "runtime": "cursor", "task": "fix the invoice rounding", "repo": "github.com/acme/billing",
                          "branch": "main", "updated_at": now + 3600 - 42},
                         {"agent_id": "bob", "runtime": "hermes", "updated_at": "2026-01-01T00:00:00Z"},
                         "garbage", {"runtime": "no id"}]}
    text = _status(home, json.dumps(roster))
    assert "agents     1 live" in text
    alice = [ln for ln in text.splitlines() if "alice" in ln][0]
    assert "(cursor) github.com/acme/billing@main" in alice and '"fix the invoice rounding"' in alice
    assert re.search(r"seen \d+s ago", alice)  # seconds by the store clock, not an hour
    assert "bob" not in text  # seen months ago by the store clock: past the presence TTL, as fleet_status says


def test_status_survives_a_malformed_or_oddly_shaped_roster(home):
    assert "agents     0 live" in _status(home, "{not json")
    assert "agents     0 live" in _status(home, "[1, 2, 3]")
    assert "agents     0 live" in _status(home, json.dumps({"agents": "nope"}))
    text = _status(home, json.dumps({"agents": {"carol": {"runtime": "claude_code", "task": "docs"}}}), "[\"x\"]")
    assert "agents     0 live" in text and "leases     0" in text  # one roster shape: a list of heartbeats
    assert "agents     0 live" in _status(home, json.dumps({"agents": []}), json.dumps({"leases": ["bad", 3]}))
