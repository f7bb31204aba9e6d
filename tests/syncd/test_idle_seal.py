"""A session whose end event never came is sealed by syncd once idle with its runtime process
gone (lib/idle_seal.py, docs/operations.md "Sessions that never ended"), through syncd's real
pass (``syncd.py --once --json``) on a ``file://`` store.

The "runtime" is a real process that spawns the real ``hook.py`` for each of Claude Code
2.1.332's captured payloads of one session (``tests/fixtures/captured``), as Claude Code spawns
its exec-form hooks, then stays alive until it is killed with SIGKILL mid-session: the hooks of
its last events and its SessionEnd never run. The transcript it wrote is the captured one.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from lib import identity, idle_seal, lake
from lib.paths import Paths
from lib.store.file import FileStore
from tests.conftest import FIXTURES, ROOT

CAPTURED = os.path.join(FIXTURES, "captured", "claude-code-2.1.332")
SID = "00000000-0000-4000-8000-000000000001"
KILLED_AFTER = 7
"""The runtime hooked SessionStart, the prompt, two calls and the Edit's PreToolUse, then was killed."""

_RUNTIME = r"""
import json, subprocess, sys
hook, batch = sys.argv[1], json.load(open(sys.argv[2]))
for p in batch:
    subprocess.run([sys.executable, "-I", "-S", hook, "claude_code", p["hook_event_name"], "--fleet=f",
                    "--agent=alice"], input=json.dumps(p).encode(), stdout=subprocess.DEVNULL, check=True)
sys.stdout.write("hooked\n"); sys.stdout.flush()
sys.stdin.read()
"""


def _payloads() -> list[dict]:
    with open(os.path.join(CAPTURED, "hooks.json"), encoding="utf-8") as fh:
        return [p for p in json.load(fh) if p["session_id"] == SID]


class _Host:
    """CTXLAKE_HOME with ``[sync] idle_seal_secs = 600``, its ``file://`` store and the session's transcript."""

    def __init__(self, base: str):
        self.base = base
        self.home = os.path.join(base, "home")
        os.makedirs(self.home)
        self.config = os.path.join(base, "ctxlake.toml")
        with open(self.config, "w") as fh:
            fh.write(f'fleet_id = "f"\nagent_id = "alice"\nstore = "file://{self.home}/lake"\n'
                     "[sync]\nidle_seal_secs = 600\nmaint_every_secs = 0\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
        self.env.update(CTXLAKE_HOME=self.home, CTXLAKE_CONFIG=self.config, CTXLAKE_HOOK_SYNC="1")
        self.paths = Paths.from_env(self.env)
        self.store = FileStore(f"file://{self.home}/lake")
        self.transcript = os.path.join(base, "claude", "projects", "-home-dev-projects-demo", SID + ".jsonl")
        os.makedirs(os.path.dirname(self.transcript))
        shutil.copy(os.path.join(CAPTURED, "transcript-first.jsonl"), self.transcript)
        self.payloads = [dict(p, transcript_path=self.transcript) for p in _payloads()]

    def runtime(self, batch: list[dict]) -> subprocess.Popen:
        """A runtime process that has run the hooks of ``batch`` and is still running."""
        path = os.path.join(self.base, f"batch-{time.monotonic_ns()}.json")
        with open(path, "w") as fh:
            json.dump(batch, fh)
        proc = subprocess.Popen([sys.executable, "-c", _RUNTIME, os.path.join(ROOT, "hook.py"), path], env=self.env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"hooked\n"
        return proc

    def syncd(self) -> dict:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "syncd.py"), "--once", "--json"], env=self.env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        self.log = [json.loads(ln) for ln in r.stderr.splitlines() if ln.startswith("{")]
        return json.loads(r.stdout)

    def age_spool(self, secs: float) -> None:
        """Make the session's spool files ``secs`` older (time passing with nobody writing)."""
        folder = self.paths.runtime_spool("claude_code")
        for name in os.listdir(folder):
            full = os.path.join(folder, name)
            st = os.stat(full)
            os.utime(full, (st.st_atime - secs, st.st_mtime - secs))

    def sealed_markers(self) -> list[dict]:
        return [json.loads(self.store.get(e.key).data) for e in self.store.list("sessions/") if e.key.endswith("/_SEALED")]

    def compacted(self) -> list[dict]:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "maint.py"), "--once"], env=self.env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        return lake.session_envelopes(self.store, "f", [SID])[SID]


def _kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """The session through its kill, its idle seal, and its resumption to a real end."""
    host = _Host(str(tmp_path_factory.mktemp("idle")))
    out = {"host": host}
    first = host.runtime(host.payloads[:KILLED_AFTER])
    out["proc_record"] = idle_seal.read(host.paths.session_process("claude_code", SID))
    out["runtime_pid"] = first.pid
    out["fresh"] = host.syncd()
    host.age_spool(3600)
    out["alive"] = host.syncd()
    _kill(first)
    out["gone"] = host.syncd()
    out["gone_log"] = host.log
    out["markers"] = host.sealed_markers()
    out["proc_after_seal"] = os.path.exists(host.paths.session_process("claude_code", SID))
    out["again"] = host.syncd()
    # `claude --resume`: a new process hooks the rest of the session, then its SessionEnd
    second = host.runtime(host.payloads[KILLED_AFTER:])
    out["resumed_record"] = idle_seal.read(host.paths.session_process("claude_code", SID))
    out["resumed"] = host.syncd()
    out["proc_after_end"] = os.path.exists(host.paths.session_process("claude_code", SID))
    _kill(second)
    out["rows"] = host.compacted()
    return out


