"""Turn what a real runtime wrote during an e2e run into fixtures we can publish:
``tests/fixtures/captured/<runtime>-<version>/``.

Normalised, so no fixture names this machine: every temporary path becomes a stable placeholder
(the agent's HOME ``/home/dev``, its clone ``/home/dev/projects/demo``, CTXLAKE_HOME
``/home/dev/.ctxlake``, this checkout ``/opt/ctxlake``, interpreters ``/usr/bin/python3``), also in
the dashed form Claude Code uses for its project folder; every UUID and Hermes session id becomes
a sequential one (same input, same output, within one capture). :func:`check_clean` refuses any
result that still holds a path of this machine or the user's name.

Only what the runtime sent *us* or wrote about *our* scripted session is kept: hook payloads,
transcript ``user``/``assistant`` records, Hermes ``sessions``/``messages`` rows with the system
prompt removed. Request bodies (which carry the vendor's system prompt and tool descriptions)
are never saved.

Writing happens only when ``CTXLAKE_E2E_CAPTURE=1`` (``make e2e-capture``); otherwise the tests
compare the run's payload shapes with the committed capture of the same version.
"""
from __future__ import annotations

import getpass
import json
import os
import re
import socket
import sqlite3

from tests.e2e import runtimes

CAPTURED = os.path.join(runtimes.ROOT, "tests", "fixtures", "captured")
UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
HERMES_SID = re.compile(r"\b20\d{6}_\d{6}_[0-9a-f]{6}\b")
PLACEHOLDER_HOME = "/home/dev"


def capturing() -> bool:
    return os.environ.get("CTXLAKE_E2E_CAPTURE") == "1"


def folder(runtime: str, version: str) -> str:
    """``tests/fixtures/captured/<runtime>-<version>`` (``runtime`` as ``claude-code``/``hermes``)."""
    return os.path.join(CAPTURED, f"{runtime}-{version}")


def _dashed(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


class Normaliser:
    """Replace machine paths and random ids in any JSON-like value (keys too).

    :param paths: ``[(real, placeholder)]``; applied longest real path first, plain and dashed.
    """

    def __init__(self, paths: list[tuple[str, str]]):
        pairs = []
        for real, fake in paths:
            if real:
                pairs.append((real, fake))
                pairs.append((os.path.realpath(real), fake))
                pairs.append((_dashed(real), _dashed(fake)))
        self.pairs = sorted(set(pairs), key=lambda p: -len(p[0]))
        self.uuids: dict[str, str] = {}
        self.sids: dict[str, str] = {}

    def _uuid(self, m) -> str:
        return self.uuids.setdefault(m.group(0), f"00000000-0000-4000-8000-{len(self.uuids) + 1:012d}")

    def _sid(self, m) -> str:
        return self.sids.setdefault(m.group(0), f"20260101_000000_{len(self.sids) + 1:06x}")

    def text(self, s: str) -> str:
        for real, fake in self.pairs:
            if real in s:
                s = s.replace(real, fake)
        s = UUID.sub(self._uuid, s)
        return HERMES_SID.sub(self._sid, s)

    def value(self, v):
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {self.text(k): self.value(x) for k, x in v.items()}
        return v


def normaliser_for(fleet, agent, extra: list[tuple[str, str]] = ()) -> Normaliser:
    """The standard placeholders for one agent of an e2e fleet."""
    import sys

    pairs = [(agent.project, PLACEHOLDER_HOME + "/projects/demo"), (agent.home, PLACEHOLDER_HOME),
             (fleet.home, PLACEHOLDER_HOME + "/.ctxlake"), (fleet.config, PLACEHOLDER_HOME + "/.config/ctxlake/ctxlake.toml"),
             (fleet.base, "/tmp/e2e"), (runtimes.ROOT, "/opt/ctxlake"), (runtimes.CACHE, "/opt/e2e"),
             (sys.executable, "/usr/bin/python3"), (os.path.realpath(sys.executable), "/usr/bin/python3"),
             (os.path.dirname(os.path.realpath(sys.executable)), "/usr/bin")]
    return Normaliser(pairs + list(extra))


def check_clean(text: str, fleet) -> None:
    """Raise AssertionError if ``text`` still names this machine: its temporary base, this
    checkout, the real home folder, the user or host name."""
    user, host = getpass.getuser(), socket.gethostname()
    bad = [fleet.base, runtimes.ROOT, os.path.expanduser("~") + "/", f"/{user}/", f"/home/{user}"]
    for b in bad:
        assert b not in text, f"capture still holds a machine path: {b}"
    if len(host) >= 4:
        assert not re.search(r"\b" + re.escape(host) + r"\b", text), f"capture still holds the host name {host!r}"


def write_json(path: str, value, fleet) -> None:
    text = json.dumps(value, indent=1, ensure_ascii=False) + "\n"
    check_clean(text, fleet)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_lines(path: str, values: list, fleet) -> None:
    text = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in values)
    check_clean(text, fleet)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def env_names(recorded: list[dict]) -> dict:
    """``{event: sorted names of the runtime's variables the hook saw}`` (names only: values
    hold process ids, sockets and tokens)."""
    out: dict[str, set] = {}
    for r in recorded:
        out.setdefault(r.get("event") or "?", set()).update(r.get("env") or {})
    return {k: sorted(v) for k, v in out.items()}


def payloads(recorded: list[dict]) -> list[dict]:
    """The payloads of recorder lines, in order."""
    return [r["payload"] for r in recorded if isinstance(r.get("payload"), dict)]


def transcript_records(path: str) -> list[dict]:
    """The ``user``/``assistant`` records of a Claude Code transcript (the rest carries the
    vendor's prompt text, attachments and bookkeeping, which the importer does not read)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec.get("type") in ("user", "assistant"):
                out.append(rec)
    return out


def hermes_state(path: str) -> dict:
    """``{"schema_version", "ddl": {table: sql}, "sessions": [...], "messages": [...],
    "session_model_usage": [...]}`` from a Hermes ``state.db`` (read-only); ``system_prompt`` and
    ``model_config`` are dropped (Hermes' own text, not ours)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        out = {"schema_version": conn.execute("SELECT version FROM schema_version").fetchone()[0], "ddl": {}}
        for table in ("sessions", "messages", "session_model_usage"):
            row = conn.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone()
            if row is None:
                continue
            out["ddl"][table] = row[0]
            rows = [dict(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY rowid")]
            for r in rows:
                for k in ("system_prompt", "model_config"):
                    if k in r:
                        r[k] = None
            out[table] = rows
        return out
    finally:
        conn.close()


def shapes(payload_list: list[dict]) -> dict:
    """``{event: sorted top-level keys (+ "extra.<key>" for Hermes)}``: what drift is judged on."""
    out: dict[str, set] = {}
    for p in payload_list:
        keys = set(p)
        if isinstance(p.get("extra"), dict):
            keys |= {"extra." + k for k in p["extra"]}
        out.setdefault(p.get("hook_event_name") or "?", set()).update(keys)
    return {k: sorted(v) for k, v in out.items()}


def load_json(path: str):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
