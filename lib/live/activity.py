"""What the agents spooling on this host are doing, derived from the spool (docs/design.md §3, §9).

Where it sits: syncd feeds every batch it ships to :func:`observe_lines` (no second read of
the spool; only the lines presence needs are parsed), and :func:`scan_spool` lists which sessions are open — spool files present, no
``<session>.done``, written to within ``idle_secs``. :func:`summarize` turns both into one
heartbeat's worth of fields per agent (:mod:`lib.live.presence`): runtime, session, repo, branch, the
task (first line of the latest prompt, already redacted in the envelope, sanitized here) and
the files its tool calls touched, each as ``(repo_id, repo-relative path)`` so other hosts can
compare them with their own paths.

Times observed here are this host's clock (envelopes' ``emitted_at``, spool mtimes); they are
converted to the store clock with the offset measured in the same pass before they go into a
heartbeat. Sessions of the ``import`` runtime are history, never presence.
"""
from __future__ import annotations

import os
import urllib.parse

from lib import spool

LIVE_RUNTIMES = ("claude_code", "cursor", "hermes")
MAX_TOUCHED_PER_SESSION = 50
TASK_CHARS = 160


def session_key(runtime: str, session_id: str) -> str:
    """``<runtime>/<session_id>``: how the live state names a session."""
    return f"{runtime}/{session_id}"


def _write_tools(runtime: str) -> tuple:
    try:
        from lib import adapters

        return tuple(getattr(adapters.get(runtime), "WRITE_TOOLS", ()))
    except Exception:
        return ()


class _Locator:
    """Repo identity of tool paths (:func:`lib.repo.canonical_path`), cached per repository root
    for one batch (reads ``.git`` only)."""

    def __init__(self):
        self._roots: dict = {}

    def __call__(self, path: str, cwd: str | None, env_repo: str | None) -> tuple[str, str] | None:
        from lib import repo as repomod

        full = path if os.path.isabs(path) or not cwd else os.path.join(cwd, path)
        where = repomod.canonical_path(full)  # keyed exactly as leases are (symlinks, ., .., case)
        if where:
            root, rel = where
            if root not in self._roots:
                self._roots[root] = repomod.repo_id(root)
            return self._roots[root], rel
        full = os.path.normpath(full)
        # The agent's files are not visible from here (e.g. syncd in another container): fall back
        # to the envelope's repo and cwd, right when the agent runs at the repository root.
        if env_repo and cwd and full.startswith(os.path.normpath(cwd) + os.sep):
            return env_repo, os.path.relpath(full, os.path.normpath(cwd)).replace(os.sep, "/")
        return None


def _first_line(text) -> str | None:
    if not isinstance(text, str):
        return None
    from lib.sanitize import clean

    for line in text.splitlines():
        line = clean(line, TASK_CHARS, True)
        if line:
            return line
    return None


class Activity:
    """Per-session activity of this host's agents in one fleet; a plain dict underneath
    (``sessions``: ``{session_key: {agent_id, runtime, session_id, host_id?, repo?, branch?,
    cwd?, task?, touched: {"<repo>\\0<path>": {repo, path, at, tool, write}}, last_at,
    ended?}}``, times in local epoch s) so the live state can persist it as JSON."""

    def __init__(self, fleet_id: str, sessions: dict | None = None):
        self.fleet_id = fleet_id
        self.sessions: dict = sessions if isinstance(sessions, dict) else {}

    def observe(self, runtime: str, envelopes: list[dict]) -> None:
        """Fold shipped envelopes into the session records (other fleets and ``import`` are
        ignored). Called by the shipper with each batch it wrote to the store."""
        if runtime not in LIVE_RUNTIMES:
            return
        from lib.clock import parse_time

        locate = _Locator()
        writes = _write_tools(runtime)
        for env in envelopes:
            if env.get("fleet_id") != self.fleet_id or not env.get("session_id") or not env.get("agent_id"):
                continue
            key = session_key(env.get("runtime") or runtime, env["session_id"])
            s = self.sessions.setdefault(key, {"agent_id": env["agent_id"], "runtime": env.get("runtime") or runtime,
                                               "session_id": env["session_id"], "touched": {}, "last_at": 0.0})
            at = parse_time(env.get("emitted_at"))
            if at is None:
                at = s["last_at"]
            s["last_at"] = max(s["last_at"], at)
            for f in ("host_id", "repo", "branch", "cwd"):
                if isinstance(env.get(f), str) and env[f]:
                    s[f] = env[f]
            etype = env.get("event_type")
            if s.get("ended") and etype != "session_end" and at > float(s.get("ended_at") or 0):
                s.pop("ended", None)  # resumed under the same session id
            if etype == "prompt":
                task = _first_line(env.get("content"))
                if task:
                    s["task"] = task
            elif etype == "tool_call" and isinstance(env.get("tool"), dict):
                tool = env["tool"]
                for p in tool.get("paths") or []:
                    if not isinstance(p, str) or not p:
                        continue
                    where = locate(p, env.get("cwd"), env.get("repo"))
                    if not where:
                        continue
                    tk = f"{where[0]}\0{where[1]}"
                    prev = s["touched"].get(tk) or {}
                    s["touched"][tk] = {"repo": where[0], "path": where[1], "at": at, "tool": str(tool.get("name") or ""),
                                        "write": bool(prev.get("write")) or tool.get("name") in writes
                                        or bool(tool.get("_write"))}
                if len(s["touched"]) > MAX_TOUCHED_PER_SESSION:
                    keep = sorted(s["touched"].items(), key=lambda kv: -kv[1]["at"])[:MAX_TOUCHED_PER_SESSION]
                    s["touched"] = dict(keep)
            elif etype == "session_end":
                s["ended"], s["ended_at"] = True, at


