"""syncd's view for operators: ``/healthz``, ``/readyz`` and Prometheus ``/metrics`` (docs/design.md §13).

Where it sits: syncd's loop feeds a :class:`SyncdMetrics` after every pass
(:meth:`SyncdMetrics.observe_pass`) and through its log callable
(:meth:`SyncdMetrics.wrap_log`: every event is a sign of life, every ``*_failed``/``*_error``
event becomes the "last error"). The spool backlog, the store's per-prefix request counters
(:func:`lib.store.counters`) and the cache age are read when Prometheus scrapes, so a scrape
shows the state now rather than at the end of the last pass. :class:`MetricsServer` serves the
three paths from a daemon thread.

What it refuses to do: touch the store (a scrape or a probe must never wait on the network),
import ``prometheus_client`` or open a socket at import time, or bind anything in ``--once``
mode (syncd only builds it in loop mode with ``[sync] metrics_port`` set).

Probes:

- ``/healthz`` (liveness) is 200 while the loop shows a sign of life within
  ``[sync] liveness_stall_secs``; a store outage does *not* fail it (a restart would not help,
  and the spool keeps everything).
- ``/readyz`` (readiness) is 200 once the cache has been refreshed from the store at least once
  since start, so agents on the node get a briefing.

Both answer a small JSON body with the last pass time, cache age and last error.
"""
from __future__ import annotations

import json
import threading
import time

LEASE_OUTCOMES = ("granted", "renewed", "refused", "released", "error")
"""Outcome labels of ``ctxlake_lease_outcomes_total`` that are always exported (at 0 until a
pass reports one); a pass summary may carry others under ``lease_outcomes``."""


