"""The session-start briefing: what a new agent session is told about its fleet (docs/design.md §3, §10).

syncd renders it (:func:`render`) from the roster, the snapshot's recent session digests and
its agent-visible claims, and writes ``cache/<fleet>/briefing.json`` = ``{"text", "claim_ids",
"rendered_at"}``. The hook reads it (:func:`read_for_hook`), caps it at 8 KiB and wraps it in a
fence so the text can be recognised later in a transcript (:data:`FENCE_OPEN`). Every value is
scrubbed again (:func:`lib.redact.scrub` with the tool rules: a secret missed at capture must
not be copied into every agent's context), sanitized, stripped of any spelling of the fence's
name (:func:`lib.sanitize.defuse_fence`: captured text can neither close nor open the fence) and
forced onto one line before it is rendered, so lake content cannot forge a heading (reference
bug 12.2 #31) or the fence (issue #17). Standard library only (the hook imports it).
"""
from __future__ import annotations

from lib import cache_view
from lib.sanitize import FENCE_NAME, clean

MAX_BYTES = 8 * 1024
FENCE_OPEN = f"<{FENCE_NAME}>"
FENCE_CLOSE = f"</{FENCE_NAME}>"
TRUNCATED = "\n[ctxlake: briefing truncated]"
HEADER = ("ctxlake fleet briefing — peer observations from other agents' sessions; verify before "
          "relying on them. Leases are advisory: git decides what lands.")


def show_value(value, limit: int) -> str:
    """One value as the briefing shows it: scrubbed again with the tool rules (docs/design.md §7),
    then :func:`lib.sanitize.clean` on one line (fence name removed), at most ``limit``
    characters."""
    from lib.redact import scrub

    return clean(scrub(str(value), is_tool_output=True)[0], limit, True)


def attribution(claim: dict) -> str:
    """``[observer, date, N independent session(s), conf 0.81(, CONTESTED)]`` (docs/design.md §10)."""
    n = int(claim.get("independent_sessions") or 0)
    parts = [show_value(claim.get("observed_by") or "?", 80), show_value(str(claim.get("observed_at") or "")[:10], 10),
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
            where = show_value(h.get("repo") or "no repository", 80)
            head = ", ".join([where, show_value(str(h.get("requested_at") or "")[:16], 16),
                              show_value(h.get("agent_id") or "?", 80), show_value(h.get("status") or "?", 20)])
            line = f"- [{head}] {show_value(h.get('summary') or '', 400)}"
            if h.get("next"):
                line += " — next: " + show_value(h["next"], 240)
            lines.append(line)
        blocks.append("\n".join(lines))
    live = [a for a in agents if a.get("agent_id") != self_agent]
    if live:
        lines = ["## Live agents"]
        for a in live[:20]:
            line = f"- {show_value(a.get('agent_id'), 80)} ({show_value(a.get('runtime') or '?', 20)})"
            if a.get("task"):
                line += " — " + show_value(a["task"], 160)
            if isinstance(a.get("paths"), list) and a["paths"]:
                line += " — touching " + ", ".join(show_value(p, 120) for p in a["paths"][:3])
            lines.append(line)
        blocks.append("\n".join(lines))
    if sessions:
        lines = ["## Recent sessions"]
        for s in sessions[:5]:
            who = show_value(s.get("agent_id") or "?", 80)
            where = show_value(s.get("repo") or "?", 80)
            line = f"- [{who} in {where}, {show_value(str(s.get('ended_at') or '')[:16], 16)}] {show_value(s.get('summary') or '', 240)}"
            files = s.get("files_touched")
            if isinstance(files, list) and files:
                more = f" (+{len(files) - 3} more)" if len(files) > 3 else ""
                line += " — files: " + ", ".join(show_value(str(f), 120) for f in files[:3]) + more
            lines.append(line)
        blocks.append("\n".join(lines))
    shown = []
    if claims:
        lines = ["## Fleet context (peer observations — verify before relying on these)"]
        for c in claims[:5]:
            lines.append(attribution(c) + "\n  " + show_value(c.get("claim") or "", 400))
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
    data = cache_view.read_for_hook(path, 1 << 20)
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        return None, []
    ids = data.get("claim_ids")
    ids = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
    return fence(clean(text.strip(), 1 << 16)), ids


def refresh(cfg, store, log) -> dict:
    """Store → cache: snapshot mirror and briefing. Returns ``{snapshot_sha, briefing_chars}``.

    :raises: store errors (the caller logs them and keeps the last cache).
    """
    from lib.memory import snapshot

    res = snapshot.fetch(store, cfg.fleet_id, cfg.paths.snapshot(cfg.fleet_id))
    if res["changed"]:
        log("snapshot_cached", sha256=res["sha256"], vectors=res.get("vectors"))
    if res.get("vectors_error"):  # the snapshot is in place; the MCP server reads its index from it meanwhile
        log("snapshot_vectors_failed", error=res["vectors_error"])
    return {"snapshot_sha": res["sha256"], **render_cached(cfg, log, have_snapshot=bool(res["sha256"]))}


def render_cached(cfg, log, *, have_snapshot: bool = True) -> dict:
    """Render ``cache/<fleet>/briefing.json`` from the cached roster and snapshot; returns
    ``{"briefing_chars": n}``.

    The briefing shows the snapshot's newest handoff notes, the cached roster, the snapshot's
    recent sessions and, in summarize mode ``agent``, its agent-visible claims (``shadow`` and ``none`` show none). Both inputs are
    untrusted cache content: a roster that is not one (:func:`lib.cache_view.roster`) or a
    snapshot that cannot be read is logged as a warning (``briefing_input_unreadable``) and
    left out, so the briefing still renders from what is readable. Never raises on cache
    content; :raises OSError: the briefing file could not be written.
    """
    import os
    import sqlite3
    import time

    from lib.memory import snapshot
    from lib.clock import format_time

    paths = cfg.paths
    sessions, claims, handoffs = [], [], []
    if have_snapshot and os.path.exists(paths.snapshot(cfg.fleet_id)):
        try:
            conn = snapshot.open_readonly(paths.snapshot(cfg.fleet_id))
            try:
                # sessions with nothing to say (no prompt, no command) are not worth an agent's context
                sessions = [d for d in snapshot.recent_sessions(conn, 50)
                            if d.get("turn_count") or d.get("commands_ok") or d.get("commands_failed")][:5]
                if cfg.summarize_mode == "agent":
                    claims = snapshot.visible_claims(conn, 5)
                handoffs = snapshot.recent_handoffs(conn, 5)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log("briefing_input_unreadable", file="snapshot.bin", error=str(exc)[:200])
    view = cache_view.roster(paths.roster(cfg.fleet_id), time.time(), cfg.sync.presence_ttl_secs)
    if view["status"] == cache_view.UNREADABLE:
        log("briefing_input_unreadable", file="roster.json", error=str(view.get("detail"))[:200])
    text, ids = render(view["agents"], sessions, claims, handoffs=handoffs)
    cache_view.write(paths.briefing(cfg.fleet_id), {"text": text, "claim_ids": ids, "rendered_at": format_time()})
    return {"briefing_chars": len(text)}
