"""Claims: what agents propose, the event log it lives in, and its fold (docs/design.md §4, §10).

Flow: ``memory_propose`` (MCP) spools a ``proposed`` record → syncd (:func:`ingest`) resolves
every citation against the lake — never trusting the agent — and writes one ClaimEvent
create-only to ``claims/events/fleet=<f>/dt=<d>/agent=<a>/<ulid>.json`` (or a ``rejected`` event
saying why) → the gate inside maint (:mod:`lib.memory.gate`) folds all events and decides → the fold
is written to ``claims/fleet/<f>/<claim_id>.json`` and into the snapshot.

A claim's identity is its content: ``claim_id = sha256(type \\0 normalized text)[:24]``, so two
agents proposing the same text corroborate one claim (the subject is deliberately not part of
the identity: agents invent subjects — reference bug 12.2 #14). Events are never edited or
deleted; :func:`fold` re-derives every claim's state from them alone.

ClaimEvent kinds: ``proposed``, ``rejected`` (citation did not resolve, rate limit, too long),
``promoted``, ``contested``, ``approved`` (human, preferences), ``retired`` (human).
"""
from __future__ import annotations

import hashlib
import json
import time
import unicodedata

from lib.keys import claim_event_key, claim_events_prefix, is_segment
from lib.mcp_records import PROPOSED

CLAIM_TYPES = ("environment", "outcome", "convention", "preference", "hypothesis")
THRESHOLDS = {"environment": 1, "outcome": 1, "convention": 2}
"""Independent sessions a claim type needs before the gate promotes it (docs/design.md §10);
``preference`` needs a human approval, ``hypothesis`` never auto-promotes."""
MAX_CLAIM_CHARS = 2000
MAX_PROPOSALS_PER_AGENT_DAY = 100
"""Proposals accepted per agent per UTC day (the day the MCP server queued them), counted across
sync passes by each host's syncd (:func:`load_tally`); more are rejected with a visible reason."""
TALLY_DAYS = 7
"""Days of per-agent proposal counts syncd keeps (:func:`save_tally`)."""


