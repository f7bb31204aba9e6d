"""Claude Code hook adapter (docs/design.md §6; payload fields as Claude Code sends them — see
``tests/fixtures/claude-hooks``; answer fields from the Claude Code hooks reference).

Mapping: SessionStart→session_start (answer: ``hookSpecificOutput.additionalContext`` = the
briefing), UserPromptSubmit→prompt (``prompt``, falling back to ``user_input``),
PreToolUse/PostToolUse/PostToolUseFailure→tool_call (``tool_name``, ``tool_input``,
``tool_use_id``; output from ``tool_response`` — not ``tool_result``, reference bug 12.2 #2; a
failure's output and exit status from ``error``, ``"Exit code <n>\n…"`` for a shell command),
PreCompact→compact (``compact_trigger``), Stop/SubagentStop→assistant (``last_assistant_message``),
SessionEnd→session_end, PostModelSwitch→model_switch (``from_model``, ``to_model``,
``requested_model``, ``source`` as ``switch_source``; Claude Code 2.1.332 fires it for ``/model``).
An MCP tool's ``mcp_server.name`` becomes ``tool.mcp_server``. Other events (Notification, PermissionRequest, SubagentStart, …) get the
default answer and no envelope. PreToolUse on a write tool answers with a lease warning (policy
``warn``) or a ``permissionDecision: deny`` (policy ``block``). Standard library only.
"""
from __future__ import annotations

import os

EVENTS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "prompt",
    "PreToolUse": "tool_call",
    "PostToolUse": "tool_call",
    "PostToolUseFailure": "tool_call",
    "PreCompact": "compact",
    "Stop": "assistant",
    "SubagentStop": "assistant",
    "SessionEnd": "session_end",
    "PostModelSwitch": "model_switch",
}
INSTALL_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
                  "PreCompact", "Stop", "SubagentStop", "SessionEnd", "PostModelSwitch")
WRITE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
SYNC_EVENTS = {"SessionStart": None, "SessionEnd": None, "PreToolUse": WRITE_TOOLS}
"""Events installed synchronously (the agent waits for the answer), ``None`` = every call, a
tuple = only calls of these tools (``install`` writes it as the group's ``matcher``); every other
installed event runs with ``"async": true``. Why each one waits: docs/runtimes.md "Claude Code"."""
PATH_FIELDS = ("file_path", "path", "notebook_path")


def session_id(payload: dict) -> str | None:
    """``session_id`` of the payload, or ``None``."""
    sid = payload.get("session_id")
    return sid if isinstance(sid, str) and sid else None


def failure_exit_code(error) -> int:
    """Exit status of a failed tool call from PostToolUseFailure's ``error``: Claude Code reports
    a failed shell command as ``"Exit code <n>\n<output>"`` (captured from Claude Code 2.1.332,
    ``tests/fixtures/captured/``); any other failure (a tool error, an interrupt) is 1."""
    if isinstance(error, str) and error.startswith("Exit code "):
        head = error[10:].split("\n", 1)[0].strip()
        if head.lstrip("-").isdigit() and int(head) != 0:
            return int(head)
    return 1


USER_KINDS = ("typed", "slash_command", "text_beside_result", "interrupt", "local_command_output",
              "task_notification", "system_reminder", "compaction_summary", "hook_feedback", "subagent_prompt", "meta")
"""What a user-role record is (docs/architecture.md "User records"); only ``typed`` is a prompt."""
_TAG_KINDS = (("<command-name>", "slash_command"), ("<command-message>", "slash_command"),
              ("<local-command-stdout>", "local_command_output"), ("<local-command-stderr>", "local_command_output"),
              ("<local-command-caveat>", "local_command_output"), ("<bash-input>", "local_command_output"),
              ("<bash-stdout>", "local_command_output"), ("<bash-stderr>", "local_command_output"),
              ("<task-notification>", "task_notification"), ("<system-reminder>", "system_reminder"),
              ("<user-prompt-submit-hook>", "hook_feedback"))


