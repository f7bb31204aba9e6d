"""Every runtime's installer against every shape an existing file comes in (issue 18, item 0).

A merge that edited the document it was compared against once made ``install`` report
``unchanged`` for ``{}`` and for a settings file without a ``"hooks"`` key (the usual case) and
write no hook at all. Here each runtime's files are prepared as: absent, empty, ``{}``, other keys
only, hooks for other events only, and our own older entries (another fleet, agent and
interpreter); after ``install`` every event the adapter wires holds exactly one hook of ours, the
MCP server is registered, the user's keys survive, a second install changes nothing, and
``uninstall`` gives the original bytes back.
"""
from __future__ import annotations

import json
import os

import pytest

from lib import install

IDENT = install.Identity("team-a", "laptop-1", "/usr/bin/python3.11", "/opt/venv/bin/python")
OLD = install.Identity("old-fleet", "old-agent", "/usr/bin/python3.9", "/usr/bin/python3.9")
USER_KEYS = {"model": "opus", "permissions": {"allow": ["Bash(ls:*)"], "deny": []}, "note": "naïve ✓"}


def _our_hooks(runtime: str, doc: dict) -> dict[str, list[str]]:
    """``{event: [our commands]}`` read from a runtime's hook file as the runtime would read it."""
    out = {}
    for event, entries in (doc.get("hooks") or {}).items():
        if runtime == "claude_code":
            cmds = [h.get("command") for g in entries for h in g.get("hooks", [])]
        else:
            cmds = [h.get("command") for h in entries]
        ours = [c for c in cmds if install.is_our_command(c, IDENT, runtime)]
        if ours:
            out[event] = ours
    return out


def _hook_entries(runtime: str, ident: install.Identity, events, foreign: bool = False) -> dict:
    def one(event):
        cmd = "notify-send done" if foreign else install.hook_command(ident, runtime, event)
        if runtime == "claude_code":
            return [{"matcher": "", "hooks": [{"type": "command", "command": cmd}]}]
        if runtime == "hermes":
            return [{"command": cmd, "timeout": 3}]
        return [{"command": cmd}]
    return {e: one(e) for e in events}


def _shapes(runtime: str) -> dict[str, dict | str | None]:
    """Name → existing hook-file content (``None`` absent, ``str`` raw text, ``dict`` a document)."""
    other_events = {"claude_code": ["Notification"], "cursor": ["afterFileEdit"], "hermes": ["on_session_reset"]}[runtime]
    shapes = {"absent": None, "empty": "", "{}": {}, "other keys only": dict(USER_KEYS),
              "hooks for other events only": dict(USER_KEYS, hooks=_hook_entries(runtime, IDENT, other_events, True)),
              "our older entries": dict(USER_KEYS, hooks=_hook_entries(runtime, OLD, install.adapter_events(runtime)))}
    if runtime == "cursor":
        shapes["version only"] = {"version": 1}
        shapes["version and other keys"] = {"version": 1, "telemetry": False}
    if runtime == "claude_code":
        shapes["empty hooks"] = dict(USER_KEYS, hooks={})
    return shapes


CASES = [(rt, name) for rt in install.RUNTIMES for name in _shapes(rt)]


def _render(runtime: str, content) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if runtime == "hermes":
        import yaml

        return yaml.safe_dump(content, sort_keys=False, allow_unicode=True) if content else "{}\n"
    return json.dumps(content, indent=2, ensure_ascii=False) + "\n"


def _load(runtime: str, text: str) -> dict:
    if runtime == "hermes":
        import yaml

        return yaml.safe_load(text) or {}
    return json.loads(text)


@pytest.mark.parametrize("runtime,shape", CASES, ids=[f"{rt}:{n}" for rt, n in CASES])
def test_install_wires_every_event_whatever_the_existing_file_holds(tmp_path, monkeypatch, runtime, shape):
    home = str(tmp_path / "home")
    os.makedirs(home)
    monkeypatch.setenv("HOME", home)
    monkeypatch.delenv("HERMES_HOME", raising=False)
    for k in install.HERMES_PASS_ENV:
        monkeypatch.delenv(k, raising=False)
    hook_target, *mcp_targets = install.targets(runtime, home)
    content = _shapes(runtime)[shape]
    original = _render(runtime, content)
    if original is not None:
        os.makedirs(os.path.dirname(hook_target.path), exist_ok=True)
        with open(hook_target.path, "w", encoding="utf-8") as fh:
            fh.write(original)
    for mt in mcp_targets:  # the MCP file gets the same shape where it is a separate file
        text = _render(runtime, {k: v for k, v in content.items() if k != "hooks"} if isinstance(content, dict) else content)
        if text is not None:
            with open(mt.path, "w", encoding="utf-8") as fh:
                fh.write(text)
    before_mcp = {mt.path: open(mt.path, encoding="utf-8").read() if os.path.exists(mt.path) else None for mt in mcp_targets}

    changes = install.plan("install", [runtime], IDENT, home)
    assert changes[0].action in ("create", "update"), f"{shape}: install planned {changes[0].action!r}"
    for c in changes:
        install.apply(c)

    doc = _load(runtime, open(hook_target.path, encoding="utf-8").read())
    wanted = {e: [install.hook_command(IDENT, runtime, e)] for e in install.adapter_events(runtime)}
    assert _our_hooks(runtime, doc) == wanted
    for k, v in (content.items() if isinstance(content, dict) else ()):
        if k != "hooks":
            assert doc[k] == v, f"user key {k} changed"
    if isinstance(content, dict) and shape == "hooks for other events only":
        for event, entries in content["hooks"].items():
            assert doc["hooks"][event] == entries
    if runtime == "hermes":
        assert doc["mcp_servers"]["ctxlake"] == install.hermes_mcp_entry(IDENT, {})
    for mt in mcp_targets:
        mdoc = json.loads(open(mt.path, encoding="utf-8").read())
        assert mdoc["mcpServers"]["ctxlake"] == install.mcp_entry(IDENT, claude=runtime == "claude_code")

    again = install.plan("install", [runtime], IDENT, home)
    assert [c.action for c in again] == ["unchanged"] * len(again)

    for c in install.plan("uninstall", [runtime], IDENT, home):
        install.apply(c)
    if shape == "our older entries":
        return  # the older identity's entries were ours too: uninstall rightly removes them
    after = open(hook_target.path, encoding="utf-8").read() if os.path.exists(hook_target.path) else None
    assert after == original or (original == "" and after is None)
    for path, text in before_mcp.items():
        now = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        assert now == text or (text in ("", "{}\n") and now is None)