def normalize(text: str) -> str:
    """NFKC, lowercase, whitespace collapsed, trailing punctuation dropped: the identity form."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = " ".join(t.split())
    return t.rstrip(" .!;:")


def claim_id(claim_type: str, text: str) -> str:
    """Content identity of a claim (24 hex chars)."""
    return hashlib.sha256(f"{claim_type}\0{normalize(text)}".encode()).hexdigest()[:24]


def confidence(n: int) -> float:
    """min(0.5 + 0.15·n, 0.95) for ``n`` independent sessions (docs/design.md §10)."""
    return round(min(0.5 + 0.15 * n, 0.95), 4)


def fold(events: list[dict]) -> dict[str, dict]:
    """Fold ClaimEvents (any order; sorted by ``event_id`` here) into claim states.

    Returns ``{claim_id: {claim_id, claim, claim_type, subject, status, observers[],
    proposer_hosts[] (the hosts whose syncd ingested a proposal), observed_by, observed_at, evidence[{session_id, message_id, excerpt_hash, observed_at,
    observed_by}], proposals[], independent_sessions, confidence, approved, reason, history[]}}``.
    Status starts ``candidate``; ``promoted``/``contested``/``retired`` follow gate and human
    events; a claim whose every proposal was rejected is ``rejected``.
    """
    claims: dict[str, dict] = {}
    for ev in sorted(events, key=lambda e: str(e.get("event_id", ""))):
        cid = ev.get("claim_id")
        kind = ev.get("kind")
        if not cid or not kind:
            continue
        c = claims.get(cid)
        if kind in ("proposed", "rejected") and c is None:
            c = claims[cid] = {"claim_id": cid, "claim": ev.get("claim", ""), "claim_type": ev.get("claim_type"),
                               "subject": ev.get("subject", ""), "status": "candidate" if kind == "proposed" else "rejected",
                               "observers": [], "proposer_hosts": [], "observed_by": ev.get("observed_by"), "observed_at": ev.get("observed_at"),
                               "evidence": [], "proposals": [], "independent_sessions": 0, "confidence": 0.0,
                               "approved": False, "reason": ev.get("reason"), "history": []}
        if c is None:
            continue
        c["history"].append({"kind": kind, "event_id": ev.get("event_id"), "at": ev.get("recorded_at"),
                             "by": ev.get("observed_by") or ev.get("by"), "reason": ev.get("reason")})
        if kind == "proposed":
            if c["status"] == "rejected":
                c["status"] = "candidate"
            c["proposals"].append(ev.get("event_id"))
            if ev.get("observed_by") and ev["observed_by"] not in c["observers"]:
                c["observers"].append(ev["observed_by"])
            if ev.get("proposer_host") and ev["proposer_host"] not in c["proposer_hosts"]:
                c["proposer_hosts"].append(ev["proposer_host"])
            seen = {(e["session_id"], e["message_id"]) for e in c["evidence"]}
            for e in ev.get("evidence") or []:
                if (e.get("session_id"), e.get("message_id")) not in seen:
                    c["evidence"].append(dict(e, observed_by=ev.get("observed_by")))
        elif kind == "promoted":
            if c["status"] != "retired":
                c["status"] = "promoted"
                c["independent_sessions"] = int(ev.get("independent_sessions") or 0)
                c["confidence"] = float(ev.get("confidence") or 0)
                c["reason"] = ev.get("reason")
        elif kind == "contested":
            if c["status"] != "retired":
                c["status"] = "contested"
                c["reason"] = ev.get("reason")
                c["contested_with"] = ev.get("against")
        elif kind == "approved":
            c["approved"] = True
        elif kind == "retired":
            c["status"] = "retired"
            c["reason"] = ev.get("reason")
    return claims


def load_events(store, fleet: str) -> list[dict]:
    """Every ClaimEvent of ``fleet`` from the store (unparseable objects skipped)."""
    out = []
    for entry in store.list(claim_events_prefix(fleet)):
        try:
            ev = json.loads(store.get(entry.key).data)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out


def write_event(store, fleet: str, agent: str, event: dict) -> str:
    """Write one ClaimEvent create-only; fills ``event_id``/``recorded_at``. Returns its key."""
    from lib.store import CREATE, PreconditionFailed
    from lib.ulid import new_ulid

    event = dict(event)
    if not event.get("event_id"):
        event["event_id"] = new_ulid()
    event.setdefault("recorded_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    key = claim_event_key(fleet, event["recorded_at"][:10], agent, event["event_id"])
    try:
        store.put(key, json.dumps(event, sort_keys=True).encode(), CREATE)
    except PreconditionFailed:
        pass  # the same event id landed before (a replay): events are immutable
    return key


# -- evidence resolution against the lake ---------------------------------------------------

class LakeIndex:
    """Finds captured envelopes by ``(session_id, message_id or event_id)`` in the lake.

    Built lazily per session from that session's segments (``sessions/fleet=<f>/.../session=<sid>/``),
    so a proposal costs reading the cited sessions only, never the whole lake.
    """

    def __init__(self, store, fleet: str):
        self.store, self.fleet = store, fleet
        self._prefixes: dict[str, list[str]] | None = None
        self._sessions: dict[str, dict] = {}
        self._shippers: dict[int, str | None] = {}

    def _scan(self):
        from lib import lake

        self._prefixes = {}
        for entry in self.store.list(lake.fleet_sessions_prefix(self.fleet)):
            if is_segment(entry.key):
                info = lake.parse_session_prefix(entry.key)
                self._prefixes.setdefault(info["session"], []).append(entry.key)

    def session(self, session_id: str) -> dict:
        """``{id: envelope}`` for every message_id and event_id of the session ({} if unknown)."""
        from lib import lake

        if session_id in self._sessions:
            return self._sessions[session_id]
        if self._prefixes is None:
            self._scan()
        found: dict = {}
        for key in sorted(self._prefixes.get(session_id, [])):
            envs, shipper = lake.decode_shipped(self.store.get(key).data)
            for env in envs:
                self._shippers[id(env)] = shipper
                found[env["event_id"]] = env
                if env.get("message_id"):
                    found.setdefault(env["message_id"], env)
        self._sessions[session_id] = found
        return found

    def resolve(self, session_id: str, message_id: str) -> dict | None:
        """The cited envelope, or ``None``."""
        return self.session(session_id).get(message_id)

    def shipped_by(self, env: dict) -> str | None:
        """The host id of the syncd that shipped ``env`` (an envelope :meth:`resolve` returned;
        :data:`lib.lake.SHIPPED_BY`), ``None`` for a segment older than that record."""
        return self._shippers.get(id(env))


SUPPORT_MIN = 0.15
"""Share of a claim's terms the cited event's text must hold for the citation to count as
support (docs/memory.md "Gate rules", docs/security.md "Trust model"). Chosen so that a
one-fact claim of ~6 terms counts with one shared distinctive term (``pytest``,
``redis-server``). Measured on real transcripts (``bench/claim_support.py``, the table in
docs/memory.md): 58 % of related citations and 21 % of citations of another session's event
reach it; independence (rule 4) is what stops a forged citation."""
_STOPWORDS = frozenset(
    "the and for with that this from into are was were has have had not but you your our its it's can "
    "should must will would use uses used using when then than there their they them via per one all any "
    "each only also just more most some such what which while who whom how why where here out off over "
    "under about after before again been being does did doing".split())


def terms(text: str) -> set:
    """Content words of ``text``: lower-cased runs of letters/digits of 3+ characters (and the
    parts of ``a-b``/``a_b``/``a.b`` names, whole too), stopwords removed."""
    import re

    out = set()
    for tok in re.findall(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[a-z0-9]{3,}", text.lower()):
        for part in [tok, *re.split(r"[_.\-/]+", tok)]:
            if len(part) >= 3 and part not in _STOPWORDS:
                out.add(part)
    return out


def event_text(env: dict, limit: int = 65536) -> str:
    """The stored (already redacted) text of one envelope: content, tool name, input, result
    and paths, at most ``limit`` characters."""
    tool = env.get("tool") or {}
    parts = [env.get("content") or "", str(tool.get("name") or ""), str(tool.get("input") or ""),
             str(tool.get("result") or ""), " ".join(map(str, tool.get("paths") or []))]
    return "\n".join(parts)[:limit]


def support(claim: str, env: dict) -> float:
    """How much the cited envelope's text relates to the claim: the share of the claim's
    :func:`terms` found in :func:`event_text` of the envelope (0..1; 0 when the claim has no
    terms). Cheap and explainable; a claim about ``redis-server`` citing a ``git status`` call
    scores ~0."""
    want = terms(claim)
    if not want:
        return 0.0
    have = terms(event_text(env))
    return round(len(want & have) / len(want), 3)


def unsupported_values(claim: str, env: dict) -> list[str]:
    """The value tokens of ``claim`` (:func:`lib.memory.gate.values`: numbers and versions, code
    and quoted spans, paths, URLs, command-line flags) that the cited envelope's
    :func:`event_text` does not hold (case-insensitive substring), sorted. A value is what an
    agent acts on (a command to run, a host to fetch from, a flag), so a claim's values must all
    be in its evidence: a claim made of a cited file's words plus ``curl … | sh`` (issue #17, red
    team) has that command here and no citation of it supports the claim."""
    from lib.memory.gate import values

    text = event_text(env).lower()
    return sorted(v for v in values(claim) if v not in text)


def resolve_citation(index: LakeIndex, cite: dict, claim: str = "") -> dict | None:
    """Fill a citation from the lake: ``{session_id, message_id, excerpt_hash, observed_at,
    agent_id, host_id, support, unsupported_values, shipped_by?}`` or ``None`` when it resolves to
    no captured envelope of this fleet. ``support`` is :func:`support` of ``claim`` against the
    cited envelope, ``unsupported_values`` :func:`unsupported_values`; ``shipped_by`` is the host
    id of the syncd that shipped the cited segment (:meth:`LakeIndex.shipped_by`): the host the
    gate counts, where ``host_id`` is only what the hook's environment said."""
    env = index.resolve(str(cite.get("session_id")), str(cite.get("message_id")))
    if env is None:
        return None
    tool = env.get("tool") or {}
    excerpt = env.get("content_hash") if env.get("content") else (tool.get("input_hash") or env.get("content_hash"))
    out = {"session_id": env["session_id"], "message_id": str(cite.get("message_id")), "excerpt_hash": excerpt,
           "observed_at": env["emitted_at"], "agent_id": env.get("agent_id"), "host_id": env.get("host_id"),
           "support": support(claim, env), "unsupported_values": unsupported_values(claim, env)}
    shipper = index.shipped_by(env)
    if shipper:
        out["shipped_by"] = shipper
    if is_ctxlake_answer(env):
        out.update(support=0.0, ctxlake_answer=True)
    return out


