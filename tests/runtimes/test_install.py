"""Installer on real-shaped runtime config files (invariant 10): merge, never clobber; exact
ownership; .bak only on change; idempotent; malformed files refused untouched; exact uninstall."""
from __future__ import annotations

import io
import json
import os
import tempfile

import pytest

from lib import install

OTHER_CHECKOUT_HOOK = os.path.join(tempfile.gettempdir(), "ctxlake-other-checkout", "hook.py")
"""Another checkout's hook.py, which exists (made by :func:`other_checkout`): its entries are not ours."""
FOREIGN_CMDS = [
    "echo ctxlake hook.py claude_code Stop",  # mentions ctxlake and hook.py: not ours
    "ctxlake-hook Stop claude_code",  # the reference implementation's shape: not ours
    f"env CTXLAKE_FLEET_ID=x CTXLAKE_AGENT_ID=y /usr/bin/python3 -I -S {OTHER_CHECKOUT_HOOK} claude_code Stop",
]
DEAD_CMD = "env CTXLAKE_FLEET_ID=x CTXLAKE_AGENT_ID=y /usr/bin/python3 -I -S /gone/ctxlake/hook.py claude_code Stop"
"""An older install's entry whose hook.py no longer exists (the tool was uninstalled): a dead install."""


@pytest.fixture(autouse=True, scope="module")
def other_checkout():
    os.makedirs(os.path.dirname(OTHER_CHECKOUT_HOOK), exist_ok=True)
    open(OTHER_CHECKOUT_HOOK, "a").close()


@pytest.fixture
def ident():
    return install.Identity("team-a", "laptop-1", "/usr/bin/python3.11", "/opt/venv/bin/python")


@pytest.fixture
def user_home(tmp_path, monkeypatch):
    h = tmp_path / "user-home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    return str(h)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _run(action, runtimes, ident, home, project=None):
    changes = install.plan(action, runtimes, ident, home, project)
    for c in changes:
        install.apply(c)
    return changes


def _leaves(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, prefix + (i,))
    else:
        yield prefix, obj


def big_claude_json() -> dict:
    """A ``~/.claude.json`` shaped like the live one: many unrelated keys, per-project state,
    non-ASCII text, numbers, booleans, nulls, an existing foreign MCP server."""
    projects = {}
    for i in range(300):
        projects[f"/home/dev/src/project-{i:03d}"] = {
            "allowedTools": [], "history": [{"display": f"fix issue #{i} — naïve café ✓", "pastedContents": {}}],
            "mcpContextUris": [], "mcpServers": {}, "enabledMcpjsonServers": [], "disabledMcpjsonServers": [],
            "hasTrustDialogAccepted": i % 2 == 0, "projectOnboardingSeenCount": i, "lastCost": i * 0.0137,
            "lastAPIDuration": 1234 + i, "lastDuration": None, "lastSessionId": f"{i:08x}-aaaa-bbbb-cccc-{i:012x}",
            "exampleFiles": ["src/main.py", "README.md"], "hasCompletedProjectOnboarding": True,
        }
    return {"numStartups": 412, "installMethod": "npm-global", "autoUpdates": True, "theme": "dark",
            "tipsHistory": {f"tip-{i}": i for i in range(60)}, "userID": "f" * 64, "firstStartTime": "2026-01-04T09:12:44.120Z",
            "oauthAccount": {"emailAddress": "dev@example.com", "organizationName": "Acme Ünited", "accountUuid": "0000-1111"},
            "mcpServers": {"ctxlake-notes": {"type": "stdio", "command": "node", "args": ["/opt/ctxlake-notes/index.js"], "env": {}}},
            "projects": projects, "cachedChangelog": "# Changelog\n\n## 2.1.0\n- “smart quotes” and emoji 🚀\n",
            "s1mAccessCache": {}, "isQualifiedForDataSharing": False, "fallbackAvailableWarningThreshold": 0.5}


