"""Hermes Agent shell-hook adapter (docs/design.md §6; docs/runtimes.md).

Hermes (NousResearch ``hermes-agent``) runs the commands under ``hooks:`` in
``~/.hermes/config.yaml`` with ``shlex.split`` and ``shell=False`` and writes one JSON object on
stdin: ``{hook_event_name, tool_name, tool_input, session_id, cwd, extra}`` — every hook keyword
argument that is not a top-level key is folded into ``extra`` (``agent/shell_hooks.py``
``_serialize_payload``; shapes in ``tests/fixtures/hermes-hooks``, captured from a real
hermes-agent 0.19.0 run). Facts that matter:

- tool results and durations are under ``extra`` (``extra.result``, ``extra.duration_ms``), never
  top level (docs/runtimes.md): a top-level ``result`` is not trusted;
- ``extra.result`` is a JSON *string*; for ``terminal`` it holds
  ``{"output", "exit_code", "error"}``: result = ``output``, exit code = ``exit_code``;
  ``extra.status`` is ``ok | error | blocked``;
- ``pre_llm_call``/``post_llm_call`` fire once per user turn and carry ``extra.user_message`` /
  ``extra.assistant_response`` (and the whole ``conversation_history``, which is not read);
- ``on_session_end`` fires at the end of every ``run_conversation`` call, i.e. per turn in an
  interactive session and once in a one-shot ``hermes -z`` run (which fires no
  ``on_session_finalize``); ``on_session_finalize`` fires at the real boundary (exit, ``/new``,
  gateway expiry) with the *old* session id; ``on_session_reset`` fires after ``/new`` with the
  *new* session id.

Mapping: on_session_start→session_start, pre_llm_call→prompt (``extra.user_message``),
post_llm_call→assistant (``extra.assistant_response``), pre_tool_call/post_tool_call→tool_call
(``tool_name``, ``tool_input``, paths from ``tool_input.path``/``file_path``, message id
``extra.tool_call_id``, turn ``extra.turn_id``), on_session_end and on_session_finalize→
session_end (+ ``.done``): a one-shot run fires only on_session_end, so it must end the session;
in an interactive session the first turn's end therefore seals it, and later turns ship as later
segments of the same session (its digest is the one made at the first seal). on_session_reset is
answered and deliberately not captured: it names the session that has just *begun*, and ending
that one would seal it empty.

Answers: ``pre_llm_call`` → ``{"context": <briefing>}`` when the cache holds one (Hermes appends
it to the turn's user message); ``pre_tool_call`` on a write tool whose path another live agent
leases → ``{"action": "block", "message": ...}`` under policy ``block`` (under ``warn`` there is
no channel to tell the agent, so ``{}``); everything else ``{}``. The answer path imports
neither ``json`` nor ``re``.
"""
from __future__ import annotations

import os

EVENTS = {
    "on_session_start": "session_start",
    "pre_llm_call": "prompt",
    "post_llm_call": "assistant",
    "pre_tool_call": "tool_call",
    "post_tool_call": "tool_call",
    "on_session_end": "session_end",
    "on_session_finalize": "session_end",
    "on_session_reset": None,
}
INSTALL_EVENTS = ("on_session_start", "pre_llm_call", "post_llm_call", "pre_tool_call", "post_tool_call",
                  "on_session_end", "on_session_finalize")
"""What ``ctxlake install hermes`` wires (on_session_reset would only be answered)."""
END_EVENTS = ("on_session_end", "on_session_finalize")
WRITE_TOOLS = ("write_file", "patch")
PATH_FIELDS = ("path", "file_path")


def session_id(payload: dict) -> str | None:
    """``session_id`` (Hermes falls back to ``parent_session_id`` itself), else ``None``."""
    sid = payload.get("session_id")
    return sid if isinstance(sid, str) and sid else None


def _extra(payload: dict) -> dict:
    extra = payload.get("extra")
    return extra if isinstance(extra, dict) else {}


def tool_paths(tool_input) -> list[str]:
    """Paths a tool call names: ``path`` / ``file_path`` of ``tool_input`` (``write_file``,
    ``read_file``, ``patch`` use ``path``)."""
    if not isinstance(tool_input, dict):
        return []
    return [tool_input[k] for k in PATH_FIELDS if isinstance(tool_input.get(k), str) and tool_input[k]]


def answer_before_payload(event: str, ctx) -> dict | None:
    """The answer when it does not depend on the payload, else ``None`` (pre_tool_call)."""
    if event == "pre_llm_call":
        text = ctx.briefing()
        return {"context": text} if text else {}
    if event == "pre_tool_call":
        return None
    return {}


def answer(event: str, payload: dict, ctx) -> dict:
    """The JSON Hermes reads from the hook's stdout (``agent/shell_hooks.py`` ``_parse_response``):
    ``{"context": ...}`` for pre_llm_call, ``{"action": "block", "message": ...}`` for a
    pre_tool_call on a leased path under policy ``block``, else ``{}``."""
    early = answer_before_payload(event, ctx)
    if early is not None:
        return early
    if payload.get("tool_name") not in WRITE_TOOLS:
        return {}
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    held = ctx.lease_conflicts(tool_paths(payload.get("tool_input")), cwd)
    if not held or ctx.lease_policy() != "block":
        return {}
    from lib.live.leases import refusal_message

    return {"action": "block", "message": refusal_message(held, ctx.store_now())}


