#!/usr/bin/env python3
"""ctxlake fleet operator: a kopf operator for Kubernetes (docs/design.md §1, §13).

Usage::

    python fleet_operator.py [--namespace NS ...| --all-namespaces] [--liveness URL]
    kopf run --standalone -n NS fleet_operator.py          # the same handlers, kopf's own CLI

Two jobs, both by compare-and-swap on the store (:mod:`lib.live.fleet`):

- When a pod labelled ``ctxlake.io/agent-id`` ends (phase Succeeded/Failed, or deleted), the
  agent is retired at once: its leases are released, its heartbeat deleted and its roster entry
  removed, so teammates see it gone within a syncd poll instead of after the 5-minute TTL. The
  fleet is the pod's ``ctxlake.io/fleet-id`` label, else the configured ``fleet_id``.
- Every ``CTXLAKE_OPERATOR_STATUS_SECS`` seconds (default 30) each ``CtxlakeFleet`` resource
  gets ``status`` = live agents, leases held (per agent), maintenance holder and the age of the
  last published snapshot.

The store and default fleet come from ``ctxlake.toml`` (``CTXLAKE_CONFIG``) and the environment,
like every role; credentials come from boto3's normal chain (Secret env or workload identity).
Least privilege: CRD and namespace scanning is off (no cluster-wide list/watch of either) and no
Kubernetes Events are posted, so the RBAC is pods get/list/watch plus ctxlakefleets (and their
status) get/list/watch/patch. kopf logs as JSON lines on stderr.
"""
from __future__ import annotations

import collections
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kopf  # noqa: E402 - after the path tweak, like every role script

AGENT_LABEL = "ctxlake.io/agent-id"
FLEET_LABEL = "ctxlake.io/fleet-id"
FINALIZER = "ctxlake.io/fleet-operator"
STATUS_INTERVAL_SECS = float(os.environ.get("CTXLAKE_OPERATOR_STATUS_SECS") or 30)
"""Seconds between status refreshes of each CtxlakeFleet (read once, when the module loads,
because kopf fixes a timer's interval at registration)."""
ENDED_PHASES = ("Succeeded", "Failed")
RETIRED_MEMORY = 10000
"""How many retired pod UIDs are remembered so later events of the same pod do no store work."""


def pod_ended(event_type: str | None, pod) -> bool:
    """True when this watch event says the pod is finished: deleted, or phase Succeeded/Failed.

    A pod that is only terminating (``deletionTimestamp`` set) still runs its agent and its
    node's syncd may still renew for it, so it is not retired until it is gone.
    """
    if event_type == "DELETED":
        return True
    return (pod.get("status") or {}).get("phase") in ENDED_PHASES


def agent_of(pod, default_fleet: str) -> tuple[str, str] | None:
    """``(fleet_id, agent_id)`` from the pod's labels, or ``None`` without an agent-id label.

    An empty ``ctxlake.io/agent-id`` label means "the pod's name is the agent id" (pods of a
    Deployment or StatefulSet cannot carry one label value each; they set ``CTXLAKE_AGENT_ID``
    from ``metadata.name`` instead).
    """
    md = pod.get("metadata") or {}
    labels = md.get("labels") or {}
    if AGENT_LABEL not in labels:
        return None
    agent = labels[AGENT_LABEL] or md.get("name")
    if not agent:
        return None
    return labels.get(FLEET_LABEL) or default_fleet, agent


def status_for(summary: dict, fleet_id: str, observed_at: str) -> dict:
    """The ``CtxlakeFleet.status`` object for a :func:`lib.live.fleet.fleet_status` summary
    (camelCase; lists, not maps, because a merge patch replaces a list but only adds to a map;
    at most 100 agents listed)."""
    by_agent = [{"agentId": a, "leases": n} for a, n in summary["leases_by_agent"].items()][:100]
    return {"fleetId": fleet_id, "liveAgents": summary["live_agents"], "agents": summary["agents"][:100],
            "leasesHeld": summary["leases_held"], "leasesByAgent": by_agent,
            "maintenanceHolder": summary["maintenance_holder"], "lastSnapshotAt": summary["snapshot_built_at"],
            "lastSnapshotAgeSeconds": summary["snapshot_age_s"], "observedAt": observed_at, "error": None}


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, logger, **_):
    """Load config, open the store, and narrow kopf to what the chart's RBAC grants."""
    from lib import config
    from lib.store import open_store

    settings.scanning.disabled = True       # no list/watch of CRDs and namespaces
    settings.posting.enabled = False        # no Kubernetes Events (no events RBAC)
    settings.persistence.finalizer = FINALIZER
    cfg = config.load()
    memo.cfg = cfg
    memo.store = open_store(cfg.store, log=_store_log(logger), live=cfg.live_store)
    memo.retired = collections.OrderedDict()
    logger.info(f"fleet operator ready: store {memo.store.url}, default fleet {cfg.fleet_id}")


