"""The eight ctxlake MCP tools: fleet coordination and shared memory for agents (docs/design.md §11).

Where it sits: ``mcp_server.py`` builds a :class:`Context` from the config, hands
:func:`build_tools` to :class:`lib.jsonrpc.Server`, and serves stdio. This process is on a path
an agent waits on, so (invariant 1) it never touches the object store:

- **reads** come from the local cache (``cache/<fleet>/roster.json``, ``leases.json``,
  ``sync.json``, ``snapshot.bin``) through :mod:`lib.cache_view` and
  :mod:`lib.memory.memory_index`; every string that reaches a result is cleaned
  (:func:`lib.sanitize.clean_deep`, at any depth) and claims are rendered with attribution;
- **writes** append one kind-tagged JSON line to ``spool/mcp/<fleet>.ndjson`` for syncd to
  apply later, after every string of every argument went through the redactor
  (:func:`lib.redact.scrub_deep`, invariant 7). A write tool therefore answers
  ``"queued for sync"`` — it cannot know, and never says, that a lease is held.

Refusals (no evidence, spool full) are :class:`lib.jsonrpc.ToolError` → ``isError: true``
results; a read with no cache answers ``enabled: false`` with a note, never an error
(invariant 12). There is no ``memory_write``: ``memory_propose`` spools a ``proposed`` event
whose scope is the constant ``"agent"``; only the gate inside ``maint.py`` promotes (invariant 8).

Spool records: :mod:`lib.mcp_records` (their format, built here with :func:`lib.mcp_records.build`).
"""
from __future__ import annotations

import json
import os
import threading
import time

from lib import mcp_records
from lib.live.leases import TTL_MAX, TTL_MIN
from lib.jsonrpc import InvalidParams, Tool, ToolError

# Everything else is imported where a tool first needs it: ``initialize`` and ``tools/list``
# are answered before the redactor's patterns compile or sqlite3 loads (start-up is on the
# agent's path; ``bench/mcp.py`` measures it).

ROW_DEFAULT = 50
"""Rows ``fleet_history``/``memory_timeline`` return when ``limit`` is not given."""
SEARCH_DEFAULT = 10
"""Hits ``memory_search`` returns when ``k`` is not given."""
ROW_CEILING = 200
"""Hard cap on rows per call, whatever ``limit``/``k`` asks for; more matches → ``truncated: true``."""
EVIDENCE_MAX = 20
"""Most citations one ``memory_propose`` accepts (more is refused, never trimmed)."""
LIST_CAP = 200
"""Most agents / leases / requests ``fleet_status`` lists (``truncated`` says when cut)."""
CLAIM_TYPES = ("environment", "outcome", "convention", "preference", "hypothesis")
HANDOFF_STATUSES = ("done", "in_progress", "blocked", "abandoned")
QUEUED = "queued for sync"
FRAMING = ("Peer observations from other agents' sessions, each labelled with who observed it, when, on how many "
           "independent sessions and at what confidence. Verify before relying on them.")
INSTRUCTIONS = ("ctxlake: shared memory and coordination for this agent fleet. Read tools answer from a local cache "
                "that ctxlake sync refreshes (it may be minutes old; each result says how old). Write tools queue a "
                "record for ctxlake sync and never report success at the fleet. Leases are advisory: git decides "
                "what lands.")
VOLATILE_FIELDS = ("observed_at",)
"""Record fields that differ between a call and its retry by construction (the clock)."""


class Context:
    """Everything the tools need, resolved once per server process.

    :param cfg: :class:`lib.config.Config` (fleet, agent, paths, summarize mode, lease ttl).
    :param session_id: the agent session this server serves, when the runtime tells us
        (``CTXLAKE_SESSION_ID``); stamped on spool records when known.
    :param cwd: the agent's working directory (relative lease paths resolve against it).
    :param clock: local wall clock in epoch seconds (tests pass a fake).
    """

    def __init__(self, cfg, *, session_id: str | None = None, cwd: str | None = None, clock=time.time, log=None):
        self.cfg = cfg
        self.paths = cfg.paths
        self.fleet_id, self.agent_id = cfg.fleet_id, cfg.agent_id
        self.session_id = session_id or None
        self.cwd = cwd or os.getcwd()
        self.clock = clock
        self.log = log or (lambda *a, **k: None)
        self._snapshot = None

    @property
    def snapshot(self):
        """The fleet's :class:`lib.memory.memory_index.SnapshotReader` (created on first use)."""
        if self._snapshot is None:
            from lib.memory import memory_index

            self._snapshot = memory_index.SnapshotReader(self.paths.snapshot(self.fleet_id))
        return self._snapshot

    def now_iso(self) -> str:
        from lib.clock import format_time

        return format_time(self.clock())


# -- schemas (the single source for tools/list and for validation) ---------------------------

def _paths_schema(what: str) -> dict:
    return {"type": "array", "minItems": 1, "maxItems": 64, "description": what,
            "items": {"type": "string", "minLength": 1, "maxLength": 1024}}


_LIMIT = {"type": "integer", "minimum": 1,
          "description": f"Rows to return (default {ROW_DEFAULT}; values above {ROW_CEILING} are clamped to {ROW_CEILING})."}
_SINCE = {"type": "string", "maxLength": 64,
          "description": "Only entries at or after this time: ISO-8601 (2026-09-10 or 2026-09-10T08:00:00Z) or an age (90m, 12h, 7d, 2w)."}