class SyncdMetrics:
    """Everything ``/metrics`` and the probes report for one syncd process.

    :param paths: the :class:`lib.paths.Paths` whose spool and cache are measured.
    :param fleet_id: fleet whose cache files (``leases.json``) are read.
    :param stall_secs: liveness threshold in seconds (see module docstring).
    :param clock: epoch-seconds clock (local: these are ages on this host, not lease expiry).

    Times in the exported metrics are seconds; counters only go up for the life of the process.
    """

    def __init__(self, paths, fleet_id: str, *, stall_secs: float = 600, clock=time.time):
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.paths, self.fleet_id, self.stall_secs, self.clock = paths, fleet_id, stall_secs, clock
        self.started_at = clock()
        self.last_activity = self.started_at
        self.last_pass_at: float | None = None
        self.cache_refreshed_at: float | None = None
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.envelopes = Counter("ctxlake_envelopes_shipped", "Envelopes shipped from the spool to the lake.", registry=reg)
        self.segments = Counter("ctxlake_segments_shipped", "Parquet segments written to the lake.", registry=reg)
        self.sealed = Counter("ctxlake_sessions_sealed", "Sessions sealed (_SEALED written, spool files removed).", registry=reg)
        self.dropped = Counter("ctxlake_spool_lines_dropped", "Spool lines that could not be events (unparseable or "
                               "invalid), each kept under quarantine/ with its reason.", registry=reg)
        self.hook_lost = Gauge("ctxlake_hook_events_lost", "Hook failures recorded in the lost-events ledger because "
                               "not even hook-errors.log could be written (a full disk), since it was created.", registry=reg)
        self.passes = Counter("ctxlake_sync_passes", "syncd passes by result (ok, error).", ["result"], registry=reg)
        self.leases = Counter("ctxlake_lease_outcomes", "Lease requests applied by this syncd, by outcome.",
                              ["outcome"], registry=reg)
        for result in ("ok", "error"):
            self.passes.labels(result=result)
        for outcome in LEASE_OUTCOMES:
            self.leases.labels(outcome=outcome)
        reg.register(_ScrapeTimeCollector(self))

    # -- feeding ---------------------------------------------------------------------------
    def beat(self) -> None:
        """Record a sign of life of the loop (liveness)."""
        self.last_activity = self.clock()

    def wrap_log(self, log):
        """Return a ``log(event, **fields)`` that calls ``log`` and also records liveness, and
        records ``*_failed`` / ``*_error`` events as the last error (event name and ``error``
        field, at most 300 characters)."""

        def wrapped(event: str, **fields):
            self.beat()
            if event.endswith(("_failed", "_error")):
                self.note_error(f"{event}: {fields.get('error') or fields.get('detail') or ''}".rstrip(": "))
            return log(event, **fields)

        return wrapped

    def note_error(self, message: str) -> None:
        """Remember ``message`` as the last error, stamped now."""
        with self._lock:
            self.last_error, self.last_error_at = message[:300], self.clock()

    def observe_pass(self, summary: dict) -> None:
        """Add one syncd pass summary (as returned by :func:`lib.syncpass.run_pass`).

        Reads ``shipped``, ``segments``, ``sealed``, ``dropped_lines``, ``hook_lost``, ``errors``,
        ``cache_refreshed`` (bool), ``cache_error`` and ``lease_outcomes``
        (``{outcome: count}``, optional: the live plane reports what it applied).
        """
        self.envelopes.inc(int(summary.get("shipped") or 0))
        self.segments.inc(int(summary.get("segments") or 0))
        self.sealed.inc(int(summary.get("sealed") or 0))
        self.dropped.inc(int(summary.get("dropped_lines") or 0))
        if isinstance(summary.get("hook_lost"), int):
            self.hook_lost.set(summary["hook_lost"])
        self.passes.labels(result="error" if summary.get("errors") else "ok").inc()
        for outcome, n in (summary.get("lease_outcomes") or {}).items():
            self.leases.labels(outcome=str(outcome)).inc(int(n))
        now = self.clock()
        self.last_pass_at = self.last_activity = now
        if summary.get("cache_refreshed"):
            self.cache_refreshed_at = now
        if summary.get("cache_error"):
            self.note_error(f"cache_refresh_failed: {summary['cache_error']}")
        elif summary.get("errors") and summary.get("error_detail"):
            first = summary["error_detail"][0]
            self.note_error(f"ship_failed: {first[0]}: {first[1]}" if isinstance(first, (list, tuple)) else str(first))

    # -- reading ---------------------------------------------------------------------------
    def status(self) -> dict:
        """The probes' JSON body: ``alive``, ``ready``, ``last_pass_age_s``, ``cache_age_s``,
        ``last_error``, ``last_error_age_s`` (ages in seconds, ``None`` when never)."""
        now = self.clock()

        def age(t):
            return None if t is None else round(now - t, 3)

        return {"alive": now - self.last_activity <= self.stall_secs, "ready": self.cache_refreshed_at is not None,
                "last_pass_age_s": age(self.last_pass_at), "cache_age_s": age(self.cache_refreshed_at),
                "last_error": self.last_error, "last_error_age_s": age(self.last_error_at)}

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric (what ``/metrics`` answers)."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _ScrapeTimeCollector:
    """Metrics computed when scraped: spool backlog, store counters, ages, last error."""

    def __init__(self, m: SyncdMetrics):
        self.m = m

    def describe(self):
        return []

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily

        from lib import spool
        from lib.store import counters

        m = self.m
        now = m.clock()
        b = spool.backlog(m.paths.spool_dir, m.paths.state_dir)
        yield GaugeMetricFamily("ctxlake_spool_backlog_bytes", "Spool bytes not yet confirmed by the store.", value=b["bytes"])
        yield GaugeMetricFamily("ctxlake_spool_backlog_files", "Spool files holding unshipped lines.", value=b["files"])
        yield GaugeMetricFamily("ctxlake_spool_disk_free_bytes",
                                "Free bytes on the spool's filesystem (below 64 MiB hooks start losing events).",
                                value=spool.disk_free(m.paths.spool_dir)["free_bytes"])
        yield GaugeMetricFamily(
            "ctxlake_spool_oldest_unshipped_age_seconds",
            "Seconds since the least recently written spool file with unshipped lines was last written "
            "(a lower bound on the age of the oldest unshipped line; 0 when nothing waits).",
            value=max(0.0, now - b["oldest_mtime"]) if b["oldest_mtime"] is not None else 0.0)
        store = CounterMetricFamily("ctxlake_store_requests",
                                    "Store requests by key prefix and outcome since start (precondition_failed = "
                                    "412 lost race, conflict = 409, retry = one backoff).", labels=["key_prefix", "outcome"])
        for (prefix, outcome), n in sorted(counters().items()):
            store.add_metric([prefix, outcome], n)
        yield store
        cache_age = GaugeMetricFamily("ctxlake_cache_age_seconds",
                                      "Seconds since the cache (snapshot, briefing) was last refreshed from the store; "
                                      "absent until the first refresh.")
        if m.cache_refreshed_at is not None:
            cache_age.add_metric([], now - m.cache_refreshed_at)
        yield cache_age
        yield GaugeMetricFamily("ctxlake_ready", "1 once the cache has been refreshed since start.",
                                value=1 if m.cache_refreshed_at is not None else 0)
        last_pass = GaugeMetricFamily("ctxlake_last_pass_timestamp_seconds", "When the last syncd pass ended (epoch s).")
        if m.last_pass_at is not None:
            last_pass.add_metric([], m.last_pass_at)
        yield last_pass
        from lib.memory import snapshot

        figures = snapshot.cached_lake_figures(m.paths.snapshot(m.fleet_id))
        for name, help_text in (("bytes", "Bytes of the data files the Delta table's current version references."),
                                ("files", "Data files the Delta table's current version references."),
                                ("unreferenced_bytes", "Bytes of table files no version needs any more (freed by vacuum "
                                                       "once [lake] vacuum_hours old)."),
                                ("vacuum_due_bytes", "Bytes the next maintenance pass's vacuum deletes."),
                                ("version", "The Delta table's version.")):
            g = GaugeMetricFamily(f"ctxlake_lake_{name}", help_text + " As of the last maintenance pass; absent "
                                  "until syncd has mirrored a snapshot pointer that carries it.")
            if name in figures:
                g.add_metric([], figures[name])
            yield g
        yield GaugeMetricFamily("ctxlake_leases_cached", "Unexpired leases in this node's cached lease view (leases.json, store clock).",
                                value=_cached_lease_count(m.paths.leases(m.fleet_id), now))
        with m._lock:
            err, err_at = m.last_error, m.last_error_at
        err_ts = GaugeMetricFamily("ctxlake_last_error_timestamp_seconds", "When syncd last logged an error (epoch s).")
        info = InfoMetricFamily("ctxlake_last_error", "The last error syncd logged (event and message, truncated).")
        if err_at is not None:
            err_ts.add_metric([], err_at)
            info.add_metric([], {"error": err or ""})
        yield err_ts
        yield info


