"""Cursor hook adapter (docs/design.md §6; docs/runtimes.md).

Payload fields as Cursor sends them on stdin (the shapes in ``tests/fixtures/cursor-hooks``,
authored for this project after real ``cursor-agent`` and Cursor IDE captures): every event
carries ``conversation_id``, ``generation_id``, ``model``, ``hook_event_name``,
``cursor_version``, ``workspace_roots`` and ``transcript_path`` (``null`` early in a session),
often ``session_id`` and ``user_email``. Facts that each cost a silent bug elsewhere
(docs/runtimes.md):

- the session is ``conversation_id`` (older builds send no ``session_id`` at all);
- ``cwd`` arrives empty, so the working directory is ``workspace_roots[0]``;
- ``postToolUse`` ``tool_output`` is a JSON *string* ``{"output": ..., "exitCode": N}``: the
  result is the decoded ``output`` and the exit code ``exitCode``;
- ``duration`` is a float of milliseconds (``1089.021`` → 1089);
- ``user_email`` is never read: no envelope field is built from it.

Mapping: sessionStart→session_start, beforeSubmitPrompt→prompt (``prompt``),
preToolUse/postToolUse/postToolUseFailure→tool_call (``tool_name``, ``tool_input``,
``tool_use_id``), the specific tool events (before/afterShellExecution, before/afterMCPExecution,
beforeReadFile, afterFileEdit, subagentStart/Stop)→tool_call, afterAgentResponse→assistant
(``text``, token counts), stop→assistant (no text), preCompact→compact, sessionEnd→session_end
(+ ``.done``).

Answers (Cursor's documented output fields): the permission events (preToolUse,
beforeShellExecution, beforeMCPExecution, beforeReadFile, subagentStart) answer
``{"permission": "allow"}``; preToolUse on a write tool whose path another live agent leases
answers ``deny`` with ``user_message``/``agent_message`` under policy ``block`` and ``allow``
with the same messages under ``warn``. beforeSubmitPrompt answers ``{"continue": true}``;
sessionStart answers ``{"additional_context": <briefing>}`` when the cache holds one (Cursor's
documented sessionStart output; not yet verified against a live capture); everything else
``{}``.

The answer path imports neither ``json`` nor ``re`` (hook latency budget, docs/design.md §12);
:func:`to_envelopes` runs in the capture child and may.
"""
from __future__ import annotations

EVENTS = {
    "sessionStart": "session_start",
    "beforeSubmitPrompt": "prompt",
    "preToolUse": "tool_call",
    "postToolUse": "tool_call",
    "postToolUseFailure": "tool_call",
    "beforeShellExecution": "tool_call",
    "afterShellExecution": "tool_call",
    "beforeMCPExecution": "tool_call",
    "afterMCPExecution": "tool_call",
    "beforeReadFile": "tool_call",
    "afterFileEdit": "tool_call",
    "subagentStart": "tool_call",
    "subagentStop": "tool_call",
    "afterAgentResponse": "assistant",
    "stop": "assistant",
    "preCompact": "compact",
    "sessionEnd": "session_end",
}
INSTALL_EVENTS = ("sessionStart", "beforeSubmitPrompt", "preToolUse", "postToolUse", "postToolUseFailure",
                  "afterAgentResponse", "preCompact", "sessionEnd")
"""What ``ctxlake install cursor`` wires. The generic tool events cover every tool (Shell, Read,
Write, MCP, ...), so the tool-specific events are not wired too (they would capture each call
twice); the adapter still maps them for hand-written configs."""
PERMISSION_EVENTS = ("preToolUse", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "subagentStart")
WRITE_TOOLS = ("Write", "Edit", "StrReplace", "MultiEdit", "Delete", "EditNotebook", "TabWrite")
PATH_FIELDS = ("file_path", "path", "target_file", "filePath", "notebook_path")
NEVER_READ = ("user_email",)
"""Payload fields no envelope is ever built from (personal data)."""


def session_id(payload: dict) -> str | None:
    """``conversation_id`` (Cursor's session), else ``session_id``; ``None`` when neither is a
    non-empty string."""
    for key in ("conversation_id", "session_id"):
        sid = payload.get(key)
        if isinstance(sid, str) and sid:
            return sid
    return None


def runtime_version(payload: dict) -> str | None:
    """``cursor_version`` (e.g. ``3.1.10`` or ``2026.08.25-3e8eec8``), or ``None``."""
    v = payload.get("cursor_version")
    return v if isinstance(v, str) and v else None


def workdir(payload: dict) -> str | None:
    """``workspace_roots[0]`` (``cwd`` arrives empty), else a non-empty ``cwd``, else ``None``."""
    roots = payload.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0]:
        return roots[0]
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def tool_paths(event: str, payload: dict) -> list[str]:
    """Paths a tool event names: top-level ``file_path`` (afterFileEdit, beforeReadFile) and the
    ``file_path``/``path``/``target_file``/``filePath``/``notebook_path`` of a dict ``tool_input``."""
    out = []
    fp = payload.get("file_path")
    if isinstance(fp, str) and fp:
        out.append(fp)
    ti = payload.get("tool_input")
    if isinstance(ti, dict):
        for k in PATH_FIELDS:
            v = ti.get(k)
            if isinstance(v, str) and v and v not in out:
                out.append(v)
    return out