def is_ctxlake_answer(env: dict) -> bool:
    """Whether ``env`` is a call of one of ctxlake's own MCP tools (``tool.mcp_server`` is
    ``ctxlake``, or the tool name joins ``ctxlake`` and one of :data:`lib.mcp_tools.TOOL_NAMES`:
    ``mcp__ctxlake__fleet_history``). Its result is the fleet's memory served back — other
    agents' handoff notes, lease reasons, claims — so it is never evidence: citing it would let an
    agent launder its own text through another agent's session (issue #17 red team). So is an
    event whose text holds the briefing's fence (:data:`lib.briefing.FENCE_OPEN`): a runtime that
    records the injected SessionStart context in what it captures (Hermes keeps it in its
    ``api_content``) would otherwise hand other agents' summaries back as this agent's event."""
    from lib.briefing import FENCE_OPEN
    from lib.install.commands import MCP_NAME
    from lib.mcp_tools import TOOL_NAMES

    tool = env.get("tool") or {}
    if str(tool.get("mcp_server") or "").lower() == MCP_NAME:
        return True
    name = str(tool.get("name") or "").lower()
    return (MCP_NAME in name and name.endswith(TOOL_NAMES)) or FENCE_OPEN in event_text(env)


def load_tally(path: str | None) -> dict:
    """The per-agent, per-UTC-day proposal counts kept in ``path`` (JSON ``{"<agent>\u0000<day>": n}``)
    as ``{(agent, day): n}``; empty when the file is missing or unreadable (a lost tally lets one
    more day's cap through, it never blocks an agent)."""
    if not path:
        return {}
    try:
        with open(path, "rb") as fh:
            raw = json.loads(fh.read())
        return {tuple(k.split("\u0000", 1)): int(v) for k, v in raw.items()
                if isinstance(k, str) and "\u0000" in k and isinstance(v, int) and not isinstance(v, bool)}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def save_tally(path: str | None, counts: dict, today: str) -> None:
    """Write ``counts`` to ``path`` atomically, keeping the :data:`TALLY_DAYS` days up to the latest
    (``today`` or a later day a record carried): a backlog that syncd drains days late is still
    counted against the day it was proposed on.
    :raises OSError: the state folder is unwritable."""
    if not path:
        return
    from lib.spool import atomic_write

    import datetime

    latest = max([today] + [d for _, d in counts])
    try:
        oldest = (datetime.date.fromisoformat(latest) - datetime.timedelta(days=TALLY_DAYS - 1)).isoformat()
    except ValueError:  # a day string the MCP server did not write: keep everything rather than guess
        oldest = ""
    data = {f"{a}\u0000{d}": n for (a, d), n in sorted(counts.items()) if d >= oldest}
    atomic_write(path, json.dumps(data, sort_keys=True).encode())