SCHEMAS = {
    "fleet_status": {"type": "object", "properties": {}, "additionalProperties": False},
    "fleet_claim": {
        "type": "object", "additionalProperties": False, "required": ["paths", "reason"],
        "properties": {
            "paths": _paths_schema("Files or directories (ending in /) to lease, absolute or relative to your working directory."),
            "reason": {"type": "string", "minLength": 1, "maxLength": 1000,
                       "description": "Why you need them; other agents see this."},
            "ttl_secs": {"type": "integer", "minimum": TTL_MIN, "maximum": TTL_MAX,
                         "description": "Lease lifetime in seconds (default from config, 300); renewed by ctxlake sync while your session is live."},
        }},
    "fleet_release": {
        "type": "object", "additionalProperties": False,
        "properties": {"paths": _paths_schema("Paths to release; omit to release everything you hold.")}},
    "fleet_history": {
        "type": "object", "additionalProperties": False,
        "properties": {"repo": {"type": "string", "maxLength": 512, "description": "Only sessions in this repository (as recorded, e.g. github.com/org/repo)."},
                       "since": _SINCE, "limit": _LIMIT}},
    "fleet_handoff": {
        "type": "object", "additionalProperties": False, "required": ["summary", "status"],
        "properties": {"summary": {"type": "string", "minLength": 1, "maxLength": 8000, "description": "What you did and where it stands."},
                       "status": {"type": "string", "enum": list(HANDOFF_STATUSES), "description": "State of the work."},
                       "next": {"type": "string", "maxLength": 4000, "description": "What whoever picks this up should do next."}}},
    "memory_search": {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {"query": {"type": "string", "maxLength": 2000, "description": "Words to look for; blank lists the best-supported claims."},
                       "scope": {"type": "string", "enum": ["fleet", "repo", "agent"],
                                 "description": "fleet (default): claims the promotion gate made visible to the fleet."},
                       "subject": {"type": "string", "maxLength": 200, "description": "Only claims about this subject (case-insensitive)."},
                       "claim_type": {"type": "string", "enum": list(CLAIM_TYPES)},
                       "k": {"type": "integer", "minimum": 1,
                             "description": f"Hits to return (default {SEARCH_DEFAULT}; clamped to {ROW_CEILING})."}}},
    "memory_propose": {
        "type": "object", "additionalProperties": False, "required": ["claim", "type", "subject", "evidence"],
        "properties": {"claim": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "One atomic statement."},
                       "type": {"type": "string", "enum": list(CLAIM_TYPES)},
                       "subject": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The topic, e.g. ci, auth, build."},
                       "evidence": {"type": "array", "maxItems": EVIDENCE_MAX,
                                    "description": f"1 to {EVIDENCE_MAX} citations of captured messages that show it.",
                                    "items": {"type": "object",
                                              "properties": {"session_id": {"type": "string", "maxLength": 200},
                                                             "message_id": {"type": "string", "maxLength": 200}}}}}},
    "memory_timeline": {
        "type": "object", "additionalProperties": False, "required": ["subject"],
        "properties": {"subject": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Topic, file or command to trace."},
                       "since": _SINCE, "limit": _LIMIT}},
}

DESCRIPTIONS = {
    "fleet_status": "Who in this fleet is active and which paths they hold leases on, plus the outcome of your own lease "
                    "requests — as of the last local cache refresh (ages included). Leases are advisory.",
    "fleet_claim": "Queue an advisory lease request on paths for ctxlake sync to apply. The answer means queued, not held: "
                   "check fleet_status for the outcome. Leases are advisory: they warn other agents, they do not lock files.",
    "fleet_release": "Queue the release of your leases on paths (omit paths: all you hold) for ctxlake sync to apply.",
    "fleet_history": "Recent sessions of this fleet from the cached snapshot: agent, repo, outcome, one-line summary, "
                     "files, tests, commits, friction; and the handoff notes agents left (fleet_handoff). Newest first.",
    "fleet_handoff": "Leave a handoff note (summary, status, next step) for whoever picks this work up; queued for ctxlake sync.",
    "memory_search": "Search the fleet's promoted claims (FTS5 + cosine, fused). Each hit carries its attribution: observer, "
                     "date, independent sessions, confidence, CONTESTED when disputed. Returns nothing rather than unrelated claims.",
    "memory_propose": "Propose a claim with evidence (session_id + message_id citations). It becomes a candidate only; the "
                      "promotion gate decides what the fleet sees. There is no direct memory write.",
    "memory_timeline": "What this fleet has actually tried about a subject: matching sessions and claims, newest first.",
}

_READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
_WRITE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
TITLES = {"fleet_status": "Fleet status", "fleet_claim": "Request advisory lease", "fleet_release": "Release leases",
          "fleet_history": "Fleet session history", "fleet_handoff": "Leave handoff note", "memory_search": "Search fleet memory",
          "memory_propose": "Propose a claim", "memory_timeline": "Subject timeline"}
TOOL_NAMES = tuple(SCHEMAS)
READ_TOOLS = ("fleet_status", "fleet_history", "memory_search", "memory_timeline")
_EMPTY_KEYS = {"fleet_status": ("agents", "leases", "my_requests"), "fleet_history": ("sessions", "handoffs"),
               "memory_search": ("results",), "memory_timeline": ("entries",)}


# -- helpers ------------------------------------------------------------------------------------

def clamp(value, default: int) -> int:
    """``value`` (or ``default`` when absent) clamped to [1, :data:`ROW_CEILING`]."""
    n = default if value is None else int(value)
    return max(1, min(n, ROW_CEILING))


_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str | None, now: float) -> str | None:
    """``since`` as the canonical ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (comparable with snapshot times).

    Accepts ISO-8601 (date only = midnight UTC) or an age ``<n>[smhdw]`` before ``now``.
    :raises InvalidParams: anything else.
    """
    from lib import clock

    if text is None or not text.strip():
        return None
    t = text.strip()
    number, unit = t[:-1].strip(), t[-1:]
    if unit in _UNIT and number.isdigit() and number.isascii() and len(number) <= 6:
        return clock.format_time(now - int(number) * _UNIT[unit])
    ts = clock.parse_time(t)
    if ts is None:
        raise InvalidParams(f"argument `since` must be an ISO-8601 time (2026-09-10, 2026-09-10T08:00:00Z) "
                            f"or an age like 90m, 12h, 7d; got {t[:64]!r}")
    return clock.format_time(ts)


