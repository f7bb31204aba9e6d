"""Every store key ctxlake reads or writes, built in one place (docs/design.md §4).

Keys are relative to the store URL's prefix. Every variable part goes through
:func:`lib.paths.safe_segment`, so a fleet, agent or session id can never add a folder or walk a
tree. ``tests/test_owners.py`` fails when a key prefix below is spelled anywhere else.

::

    sessions/fleet=<f>/dt=<d>/runtime=<rt>/agent=<a>/session=<sid>/seg-NNNNNN.parquet, _SEALED, digest.json
    quarantine/fleet=<f>/agent=<a>/dt=<d>/<ulid>.json       syncd: lines that failed the envelope check
    quarantine/maint/fleet=<f>/<hash>.json                   maint: objects it could not read
    compacted/<f>/                                           the fleet's Delta table (_delta_log/ inside)
    compacted/<f>/_ctxlake/{ledger.json,passes/<id>.json}    maint's bookkeeping beside the table
    compacted/fleet=<f>/                                     the layout before the Delta table
    claims/events/fleet=<f>/dt=<d>/agent=<a>/<ulid>.json     claim events (proposals, gate decisions)
    claims/fleet/<f>/<claim_id>.json                         the gate's fold of one claim
    handoffs/fleet=<f>/dt=<d>/<record_id>.json               handoff notes
    snapshot/<f>/<sha256>.sqlite, snapshot/<f>/current.json  snapshot blobs and the pointer
    live/<f>/agents/<a>.json, live/<f>/roster.json           heartbeats and their fan-in
    live/<f>/leases/<resource>.json                          leases (the maintenance lease too)
    _meta/fleets/<f>.json                                    ``ctxlake init``'s fleet marker
    _meta/probe/<caller>/                                    ``ctxlake doctor``'s scratch keys
    _meta/clock                                              the S3 backend's clock probe

Standard library only, no I/O, and nothing the hook's answer path must not import (no ``re``, ``json``).
"""
from __future__ import annotations

from lib.paths import safe_segment as _s

LIVE_PREFIX = "live/"
"""Every live-plane key starts here (``live_store`` routes exactly these keys)."""
PROBE_ROOT = "_meta/probe/"
"""``ctxlake doctor``'s scratch keys, one folder per caller under it."""
CLOCK_KEY = "_meta/clock"
"""The object the S3 backend HEADs to read the store's clock."""


# -- the bronze lake: one folder per session ------------------------------------------------------

def session_prefix(fleet: str, dt: str, runtime: str, agent: str, session: str) -> str:
    """``sessions/fleet=<f>/dt=<d>/runtime=<rt>/agent=<a>/session=<sid>/``."""
    return f"sessions/fleet={_s(fleet)}/dt={_s(dt)}/runtime={_s(runtime)}/agent={_s(agent)}/session={_s(session)}/"


def parse_session_prefix(key: str) -> dict:
    """``{fleet, dt, runtime, agent, session, prefix}`` from any key under a session folder (the
    inverse of :func:`session_prefix`, values decoded)."""
    from urllib.parse import unquote  # not at the top: it imports re, and the hook imports this module

    parts = key.split("/")
    out = {}
    for p in parts[1:6]:
        name, _, value = p.partition("=")
        out[name] = unquote(value)
    out["prefix"] = "/".join(parts[:6]) + "/"
    return out


def segment_key(prefix: str, n: int) -> str:
    """``<session prefix>seg-<NNNNNN>.parquet`` (``n`` from 0, six digits)."""
    return f"{prefix}seg-{n:06d}.parquet"


def is_segment(key: str) -> bool:
    """Whether ``key`` names a bronze segment (its last part starts ``seg-``)."""
    return key.rsplit("/", 1)[-1].startswith("seg-")


def sealed_key(prefix: str) -> str:
    """``<session prefix>_SEALED``: the session ended and every segment is shipped."""
    return prefix + "_SEALED"


def digest_key(prefix: str) -> str:
    """``<session prefix>digest.json``: the session's digest (docs/design.md §10)."""
    return prefix + "digest.json"


def fleet_sessions_prefix(fleet: str, dt: str | None = None) -> str:
    """``sessions/fleet=<f>/`` or ``sessions/fleet=<f>/dt=<d>/``."""
    return f"sessions/fleet={_s(fleet)}/" + (f"dt={_s(dt)}/" if dt else "")


def quarantine_key(fleet: str, agent: str, dt: str, ulid: str) -> str:
    """``quarantine/fleet=<f>/agent=<a>/dt=<d>/<ulid>.json``: spool lines syncd refused."""
    return f"quarantine/fleet={_s(fleet)}/agent={_s(agent)}/dt={_s(dt)}/{_s(ulid)}.json"


def maint_quarantine_key(fleet: str, digest: str) -> str:
    """``quarantine/maint/fleet=<f>/<digest>.json``: one unreadable object maint met."""
    return f"quarantine/maint/fleet={_s(fleet)}/{_s(digest)}.json"


# -- the compacted lake --------------------------------------------------------------------------

def table_segment(fleet: str) -> str:
    """The fleet's folder name under ``compacted/``: :func:`lib.paths.safe_segment` with ``~`` in
    place of ``%`` (``a b`` → ``a~20b``). delta-rs percent-decodes a table URI when it resolves
    the table's files, so a ``%`` in the folder name would send it to another folder than the one
    the store holds (docs/design.md §4). ``~`` is never left unencoded by ``safe_segment``, so the
    mapping stays one-to-one, and an id in ``[A-Za-z0-9._-]`` is its own folder name."""
    return _s(fleet).replace("%", "~")


