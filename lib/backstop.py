"""The transcript backstop: what the hooks missed of a session, filled in from its transcript
when syncd seals it (docs/runtimes.md "Transcript backstop"), for Claude Code (the transcript
``.jsonl``) and Hermes (its ``state.db``).

A hook can miss an event: Claude Code ends an async hook still running when the session exits
(a Stop is lost that way), a capture can time out or crash, and hooks installed mid-session saw
nothing of its first part. The runtime's transcript has it all. Before syncd seals a session
whose end marker names its transcript (``transcript_path`` of Claude Code's SessionEnd), the
transcript is read by the importer (:func:`lib.importers.claude_code.iter_envelopes`, never a
second parser) and every event the hooks would have captured but did not is appended to the
session's spool, marked ``imported``, and ships with it.

"Did not" is decided by identity (:mod:`lib.identity`, docs/architecture.md "Event identity"):
the hook and the import derive the same ``event_id`` from the runtime's own ids, so an event is
missing exactly when its id is in neither the session's spool nor the ids an earlier seal of the
same session reconciled (``spool/.state/<runtime>/<session>.reconciled``, one id a line; a
resumed session's earlier spool is gone by then). What is filled:

- ``session_start``, ``prompt``, ``tool_call`` (one per tool-use id, with its result) and
  ``session_end``: the import's event as it is (same id as the hook's);
- a slash command (``context`` with ``user_kind`` ``slash_command``): the hook captures it from
  UserPromptSubmit under the same prompt id;
- a turn's end (the hook's Stop: ``assistant`` with id ``stop`` + prompt id): the turn's last
  assistant message with text, under the Stop's id (the import's events of a turn carry the
  prompt id as ``turn_id``), without its usage (a Stop carries none).

For Hermes (its record is ``state.db``, named by the session's ``.proc`` record, read by
:func:`lib.importers.hermes.iter_envelopes`): ``session_start``, ``prompt``, ``tool_call`` and
``session_end`` as above, and a turn's final reply (the ``assistant`` whose id is the turn's
``turn_reply`` id, what post_llm_call captures; the hook and the import converge on it through
:meth:`lib.envelope.Builder.rekey`).

Nothing else: an assistant message per API call, a system reminder, a compaction are events no
hook captures under the import's ids, so adding them would add what the hooks never claimed to
see. Idempotent: an event filled once is in the spool (or the ``.reconciled`` ids) the next time.
"""
from __future__ import annotations

import json

from lib import envelope, identity, spool

FILL_TYPES = ("session_start", "prompt", "tool_call", "session_end")
"""Event types filled as the import gives them (their ids match the hook's)."""


def _importer(runtime: str):
    """``(iter_envelopes, unreadable)`` of ``runtime``'s transcript importer
    (``iter_envelopes(path, fleet_id=, agent_id=, quarantine=, session_id=)`` yielding
    ``(session id, envelope)``; ``unreadable``: the exceptions that mean its record cannot be
    read), or ``None`` when the runtime keeps no record to reconcile with."""
    if runtime == "claude_code":
        from lib.importers.claude_code import iter_envelopes

        return (lambda path, session_id=None, **kw: iter_envelopes(path, **kw)), (OSError,)
    if runtime == "hermes":
        import sqlite3

        from lib.importers.hermes import SchemaMismatch, iter_envelopes

        return iter_envelopes, (OSError, SchemaMismatch, sqlite3.DatabaseError)
    return None


def _hermes_reply(env: dict, session_id: str, turns: int) -> bool:
    """True when a Hermes import's ``assistant`` is a turn's final reply (its id is the
    ``turn_reply`` id of one of the session's ``turns`` turns, what post_llm_call captures:
    :func:`lib.adapters.hermes.turn_event_id`); the other assistant rows are no hook's."""
    from lib.adapters.hermes import turn_event_id

    return any(env["event_id"] == turn_event_id(session_id, "turn_reply", n, env["content_hash"])
               for n in range(1, turns + 1))


def captured_ids(files: list[str], session_id: str) -> tuple[set, dict]:
    """``(event ids, the first envelope)`` of ``session_id`` in the spool ``files`` (complete
    lines; an unparseable one is skipped, as shipping drops it)."""
    ids: set = set()
    first: dict = {}
    for path in files:
        try:
            lines, _ = spool.read_complete_lines(path, 0, max_bytes=1 << 62)
        except FileNotFoundError:
            continue
        records, _ = spool.decode_lines(lines)
        for env in records:
            if env.get("session_id") == session_id and isinstance(env.get("event_id"), str):
                ids.add(env["event_id"])
                first = first or env
    return ids, first


def _load_reconciled(path: str) -> set:
    try:
        with open(path, encoding="utf-8") as fh:
            return {ln.strip() for ln in fh if ln.strip()}
    except FileNotFoundError:
        return set()


