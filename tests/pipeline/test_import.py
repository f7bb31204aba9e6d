"""Claude Code transcript import on real transcripts and on malformed input (issue #2)."""
from __future__ import annotations

import json
import os
import shutil

from tests.conftest import FIXTURES

from lib.importers.claude_code import parse_file

T = os.path.join(FIXTURES, "claude-transcripts")


def _all(out):
    return [e for envs in out.values() for e in envs]


def test_malformed_line_is_skipped_with_a_count_and_the_rest_imported(tmp_path):
    src = os.path.join(T, "spotter__short.jsonl")
    bad = tmp_path / "bad.jsonl"
    lines = open(src, "rb").read().splitlines()
    bad.write_bytes(b"\n".join(lines[:5] + [b'{"type": "user", "message": {"cont'] + lines[5:]) + b"\n")
    good_out, good, _ = parse_file(src, fleet_id="f", agent_id="a")
    out, res, _ = parse_file(str(bad), fleet_id="f", agent_id="a")
    assert res.skipped_lines == 1
    assert res.envelopes == good.envelopes


def test_tool_results_and_error_status_are_joined_to_their_calls():
    out, res, _ = parse_file(os.path.join(T, "spotter__short.jsonl"), fleet_id="f", agent_id="a")
    calls = [e for e in _all(out) if e["event_type"] == "tool_call"]
    assert len(calls) == 2 and all(c["tool"]["exit_code"] == 1 for c in calls)
    assert all(c["message_id"].startswith("toolu_") and c["imported"] for c in calls)
    assert all("result" in c["tool"] for c in calls)


def test_usage_counted_once_per_message_id():
    path = os.path.join(T, "spotter__tool_heavy.jsonl")
    out, _, _ = parse_file(path, fleet_id="f", agent_id="a")
    got = sum(e.get("usage", {}).get("output_tokens", 0) for e in _all(out))
    per_msg = {}
    for line in open(path, "rb"):
        rec = json.loads(line)
        if rec.get("type") == "assistant":
            m = rec["message"]
            per_msg[m.get("id") or rec.get("requestId")] = m.get("usage", {}).get("output_tokens", 0)
    assert got == sum(per_msg.values())


def test_sidechain_and_compaction_records_are_marked():
    out, _, _ = parse_file(os.path.join(T, "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"), fleet_id="f", agent_id="a")
    assert any(e["event_type"] == "compact" for e in _all(out))
    out, _, _ = parse_file(os.path.join(T, "spotter__8463c716.subagents.agent-a7be2f0.jsonl"), fleet_id="f", agent_id="a")
    assert any(str(e.get("turn_id", "")).startswith("sidechain:") for e in _all(out))


def test_reimport_gives_identical_event_ids(tmp_path):
    src = os.path.join(T, "claude-reliability__coverage-test-fix.transcript.jsonl")
    a, _, _ = parse_file(src, fleet_id="f", agent_id="a")
    copy = tmp_path / "copy.jsonl"
    shutil.copy(src, copy)
    b, _, _ = parse_file(str(copy), fleet_id="f", agent_id="a")
    ids = lambda o: sorted(e["event_id"] for e in _all(o) if e["event_type"] not in ("session_start", "session_end"))
    assert ids(a) == ids(b)


def _canon(out):
    return sorted(json.dumps(e, sort_keys=True) for e in _all(out))


def test_two_records_glued_on_one_line_are_both_imported(tmp_path):
    src = os.path.join(T, "spotter__short.jsonl")
    lines = open(src, "rb").read().splitlines()
    glued = tmp_path / "glued.jsonl"
    glued.write_bytes(b"\n".join(lines[:3] + [lines[3] + lines[4]] + lines[5:]) + b"\n")
    a, _, _ = parse_file(src, fleet_id="f", agent_id="a")
    b, res, _ = parse_file(str(glued), fleet_id="f", agent_id="a")
    assert res.skipped_lines == 0 and _canon(a) == _canon(b)


def test_unknown_record_types_and_fields_from_newer_versions_are_ignored(tmp_path):
    src = os.path.join(T, "spotter__short.jsonl")
    recs = [json.loads(l) for l in open(src, "rb")]
    newer = [dict(r, someFieldFrom3_0={"x": 1}) for r in recs]
    newer.insert(2, {"type": "future-record", "sessionId": next(r["sessionId"] for r in recs if "sessionId" in r), "payload": [1, 2]})
    (tmp_path / "newer.jsonl").write_text("".join(json.dumps(r) + "\n" for r in newer))
    a, _, _ = parse_file(src, fleet_id="f", agent_id="a")
    b, res, _ = parse_file(str(tmp_path / "newer.jsonl"), fleet_id="f", agent_id="a")
    assert res.skipped_lines == 0 and _canon(a) == _canon(b)


def test_invalid_utf8_is_replaced_counted_and_the_record_kept(tmp_path):
    src = os.path.join(T, "spotter__short.jsonl")
    data = open(src, "rb").read()
    bad = data.replace(b"mix phx.server", b"mix \xff\xfeserver", 1)
    (tmp_path / "bad.jsonl").write_bytes(bad)
    out, res, _ = parse_file(str(tmp_path / "bad.jsonl"), fleet_id="f", agent_id="a")
    assert res.repaired_lines == 1 and res.skipped_lines == 0
    assert any(e.get("content", "").startswith("mix \ufffd\ufffdserver") for e in _all(out))


def test_a_line_cut_mid_record_is_skipped_and_counted(tmp_path):
    src = os.path.join(T, "spotter__tool_heavy.jsonl")
    data = open(src, "rb").read()
    (tmp_path / "cut.jsonl").write_bytes(data[: len(data) - 200])
    out, res, _ = parse_file(str(tmp_path / "cut.jsonl"), fleet_id="f", agent_id="a")
    assert res.skipped_lines == 1 and res.records == len(data.splitlines()) - 1
