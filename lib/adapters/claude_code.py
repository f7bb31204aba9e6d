"""Claude Code hook adapter (DESIGN.md §6; payload fields as Claude Code sends them — see
``tests/fixtures/claude-hooks``; answer fields from the Claude Code hooks reference).

Mapping: SessionStart→session_start (answer: ``hookSpecificOutput.additionalContext`` = the
briefing), UserPromptSubmit→prompt (``prompt``, falling back to ``user_input``),
PreToolUse/PostToolUse/PostToolUseFailure→tool_call (``tool_name``, ``tool_input``,
``tool_use_id``; output from ``tool_response`` — not ``tool_result``, reference bug 12.2 #2; a
failure's output and exit status from ``error``, ``"Exit code <n>\n…"`` for a shell command),
PreCompact→compact, Stop/SubagentStop→assistant (``last_assistant_message``),
SessionEnd→session_end. Other events (Notification, PermissionRequest, SubagentStart, …) get the
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
}
INSTALL_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
                  "PreCompact", "Stop", "SubagentStop", "SessionEnd")
WRITE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
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
        from lib.live import refusal_message

        parts.append(refusal_message(held, ctx.store_now()))
    if touches:
        from lib.roster import touch_message

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


def to_envelopes(event: str, payload: dict, builder, ctx) -> list[dict]:
    """Map one payload to envelopes (zero for unmapped events). Raw values go to ``builder``,
    which truncates and redacts them."""
    etype = EVENTS.get(event)
    if etype is None:
        return []
    common = {"cwd": payload.get("cwd") if isinstance(payload.get("cwd"), str) else None}
    cwd = common["cwd"]
    if cwd and os.path.isdir(cwd):
        from lib import repo

        info = repo.identify(cwd)
        if info:
            common.update(repo=info.get("repo_id"), branch=info.get("branch"), git_sha=info.get("git_sha"))
    if etype == "session_start":
        return [builder.make("session_start", injected_context=ctx.injected, **common)]
    if etype == "prompt":
        text = payload.get("prompt")
        if not isinstance(text, str):
            text = payload.get("user_input") if isinstance(payload.get("user_input"), str) else None
        return [builder.make("prompt", role="user", content=text, **common)]
    if etype == "tool_call":
        tool = {"name": payload.get("tool_name") or "unknown", "input": payload.get("tool_input"),
                "paths": tool_paths(payload.get("tool_input"))}
        if event == "PostToolUse":
            tool["result"] = payload.get("tool_response")
            tool["exit_code"] = 0
        elif event == "PostToolUseFailure":
            tool["result"] = payload.get("error") if payload.get("error") is not None else payload.get("tool_response")
            tool["exit_code"] = failure_exit_code(payload.get("error"))
        if isinstance(payload.get("duration_ms"), (int, float)):
            tool["duration_ms"] = int(payload["duration_ms"])
        return [builder.make("tool_call", tool=tool, message_id=payload.get("tool_use_id"), **common)]
    if etype == "compact":
        text = payload.get("custom_instructions") or None
        return [builder.make("compact", content=text if isinstance(text, str) else None,
                             turn_id=payload.get("trigger"), **common)]
    if etype == "assistant":
        text = payload.get("last_assistant_message")
        extra = {}
        if event == "SubagentStop" and isinstance(payload.get("agent_id"), str):
            extra["parent_message_id"] = "subagent:" + payload["agent_id"]
        return [builder.make("assistant", role="assistant", content=text if isinstance(text, str) else None,
                             **extra, **common)]
    return [builder.make("session_end", content=payload.get("reason") if isinstance(payload.get("reason"), str) else None,
                         **common)]


def done_marker(event: str, payload: dict) -> dict | None:
    """Contents of ``<session>.done`` when ``event`` ends the session, else ``None``."""
    if event != "SessionEnd":
        return None
    out = {"event": event}
    if isinstance(payload.get("transcript_path"), str):
        out["transcript_path"] = payload["transcript_path"]
    return out