def missing(transcript: str, session_id: str, have: set, *, runtime: str, fleet_id: str, agent_id: str,
            quarantine: list | None = None) -> list[dict]:
    """The envelopes of ``session_id`` in ``transcript`` that the hooks would have captured and
    whose ids are not in ``have`` (see the module docstring), in the importer's order, the turn
    ends last. ``quarantine`` (a list) receives the redactor's quarantine records of those.
    :raises OSError: the transcript cannot be read (Hermes: also ``SchemaMismatch``,
    ``sqlite3.DatabaseError``). :raises ValueError: no importer for ``runtime``."""
    importer = _importer(runtime)
    if importer is None:
        raise ValueError(f"no transcript importer for runtime {runtime!r}")
    qrecords: list = []
    out: list[dict] = []
    turn_end: dict = {}  # stop id -> the turn's last assistant message with text
    envs = [env for sid, env in importer[0](transcript, fleet_id=fleet_id, agent_id=agent_id, quarantine=qrecords,
                                             session_id=session_id) if sid == session_id]
    turns = sum(e["event_type"] == "prompt" for e in envs)
    for env in envs:
        etype = env["event_type"]
        if etype in FILL_TYPES or (etype == "context" and env.get("user_kind") == "slash_command") or (
                runtime == "hermes" and etype == "assistant" and _hermes_reply(env, session_id, turns)):
            if env["event_id"] not in have:
                out.append(env)
                have.add(env["event_id"])
        elif runtime == "claude_code" and etype == "assistant" and env.get("content") and env.get("turn_id") \
                and not str(env["turn_id"]).startswith("sidechain:"):
            stop = identity.event_id(session_id, "stop", env["turn_id"])
            if stop not in have and str(env["emitted_at"]) >= str(turn_end.get(stop, {}).get("emitted_at", "")):
                turn_end[stop] = env
    for stop, env in turn_end.items():
        end = {k: v for k, v in env.items() if k not in ("usage", "observed_at")}
        end["event_id"] = stop
        out.append(end)
        have.add(stop)
    kept = {e["event_id"] for e in out} | {e["event_id"] for e in turn_end.values()}
    if quarantine is not None:
        quarantine.extend(q for q in qrecords if q.get("event_id") in kept)
    return out


def reconcile(paths, runtime: str, stem: str, files: list[str], done: dict, *, fleet_id: str | None = None,
              agent_id: str | None = None, log=lambda *a, **k: None) -> int:
    """Fill in what the hooks missed of one ended session; return how many envelopes were
    appended to its spool (0 when nothing was missing, the runtime keeps no transcript, or the
    end marker names none).

    ``stem`` is the session's spool file stem, ``files`` its spool files, ``done`` its end
    marker (``{"transcript_path": …}``); ``fleet_id``/``agent_id`` default to those of the
    session's first spooled envelope. A transcript that is gone or unreadable is logged
    (``backstop_skipped``) and fills nothing: the hooks' capture stands as it is. :raises
    OSError: the spool refused a write (the session is not sealed; the next pass retries)."""
    from urllib.parse import unquote

    transcript = done.get("transcript_path") if isinstance(done, dict) else None
    if not isinstance(transcript, str) or _importer(runtime) is None:
        return 0
    sid = unquote(stem)
    have, first = captured_ids(files, sid)
    rpath = paths.reconciled(runtime, stem)
    have |= _load_reconciled(rpath)
    fleet_id, agent_id = fleet_id or first.get("fleet_id"), agent_id or first.get("agent_id")
    if not (fleet_id and agent_id):
        log("backstop_skipped", session=f"{runtime}/{stem}", detail="no spooled event names the fleet and agent")
        return 0
    quarantine: list = []
    try:
        filled = missing(transcript, sid, have, runtime=runtime, fleet_id=fleet_id, agent_id=agent_id,
                         quarantine=quarantine)
    except _importer(runtime)[1] as exc:
        log("backstop_skipped", session=f"{runtime}/{stem}", detail=f"transcript unreadable: {type(exc).__name__}: {exc}"[:300])
        return 0
    target = paths.session_spool(runtime, sid)
    for env in filled:
        spool.append(target, envelope.dumps(env))
    for rec in quarantine:
        spool.append(paths.quarantine_spool_file(fleet_id), json.dumps(rec) + "\n")
    spool.atomic_write(rpath, "".join(i + "\n" for i in sorted(have)).encode())
    log("transcript_reconciled", session=f"{runtime}/{stem}", filled=len(filled),
        by_type={t: sum(1 for e in filled if e["event_type"] == t) for t in sorted({e["event_type"] for e in filled})})
    return len(filled)
