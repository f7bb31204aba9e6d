"""Hermes history import: ``$HERMES_HOME/state.db`` (SQLite) → redacted envelopes in the spool.

Hermes Agent keeps every session in ``state.db`` (schema_version 22 in hermes-agent 0.19.0):
``sessions`` (one row per session: ``started_at``/``ended_at`` float epoch seconds, ``model``,
``cwd``, ``git_branch``, ``end_reason``, token counters) and ``messages`` (``role`` user /
assistant / tool / system, ``content``, ``tool_calls`` JSON on assistant rows, ``tool_call_id`` and
``tool_name`` on tool rows, ``timestamp``, ``compacted``), plus ``session_model_usage`` (tokens
per model) and ``schema_version``.

The file is opened read-only (:func:`open_readonly`: immutable, ``mode=ro&immutable=1``, unless
Hermes left a write-ahead log, whose rows only a WAL reader sees): Hermes may be running, and an
import must never block it nor write a journal next to the agent's own database. Only
named columns are read; when one is missing (a schema this reader does not know) the import is
refused with the list of missing columns and the file's ``schema_version`` — never guessed.

Mapping (one session per ``sessions`` row, in ``messages.id`` order):

- ``session_start`` at ``started_at`` (``cwd``, ``branch`` = ``git_branch``);
- user → ``prompt``; assistant with text → ``assistant``; the assistant's ``tool_calls`` are
  matched by id to the ``tool`` rows that answer them → one ``tool_call`` (name, arguments as
  input, result; a ``{"output", "exit_code"}`` result gives the output text and exit code, any
  other result is judged as Hermes judges it for its hook: a JSON ``error`` is exit 1, else 0);
- a contiguous run of ``compacted = 1`` messages → one ``compact`` marker at its last message;
- ``session_end`` at ``ended_at`` (else the last message) with ``end_reason`` as content and the
  session's token usage summed (``session_model_usage``, else the ``sessions`` counters).

Event ids follow docs/architecture.md "Event identity" (:func:`lib.identity.event_id`): a tool
call by its ``tool_call_id`` (the id the hook's ``post_tool_call`` carries too, so hook and import
converge), a turn's prompt and its reply (the turn's last assistant text) by the turn's ordinal
and their redacted text (:func:`lib.adapters.hermes.turn_event_id`, what the hook's
``pre_llm_call``/``post_llm_call`` derive too), other messages by their row id, start and end by
the session; importing twice, or after the hooks captured the session, duplicates nothing.
"""
from __future__ import annotations

import json
import os
import sqlite3
from urllib.parse import quote

from lib.clock import format_time
from lib.envelope import Builder
from lib import identity
from lib.adapters.hermes import turn_event_id
from lib.importers import ImportResult

REQUIRED = {
    "sessions": ("id", "started_at"),
    "messages": ("id", "session_id", "role", "content", "timestamp", "tool_call_id", "tool_calls", "tool_name"),
}
OPTIONAL = {
    "sessions": ("ended_at", "end_reason", "model", "cwd", "git_branch", "input_tokens", "output_tokens",
                 "cache_read_tokens", "cache_write_tokens", "estimated_cost_usd", "actual_cost_usd"),
    "messages": ("compacted",),
}


class SchemaMismatch(ValueError):
    """``state.db`` lacks columns this importer reads; the message lists them and the file's
    ``schema_version``. Nothing was imported."""


def default_path(environ=None) -> str:
    """``$HERMES_HOME/state.db``, else ``~/.hermes/state.db``."""
    from lib.adapters.hermes import transcript_path

    return transcript_path({}, environ)


