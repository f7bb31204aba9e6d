"""A home other than ``~/.ctxlake`` reaches every installed entry (docs/runtimes.md "Where the data
goes"): ``CTXLAKE_HOME=/x ctxlake install`` writes ``--home=/x`` into each hook's arguments (as it
passes fleet and agent: no shell, no ``env``) and ``CTXLAKE_HOME`` into each MCP entry's ``env``,
so a runtime that starts them without that variable still spools where ``sync`` reads. Proven by
spawning exactly what the installer wrote, with the user's environment minus ``CTXLAKE_HOME``; and
``status`` names a spool left under the default home by an older install."""
from __future__ import annotations

import glob
import json
import os
import shlex
import subprocess

import pytest

from lib import install
from tests.conftest import FIXTURES, PYTHON, ROOT
from tests.runtimes.conftest import load_payloads

HANG_GUARD = 120  # seconds; only stops a broken child from hanging the suite, never asserted on


def _user_env(user: str) -> dict:
    """The environment a runtime started from the user's desktop has: no ``CTXLAKE_*`` at all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAKE_", "HERMES_", "XDG_"))}
    env.update(HOME=user, PYTHONPATH=ROOT)
    return env


def _ctxlake(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, os.path.join(ROOT, "ctxlake.py"), *args], capture_output=True, text=True,
                          env=env, cwd=env["HOME"], timeout=HANG_GUARD)


@pytest.fixture
def setup(tmp_path):
    """``(user_env, lake_home, operator_env)``: ``init`` and ``install --all`` run by an operator
    with ``CTXLAKE_HOME`` pointing outside the user's home."""
    user = str(tmp_path / "user")
    for d in (".claude", ".cursor", ".hermes"):
        os.makedirs(os.path.join(user, d))
    lake_home = str(tmp_path / "x")
    env = _user_env(user)
    op = dict(env, CTXLAKE_HOME=lake_home)
    r = _ctxlake(op, "init", "--store", "file://" + str(tmp_path / "lake"), "--fleet", "f-home", "--agent-id", "a-home")
    assert r.returncode == 0, r.stderr
    r = _ctxlake(op, "install", "--all")
    assert r.returncode == 0, r.stderr
    return env, lake_home, op


def _spool_files(home: str, runtime: str) -> list[str]:
    return glob.glob(os.path.join(home, "spool", runtime, "*.ndjson*"))


def _payload(folder: str, event: str) -> dict:
    return next(p for _, p in load_payloads(folder) if p.get("hook_event_name") == event)


def test_installed_claude_code_hook_spools_under_the_install_home_without_the_variable(setup):
    env, lake_home, op = setup
    with open(os.path.join(env["HOME"], ".claude", "settings.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    hook = doc["hooks"]["PostToolUse"][0]["hooks"][0]
    assert "env" not in hook and f"--home={lake_home}" in hook["args"]
    payload = _payload("claude-hooks", "PostToolUse")
    r = subprocess.run([hook["command"], *hook["args"]], input=json.dumps(payload).encode(), capture_output=True,
                       env=env, cwd=env["HOME"], timeout=HANG_GUARD)
    assert r.returncode == 0, r.stderr
    assert _spool_files(lake_home, "claude_code") and not os.path.exists(os.path.join(env["HOME"], ".ctxlake"))
    r = _ctxlake(op, "sync", "--once", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["shipped"] >= 1


@pytest.mark.parametrize("runtime,folder,event", [("cursor", "cursor-hooks", "postToolUse"),
                                                  ("hermes", "hermes-hooks", "post_tool_call")])
def test_installed_shell_form_hooks_carry_the_home(setup, runtime, folder, event):
    import yaml

    env, lake_home, _ = setup
    path = install.targets(runtime, env["HOME"])[0].path
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh) if runtime == "hermes" else json.load(fh)
    entries = [h for hs in doc["hooks"].values() for h in hs]
    assert entries and all(f"--home={lake_home}" in shlex.split(h["command"]) for h in entries)
    payload = _payload(folder, event)
    cmd = doc["hooks"][event][0]["command"]
    r = subprocess.run(shlex.split(cmd), input=json.dumps(payload).encode(), capture_output=True,
                       env=dict(env, CTXLAKE_HOOK_SYNC="1"), cwd=env["HOME"], timeout=HANG_GUARD)
    assert r.returncode == 0, r.stderr
    assert _spool_files(lake_home, runtime) and not os.path.exists(os.path.join(env["HOME"], ".ctxlake"))


@pytest.mark.parametrize("mcp_file,key", [(".claude.json", "mcpServers"), (".cursor/mcp.json", "mcpServers"),
                                          (".hermes/config.yaml", "mcp_servers")])
def test_every_mcp_entry_writes_to_the_install_home(setup, mcp_file, key):
    import yaml

    env, lake_home, _ = setup
    with open(os.path.join(env["HOME"], mcp_file), encoding="utf-8") as fh:
        entry = (yaml.safe_load(fh) if mcp_file.endswith(".yaml") else json.load(fh))[key]["ctxlake"]
    assert entry["env"]["CTXLAKE_HOME"] == lake_home
    frames = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}},
              {"jsonrpc": "2.0", "method": "notifications/initialized"},
              {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "fleet_claim", "arguments": {"paths": ["src/a.py"], "reason": "splitting it"}}}]
    r = subprocess.run([entry["command"], *entry["args"]], input="\n".join(map(json.dumps, frames)) + "\n",
                       capture_output=True, text=True, env=dict(env, **entry["env"]), cwd=env["HOME"],
                       timeout=HANG_GUARD)
    assert r.returncode == 0, r.stderr
    assert _spool_files(lake_home, "mcp") and not os.path.exists(os.path.join(env["HOME"], ".ctxlake"))


