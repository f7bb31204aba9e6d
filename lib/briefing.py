"""The session-start briefing: what a new agent session is told about its fleet (DESIGN.md §3, §10).

syncd renders it (:func:`render`) from the roster, the snapshot's recent session digests and
its agent-visible claims, and writes ``cache/<fleet>/briefing.json`` = ``{"text", "claim_ids",
"rendered_at"}``. The hook reads it (:func:`read_for_hook`), caps it at 8 KiB and wraps it in a
fence so the text can be recognised later in a transcript (:data:`FENCE_OPEN`). Every value is
sanitized and forced onto one line before it is rendered, so lake content cannot forge a
heading (reference bug 12.2 #31). Standard library only (the hook imports it).
"""
from __future__ import annotations

from lib import jsonfast
from lib.sanitize import clean

MAX_BYTES = 8 * 1024
FENCE_OPEN = "<ctxlake-briefing>"
FENCE_CLOSE = "</ctxlake-briefing>"
TRUNCATED = "\n[ctxlake: briefing truncated]"
HEADER = ("ctxlake fleet briefing — peer observations from other agents' sessions; verify before "
          "relying on them. Leases are advisory: git decides what lands.")


def attribution(claim: dict) -> str:
    """``[observer, date, N independent session(s), conf 0.81(, CONTESTED)]`` (DESIGN.md §10)."""
    n = int(claim.get("independent_sessions") or 0)
    parts = [clean(str(claim.get("observed_by") or "?"), 80, True), clean(str(claim.get("observed_at") or "")[:10], 10, True),
             f"{n} independent session{'s' if n != 1 else ''}", f"conf {float(claim.get('confidence') or 0):.2f}"]
    if claim.get("status") == "contested":
        parts.append("CONTESTED")
    return "[" + ", ".join(parts) + "]"


def render(agents: list[dict], sessions: list[dict], claims: list[dict], *, self_agent: str | None = None,
           handoffs: list[dict] = ()) -> tuple[str, list[str]]:
    """Render the briefing text and the ids of the claims it shows.

    :param agents: roster entries ``{agent_id, runtime, task?, repo?, paths?}``; ``self_agent``
        is left out (an agent needs no briefing about itself).
    :param sessions: digests ``{repo?, ended_at, summary, agent_id, files_touched?}``, newest first;
        ≤ 5 shown, each naming its agent, repository and up to 3 files.
    :param claims: agent-visible claims ``{claim_id, claim, observed_by, observed_at,
        independent_sessions, confidence, status}``, best first; ≤ 5 shown.
    :param handoffs: notes left by ``fleet_handoff`` ``{repo?, agent_id, status, summary, next?,
        requested_at}`` (:mod:`lib.handoffs`), newest first; ≤ 5 shown, each with its repository.
    :returns: ``(text, claim_ids)``; text is ``""`` when there is nothing to say.
    """
    blocks = []
    if handoffs:
        lines = ["## Handoffs (left for whoever picks the work up)"]
        for h in handoffs[:5]:
            where = clean(str(h.get("repo") or "no repository"), 80, True)
            head = ", ".join([where, clean(str(h.get("requested_at") or "")[:16], 16, True),
                              clean(str(h.get("agent_id") or "?"), 80, True), clean(str(h.get("status") or "?"), 20, True)])
            line = f"- [{head}] {clean(str(h.get('summary') or ''), 400, True)}"
            if h.get("next"):
                line += " — next: " + clean(str(h["next"]), 240, True)
            lines.append(line)
        blocks.append("\n".join(lines))
    live = [a for a in agents if a.get("agent_id") != self_agent]
    if live:
        lines = ["## Live agents"]
        for a in live[:20]:
            line = f"- {clean(str(a.get('agent_id')), 80, True)} ({clean(str(a.get('runtime') or '?'), 20, True)})"
            if a.get("task"):
                line += " — " + clean(str(a["task"]), 160, True)
            if isinstance(a.get("paths"), list) and a["paths"]:
                line += " — touching " + ", ".join(clean(str(p), 120, True) for p in a["paths"][:3])
            lines.append(line)
        blocks.append("\n".join(lines))
    if sessions:
        lines = ["## Recent sessions"]
        for s in sessions[:5]:
            who = clean(str(s.get("agent_id") or "?"), 80, True)
            where = clean(str(s.get("repo") or "?"), 80, True)
            line = f"- [{who} in {where}, {clean(str(s.get('ended_at') or '')[:16], 16, True)}] {clean(str(s.get('summary') or ''), 240, True)}"
            files = s.get("files_touched")
            if isinstance(files, list) and files:
                more = f" (+{len(files) - 3} more)" if len(files) > 3 else ""
                line += " — files: " + ", ".join(clean(str(f), 120, True) for f in files[:3]) + more
            lines.append(line)
        blocks.append("\n".join(lines))
    shown = []
    if claims:
        lines = ["## Fleet context (peer observations — verify before relying on these)"]
        for c in claims[:5]:
            lines.append(attribution(c) + "\n  " + clean(str(c.get("claim") or ""), 400, True))
            shown.append(str(c.get("claim_id")))
        blocks.append("\n\n".join(lines))
    if not blocks:
        return "", []
    return HEADER + "\n\n" + "\n\n".join(blocks), shown


def fence(text: str) -> str:
    """Wrap ``text`` in the briefing fence, capped at 8 KiB (UTF-8) on a character boundary."""
    budget = MAX_BYTES - len(FENCE_OPEN) - len(FENCE_CLOSE) - 2
    raw = text.encode("utf-8")
    if len(raw) > budget:
        cut = budget - len(TRUNCATED.encode())
        text = raw[:cut].decode("utf-8", "ignore") + TRUNCATED
    return f"{FENCE_OPEN}\n{text}\n{FENCE_CLOSE}"


def read_for_hook(path: str) -> tuple[str | None, list[str]]:
    """Read ``briefing.json`` for injection: ``(fenced_text or None, claim_ids)``.

    Hand-checks the two fields it uses (``text`` a non-empty string, ``claim_ids`` a list of
    strings) instead of jsonschema (invariant 9; the hook is standard library only). A missing,
    unreadable or malformed file yields ``(None, [])`` — the hook fails open.
    """
    data = jsonfast.read_object(path, 1 << 20)
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        return None, []
    ids = data.get("claim_ids")
    ids = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
    return fence(clean(text.strip(), 1 << 16)), ids
