"""Every user record classified, on real transcripts (issue #16 items 5–7; the rules are in
docs/architecture.md "User records"), and an independent count per real file — prompts, tool
calls by name, failures, tokens per kind, start/end — that the importer must agree with exactly."""
from __future__ import annotations

import glob
import json
import os
import re
from collections import Counter

import pytest

from lib import identity
from lib.memory import digest as digestmod
from lib.importers.claude_code import parse_file
from tests.conftest import FIXTURES

T = os.path.join(FIXTURES, "claude-transcripts")
REAL = sorted(glob.glob(os.path.join(T, "*.jsonl"))) + [os.path.join(FIXTURES, "captured", "claude-code-2.1.332", n)
                                                        for n in ("transcript-first.jsonl", "transcript-second.jsonl")]


def _envs(path):
    out, _, _ = parse_file(path, fleet_id="f", agent_id="a")
    return identity.dedupe(e for envs in out.values() for e in envs)


def _recs(path):
    with open(path, "rb") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _by_record(path, predicate):
    """Envelopes made from the first user record matching ``predicate`` (by its record id)."""
    for rec in _recs(path):
        if rec.get("type") in ("user", "system") and predicate(rec):
            sid = rec["sessionId"]
            ids = {identity.event_id(sid, "record", rec["uuid"])}
            if rec.get("promptId"):
                ids.add(identity.event_id(sid, "prompt", rec["promptId"]))
            return [e for e in _envs(path) if e["event_id"] in ids]
    raise AssertionError(f"no such record in {path}")


def _text(rec):
    c = (rec.get("message") or {}).get("content")
    if isinstance(c, str):
        return c
    return "\n".join(b.get("text", "") for b in c or [] if isinstance(b, dict) and b.get("type") == "text")


CASES = [
    ("typed", "spotter__short.jsonl", lambda r: _text(r).startswith("mix phx.server")),
    ("slash_command", "spotter__tool_heavy.jsonl", lambda r: _text(r).lstrip().startswith("<command-name>")),
    ("interrupt", "spotter__short.jsonl", lambda r: _text(r).startswith("[Request interrupted by user")),
    ("local_command_output", "spotter__tool_heavy.jsonl", lambda r: _text(r).startswith("<local-command-stdout>")),
    ("local_command_output", "spotter__short.jsonl", lambda r: r.get("subtype") == "local_command"),
    ("task_notification", "spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl",
     lambda r: _text(r).startswith("<task-notification>")),
    ("system_reminder", "spotter__8463c716.subagents.agent-acompact-f46190.jsonl",
     lambda r: _text(r).lstrip().startswith("<system-reminder>")),
    ("compaction_summary", "spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl", lambda r: r.get("isCompactSummary")),
    ("hook_feedback", "claude-reliability__coverage-test-fix.transcript.jsonl",
     lambda r: _text(r).startswith("Stop hook feedback:")),
    ("meta", "claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", lambda r: r.get("isMeta")),
    ("subagent_prompt", "spotter__258c7280-ae70-4798-800f-63464d01a85d.subagents.agent-a881341.jsonl",
     lambda r: r.get("type") == "user" and r.get("isSidechain") and isinstance(r["message"]["content"], str)),
]


@pytest.mark.parametrize("kind,name,predicate", CASES, ids=[f"{c[0]}:{c[1][:24]}" for c in CASES])
def test_each_kind_of_user_record_is_classified_on_a_real_file(kind, name, predicate):
    envs = _by_record(os.path.join(T, name), predicate)
    assert envs, "the record became no event"
    for e in envs:
        if kind == "typed":
            assert e["event_type"] == "prompt" and "user_kind" not in e
        elif kind == "compaction_summary":
            assert e["event_type"] == "compact" and e["user_kind"] == kind
        else:
            assert e["event_type"] == "context" and e["user_kind"] == kind
        assert "\x1b" not in e.get("content", "")