def test_large_claude_json_keeps_every_other_leaf_and_round_trips_bytes(user_home, ident):
    path = os.path.join(user_home, ".claude.json")
    original_doc = big_claude_json()
    original = json.dumps(original_doc, indent=2, ensure_ascii=False)  # Claude Code writes no trailing newline
    _write(path, original)
    os.makedirs(os.path.join(user_home, ".claude"))
    _run("install", ["claude_code"], ident, user_home)
    after = json.loads(_read(path))
    assert after["mcpServers"]["ctxlake"] == install.mcp_entry(ident, claude=True)
    before_leaves = dict(_leaves(original_doc))
    after_leaves = {k: v for k, v in _leaves(after) if k[:2] != ("mcpServers", "ctxlake")}
    assert after_leaves == before_leaves
    assert list(after) == list(original_doc)  # key order kept
    assert _read(path + ".bak") == original
    _run("uninstall", ["claude_code"], ident, user_home)
    assert _read(path) == original


def test_uninstall_restores_canonical_bytes_even_without_the_bak(user_home, ident):
    path = os.path.join(user_home, ".claude.json")
    original = json.dumps(big_claude_json(), indent=2, ensure_ascii=False)
    _write(path, original)
    _run("install", ["claude_code"], ident, user_home)
    os.unlink(path + ".bak")
    _run("uninstall", ["claude_code"], ident, user_home)
    assert _read(path) == original


SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/.claude/guard.sh", "timeout": 10}]}],
        "Stop": [{"hooks": [{"type": "command", "command": c} for c in FOREIGN_CMDS]}],
        "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send 'Claude'"}]}],
    },
    "env": {"DISABLE_TELEMETRY": "1"},
}


def test_claude_settings_merge_keeps_foreign_entries_that_mention_ctxlake(user_home, ident):
    path = os.path.join(user_home, ".claude", "settings.json")
    original = json.dumps(SETTINGS, indent=2) + "\n"
    _write(path, original)
    _run("install", ["claude_code"], ident, user_home)
    doc = json.loads(_read(path))
    for event in install.adapter_events("claude_code"):
        ours = [g for g in doc["hooks"][event] if any(install.is_our_hook(h, ident, "claude_code") for h in g["hooks"])]
        assert ours == install.claude_groups(ident, event)
    assert doc["hooks"]["PreToolUse"][0] == SETTINGS["hooks"]["PreToolUse"][0]
    assert doc["hooks"]["Stop"][0] == SETTINGS["hooks"]["Stop"][0]
    assert doc["hooks"]["Notification"] == SETTINGS["hooks"]["Notification"]
    assert doc["permissions"] == SETTINGS["permissions"] and doc["env"] == SETTINGS["env"]
    _run("uninstall", ["claude_code"], ident, user_home)
    assert _read(path) == original and not os.path.exists(path + ".bak")  # restored: the .bak is consumed
    _run("install", ["claude_code"], ident, user_home)
    os.unlink(path + ".bak")  # no backup to fall back on: the strip alone must give the original back
    _run("uninstall", ["claude_code"], ident, user_home)
    assert json.loads(_read(path)) == SETTINGS


def test_second_install_changes_nothing_and_keeps_the_first_backup(user_home, ident):
    path = os.path.join(user_home, ".claude", "settings.json")
    original = json.dumps(SETTINGS, indent=2) + "\n"
    _write(path, original)
    _run("install", ["claude_code", "cursor", "hermes"], ident, user_home)
    snapshot = {p: _read(p) for p in _all_files(user_home)}
    second = _run("install", ["claude_code", "cursor", "hermes"], ident, user_home)
    assert [c.action for c in second] == ["unchanged"] * len(second)
    assert {p: _read(p) for p in _all_files(user_home)} == snapshot
    assert _read(path + ".bak") == original


def _all_files(root):
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names)


def test_files_install_created_are_removed_by_uninstall(user_home, ident):
    for d in (".claude", ".cursor", ".hermes"):
        os.makedirs(os.path.join(user_home, d))
    changes = _run("install", install.detect(user_home), ident, user_home)
    assert {c.action for c in changes} == {"create"}
    assert len(_all_files(user_home)) == 5
    _run("uninstall", install.detect(user_home), ident, user_home)
    assert _all_files(user_home) == []


