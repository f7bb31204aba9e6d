"""Helpers for tests that take real input through spool → syncd's shipping → maint on the
embedded ``file://`` store and read the compacted lake back (no mocks: the real modules)."""
from __future__ import annotations

import json
import os
import time

from lib import config, lake, ship
from lib.paths import Paths
from lib.store.file import FileStore

FLEET, AGENT = "f", "alice"


def setup(home: str):
    """``(paths, store, cfg)`` for a temporary CTXLAKE_HOME."""
    env = {"CTXLAKE_HOME": home, "CTXLAKE_FLEET_ID": FLEET, "CTXLAKE_AGENT_ID": AGENT}
    cfg = config.load(env, path=os.path.join(home, "none.toml"))
    paths = Paths.from_env(env)
    return paths, FileStore(cfg.store), cfg


def ship_and_maint(paths, store, cfg) -> tuple[ship.ShipStats, dict]:
    """One shipping pass then one maintenance pass; returns both summaries."""
    from lib import maintenance

    stats = ship.ship_all(store, paths, batch_rows=500)
    summary = maintenance.run_once(cfg, store, lambda *a, **k: None)
    return stats, summary


def compacted(store, fleet: str = FLEET) -> list[dict]:
    """Every envelope in the current version of the fleet's Delta table."""
    t = lake.query(store, fleet, "SELECT envelope_json FROM events")
    return [] if t is None else [json.loads(raw) for raw in t.column("envelope_json").to_pylist()]


def digests(store, fleet: str = FLEET) -> dict[str, dict]:
    """``{session_id: digest}`` of every digest in the lake (one per session)."""
    found: dict = {}
    for entry in store.list(lake.fleet_sessions_prefix(fleet)):
        if entry.key.endswith("/digest.json"):
            d = json.loads(store.get(entry.key).data)
            assert d["session_id"] not in found, f"two digests for session {d['session_id']}"
            found[d["session_id"]] = d
    return found


def transcript_times(path: str) -> dict:
    """Times (epoch s) of a transcript's records, by what a hook payload names: ``prompt`` by
    promptId, ``tool_use``/``tool_result`` by tool-use id, ``first``/``last``."""
    from lib.clock import parse_time_strict as parse_time

    out = {"prompt": {}, "tool_use": {}, "tool_result": {}, "first": None, "last": None}
    with open(path, "rb") as fh:
        for line in fh:
            rec = json.loads(line)
            if not isinstance(rec.get("timestamp"), str):
                continue
            t = parse_time(rec["timestamp"])
            out["first"] = t if out["first"] is None else min(out["first"], t)
            out["last"] = t if out["last"] is None else max(out["last"], t)
            content = (rec.get("message") or {}).get("content")
            if rec.get("type") == "user" and isinstance(content, str) and rec.get("promptId"):
                out["prompt"].setdefault(rec["promptId"], t)
            for b in content if isinstance(content, list) else []:
                if b.get("type") == "tool_use":
                    out["tool_use"][b["id"]] = t
                elif b.get("type") == "tool_result":
                    out["tool_result"][b["tool_use_id"]] = t
    return out


def hook_time(payload: dict, times: dict) -> float:
    """When Claude Code fired the hook for ``payload`` in the session ``times`` describes."""
    ev = payload["hook_event_name"]
    if ev == "SessionStart":
        return times["first"] - 0.5
    if ev == "UserPromptSubmit":
        return times["prompt"].get(payload.get("prompt_id"), times["first"])
    if ev == "PreToolUse":
        return times["tool_use"][payload["tool_use_id"]] + 0.001
    if ev in ("PostToolUse", "PostToolUseFailure"):
        return times["tool_result"][payload["tool_use_id"]] - 0.001
    if ev == "Stop":
        return times["last"] + 0.01
    return times["last"] + 0.1


def capture_at(paths, runtime: str, payload: dict, at: float, fleet: str = FLEET, agent: str = AGENT) -> None:
    """Run the hook's capture half (:func:`lib.hookproc.capture`) for one payload of
    ``runtime`` with the clock set to ``at`` (epoch s: when the runtime fired it)."""
    import pytest

    from lib import adapters, hookproc

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "time", lambda: at)
        hookproc.capture(runtime, payload["hook_event_name"], payload, adapters.HookContext(paths, fleet, agent), paths)