def open_readonly(path: str) -> sqlite3.Connection:
    """Open ``path`` read-only: immutable (no lock, no journal, no write) when Hermes left no
    write-ahead log; with one (``state.db-wal``: Hermes is running, or was killed before it
    checkpointed, which is when the transcript backstop needs it most) as a plain read-only
    WAL reader, because an immutable open ignores the log and with it every row Hermes wrote
    since its last checkpoint (a killed ``hermes -z`` run: all of them). A WAL reader never
    blocks Hermes' writer. Where the log cannot be read (no access to ``-shm``) it falls back
    to the immutable open.

    :raises FileNotFoundError: no such file. :raises sqlite3.DatabaseError: not SQLite.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no Hermes state database at {path}")
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
    conn = None
    if os.path.exists(path + "-wal"):
        try:
            conn = sqlite3.connect(uri, uri=True)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            if conn is not None:
                conn.close()
            conn = None
    if conn is None:
        conn = sqlite3.connect(uri + "&immutable=1", uri=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    conn.row_factory = sqlite3.Row
    return conn


def _columns(conn, table: str) -> set:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def schema_version(conn) -> str:
    """``schema_version.version`` as text, or ``"unknown"``."""
    try:
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        return str(row[0]) if row else "unknown"
    except sqlite3.Error:
        return "unknown"


def check_schema(conn, path: str) -> dict:
    """``{table: set(columns)}`` for the tables read. :raises SchemaMismatch: a required column
    (or table) is missing; the message names every one and quotes ``schema_version``."""
    cols = {t: _columns(conn, t) for t in ("sessions", "messages", "session_model_usage")}
    missing = [f"{t}.{c}" for t, need in REQUIRED.items() for c in need if c not in cols[t]]
    if missing:
        raise SchemaMismatch(f"{path}: Hermes state.db (schema_version {schema_version(conn)}) lacks the column(s) "
                             f"{', '.join(missing)} that ctxlake reads; nothing was imported")
    return cols


def _select(conn, table: str, cols: set, wanted: tuple, where: str = "", args=()) -> list[dict]:
    names = [c for c in wanted if c in cols]
    rows = conn.execute(f"SELECT {', '.join(names)} FROM {table} {where}", args).fetchall()
    return [{k: r[k] for k in names} for r in rows]


def _decode_result(content) -> tuple[object, int]:
    """``(result, exit_code)`` judged the way Hermes judges a tool result for its post_tool_call
    hook (``model_tools._tool_result_observer_fields`` in 0.19.0), so an imported session counts
    the same commands and failures as a hook-captured one: a ``{"output", "exit_code"}`` object
    (``terminal``) gives its output and exit code; any other JSON object with a truthy ``error``
    failed (1); anything else succeeded (0)."""
    obj = None
    if isinstance(content, str) and content.lstrip().startswith("{"):
        try:
            obj = json.loads(content)
        except ValueError:
            obj = None
    if not isinstance(obj, dict):
        return content, 0
    failed = 1 if obj.get("error") else 0
    if "output" in obj:
        code = obj.get("exit_code")
        return obj.get("output"), code if isinstance(code, int) and not isinstance(code, bool) else failed
    return content, failed


def _calls(raw) -> list[dict]:
    """``[{id, name, input}]`` from an assistant row's ``tool_calls`` JSON (OpenAI shape)."""
    try:
        calls = json.loads(raw) if isinstance(raw, str) and raw else []
    except ValueError:
        return []
    out = []
    for c in calls if isinstance(calls, list) else []:
        if not isinstance(c, dict):
            continue
        fn = c.get("function") if isinstance(c.get("function"), dict) else {}
        args = fn.get("arguments")
        try:
            args = json.loads(args) if isinstance(args, str) and args.strip() else args
        except ValueError:
            pass
        cid = c.get("id") or c.get("call_id")
        if isinstance(cid, str) and cid:
            out.append({"id": cid, "name": fn.get("name") or "unknown", "input": args})
    return out


def _paths(args) -> list[str]:
    if not isinstance(args, dict):
        return []
    return [args[k] for k in ("path", "file_path") if isinstance(args.get(k), str) and args[k]]


