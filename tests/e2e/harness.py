"""Scenario plumbing for the e2e tests: a fleet on one host, agents with their own HOME, the real
``ctxlake`` commands, and the real agent CLIs run against :mod:`tests.e2e.fake_model`.

A :class:`Fleet` is one temporary host: ``CTXLAKE_HOME`` (spool and cache, shared by every agent
on it, as a node volume is on Kubernetes), a ``ctxlake.toml`` written by ``ctxlake init`` and a
``file://`` store. An :class:`Agent` has its own ``HOME`` (so ``ctxlake install`` writes its own
``~/.claude/settings.json``, ``~/.claude.json`` or ``$HERMES_HOME/config.yaml``) and its own clone
of one git repository (every clone has the same ``origin``, so leases are shared).

Before ``install`` runs, each agent's runtime config already holds a foreign hook,
``record_hook.py``, on the events ctxlake wires: the installer must merge around it, and what it
records is the ground truth the spool is checked against. The environment of every child is
built from scratch (no ``CTXLAKE_*``, ``ANTHROPIC_*``, ``CLAUDE*``, ``OPENAI*``, ``HERMES*`` or
``XDG_*`` from the outside), so nothing of the machine running the tests leaks in.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

from tests.e2e import runtimes

ROOT = runtimes.ROOT
PYTHON = sys.executable
RECORDER = os.path.join(ROOT, "tests", "e2e", "record_hook.py")
FLEET_ID = "e2e"
ORIGIN = "https://git.example.com/acme/demo.git"
APP_PY = "def main():\n    return 1\n"
RUN_TIMEOUT = 300
"""Seconds before a hung CLI is killed (a guard, never an assertion)."""

_DROP = ("CTXLAKE_", "ANTHROPIC_", "CLAUDE", "OPENAI_", "HERMES", "XDG_", "PYTHON", "VIRTUAL_ENV", "NODE_OPTIONS", "npm_")


def clean_env(**extra) -> dict:
    """The parent environment without anything that could steer a runtime or ctxlake."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def _git(cwd: str, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=clean_env(HOME=cwd, GIT_CONFIG_NOSYSTEM="1"))


def read_ndjson(pattern: str) -> list[dict]:
    out = []
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as fh:
            out.extend(json.loads(ln) for ln in fh if ln.strip())
    return out


class Fleet:
    """One host's ctxlake: ``home`` (CTXLAKE_HOME), ``config`` (ctxlake.toml), fleet ``e2e``."""

    def __init__(self, base: str, policy: str = "warn", home: str | None = None):
        self.base = base
        self.home = home or os.path.join(base, "ctxlake-home")
        self.config = os.path.join(base, "ctxlake.toml")
        os.makedirs(self.home, exist_ok=True)
        r = self.ctxlake("init", "--store", "file://" + os.path.join(self.home, "lake"), "--fleet", FLEET_ID)
        assert r.returncode == 0, r.stdout + r.stderr
        if policy != "warn":
            self.set_policy(policy)
        self.timings: dict[str, float] = {}

    def set_policy(self, policy: str) -> None:
        """Rewrite ``[leases] policy`` in ctxlake.toml (what an operator edits)."""
        with open(self.config, encoding="utf-8") as fh:
            text = fh.read()
        import re

        text = re.sub(r'(?m)^policy = "\w+"$', f'policy = "{policy}"', text)
        with open(self.config, "w", encoding="utf-8") as fh:
            fh.write(text)

    def set_sync(self, key: str, value: int) -> None:
        """Set ``[sync] <key> = <value>`` in ctxlake.toml (what an operator edits)."""
        with open(self.config, encoding="utf-8") as fh:
            text = fh.read()
        line = f"{key} = {value}\n"
        text = text.replace("[sync]\n", "[sync]\n" + line, 1) if "[sync]\n" in text else text + "\n[sync]\n" + line
        with open(self.config, "w", encoding="utf-8") as fh:
            fh.write(text)

    def env(self, **extra) -> dict:
        return clean_env(**dict({"CTXLAKE_HOME": self.home, "CTXLAKE_CONFIG": self.config}, **extra))

    def run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        env = kw.pop("env", None) or self.env()
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT, **kw)

    def ctxlake(self, *args: str, env: dict | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
        return self.run([PYTHON, os.path.join(ROOT, "ctxlake.py"), *args], env=env, cwd=cwd or self.base)

    def syncd_once(self) -> str:
        r = self.run([PYTHON, os.path.join(ROOT, "syncd.py"), "--once"], cwd=self.base)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def maint_once(self) -> str:
        r = self.run([PYTHON, os.path.join(ROOT, "maint.py"), "--once"], cwd=self.base)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def wait_hooks(self) -> None:
        """Wait for the detached capture children of hooks that already answered."""
        from lib.spool import wait_for_hooks

        assert wait_for_hooks(os.path.join(self.home, "spool", ".state"), timeout=60), "hook captures still running"

    def spool(self, runtime: str, session_id: str | None = None) -> list[dict]:
        """Envelopes spooled for ``runtime`` (one session, or all), in file then line order."""
        name = f"{session_id}.ndjson*" if session_id else "*.ndjson*"
        return read_ndjson(os.path.join(self.home, "spool", runtime, name))

    def syncd_pass(self) -> dict:
        """``syncd --once --json``: the pass summary (``backstop_filled``: envelopes the
        transcript backstop appended)."""
        r = self.run([PYTHON, os.path.join(ROOT, "syncd.py"), "--once", "--json"], cwd=self.base)
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(r.stdout)

    def lake_events(self, session_id: str) -> list[dict]:
        """The envelopes of ``session_id`` in the fleet's table (after ``maint --once``): one row
        per identity, as every reader sees them."""
        from lib import lake
        from lib.store import open_store

        store = open_store("file://" + os.path.join(self.home, "lake"))
        return lake.session_envelopes(store, FLEET_ID, [session_id])[session_id]

    def mcp_records(self) -> list[dict]:
        return read_ndjson(os.path.join(self.home, "spool", "mcp", "*.ndjson*"))

    def cache_file(self, name: str):
        path = os.path.join(self.home, "cache", FLEET_ID, name)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)

    def hook_errors(self) -> str:
        path = os.path.join(self.home, "hook-errors.log")
        return open(path, encoding="utf-8").read() if os.path.exists(path) else ""

    def timed(self, label: str, fn, *args, **kw):
        t0 = time.monotonic()
        try:
            return fn(*args, **kw)
        finally:
            self.timings[label] = self.timings.get(label, 0.0) + time.monotonic() - t0