CURSOR_HOOKS = {"version": 1, "hooks": {
    "beforeShellExecution": [{"command": "./hooks/audit.sh"}, {"command": "ctxlake-hook beforeShellExecution cursor"}],
    "afterFileEdit": [{"command": "bun run hooks/format.ts"}],
}}


def test_cursor_hooks_merge_and_round_trip(user_home, ident):
    path = os.path.join(user_home, ".cursor", "hooks.json")
    original = json.dumps(CURSOR_HOOKS, indent=4) + "\n"  # 4-space indent is kept
    _write(path, original)
    _run("install", ["cursor"], ident, user_home)
    text = _read(path)
    assert '\n    "version": 1' in text
    doc = json.loads(text)
    assert doc["hooks"]["beforeShellExecution"] == CURSOR_HOOKS["hooks"]["beforeShellExecution"]
    assert doc["hooks"]["afterFileEdit"] == CURSOR_HOOKS["hooks"]["afterFileEdit"]
    for event in install.adapter_events("cursor"):
        assert doc["hooks"][event][-1] == {"command": install.hook_command(ident, "cursor", event)}
    mcp = json.loads(_read(os.path.join(user_home, ".cursor", "mcp.json")))
    assert mcp == {"mcpServers": {"ctxlake": install.mcp_entry(ident, claude=False)}}
    _run("uninstall", ["cursor"], ident, user_home)
    assert _read(path) == original
    assert not os.path.exists(os.path.join(user_home, ".cursor", "mcp.json"))


HERMES_YAML = """\
# Hermes config — hand edited, keep these comments
model:
  provider: custom   # local stub
  default: fake-model

# shell hooks
hooks_auto_accept: false
hooks:
  pre_tool_call:
    - command: "~/bin/guard --mention ctxlake"
      matcher: "terminal|write_file"
      timeout: 3
  on_session_start: [{command: "ctxlake-hook on_session_start hermes"}]

# display settings below
display:
  compact: true
toolsets: [hermes-cli]
"""


def test_hermes_yaml_keeps_comments_outside_hooks_and_round_trips(user_home, ident):
    import yaml

    path = os.path.join(user_home, ".hermes", "config.yaml")
    _write(path, HERMES_YAML)
    _run("install", ["hermes"], ident, user_home)
    text = _read(path)
    for line in ("# Hermes config — hand edited, keep these comments", "  provider: custom   # local stub",
                 "# shell hooks", "# display settings below", "toolsets: [hermes-cli]"):
        assert line in text.splitlines()
    doc = yaml.safe_load(text)
    original = yaml.safe_load(HERMES_YAML)
    assert {k: v for k, v in doc.items() if k not in ("hooks", "mcp_servers")} == \
        {k: v for k, v in original.items() if k != "hooks"}
    assert doc["mcp_servers"] == {"ctxlake": install.hermes_mcp_entry(ident)}
    assert doc["hooks"]["pre_tool_call"][0] == original["hooks"]["pre_tool_call"][0]
    assert doc["hooks"]["on_session_start"][0] == original["hooks"]["on_session_start"][0]
    for event in install.adapter_events("hermes"):
        assert doc["hooks"][event][-1] == {"command": install.hook_command(ident, "hermes", event), "timeout": 5,
                                           "fail_closed": False}
    assert _run("install", ["hermes"], ident, user_home)[0].action == "unchanged"
    _run("uninstall", ["hermes"], ident, user_home)
    assert _read(path) == HERMES_YAML


def test_hermes_yaml_without_hooks_gets_a_block_and_loses_it_again(user_home, ident):
    path = os.path.join(user_home, ".hermes", "config.yaml")
    original = "# mine\nmodel: {provider: custom}\n"
    _write(path, original)
    _run("install", ["hermes"], ident, user_home)
    assert _read(path).startswith(original + "hooks:\n")
    os.unlink(path + ".bak")
    _run("uninstall", ["hermes"], ident, user_home)
    assert _read(path) == original


HERMES_WITH_MCP = """\
model: {provider: custom}
mcp_servers:
  # the user's own server, with a comment inside the block
  notes:
    command: npx
    args: ["-y", "@acme/notes-mcp"]
    env: {NOTES_TOKEN: "${NOTES_TOKEN}"}
display:
  compact: true
"""


