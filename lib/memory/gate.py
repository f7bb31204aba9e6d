"""The promotion gate: agents propose, the gate promotes (docs/design.md §10, invariant 8).

Runs inside ``maint.py`` after compaction and digests, before the snapshot. :func:`decide` is a
pure function of the folded claims, the session digests and the embedder; it returns the
decision events to write and an explanation per claim (``ctxlake claims --explain``).

Rules, in order, for each ``candidate``:

1. evidence must resolve to a captured envelope in the lake — a sealed session of this fleet
   whose digest lists the cited ``message_id`` (or ``event_id``); unsealed sessions wait;
2. the observer must be a known agent (one with a sealed session in this fleet);
3. evidence must support the claim — never an answer of ctxlake's own MCP tools
   (:func:`lib.memory.claims.is_ctxlake_answer`) — the cited event's stored text holds at least
   :data:`lib.memory.claims.SUPPORT_MIN` of the claim's terms (``support``, measured at ingest by
   :func:`lib.memory.claims.support`) **and every value of the claim** (command, URL, path, flag,
   number, code span: ``unsupported_values`` empty, :func:`lib.memory.claims.unsupported_values`);
4. independence = distinct **hosts whose syncd shipped the supporting events** (``shipped_by``;
   the session's host, else its agent, for evidence resolved before that was kept), whose
   supporting sessions were **not** shown this claim (``injected_claims`` of the session's
   digest, recorded by the hook from the briefing); and a claim is never won alone: its evidence
   must come from two such units, or from one that is not a proposer's (not an observer's
   agent, nor a host an observer's sessions ran on, nor a host whose syncd ingested a proposal
   of it) — docs/security.md "Trust model";
5. per-type threshold on that count: environment 1, outcome 1, convention 2, preference = human
   approval, hypothesis never;
6. a claim that passes, resembles a promoted claim on the same subject (cosine ≥ 0.85 or word
   overlap ≥ 0.6) **and** says something the other denies (:func:`difference`: a negation one
   side has and the other lacks, an opposite word, or a value — number, version, quoted or
   code span, path, flag — that each side has and the other does not) contests both. Resemblance
   alone is corroboration or a near-duplicate, not a contradiction; identical text is the same
   claim.

Confidence = min(0.5 + 0.15·n, 0.95). Nothing is deleted; retirement is a human event.
"""
from __future__ import annotations

from lib.memory import claims as claimsmod
from lib import keys

from lib.envelope import sha256_hex  # noqa: E402

_UNKNOWN_HOST = sha256_hex("unknown-host")
"""The host id of a host whose name could not be read: not a host, so never an independence unit."""
COSINE_CONTRADICTION = 0.85
OVERLAP_CONTRADICTION = 0.6


def _words(text: str) -> set:
    import re

    return set(re.findall(r"\w+", text.lower()))


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of the word sets of ``a`` and ``b`` (0..1)."""
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def _unit(d: dict) -> tuple:
    """The independence unit of a session digest: its host where known, else its agent."""
    h = d.get("host_id")
    return ("host", h) if h and h != _UNKNOWN_HOST else ("agent", d.get("agent_id"))


def _cite_unit(e: dict, d: dict) -> tuple:
    """The independence unit of one resolved citation ``e`` in the session of digest ``d``: the
    host whose syncd shipped the cited event (``shipped_by``, :data:`lib.lake.SHIPPED_BY`) —
    the host fact an agent cannot choose — else, for evidence resolved before that was kept,
    the session's own unit (:func:`_unit`)."""
    return ("host", e["shipped_by"]) if e.get("shipped_by") else _unit(d)


def _owner_units(claim: dict, digests: list[dict]) -> set:
    """Units that belong to a claim's proposers: their agents, every host their sessions ran on,
    and every host whose syncd ingested one of their proposals (``proposer_hosts``: the MCP spool
    the proposal came from is on that host, whatever agent id or ``HOSTNAME`` it gave)."""
    owners = set(claim["observers"])
    return ({("agent", o) for o in owners} | {_unit(d) for d in digests if d.get("agent_id") in owners}
            | {("host", h) for h in claim.get("proposer_hosts") or []})


