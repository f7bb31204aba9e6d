"""A hook entry whose ``hook.py`` is gone (the tool uninstalled or upgraded, the checkout moved)
must never block the agent (session 4 finding 2): exit 2 from a PreToolUse / preToolUse hook is
"block this tool call" in Claude Code and Cursor (docs/runtimes.md "When the hook is gone").

Each test spawns exactly what ``install`` wrote (Claude Code's exec form without a shell,
Cursor's command through ``/bin/sh -c``, Hermes' command split with ``shlex`` and spawned without
one) against a checkout copy whose ``hook.py`` it then removes; and ``ctxlake status`` must name
the missing file and the fix."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from lib import install
from tests.cli.test_errors import ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
PAYLOADS = {  # a gate event of each runtime, as the runtime sent it (tests/fixtures/NOTICE.md)
    "claude_code": ("PreToolUse", "claude-hooks/attio-mcp-server__pre_tool_use.json"),
    "cursor": ("preToolUse", "cursor-hooks/agent__pre_tool_use_write.json"),
    "hermes": ("pre_tool_call", "hermes-hooks/capture-0.19.0__pre_tool_call.json"),
}


def _checkout(tmp) -> str:
    """A copy of this checkout's entry points (``lib`` linked), as a tool install lays them out."""
    site = os.path.join(tmp, "site-packages")
    os.makedirs(site)
    for name in ("hook.py", "mcp_server.py"):
        shutil.copy(os.path.join(ROOT, name), site)
    os.symlink(os.path.join(ROOT, "lib"), os.path.join(site, "lib"))
    return site


def _install(tmp, runtime: str):
    site, user = _checkout(tmp), os.path.join(tmp, "user")
    os.makedirs(os.path.join(user, {"claude_code": ".claude", "cursor": ".cursor", "hermes": ".hermes"}[runtime]))
    ident = install.Identity("team-a", "laptop-1", install.resolve_interpreter(),
                             install.resolve_interpreter(keep_venv=True), hook_script=os.path.join(site, "hook.py"),
                             mcp_script=os.path.join(site, "mcp_server.py"), home=os.path.join(tmp, "ctxhome"))
    for change in install.plan("install", [runtime], ident, user, environ={"HERMES_HOME": os.path.join(user, ".hermes")}):
        install.apply(change)
    return ident, user


def _gate_argv(runtime: str, user: str) -> list[str]:
    """The argv the runtime spawns for its gate event, read back from the file install wrote."""
    event = PAYLOADS[runtime][0]
    if runtime == "claude_code":
        doc = json.load(open(os.path.join(user, ".claude", "settings.json")))
        hook = next(g for g in doc["hooks"][event] if g.get("matcher"))["hooks"][0]
        return [hook["command"], *hook["args"]]
    if runtime == "cursor":
        doc = json.load(open(os.path.join(user, ".cursor", "hooks.json")))
        return ["/bin/sh", "-c", doc["hooks"][event][0]["command"]]
    import yaml

    doc = yaml.safe_load(open(os.path.join(user, ".hermes", "config.yaml")))
    return shlex.split(doc["hooks"][event][0]["command"])


def _spawn(argv, runtime, env):
    payload = json.load(open(os.path.join(FIXTURES, PAYLOADS[runtime][1])))[0]
    return subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=120)


def _captured(spool: str) -> bool:
    """Wait (generously: a loaded machine) for the hook's detached capture child to spool the event."""
    for _ in range(600):
        if os.path.isdir(spool) and any(f.endswith(".ndjson") for f in os.listdir(spool)):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("runtime", sorted(PAYLOADS))
def test_an_installed_gate_hook_whose_hook_py_is_gone_exits_0(tmp_path, runtime):
    ident, user = _install(str(tmp_path), runtime)
    argv = _gate_argv(runtime, user)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": user}  # the runtime's own environment
    r = _spawn(argv, runtime, env)
    assert r.returncode == 0 and isinstance(json.loads(r.stdout), dict), r.stderr
    assert _captured(os.path.join(ident.home, "spool", runtime)), os.listdir(ident.home)  # the launcher ran hook.py
    os.rename(ident.hook_script, ident.hook_script + ".moved")  # `uv tool uninstall`, an upgrade, a moved checkout
    r = _spawn(argv, runtime, env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {}
    assert ident.hook_script in r.stderr.decode() and "ctxlake install" in r.stderr.decode()
    # what the installers wrote before the launcher: the interpreter itself exits 2 ("can't open file")
    old = [ident.hook_python, "-I", "-S", ident.hook_script, runtime, PAYLOADS[runtime][0]]
    assert _spawn(old, runtime, env).returncode == 2


def test_status_names_a_hook_and_an_mcp_entry_whose_files_are_gone(tmp_path):
    ident, user = _install(str(tmp_path), "claude_code")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAKE_", "AWS_", "XDG_"))}
    env.update(HOME=user, CTXLAKE_HOME=ident.home)
    ctxlake = [sys.executable, os.path.join(ROOT, "ctxlake.py")]
    r = subprocess.run(ctxlake + ["init", "--store", "file://" + str(tmp_path / "lake"), "--fleet", "team-a",
                                  "--agent-id", "laptop-1"], capture_output=True, text=True, env=env, cwd=user, timeout=120)
    assert r.returncode == 0, r.stderr
    status = ctxlake + ["status"]
    r = subprocess.run(status, capture_output=True, text=True, env=env, cwd=user, timeout=120)
    assert r.returncode == 0 and "MISSING" not in r.stdout, r.stdout + r.stderr
    os.unlink(ident.hook_script)
    os.unlink(ident.mcp_script)
    r = subprocess.run(status, capture_output=True, text=True, env=env, cwd=user, timeout=120)
    assert r.returncode == 0, r.stderr
    missing = [ln for ln in r.stdout.splitlines() if ln.startswith("MISSING")]
    settings, claude_json = os.path.join(user, ".claude", "settings.json"), os.path.join(user, ".claude.json")
    assert any(settings in ln and ident.hook_script in ln and "ctxlake install claude_code" in ln for ln in missing), r.stdout
    assert any(claude_json in ln and ident.mcp_script in ln for ln in missing), r.stdout
    nxt = next(ln for ln in r.stdout.splitlines() if ln.startswith("next"))
    assert "ctxlake install claude_code" in nxt and "nothing" not in nxt, nxt
    st = json.loads(subprocess.run(status + ["--json"], capture_output=True, text=True, env=env, cwd=user,
                                   timeout=120).stdout)
    assert st["hooks"][0]["missing"] == [ident.hook_script] and st["mcp"][0]["missing"] == [ident.mcp_script]


def test_doctor_names_a_hook_whose_hook_py_is_gone(tmp_path):
    ident, user = _install(str(tmp_path), "cursor")
    os.unlink(ident.hook_script)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAKE_", "AWS_", "XDG_"))}
    env.update(HOME=user, CTXLAKE_HOME=ident.home)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "ctxlake.py"), "doctor", "--store",
                        "file://" + str(tmp_path / "lake"), "--caller", "t"], capture_output=True, text=True, env=env,
                       cwd=user, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("this host: MISSING"))
    assert os.path.join(user, ".cursor", "hooks.json") in line and ident.hook_script in line
    assert "ctxlake install cursor" in line