def _usage(conn, cols: dict, session: dict) -> dict | None:
    keys = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    rows = []
    if {"session_id", "model", *keys} <= cols["session_model_usage"]:
        rows = _select(conn, "session_model_usage", cols["session_model_usage"], ("model",) + keys,
                       "WHERE session_id = ?", (session["id"],))
    if not rows:
        rows = [{k: session.get(k) for k in keys} | {"model": session.get("model")}]
    usage = {k: sum(int(r.get(k) or 0) for r in rows) for k in keys}
    if not any(usage.values()):
        return None
    models = sorted({r["model"] for r in rows if r.get("model")})
    if models:
        usage["model"] = ",".join(models)
    cost = session.get("actual_cost_usd") or session.get("estimated_cost_usd")
    if isinstance(cost, (int, float)) and cost > 0:
        usage["cost_usd"] = float(cost)
    return usage


def parse_db(path: str, *, fleet_id: str, agent_id: str,
             session_id: str | None = None) -> tuple[dict[str, list[dict]], ImportResult, list[dict]]:
    """Read ``state.db`` at ``path``: ``(envelopes by session id, ImportResult, quarantine records)``;
    ``session_id``: that session only.

    :raises FileNotFoundError: no file. :raises SchemaMismatch: required columns missing.
    :raises sqlite3.DatabaseError: not a SQLite database.
    """
    conn = open_readonly(path)
    try:
        cols = check_schema(conn, path)
        where, args = ("WHERE id = ? ", (session_id,)) if session_id is not None else ("", ())
        sessions = _select(conn, "sessions", cols["sessions"], REQUIRED["sessions"] + OPTIONAL["sessions"],
                           where + "ORDER BY started_at, id", args)
        result = ImportResult(path)
        out: dict[str, list[dict]] = {}
        quarantine: list[dict] = []
        for s in sessions:
            sid = str(s["id"])
            msgs = _select(conn, "messages", cols["messages"], REQUIRED["messages"] + OPTIONAL["messages"],
                           "WHERE session_id = ? ORDER BY id", (sid,))
            result.records += len(msgs)
            envs, b = _session(s, msgs, fleet_id, agent_id, conn, cols)
            envs.sort(key=identity.order)
            out[sid] = envs
            result.sessions.add(sid)
            result.envelopes += len(envs)
            quarantine.extend(b.quarantine)
        return out, result, quarantine
    finally:
        conn.close()


def iter_envelopes(path: str, *, fleet_id: str, agent_id: str, quarantine: list | None = None,
                   session_id: str | None = None):
    """``(session id, envelope)`` of every session in ``state.db`` (``session_id``: that one
    only), in the order :func:`parse_db` gives; ``quarantine`` (a list) receives the redactor's
    quarantine records. The shape the transcript backstop reads (:mod:`lib.backstop`). Raises
    as :func:`parse_db`."""
    by_session, _, q = parse_db(path, fleet_id=fleet_id, agent_id=agent_id, session_id=session_id)
    if quarantine is not None:
        quarantine.extend(q)
    for sid, envs in by_session.items():
        for env in envs:
            yield sid, env


def _ts(value, fallback: float) -> tuple[str, int, float]:
    t = float(value) if isinstance(value, (int, float)) else fallback
    return format_time(t), int(round(t * 1000)), t


