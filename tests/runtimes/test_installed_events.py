"""Every event ``install`` wires is accepted by its own adapter (reference bug 12.2 #5: an
installed ``SubagentStop`` that the adapter rejected dropped 39 events). The test installs into a
temporary home, reads back the commands it wrote, and runs each one exactly as the runtime would
(Claude Code and Cursor through a shell, Hermes split with ``shlex`` and no shell) on a payload of
that event's real shape."""
from __future__ import annotations

import glob
import json
import os
import shlex
import subprocess

import pytest
import yaml

from lib import adapters, install
from tests.conftest import FIXTURES
from tests.runtimes.conftest import load_payloads

EMAIL = "pat.lee@example.org"


def _payloads(folder):
    out = {}
    for _, p in load_payloads(folder):
        out.setdefault(p.get("hook_event_name"), p)
    return out


def _claude_payloads():
    out = _payloads("claude-hooks")
    for name in ("hooks.json", "hooks-newer-events.json"):
        with open(os.path.join(FIXTURES, "captured", "claude-code-2.1.332", name), encoding="utf-8") as fh:
            for p in json.load(fh):  # our own capture (make e2e-capture) has the events the others lack
                out.setdefault(p["hook_event_name"], p)
    return out


PAYLOADS = {"claude_code": _claude_payloads(), "cursor": _payloads("cursor-hooks"), "hermes": _payloads("hermes-hooks")}


def _installed_commands(runtime, home):
    """``[(event, command)]`` of ours in the file install wrote for ``runtime``."""
    ident = install.Identity.current("fleet-inst", "agent-inst")
    path = install.targets(runtime, home)[0].path
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh) if path.endswith(".yaml") else json.load(fh)
    out = []
    for event, entries in doc["hooks"].items():
        for e in entries:
            hooks = e["hooks"] if runtime == "claude_code" else [e]
            out.extend((event, runner_argv(runtime, h)) for h in hooks if install.is_our_hook(h, ident, runtime))
    return out


def runner_argv(runtime, hook):
    """The argv the runtime spawns for ``hook``: exec form (``command`` + ``args``) directly,
    Claude Code and Cursor shell form through ``sh -c``, Hermes' ``shlex.split`` (no shell)."""
    if "args" in hook:
        return [hook["command"], *hook["args"]]
    return shlex.split(hook["command"]) if runtime == "hermes" else ["sh", "-c", hook["command"]]


@pytest.mark.parametrize("runtime", install.RUNTIMES)
def test_every_installed_event_is_accepted_by_its_adapter(runtime, tmp_path, home):
    user_home = str(tmp_path / "user-home")
    ident = install.Identity.current("fleet-inst", "agent-inst")
    for c in install.plan("install", [runtime], ident, user_home):
        install.apply(c)
    wired = _installed_commands(runtime, user_home)
    adapter = adapters.get(runtime)
    assert sorted(set(e for e, _ in wired)) == sorted(adapter.INSTALL_EVENTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_HOOK_SYNC="1", CTXLAKE_CONFIG=os.path.join(home, "none.toml"))
    for event, argv in wired:
        assert event in adapter.EVENTS, f"{runtime} installs {event} but its adapter does not know it"
        payload = PAYLOADS[runtime].get(event)
        assert payload is not None, f"no {runtime} payload of event {event} to test with"
        r = subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=60)
        assert r.returncode == 0, (event, r.stderr)
        assert isinstance(json.loads(r.stdout.decode().strip()), dict), (event, r.stdout)
        sid = adapter.session_id(payload)
        spooled = []
        for f in glob.glob(os.path.join(home, "spool", runtime, "*.ndjson")):
            with open(f, encoding="utf-8") as fh:
                spooled += [json.loads(ln) for ln in fh if ln.strip()]
        mine = [e for e in spooled if e["session_id"] == sid and e["agent_id"] == "agent-inst"]
        if adapter.EVENTS[event] is None:
            continue  # deliberately answer-only
        assert any(e["event_type"] == adapter.EVENTS[event] for e in mine), f"{runtime} {event} produced no envelope"
    errors = os.path.join(home, "hook-errors.log")
    assert not os.path.exists(errors), open(errors).read()
    text = "".join(open(f, encoding="utf-8").read() for f in glob.glob(os.path.join(home, "spool", "**", "*"), recursive=True)
                   if os.path.isfile(f))
    assert EMAIL not in text and "user_email" not in text


def test_every_adapter_install_event_is_mapped_or_deliberately_answer_only():
    for runtime in install.RUNTIMES:
        a = adapters.get(runtime)
        for event in a.INSTALL_EVENTS:
            assert event in a.EVENTS, (runtime, event)
