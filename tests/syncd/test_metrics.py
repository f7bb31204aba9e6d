"""syncd's operator view (issue #9): /healthz, /readyz, /metrics from lib.metrics."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from lib import config, metrics
from lib.store import count, open_store
from tests.syncd.conftest import spool_session


class FakeClock:
    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def _sample(text: str, name: str, **labels) -> float | None:
    """Value of one sample in a Prometheus text exposition, or None when absent."""
    from prometheus_client.parser import text_string_to_metric_families

    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None


def _cfg(home):
    return config.load()


def test_metrics_report_backlog_then_shipping_and_cache_age(home):
    from lib import syncpass
    cfg = _cfg(home)
    spool_session(cfg.paths, "s-metrics", 12)
    clock = FakeClock()
    m = metrics.SyncdMetrics(cfg.paths, cfg.fleet_id, clock=clock)
    before = m.render().decode()
    assert _sample(before, "ctxlake_spool_backlog_bytes") > 0
    assert _sample(before, "ctxlake_spool_backlog_files") == 1
    assert _sample(before, "ctxlake_ready") == 0
    assert _sample(before, "ctxlake_cache_age_seconds") is None
    assert _sample(before, "ctxlake_lease_outcomes_total", outcome="granted") == 0

    store = open_store("memory://metrics-backlog")
    summary = syncpass.run_pass(cfg, store, lambda *a, **k: None)
    m.observe_pass(dict(summary, lease_outcomes={"granted": 2, "refused": 1}))
    clock.t += 7
    after = m.render().decode()
    assert _sample(after, "ctxlake_envelopes_shipped_total") == 12
    assert _sample(after, "ctxlake_segments_shipped_total") == 1
    assert _sample(after, "ctxlake_spool_backlog_bytes") == 0
    assert _sample(after, "ctxlake_spool_oldest_unshipped_age_seconds") == 0
    assert _sample(after, "ctxlake_cache_age_seconds") == 7
    assert _sample(after, "ctxlake_ready") == 1
    assert _sample(after, "ctxlake_lease_outcomes_total", outcome="granted") == 2
    assert _sample(after, "ctxlake_lease_outcomes_total", outcome="refused") == 1
    assert _sample(after, "ctxlake_sync_passes_total", result="ok") == 1


def test_412_and_409_counts_are_exported_by_key_prefix(home):
    cfg = _cfg(home)
    m = metrics.SyncdMetrics(cfg.paths, cfg.fleet_id)
    count("live/metrics-fleet", "precondition_failed", 3)
    count("live/metrics-fleet", "conflict")
    text = m.render().decode()
    assert _sample(text, "ctxlake_store_requests_total", key_prefix="live/metrics-fleet", outcome="precondition_failed") >= 3
    assert _sample(text, "ctxlake_store_requests_total", key_prefix="live/metrics-fleet", outcome="conflict") >= 1


def test_oldest_unshipped_age_follows_the_spool_file(home):
    import os

    cfg = _cfg(home)
    path = spool_session(cfg.paths, "s-old", 3)
    os.utime(path, (900_000.0, 900_000.0))
    m = metrics.SyncdMetrics(cfg.paths, cfg.fleet_id, clock=FakeClock(1_000_000.0))
    assert _sample(m.render().decode(), "ctxlake_spool_oldest_unshipped_age_seconds") == 100_000


def test_failed_events_become_the_last_error_and_count_as_life(home):
    cfg = _cfg(home)
    clock = FakeClock()
    m = metrics.SyncdMetrics(cfg.paths, cfg.fleet_id, clock=clock, stall_secs=60)
    seen = []
    log = m.wrap_log(lambda event, **f: seen.append(event))
    clock.t += 100
    assert m.status()["alive"] is False
    log("ship_failed", session="claude_code/x", error="Unavailable: store down")
    st = m.status()
    assert seen == ["ship_failed"] and st["alive"] is True
    assert st["last_error"] == "ship_failed: Unavailable: store down" and st["last_error_age_s"] == 0
    log("segment_shipped", key="k")
    assert m.status()["last_error"] == "ship_failed: Unavailable: store down"
    text = m.render().decode()
    assert _sample(text, "ctxlake_last_error_info", error="ship_failed: Unavailable: store down") == 1
    assert _sample(text, "ctxlake_last_error_timestamp_seconds") == clock.t


def test_a_cache_refresh_failure_is_the_last_error_and_keeps_readiness_off(home):
    cfg = _cfg(home)
    m = metrics.SyncdMetrics(cfg.paths, cfg.fleet_id)
    m.observe_pass({"shipped": 0, "errors": 1, "cache_refreshed": False, "cache_error": "Unavailable: down"})
    st = m.status()
    assert st["ready"] is False and st["last_error"] == "cache_refresh_failed: Unavailable: down"
    assert _sample(m.render().decode(), "ctxlake_sync_passes_total", result="error") == 1


def _get(url: str) -> tuple[int, bytes, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("Content-Type", "")


def test_server_answers_probes_and_metrics_then_stops(home):
    cfg = _cfg(home)
    m = metrics.SyncdMetrics(cfg.paths, cfg.fleet_id)
    server = metrics.serve(m, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{server.port}"
    try:
        code, body, _ = _get(base + "/healthz")
        assert code == 200 and json.loads(body)["alive"] is True
        code, body, _ = _get(base + "/readyz")
        assert code == 503 and json.loads(body)["ready"] is False
        m.observe_pass({"shipped": 0, "errors": 0, "cache_refreshed": True})
        assert _get(base + "/readyz")[0] == 200
        code, body, ctype = _get(base + "/metrics")
        assert code == 200 and ctype.startswith("text/plain") and b"ctxlake_spool_backlog_bytes" in body
        assert _get(base + "/nope")[0] == 404
    finally:
        server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(base + "/healthz", timeout=5)


def test_metrics_port_is_off_by_default_and_read_from_the_sync_section(home, tmp_path, monkeypatch):
    assert config.load().sync.metrics_port == 0
    assert config.load().sync.metrics_addr == "127.0.0.1"
    f = tmp_path / "c.toml"
    f.write_text('[sync]\nmetrics_port = 9464\nmetrics_addr = "0.0.0.0"\n')
    monkeypatch.setenv("CTXLAKE_CONFIG", str(f))
    cfg = config.load()
    assert (cfg.sync.metrics_port, cfg.sync.metrics_addr) == (9464, "0.0.0.0")
    f.write_text("[sync]\nmetrics_port = 70000\n")
    with pytest.raises(config.ConfigError, match="metrics_port"):
        config.load()
