"""Helpers for adapter tests: run one payload through the real hook path (answer + capture, in
process) against a temporary CTXLAKE_HOME and read back what was spooled."""
from __future__ import annotations

import glob
import io
import json
import os

import pytest

from tests.conftest import FIXTURES


def load_payloads(folder: str) -> list[tuple[str, dict]]:
    """``[(file name, payload)]`` for every payload of every ``*.json`` array in a fixtures folder."""
    out = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, folder, "*.json"))):
        with open(path, encoding="utf-8") as fh:
            for payload in json.load(fh):
                out.append((os.path.basename(path), payload))
    return out


class Hook:
    """Runs ``lib.hookproc.run`` synchronously with a fixed identity and reads the spool."""

    def __init__(self, home: str, fleet: str = "fleet-rt", agent: str = "agent-rt"):
        self.home, self.fleet, self.agent = home, fleet, agent
        self.env = {"CTXLAKE_HOME": home, "CTXLAKE_FLEET_ID": fleet, "CTXLAKE_AGENT_ID": agent,
                    "CTXLAKE_CONFIG": os.path.join(home, "none.toml")}

    def __call__(self, runtime: str, payload: dict, event_arg: str | None = None, **env) -> dict:
        from lib.hookproc import run

        out = io.StringIO()
        argv = [runtime] + ([event_arg] if event_arg else [])
        assert run(argv, io.BytesIO(json.dumps(payload).encode()), out, environ=dict(self.env, **env), detach=False) == 0
        lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
        assert len(lines) == 1, out.getvalue()
        return json.loads(lines[0])

    def envelopes(self, runtime: str) -> list[dict]:
        """Every envelope spooled for ``runtime`` so far, in file then line order."""
        out = []
        for path in sorted(glob.glob(os.path.join(self.home, "spool", runtime, "*.ndjson*"))):
            with open(path, encoding="utf-8") as fh:
                out.extend(json.loads(ln) for ln in fh if ln.strip())
        return out

    def spool_text(self) -> str:
        """All bytes under the spool (envelopes, quarantine records, .done markers) as text."""
        parts = []
        for root, _, names in os.walk(os.path.join(self.home, "spool")):
            for n in names:
                with open(os.path.join(root, n), encoding="utf-8", errors="replace") as fh:
                    parts.append(fh.read())
        return "\n".join(parts)

    def done(self, runtime: str, sid: str) -> dict | None:
        from lib.paths import Paths

        p = Paths.from_env(self.env).session_done(runtime, sid)
        if not os.path.exists(p):
            return None
        with open(p, encoding="utf-8") as fh:
            return json.load(fh)

    def errors(self) -> str:
        p = os.path.join(self.home, "hook-errors.log")
        return open(p, encoding="utf-8").read() if os.path.exists(p) else ""

    def write_briefing(self, text: str, claim_ids=("c1",)) -> None:
        d = os.path.join(self.home, "cache", self.fleet)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "briefing.json"), "w") as fh:
            json.dump({"text": text, "claim_ids": list(claim_ids), "rendered_at": "2026-11-29T00:00:00Z"}, fh)


@pytest.fixture
def hook(home):
    """A :class:`Hook` bound to the test's temporary CTXLAKE_HOME."""
    return Hook(home)
