"""One identity per event by every path (issue #16 items 1–2): the hook and the import of the
same real session converge to one event set; a session that copies another's records (resume,
fork) takes nothing from it; every event lands in the partition of its own date."""
from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from lib import identity, lake
from lib.importers.claude_code import import_path
from tests.conftest import FIXTURES
from tests.pipeline import lakeutil

CAPTURED = os.path.join(FIXTURES, "captured", "claude-code-2.1.332")
T = os.path.join(FIXTURES, "claude-transcripts")
S1 = "00000000-0000-4000-8000-000000000001"


def _hooks():
    with open(os.path.join(CAPTURED, "hooks.json")) as fh:
        return json.load(fh)


def _capture(home, *, hooks: bool, imports: bool, hooks_first: bool = True):
    paths, store, cfg = lakeutil.setup(home)
    steps = []
    if hooks:
        for name, sid in (("transcript-first.jsonl", S1), ("transcript-second.jsonl", None)):
            times = lakeutil.transcript_times(os.path.join(CAPTURED, name))
            ps = [p for p in _hooks() if (p["session_id"] == S1) == (sid == S1)]
            steps.append(lambda ps=ps, times=times: lakeutil.replay_hooks(paths, ps, times))
    if imports:
        steps.append(lambda: [import_path(os.path.join(CAPTURED, n), paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
                              for n in ("transcript-first.jsonl", "transcript-second.jsonl")])
    if not hooks_first:
        steps.reverse()
    for step in steps:
        step()
        lakeutil.ship_and_maint(paths, store, cfg)
    return store


def _ids(envs):
    return {identity.key(e) for e in envs}


@pytest.mark.parametrize("hooks_first", [True, False])
def test_hook_and_import_of_one_real_session_converge(home, tmp_path, hooks_first):
    hooked = lakeutil.compacted(_capture(str(tmp_path / "h"), hooks=True, imports=False))
    imported = lakeutil.compacted(_capture(str(tmp_path / "i"), hooks=False, imports=True))
    store = _capture(home, hooks=True, imports=True, hooks_first=hooks_first)
    both = lakeutil.compacted(store)
    assert len(both) == len(_ids(both)), "one row per (session, event id)"
    assert _ids(both) == _ids(hooked) | _ids(imported)
    shared = _ids(hooked) & _ids(imported)
    s1 = [e for e in both if e["session_id"] == S1]
    prompts = [e for e in s1 if e["event_type"] == "prompt"]
    assert len(prompts) == 1 and prompts[0]["content"].startswith("Fix the app so main() returns 2")
    done_calls = Counter(e["message_id"] for e in s1 if e["event_type"] == "tool_call" and "exit_code" in e["tool"])
    tool_ids = {p["tool_use_id"] for p in _hooks() if p["session_id"] == S1 and p["hook_event_name"].startswith("Post")}
    assert set(done_calls) == tool_ids and set(done_calls.values()) == {1}
    # what both paths saw is one event: the prompt, every finished call, start and end
    assert {(S1, p["event_id"]) for p in prompts} <= shared
    assert sum(1 for sid, _ in shared if sid == S1) >= 1 + len(tool_ids) + 2
    assert Counter(e["event_type"] for e in s1)["session_start"] == 1
    assert Counter(e["event_type"] for e in s1)["session_end"] == 1
    d = lakeutil.digests(store)[S1]
    shell_ids = {p["tool_use_id"] for p in _hooks() if p["session_id"] == S1 and p["hook_event_name"].startswith("Post")
                 and p.get("tool_name") == "Bash"}
    assert d["commands_ok"] + d["commands_failed"] == len(shell_ids) and d["commands_failed"] == 1
    assert d["turn_count"] == 1


def test_every_segment_holds_events_of_its_partition_date(home):
    paths, store, cfg = lakeutil.setup(home)
    import_path(os.path.join(T, "spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"), paths,
                fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
    lakeutil.ship_and_maint(paths, store, cfg)
    seen = set()
    for entry in store.list("sessions/"):
        if entry.key.endswith(".parquet"):
            dt = lake.parse_session_prefix(entry.key)["dt"]
            seen.add(dt)
            assert {e["emitted_at"][:10] for e in lake.decode(store.get(entry.key).data)} == {dt}
    with open(os.path.join(T, "spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"), "rb") as fh:
        days = {json.loads(l).get("timestamp", "")[:10] for l in fh} - {""}
    assert seen <= days and len(seen) >= 1
    assert len(lakeutil.digests(store)) == 1


def _fork(src: str, dst: str, new_sid: str) -> None:
    """What `claude --resume`/a fork writes: the earlier session's records copied with the new
    session id (same record uuids, same tool-use ids)."""
    with open(src, "rb") as fh, open(dst, "w") as out:
        for line in fh:
            rec = json.loads(line)
            if "sessionId" in rec:
                rec["sessionId"] = new_sid
            out.write(json.dumps(rec) + "\n")


def test_a_session_that_copies_another_sessions_records_takes_nothing_from_it(home, tmp_path):
    src = os.path.join(T, "spotter__tool_heavy.jsonl")
    forked = str(tmp_path / "forked.jsonl")
    _fork(src, forked, "fork-of-tool-heavy")
    paths, store, cfg = lakeutil.setup(home)
    for f in (src, forked):
        import_path(f, paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
    lakeutil.ship_and_maint(paths, store, cfg)
    rows = lakeutil.compacted(store)
    by = {sid: Counter(e["event_type"] for e in rows if e["session_id"] == sid)
          for sid in {e["session_id"] for e in rows}}
    assert len(by) == 2
    a, b = by.values()
    assert a == b and a["prompt"] == 2 and a["tool_call"] == 6
    ds = lakeutil.digests(store)
    assert len(ds) == 2 and len({(d["commands_ok"], d["commands_failed"], d["turn_count"]) for d in ds.values()}) == 1


def test_event_ids_are_scoped_to_their_session_and_stable():
    a = identity.event_id("s1", "tool", "toolu_01")
    assert a == identity.event_id("s1", "tool", "toolu_01")
    assert a != identity.event_id("s2", "tool", "toolu_01")
    assert a != identity.event_id("s1", "tool_pre", "toolu_01")
    assert identity.event_id("s", "x", "ab", "c") != identity.event_id("s", "x", "a", "bc")
    assert len(a) == 26
    with pytest.raises(ValueError):
        identity.event_id("", "tool", "t")
    with pytest.raises(ValueError):
        identity.event_id("s", "tool")