def _session(s: dict, msgs: list[dict], fleet_id: str, agent_id: str, conn, cols) -> tuple[list[dict], Builder]:
    sid = str(s["id"])
    b = Builder(fleet_id=fleet_id, agent_id=agent_id, runtime="hermes", session_id=sid, imported=True)
    common = {"cwd": s.get("cwd") if isinstance(s.get("cwd"), str) and s.get("cwd") else None,
              "branch": s.get("git_branch") if isinstance(s.get("git_branch"), str) else None}
    start_iso, start_ms, start_t = _ts(s.get("started_at"), 0.0)
    envs = [b.make("session_start", emitted_at=start_iso, event_id=identity.event_id(sid, "start"), **common)]
    pending: dict[str, dict] = {}
    turn, reply = 0, None  # the ordinal of the current turn, its reply so far (env, record id)
    last_t = start_t
    run_end = None  # last message of the current compacted run
    for m in msgs:
        iso, ms, last_t = _ts(m.get("timestamp"), last_t)
        mid = str(m["id"])
        if m.get("compacted"):
            run_end = (iso, ms, mid)
        elif run_end is not None:
            envs.append(b.make("compact", emitted_at=run_end[0], content="compacted by Hermes",
                               event_id=identity.event_id(sid, "record", run_end[2], "c"), **common))
            run_end = None
        role, content = m.get("role"), m.get("content")
        if role == "user" and isinstance(content, str) and content:
            turn, reply = turn + 1, None
            env = b.make("prompt", role="user", content=content, emitted_at=iso, **common)
            envs.append(b.rekey(env, turn_event_id(sid, "turn_prompt", turn, env["content_hash"])))
        elif role == "assistant":
            if isinstance(content, str) and content.strip():
                env = b.make("assistant", role="assistant", content=content, emitted_at=iso,
                             event_id=identity.event_id(sid, "record", mid), **common)
                envs.append(env)
                if turn:  # the turn's last text is its reply, what post_llm_call hands the hook
                    if reply is not None:
                        b.rekey(reply[0], reply[1])
                    reply = (env, env["event_id"])
                    b.rekey(env, turn_event_id(sid, "turn_reply", turn, env["content_hash"]))
            for call in _calls(m.get("tool_calls")):
                pending[call["id"]] = dict(call, iso=iso, ms=ms)
        elif role == "tool":
            cid = m.get("tool_call_id") if isinstance(m.get("tool_call_id"), str) else None
            call = pending.pop(cid, None) if cid else None
            result, code = _decode_result(content)
            tool = {"name": m.get("tool_name") or (call or {}).get("name") or "unknown",
                    "input": (call or {}).get("input"), "paths": _paths((call or {}).get("input")),
                    "result": result, "exit_code": code}
            base_iso = call["iso"] if call else iso
            envs.append(b.make("tool_call", tool=tool, message_id=cid, emitted_at=base_iso,
                               event_id=identity.event_id(sid, "tool", cid) if cid else identity.event_id(sid, "record", mid),
                               fields={"observed_at": iso, "orphan_result": True if cid and not call else None}, **common))
    if run_end is not None:
        envs.append(b.make("compact", emitted_at=run_end[0], content="compacted by Hermes",
                           event_id=identity.event_id(sid, "record", run_end[2], "c"), **common))
    for cid, call in pending.items():  # calls whose result never came (interrupted)
        envs.append(b.make("tool_call", tool={"name": call["name"], "input": call["input"], "paths": _paths(call["input"])},
                           message_id=cid, emitted_at=call["iso"], event_id=identity.event_id(sid, "tool", cid),
                           **common))
    end_iso, end_ms, _ = _ts(s.get("ended_at"), last_t)
    reason = s.get("end_reason") if isinstance(s.get("end_reason"), str) else "imported session"
    envs.append(b.make("session_end", content=reason, usage=_usage(conn, cols, s), emitted_at=end_iso,
                       event_id=identity.event_id(sid, "end"), **common))
    return envs, b


def import_db(path: str, paths, *, fleet_id: str, agent_id: str, log=lambda *a, **k: None) -> ImportResult:
    """Import every session of ``state.db`` into ``spool/import/`` (one file + ``.done`` each).

    :raises FileNotFoundError:, :raises SchemaMismatch:, :raises sqlite3.DatabaseError:
    """
    from lib import spool
    from lib.envelope import dumps

    by_session, res, quarantine = parse_db(path, fleet_id=fleet_id, agent_id=agent_id)
    for sid, envs in by_session.items():
        target = paths.session_spool("import", sid)
        for e in envs:
            spool.append(target, dumps(e))
        spool.atomic_write(paths.session_done("import", sid), json.dumps({"event": "import", "source": "hermes state.db"}).encode())
    for rec in quarantine:
        spool.append(paths.quarantine_spool_file(fleet_id), json.dumps(rec) + "\n")
    log("hermes_imported", sessions=len(res.sessions), envelopes=res.envelopes)
    return res