def _cached_lease_count(path: str, now: float) -> int:
    """Unexpired leases in the cached view at ``path`` at local time ``now`` (:func:`lib.live.leases.view_leases`)."""
    from lib import cache_view
    from lib.live import leases

    data = cache_view.read_raw(path)

    return len(leases.view_leases(data, now)) if isinstance(data, dict) else 0


class MetricsServer:
    """HTTP server for ``/healthz``, ``/readyz`` and ``/metrics`` on a daemon thread.

    Build it with :func:`serve`; ``port`` is the bound port (useful when 0 was asked for);
    :meth:`stop` shuts it down and closes the socket (syncd calls it on SIGTERM).
    """

    def __init__(self, metrics: SyncdMetrics, addr: str, port: int):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        m = metrics

        class Handler(BaseHTTPRequestHandler):
            server_version = "ctxlake-syncd"

            def do_GET(self):  # noqa: N802 - http.server's naming
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    from prometheus_client import CONTENT_TYPE_LATEST

                    self._send(200, m.render(), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/readyz"):
                    st = m.status()
                    ok = st["alive"] if path == "/healthz" else st["ready"]
                    self._send(200 if ok else 503, json.dumps(st, sort_keys=True).encode() + b"\n", "application/json")
                else:
                    self._send(404, b"not found: try /healthz, /readyz or /metrics\n", "text/plain")

            def _send(self, code: int, body: bytes, ctype: str):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # probes every few seconds: not worth a log line each
                pass

        family = _family(addr)

        class Server(ThreadingHTTPServer):
            address_family = family
            daemon_threads = True

        self.httpd = Server((addr, port), Handler)
        self.addr, self.port = addr, self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="ctxlake-metrics", daemon=True)

    def stop(self) -> None:
        """Stop serving, close the listening socket, wait for the thread."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def _family(addr: str):
    import socket

    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def serve(metrics: SyncdMetrics, addr: str, port: int) -> MetricsServer:
    """Bind ``addr:port`` and start serving in a daemon thread.

    :raises OSError: the address cannot be bound (port in use, unknown address).
    """
    server = MetricsServer(metrics, addr, port)
    server.thread.start()
    return server
