"""Hermes ``state.db`` import on a database with the real schema's shape (hermes-agent 0.19.0,
schema_version 22; tables built here with sqlite3): read-only, named columns, refusal naming
missing columns, and the mapping to envelopes."""
from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3

import pytest

from lib.importers import hermes

SID = "20261129_101500_a1b2c3"
SESSIONS_DDL = """CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT, system_prompt TEXT,
    parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0, reasoning_tokens INTEGER DEFAULT 0,
    cwd TEXT, git_branch TEXT, git_repo_root TEXT, estimated_cost_usd REAL, actual_cost_usd REAL, title TEXT,
    api_call_count INTEGER DEFAULT 0, archived INTEGER NOT NULL DEFAULT 0)"""
MESSAGES_DDL = """CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER,
    finish_reason TEXT, reasoning TEXT, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0,
    api_content TEXT)"""
USAGE_DDL = """CREATE TABLE session_model_usage (
    session_id TEXT NOT NULL, model TEXT NOT NULL, billing_provider TEXT NOT NULL DEFAULT '', task TEXT NOT NULL DEFAULT '',
    api_call_count INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0, estimated_cost_usd REAL NOT NULL DEFAULT 0, actual_cost_usd REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, model, billing_provider, task))"""
SECRET = "AKIA" + "QWERTYUIOPASDFGH"  # an AWS key id shape, for the redaction check