def table_root(fleet: str) -> str:
    """``compacted/<f>/`` (``<f>`` from :func:`table_segment`): the root of the fleet's Delta
    table (``_delta_log/`` inside). No ``name=value`` folder above the table: engines that infer
    Hive partitions from the whole path (Polars) would otherwise invent a ``fleet`` column the
    table does not have."""
    return f"compacted/{table_segment(fleet)}/"


def legacy_root(fleet: str) -> str:
    """``compacted/fleet=<f>/``: where the layout before the Delta table lived."""
    return f"compacted/fleet={_s(fleet)}/"


def table_state_prefix(fleet: str) -> str:
    """``compacted/<f>/_ctxlake/``: maint's own bookkeeping next to the table (a leading
    underscore: Delta, Spark, Trino and DuckDB skip it when they list the table)."""
    return table_root(fleet) + "_ctxlake/"


def manifest_key(fleet: str, pass_id: str) -> str:
    """``compacted/<f>/_ctxlake/passes/<pass_id>.json``: the bronze segments one pass
    merges, written create-only before its commit (the commit names it in ``commitInfo``)."""
    return f"{table_state_prefix(fleet)}passes/{_s(pass_id)}.json"


def ledger_key(fleet: str) -> str:
    """``compacted/<f>/_ctxlake/ledger.json``: which bronze segments the table holds."""
    return table_state_prefix(fleet) + "ledger.json"


def delta_log_prefix(fleet: str) -> str:
    """``compacted/<f>/_delta_log/``: the Delta table's commit log."""
    return table_root(fleet) + "_delta_log/"


# -- claims --------------------------------------------------------------------------------------

def claim_events_prefix(fleet: str) -> str:
    """``claims/events/fleet=<f>/``: every claim event of the fleet."""
    return f"claims/events/fleet={_s(fleet)}/"


def claim_event_key(fleet: str, dt: str, agent: str, ulid: str) -> str:
    """``claims/events/fleet=<f>/dt=<d>/agent=<a>/<ulid>.json``."""
    return f"{claim_events_prefix(fleet)}dt={_s(dt)}/agent={_s(agent)}/{_s(ulid)}.json"


def claim_folds_prefix(fleet: str) -> str:
    """``claims/fleet/<f>/``: the gate's folded claims of the fleet."""
    return f"claims/fleet/{_s(fleet)}/"


def fold_key(fleet: str, cid: str) -> str:
    """``claims/fleet/<f>/<claim_id>.json``: the gate's folded state of one claim."""
    return f"{claim_folds_prefix(fleet)}{_s(cid)}.json"


# -- handoff notes -------------------------------------------------------------------------------

def handoffs_prefix(fleet: str, dt: str | None = None) -> str:
    """``handoffs/fleet=<f>/`` or ``handoffs/fleet=<f>/dt=<YYYY-MM-DD>/``."""
    return f"handoffs/fleet={_s(fleet)}/" + (f"dt={_s(dt)}/" if dt else "")


def handoff_key(fleet: str, dt: str, record_id: str) -> str:
    """``handoffs/fleet=<f>/dt=<YYYY-MM-DD>/<record_id>.json``: one handoff note."""
    return f"{handoffs_prefix(fleet, dt)}{_s(record_id)}.json"


# -- snapshots -----------------------------------------------------------------------------------

def snapshot_blob_key(fleet: str, sha: str) -> str:
    """``snapshot/<f>/<sha256>.sqlite`` (content-addressed, written create-only)."""
    return f"snapshot/{_s(fleet)}/{_s(sha)}.sqlite"


def snapshot_pointer_key(fleet: str) -> str:
    """``snapshot/<f>/current.json``: the pointer maint swaps by CAS."""
    return f"snapshot/{_s(fleet)}/current.json"


# -- the live plane ------------------------------------------------------------------------------

def agents_prefix(fleet_id: str) -> str:
    """``live/<fleet>/agents/``."""
    return f"{LIVE_PREFIX}{_s(fleet_id)}/agents/"


def heartbeat_key(fleet_id: str, agent_id: str) -> str:
    """``live/<fleet>/agents/<agent_id>.json``."""
    return f"{agents_prefix(fleet_id)}{_s(agent_id)}.json"


def roster_key(fleet_id: str) -> str:
    """``live/<fleet>/roster.json``."""
    return f"{LIVE_PREFIX}{_s(fleet_id)}/roster.json"


def leases_prefix(fleet_id: str) -> str:
    """``live/<fleet>/leases/``."""
    return f"{LIVE_PREFIX}{_s(fleet_id)}/leases/"


def lease_key(fleet_id: str, resource: str) -> str:
    """``live/<fleet>/leases/<resource>.json`` (``resource``: a resource key or ``_maintenance``)."""
    return f"{leases_prefix(fleet_id)}{_s(resource)}.json"


# -- _meta ---------------------------------------------------------------------------------------

def fleet_marker_key(fleet: str) -> str:
    """``_meta/fleets/<f>.json``: written create-only by ``ctxlake init``."""
    return f"_meta/fleets/{_s(fleet)}.json"


def probe_prefix(caller: str) -> str:
    """``_meta/probe/<caller>/``: ``ctxlake doctor``'s scratch keys for one caller."""
    return f"{PROBE_ROOT}{_s(caller)}/"