def test_the_hooks_record_the_runtime_process_and_the_transcript(killed):
    rec = killed["proc_record"]
    assert rec["pid"] == killed["runtime_pid"] and rec["transcript_path"] == killed["host"].transcript
    assert isinstance(rec.get("pid_start"), int) and rec["pid_ns"].startswith("pid:")


def test_a_session_neither_idle_nor_with_its_process_gone_stays_open(killed):
    assert killed["fresh"]["shipped"] > 0 and killed["fresh"]["sealed"] == 0
    assert killed["alive"]["sealed"] == 0 and killed["alive"]["idle_sealed"] == 0, "its runtime still runs"


def test_once_the_process_is_gone_the_idle_session_is_sealed_with_the_backstop(killed):
    p = killed["gone"]
    assert p["errors"] == 0 and p["sealed"] == 1 and p["idle_sealed"] == 1
    # what the killed process never hooked: 5 finished tool calls, the turn's end, the session end
    assert p["backstop_filled"] == 7, p
    assert killed["markers"], "every partition the session's events went to is sealed"
    for marker in killed["markers"]:
        assert marker["ended"]["event"] == "idle" and marker["ended"]["process"] == "gone"
        assert marker["ended"]["idle_secs"] >= 3600
    (ev,) = [e for e in killed["gone_log"] if e["event"] == "session_sealed_idle"]
    assert ev["process"] == "gone"
    assert killed["again"]["sealed"] == 0 and killed["again"]["backstop_filled"] == 0
    assert not killed["proc_after_seal"], "a sealed session's process record goes with its spool files"


def test_a_session_resumed_after_its_idle_seal_ends_with_each_event_once(killed):
    p = killed["resumed"]
    assert killed["resumed_record"]["pid"] != killed["runtime_pid"], "the resumed process is recorded anew"
    assert not killed["proc_after_end"], "and its record goes at the real end's seal"
    assert p["errors"] == 0 and p["sealed"] == 1 and p["idle_sealed"] == 0 and p["backstop_filled"] == 0
    rows = killed["rows"]
    ids = [e["event_id"] for e in rows]
    assert len(ids) == len(set(ids)), "an event the backstop filled and a hook captured later is one row"
    # every event of the session is there: each hook's (the pre-calls included) plus the filled ones
    posts = [p["tool_use_id"] for p in killed["host"].payloads if p["hook_event_name"].startswith("PostToolUse")]
    assert {identity.event_id(SID, "tool", t) for t in posts} <= set(ids)
    pres = [p["tool_use_id"] for p in killed["host"].payloads if p["hook_event_name"] == "PreToolUse"]
    assert {identity.event_id(SID, "tool_pre", t) for t in pres} <= set(ids)
    assert identity.event_id(SID, "end") in ids and identity.event_id(SID, "start") in ids
    assert sum(e["event_type"] == "assistant" for e in rows) == 1, "one turn end"


def test_process_state_tells_a_running_process_from_a_gone_or_reused_pid():
    me = idle_seal.process_record(os.getpid(), None)
    assert idle_seal.process_state(me) == idle_seal.ALIVE
    assert idle_seal.process_state(dict(me, pid_start=me["pid_start"] + 1)) == idle_seal.GONE, "a reused pid"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    rec = idle_seal.process_record(child.pid, None)
    child.wait()
    assert idle_seal.process_state(rec) == idle_seal.GONE
    assert idle_seal.process_state(dict(me, pid_ns="pid:[1]")) == idle_seal.UNKNOWN, "another pid namespace"
    assert idle_seal.process_state({}) == idle_seal.UNKNOWN
    assert idle_seal.process_record(1, None) == {}, "a reparented hook names no runtime"


def test_an_unknowable_process_is_sealed_on_idle_time_alone_and_never_before(tmp_path):
    spooled = tmp_path / "s.ndjson"
    spooled.write_text("{}\n")
    proc = tmp_path / "s.proc"
    now = os.stat(spooled).st_mtime
    assert idle_seal.idle_end([str(spooled)], str(proc), 600, now=now + 599) is None
    end = idle_seal.idle_end([str(spooled)], str(proc), 600, now=now + 601)
    assert end["process"] == "unknown" and end["idle_secs"] == 601 and end["mark"].startswith("idle:")
    assert idle_seal.idle_end([str(spooled)], str(proc), 0, now=now + 10 ** 6) is None, "0 = never"
    idle_seal.record(str(proc), os.getpid(), "/t.jsonl")
    assert idle_seal.idle_end([str(spooled)], str(proc), 600, now=now + 10 ** 6) is None, "its process runs"