def _call(cid, name, args):
    return {"id": cid, "call_id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def make_db(path, *, messages_ddl=MESSAGES_DDL):
    conn = sqlite3.connect(path)
    conn.executescript(f"CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (22);"
                       f"{SESSIONS_DDL}; {messages_ddl}; {USAGE_DDL};")
    if messages_ddl != MESSAGES_DDL:  # an older or foreign schema: the rows are not needed
        conn.commit()
        conn.close()
        return
    t0 = 1795984389.9278057
    conn.execute("INSERT INTO sessions (id, source, model, started_at, ended_at, end_reason, input_tokens, output_tokens, cwd,"
                 " git_branch, estimated_cost_usd) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                 (SID, "cli", "fake-model", t0, t0 + 60.5, "agent_close", 999, 99, "/home/dev/projects/demo", "main", 0.0123))
    rows = [
        ("user", "make out.txt and run the tests", None, None, None, t0 + 1, 0),
        ("assistant", "", None, json.dumps([_call("call_1", "terminal", {"command": "echo hello > out.txt && cat out.txt"}),
                                            _call("call_2", "write_file", {"path": "src/config.py", "content": f"KEY = '{SECRET}'\n"})]),
         None, t0 + 2, 0),
        ("tool", json.dumps({"output": "hello", "exit_code": 0, "error": None}), "call_1", None, "terminal", t0 + 3, 0),
        ("tool", json.dumps({"bytes_written": 30}), "call_2", None, "write_file", t0 + 4, 0),
        ("assistant", "", None, json.dumps([_call("call_3", "terminal", {"command": "pytest -q"})]), None, t0 + 5, 1),
        ("tool", json.dumps({"output": "1 failed", "exit_code": 1, "error": None}), "call_3", None, "terminal", t0 + 6, 1),
        ("assistant", "one test fails; the fixture path is wrong", None, None, None, t0 + 7, 0),
        ("assistant", "", None, json.dumps([_call("call_4", "read_file", {"path": "README.md"})]), None, t0 + 8, 0),
    ]
    for role, content, cid, calls, tname, ts, compacted in rows:
        conn.execute("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, compacted)"
                     " VALUES (?,?,?,?,?,?,?,?)", (SID, role, content, cid, calls, tname, ts, compacted))
    conn.execute("INSERT INTO session_model_usage (session_id, model, input_tokens, output_tokens, cache_read_tokens)"
                 " VALUES (?,?,?,?,?)", (SID, "fake-model", 200, 20, 7))
    conn.commit()
    conn.close()


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "state.db")
    make_db(path)
    return path


def test_sessions_and_messages_map_to_envelopes(db):
    by_session, res, _ = hermes.parse_db(db, fleet_id="f", agent_id="a")
    envs = by_session[SID]
    assert res.sessions == {SID} and res.envelopes == len(envs)
    types = [e["event_type"] for e in envs]
    assert types[0] == "session_start" and types[-1] == "session_end"
    assert types.count("prompt") == 1 and types.count("assistant") == 1 and types.count("compact") == 1
    tools = {e["message_id"]: e["tool"] for e in envs if e["event_type"] == "tool_call"}
    assert tools["call_1"]["result"] == "hello" and tools["call_1"]["exit_code"] == 0
    assert json.loads(tools["call_1"]["input"]) == {"command": "echo hello > out.txt && cat out.txt"}
    assert tools["call_3"]["exit_code"] == 1
    assert tools["call_2"]["paths"] == ["src/config.py"] and "result" not in tools["call_4"]  # no answer: interrupted
    end = envs[-1]
    assert end["content"] == "agent_close" and end["usage"]["input_tokens"] == 200 and end["usage"]["cache_read_tokens"] == 7
    assert end["usage"]["model"] == "fake-model" and end["usage"]["cost_usd"] == pytest.approx(0.0123)
    assert all(e["runtime"] == "hermes" and e["imported"] is True for e in envs)
    assert envs[0]["cwd"] == "/home/dev/projects/demo" and envs[0]["branch"] == "main"
    assert envs[0]["emitted_at"] == "2026-11-29T20:33:09.928Z"


def test_secrets_in_history_are_redacted_before_the_spool(db):
    by_session, _, quarantine = hermes.parse_db(db, fleet_id="f", agent_id="a")
    assert SECRET not in json.dumps(by_session)
    assert SECRET not in json.dumps(quarantine)


def test_import_is_deterministic(db):
    a, _, _ = hermes.parse_db(db, fleet_id="f", agent_id="a")
    b, _, _ = hermes.parse_db(db, fleet_id="f", agent_id="a")
    assert [e["event_id"] for e in a[SID]] == [e["event_id"] for e in b[SID]]


def test_database_is_opened_read_only_and_left_byte_identical(db, tmp_path):
    digest = hashlib.sha256(open(db, "rb").read()).hexdigest()
    listing = sorted(os.listdir(tmp_path))
    hermes.parse_db(db, fleet_id="f", agent_id="a")
    assert hashlib.sha256(open(db, "rb").read()).hexdigest() == digest
    assert sorted(os.listdir(tmp_path)) == listing  # no -journal, -wal or -shm appeared
    conn = hermes.open_readonly(db)
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM messages")
    conn.close()


def test_missing_columns_are_refused_by_name_with_the_schema_version(tmp_path):
    path = str(tmp_path / "state.db")
    make_db(path, messages_ddl=MESSAGES_DDL.replace("tool_calls TEXT, ", "").replace("tool_call_id TEXT, ", "")
            .replace("compacted INTEGER NOT NULL DEFAULT 0,", ""))
    with pytest.raises(hermes.SchemaMismatch) as err:
        hermes.parse_db(path, fleet_id="f", agent_id="a")
    msg = str(err.value)
    assert "messages.tool_call_id" in msg and "messages.tool_calls" in msg and "schema_version 22" in msg
    assert "compacted" not in msg  # optional columns are not demanded


def _cli(argv):
    import ctxlake

    out = io.StringIO()
    return ctxlake.main(argv, stdout=out, stderr=out), out.getvalue()


def test_cli_import_hermes_spools_sessions(db, home):
    code, text = _cli(["import", "hermes", "--path", db])
    assert code == 0 and "1 session(s)" in text
    spooled = os.path.join(home, "spool", "import", SID + ".ndjson")
    assert os.path.exists(spooled) and os.path.exists(os.path.join(home, "spool", "import", SID + ".done"))
    lines = [json.loads(ln) for ln in open(spooled)]
    assert lines[0]["event_type"] == "session_start" and lines[0]["runtime"] == "hermes"


def test_cli_import_hermes_refuses_a_foreign_schema_and_a_missing_file(tmp_path, home):
    path = str(tmp_path / "state.db")
    sqlite3.connect(path).executescript("CREATE TABLE sessions (id TEXT); CREATE TABLE messages (id INTEGER);")
    code, text = _cli(["import", "hermes", "--path", path])
    assert code == 2 and "sessions.started_at" in text and "schema_version unknown" in text
    code, text = _cli(["import", "hermes", "--path", str(tmp_path / "absent.db")])
    assert code == 2 and "no Hermes state database" in text
    assert not os.path.exists(os.path.join(home, "spool", "import"))


def test_cli_import_cursor_is_refused_by_name(home):
    code, text = _cli(["import", "cursor"])
    assert code == 2 and "cursor keeps no history" in text and "ctxlake install cursor" in text
