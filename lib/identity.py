"""Event identity: one id per captured event, the same by every capture path (docs/architecture.md
"Event identity").

An event's identity is the pair ``(session_id, event_id)``. ``event_id`` is derived from the ids
the runtime itself gives the event — the tool-use id of a tool call, the prompt id of a prompt,
the API message id of an assistant message, the record uuid of a transcript record — hashed
together with the session id and the event's kind, so:

- a hook and an import of the same session give the same event the same id, and the lake keeps
  one copy (:func:`pick` chooses it);
- a record that a resumed or forked session copied into its own transcript (same uuid, same
  tool-use id, another ``sessionId``) gets another id in each session, and belongs to both.

Copies of one identity are merged by :func:`pick`: a ``session_start`` keeps its earliest copy
(a session spread over several files starts once, at its first record); every other event keeps
the copy observed last (``observed_at``: the newest runtime record that contributed to it; at the
same moment the larger copy), so a transcript re-imported after it grew gives the latest
figures. Ties are broken by the envelope's own bytes, so the choice never depends on the order
copies arrived in.

Standard library only (the hook derives ids).
"""
from __future__ import annotations

import hashlib
import json

ID_VERSION = "1"
"""Bumped only if the derivation below changes (it never may for data already in a lake)."""
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def event_id(session_id: str, kind: str, *source_ids: str) -> str:
    """The event id of one event: 26 Crockford base32 characters (130 bits of sha256).

    ``kind`` names what the runtime's ids identify (``prompt``, ``tool``, ``tool_pre``,
    ``assistant``, ``start``, ``end``, …, see docs/architecture.md "Event identity");
    ``source_ids`` are the runtime's own ids for it, in a fixed order. Same inputs, same id, on
    every host and by every path. :raises ValueError: empty ``session_id`` or no ``source_ids``
    for a kind other than ``start``/``end``.
    """
    if not session_id:
        raise ValueError("an event id needs a session id")
    if not source_ids and kind not in ("start", "end"):
        raise ValueError(f"an event id of kind {kind!r} needs the runtime's own id for it")
    raw = "\0".join((ID_VERSION, session_id, kind) + tuple(str(s) for s in source_ids)).encode("utf-8", "surrogatepass")
    value = int.from_bytes(hashlib.sha256(raw).digest()[:17], "big") >> 6  # 130 bits
    out = []
    for _ in range(26):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def key(env: dict) -> tuple[str, str]:
    """The identity of an envelope: ``(session_id, event_id)``."""
    return env["session_id"], env["event_id"]


def _canonical(env: dict) -> str:
    return json.dumps(env, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def pick(a: dict, b: dict) -> dict:
    """The copy of one identity the lake keeps (see the module docstring): a ``session_start``'s
    earliest ``emitted_at``, else the latest ``observed_at`` (falling back to ``emitted_at``),
    then the larger envelope (at the same moment, the copy that carries more: a result, a
    title, the final usage); ties by the sha256 of the envelopes' canonical JSON."""
    ca, cb = _canonical(a), _canonical(b)
    ha = hashlib.sha256(ca.encode("utf-8", "surrogatepass")).hexdigest()
    hb = hashlib.sha256(cb.encode("utf-8", "surrogatepass")).hexdigest()
    if a.get("event_type") == "session_start" and b.get("event_type") == "session_start":
        return a if (str(a.get("emitted_at") or ""), ha) <= (str(b.get("emitted_at") or ""), hb) else b
    ka = (str(a.get("observed_at") or a.get("emitted_at") or ""), len(ca), ha)
    kb = (str(b.get("observed_at") or b.get("emitted_at") or ""), len(cb), hb)
    return a if ka >= kb else b


def order(env: dict) -> tuple[str, str]:
    """Sort key of envelopes in a session: ``(emitted_at, event_id)``."""
    return str(env.get("emitted_at") or ""), env["event_id"]


def dedupe(envs) -> list[dict]:
    """One envelope per identity (:func:`pick`), sorted by :func:`order`. ``envs``: any
    iterable of envelope dicts, any order, copies in any number."""
    best: dict = {}
    for e in envs:
        k = key(e)
        cur = best.get(k)
        best[k] = e if cur is None else pick(cur, e)
    return sorted(best.values(), key=order)