_TOOL = b'"event_type":"tool_call"'


def _field(raw: bytes, key: bytes, limit: int = 4096):
    """The JSON value after the first ``"<key>":`` in an envelope line, decoded from a bounded
    slice, or ``None``. Safe on envelope lines because tool input and result are JSON *strings*
    there (lib/envelope.py), so a quote inside them is escaped and the unescaped pattern
    ``"<key>":`` only matches a real key."""
    import json

    i = raw.find(b'"' + key + b'":')
    if i < 0:
        return None
    start = i + len(key) + 3
    try:
        value, _ = json.JSONDecoder().raw_decode(raw[start:start + limit].decode("utf-8", "replace"))
        return value
    except ValueError:
        return None


def observe_lines(activity: Activity, runtime: str, lines: list[bytes]) -> None:
    """Fold one shipped batch of raw spool lines (one session) into ``activity``, cheaply.

    The shipper encodes batches straight from bytes (docs/design.md §12 throughput), so this reads
    only what presence needs and mostly with byte searches: the batch's first line in full (who
    and where), the *last* prompt (the task), session starts/ends, and of the tool calls that
    name paths only the ``paths`` list (decoded once per distinct list), the newest time and
    whether a write tool touched them; the session's ``last_at`` comes from the last line.
    Everything is then folded through :meth:`Activity.observe` as a handful of envelopes.
    """
    if runtime not in LIVE_RUNTIMES or not lines:
        return
    import json

    try:
        base = json.loads(lines[0])
    except ValueError:
        return
    if not isinstance(base, dict):
        return
    who = {k: base[k] for k in ("fleet_id", "agent_id", "runtime", "session_id") if k in base}
    picked: list[dict] = [base]
    writes = {w.encode() for w in _write_tools(runtime)}
    last_prompt = None
    touched: dict = {}  # raw paths bytes -> [index of newest line, touched by a write tool, newest tool name]
    for i in range(1, len(lines)):
        raw = lines[i]
        if _TOOL in raw:
            j = raw.find(b'"paths":[')
            if j < 0 or raw.startswith(b"[]", j + 8):
                continue
            k = raw.find(b"]}", j)
            if k < 0:
                continue
            key = raw[j + 8:k + 1]
            name = _tool_name_bytes(raw)
            cur = touched.get(key)
            touched[key] = [i, bool(name in writes or (cur and cur[1])), name]
        elif b'"event_type":"prompt"' in raw:
            last_prompt = i
        elif b'"event_type":"session_' in raw:
            try:
                env = json.loads(raw)
            except ValueError:
                continue
            if isinstance(env, dict):
                picked.append(env)
    if last_prompt is not None:
        try:
            env = json.loads(lines[last_prompt])
            if isinstance(env, dict):
                picked.append(env)
        except ValueError:
            pass
    cwd = base.get("cwd")
    for key, (i, wrote, name) in sorted(touched.items(), key=lambda kv: kv[1][0]):
        try:
            paths = json.loads(key)
        except ValueError:
            continue
        if not isinstance(paths, list):
            continue
        env = dict(who, event_type="tool_call", emitted_at=_field(lines[i], b"emitted_at", 64),
                   tool={"name": name.decode("utf-8", "replace"), "paths": paths, "_write": wrote})
        for f in ("cwd", "repo"):
            v = _field(lines[i], f.encode(), 4096)
            if isinstance(v, str):
                env[f] = v
        env.setdefault("cwd", cwd)
        picked.append(env)
    stamp = _field(lines[-1], b"emitted_at", 64)
    if isinstance(stamp, str):
        picked.append(dict(who, event_type="activity", emitted_at=stamp))
    picked.sort(key=lambda e: str(e.get("emitted_at") or ""))
    activity.observe(runtime, picked)