class Agent:
    """One agent: ``name`` (its agent id), ``home`` (HOME), ``project`` (its clone of the repo)."""

    def __init__(self, fleet: Fleet, name: str, runtime: str):
        self.fleet, self.name, self.runtime = fleet, name, runtime
        self.root = os.path.join(fleet.base, name)
        self.home = os.path.join(self.root, "home")
        self.project = os.path.join(self.home, "projects", "demo")
        self.recorded_path = os.path.join(self.root, "hooks.ndjson")
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(os.path.join(self.project, "src"))
        with open(os.path.join(self.project, "src", "app.py"), "w") as fh:
            fh.write(APP_PY)
        _git(self.project, "init", "-q", "-b", "main")
        _git(self.project, "remote", "add", "origin", ORIGIN)
        _git(self.project, "add", "-A")
        _git(self.project, "-c", "user.name=e2e", "-c", "user.email=e2e@example.com", "commit", "-q", "-m", "init")

    @property
    def hermes_home(self) -> str:
        return os.path.join(self.home, ".hermes")

    def env(self, **extra) -> dict:
        return self.fleet.env(HOME=self.home, **extra)

    def recorder_command(self, event: str) -> str:
        import shlex

        return " ".join(shlex.quote(x) for x in (PYTHON, "-I", "-S", RECORDER, self.recorded_path, event))

    def install(self) -> str:
        """``ctxlake install <runtime> --agent-id <name>`` in this agent's HOME (the real installer)."""
        r = self.fleet.ctxlake("install", self.runtime, "--agent-id", self.name, env=self.env(), cwd=self.project)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def recorded(self) -> list[dict]:
        """What the foreign recorder hook saw, in arrival order."""
        return read_ndjson(self.recorded_path)

    def file(self, rel: str) -> str:
        with open(os.path.join(self.project, rel), encoding="utf-8") as fh:
            return fh.read()


# -- Claude Code ----------------------------------------------------------------------------