def _store_log(logger):
    def log(event, **fields):
        logger.warning(event, extra=fields) if event.endswith(("_lost", "_retry", "_error")) else logger.info(event, extra=fields)

    return log


def retire_for_pod(event_type: str | None, pod, memo, logger) -> dict | None:
    """Retire the agent of a pod that ended (see :func:`pod_ended`), once per pod UID.

    Returns :func:`lib.live.fleet.retire_agent`'s result, or ``None`` when there was nothing to do
    (pod still running, no agent label, already retired). Store outages are retried with
    backoff (:func:`lib.store.retrying`); past that the lease TTL is the backstop.
    """
    from lib.live import fleet
    from lib.store import retrying

    if not pod_ended(event_type, pod):
        return None
    who = agent_of(pod, memo.cfg.fleet_id)
    md = pod.get("metadata") or {}
    uid = md.get("uid") or f"{md.get('namespace')}/{md.get('name')}"
    if who is None or uid in memo.retired:
        return None
    fleet_id, agent_id = who
    result = retrying(lambda: fleet.retire_agent(memo.store, fleet_id, agent_id, presence_ttl=memo.cfg.sync.presence_ttl_secs),
                      key=fleet.roster_key(fleet_id))
    memo.retired[uid] = True
    while len(memo.retired) > RETIRED_MEMORY:
        memo.retired.popitem(last=False)
    logger.info(f"agent {agent_id} of fleet {fleet_id} retired: {len(result['leases_released'])} lease(s) released, "
                f"heartbeat {'deleted' if result['heartbeat_deleted'] else 'absent'}, "
                f"roster entry {'removed' if result['roster_removed'] else 'absent'}")
    return result


@kopf.on.event("pods", labels={AGENT_LABEL: kopf.PRESENT})
def agent_pod_event(type, body, memo, logger, **_):  # noqa: A002 - kopf passes `type`
    """kopf handler: :func:`retire_for_pod`. Returns nothing, because kopf would store a return
    value in the pod's status and the operator may not patch pods."""
    retire_for_pod(type, body, memo, logger)


@kopf.timer("ctxlake.io", "v1", "ctxlakefleets", interval=STATUS_INTERVAL_SECS)
def fleet_status(spec, name, memo, patch, logger, **_):
    """Refresh ``status`` of a CtxlakeFleet from the store; a store outage is reported in
    ``status.error`` (the last good numbers stay) and retried on the next tick."""
    from lib.live import fleet
    from lib.clock import format_time

    fleet_id = (spec or {}).get("fleetId") or memo.cfg.fleet_id
    try:
        summary = fleet.fleet_status(memo.store, fleet_id, presence_ttl=memo.cfg.sync.presence_ttl_secs)
    except Exception as exc:  # store outage: say so on the resource, keep the operator running
        patch.status["error"] = f"{type(exc).__name__}: {exc}"[:300]
        patch.status["observedAt"] = format_time()
        logger.warning(f"fleet {fleet_id}: status refresh failed: {exc}")
        return None
    status = status_for(summary, fleet_id, format_time())
    for key, value in status.items():
        patch.status[key] = value
    return None


def main(argv=None) -> int:
    """``fleet_operator.py [--namespace NS ...|--all-namespaces] [--liveness URL] [--verbose]``:
    run the operator standalone (one replica; no peering) until SIGTERM."""
    import argparse

    p = argparse.ArgumentParser(prog="fleet_operator.py", description="ctxlake fleet operator (kopf).")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--namespace", "-n", action="append", default=[], help="watch this namespace (repeatable)")
    scope.add_argument("--all-namespaces", "-A", action="store_true", help="watch every namespace")
    p.add_argument("--liveness", help="serve kopf's liveness probe, e.g. http://0.0.0.0:8080/healthz")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat.JSON)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    kopf.run(standalone=True, clusterwide=args.all_namespaces,
             namespaces=args.namespace or [os.environ.get("POD_NAMESPACE") or "default"],
             liveness_endpoint=args.liveness)
    return 0


if __name__ == "__main__":
    sys.exit(main())