def decode_result(raw) -> tuple[object, int | None]:
    """``(result, exit_code)`` from ``extra.result``: a JSON string holding ``{"output",
    "exit_code"}`` (``terminal``) gives the output text and its exit code; any other string or
    value is the result as it is, with no exit code."""
    obj = raw
    if isinstance(raw, str):
        if not raw.lstrip().startswith("{"):
            return raw, None
        import json

        try:
            obj = json.loads(raw)
        except ValueError:
            return raw, None
    if isinstance(obj, dict) and "output" in obj:
        code = obj.get("exit_code")
        return obj.get("output"), code if isinstance(code, int) and not isinstance(code, bool) else None
    return raw, None


def turn_number(history) -> int | None:
    """The ordinal (1-based) of the turn whose ``conversation_history`` (pre_llm_call /
    post_llm_call ``extra``) this is: how many ``user`` messages it holds, the turn's own
    included; ``None`` when it is not a list."""
    if not isinstance(history, list):
        return None
    return sum(1 for m in history if isinstance(m, dict) and m.get("role") == "user")


def turn_event_id(session_id: str, kind: str, turn: int, content_hash: str) -> str:
    """The id of a turn's prompt (``kind`` ``turn_prompt``) or final reply (``turn_reply``),
    the same from the hooks (pre_llm_call / post_llm_call) and from ``state.db`` (the turn's
    user row / last assistant row with text): Hermes gives neither path a message id the other
    sees, so the id is the turn's ordinal in the session and the sha256 of the redacted text
    (``content_hash``). Two texts never share an id; a count that drifted (a compaction
    rewrote the history) makes a second copy, never merges two turns (docs/architecture.md
    "Event identity")."""
    from lib import identity

    return identity.event_id(session_id, kind, str(turn), content_hash)


def _text(extra: dict, key: str) -> str | None:
    v = extra.get(key)
    return v if isinstance(v, str) else None


def to_envelopes(event: str, payload: dict, builder, ctx) -> list[dict]:
    """Map one payload to envelopes (none for answer-only events). Tool output and duration are
    read from ``extra`` only; raw values go to ``builder``, which truncates and redacts them."""
    etype = EVENTS.get(event)
    if etype is None:
        return []
    from lib.adapters import repo_fields

    extra = _extra(payload)
    common = repo_fields(payload.get("cwd") if isinstance(payload.get("cwd"), str) else None)
    if isinstance(extra.get("turn_id"), str) and extra["turn_id"]:
        common["turn_id"] = extra["turn_id"]
    import time

    from lib import identity
    from lib.clock import format_time

    sid = builder.session_id
    if etype == "session_start":
        return [builder.make("session_start", injected_context=ctx.injected, event_id=identity.event_id(sid, "start"),
                             **common)]
    if etype in ("prompt", "assistant"):
        if etype == "prompt":
            env = builder.make("prompt", role="user", content=_text(extra, "user_message"), injected_context=ctx.injected,
                               **common)
        else:
            env = builder.make("assistant", role="assistant", content=_text(extra, "assistant_response"), **common)
        turn = turn_number(extra.get("conversation_history"))
        if turn and env.get("content"):
            builder.rekey(env, turn_event_id(sid, "turn_prompt" if etype == "prompt" else "turn_reply", turn,
                                             env["content_hash"]))
        return [env]
    if etype == "tool_call":
        tool = {"name": payload.get("tool_name") or "unknown", "input": payload.get("tool_input"),
                "paths": tool_paths(payload.get("tool_input"))}
        if event == "post_tool_call":
            result, code = decode_result(extra.get("result"))
            status = extra.get("status")
            if status in ("error", "blocked"):
                err = extra.get("error_message")
                tool["result"] = err if isinstance(err, str) and err else result
                tool["exit_code"] = code if code else 1
            else:
                tool["result"] = result
                tool["exit_code"] = code if code is not None else 0
            dur = extra.get("duration_ms")
            if isinstance(dur, (int, float)) and not isinstance(dur, bool):
                tool["duration_ms"] = int(dur)
        mid = extra.get("tool_call_id") if isinstance(extra.get("tool_call_id"), str) and extra["tool_call_id"] else None
        now, fields = time.time(), {}
        if event == "post_tool_call" and "duration_ms" in tool and 0 <= tool["duration_ms"] < 1 << 53:
            fields["observed_at"] = format_time(now)  # placed at the call's start, where state.db has it
            now -= tool["duration_ms"] / 1000.0
        eid = identity.event_id(sid, "tool" if event == "post_tool_call" else "tool_pre", mid) if mid else None
        return [builder.make("tool_call", tool=tool, message_id=mid, event_id=eid, emitted_at=format_time(now),
                             fields=fields, **common)]
    reason = _text(extra, "reason") or (("interrupted" if extra.get("interrupted") else "completed")
                                        if event == "on_session_end" else None)
    return [builder.make("session_end", content=reason, event_id=identity.event_id(sid, "end"), **common)]


def transcript_path(payload: dict, environ=None) -> str | None:
    """Hermes' own record of the session: ``$HERMES_HOME/state.db``, else
    ``~/.hermes/state.db`` (as :func:`lib.importers.hermes.default_path` finds it), from the
    hook's environment, which Hermes hands down to its hooks."""
    env = os.environ if environ is None else environ
    base = env.get("HERMES_HOME") or os.path.join(os.path.expanduser("~"), ".hermes")
    return os.path.join(os.path.expanduser(base), "state.db")


def done_marker(event: str, payload: dict) -> dict | None:
    """Contents of ``<session>.done`` for on_session_end / on_session_finalize, else ``None``."""
    if event not in END_EVENTS:
        return None
    return {"event": event}