def answer_before_payload(event: str, ctx) -> dict | None:
    """The answer when it does not depend on the payload (printed before stdin is read), else
    ``None`` (preToolUse: the lease check needs the tool input)."""
    if event == "preToolUse":
        return None
    if event in PERMISSION_EVENTS:
        return {"permission": "allow"}
    if event == "beforeSubmitPrompt":
        return {"continue": True}
    if event == "sessionStart":
        text = ctx.briefing()
        return {"additional_context": text} if text else {}
    return {}


def answer(event: str, payload: dict, ctx) -> dict:
    """The JSON Cursor reads from the hook's stdout for ``event``.

    preToolUse on a write tool (``Write``, ``Edit``, ``StrReplace``, ``MultiEdit``, ``Delete``,
    ...) consults the cached lease view: a path held by another live agent answers
    ``{"permission": "deny" | "allow", "user_message", "agent_message"}`` naming holder,
    reason and expiry (``deny`` only under policy ``block``; leases are advisory).
    """
    early = answer_before_payload(event, ctx)
    if early is not None:
        return early
    if payload.get("tool_name") not in WRITE_TOOLS:
        return {"permission": "allow"}
    paths, cwd = tool_paths(event, payload), workdir(payload)
    held = ctx.lease_conflicts(paths, cwd)
    holders = {h.get("holder") for h in held}
    touches = [t for t in ctx.recent_touches(paths, cwd) if t["agent_id"] not in holders]
    if not held and not touches:
        return {"permission": "allow"}
    parts = []
    if held:
        from lib.live.leases import refusal_message

        parts.append(refusal_message(held, ctx.store_now()))
    if touches:  # another live agent's recent edit: a note, never a deny
        from lib.live.presence import touch_message

        parts.append(touch_message(touches))
    msg = "\n".join(parts)
    decision = "deny" if held and ctx.lease_policy() == "block" else "allow"
    return {"permission": decision, "user_message": msg, "agent_message": msg}


