"""Session digests: one summary per sealed session, for ``ctxlake sessions``, the snapshot's
``sessions`` table and the briefing (docs/design.md §10).

:func:`digest` is a pure function of a session's envelopes. Tool calls appear twice when both
PreToolUse and PostToolUse were captured; commands are the shell calls (:data:`SHELL_TOOLS`)
among envelopes that carry an exit code (post events and imports), de-duplicated by
``message_id``. An edit or a read is a file touched, not a command.
"""
from __future__ import annotations

import json
import re

DIGEST_SCHEMA_VERSION = 5
"""2 added ``ids`` (message and event ids, for the gate's evidence check) and ``injected_claims``;
3: envelopes ordered by ``(emitted_at, event_id)`` (ids no longer carry time), orphan results
are not commands, ``context`` records are not prompts, and maint stamps ``sources``; 4: only
shell calls are commands (an ``Edit`` was counted as a command whose text was its path); 5: ``host_id``
(the gate counts independence per host)."""
SHELL_TOOLS = ("Bash", "Shell", "terminal")
"""Shell tool names: Claude Code ``Bash``, Cursor ``Shell``, Hermes ``terminal``."""
WRITE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit", "StrReplace", "Delete", "EditNotebook", "TabWrite",
               "write_file", "patch")
"""Tools that write or edit files (Claude Code, Cursor, Hermes: the adapters' ``WRITE_TOOLS``):
only their paths are a session's ``files_touched`` (a file only read, a directory searched, is not)."""


def repo_label(repo: str | None, cwd: str | None) -> str | None:
    """The name a person reads for a session's repository (issue #16): ``owner/name`` of a
    normalized remote (``github.com/acme/app`` → ``acme/app``); else one folder name, never a
    path — the repository's own name for a git worktree (``…/app-worktrees/x``,
    ``…/app/.claude/worktrees/x`` → ``app``), ``~`` for a home directory (it would name the
    user), POSIX and Windows separators alike."""
    if repo and "/" in repo and not repo.startswith("/") and "\\" not in repo and ":" not in repo.split("/", 1)[0]:
        parts = [p for p in repo.split("/") if p]
        if len(parts) >= 3 and "." in parts[0]:
            return "/".join(parts[1:])
    path = repo or cwd
    if not path:
        return None
    parts = [p for p in path.replace("\\", "/").split("/") if p and not p.endswith(":")]
    if not parts:
        return None
    lower = [p.lower() for p in parts]
    if len(parts) <= 2 and lower[0] in ("home", "users"):
        return "~"
    for i, p in enumerate(lower):
        if p in ("worktrees", ".worktrees") and i > 0:
            j = i - 1
            while j > 0 and lower[j] in (".claude", ".git"):
                j -= 1
            return parts[j]
        if p.endswith("-worktrees") and len(p) > 10:
            return parts[i][:-10]
    return parts[-1]
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
    from lib.clock import parse_time_strict

    return int(parse_time_strict(ts) * 1000)


def digest(envs: list[dict]) -> dict:
    """Digest of one session's envelopes (any order; sorted by :func:`lib.identity.order` here).

    Returns ``{schema_version, session_id, fleet_id, agent_id, runtime, host_id, repo (:func:`repo_label`), branch,
    title (the runtime's own, if any),
    started_at, ended_at, duration_ms, turn_count, files_touched[], commands[{tool, command,
    exit_code, is_test}], commands_ok, commands_failed, tests_run[], commits[], usage{…},
    outcome: clean|error|abandoned, friction[], summary (the title, else the first typed
    prompt), imported, ids[] (every message and
    event id: what a claim may cite), injected_claims[] (claim ids the session was shown)}``;
    ``files_touched`` are paths written or edited (:data:`WRITE_TOOLS`, not failed);
    ``usage.cost_usd`` is ``None`` unless the runtime reported a cost.
    :raises ValueError: no envelopes.
    """
    if not envs:
        raise ValueError("cannot digest an empty session")
    from lib.identity import order

    envs = sorted(envs, key=order)
    first = envs[0]
    files: set = set()
    commands, seen_calls = [], set()
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": None}
    title = None
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
        if isinstance(e.get("title"), str) and e["title"].strip():
            title = e["title"]
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
            writes = tool.get("name") in WRITE_TOOLS and not tool.get("exit_code")
            for p in tool.get("paths") or [] if writes else []:
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
                if k == "cost_usd":  # only where the runtime reported one: 0 would be a claim
                    if isinstance(u.get(k), (int, float)) and not isinstance(u.get(k), bool):
                        usage[k] = (usage[k] or 0.0) + u[k]
                elif isinstance(u.get(k), int) and not isinstance(u.get(k), bool):
                    usage[k] += u[k]
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

    topic = clean(title or first_prompt or last_assistant or "", 100, single_line=True) or "(no prompt captured)"
    summary = f"{topic} — {len(commands)} command{'s' if len(commands) != 1 else ''}"
    if failed:
        summary += f" ({len(failed)} failed)"
    summary += f", {len(files)} file{'s' if len(files) != 1 else ''}"
    if outcome != "clean":
        summary += f", {outcome}"
    return {
        "schema_version": DIGEST_SCHEMA_VERSION, "session_id": first["session_id"], "fleet_id": first["fleet_id"],
        "agent_id": first["agent_id"], "runtime": first["runtime"], "host_id": first.get("host_id"),
        "repo": repo_label(repo, cwd), "branch": branch, "title": title,
        "started_at": started, "ended_at": ended_at, "duration_ms": max(0, _ms(ended_at) - _ms(started)),
        "turn_count": turns, "event_count": len(envs), "files_touched": sorted(files), "commands": commands,
        "commands_ok": len(commands) - len(failed), "commands_failed": len(failed),
        "tests_run": [c["command"] for c in commands if c["is_test"]],
        "commits": [c["command"] for c in commands if c["command"].startswith("git commit")],
        "usage": usage, "outcome": outcome, "friction": friction, "summary": summary,
        "imported": bool(first.get("imported")), "ids": sorted(ids), "injected_claims": sorted(injected),
    }
