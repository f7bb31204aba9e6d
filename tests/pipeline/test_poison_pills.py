"""A value the lake cannot hold never wedges a session (issue #16 item 10): a lone surrogate
(a runtime that cut a string mid-emoji), a ``duration_ms`` of 1e30, an exit code above int32 and
a NaN cost are made holdable — typed columns null, the original numbers kept in the envelope's
JSON — and every line before and after them ships, seals, compacts and is digested."""
from __future__ import annotations

from lib import envelope, lake, spool
from tests.pipeline import lakeutil


def test_poison_pills_are_made_holdable_and_the_rest_of_the_session_ships(home):
    paths, store, cfg = lakeutil.setup(home)
    b = envelope.Builder(fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT, runtime="claude_code", session_id="s-poison")
    target = paths.session_spool("claude_code", "s-poison")
    lines = [envelope.dumps(b.make("prompt", role="user", content="before the poison"))]
    lines.append(envelope.dumps(b.make("prompt", role="user", content="cut emoji X")).replace("cut emoji X", "cut emoji \\ud83d"))
    call = b.make("tool_call", message_id="toolu_p", tool={"name": "Bash", "input": {"command": "sleep 1"}, "result": "ok",
                                                            "exit_code": 3, "duration_ms": 5})
    lines.append(envelope.dumps(call).replace('"duration_ms":5', '"duration_ms":1e30').replace('"exit_code":3', '"exit_code":99999999999'))
    spent = b.make("assistant", role="assistant", content="done", usage={"input_tokens": 1, "output_tokens": 2, "cost_usd": 0.5})
    lines.append(envelope.dumps(spent).replace('"cost_usd":0.5', '"cost_usd":NaN').replace('"output_tokens":2', '"output_tokens":1e300'))
    lines.append(envelope.dumps(b.make("prompt", role="user", content="after the poison")))
    for line in lines:
        spool.append(target, line)
    spool.atomic_write(paths.session_done("claude_code", "s-poison"), b"{}")
    stats, summary = lakeutil.ship_and_maint(paths, store, cfg)
    assert stats.errors == 0 and stats.sealed == 1 and stats.envelopes == len(lines) and stats.dropped_lines == 0
    assert summary["ran"] and summary["snapshot"] and summary["sessions"] == 1
    rows = lakeutil.compacted(store)
    assert {r.get("content") for r in rows} >= {"before the poison", "after the poison", "cut emoji \ufffd\ufffd\ufffd"}
    tool = next(r for r in rows if r["event_type"] == "tool_call")["tool"]
    assert tool["duration_ms"] == 1e30 and tool["exit_code"] == 99999999999  # the original, in the envelope JSON
    part = lake.query(store, lakeutil.FLEET, "SELECT event_type, exit_code, duration_ms, output_tokens FROM events").to_pylist()
    typed = next(r for r in part if r["event_type"] == "tool_call")
    assert typed["exit_code"] is None and typed["duration_ms"] is None
    assert next(r for r in part if r["event_type"] == "assistant")["output_tokens"] is None