class ClaudeAgent(Agent):
    def __init__(self, fleet: Fleet, name: str):
        super().__init__(fleet, name, "claude_code")
        from lib import adapters

        settings = {"hooks": {}}
        for event in adapters.get("claude_code").INSTALL_EVENTS:
            group = {"hooks": [{"type": "command", "command": self.recorder_command(event)}]}
            if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
                group["matcher"] = "*"
            settings["hooks"][event] = [group]
        os.makedirs(os.path.join(self.home, ".claude"))
        with open(os.path.join(self.home, ".claude", "settings.json"), "w") as fh:
            json.dump(settings, fh, indent=2)

    def _argv_env(self, model, route: str, prompt: str, env: dict) -> tuple[list[str], dict]:
        e = self.env(ANTHROPIC_BASE_URL=model.base_url(route), ANTHROPIC_API_KEY="sk-ant-e2e-fake", IS_SANDBOX="1",
                     DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
                     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", **env)
        return [runtimes.claude_bin(), "-p", prompt, "--permission-mode", "bypassPermissions", "--output-format", "json"], e

    def run(self, model, route: str, prompt: str, resume: str | None = None, **env) -> dict:
        """``claude -p <prompt>`` in the project against ``model`` on ``route`` (``resume``: a
        session id, ``--resume``: the session goes on under the same id); the result JSON."""
        argv, e = self._argv_env(model, route, prompt, env)
        if resume:
            argv += ["--resume", resume]
        r = self.fleet.timed(f"claude:{self.name}", subprocess.run, argv, cwd=self.project, env=e,
                             capture_output=True, text=True, timeout=RUN_TIMEOUT)
        return self._result(r.returncode, r.stdout, r.stderr)

    def run_messages(self, model, route: str, prompts: list[str], **env) -> dict:
        """One ``claude -p`` session fed ``prompts`` in turn as stream-json user messages (a local
        command such as ``/model`` and then a prompt, in one live session); the last result."""
        argv, e = self._argv_env(model, route, "", env)
        argv = [argv[0], "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                "--permission-mode", "bypassPermissions"]
        lines = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p}}) + "\n" for p in prompts)
        r = self.fleet.timed(f"claude:{self.name}", subprocess.run, argv, input=lines, cwd=self.project, env=e,
                             capture_output=True, text=True, timeout=RUN_TIMEOUT)
        results = [ln for ln in r.stdout.splitlines() if ln.startswith("{") and json.loads(ln).get("type") == "result"]
        return self._result(r.returncode, results[-1] if results else r.stdout, r.stderr)

    def start(self, model, route: str, prompt: str, **env) -> subprocess.Popen:
        """Start ``claude -p`` in the background (an agent that is still working); see :meth:`finish`."""
        argv, e = self._argv_env(model, route, prompt, env)
        return subprocess.Popen(argv, cwd=self.project, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, proc: subprocess.Popen) -> dict:
        """Wait for a background run (killed, by its own pid, if it outlives :data:`RUN_TIMEOUT`)."""
        try:
            out, err = proc.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        return self._result(proc.returncode, out, err)

    def _result(self, code: int, out: str, err: str) -> dict:
        assert code == 0, f"claude exited {code}\nstdout: {out[-3000:]}\nstderr: {err[-3000:]}"
        self.fleet.wait_hooks()
        return json.loads(out)

    def transcript(self, session_id: str) -> str:
        found = glob.glob(os.path.join(self.home, ".claude", "projects", "*", f"{session_id}.jsonl"))
        assert len(found) == 1, f"transcript of {session_id}: {found}"
        return found[0]


# -- Hermes ---------------------------------------------------------------------------------


class HermesAgent(Agent):
    def __init__(self, fleet: Fleet, name: str, model, route: str):
        super().__init__(fleet, name, "hermes")
        from lib import adapters

        os.makedirs(self.hermes_home)
        lines = ["# written by the e2e test, as a user would: the model endpoint and one hook of their own",
                 "model:", "  provider: custom", f"  base_url: {model.base_url(route, '/v1')}", "  api_key: sk-e2e-fake",
                 "  default: fake-model", "hooks:"]
        for event in adapters.get("hermes").INSTALL_EVENTS:
            lines += [f"  {event}:", f"  - command: {json.dumps(self.recorder_command(event))}"]
        with open(os.path.join(self.hermes_home, "config.yaml"), "w") as fh:
            fh.write("\n".join(lines) + "\n")

    def env(self, **extra) -> dict:
        return super().env(HERMES_HOME=self.hermes_home, **extra)

    def _argv(self, prompt: str) -> list[str]:
        return [runtimes.hermes_bin(), "-z", prompt, "--accept-hooks", "--usage-file", os.path.join(self.root, "usage.json")]

    def start(self, prompt: str) -> subprocess.Popen:
        """Start ``hermes -z <prompt>`` in the background (an agent that is still working)."""
        return subprocess.Popen(self._argv(prompt), cwd=self.project, env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def run(self, prompt: str) -> str:
        """``hermes -z <prompt> --accept-hooks`` (one-shot) in the project; its stdout."""
        r = self.fleet.timed(f"hermes:{self.name}", subprocess.run, self._argv(prompt),
                             cwd=self.project, env=self.env(), capture_output=True, text=True, timeout=RUN_TIMEOUT)
        assert r.returncode == 0, f"hermes exited {r.returncode}\nstdout: {r.stdout[-3000:]}\nstderr: {r.stderr[-3000:]}"
        self.fleet.wait_hooks()
        return r.stdout

    @property
    def state_db(self) -> str:
        return os.path.join(self.hermes_home, "state.db")