RESCRUB_KEEP = frozenset({"claim_id", "session_id", "record_id", "message_id", "event_id", "fleet_id",
                          "excerpt_hash", "status", "kind", "claim_type", "runtime", "ranking"})
"""Keys of a read tool's answer whose values are ids or enumerations the answer itself makes
(never captured text), so :func:`rescrub` leaves them as they are."""


def rescrub(value, key: str | None = None):
    """``value`` (a read tool's answer) with every string scrubbed again with the tool rules of
    :func:`lib.redact.scrub`, at any depth, except under :data:`RESCRUB_KEEP` keys: session
    summaries, files, commands, claims, handoff notes, agent ids and repositories come from the
    snapshot, which holds what capture missed and what an older ctxlake stored, and an MCP answer
    reaches another agent's context just as the briefing does (docs/security.md "Sanitization of
    lake content"; issue #17 red team)."""
    if isinstance(value, str):
        if key in RESCRUB_KEEP:
            return value
        from lib import redact

        return redact.scrub(value, is_tool_output=True)[0]
    if isinstance(value, list):
        return [rescrub(v, key) for v in value]
    if isinstance(value, dict):
        return {k: rescrub(v, k) for k, v in value.items()}
    return value


def render_claim(row: dict) -> str:
    """``[observer, date, N independent session(s), conf 0.81(, CONTESTED)]`` + the claim on one line."""
    from lib.briefing import attribution
    from lib.sanitize import clean

    return attribution(row) + "\n  " + clean(str(row.get("claim") or ""), 2000, single_line=True)


def _claim_entry(row: dict) -> dict:
    """A snapshot claim row as a result entry; cells of the wrong type read as ``None``
    (:func:`lib.memory.snapshot.typed_row`: the snapshot is untrusted input)."""
    from lib.memory.snapshot import CLAIM_COLUMNS, typed_row

    row = typed_row(row, CLAIM_COLUMNS)
    return {"claim_id": row.get("claim_id"), "rendered": render_claim(row), "claim_type": row.get("claim_type"),
            "subject": row.get("subject"), "status": row.get("status"),
            "confidence": None if row.get("confidence") is None else round(float(row["confidence"]), 2),
            "independent_sessions": int(row.get("independent_sessions") or 0),
            "observed_by": row.get("observed_by"), "observed_at": row.get("observed_at")}


def _session_entry(d: dict) -> dict:
    """A snapshot session row (list columns already decoded) as a result entry; scalar cells of
    the wrong type read as ``None`` (:func:`lib.memory.snapshot.typed_row`), list cells that are not
    lists as ``[]``."""
    from lib.memory.snapshot import JSON_COLUMNS, SESSION_COLUMNS, typed_row

    d = typed_row(d, {k: t for k, t in SESSION_COLUMNS.items() if k not in JSON_COLUMNS})
    files = [f for f in d["files_touched"] if isinstance(f, str)] if isinstance(d.get("files_touched"), list) else []
    out = {k: d.get(k) for k in ("session_id", "agent_id", "runtime", "repo", "branch", "started_at", "ended_at",
                                  "duration_ms", "turn_count", "event_count", "outcome", "summary", "commands_ok",
                                  "commands_failed") if k in d}
    out["files_touched"] = files[:20]
    if len(files) > 20:
        out["files_touched_total"] = len(files)
    for k, cap in (("tests_run", 10), ("commits", 10), ("friction", 10)):
        v = d.get(k)
        out[k] = v[:cap] if isinstance(v, list) else []
    if isinstance(d.get("usage"), dict):
        out["usage"] = d["usage"]
    if d.get("imported"):
        out["imported"] = True
    return out


def _resources(paths: list[str], cwd: str) -> list[dict]:
    """Each path with its repository identity: ``{path, repo (repo_id|None), rel}`` where ``rel``
    is the lease key's path (:func:`lib.live.leases.resolve`: symlinks, ``.``/``..`` and case resolved,
    ``/`` for directories), or the absolute path outside any repository."""
    from lib.live import leases

    out = []
    for p in paths:
        full = p if os.path.isabs(p) else os.path.join(cwd, p)
        where = leases.resolve(full)
        if where:
            out.append({"path": p, "repo": where["repo"], "rel": where["path"]})
        else:
            norm = os.path.normpath(full) + ("/" if p.endswith("/") else "")
            out.append({"path": p, "repo": None, "rel": norm})
    return out


def request_key(kind: str, fleet_id: str, agent_id: str, session_id: str | None, fields: dict) -> str:
    """Identity of a ``fleet_handoff``/``memory_propose`` request for retry recognition: sha256
    hex of the canonical JSON of the kind, the agent session and the record's fields without
    :data:`VOLATILE_FIELDS`. Lease requests use :func:`lib.live.leases.request_key` (resolved paths, so
    any spelling of the same files is the same request). Stored in the record as ``request_key``."""
    import hashlib

    body = {"kind": kind, "fleet_id": fleet_id, "agent_id": agent_id, "session_id": session_id or None,
            "fields": {k: v for k, v in fields.items() if k not in VOLATILE_FIELDS}}
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def record_id(kind: str, fleet_id: str, agent_id: str, session_id: str | None, key: str, prior: str | None) -> str:
    """The id of an MCP spool record: :func:`lib.identity.event_id` (26 Crockford base32
    characters) scoped to the agent session (``session_id``, else ``agent:<fleet>/<agent>`` when
    the runtime gave none), of kind ``mcp_<kind>``, from the request's ``key``
    (:func:`request_key`, :func:`lib.live.leases.request_key`) and ``prior``, the record id of the
    session's previous write (``""`` for its first). The same request in the same state of the
    session is the same record by every try; claim, release, claim again are three records,
    since each chains on the one before (docs/architecture.md "Event identity")."""
    from lib import identity

    scope = session_id or f"agent:{fleet_id}/{agent_id}"
    return identity.event_id(scope, "mcp_" + kind, key, prior or "")