def user_kind(text: str, *, meta: bool = False, sidechain: bool = False, beside_result: bool = False) -> str:
    """The kind of a user-role text (a transcript record or a hook's prompt), by the first rule
    that matches (docs/architecture.md "User records"):

    ``[Request interrupted by user…`` → ``interrupt``; a leading ``<command-name>`` /
    ``<command-message>`` wrapper, or a hook prompt ``/name …`` → ``slash_command``;
    ``<local-command-stdout|stderr|caveat>``, ``<bash-input|stdout|stderr>`` →
    ``local_command_output``; ``<task-notification>`` → ``task_notification``;
    ``<system-reminder>`` → ``system_reminder``; ``Stop hook feedback:`` or
    ``<user-prompt-submit-hook>`` → ``hook_feedback``; text beside a tool result →
    ``text_beside_result``; an ``isMeta`` record → ``meta``; an ``isSidechain`` record (the
    parent agent's instruction to a sub-agent) → ``subagent_prompt``; else ``typed``.
    """
    head = text.lstrip()[:200]
    if head.startswith("[Request interrupted by user"):
        return "interrupt"
    for tag, kind in _TAG_KINDS:
        if head.startswith(tag):
            return kind
    if head.startswith("Stop hook feedback:"):
        return "hook_feedback"
    if beside_result:
        return "text_beside_result"
    if meta:
        return "meta"
    if sidechain:
        return "subagent_prompt"
    if head.startswith("/") and len(head) > 1 and (head[1:].split(None, 1) or [""])[0].replace(":", "").replace("-", "").replace("_", "").isalnum():
        return "slash_command"
    return "typed"


FAILURE_REASONS = ("user_rejected", "permission_denied", "cancelled_sibling", "interrupted", "exit_code", "tool_error")


def failure_reason(output, is_error: bool, interrupted: bool = False) -> str | None:
    """Why a tool call failed, from the text Claude Code returned to the model (docs/architecture.md
    "User records"): ``None`` when it did not fail; ``user_rejected`` ("The user doesn't want to
    proceed…"), ``permission_denied`` ("Permission to use … has been denied", "… requested
    permissions …"), ``cancelled_sibling`` ("Sibling tool call errored", "Cancelled: parallel
    tool call…"), ``interrupted`` (the runtime's interrupt flag or marker), ``exit_code`` (a
    shell's "Exit code <n>"), else ``tool_error``."""
    if not is_error and not interrupted:
        return None
    text = output if isinstance(output, str) else ""
    head = text.lstrip()[:300]
    low = head.lower()
    if interrupted or head.startswith("[Request interrupted") or low.startswith("interrupted by user"):
        return "interrupted"
    if "the user doesn't want to proceed" in low or "user rejected" in low:
        return "user_rejected"
    if ("permission" in low and "denied" in low) or "requested permissions" in low:
        return "permission_denied"
    if "sibling tool call errored" in low or "cancelled: parallel tool call" in low:
        return "cancelled_sibling"
    if head.startswith("Exit code "):
        return "exit_code"
    return "tool_error"


def tool_paths(tool_input) -> list[str]:
    """Paths a tool call names: ``file_path``, ``path``, ``notebook_path`` of ``tool_input``."""
    if not isinstance(tool_input, dict):
        return []
    return [tool_input[k] for k in PATH_FIELDS if isinstance(tool_input.get(k), str) and tool_input[k]]


def answer_before_payload(event: str, ctx) -> dict | None:
    """The answer when it does not depend on the payload (printed before stdin is read), else None."""
    if event == "SessionStart":
        text = ctx.briefing()
        if text:
            return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
        return {}
    if event == "PreToolUse":
        return None
    return {}