def test_hermes_mcp_server_is_registered_beside_foreign_ones_and_removed_exactly(user_home, ident, monkeypatch):
    import yaml

    for k in install.HERMES_PASS_ENV:
        monkeypatch.delenv(k, raising=False)
    path = os.path.join(user_home, ".hermes", "config.yaml")
    _write(path, HERMES_WITH_MCP)
    _run("install", ["hermes"], ident, user_home)
    doc = yaml.safe_load(_read(path))
    assert list(doc["mcp_servers"]) == ["notes", "ctxlake"]
    assert doc["mcp_servers"]["notes"] == yaml.safe_load(HERMES_WITH_MCP)["mcp_servers"]["notes"]
    assert doc["mcp_servers"]["ctxlake"] == {"command": ident.mcp_python, "args": [ident.mcp_script],
                                             "env": {"CTXLAKE_FLEET_ID": "team-a", "CTXLAKE_AGENT_ID": "laptop-1"}}
    text = _read(path)
    assert text.startswith("model: {provider: custom}\n") and "display:\n  compact: true\n" in text
    assert _run("install", ["hermes"], ident, user_home)[0].action == "unchanged"
    os.unlink(path + ".bak")  # the strip alone must give the user's servers back
    _run("uninstall", ["hermes"], ident, user_home)
    after = yaml.safe_load(_read(path))
    assert after == yaml.safe_load(HERMES_WITH_MCP)


def test_hermes_mcp_entry_carries_the_location_variables_hermes_would_filter_out(ident):
    env = {"CTXLAKE_HOME": "/var/lib/ctxlake", "CTXLAKE_CONFIG": "/etc/ctxlake/ctxlake.toml", "CTXLAKE_STORE": "s3://x",
           "CTXLAKE_CACHE_DIR": ""}
    entry = install.hermes_mcp_entry(ident, env)
    assert entry["env"] == {"CTXLAKE_FLEET_ID": "team-a", "CTXLAKE_AGENT_ID": "laptop-1",
                            "CTXLAKE_HOME": "/var/lib/ctxlake", "CTXLAKE_CONFIG": "/etc/ctxlake/ctxlake.toml"}
    assert install.mcp_entry(ident, claude=True)["env"] == {"CTXLAKE_FLEET_ID": "team-a", "CTXLAKE_AGENT_ID": "laptop-1"}


@pytest.mark.parametrize("rel,text", [
    (".claude/settings.json", '{"hooks": {"Stop": [}'),
    (".claude/settings.json", '["not", "an", "object"]'),
    (".claude/settings.json", '{"hooks": ["wrong shape"]}'),
    (".claude.json", '{"numStartups": 3,,}'),
    (".cursor/hooks.json", '{"version": 1, "hooks": {"preToolUse": {"command": "x"}}}'),
    (".cursor/mcp.json", '{"mcpServers": []}'),
    (".hermes/config.yaml", "model: [unclosed\nhooks:\n  - a\n"),
    (".hermes/config.yaml", "- just\n- a list\n"),
])
def test_malformed_file_is_refused_untouched(user_home, ident, rel, text):
    path = os.path.join(user_home, rel)
    _write(path, text)
    for d in (".claude", ".cursor", ".hermes"):
        os.makedirs(os.path.join(user_home, d), exist_ok=True)
    with pytest.raises(install.MalformedFile) as err:
        install.plan("install", install.RUNTIMES, ident, user_home)
    assert path in str(err.value) and "untouched" in str(err.value)
    assert _read(path) == text and not os.path.exists(path + ".bak")
    assert _all_files(user_home) == [path]  # nothing else was written either


def test_new_identity_replaces_ours_instead_of_adding_a_second(user_home, ident):
    _run("install", ["cursor"], ident, user_home)
    other = install.Identity("team-b", "laptop 2", ident.hook_python, ident.mcp_python)
    _run("install", ["cursor"], other, user_home)
    doc = json.loads(_read(os.path.join(user_home, ".cursor", "hooks.json")))
    assert doc["hooks"]["preToolUse"] == [{"command": install.hook_command(other, "cursor", "preToolUse")}]
    assert "'--agent=laptop 2'" in doc["hooks"]["preToolUse"][0]["command"]


