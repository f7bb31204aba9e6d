"""The Hermes adapter and importer on what a real hermes-agent 0.19.0 run sent and stored
(``tests/fixtures/captured/hermes-0.19.0``, captured by ``make e2e-capture``: ``hermes -z`` driven by
a scripted model through terminal, read_file, patch, write_file, two ctxlake MCP calls and a
failing command; a second session; a third whose patch our pre_tool_call answer blocked). ``state.json`` holds the run's ``state.db`` rows and
DDL; the test rebuilds the database from it."""
from __future__ import annotations

import json
import os
import sqlite3

from lib.importers import hermes as importer
from tests.conftest import FIXTURES

CAPTURED = os.path.join(FIXTURES, "captured", "hermes-0.19.0")


def _load(name):
    with open(os.path.join(CAPTURED, name), encoding="utf-8") as fh:
        return json.load(fh)


def _state_db(path: str) -> str:
    conn = sqlite3.connect(path)
    fill_state(conn)
    conn.commit()
    conn.close()
    return path


def fill_state(conn) -> None:
    """Create the captured run's tables in ``conn`` and insert its rows (``state.json``)."""
    state = _load("state.json")
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (?)", (state["schema_version"],))
    for table, ddl in state["ddl"].items():
        conn.execute(ddl)
        for row in state[table]:
            conn.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))


def test_every_captured_payload_maps_with_results_from_extra(hook):
    payloads = _load("hooks.json")
    for p in payloads:
        assert isinstance(hook("hermes", p), dict)
    assert hook.errors() == ""
    envs = hook.envelopes("hermes")
    assert len(envs) == len(payloads)
    posts = [p for p in payloads if p["hook_event_name"] == "post_tool_call"]
    assert posts and all(isinstance(p["extra"]["result"], str) for p in posts)
    assert [p["extra"]["status"] for p in posts].count("blocked") == 1
    assert {p["extra"]["status"] for p in posts} == {"ok", "blocked"}
    by_id = {e["message_id"]: e for e in envs if e["event_type"] == "tool_call" and "exit_code" in e["tool"]}
    for p in posts:
        e = by_id[p["extra"]["tool_call_id"]]
        decoded = json.loads(p["extra"]["result"])
        if p["extra"]["status"] == "blocked":  # Hermes' own answer to our {"action": "block"}
            assert p["extra"]["error_type"] == "plugin_block" and decoded == {"error": p["extra"]["error_message"]}
            assert e["tool"]["result"] == p["extra"]["error_message"] and e["tool"]["exit_code"] == 1
            assert "is held by ops-carol" in e["tool"]["result"]
        elif p["tool_name"] == "terminal":
            assert (e["tool"]["result"], e["tool"]["exit_code"]) == (decoded["output"], decoded["exit_code"])
        else:
            assert e["tool"]["result"] == p["extra"]["result"] and e["tool"]["exit_code"] == 0
    assert sorted(e["tool"]["exit_code"] for e in by_id.values()) == [0, 0, 0, 0, 0, 0, 1, 2]
    briefed = [p for p in payloads if p["hook_event_name"] == "post_llm_call" and
               "<ctxlake-briefing>" in json.dumps(p["extra"]["conversation_history"])][0]
    prompt = [e for e in envs if e["event_type"] == "prompt" and e["session_id"] == briefed["session_id"]]
    assert "<ctxlake-briefing>" not in prompt[0]["content"], "the prompt is the user's text, not what the hook added"


def test_import_of_the_captured_state_db_agrees_with_the_hooks(tmp_path):
    payloads = _load("hooks.json")
    by_session, result, _ = importer.parse_db(_state_db(str(tmp_path / "state.db")), fleet_id="f", agent_id="a")
    assert len(result.sessions) == 3
    for sid, envs in by_session.items():
        imported = {e["message_id"]: e["tool"]["exit_code"] for e in envs if e["event_type"] == "tool_call"}
        hooked = {}
        for p in payloads:
            if p["session_id"] == sid and p["hook_event_name"] == "post_tool_call":
                decoded = json.loads(p["extra"]["result"])
                if p["extra"]["status"] != "ok":
                    hooked[p["extra"]["tool_call_id"]] = 1
                else:
                    hooked[p["extra"]["tool_call_id"]] = decoded.get("exit_code", 0) if p["tool_name"] == "terminal" else 0
        assert imported == hooked
        prompts = [e["content"] for e in envs if e["event_type"] == "prompt"]
        assert prompts == [p["extra"]["user_message"] for p in payloads
                           if p["session_id"] == sid and p["hook_event_name"] == "pre_llm_call"]