@pytest.mark.parametrize("text", ["{}\n", '{"model": "opus", "permissions": {"allow": []}}\n'])
def test_cli_install_on_a_settings_file_without_hooks_writes_them(tmp_path, monkeypatch, home, text):
    import io

    import ctxlake

    user = tmp_path / "user"
    (user / ".claude").mkdir(parents=True)
    (user / ".claude" / "settings.json").write_text(text)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("CTXLAKE_FLEET_ID", "team-a")
    out = io.StringIO()
    assert ctxlake.main(["install", "claude_code"], stdout=out) == 0
    assert f"update         {user}/.claude/settings.json" in out.getvalue()
    doc = json.loads((user / ".claude" / "settings.json").read_text())
    assert set(doc["hooks"]) == set(install.adapter_events("claude_code"))


def test_a_one_line_file_stays_one_line(tmp_path):
    home = str(tmp_path)
    path = os.path.join(home, ".claude", "settings.json")
    os.makedirs(os.path.dirname(path))
    text = '{"model": "opus", "permissions": {"allow": ["Bash(ls:*)", "Read"]}}\n'
    with open(path, "w") as fh:
        fh.write(text)
    for c in install.plan("install", ["claude_code"], IDENT, home):
        install.apply(c)
    after = open(path).read()
    assert after.count("\n") == 1 and after.startswith('{"model": "opus", "permissions": {"allow": ["Bash(ls:*)", "Read"]}, "hooks": ')


def test_hermes_install_keeps_the_users_hook_entries_as_written(tmp_path, monkeypatch):
    """Issue 18: install re-rendered the user's own entries inside hooks: (quotes dropped, flow
    lists expanded). Ours are appended line by line; every line the user wrote stays."""
    monkeypatch.delenv("HERMES_HOME", raising=False)
    home = str(tmp_path)
    path = os.path.join(home, ".hermes", "config.yaml")
    os.makedirs(os.path.dirname(path))
    text = ("model: {provider: custom}\n"
            "hooks:\n"
            "  # my guard, keep it first\n"
            "  pre_tool_call:\n"
            '    - command: "~/bin/guard --strict"\n'
            '      matcher: "terminal|write_file"\n'
            "      args: [--fast, --quiet]\n"
            "  on_session_reset:\n"
            "    - {command: 'notify-send reset'}\n"
            "display:\n  compact: true\n")
    with open(path, "w") as fh:
        fh.write(text)
    for c in install.plan("install", ["hermes"], IDENT, home):
        install.apply(c)
    after = open(path).read()
    kept = [ln for ln in after.splitlines() if ln in text.splitlines()]
    assert kept == text.splitlines()  # every user line, in order
    import yaml

    doc = yaml.safe_load(after)
    assert doc["hooks"]["pre_tool_call"][0]["args"] == ["--fast", "--quiet"]
    assert {e: [h["command"] for h in v if install.is_our_command(h["command"], IDENT, "hermes")]
            for e, v in doc["hooks"].items() if e != "on_session_reset"} == \
        {e: [install.hook_command(IDENT, "hermes", e)] for e in install.adapter_events("hermes")}
    assert [c.action for c in install.plan("install", ["hermes"], IDENT, home)] == ["unchanged"]
    for c in install.plan("uninstall", ["hermes"], IDENT, home):
        install.apply(c)
    assert open(path).read() == text


def test_uninstall_leaves_no_backup_and_no_folder_install_created(tmp_path, monkeypatch):
    import io

    import ctxlake

    home = tmp_path / "user"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CTXLAKE_FLEET_ID", "team-a")
    out = io.StringIO()
    assert ctxlake.main(["install", "claude_code"], stdout=out) == 0
    assert ctxlake.main(["install", "cursor"], stdout=out) == 0  # creates ~/.cursor
    out = io.StringIO()
    assert ctxlake.main(["uninstall", "--all"], stdout=out) == 0
    assert "backup" not in out.getvalue()  # uninstall writes none, so it reports none
    assert "restored from its .bak" in out.getvalue()
    left = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert left == [".claude", ".claude/settings.json"], left
    assert (home / ".claude" / "settings.json").read_text() == '{"model": "opus"}\n'