def replay_hooks(paths, payloads: list[dict], times: dict, fleet: str = FLEET, agent: str = AGENT) -> None:
    """:func:`capture_at` for each Claude Code payload at the time Claude Code fired it."""
    for p in payloads:
        capture_at(paths, "claude_code", p, hook_time(p, times), fleet, agent)


class HookedHost:
    """A CTXLAKE_HOME with its ``file://`` store, fed by the real hook in process and shipped
    by the real shipping pass: ``hook(runtime, payload)``, ``ship()`` (its log lines in
    ``logged``), ``shipped()`` (every envelope of the bronze segments). ``env`` extends the
    hook's environment."""

    def __init__(self, base: str, **env):
        import os

        self.home = os.path.join(base, "home")
        os.makedirs(self.home)
        self.env = {"CTXLAKE_HOME": self.home, "CTXLAKE_CONFIG": os.path.join(self.home, "none.toml"), **env}
        self.paths = Paths.from_env(self.env)
        self.store = FileStore(self.paths.default_store_url)
        self.logged: list = []

    def hook(self, runtime: str, payload: dict) -> None:
        import io

        from lib import hookproc

        hookproc.run([runtime, payload["hook_event_name"], "--fleet=f", "--agent=alice"],
                     io.BytesIO(json.dumps(payload).encode()), io.StringIO(), environ=self.env, detach=False)

    def replay(self, payloads: list[dict], keep=lambda i, p: True) -> "HookedHost":
        """Run the hook (as :meth:`hook` of the subclass) on each payload ``keep(index, payload)`` keeps."""
        for i, p in enumerate(payloads):
            if keep(i, p):
                self.hook(p)
        return self

    def ship(self) -> ship.ShipStats:
        return ship.ship_all(self.store, self.paths, batch_rows=500, log=lambda ev, **kw: self.logged.append((ev, kw)))

    def shipped(self) -> list[dict]:
        return [e for entry in self.store.list("sessions/") if entry.key.endswith(".parquet")
                for e in lake.decode(self.store.get(entry.key).data)]

    def converges(self, full: set, lost_pre: set) -> None:
        """Ship and seal; assert the lake holds each identity once and exactly ``full`` (the
        identities of the fully hooked session) less ``lost_pre`` (lost pre-call hooks, which
        no transcript holds as events of their own)."""
        from lib import identity

        stats = self.ship()
        assert stats.errors == 0 and stats.sealed == 1
        shipped = self.shipped()
        ids = {identity.key(e) for e in shipped}
        assert len(ids) == len(shipped), "no identity shipped twice"
        assert ids == full - lost_pre



HOOK_SESSION = [os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "claude-hooks",
                             f"home-assistant-green-button__{n}.json") for n in ("session_start", "session_end")]
"""A real Claude Code session's SessionStart and SessionEnd payloads (tests/fixtures/NOTICE.md)."""


def init_and_capture(box, store_url: str, fleet: str) -> None:
    """``ctxlake init`` ``box`` (tests.cli.test_errors.Box) on ``store_url`` as ``fleet``/``a1``,
    run :data:`HOOK_SESSION` through ``hook.py`` the way the installer wires it, and ship it with
    ``ctxlake sync --once`` (asserting one session sealed)."""
    import subprocess
    import sys

    r = box.run("init", "--store", store_url, "--fleet", fleet, "--agent-id", "a1")
    assert r.returncode == 0, r.stderr
    hook = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "hook.py")
    for path in HOOK_SESSION:
        with open(path, "rb") as fh:
            payload = json.dumps(json.load(fh)[0]).encode()
        h = subprocess.run([sys.executable, "-I", "-S", hook, "claude_code"], input=payload, capture_output=True,
                           env=dict(box.env, CTXLAKE_HOOK_SYNC="1"), timeout=120)
        assert h.returncode == 0, h.stderr
    sync = box.run("sync", "--once", "--json")
    assert sync.returncode == 0 and json.loads(sync.stdout)["sealed"] == 1, sync.stderr