def test_ownership_is_by_exact_shape_not_substring(ident):
    ours = install.hook_command(ident, "hermes", "pre_llm_call")
    assert install.is_our_command(ours, ident, "hermes")
    assert not install.is_our_command(ours, ident, "cursor")
    assert not install.is_our_command(ours + " --extra", ident, "hermes")
    assert not install.is_our_command("bash -c '" + ours + "'", ident, "hermes")
    for cmd in FOREIGN_CMDS + ["unbalanced 'quote", None, 42]:
        assert not install.is_our_command(cmd, ident, "claude_code")


def test_shims_are_refused_and_the_interpreter_is_absolute(tmp_path):
    with pytest.raises(install.InstallError, match="shim"):
        install.resolve_interpreter("/home/dev/.pyenv/shims/python3")
    real = tmp_path / "python-real"
    real.write_text("")
    link = tmp_path / "python"
    link.symlink_to(real)
    assert install.resolve_interpreter(str(link)) == str(real)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").symlink_to(real)
    assert install.resolve_interpreter(str(venv / "bin" / "python"), keep_venv=True) == str(venv / "bin" / "python")
    assert install.resolve_interpreter(str(venv / "bin" / "python")) == str(real)


def _cli(argv, out=None):
    import ctxlake

    from unittest import mock

    out = out or io.StringIO()
    with mock.patch.dict(os.environ, CTXLAKE_FLEET_ID="team-a"):  # install refuses to bake in the default fleet
        return ctxlake.main(argv, stdout=out, stderr=out), out.getvalue()


def test_cli_dry_run_prints_a_diff_and_writes_nothing(user_home, home):
    os.makedirs(os.path.join(user_home, ".cursor"))
    path = os.path.join(user_home, ".cursor", "hooks.json")
    _write(path, json.dumps(CURSOR_HOOKS, indent=2) + "\n")
    before = {p: _read(p) for p in _all_files(user_home)}
    code, text = _cli(["install", "--all", "--dry-run"])
    assert code == 0
    assert f"--- {path}" in text and "+++ /dev/null" not in text and '+    "preToolUse": [' in text
    assert "would create" in text and "would update" in text
    assert {p: _read(p) for p in _all_files(user_home)} == before


def test_cli_install_and_uninstall_by_name_and_all(user_home, home):
    os.makedirs(os.path.join(user_home, ".hermes"))
    code, text = _cli(["install", "hermes"])
    assert code == 0 and "create" in text and "consent" in text
    code, text = _cli(["install", "--all"])
    assert code == 0 and "unchanged" in text
    code, text = _cli(["uninstall"])
    assert code == 0 and _all_files(user_home) == []
    assert _cli(["install"])[0] == 2
    assert _cli(["install", "cursor", "--all"])[0] == 2


def test_cli_refuses_a_malformed_file_with_exit_1(user_home, home):
    path = os.path.join(user_home, ".cursor", "hooks.json")
    _write(path, "{oops")
    code, text = _cli(["install", "cursor"])
    assert code == 1 and path in text and _read(path) == "{oops"


def test_cli_project_install_writes_only_personal_files(user_home, home, tmp_path, monkeypatch):
    import subprocess

    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    team_settings = '{"permissions": {"allow": ["Bash(make test)"]}}\n'
    (repo / ".claude" / "settings.json").write_text(team_settings)
    monkeypatch.chdir(repo)
    code, text = _cli(["install", "claude_code", "--project", "--agent-id", "alice-laptop"])
    assert code == 0, text
    assert "not git-ignored" in text  # the personal file would be committed: say so
    assert (repo / ".claude" / "settings.json").read_text() == team_settings
    assert not (repo / ".mcp.json").exists()
    local = json.loads((repo / ".claude" / "settings.local.json").read_text())
    assert set(local["hooks"]) == set(install.adapter_events("claude_code"))
    mcp = json.loads(open(os.path.join(user_home, ".claude.json")).read())
    assert mcp["projects"][str(repo)]["mcpServers"]["ctxlake"]["env"]["CTXLAKE_AGENT_ID"] == "alice-laptop"
    for p in _all_files(str(repo)):  # what a teammate would get from git: nothing of this machine
        if ".git" + os.sep in p or p.endswith("settings.local.json"):
            continue
        body = _read(p)
        assert "alice-laptop" not in body and str(tmp_path) not in body and install.ROOT not in body, p
    assert _cli(["install", "cursor", "--project"])[0] == 1
    assert _cli(["install", "hermes", "--project"])[0] == 1
    code, _ = _cli(["uninstall", "claude_code", "--project"])
    assert code == 0 and not (repo / ".claude" / "settings.local.json").exists()
    assert not os.path.exists(os.path.join(user_home, ".claude.json"))
    assert (repo / ".claude" / "settings.json").read_text() == team_settings


