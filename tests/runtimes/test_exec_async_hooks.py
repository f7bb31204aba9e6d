"""Claude Code hooks as ``install`` writes them since issue #22: exec form (``command`` +
``args``, no shell, no ``env``), fleet and agent as arguments, ``"async": true`` on events whose
answer nobody reads; the upgrade from the older shell form; ``hook.py``'s argument handling.
Real recorded payloads (tests/fixtures/claude-hooks), run through the spawned ``hook.py``."""
from __future__ import annotations

import glob
import io
import json
import os
import subprocess
import sys

import pytest

from lib import hookproc, install
from lib.adapters import claude_code
from tests.runtimes.conftest import load_payloads

IDENT = install.Identity("team-a", "laptop-1", os.path.realpath(sys.executable), sys.executable)
OLD = install.Identity("old-fleet", "old-agent", "/usr/bin/python3.9", "/usr/bin/python3.9")
FOREIGN = {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/.claude/guard.sh", "timeout": 10}]}


def _install(home, text=None):
    path = os.path.join(home, ".claude", "settings.json")
    if text is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    for c in install.plan("install", ["claude_code"], IDENT, home):
        install.apply(c)
    with open(path, encoding="utf-8") as fh:
        return path, json.load(fh)


def test_every_hook_is_exec_form_and_only_answering_events_wait(tmp_path):
    _, doc = _install(str(tmp_path))
    seen_sync = {}
    for event in claude_code.INSTALL_EVENTS:
        for group in doc["hooks"][event]:
            for h in group["hooks"]:
                assert h["command"] == IDENT.hook_python and os.path.isabs(h["command"])
                assert "env" not in h and not h["command"].startswith("env")
                assert h["args"][:7] == [*install.LAUNCH_ARGS, IDENT.hook_script, "claude_code", event]
                assert "--fleet=team-a" in h["args"] and "--agent=laptop-1" in h["args"]
                is_async = h.get("async") is True
                assert is_async == ("--async" in h["args"])
                if not is_async:
                    seen_sync[event] = group.get("matcher")
    assert seen_sync == {"SessionStart": None, "SessionEnd": None, "PreToolUse": "Edit|Write|MultiEdit|NotebookEdit"}
    # PreToolUse also has an async hook for every other tool call
    assert [g.get("matcher") for g in doc["hooks"]["PreToolUse"]] == ["Edit|Write|MultiEdit|NotebookEdit", None]


def test_upgrade_replaces_old_shell_form_and_uninstall_removes_exactly_ours(tmp_path):
    home = str(tmp_path)
    old = {"model": "opus", "hooks": {e: [{"hooks": [{"type": "command", "command": install.legacy_hook_command(OLD, "claude_code", e)}]}]
                                      for e in claude_code.INSTALL_EVENTS}}
    old["hooks"]["PreToolUse"].insert(0, FOREIGN)
    original = json.dumps(old, indent=2) + "\n"
    path, doc = _install(home, original)
    for event, groups in doc["hooks"].items():
        for g in groups:
            for h in g["hooks"]:
                assert "args" in h or h == FOREIGN["hooks"][0], (event, h)  # no shell-form entry of ours is left
    assert doc["hooks"]["PreToolUse"][0] == FOREIGN
    assert [c.action for c in install.plan("install", ["claude_code"], IDENT, home)][0] == "unchanged"
    for c in install.plan("uninstall", ["claude_code"], IDENT, home):
        install.apply(c)
    with open(path, encoding="utf-8") as fh:
        left = json.load(fh)
    assert left == {"model": "opus", "hooks": {"PreToolUse": [FOREIGN]}}


def test_ownership_of_exec_form_is_by_exact_shape(tmp_path):
    ours = install.claude_hook(IDENT, "Stop", run_async=True)
    other_checkout = tmp_path / "hook.py"  # another checkout's hook.py, which exists: not ours
    other_checkout.write_text("")
    assert install.is_our_hook(ours, IDENT, "claude_code")
    assert not install.is_our_hook(ours, IDENT, "cursor")
    for bad in (dict(ours, args=ours["args"] + ["--extra"]), dict(ours, command="python3"),
                dict(ours, args=[*install.LAUNCH_ARGS, str(other_checkout)] + ours["args"][5:]),
                dict(ours, args=["-I", "-S", str(other_checkout)] + ours["args"][5:]),
                dict(ours, args=["-I", "-S", "-c", "pass"] + ours["args"][4:]),
                dict(ours, args=ours["args"][:7]), {"type": "command", "command": "/bin/sh", "args": ["-c", "x"]},
                None, "x"):
        assert not install.is_our_hook(bad, IDENT, "claude_code"), bad


@pytest.mark.parametrize("fleet,agent", [("${HOME}", "a"), ("f", "-x"), ("f", "")])
def test_ids_that_cannot_be_arguments_are_refused(fleet, agent):
    with pytest.raises(install.InstallError, match="hook argument"):
        install.claude_hook(install.Identity(fleet, agent, "/usr/bin/python3", "/usr/bin/python3"), "Stop", run_async=True)


def test_parse_argv_forms():
    a = hookproc.parse_argv(["claude_code", "Stop", "--fleet=f1", "--agent", "a 1", "--async", "--future=x"])
    assert (a.runtime, a.event, a.fleet_id, a.agent_id, a.run_async) == ("claude_code", "Stop", "f1", "a 1", True)
    b = hookproc.parse_argv(["cursor"])
    assert (b.runtime, b.event, b.fleet_id, b.agent_id, b.run_async) == ("cursor", "", None, None, False)


def _spooled(home):
    out = []
    for f in glob.glob(os.path.join(home, "spool", "claude_code", "*.ndjson*")):
        with open(f, encoding="utf-8") as fh:
            out += [json.loads(ln) for ln in fh if ln.strip()]
    return out


def _env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_CONFIG=os.path.join(home, "none.toml"))
    return env