def test_decode_result_judges_like_hermes_does():
    decode = importer._decode_result
    assert decode('{"output": "hi", "exit_code": 2, "error": null}') == ("hi", 2)
    assert decode('{"bytes_written": 6}') == ('{"bytes_written": 6}', 0)
    assert decode('{"error": "File not found: x"}') == ('{"error": "File not found: x"}', 1)
    assert decode('{"error": null, "success": true}')[1] == 0
    assert decode("plain text") == ("plain text", 0)


def test_hook_and_import_give_each_tool_call_start_and_end_one_identity(hook, tmp_path):
    """docs/architecture.md "Event identity": the same event by both paths has one (session, id)."""
    from lib import identity

    for p in _load("hooks.json"):
        hook("hermes", p)
    hooked = hook.envelopes("hermes")
    by_session, _, _ = importer.parse_db(_state_db(str(tmp_path / "state.db")), fleet_id="f", agent_id="a")
    imported = [e for envs in by_session.values() for e in envs]
    pick = lambda envs, types: {identity.key(e) for e in envs if e["event_type"] in types
                                and (e["event_type"] != "tool_call" or "exit_code" in e["tool"])}
    calls = pick(hooked, ("tool_call",))
    assert len(calls) == 8 and calls == pick(imported, ("tool_call",))
    assert pick(hooked, ("session_start",)) == pick(imported, ("session_start",))
    assert pick(hooked, ("session_end",)) <= pick(imported, ("session_end",))


def test_hooks_and_import_of_the_captured_run_converge_in_the_lake(home, tmp_path):
    """The real run captured by the hooks and imported from its ``state.db``, in both orders,
    through syncd's shipping and maint into the Delta table: one row per event — each prompt,
    each turn's reply, each tool call, one start and one end per session — and the same rows
    as the union of each path alone."""
    from tests.pipeline import lakeutil

    payloads = _load("hooks.json")
    started = {s["id"]: s["started_at"] for s in _load("state.json")["sessions"]}

    def capture(where, *, hooks, imports, hooks_first=True):
        paths, store, cfg = lakeutil.setup(where)
        steps = []
        if hooks:  # at the run's own time, so each copy lands in its date partition
            steps.append(lambda: [lakeutil.capture_at(paths, "hermes", p, started[p["session_id"]] + 1) for p in payloads])
        if imports:
            db = _state_db(str(tmp_path / f"{os.path.basename(where)}.db"))
            steps.append(lambda: importer.import_db(db, paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT))
        for step in steps if hooks_first else steps[::-1]:
            step()
            lakeutil.ship_and_maint(paths, store, cfg)
        return lakeutil.compacted(store)

    from lib import identity

    ids = lambda rows: {identity.key(e) for e in rows}
    hooked = capture(str(tmp_path / "h"), hooks=True, imports=False)
    imported = capture(str(tmp_path / "i"), hooks=False, imports=True)
    for hooks_first in (True, False):
        both = capture(str(tmp_path / f"b{hooks_first}"), hooks=True, imports=True, hooks_first=hooks_first)
        assert len(both) == len(ids(both)) == len(ids(hooked) | ids(imported))
        for sid in started:
            rows = [e for e in both if e["session_id"] == sid]
            kinds = [e["event_type"] for e in rows]
            assert kinds.count("session_start") == 1 and kinds.count("session_end") == 1, sid
            prompts = [e["content"] for e in rows if e["event_type"] == "prompt"]
            assert prompts == [p["extra"]["user_message"] for p in payloads
                               if p["session_id"] == sid and p["hook_event_name"] == "pre_llm_call"]
            replies = [e["content"] for e in rows if e["event_type"] == "assistant"]
            for p in payloads:
                if p["session_id"] == sid and p["hook_event_name"] == "post_llm_call":
                    assert replies.count(p["extra"]["assistant_response"]) == len(
                        [e for e in imported if e["session_id"] == sid and e["event_type"] == "assistant"
                         and e["content"] == p["extra"]["assistant_response"]]), (sid, replies)
            calls = [e["message_id"] for e in rows if e["event_type"] == "tool_call" and "exit_code" in e["tool"]]
            assert sorted(calls) == sorted(p["extra"]["tool_call_id"] for p in payloads
                                           if p["session_id"] == sid and p["hook_event_name"] == "post_tool_call")