def test_project_install_moves_an_older_install_out_of_the_team_files(user_home, ident, tmp_path):
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    old_cmd = install.legacy_hook_command(ident, "claude_code", "Stop")
    (repo / ".claude" / "settings.json").write_text(json.dumps(
        {"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": old_cmd}]}]}}))
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"ctxlake": install.mcp_entry(ident, claude=True),
                                                               "docs": {"command": "docs-mcp"}}}))
    _run("install", ["claude_code"], ident, user_home, str(repo))
    assert json.loads((repo / ".claude" / "settings.json").read_text()) == {"model": "opus"}
    assert json.loads((repo / ".mcp.json").read_text()) == {"mcpServers": {"docs": {"command": "docs-mcp"}}}
    assert "Stop" in json.loads((repo / ".claude" / "settings.local.json").read_text())["hooks"]


def test_symlinked_config_stays_a_symlink(user_home, ident, tmp_path):
    real = tmp_path / "dotfiles" / "settings.json"
    _write(str(real), json.dumps(SETTINGS, indent=2) + "\n")
    os.makedirs(os.path.join(user_home, ".claude"))
    link = os.path.join(user_home, ".claude", "settings.json")
    os.symlink(real, link)
    _run("install", ["claude_code"], ident, user_home)
    assert os.path.islink(link) and "hook.py" in real.read_text()


@pytest.mark.parametrize("rel,text", [
    (".hermes/config.yaml", "model: x\nhooks:\n  on_session_start: []"),  # empty event list, no final newline
    (".cursor/hooks.json", '{"version": 1, "hooks": {"preToolUse": []}}'),
    (".claude/settings.json", '{\n\t"hooks": {}\n}'),  # tabs
    (".claude.json", "{}"),
])
def test_round_trip_restores_odd_but_valid_files_byte_for_byte(user_home, ident, rel, text):
    path = os.path.join(user_home, rel)
    _write(path, text)
    runtime = {".hermes": "hermes", ".cursor": "cursor"}.get(rel.split("/")[0], "claude_code")
    _run("install", [runtime], ident, user_home)
    assert _read(path) != text
    _run("uninstall", [runtime], ident, user_home)
    assert _read(path) == text


def test_an_entry_whose_hook_py_is_gone_is_replaced_by_install_and_removed_by_uninstall(user_home, ident):
    """Finding 2 of session 4: a leftover entry whose hook.py was removed makes the runtime spawn a
    command that exits 2 (a blocked tool call in Claude Code); ``install`` again must not leave it."""
    path = os.path.join(user_home, ".claude", "settings.json")
    dead = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": DEAD_CMD}]}],
                      "PreToolUse": [{"hooks": [{"type": "command", "command": "/usr/bin/python3",
                                                 "args": ["-I", "-S", "/gone/site-packages/hook.py", "claude_code",
                                                          "PreToolUse", "--fleet=x", "--agent=y"]}]}]}}
    _write(path, json.dumps(dead, indent=2) + "\n")
    _run("install", ["claude_code"], ident, user_home)
    text = _read(path)
    assert "/gone/" not in text
    doc = json.loads(text)
    for event in install.adapter_events("claude_code"):
        assert doc["hooks"][event] == install.claude_groups(ident, event)
    _run("uninstall", ["claude_code"], ident, user_home)
    assert not os.path.exists(path) or "/gone/" not in _read(path)