def _tool_name_bytes(raw: bytes) -> bytes:
    """``tool.name`` of an envelope line as raw bytes (the first key of its ``tool`` object)."""
    i = raw.find(b'"tool":{"name":"')
    if i < 0:
        return b""
    start = i + 16
    end = raw.find(b'"', start)
    return raw[start:end] if end > 0 else b""


def _spool_agent(paths, runtime: str, stem: str, files: list[str]) -> tuple[str | None, str | None]:
    """``(agent_id, fleet_id)`` of a spooled session not observed yet: from its upload
    watermark, else from its first line."""
    wm = paths.watermark(runtime, stem)
    try:
        w = spool.Watermark.load(wm)
        if w.agent_id:
            return w.agent_id, w.fleet_id
    except ValueError:
        pass
    for f in files:
        try:
            lines, _ = spool.read_complete_lines(f, 0, max_lines=1, max_bytes=1 << 20)
        except OSError:
            continue
        recs, _ = spool.decode_lines(lines)
        if recs:
            return recs[0].get("agent_id"), recs[0].get("fleet_id")
    return None, None


def scan_spool(paths, fleet_id: str, activity: Activity, *, idle_secs: float, local_now: float) -> tuple[set, set]:
    """``(open_keys, ended_keys)`` of this fleet's live-runtime sessions in the spool.

    Open: spool files present, no ``.done``, last written within ``idle_secs`` of
    ``local_now`` (this host's clock, as the mtimes are). Ended: a ``.done`` exists, or a
    ``session_end`` envelope was observed. Sessions the activity knows that are gone from the
    spool (sealed and cleaned up) are ended too. Sessions not yet observed get their agent
    from the watermark or first line and are added to ``activity``.
    """
    open_keys, ended = set(), set()
    present = set()
    for runtime in LIVE_RUNTIMES:
        for stem, g in spool.session_files(paths.runtime_spool(runtime)).items():
            sid = urllib.parse.unquote(stem)
            key = session_key(runtime, sid)
            present.add(key)
            if key not in activity.sessions:
                if not g["files"]:
                    continue
                agent, fleet = _spool_agent(paths, runtime, stem, g["files"])
                if not agent or fleet != fleet_id:
                    continue
                activity.sessions[key] = {"agent_id": agent, "runtime": runtime, "session_id": sid, "touched": {},
                                          "last_at": 0.0}
            s = activity.sessions[key]
            if g["done"] or s.get("ended"):
                ended.add(key)
                continue
            try:
                mtime = max(os.stat(f).st_mtime for f in g["files"]) if g["files"] else 0.0
            except OSError:
                mtime = 0.0
            if g["files"] and local_now - mtime <= idle_secs:
                open_keys.add(key)
    for key, s in activity.sessions.items():
        if key not in present or s.get("ended"):
            ended.add(key)
    return open_keys, ended


def summarize(activity: Activity, open_keys: set, *, offset: float) -> dict[str, dict]:
    """Heartbeat fields per agent with at least one open session (pure).

    ``{agent_id: {"runtime", "session_id", "last_at" (local epoch s of its latest envelope),
    "host_id"?, "repo"?, "branch"?, "task"?, "touched": [{repo, path, at (store clock = local +
    offset), tool, write}]}}``: session, repo and branch
    of the agent's most recently active open session; task from it, else the latest task of
    its other open sessions; touched files of all its open sessions, newest first.
    """
    by_agent: dict = {}
    for key in open_keys:
        s = activity.sessions.get(key)
        if s:
            by_agent.setdefault(s["agent_id"], []).append(s)
    out = {}
    for agent, sessions in by_agent.items():
        sessions.sort(key=lambda s: (s.get("last_at") or 0, s["session_id"]), reverse=True)
        cur = sessions[0]
        fields = {"runtime": cur["runtime"], "session_id": cur["session_id"],
                  "last_at": max(float(s.get("last_at") or 0) for s in sessions)}
        for f in ("host_id", "repo", "branch"):
            if cur.get(f):
                fields[f] = cur[f]
        task = next((s["task"] for s in sessions if s.get("task")), None)
        if task:
            fields["task"] = task
        touched = [dict(t, at=t["at"] + offset) for s in sessions for t in (s.get("touched") or {}).values()]
        fields["touched"] = sorted(touched, key=lambda t: (-t["at"], t["path"]))
        out[agent] = fields
    return out


def forget(activity: Activity, keys) -> None:
    """Drop ended sessions once the live plane has acted on their end."""
    for k in keys:
        activity.sessions.pop(k, None)
