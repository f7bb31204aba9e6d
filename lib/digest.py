"""Session digests: one summary per sealed session, for ``ctxlake sessions``, the snapshot's
``sessions`` table and the briefing (DESIGN.md §10; field list from reference spec §10).

:func:`digest` is a pure function of a session's envelopes. Tool calls appear twice when both
PreToolUse and PostToolUse were captured; commands are the shell calls (:data:`SHELL_TOOLS`)
among envelopes that carry an exit code (post events and imports), de-duplicated by
``message_id``. An edit or a read is a file touched, not a command.
"""
from __future__ import annotations

import json
import re

DIGEST_SCHEMA_VERSION = 4
"""2 added ``ids`` (message and event ids, for the gate's evidence check) and ``injected_claims``;
3: envelopes ordered by ``(emitted_at, event_id)`` (ids no longer carry time), orphan results
are not commands, ``context`` records are not prompts, and maint stamps ``sources``; 4: only
shell calls are commands (an ``Edit`` was counted as a command whose text was its path)."""
SHELL_TOOLS = ("Bash", "Shell", "terminal")
"""Shell tool names: Claude Code ``Bash``, Cursor ``Shell``, Hermes ``terminal``."""
_TEST_CMD = re.compile(r"\b(cargo test|pytest|py\.test|npm (?:run )?test|yarn test|pnpm test|go test|jest|vitest|mvn test|"
                       r"make test|gradle test|rspec|phpunit|tox|nox|mix test|dotnet test)\b")


def _command(tool: dict) -> str:
    raw = tool.get("input")
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            for k in ("command", "cmd", "pattern", "file_path", "path", "url", "query", "description"):
                if isinstance(parsed.get(k), str) and parsed[k]:
                    return parsed[k][:300]
        elif raw:
            return raw[:300]
    return tool.get("name") or "unknown"


def _ms(ts: str) -> int:
    from lib.envelope import parse_time

    return int(parse_time(ts) * 1000)


def digest(envs: list[dict]) -> dict:
    """Digest of one session's envelopes (any order; sorted by :func:`lib.identity.order` here).

    Returns ``{schema_version, session_id, fleet_id, agent_id, runtime, repo, branch,
    started_at, ended_at, duration_ms, turn_count, files_touched[], commands[{tool, command,
    exit_code, is_test}], commands_ok, commands_failed, tests_run[], commits[], usage{…},
    outcome: clean|error|abandoned, friction[], summary, imported, ids[] (every message and
    event id: what a claim may cite), injected_claims[] (claim ids the session was shown)}``. ``repo`` is the
    normalized origin when the hook could resolve it, else the working directory's name.
    :raises ValueError: no envelopes.
    """
    if not envs:
        raise ValueError("cannot digest an empty session")
    from lib.identity import order

    envs = sorted(envs, key=order)
    first = envs[0]
    files: set = set()
    commands, seen_calls = [], set()
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.0}
    turns, first_prompt, last_assistant, ended = 0, None, None, False
    repo = branch = cwd = None
    path_count: dict = {}
    ids: set = set()
    injected: set = set()
    for e in envs:
        ids.add(e["event_id"])
        if e.get("message_id"):
            ids.add(e["message_id"])
        for c in e.get("injected_context") or []:
            injected.add(c if isinstance(c, str) else str(c.get("claim_id")) if isinstance(c, dict) else str(c))
        repo = repo or e.get("repo")
        cwd = cwd or e.get("cwd")
        branch = branch or e.get("branch")
        et = e.get("event_type")
        if et == "prompt":
            turns += 1
            if first_prompt is None and e.get("content"):
                first_prompt = e["content"]
        elif et == "assistant" and e.get("content"):
            last_assistant = e["content"]
        elif et == "session_end":
            ended = True
        tool = e.get("tool")
        if tool:
            for p in tool.get("paths") or []:
                files.add(p)
                if tool.get("exit_code") is not None or e.get("imported"):
                    path_count[p] = path_count.get(p, 0) + 1
            if tool.get("exit_code") is not None and not e.get("orphan_result") and tool.get("name") in SHELL_TOOLS:
                call_id = e.get("message_id") or e["event_id"]
                if call_id not in seen_calls:
                    seen_calls.add(call_id)
                    cmd = _command(tool)
                    commands.append({"tool": tool.get("name"), "command": cmd, "exit_code": tool["exit_code"],
                                     "is_test": bool(_TEST_CMD.search(cmd))})
        u = e.get("usage")
        if u:
            for k in usage:
                usage[k] += u.get(k) or 0
    failed = [c for c in commands if c["exit_code"]]
    friction = []
    fail_counts: dict = {}
    for c in failed:
        fail_counts[c["command"]] = fail_counts.get(c["command"], 0) + 1
    streak_cmd, streak = None, 0
    for c in reversed(commands):
        if c["exit_code"] and (streak_cmd in (None, c["command"])):
            streak_cmd, streak = c["command"], streak + 1
        else:
            break
    abandoned = streak >= 3 and not ended
    if abandoned:
        friction.append({"kind": "abandoned_after_failures", "command": streak_cmd, "count": streak})
    for cmd, n in sorted(fail_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if n >= 2 and not (abandoned and cmd == streak_cmd):
            friction.append({"kind": "repeated_failure", "command": cmd, "count": n})
    for p, n in sorted(path_count.items(), key=lambda kv: (-kv[1], kv[0])):
        if n > 5:
            friction.append({"kind": "hot_file", "path": p, "edit_count": n})
    outcome = "abandoned" if abandoned else ("error" if commands and commands[-1]["exit_code"] else "clean")
    started, ended_at = envs[0]["emitted_at"], envs[-1]["emitted_at"]
    from lib.sanitize import clean

    topic = clean(first_prompt or last_assistant or "", 100, single_line=True) or "(no prompt captured)"
    summary = f"{topic} — {len(commands)} command{'s' if len(commands) != 1 else ''}"
    if failed:
        summary += f" ({len(failed)} failed)"
    summary += f", {len(files)} file{'s' if len(files) != 1 else ''}"
    if outcome != "clean":
        summary += f", {outcome}"
    return {
        "schema_version": DIGEST_SCHEMA_VERSION, "session_id": first["session_id"], "fleet_id": first["fleet_id"],
        "agent_id": first["agent_id"], "runtime": first["runtime"],
        "repo": repo or (cwd.rstrip("/").rsplit("/", 1)[-1] if cwd else None), "branch": branch,
        "started_at": started, "ended_at": ended_at, "duration_ms": max(0, _ms(ended_at) - _ms(started)),
        "turn_count": turns, "event_count": len(envs), "files_touched": sorted(files), "commands": commands,
        "commands_ok": len(commands) - len(failed), "commands_failed": len(failed),
        "tests_run": [c["command"] for c in commands if c["is_test"]],
        "commits": [c["command"] for c in commands if c["command"].startswith("git commit")],
        "usage": usage, "outcome": outcome, "friction": friction, "summary": summary,
        "imported": bool(first.get("imported")), "ids": sorted(ids), "injected_claims": sorted(injected),
    }