def _ms(value) -> int | None:
    """A duration in ms as an int; Cursor sends floats (``1089.021`` → 1089)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return int(value)


def decode_tool_output(raw) -> tuple[object, int | None]:
    """``(result, exit_code)`` from postToolUse ``tool_output``.

    Cursor sends a JSON string ``{"output": "...", "exitCode": 0}`` for shell tools: the result
    is the decoded ``output`` text and the exit code ``exitCode``. A string that is not such an
    object is the result as it is; an object (a build that stops double-encoding) is read the
    same way.
    """
    obj = raw
    if isinstance(raw, str):
        s = raw.lstrip()
        if s.startswith("{"):
            import json

            try:
                obj = json.loads(raw)
            except ValueError:
                return raw, None
        else:
            return raw, None
    if isinstance(obj, dict) and "output" in obj:
        code = obj.get("exitCode", obj.get("exit_code"))
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        return obj.get("output"), code
    return obj, None


def _tool(event: str, payload: dict) -> tuple[dict, str | None]:
    """``(tool dict, message_id)`` for a tool event."""
    tool: dict = {"paths": tool_paths(event, payload)}
    mid = payload.get("tool_use_id") or payload.get("tool_call_id")
    if event in ("preToolUse", "postToolUse", "postToolUseFailure"):
        tool["name"] = payload.get("tool_name") or "unknown"
        tool["input"] = payload.get("tool_input")
        if event == "postToolUse":
            result, code = decode_tool_output(payload.get("tool_output"))
            tool["result"] = result
            tool["exit_code"] = code if code is not None else 0
        elif event == "postToolUseFailure":
            err = payload.get("error_message")
            tool["result"] = err if err is not None else payload.get("tool_output")
            tool["exit_code"] = 1
    elif event in ("beforeShellExecution", "afterShellExecution"):
        tool["name"] = "Shell"
        tool["input"] = {"command": payload.get("command")} if payload.get("command") is not None else None
        if event == "afterShellExecution":  # not double-encoded: ``output`` and ``duration`` direct
            tool["result"] = payload.get("output")
            code = payload.get("exit_code", payload.get("exitCode"))
            if isinstance(code, int) and not isinstance(code, bool):
                tool["exit_code"] = code
    elif event in ("beforeMCPExecution", "afterMCPExecution"):
        server = payload.get("mcp_server_name") or payload.get("server_name")
        base = payload.get("tool_name") or "unknown"
        tool["name"] = f"mcp:{server}:{base}" if server else f"mcp:{base}"
        tool["input"] = payload.get("tool_input")
        if event == "afterMCPExecution":
            tool["result"] = payload.get("result_json")
    elif event == "beforeReadFile":
        tool["name"] = "Read"
        tool["input"] = {"file_path": payload.get("file_path")}
    elif event == "afterFileEdit":
        tool["name"] = "Edit"
        tool["input"] = {"file_path": payload.get("file_path"), "edits": payload.get("edits")}
        tool["exit_code"] = 0
    else:  # subagentStart / subagentStop
        tool["name"] = "subagent:" + str(payload.get("subagent_type") or "unknown")
        tool["input"] = payload.get("task")
        if event == "subagentStop":
            tool["result"] = payload.get("summary")
        mid = mid or payload.get("subagent_id")
    dur = _ms(payload.get("duration"))
    if dur is None:
        dur = _ms(payload.get("duration_ms"))
    if dur is not None and event not in ("preToolUse", "beforeShellExecution", "beforeMCPExecution",
                                          "beforeReadFile", "subagentStart"):
        tool["duration_ms"] = dur
    return tool, mid if isinstance(mid, str) and mid else None


def _usage(payload: dict) -> dict | None:
    """Token counts of afterAgentResponse (``input_tokens``, ``output_tokens``), with ``model``."""
    it, ot = payload.get("input_tokens"), payload.get("output_tokens")
    if not isinstance(it, int) and not isinstance(ot, int):
        return None
    u = {"input_tokens": it if isinstance(it, int) else 0, "output_tokens": ot if isinstance(ot, int) else 0,
         "cache_read_tokens": 0, "cache_write_tokens": 0}
    model = payload.get("model")
    if isinstance(model, str) and model and model not in ("default", "unknown"):
        u["model"] = model
    return u


def to_envelopes(event: str, payload: dict, builder, ctx) -> list[dict]:
    """Map one payload to envelopes (zero for unmapped events). Raw values go to ``builder``,
    which truncates and redacts them; ``user_email`` is never read. Event ids come from
    Cursor's own ids (docs/architecture.md "Event identity"): ``tool_use_id`` (else
    ``tool_call_id``, ``subagent_id``; ``tool_pre`` for the permission events, ``tool`` for
    the rest), the turn's ``generation_id`` (prompt, afterAgentResponse, stop; only where it is
    not the conversation id), the session (start, end); a preCompact, and any event lacking
    its id, keeps a ULID. So a session wired twice (user and project ``hooks.json``) keeps one
    copy of each event."""
    etype = EVENTS.get(event)
    if etype is None:
        return []
    from lib.adapters import repo_fields

    from lib import identity

    common = repo_fields(workdir(payload))
    sid = builder.session_id
    gen = payload.get("generation_id")
    if isinstance(gen, str) and gen and etype != "session_start":
        common["turn_id"] = gen
    # a turn's own id: the IDE gives each prompt a generation_id; cursor-agent repeats the
    # conversation id there, which names no turn (docs/architecture.md "Event identity")
    turn = gen if isinstance(gen, str) and gen and gen != sid and gen != payload.get("conversation_id") else None
    if etype == "session_start":
        return [builder.make("session_start", injected_context=ctx.injected, event_id=identity.event_id(sid, "start"),
                             **common)]
    if etype == "prompt":
        text = payload.get("prompt")
        return [builder.make("prompt", role="user", content=text if isinstance(text, str) else None,
                             event_id=identity.event_id(sid, "prompt", turn) if turn else None, **common)]
    if etype == "tool_call":
        tool, mid = _tool(event, payload)
        kind = "tool_pre" if event in PERMISSION_EVENTS else "tool"
        return [builder.make("tool_call", tool=tool, message_id=mid,
                             event_id=identity.event_id(sid, kind, mid) if mid else None, **common)]
    if etype == "assistant":
        text = payload.get("text") if event == "afterAgentResponse" else None
        kind = "assistant" if event == "afterAgentResponse" else "stop"
        return [builder.make("assistant", role="assistant", content=text if isinstance(text, str) else None,
                             usage=_usage(payload) if event == "afterAgentResponse" else None,
                             event_id=identity.event_id(sid, kind, turn) if turn else None, **common)]
    if etype == "compact":
        trigger = payload.get("trigger")
        return [builder.make("compact", content=trigger if isinstance(trigger, str) else None, **common)]
    reason = payload.get("reason")
    return [builder.make("session_end", content=reason if isinstance(reason, str) else None,
                         event_id=identity.event_id(sid, "end"), **common)]


def transcript_path(payload: dict, environ=None) -> str | None:
    """The session's transcript file when Cursor names one (``transcript_path``), or ``None``."""
    path = payload.get("transcript_path")
    return path if isinstance(path, str) and path else None


def done_marker(event: str, payload: dict) -> dict | None:
    """Contents of ``<session>.done`` when ``event`` is sessionEnd, else ``None``."""
    if event != "sessionEnd":
        return None
    out = {"event": event}
    if isinstance(payload.get("transcript_path"), str):
        out["transcript_path"] = payload["transcript_path"]
    return out
