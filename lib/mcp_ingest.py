"""syncd's consumers of the MCP spool (docs/design.md §10, docs/mcp.md): ``proposed`` records
become claim events, ``handoff`` records become handoff notes, and the spool files every consumer
(:data:`lib.paths.MCP_CONSUMERS`) has read to their end are reclaimed. Each consumer's offsets
advance only after what it read was written to the store. The record format is
:mod:`lib.mcp_records`'; lease requests are the live plane's (:mod:`lib.live.sync`)."""
from __future__ import annotations


def ingest_proposals(cfg, store, log) -> dict:
    """MCP ``proposed`` records → ClaimEvents in the store (:func:`lib.memory.claims.ingest`); the
    consumer's offsets advance only after the events were written."""
    from lib import mcp_records, spool
    from lib.memory import claims

    records, commit = spool.consume_records(cfg.paths.mcp_spool(cfg.fleet_id), cfg.paths.mcp_consumer_state(cfg.fleet_id, "claims"))
    proposals = mcp_records.select(records, (mcp_records.PROPOSED,))
    tally = cfg.paths.claims_tally(cfg.fleet_id)
    out = claims.ingest(store, proposals, cfg.fleet_id, log=log, tally_path=tally) if proposals else {"proposed": 0, "rejected": 0}
    commit()
    return out


def ingest_handoffs(cfg, store, log) -> dict:
    """MCP ``handoff`` records → notes in the lake (:func:`lib.handoffs.ingest`, create-only);
    the consumer's offsets advance only after the notes were written."""
    from lib import handoffs, spool

    records, commit = spool.consume_records(cfg.paths.mcp_spool(cfg.fleet_id),
                                            cfg.paths.mcp_consumer_state(cfg.fleet_id, "handoffs"))
    out = handoffs.ingest(store, records, cfg.fleet_id, log=log)
    commit()
    return out


def reclaim_mcp_spool(cfg, log) -> dict:
    """Delete the MCP spool files every consumer (:data:`lib.paths.MCP_CONSUMERS`) has read to
    their end (:func:`lib.spool.reclaim_consumed`); returns ``{"files", "bytes"}`` reclaimed."""
    from lib import spool
    from lib.paths import MCP_CONSUMERS

    out = spool.reclaim_consumed(cfg.paths.mcp_spool(cfg.fleet_id),
                                 [cfg.paths.mcp_consumer_state(cfg.fleet_id, name) for name in MCP_CONSUMERS],
                                 cfg.paths.mcp_spool_lock(cfg.fleet_id))
    if out["files"]:
        log("mcp_spool_reclaimed", files=out["files"], bytes=out["bytes"])
    return out
