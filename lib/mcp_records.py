"""The MCP spool records: what the MCP server's write tools append to ``spool/mcp/<fleet>.ndjson``
and syncd's consumers apply (docs/design.md §11, docs/mcp.md).

One JSON object per line (ASCII, compact)::

    common          {kind, record_id (ULID), fleet_id, agent_id, session_id?, requested_at, request_key}
    lease_request   + paths[], resources[{path, repo, rel}], reason, ttl_secs, cwd
    lease_release   + paths[] and resources[], or all: true
    handoff         + summary, status, next?, cwd, repo?, branch?
    proposed        + claim_id, claim, claim_type, subject, scope: "agent", observed_by,
                      observed_at, evidence[{session_id, message_id}]

The producer is :mod:`lib.mcp_tools` (:func:`build`, :func:`encode`); the consumers —
:mod:`lib.live.sync` (leases), :mod:`lib.memory.claims` (proposals), :mod:`lib.handoffs` — pick their
kinds with :func:`select`, and :mod:`lib.cache_view` reads an agent's pending requests back with
:func:`decode`. A record is untrusted input to every consumer: each checks the fields it uses.
Standard library only (the MCP server imports it).
"""
from __future__ import annotations

import json

LEASE_REQUEST, LEASE_RELEASE, HANDOFF, PROPOSED = "lease_request", "lease_release", "handoff", "proposed"
LEASE_KINDS = (LEASE_REQUEST, LEASE_RELEASE)
"""The kinds the live plane applies (``fleet_claim`` / ``fleet_release``)."""
KINDS = (LEASE_REQUEST, LEASE_RELEASE, HANDOFF, PROPOSED)
"""Every kind a write tool spools."""


def build(kind: str, *, record_id: str, fleet_id: str, agent_id: str, session_id: str | None, requested_at: str,
          fields: dict, request_key: str) -> dict:
    """One record: the common fields, then the kind's ``fields``, then ``request_key`` (the
    request's identity for retry recognition). ``session_id`` is omitted when unknown.

    :raises ValueError: ``kind`` is not one of :data:`KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown MCP spool record kind {kind!r}")
    rec = {"kind": kind, "record_id": record_id, "fleet_id": fleet_id, "agent_id": agent_id}
    if session_id:
        rec["session_id"] = session_id
    rec["requested_at"] = requested_at
    rec.update(fields)
    rec["request_key"] = request_key
    return rec


def encode(rec: dict) -> str:
    """The spool line of ``rec``: compact ASCII JSON and a newline (never an embedded one)."""
    return json.dumps(rec, ensure_ascii=True, separators=(",", ":")) + "\n"


def decode(line: bytes):
    """The record on one spool line, or ``None`` when it is not UTF-8 JSON (NaN and Infinity
    refused) or not an object. Never raises."""
    def refuse(name):
        raise ValueError(f"{name} is not valid JSON")

    try:
        rec = json.loads(line.decode("utf-8"), parse_constant=refuse)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return rec if isinstance(rec, dict) else None


def select(records, kinds) -> list[dict]:
    """The records of ``records`` whose ``kind`` is one of ``kinds`` (objects only), in order."""
    return [r for r in records if isinstance(r, dict) and r.get("kind") in kinds]