def test_async_hook_captures_in_its_own_process_with_the_argument_identity(tmp_path):
    home = str(tmp_path)
    _, payload = load_payloads("claude-hooks")[[n for n, _ in load_payloads("claude-hooks")].index(
        "attio-mcp-server__post_tool_use.json")]
    h = install.claude_hook(IDENT, "PostToolUse", run_async=True)
    r = subprocess.run([h["command"], *h["args"]], input=json.dumps(payload).encode(), capture_output=True,
                       env=_env(home), timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout) == {}
    # no wait_for_hooks: the capture is done when the process exits (nothing was detached)
    got = [e for e in _spooled(home) if e["session_id"] == payload["session_id"]]
    assert [(e["event_type"], e["fleet_id"], e["agent_id"]) for e in got] == [("tool_call", "team-a", "laptop-1")]
    assert not os.path.exists(os.path.join(home, "hook-errors.log"))


def test_a_write_tool_call_is_captured_once_by_its_two_pretooluse_hooks(tmp_path):
    home = str(tmp_path)
    pre = [p for _, p in load_payloads("claude-hooks") if p.get("hook_event_name") == "PreToolUse"]
    write = next(p for p in pre if p.get("tool_name") in claude_code.WRITE_TOOLS)
    other = next(p for p in pre if p.get("tool_name") not in claude_code.WRITE_TOOLS)
    groups = install.claude_groups(IDENT, "PreToolUse")
    env = dict(_env(home), CTXLAKE_HOOK_SYNC="1")
    for payload in (write, other):
        for g in groups:
            if g.get("matcher") and payload["tool_name"] not in g["matcher"].split("|"):
                continue  # Claude Code runs the write-tool group only for those tools
            h = g["hooks"][0]
            out = io.StringIO()
            hookproc.run(h["args"][5:], io.BytesIO(json.dumps(payload).encode()), out, environ=env)
            assert isinstance(json.loads(out.getvalue()), dict)
    ids = [(e["session_id"], e["event_id"]) for e in _spooled(home)]
    assert len(ids) == len(set(ids)) == 2


@pytest.mark.parametrize("runtime", ["cursor", "hermes"])
def test_cursor_and_hermes_drop_env_and_replace_an_older_env_install(runtime, tmp_path):
    import yaml

    home = str(tmp_path)
    target = install.targets(runtime, home)[0]
    events = install.adapter_events(runtime)
    old = {e: [{"command": install.legacy_hook_command(OLD, runtime, e)}] for e in events}
    os.makedirs(os.path.dirname(target.path), exist_ok=True)
    with open(target.path, "w", encoding="utf-8") as fh:
        fh.write(yaml.safe_dump({"hooks": old}) if runtime == "hermes" else json.dumps({"version": 1, "hooks": old}))
    for c in install.plan("install", [runtime], IDENT, home):
        install.apply(c)
    with open(target.path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh) if runtime == "hermes" else json.load(fh)
    for e in events:
        cmds = [h["command"] for h in doc["hooks"][e]]
        assert cmds == [install.hook_command(IDENT, runtime, e)], (e, cmds)
        assert not cmds[0].startswith("env ") and "--fleet=team-a" in cmds[0] and "--agent=laptop-1" in cmds[0]
    for c in install.plan("uninstall", [runtime], IDENT, home):
        install.apply(c)
    assert not os.path.exists(target.path) or not (yaml.safe_load(open(target.path)) or {}).get("hooks")


@pytest.mark.parametrize("runtime", install.RUNTIMES)
def test_installed_identity_reads_the_new_and_the_older_shape(runtime, tmp_path):
    home = str(tmp_path)
    for c in install.plan("install", [runtime], IDENT, home):
        install.apply(c)
    path = install.targets(runtime, home)[0].path
    assert install.installed_identity(path, runtime) == ("team-a", "laptop-1")
    old = install.legacy_hook_command(OLD, runtime, install.adapter_events(runtime)[0])
    assert install.hook_identity({"command": old}) == ("old-fleet", "old-agent")