def _last_write(path: str) -> dict | None:
    """The record in ``path`` (:meth:`lib.paths.Paths.mcp_last_write`), or ``None``."""
    from lib import jsonfast

    data = jsonfast.read_object(path, 1 << 20)
    return data if isinstance(data.get("record_id"), str) and isinstance(data.get("kind"), str) else None


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


SNAPSHOT_TOOLS = frozenset({"fleet_history", "memory_search", "memory_timeline"})
"""The tools that read the cached snapshot: they take the snapshot lock (:meth:`Tools.start_warm_up`)."""


class Tools:
    """The tool handlers bound to one :class:`Context`; :meth:`list` gives the
    :class:`lib.jsonrpc.Tool` objects in their published order.

    ``ctx`` may be a :class:`Context` or a zero-argument factory returning one: the server
    passes a factory so the config is loaded on the first tool call, not before ``initialize``.
    """

    def __init__(self, ctx):
        self._ctx = ctx
        self._ctx_lock = threading.Lock()  # the warm-up thread and the first tool call may both ask
        self._snapshot_lock = threading.Lock()  # the warm-up thread and the tools reading the snapshot
        self._warm_up: threading.Thread | None = None
        self._queued: dict | None = None  # the record the current write call queued, once it is

    @property
    def ctx(self) -> Context:
        with self._ctx_lock:
            if not isinstance(self._ctx, Context):
                self._ctx = self._ctx()
            return self._ctx

    def start_warm_up(self, params: dict | None = None) -> threading.Thread:
        """Prepare the first ``memory_search`` on a daemon thread (the server calls it on the
        client's ``notifications/initialized``): load the config, then, unless the local summarize
        mode is ``none``, :meth:`lib.memory.memory_index.SnapshotReader.warm_up` (the vector file mapped,
        the embedder loaded, one search run), holding the snapshot lock every tool that reads the
        snapshot takes, so a tool call that arrives meanwhile waits for it instead of loading the
        same things again. Logged as ``mcp_warmed_up``; a failure is logged (``mcp_warm_up_failed``)
        and changes nothing — the first search then loads what it needs itself. Returns the
        started thread (the same one on a second call)."""
        def run():
            try:
                ctx = self.ctx
                if ctx.cfg.summarize_mode != "none":
                    ctx.log("mcp_warmed_up", **ctx.snapshot.warm_up())
            except Exception as exc:  # a warm-up is an optimisation: never an error the agent sees
                log = self._ctx.log if isinstance(self._ctx, Context) else None
                if log:
                    log("mcp_warm_up_failed", error=f"{type(exc).__name__}: {exc}"[:300])
            finally:
                self._snapshot_lock.release()
        if self._warm_up is not None:  # a client that sends notifications/initialized twice
            return self._warm_up
        self._snapshot_lock.acquire()  # taken here, so a tool call right behind the notification waits for it
        self._warm_up = threading.Thread(target=run, name="ctxlake-warm-up", daemon=True)
        self._warm_up.start()
        return self._warm_up

    def list(self) -> list[Tool]:
        handlers = {"fleet_status": self.fleet_status, "fleet_claim": self.fleet_claim,
                    "fleet_release": self.fleet_release, "fleet_history": self.fleet_history,
                    "fleet_handoff": self.fleet_handoff, "memory_search": self.memory_search,
                    "memory_propose": self.memory_propose, "memory_timeline": self.memory_timeline}
        return [Tool(name, DESCRIPTIONS[name], SCHEMAS[name], self._sanitized(handlers[name]), TITLES[name],
                     _READ if name in READ_TOOLS else _WRITE)
                for name in TOOL_NAMES]

    def _sanitized(self, fn):
        """Every result leaves through :func:`clean_deep` (no cache string escapes uncleaned), a
        read tool's through :func:`rescrub` first, and no unexpected exception reaches the agent
        as ``isError`` (invariant 12):

        - a read tool answers ``enabled: false``, its lists empty, with a note naming the error;
        - a write tool whose record was already queued answers ``queued`` (the write happened;
          reporting failure would make the agent retry it), and one that queued nothing lets
          the error through as the in-band failure it is.

        Refusals (:class:`ToolError`) and argument errors (:class:`InvalidParams`) pass through.
        """
        from lib.jsonrpc import RpcError

        def run(args):
            from lib.sanitize import clean_deep

            self._queued = None
            read = fn.__name__ in READ_TOOLS
            try:
                if fn.__name__ in SNAPSHOT_TOOLS:
                    with self._snapshot_lock:  # waits for a warm-up under way (start_warm_up)
                        return clean_deep(rescrub(fn(args)))
                return clean_deep(rescrub(fn(args)) if read else fn(args))
            except (ToolError, RpcError):
                raise
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"[:300]
                if fn.__name__ in READ_TOOLS:
                    self.ctx.log("tool_degraded", tool=fn.__name__, error=error)
                    out = {"enabled": False, "fleet_id": self.ctx.fleet_id, "truncated": False,
                           "note": f"The local cache could not be read ({error}); answering empty until ctxlake sync "
                                   "rewrites it."}
                    out.update((k, []) for k in _EMPTY_KEYS[fn.__name__])
                    return clean_deep(out)
                if self._queued is None:
                    raise
                self.ctx.log("tool_answer_degraded", tool=fn.__name__, record_id=self._queued["record_id"], error=error)
                return clean_deep({"queued": True, "status": QUEUED, "kind": self._queued["kind"],
                                   "record_id": self._queued["record_id"],
                                   "note": f"Queued. (Details of the answer are unavailable: {error}.)"})

        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        return run

    # -- shared read plumbing ------------------------------------------------------------
    def _sync_info(self) -> dict:
        from lib import cache_view

        info = cache_view.sync_status(self.ctx.paths.sync_status(self.ctx.fleet_id), self.ctx.clock())
        out = {"last_run_at": info["last_run_at"], "age_secs": info["age_secs"]}
        if info["last_run_at"] is None:
            out["note"] = (f"ctxlake sync has not run on this host for fleet {self.ctx.fleet_id} yet (no sync.json): "
                           "queued records wait in the local spool until it does.")
        return out

    def _snapshot_or_none(self, empty_key: str) -> dict | None:
        """``None`` when the snapshot opened; else the honest ``enabled: false`` answer."""
        from lib.memory import memory_index

        try:
            self.ctx.snapshot.conn()
            return None
        except memory_index.Unavailable as exc:
            if exc.reason == "missing":
                note = (f"No snapshot in the local cache for fleet {self.ctx.fleet_id}: ctxlake maint has not published one "
                        "yet, or ctxlake sync has not mirrored it to this host. Normal on a fresh install; not an error.")
            else:
                note = f"The cached snapshot could not be read ({exc}); ctxlake sync replaces it on its next pass."
            return {"enabled": False, "fleet_id": self.ctx.fleet_id, empty_key: [], "truncated": False, "note": note}

    def _memory_mode(self) -> tuple[str, str | None]:
        """``(mode, note)``: the most restrictive of the local config's and the snapshot's
        summarize mode (``none`` > ``shadow`` > ``agent``)."""
        meta = self.ctx.snapshot.meta
        modes = {self.ctx.cfg.summarize_mode, meta.get("summarize_mode")}
        if "none" in modes:
            return "none", ("Summarize mode is none for this fleet: no claims are extracted or served. "
                            "Set [summarize] mode = \"agent\" to enable fleet memory.")
        if "shadow" in modes or str(meta.get("agent_reads_enabled", "true")).lower() == "false":
            return "shadow", ("Shadow mode: claims are extracted and scored but none is shown to agents yet, while an "
                              "operator builds trust in them. Empty by design, not a failure.")
        return "agent", None

    def _memory_gate(self, empty_key: str) -> tuple[dict | None, dict]:
        """``(final_answer_or_None, base)`` shared by the two memory read tools."""
        off = self._snapshot_or_none(empty_key)
        if off:
            return off, {}
        mode, note = self._memory_mode()
        base = {"enabled": True, "fleet_id": self.ctx.fleet_id, "framing": FRAMING, empty_key: [], "truncated": False}
        if mode == "none":
            return {"enabled": False, "fleet_id": self.ctx.fleet_id, empty_key: [], "truncated": False, "note": note}, base
        if mode == "shadow":
            return dict(base, mode="shadow", note=note), base
        return None, base

    # -- fleet_status ----------------------------------------------------------------------
    def fleet_status(self, args: dict) -> dict:
        """Roster, unexpired leases and this agent's lease requests, with cache ages."""
        from lib import cache_view
        from lib.live import leases

        ctx, now = self.ctx, self.ctx.clock()
        roster = cache_view.roster(ctx.paths.roster(ctx.fleet_id), now, ctx.cfg.sync.presence_ttl_secs)
        held_view = cache_view.leases(ctx.paths.leases(ctx.fleet_id), now)
        notes = []
        for name, view in (("roster.json", roster), ("leases.json", held_view)):
            if view["status"] == cache_view.MISSING:
                notes.append(f"{name} is not in the local cache yet: ctxlake sync has not refreshed the live view on this host.")
            elif view["status"] == cache_view.UNREADABLE:
                notes.append(f"{name} in the local cache is unreadable ({view.get('detail')}); ignored until ctxlake sync rewrites it.")
        if roster["dropped_stale"]:
            notes.append(f"{roster['dropped_stale']} roster entr{'y' if roster['dropped_stale'] == 1 else 'ies'} older than "
                         f"{ctx.cfg.sync.presence_ttl_secs}s (store clock) left out.")
        agents = [dict(a, self=a.get("agent_id") == ctx.agent_id) for a in roster["agents"]]
        held = [dict(lease, mine=lease.get("holder") == ctx.agent_id) for lease in held_view["leases"]]
        requests = self._my_requests(held_view["requests"])
        enabled = roster["status"] == cache_view.OK or held_view["status"] == cache_view.OK
        out = {"enabled": enabled, "fleet_id": ctx.fleet_id, "agent_id": ctx.agent_id,
               "agents": agents[:LIST_CAP], "leases": held[:LIST_CAP], "my_requests": requests[:LIST_CAP],
               "truncated": len(agents) > LIST_CAP or len(held) > LIST_CAP or len(requests) > LIST_CAP,
               "cache": {"roster": roster.get("cache", {"status": roster["status"]}),
                         "leases": held_view.get("cache", {"status": held_view["status"]}),
                         "sync": self._sync_info()},
               "advisory": leases.ADVISORY_NOTE}
        if not enabled:
            notes.insert(0, f"No live view of fleet {ctx.fleet_id} in the local cache: is ctxlake sync running on this host?")
        if notes:
            out["note"] = " ".join(notes)
        return out

    def _my_requests(self, outcomes: list[dict]) -> list[dict]:
        """This agent's lease requests: spooled ones (``pending`` until an outcome shows up in
        leases.json) and outcomes syncd reported for it. Newest first."""
        from lib import cache_view

        ctx = self.ctx
        spooled = cache_view.spooled_records(ctx.paths.mcp_spool(ctx.fleet_id), ctx.agent_id, mcp_records.LEASE_KINDS)
        by_id = {o["record_id"]: o for o in outcomes if isinstance(o.get("record_id"), str)}
        out, seen = [], set()
        for rec in spooled:
            rid = rec.get("record_id")
            entry = {"record_id": rid, "kind": rec.get("kind"), "paths": rec.get("paths") or ("all" if rec.get("all") else []),
                     "requested_at": rec.get("requested_at")}
            if rid in by_id:
                entry["outcome"] = {k: v for k, v in by_id[rid].items() if k != "record_id"}
            else:
                entry["outcome"] = {"status": "pending", "detail": "queued for sync; not applied yet"}
            out.append(entry)
            seen.add(rid)
        for rid, o in by_id.items():
            if rid in seen or o.get("agent_id") != ctx.agent_id:
                continue
            out.append({"record_id": rid, "kind": o.get("kind"), "paths": o.get("paths"),
                        "requested_at": o.get("requested_at"), "outcome": {k: v for k, v in o.items() if k != "record_id"}})
        out.sort(key=lambda e: str(e.get("requested_at") or e.get("record_id") or ""), reverse=True)
        return out

    # -- fleet_history ---------------------------------------------------------------------
    def fleet_history(self, args: dict) -> dict:
        """Session digests from the snapshot, newest first, filtered by repo/since, capped."""
        limit = clamp(args.get("limit"), ROW_DEFAULT)
        since = parse_since(args.get("since"), self.ctx.clock())
        off = self._snapshot_or_none("sessions")
        if off:
            return dict(off, handoffs=[])
        from lib.memory import snapshot

        repo = args.get("repo") or None
        rows = self.ctx.snapshot.sessions(limit + 1, repo=repo, since=since)
        notes = snapshot.recent_handoffs(self.ctx.snapshot.conn(), limit + 1, repo=repo, since=since)
        out = {"enabled": True, "fleet_id": self.ctx.fleet_id, "sessions": [_session_entry(r) for r in rows[:limit]],
               "handoffs": [{k: h.get(k) for k in snapshot.HANDOFF_COLUMNS} for h in notes[:limit]],
               "truncated": len(rows) > limit or len(notes) > limit, "limit": limit}
        if since:
            out["since"] = since
        if not rows and not notes:
            out["note"] = "No sealed session or handoff note matches in the cached snapshot."
        return out

    # -- memory_search ---------------------------------------------------------------------
    def memory_search(self, args: dict) -> dict:
        """FTS5 + cosine over agent-visible claims, fused by reciprocal rank, with attribution."""
        k = clamp(args.get("k"), SEARCH_DEFAULT)
        query = args.get("query", "")
        done, base = self._memory_gate("results")
        if done:
            return done
        out = dict(base, query=query, k=k)
        if args.get("scope", "fleet") != "fleet":
            out["note"] = (f"No claim is served at scope {args['scope']}: the snapshot holds only what the promotion gate made "
                           "visible to the whole fleet (scope fleet). Your own proposals are candidates, not served.")
            return out
        subject, ctype = args.get("subject") or None, args.get("claim_type") or None
        reader = self.ctx.snapshot
        if not query.strip():
            rows = reader.list_claims(k + 1, subject, ctype)
            out.update(results=[_claim_entry(r) for r in rows[:k]], truncated=len(rows) > k, ranking="confidence (blank query)")
            return out
        found = reader.search(query, k, subject, ctype)
        rows = reader.claims_by_id([h["claim_id"] for h in found["hits"]])
        results = [dict(_claim_entry(rows[h["claim_id"]]), **{key: v for key, v in h.items() if key != "claim_id"})
                   for h in found["hits"] if h["claim_id"] in rows]
        notes = found["notes"]
        out.update(results=results, truncated=found["truncated"], ranking=found["ranking"],
                   relevance_floor=found["relevance_floor"])
        if not results:
            notes.append("Nothing relevant: no claim matched a query term or came within the relevance floor.")
        if notes:
            out["note"] = " ".join(notes)
        return out

    # -- memory_timeline -------------------------------------------------------------------
    def memory_timeline(self, args: dict) -> dict:
        """Sessions and claims about a subject, newest first, capped."""
        limit = clamp(args.get("limit"), ROW_DEFAULT)
        since = parse_since(args.get("since"), self.ctx.clock())
        subject = args["subject"].strip()
        if not subject:
            raise InvalidParams("argument `subject` must not be blank")
        done, base = self._memory_gate("entries")
        if done:
            return dict(done, subject=subject)
        reader = self.ctx.snapshot
        entries = []
        for r in reader.claims_about(subject, since, limit + 1):
            e = _claim_entry(r)
            entries.append(dict(e, kind="claim", at=e["observed_at"]))
        for s in reader.sessions(limit + 1, since=since, about=subject):
            e = _session_entry(s)
            entries.append({"kind": "session", "at": e.get("ended_at"), **{k: e.get(k) for k in (
                "session_id", "agent_id", "repo", "branch", "outcome", "summary", "commands_ok", "commands_failed",
                "tests_run", "commits", "friction")}})
        entries.sort(key=lambda e: str(e.get("at") or ""), reverse=True)
        out = dict(base, subject=subject, entries=entries[:limit], truncated=len(entries) > limit, limit=limit)
        if since:
            out["since"] = since
        if not entries:
            out["note"] = f"Nothing in the cached snapshot mentions {subject!r}."
        return out

    # -- writes ----------------------------------------------------------------------------
    def _guard(self, args: dict) -> tuple[dict, list[dict]]:
        """Scrub every string of every argument at any depth (``redact.scrub_deep``) before
        anything is built from them. Returns ``(clean_args, quarantine_records)``; a withheld
        argument yields a quarantine record (rules, field, sha256 — never the value), whose
        ``event_id`` :meth:`_queue` fills with the record's id."""
        import hashlib

        from lib import redact

        ctx = self.ctx
        clean_args, quarantine = {}, []
        for name, value in args.items():
            new, outcomes = redact.scrub_deep(value)
            clean_args[name] = new
            rules = sorted({r for o in outcomes if o.status == "quarantined" for r in o.rules})
            if rules:
                original = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
                rec = {"fleet_id": ctx.fleet_id, "agent_id": ctx.agent_id, "event_id": None,
                       "field": f"mcp.arguments.{name}", "rules_fired": rules,
                       "sha256": "sha256:" + hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest(),
                       "recorded_at": ctx.now_iso()}
                if ctx.session_id:
                    rec["session_id"] = ctx.session_id
                quarantine.append(rec)
        return clean_args, quarantine

    def _queue(self, kind: str, fields: dict, quarantine: list[dict]) -> dict:
        """Append one record to ``spool/mcp/<fleet>.ndjson``, durably, once; return it.

        The record's identity is ``(session_id, record_id)``, ``record_id`` =
        :func:`record_id` of the session, the kind, the request and the record id of the
        session's previous write (docs/architecture.md "Event identity"): a request the runtime
        sends again after this process wrote it but before it could remember so (a crash, a
        full disk for ``mcp-last``) gets the same id, and syncd's consumers apply it once.

        The record is on disk before this returns (:func:`lib.spool.append` with ``sync``:
        ``fdatasync``, the cheapest durable mechanism measured by ``bench/spool_durability.py``).
        A **retry** — a request with the same ``request_key`` (``fields["request_key"]`` for
        lease requests, else :func:`request_key`) as the last record this agent session queued
        (kept in ``spool/.state/mcp-last/``, :meth:`lib.paths.Paths.mcp_last_write`), within
        :data:`lib.live.leases.RETRY_SECS` of it — writes nothing and returns that first record, so the
        agent gets the first call's answer. Only the *last* write counts: claim, release, claim
        again is three requests.

        :raises ToolError: the spool is at its cap (:class:`lib.spool.SpoolFull`) or the disk
            refused the write — nothing was queued, and the agent is told so. A line written
            but not confirmed by the disk (:class:`lib.spool.NotDurable`) is queued, not failed.
        """
        from lib import spool
        from lib.live.leases import RETRY_SECS

        ctx = self.ctx
        key = fields.get("request_key") or request_key(kind, ctx.fleet_id, ctx.agent_id, ctx.session_id, fields)
        last_path = ctx.paths.mcp_last_write(ctx.fleet_id, ctx.agent_id, ctx.session_id)
        prior = _last_write(last_path)
        if prior is not None and prior.get("request_key") == key and prior.get("kind") == kind:
            from lib.clock import parse_time

            at = parse_time(prior.get("requested_at"))
            if at is not None and 0 <= ctx.clock() - at <= RETRY_SECS:
                ctx.log("mcp_request_retried", kind=kind, record_id=prior.get("record_id"),
                        detail="identical to this session's last write; not queued again")
                self._queued = prior
                return prior
        rid = record_id(kind, ctx.fleet_id, ctx.agent_id, ctx.session_id, key, prior.get("record_id") if prior else None)
        for q in quarantine:
            q["event_id"] = rid
        rec = mcp_records.build(kind, record_id=rid, fleet_id=ctx.fleet_id, agent_id=ctx.agent_id,
                                session_id=ctx.session_id, requested_at=ctx.now_iso(), fields=fields, request_key=key)
        line = mcp_records.encode(rec)
        try:
            spool.append(ctx.paths.mcp_spool(ctx.fleet_id), line, sync=True, lock_path=ctx.paths.mcp_spool_lock(ctx.fleet_id))
        except spool.NotDurable as exc:
            ctx.log("mcp_spool_not_durable", kind=kind, record_id=rid, error=str(exc))
        except spool.SpoolFull as exc:
            ctx.log("mcp_spool_full_dropped", kind=kind, error=str(exc))
            raise ToolError(f"Not queued: the local MCP spool is full ({exc}). ctxlake sync has not drained it — check that "
                            "it is running (ctxlake doctor). Nothing was written; retry once the spool drains.") from None
        except OSError as exc:
            ctx.log("mcp_spool_write_failed", kind=kind, error=str(exc))
            raise ToolError(f"Not queued: the local spool could not be written ({exc.strerror or exc}). Nothing was written.") from None
        self._queued = rec
        try:
            spool.atomic_write(last_path, json.dumps(rec, separators=(",", ":")).encode(), fsync=False)
        except OSError as exc:  # only retry recognition is lost; the record is queued
            ctx.log("mcp_last_write_failed", error=str(exc))
        qpath = ctx.paths.quarantine_spool_file(ctx.fleet_id)
        for q in quarantine:
            try:
                spool.append(qpath, json.dumps(q, ensure_ascii=True, separators=(",", ":")) + "\n", sync=True)
            except OSError as exc:
                ctx.log("mcp_quarantine_write_failed", error=str(exc))
        ctx.log("mcp_record_queued", kind=kind, record_id=rid)
        return rec

    def _queued_answer(self, rec: dict, **extra) -> dict:
        out = {"queued": True, "status": QUEUED, "kind": rec["kind"], "record_id": rec["record_id"],
               "sync": self._sync_info()}
        out.update(extra)
        return out

    def fleet_claim(self, args: dict) -> dict:
        """Queue a lease request; report what the cache knows of current holders (advisory)."""
        from lib import cache_view
        from lib.live import leases
        a, quarantine = self._guard(args)
        paths = _dedupe(a["paths"])
        reason = a["reason"].strip()
        if not reason:
            raise ToolError("Not queued: reason is blank. Say why you need these paths — other agents read it.")
        ttl = int(a.get("ttl_secs") or self.ctx.cfg.leases.ttl_secs)
        resources = _resources(paths, self.ctx.cwd)
        key = leases.request_key(mcp_records.LEASE_REQUEST, self.ctx.agent_id, self.ctx.session_id, resources, reason=reason, ttl=ttl)
        rec = self._queue(
            mcp_records.LEASE_REQUEST, {"paths": paths, "resources": resources, "reason": reason, "ttl_secs": ttl,
                              "cwd": self.ctx.cwd, "request_key": key}, quarantine)
        view = cache_view.leases(self.ctx.paths.leases(self.ctx.fleet_id), self.ctx.clock())["view"]
        holders = leases.conflicts_for_paths(view, self.ctx.agent_id, paths, self.ctx.cwd) if view else []
        answer = self._queued_answer(rec, paths=rec.get("paths", paths), ttl_secs=ttl, note=(
            "Queued, not held: ctxlake sync applies this request against the store by compare-and-swap; call fleet_status "
            "to see the outcome. " + leases.ADVISORY_NOTE))
        answer["held_by_others_as_of_cache"] = [{k: h.get(k) for k in ("path", "holder", "reason", "expires_at")} for h in holders]
        return answer

    def fleet_release(self, args: dict) -> dict:
        """Queue a release of the given paths, or of every lease this agent holds."""
        from lib.live import leases
        a, quarantine = self._guard(args)
        if "paths" in a:
            paths = _dedupe(a["paths"])
            fields = {"paths": paths, "resources": _resources(paths, self.ctx.cwd), "cwd": self.ctx.cwd}
        else:
            fields = {"all": True}
        fields["request_key"] = leases.request_key(mcp_records.LEASE_RELEASE, self.ctx.agent_id, self.ctx.session_id,
                                                 fields.get("resources"), everything=bool(fields.get("all")))
        rec = self._queue(mcp_records.LEASE_RELEASE, fields, quarantine)
        return self._queued_answer(rec, paths=rec.get("paths", "all you hold"), note=(
            "Queued: ctxlake sync releases these leases at the store; until it runs, other agents still see them held."))

    def fleet_handoff(self, args: dict) -> dict:
        """Queue a handoff note for whoever picks the work up next."""
        from lib import repo as repomod
        a, quarantine = self._guard(args)
        if not a["summary"].strip():
            raise ToolError("Not queued: summary is blank. Say what you did and where it stands.")
        fields = {"summary": a["summary"], "status": a["status"]}
        if a.get("next", "").strip():
            fields["next"] = a["next"]
        fields["cwd"] = self.ctx.cwd
        info = repomod.identify(self.ctx.cwd)
        if info.get("repo_id"):
            fields["repo"] = info["repo_id"]
        if info.get("branch"):
            fields["branch"] = info["branch"]
        rec = self._queue(mcp_records.HANDOFF, fields, quarantine)
        return self._queued_answer(rec, note=(
            "Queued: ctxlake sync ships the note to the lake on its next pass; after the next ctxlake maint it shows in "
            "this fleet's briefings and in fleet_history (handoffs)."))

    def memory_propose(self, args: dict) -> dict:
        """Queue a ``proposed`` claim event (scope ``agent``, always). Refuses without evidence."""
        evidence = args["evidence"]
        if not evidence:
            raise ToolError("Not queued: no evidence, no claim. Cite at least one captured message as "
                            "{\"session_id\": ..., \"message_id\": ...}.")
        bad = [i for i, c in enumerate(evidence)
               if not (isinstance(c.get("session_id"), str) and c["session_id"].strip()
                       and isinstance(c.get("message_id"), str) and c["message_id"].strip())]
        if bad:
            raise ToolError(f"Not queued: citation(s) {bad} lack a non-empty session_id and message_id. "
                            "Every citation must name the session and the message that shows the claim.")
        a, quarantine = self._guard(args)
        if not a["claim"].strip() or not a["subject"].strip():
            raise ToolError("Not queued: claim and subject must not be blank.")
        from lib.memory.claims import claim_id as content_id

        # the claim's content identity, the id the gate folds it under: what ctxlake claims
        # --explain, the snapshot and memory_search show once it is ingested (docs/design.md §10)
        claim_id = content_id(a["type"], a["claim"].strip())
        citations = []
        for c in a["evidence"]:
            cite = {"session_id": c["session_id"].strip(), "message_id": c["message_id"].strip()}
            if cite not in citations:
                citations.append(cite)
        fields = {"claim_id": claim_id, "claim": a["claim"].strip(), "claim_type": a["type"],
                  "subject": a["subject"].strip(), "scope": "agent", "observed_by": self.ctx.agent_id,
                  "observed_at": self.ctx.now_iso(), "evidence": citations}
        rec = self._queue(mcp_records.PROPOSED, fields, quarantine)
        return self._queued_answer(rec, claim_id=rec["claim_id"], scope="agent", note=(
            "Queued as a candidate. The gate in ctxlake maint checks each citation against the captured sessions and "
            "decides what the fleet sees; this call cannot make it fleet knowledge."))


def build_tools(ctx) -> list[Tool]:
    """The eight tools for ``ctx`` (a :class:`Context`, or a factory returning one on first
    use), in published order (:data:`TOOL_NAMES`)."""
    return Tools(ctx).list()