def collision_answer(tool_name, tool_input, cwd, ctx) -> dict:
    """PreToolUse answer for a write tool (Edit, Write, MultiEdit, NotebookEdit): ``{}`` when
    nobody else is on these paths; else the lease holders (holder, reason, expiry) and, as a
    softer note, other live agents' recent edits of them (from the cached roster).

    Policy ``warn`` (default): ``hookSpecificOutput.additionalContext`` (read by the model) and
    ``systemMessage`` (shown to the user); the call proceeds through the normal permission
    flow. Policy ``block`` with a lease conflict: ``permissionDecision: "deny"`` with the
    message as ``permissionDecisionReason`` (shown to the model) — recent edits alone never
    deny. Field names as documented in the Claude Code hooks reference (PreToolUse decision
    control).
    """
    if tool_name not in WRITE_TOOLS:
        return {}
    paths = tool_paths(tool_input)
    cwd = cwd if isinstance(cwd, str) else None
    held = ctx.lease_conflicts(paths, cwd)
    holders = {h.get("holder") for h in held}
    touches = [t for t in ctx.recent_touches(paths, cwd) if t["agent_id"] not in holders]
    if not held and not touches:
        return {}
    parts = []
    if held:
        from lib.live.leases import refusal_message

        parts.append(refusal_message(held, ctx.store_now()))
    if touches:
        from lib.live.presence import touch_message

        parts.append(touch_message(touches))
    msg = "\n".join(parts)
    if held and ctx.lease_policy() == "block":
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": msg}, "systemMessage": msg}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": msg}, "systemMessage": msg}


def answer(event: str, payload: dict, ctx) -> dict:
    """The JSON Claude Code reads from the hook's stdout for ``event``."""
    early = answer_before_payload(event, ctx)
    if early is not None:
        return early
    return collision_answer(payload.get("tool_name"), payload.get("tool_input"), payload.get("cwd"), ctx)


def _ids(payload: dict, sid: str):
    from lib import identity

    def make(kind: str, *source) -> str | None:
        return identity.event_id(sid, kind, *source) if all(isinstance(x, str) and x for x in source) else None

    return make