def ingest(store, records: list[dict], fleet: str, *, log=lambda *a, **k: None, counts: dict | None = None,
           tally_path: str | None = None, proposer_host: str | None = None) -> dict:
    """Turn spooled ``proposed`` records into ClaimEvents (docs/memory.md).

    Each citation is resolved against the lake (:class:`LakeIndex`); if none resolves the
    proposal becomes a ``rejected`` event with the reason, which ``memory_timeline`` shows the
    agent. Also rejected: claim text over :data:`MAX_CLAIM_CHARS`, unknown type, more than
    :data:`MAX_PROPOSALS_PER_AGENT_DAY` proposals from one agent in one UTC day (by the day the
    MCP server queued it). The tally lives in ``tally_path`` (syncd keeps it in its state folder),
    so the cap holds across sync passes; ``counts`` (a dict) is used instead when given. Returns
    ``{"proposed": n, "rejected": n}``. A record whose ``(session_id, record_id)`` came before
    in ``records`` is the same request spooled twice and is skipped; one re-delivered in a later
    batch writes nothing new (its event id derives from the record id, create-only).
    ``proposer_host`` (default: this process's :func:`lib.envelope.host_id`, i.e. the syncd that
    read the MCP spool) is stamped on every event as ``proposer_host``: the host the proposal came
    from, which the gate counts as the proposer's own (the record's ``agent_id`` is the agent's word).
    """
    from lib.envelope import host_id

    proposer_host = proposer_host or host_id()
    index = LakeIndex(store, fleet)
    persist = counts is None and tally_path is not None
    counts = counts if counts is not None else load_tally(tally_path)
    out = {"proposed": 0, "rejected": 0}
    seen = set()
    for rec in records:
        if rec.get("kind") != PROPOSED or rec.get("fleet_id") not in (None, fleet):
            continue
        rid = (rec.get("session_id"), rec.get("record_id"))
        if rid[1] and rid in seen:  # the same record spooled twice (docs/architecture.md "Event identity")
            continue
        seen.add(rid)
        agent = str(rec.get("agent_id") or "unknown")
        text = str(rec.get("claim") or "")
        ctype = rec.get("claim_type")
        base = {"claim": text[:MAX_CLAIM_CHARS], "claim_type": ctype, "subject": str(rec.get("subject") or "")[:200],
                "scope": "agent", "observed_by": agent, "observed_at": rec.get("observed_at") or rec.get("requested_at"),
                "proposal_record_id": rec.get("record_id"), "agent_claim_id": rec.get("claim_id"),
                "proposer_host": proposer_host}
        cid = claim_id(str(ctype), text)
        day = str(rec.get("requested_at") or time.strftime("%Y-%m-%d"))[:10]
        counts[(agent, day)] = counts.get((agent, day), 0) + 1
        reason = None
        if ctype not in CLAIM_TYPES:
            reason = f"unknown claim type {ctype!r}; use one of {', '.join(CLAIM_TYPES)}"
        elif not text.strip():
            reason = "empty claim text"
        elif len(text) > MAX_CLAIM_CHARS:
            reason = f"claim text is {len(text)} characters; the limit is {MAX_CLAIM_CHARS} — state one fact"
        elif counts[(agent, day)] > MAX_PROPOSALS_PER_AGENT_DAY:
            reason = f"rate limit: more than {MAX_PROPOSALS_PER_AGENT_DAY} proposals from {agent} on {day}"
        evidence = []
        if reason is None:
            bad = []
            for cite in (rec.get("evidence") or [])[:20]:
                r = resolve_citation(index, cite, text) if isinstance(cite, dict) else None
                (evidence.append(r) if r else bad.append(cite))
            if not evidence:
                reason = ("no citation resolves to a captured event of this fleet "
                          f"({len(bad)} cited; cite session_id + message_id of an event this fleet captured)")
            elif bad:
                log("claim_citations_dropped", claim_id=cid, dropped=len(bad))
        if reason:
            write_event(store, fleet, agent, {**base, "kind": "rejected", "claim_id": cid, "reason": reason,
                                              "event_id": _rid(rec, "r")})
            out["rejected"] += 1
            log("claim_rejected", claim_id=cid, agent=agent, reason=reason[:200])
            continue
        write_event(store, fleet, agent, {**base, "kind": "proposed", "claim_id": cid, "evidence": evidence,
                                          "event_id": _rid(rec, "p")})
        out["proposed"] += 1
        log("claim_proposed", claim_id=cid, agent=agent, citations=len(evidence))
    if persist:
        try:
            save_tally(tally_path, counts, time.strftime("%Y-%m-%d", time.gmtime()))
        except OSError as exc:
            log("claim_tally_write_failed", error=str(exc)[:200])
    return out