def test_default_home_writes_no_home_argument(tmp_path):
    user = str(tmp_path / "user")
    os.makedirs(os.path.join(user, ".claude"))
    env = _user_env(user)
    assert _ctxlake(env, "init", "--store", "file://" + str(tmp_path / "lake"), "--fleet", "f").returncode == 0
    assert _ctxlake(env, "install", "claude_code").returncode == 0
    text = open(os.path.join(user, ".claude", "settings.json"), encoding="utf-8").read()
    assert "--home=" not in text and "CTXLAKE_HOME" not in open(os.path.join(user, ".claude.json")).read()


def test_status_warns_of_a_spool_under_the_default_home(setup):
    env, lake_home, op = setup
    stray = os.path.join(env["HOME"], ".ctxlake", "spool", "claude_code")
    os.makedirs(stray)
    with open(os.path.join(FIXTURES, "claude-hooks", "attio-mcp-server__stop.json"), encoding="utf-8") as fh:
        line = json.dumps(json.load(fh)[0])
    with open(os.path.join(stray, "s1.ndjson"), "w", encoding="utf-8") as fh:
        fh.write(line + "\n")
    r = _ctxlake(op, "status")
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stdout.splitlines() if os.path.join(env["HOME"], ".ctxlake") in ln]
    assert warn and "1 file(s)" in warn[0] and "not shipped" in warn[0], r.stdout
    st = json.loads(_ctxlake(op, "status", "--json").stdout)
    assert [(s["home"], s["files"]) for s in st["other_spools"]] == [(os.path.join(env["HOME"], ".ctxlake"), 1)]
    assert "CTXLAKE_HOME=" in st["next"]
    # run from the default home itself, the same spool is this home's backlog, not a warning
    assert json.loads(_ctxlake(env, "status", "--json").stdout)["other_spools"] == []


def test_an_entry_with_a_home_is_ours_and_parses():
    from lib import hookproc

    ident = install.Identity("f", "a", "/usr/bin/python3", "/usr/bin/python3", home="/srv/ctx lake")
    hook = install.claude_hook(ident, "Stop", run_async=True)
    assert hook["args"][-2:] == ["--home=/srv/ctx lake", "--async"]
    assert install.is_our_hook(hook, ident, "claude_code") and install.hook_identity(hook) == ("f", "a")
    assert not install.is_our_hook(dict(hook, args=hook["args"] + ["--home=/y"]), ident, "claude_code")
    cmd = install.hook_command(ident, "cursor", "stop")
    assert install.is_our_command(cmd, ident, "cursor")
    args = hookproc.parse_argv(shlex.split(cmd)[6:])  # after <python> -I -S -c <launcher> <hook.py>
    assert (args.runtime, args.fleet_id, args.agent_id, args.home) == ("cursor", "f", "a", "/srv/ctx lake")
    with pytest.raises(install.InstallError, match="CTXLAKE_HOME"):
        install.hook_args(install.Identity("f", "a", "/p", "/p", home="/x/${HOME}"), "cursor", "stop")