def to_envelopes(event: str, payload: dict, builder, ctx) -> list[dict]:
    """Map one payload to envelopes (zero for unmapped events). Raw values go to ``builder``,
    which truncates and redacts them. Event ids come from the runtime's own ids
    (docs/architecture.md "Event identity"): ``tool_use_id`` (PostToolUse/PostToolUseFailure:
    the same id as the import of the transcript's call; PreToolUse: its own), ``prompt_id``
    (UserPromptSubmit, Stop), the session id (the first SessionStart, SessionEnd); a
    PostToolUse is placed at the call's start (now − ``duration_ms``), where the transcript's
    ``tool_use`` record is. A turn's events carry ``turn_id`` = ``prompt_id``, as the import of
    the transcript gives them."""
    import time

    from lib.clock import format_time

    etype = EVENTS.get(event)
    if etype is None:
        return []
    sid = builder.session_id
    ids = _ids(payload, sid)
    common = {"cwd": payload.get("cwd") if isinstance(payload.get("cwd"), str) else None}
    cwd = common["cwd"]
    if cwd and os.path.isdir(cwd):
        from lib import repo

        info = repo.identify(cwd)
        if info:
            common.update(repo=info.get("repo_id"), branch=info.get("branch"), git_sha=info.get("git_sha"))
    now = time.time()
    turn = {"turn_id": payload["prompt_id"]} if isinstance(payload.get("prompt_id"), str) and payload["prompt_id"] else {}
    if etype == "session_start":
        first = payload.get("source") in (None, "", "startup")
        return [builder.make("session_start", injected_context=ctx.injected, emitted_at=format_time(now),
                             event_id=ids("start") if first else None, **common)]
    if etype == "prompt":
        text = payload.get("prompt")
        if not isinstance(text, str):
            text = payload.get("user_input") if isinstance(payload.get("user_input"), str) else None
        kind = user_kind(text) if text else "typed"
        eid = ids("prompt", payload.get("prompt_id"))
        if kind == "typed":
            return [builder.make("prompt", role="user", content=text, event_id=eid, **turn, **common)]
        return [builder.make("context", role="user", content=text, event_id=eid, fields={"user_kind": kind},
                             **turn, **common)]
    if etype == "tool_call":
        tid = payload.get("tool_use_id")
        tool = {"name": payload.get("tool_name") or "unknown", "input": payload.get("tool_input"),
                "paths": tool_paths(payload.get("tool_input"))}
        server = payload.get("mcp_server")
        if isinstance(server, dict) and isinstance(server.get("name"), str):
            tool["mcp_server"] = server["name"]
        fields, emitted = {}, now
        dur = payload.get("duration_ms")
        if isinstance(dur, (int, float)) and not isinstance(dur, bool) and 0 <= dur < 1 << 53:
            tool["duration_ms"] = int(dur)
        if event == "PreToolUse":
            return [builder.make("tool_call", tool=tool, message_id=tid, event_id=ids("tool_pre", tid),
                                 emitted_at=format_time(now), **turn, **common)]
        if event == "PostToolUse":
            tool["result"] = payload.get("tool_response")
            tool["exit_code"] = 0
        else:
            tool["result"] = payload.get("error") if payload.get("error") is not None else payload.get("tool_response")
            tool["exit_code"] = failure_exit_code(payload.get("error"))
            fields["failure_reason"] = failure_reason(payload.get("error"), True, payload.get("is_interrupt") is True)
        if "duration_ms" in tool:
            emitted = now - tool["duration_ms"] / 1000.0
            fields["observed_at"] = format_time(now)
        return [builder.make("tool_call", tool=tool, message_id=tid, event_id=ids("tool", tid),
                             emitted_at=format_time(emitted), fields=fields, **turn, **common)]
    if etype == "model_switch":
        got = {k: payload[k] for k in ("from_model", "to_model", "requested_model") if isinstance(payload.get(k), str)}
        if isinstance(payload.get("source"), str):
            got["switch_source"] = payload["source"]
        eid = ids("model_switch", payload.get("prompt_id"), got.get("from_model"), got.get("to_model"))
        return [builder.make("model_switch", event_id=eid, fields=got, **turn, **common)]
    if etype == "compact":
        text = payload.get("custom_instructions") or None
        trigger = payload.get("trigger") if isinstance(payload.get("trigger"), str) else None
        return [builder.make("compact", content=text if isinstance(text, str) else None,
                             fields={"compact_trigger": trigger}, **common)]
    if etype == "assistant":
        text = payload.get("last_assistant_message")
        extra = {}
        if event == "SubagentStop" and isinstance(payload.get("agent_id"), str):
            extra["parent_message_id"] = "subagent:" + payload["agent_id"]
            eid = ids("subagent_stop", payload["agent_id"])
        else:
            eid = ids("stop", payload.get("prompt_id"))
            extra.update(turn)
        return [builder.make("assistant", role="assistant", content=text if isinstance(text, str) else None,
                             event_id=eid, **extra, **common)]
    return [builder.make("session_end", content=payload.get("reason") if isinstance(payload.get("reason"), str) else None,
                         event_id=ids("end"), **common)]


def transcript_path(payload: dict, environ=None) -> str | None:
    """The session's transcript file as Claude Code names it in every hook payload
    (``transcript_path``), or ``None``."""
    path = payload.get("transcript_path")
    return path if isinstance(path, str) and path else None


def done_marker(event: str, payload: dict) -> dict | None:
    """Contents of ``<session>.done`` when ``event`` ends the session, else ``None``."""
    if event != "SessionEnd":
        return None
    out = {"event": event}
    if isinstance(payload.get("transcript_path"), str):
        out["transcript_path"] = payload["transcript_path"]
    return out