NEGATIONS = frozenset("not no never cannot cant can't don't dont doesn't doesnt isn't isnt won't wont without "
                      "fails failed failing broken unsupported disabled".split())
"""Words that turn a statement into its denial (and the failure words that deny "works")."""
OPPOSITES = (("enabled", "disabled"), ("true", "false"), ("pass", "fail"), ("passes", "fails"),
             ("passed", "failed"), ("works", "fails"), ("succeeds", "fails"), ("required", "optional"),
             ("always", "never"), ("before", "after"), ("allowed", "forbidden"), ("on", "off"))
"""Word pairs where one side of a claim pair holding one and the other side the other is a contradiction."""


def values(text: str) -> set:
    """The value tokens of ``text``: numbers and versions, `code` and quoted spans, paths,
    command-line flags."""
    import re

    out = set(re.findall(r"`([^`]+)`|\"([^\"]+)\"", text))
    vals = {a or b for a, b in out}
    vals.update(re.findall(r"(?<![\w.])\d+(?:[.:]\d+)*(?![\w.])", text))
    vals.update(re.findall(r"(?:\.{0,2}/)?[\w.-]+/[\w./-]+", text))
    vals.update(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", text))
    return {v.lower() for v in vals}


def difference(a: str, b: str) -> str | None:
    """Why claims ``a`` and ``b`` (already similar) contradict each other, or ``None`` when nothing
    in them denies the other: ``"negation"`` (one side negates, the other does not),
    ``"opposite words"`` (:data:`OPPOSITES`), ``"different values"`` (each side has a value token,
    :func:`values`, that the other lacks). Precision measured by ``bench/memory_eval.py``."""
    wa, wb = _words(a), _words(b)
    if bool(wa & NEGATIONS) != bool(wb & NEGATIONS):
        return "negation"
    for x, y in OPPOSITES:
        if (x in wa and y in wb and y not in wa and x not in wb) or (y in wa and x in wb and x not in wa and y not in wb):
            return "opposite words"
    va, vb = values(a), values(b)
    if va - vb and vb - va:
        return "different values"
    return None


def decide(folded: dict[str, dict], digests: list[dict], *, embed=None,
           vectors: dict | None = None) -> tuple[list[dict], dict[str, str]]:
    """Gate decisions. Returns ``(events, explain)``.

    ``events``: ``{"kind": "promoted"|"contested", "claim_id", "independent_sessions",
    "confidence", "reason", "against"?}`` to write as ClaimEvents; ``explain``:
    ``{claim_id: one-line reason for the current decision or what holds it back}``.
    ``embed(text) -> vector`` (unit length) enables the cosine rule; without it only word
    overlap is used. ``vectors``: ``{claim_id: vector}`` already computed by that embedder
    (:func:`run` passes them), so a claim is embedded at most once per pass.
    """
    by_session = {d["session_id"]: d for d in digests}
    known_agents = {d.get("agent_id") for d in digests}
    ids_cache: dict[str, set] = {}
    events: list[dict] = []
    explain: dict[str, str] = {}
    promoted = {cid: c for cid, c in folded.items() if c["status"] == "promoted"}
    vec_cache: dict[str, object] = dict(vectors or {})

    def vec(c):
        if embed is None:
            return None
        if c["claim_id"] not in vec_cache:
            vec_cache[c["claim_id"]] = embed(c["claim"])
        return vec_cache[c["claim_id"]]

    for cid in sorted(folded):
        c = folded[cid]
        if c["status"] != "candidate":
            explain[cid] = f"{c['status']}" + (f": {c.get('reason')}" if c.get("reason") else "")
            continue
        resolved, waiting = [], 0
        for e in c["evidence"]:
            d = by_session.get(e.get("session_id"))
            if d is None:
                waiting += 1
                continue
            ids = ids_cache.setdefault(d["session_id"], set(d.get("ids") or []))
            if e.get("message_id") in ids:
                resolved.append(e)
        if not resolved:
            explain[cid] = ("held: no evidence resolves to a sealed session of this fleet yet"
                            + (f" ({waiting} citation(s) in sessions not sealed yet)" if waiting else ""))
            continue
        if not any(o in known_agents for o in c["observers"]):
            explain[cid] = f"held: observer(s) {', '.join(c['observers'])} have no sealed session in this fleet"
            continue
        if all(e.get("ctxlake_answer") for e in resolved):
            explain[cid] = ("held: every cited event is an answer of ctxlake's own MCP tools (the fleet's memory "
                            "served back, not an observation); cite the tool call or output that showed it")
            continue
        related = [e for e in resolved if float(e.get("support") or 0) >= claimsmod.SUPPORT_MIN]
        supported = [e for e in related if not e.get("unsupported_values")]
        if not supported:
            if related:
                missing = sorted({v for e in related for v in e["unsupported_values"]})
                explain[cid] = ("held: no cited event holds the claim's values ("
                                + ", ".join(repr(v[:60]) for v in missing[:3]) + " found in none of them)")
                continue
            best = max(float(e.get("support") or 0) for e in resolved)
            explain[cid] = (f"held: no cited event relates to the claim (best support {best:.2f} < "
                            f"{claimsmod.SUPPORT_MIN}: share of the claim's terms found in the cited event)")
            continue
        fresh = [e for e in supported if cid not in set(by_session[e["session_id"]].get("injected_claims") or [])]
        independent = sorted({e["session_id"] for e in fresh})
        units = {_cite_unit(e, by_session[e["session_id"]]) for e in fresh}
        n = len(units)
        ctype = c["claim_type"]
        if ctype == "hypothesis":
            explain[cid] = f"held: hypotheses never auto-promote ({n} independent agent(s)/host(s))"
            continue
        if ctype == "preference" and not c.get("approved"):
            explain[cid] = f"held: preferences need a human approval (ctxlake claims --approve {cid})"
            continue
        need = claimsmod.THRESHOLDS.get(ctype, 1)
        if ctype != "preference" and n < need:
            shown = len({e["session_id"] for e in supported}) - len(independent)
            explain[cid] = (f"held: {n} independent agent(s)/host(s), {ctype} needs {need}"
                            + (f" ({shown} citing session(s) had been shown this claim)" if shown else ""))
            continue
        approved = ctype == "preference" and c.get("approved")  # a human promotes, not an agent
        if units and len(units) < 2 and units <= _owner_units(c, digests) and not approved:
            explain[cid] = ("held: the only evidence is the proposer's own (" + ", ".join(sorted(f"{k} {v}" for k, v in units))
                            + "); a session of another agent on another host must support it")
            continue
        rival = None
        subject = claimsmod.normalize(c.get("subject") or "")
        for pid, p in promoted.items():
            if not subject or claimsmod.normalize(p.get("subject") or "") != subject:
                continue
            sim_words = overlap(c["claim"], p["claim"])
            va, vb = vec(c), vec(p)
            cos = sum(x * y for x, y in zip(va, vb)) if va is not None and vb is not None else 0.0
            if sim_words >= OVERLAP_CONTRADICTION or cos >= COSINE_CONTRADICTION:
                why = difference(c["claim"], p["claim"])
                if why:
                    rival = (pid, f"resembles promoted claim {pid} on subject {c.get('subject')!r} "
                                  f"(word overlap {sim_words:.2f}, cosine {cos:.2f}) but differs ({why})")
                    break
        conf = claimsmod.confidence(n)
        if rival:
            pid, why = rival
            events.append({"kind": "contested", "claim_id": cid, "against": pid, "reason": why,
                           "independent_sessions": n, "confidence": conf})
            events.append({"kind": "contested", "claim_id": pid, "against": cid,
                           "reason": f"a new claim {cid} on the same subject differs: {c['claim'][:120]}"})
            explain[cid] = "contested: " + why
            explain[pid] = f"contested: a new claim {cid} on the same subject differs ({why.rsplit('(', 1)[-1]}"
            promoted.pop(pid, None)
            continue
        events.append({"kind": "promoted", "claim_id": cid, "independent_sessions": n, "confidence": conf,
                       "reason": f"{n} independent agent(s)/host(s) ≥ {need} for {ctype}"
                       if ctype != "preference" else "approved by a human",
                       "sessions": independent})
        explain[cid] = f"promoted: {n} independent agent(s)/host(s), confidence {conf}"
        promoted[cid] = dict(c, status="promoted")
    return events, explain


def run(store, fleet: str, digests: list[dict], *, mode: str = "agent", embedder=None,
        cached: dict[str, bytes] | None = None, log=lambda *a, **k: None) -> dict:
    """Fold, decide, write decision events and the folded claims; return the snapshot rows.

    ``embedder`` = ``(embedder_id, fn)`` or ``None``. ``cached``: ``{claim_id: blob}`` this
    embedder computed in an earlier pass (:func:`lib.memory.snapshot.previous_embeddings`); a claim id
    is its content's hash (:func:`lib.memory.claims.claim_id`), so a cached blob of the right size is
    reused and only new claims are embedded, in batches (:func:`lib.memory.embed.embed_many`).
    Returns ``{"claims": [row, ...], "explain": {...}, "promoted": n, "contested": n,
    "embedded": n, "embeddings_reused": n}``; rows have the snapshot's claim columns
    (``visible_to_agents`` = 1 for promoted/contested claims in mode ``agent`` only).
    """
    import json

    from lib.memory import embed as embedmod

    events = claimsmod.load_events(store, fleet)
    folded = claimsmod.fold(events)
    eid, fn = embedder if embedder else (None, None)
    vectors, reused = embed_claims(folded, eid, fn, cached or {})
    decisions, explain = decide(folded, digests, embed=fn, vectors=vectors)
    for ev in decisions:
        claimsmod.write_event(store, fleet, "_gate", ev)
        log("claim_" + ev["kind"], claim_id=ev["claim_id"], reason=ev.get("reason", "")[:200])
    if decisions:
        folded = claimsmod.fold(claimsmod.load_events(store, fleet))
    rows = []
    for cid, c in sorted(folded.items()):
        c["explain"] = explain.get(cid)
        store.put(keys.fold_key(fleet, cid), json.dumps(c, sort_keys=True, default=str).encode())
        visible = int(mode == "agent" and c["status"] in ("promoted", "contested"))
        row = {"claim_id": cid, "claim": c["claim"], "claim_type": c["claim_type"], "subject": c.get("subject"),
               "status": c["status"], "confidence": c.get("confidence") or 0.0,
               "observed_by": c.get("observed_by"), "observed_at": c.get("observed_at"),
               "independent_sessions": c.get("independent_sessions") or 0,
               "evidence": [{k: e.get(k) for k in ("session_id", "message_id", "excerpt_hash", "observed_at")}
                            for e in c["evidence"]],
               "visible_to_agents": visible, "reason": c.get("reason"), "updated_at": c["history"][-1].get("at")}
        if fn is not None:
            vec = vectors.get(cid)
            if vec is None:  # folded anew after the decisions: a claim that arrived meanwhile
                vec = vectors[cid] = fn(c["claim"])
            row["embedding"] = embedmod.to_blob(vec, len(vec))
            row["embedder"] = eid
        rows.append(row)
    return {"claims": rows, "explain": explain, "promoted": sum(1 for d in decisions if d["kind"] == "promoted"),
            "contested": sum(1 for d in decisions if d["kind"] == "contested"),
            "embedded": len(vectors) - reused, "embeddings_reused": reused}


def embed_claims(folded: dict[str, dict], eid: str | None, fn, cached: dict[str, bytes]) -> tuple[dict, int]:
    """``({claim_id: vector}, reused)`` for every claim in ``folded``: the ``cached`` blob when
    it has the embedder's size (:data:`lib.memory.embed.DIMS`), else computed now — all new claims in
    one :func:`lib.memory.embed.embed_many` call when ``eid`` is registered, one ``fn`` call each when
    it is not. ``({}, 0)`` without an embedder."""
    from lib.memory import embed as embedmod

    if fn is None:
        return {}, 0
    dim = embedmod.DIMS.get(eid)
    vectors: dict = {}
    for cid in folded:
        blob = cached.get(cid)
        if blob is not None and dim is not None:
            try:
                vectors[cid] = embedmod.from_blob(blob, dim)
            except ValueError:
                pass
    reused = len(vectors)
    todo = [cid for cid in sorted(folded) if cid not in vectors]
    texts = [folded[cid]["claim"] for cid in todo]
    fresh = embedmod.embed_many(eid, texts) if eid in embedmod.EMBEDDERS else [fn(t) for t in texts]
    vectors.update(zip(todo, fresh))
    return vectors, reused