def test_ansi_escapes_are_stripped_from_what_agents_and_people_read():
    path = os.path.join(T, "claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    assert "\\u001b[" in open(path).read()
    for e in _envs(path):
        assert "\x1b" not in e.get("content", "") and "\x1b" not in (e.get("tool") or {}).get("result", "")


def test_only_typed_prompts_feed_the_summary():
    d = digestmod.digest(_envs(os.path.join(T, "spotter__tool_heavy.jsonl")))
    first_typed = next(_text(r) for r in _recs(os.path.join(T, "spotter__tool_heavy.jsonl"))
                       if r.get("type") == "user" and isinstance(r["message"]["content"], str)
                       and not re.match(r"\s*[<\[]", r["message"]["content"]))
    assert d["summary"].startswith(first_typed.split("\n")[0][:40])
    assert "<" not in d["summary"][:1]


def test_a_file_that_starts_mid_session_keeps_orphan_results_as_results(tmp_path):
    """A real transcript cut before its middle (what a file that starts mid-session looks like):
    results whose call is before the cut stay results, never calls named ``unknown``."""
    src = os.path.join(T, "spotter__tool_heavy.jsonl")
    lines = open(src, "rb").read().splitlines(keepends=True)
    cut = next(i for i, raw in enumerate(lines) if b'"tool_result"' in raw)
    (tmp_path / "mid.jsonl").write_bytes(b"".join(lines[cut:]))
    envs = _envs(str(tmp_path / "mid.jsonl"))
    orphans = [e for e in envs if e.get("orphan_result")]
    assert orphans and all(e["event_type"] == "tool_call" and "result" in e["tool"] for e in orphans)
    d = digestmod.digest(envs)
    assert all(c["tool"] != "unknown" for c in d["commands"])
    full = {e["event_id"]: e for e in _envs(src)}
    for o in orphans:  # the same identity as the complete call, which wins when both are in the lake
        assert identity.pick(o, full[o["event_id"]]) is full[o["event_id"]]


def _independent(path):
    """Counted straight from the records, without the importer's code."""
    wrapper = re.compile(r"\s*(<[a-z-]+>|\[Request interrupted|Stop hook feedback:)")
    prompts, tools, failures = 0, {}, set()
    usage, sessions = {}, set()
    for rec in _recs(path):
        sid = rec.get("sessionId")
        if not sid or rec.get("type") not in ("user", "assistant"):
            continue
        sessions.add(sid)
        content = (rec.get("message") or {}).get("content")
        if rec["type"] == "assistant":
            for b in content if isinstance(content, list) else []:
                if b.get("type") == "tool_use":
                    tools[b["id"]] = b["name"]
            u = rec["message"].get("usage")
            if isinstance(u, dict):
                usage[(sid, rec["message"].get("id") or rec.get("requestId"))] = u
            continue
        blocks = content if isinstance(content, list) else []
        for b in blocks:
            if b.get("type") == "tool_result" and (b.get("is_error") is True or str(b.get("is_error")).lower() == "true"):
                failures.add(b["tool_use_id"])
        if any(b.get("type") == "tool_result" for b in blocks) or rec.get("isMeta") or rec.get("isSidechain") \
                or rec.get("isCompactSummary"):
            continue
        text = content if isinstance(content, str) else "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        if text.strip() and not wrapper.match(text):
            prompts += 1
    tokens = Counter()
    for u in usage.values():
        for ours, theirs in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                             ("cache_read_tokens", "cache_read_input_tokens"),
                             ("cache_write_tokens", "cache_creation_input_tokens")):
            tokens[ours] += u.get(theirs) or 0
    return {"prompts": prompts, "tools": Counter(tools.values()), "failures": len(failures & set(tools)),
            "tokens": tokens, "sessions": len(sessions)}


@pytest.mark.parametrize("path", REAL, ids=[os.path.basename(p)[:40] for p in REAL])
def test_an_independent_count_agrees_with_the_import_exactly(path):
    want = _independent(path)
    envs = _envs(path)
    calls = [e for e in envs if e["event_type"] == "tool_call" and not e.get("orphan_result")]
    tokens = Counter()
    for e in envs:
        for k, v in (e.get("usage") or {}).items():
            if k != "model":
                tokens[k] += v
    got = {"prompts": sum(1 for e in envs if e["event_type"] == "prompt"),
           "tools": Counter(e["tool"]["name"] for e in calls),
           "failures": sum(1 for e in calls if e["tool"].get("exit_code")),
           "tokens": +tokens, "sessions": len({e["session_id"] for e in envs})}
    assert got == {**want, "tokens": +want["tokens"]}
    ends = Counter((e["session_id"], e["event_type"]) for e in envs if e["event_type"] in ("session_start", "session_end"))
    assert len(ends) == 2 * want["sessions"] and set(ends.values()) <= {1}


def test_an_edit_is_a_file_touched_not_a_command():
    """Issue 18: the digest counted an Edit as a command whose text was its path."""
    src = os.path.join(T, "spotter__6adcf0da-e8ac-4760-8026-66fb75b5ee45.jsonl")
    envs = _envs(src)
    edits = [e for e in envs if (e.get("tool") or {}).get("name") == "Edit" and e["tool"].get("paths")]
    assert edits, "the fixture has Edit calls"
    d = digestmod.digest(envs)
    assert d["commands"] and all(c["tool"] in digestmod.SHELL_TOOLS for c in d["commands"])
    edited = {p for e in edits for p in e["tool"]["paths"]}
    assert edited <= set(d["files_touched"])
    assert not edited & {c["command"] for c in d["commands"]}


def test_kinds_failure_reasons_titles_and_compaction_reach_typed_lake_columns(home):
    from lib import maintenance  # noqa: F401  (the real pipeline below)
    from lib import lake
    from lib.importers.claude_code import import_path
    from tests.pipeline import lakeutil

    paths, store, cfg = lakeutil.setup(home)
    for name in ("spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl", "claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"):
        import_path(os.path.join(T, name), paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
    lakeutil.ship_and_maint(paths, store, cfg)
    rows = lake.query(store, lakeutil.FLEET, "SELECT event_type, user_kind, failure_reason, title, compact_trigger, "
                                            "pre_tokens, runtime_version FROM events").to_pylist()
    assert {"task_notification", "interrupt", "compaction_summary"} <= {r["user_kind"] for r in rows}
    assert {"exit_code", "cancelled_sibling"} & {r["failure_reason"] for r in rows}
    assert any(r["compact_trigger"] == "auto" and r["pre_tokens"] == 167094 for r in rows)
    assert {r["runtime_version"] for r in rows} >= {"2.1.39"}
    summary = [json.loads(l)["summary"] for l in open(os.path.join(T, "claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"))
               if '"type":"summary"' in l]
    assert summary and summary[0] in {r["title"] for r in rows}
