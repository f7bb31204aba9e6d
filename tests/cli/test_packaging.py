"""``pipx install .`` / ``uv tool install .`` put ``ctxlake`` and ``ctxctl`` on PATH (issue 20).

The wheel is built from a copy of what ``pyproject.toml`` ships (no build artefacts in the
checkout), with the shared virtualenv's setuptools (``--no-build-isolation``: no network), then
installed with ``--no-deps --no-index`` into a fresh virtualenv that sees the dependencies through
a ``.pth`` line. The installed commands run from an unrelated directory, so they can only import
what the wheel installed, and ``ctxlake install`` wires the installed ``hook.py``, which then
captures a real hook payload.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib

from tests.conftest import FIXTURES, ROOT

PYPROJECT = os.path.join(ROOT, "pyproject.toml")


def _run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, (argv, r.stdout[-2000:], r.stderr[-2000:])
    return r


def _shipped_sources(dest: str) -> None:
    project = tomllib.load(open(PYPROJECT, "rb"))
    for name in ["pyproject.toml", "README.md", "requirements.txt"]:
        shutil.copy(os.path.join(ROOT, name), dest)
    for mod in project["tool"]["setuptools"]["py-modules"]:
        shutil.copy(os.path.join(ROOT, mod + ".py"), dest)
    shutil.copytree(os.path.join(ROOT, "lib"), os.path.join(dest, "lib"), ignore=shutil.ignore_patterns("__pycache__"))


def test_the_wheel_installs_working_ctxlake_and_ctxctl_commands(tmp_path):
    src, venv, home = tmp_path / "src", tmp_path / "venv", tmp_path / "home"
    src.mkdir()
    (home / ".claude").mkdir(parents=True)
    _shipped_sources(str(src))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
          str(src)], cwd=str(src))
    wheel = glob.glob(str(tmp_path / "dist" / "ctxlake-*.whl"))
    assert len(wheel) == 1
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    target = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(target, "ctxlake-test-deps.pth"), "w") as fh:
        fh.write(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-deps", "--no-index",
          wheel[0]])
    ctxlake, ctxctl = str(venv / "bin" / "ctxlake"), str(venv / "bin" / "ctxctl")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAKE_", "PYTHON"))}
    # CTXLAKE_HOOK_SYNC: the hook captures before it exits, so the spool is read after, not raced
    env.update(HOME=str(home), CTXLAKE_HOME=str(home / ".ctxlake"), CTXLAKE_HOOK_SYNC="1")
    env.pop("XDG_CONFIG_HOME", None)
    run = dict(cwd=str(home), env=env)

    assert "init" in _run([ctxlake, "--help"], **run).stdout
    assert _run([ctxctl, "--version"], **run).stdout.startswith("ctxctl ")
    outline = _run([ctxctl, "outline", os.path.join(target, "ctxlake.py")], **run).stdout
    assert "main" in outline
    _run([ctxlake, "init", "--store", "file://" + str(tmp_path / "lake"), "--fleet", "team-a", "--agent-id", "alice"], **run)
    _run([ctxlake, "install", "claude_code"], **run)

    settings = json.load(open(home / ".claude" / "settings.json"))
    ours = [h for groups in settings["hooks"].values() for g in groups for h in g["hooks"] if "args" in h]
    installed_hook = os.path.join(target, "hook.py")
    assert ours and all(h["args"][4] == installed_hook for h in ours)
    payload = json.load(open(os.path.join(FIXTURES, "claude-hooks", "attio-mcp-server__post_tool_use.json")))[0]
    post = next(h for h in ours if h["args"][6] == "PostToolUse")
    r = subprocess.run([post["command"], *post["args"]], input=json.dumps(payload), capture_output=True, text=True,
                       timeout=120, **run)
    assert r.returncode == 0, r.stderr
    spooled = [line for p in glob.glob(str(home / ".ctxlake" / "spool" / "claude_code" / "*.ndjson")) for line in open(p)]
    assert any(json.loads(line)["event_type"] == "tool_call" for line in spooled), spooled