def _rid(rec: dict, suffix: str) -> str | None:
    """Deterministic event id from the spool record, so a replayed record writes nothing new:
    ULID-shaped (:func:`fold` orders events by id), its 10-character time part the record's
    ``requested_at`` (ms), then the last 16 characters of its ``record_id`` (a hash,
    :func:`lib.mcp_tools.record_id`) and ``suffix``. ``None`` without a ``record_id``."""
    from lib.clock import parse_time
    from lib.ulid import ulid_at

    rid = str(rec.get("record_id") or "")
    if not rid:
        return None
    at = parse_time(str(rec.get("requested_at") or ""))
    ms = int(at * 1000) if at is not None else 0
    return ulid_at(ms, rid) + suffix


def run_cli(args, cfg, out) -> int:
    """``ctxlake claims [--status S] [--explain] | --approve ID | --retire ID --reason R``: list
    the gate's folds (``claims/fleet/<f>/``) by status, one line each to ``out`` (JSON with
    ``--json``), or write a human ClaimEvent the next maintenance pass folds in (an id prefix
    names the claim); returns the exit code. :raises lib.failures.Failure: ``usage`` (a prefix
    matching no claim or several, ``--retire`` without ``--reason``)."""
    import json

    from lib import keys
    from lib.failures import Failure
    from lib.store import open_store

    if args.retire and not (args.reason or "").strip():  # before any read: the command line is wrong either way
        raise Failure("usage", "claims: --retire needs --reason (why the claim no longer holds; other agents read it)")
    store = open_store(cfg.store, live=cfg.live_store)
    if args.approve or args.retire:
        cid = args.approve or args.retire
        folded = fold(load_events(store, cfg.fleet_id))
        matches = [c for c in folded if c.startswith(cid)]
        if len(matches) != 1:
            raise Failure("usage", f"claims: {cid!r} matches {len(matches)} claims; give more of the id")
        kind = "approved" if args.approve else "retired"
        write_event(store, cfg.fleet_id, "_human", {"kind": kind, "claim_id": matches[0], "by": cfg.agent_id,
                                                           "reason": args.reason})
        out.write(f"{kind} {matches[0]}; takes effect at the next `ctxlake maint --once`\n")
        return 0
    rows = []
    for entry in store.list(keys.claim_folds_prefix(cfg.fleet_id)):
        try:
            c = json.loads(store.get(entry.key).data)
        except ValueError:
            continue
        if not args.status or c.get("status") == args.status:
            rows.append(c)
    if args.json:
        out.write(json.dumps(rows, sort_keys=True, default=str) + "\n")
        return 0
    from lib.sanitize import for_terminal as t

    for c in sorted(rows, key=lambda c: (str(c.get("status") or ""), -(c.get("confidence") or 0))):
        out.write(f"{t(c['claim_id'])}  {t(c.get('status')):<10} {t(c.get('claim_type')):<11} "
                  f"conf {c.get('confidence') or 0:.2f}  {len(c.get('evidence') or [])} cite(s)  {t(c.get('claim'), 80)}\n")
        if args.explain:
            out.write(f"    why: {t(c.get('explain') or c.get('reason') or '-', 2000)}\n")
    if not rows:
        out.write("no claims" + (f" with status {args.status}" if args.status else "") + "\n")
    return 0
