"""``ctxlake doctor`` (lib/doctor.py): the capability probe on file://, on SeaweedFS and behind a
proxy that drops conditional headers, its cleanup, its exit-code rule and its two renderings."""
from __future__ import annotations

import io
import json

import pytest

from lib import doctor
from lib.store import Unavailable, open_store
from lib.store.file import FileStore
from lib.store.memory import MemoryStore

NAMES = [name for name, _, _ in doctor.CHECKS]


def status(result) -> dict:
    return {row["name"]: row["ok"] for row in result["checks"]}


def test_doctor_on_file_store_reports_every_primitive_and_leaves_nothing(tmp_path):
    store = FileStore(f"file://{tmp_path}/lake")
    result = doctor.probe(store, "agent-1")
    assert status(result) == {name: True for name in NAMES}
    assert result["ok"] and result["can_write_read"] and doctor.exit_code(result) == 0
    assert result["backend"] == "file" and result["credential_source"] is None
    assert result["clock_skew_s"] == 0.0
    assert result["scratch_prefix"] == "_meta/probe/agent-1/"
    assert result["cleanup"]["ok"] and list(store.list("_meta/")) == []
    assert all("cost" not in row for row in result["checks"])
    assert "verdict: all primitives work" in doctor.render_table(result)


@pytest.mark.s3
def test_doctor_on_seaweedfs_identifies_it_and_finds_every_primitive(s3_url):
    store = open_store(s3_url)
    result = doctor.probe(store, "agent-1")
    assert status(result) == {name: True for name in NAMES}, result["checks"]
    assert result["backend"] == "SeaweedFS"
    assert result["describe"]["server"].startswith("SeaweedFS")
    assert result["credential_source"] == "env"
    assert abs(result["clock_skew_s"]) < 60  # same machine; S3 Date has 1 s resolution
    assert list(store.list("_meta/")) == []
    table = doctor.render_table(result)
    assert "SeaweedFS" in table and "env (boto3 default chain; name only)" in table


@pytest.mark.s3
def test_doctor_behind_a_header_stripping_proxy_reports_missing_conditional_writes_with_their_cost(stripping_proxy):
    _proxy, url = stripping_proxy
    result = doctor.run(url, "agent-1")
    assert status(result) == {"write_read": True, "create_only": False, "cas_update": True, "cas_stale": False,
                              "cas_repeat": False, "conditional_get": False, "list": True, "delete": True}
    rows = {row["name"]: row for row in result["checks"]}
    assert "If-None-Match" in rows["create_only"]["detail"]
    assert rows["create_only"]["cost"].startswith("no create-only: bootstrap races possible")
    assert "leases and roster are unsafe" in rows["cas_stale"]["cost"]
    assert "If-None-Match: * ignored" in rows["cas_repeat"]["detail"]
    assert doctor.exit_code(result) == 1  # leases would be granted twice there: refused, loudly
    table = doctor.render_table(result)
    assert table.count("FAILED") == 5 and "cost: no create-only" in table  # 4 primitives + Delta commits
    assert "Delta table commits" in table and "maint refuses to commit" in table
    assert "verdict: UNSAFE for the live plane" in table and "refuse leases, roster and the maintenance lease" in table
    assert list(open_store(url).list("_meta/")) == []


@pytest.mark.s3
def test_doctor_catches_a_gateway_that_drops_conditions_only_sometimes(seaweed, monkeypatch):
    """Every third conditional request loses its headers: one round may pass, the repeats do not."""
    from tests.support.s3server import StrippingProxy, use_server_env

    proxy = StrippingProxy(seaweed, every=3)
    use_server_env(monkeypatch, seaweed, AWS_ENDPOINT_URL_S3=proxy.endpoint)
    url = seaweed.url()
    try:
        result = doctor.run(url, "agent-1")
        assert list(open_store(url).list("_meta/")) == []
    finally:
        proxy.close()
        seaweed.wipe(url.split("/", 3)[3] + "/")
    rows = {row["name"]: row for row in result["checks"]}
    assert rows["cas_repeat"]["ok"] is False and "round " in rows["cas_repeat"]["detail"]
    assert doctor.exit_code(result) == 1 and doctor.unsafe_reason(result)


def test_doctor_exits_non_zero_only_when_the_store_cannot_be_written_and_read_back():
    store = MemoryStore("memory://down")
    store.fail_next = [Unavailable("store down")] * 20
    result = doctor.probe(store, "agent-1")
    assert status(result) == {name: (False if name == "write_read" else None) for name in NAMES}
    assert doctor.exit_code(result) == 4  # the store exit code (lib/failures.py)
    assert "UNUSABLE" in doctor.render_table(result)


def test_doctor_cleans_its_scratch_even_when_a_step_blows_up():
    store = MemoryStore("memory://flaky")
    real_put = store.put
    calls = []

    def put(key, data, mode="overwrite"):
        calls.append(key)
        if len(calls) == 3:  # the second create: an unexpected failure mid-probe
            raise RuntimeError("boom")
        return real_put(key, data, mode)

    store.put = put
    result = doctor.probe(store, "agent-1")
    assert status(result)["create_only"] is False and "RuntimeError: boom" in result["checks"][1]["detail"]
    assert result["cleanup"]["ok"] and list(store.list("")) == []


def test_doctor_sweeps_this_callers_leftovers_older_than_an_hour_and_nobody_elses():
    clock = [1_000_000.0]
    store = MemoryStore("memory://sweep", now=lambda: clock[0])
    store.put("_meta/probe/agent-1/crashed/plain.json", b"{}")
    store.put("_meta/probe/agent-2/running/plain.json", b"{}")
    clock[0] += 2 * doctor.STALE_PROBE_SECS
    store.put("_meta/probe/agent-1/recent/plain.json", b"{}")
    doctor.probe(store, "agent-1")
    assert [e.key for e in store.list("_meta/")] == ["_meta/probe/agent-1/recent/plain.json",
                                                      "_meta/probe/agent-2/running/plain.json"]


def test_the_caller_id_is_one_safe_key_segment(tmp_path):
    result = doctor.probe(FileStore(f"file://{tmp_path}/lake"), "../a b/c")
    assert result["scratch_prefix"] == "_meta/probe/..%2Fa%20b%2Fc/"


def test_main_prints_json_or_a_table_and_uses_the_configured_store(home):
    out = io.StringIO()
    assert doctor.main(["--json"], out) == 0
    result = json.loads(out.getvalue())
    assert result["store"].startswith("file://") and result["ok"]
    out = io.StringIO()
    assert doctor.main(["--caller", "ops"], out) == 0
    assert out.getvalue().startswith("ctxlake doctor — file://") and "_meta/probe/ops/" in out.getvalue()


def test_main_rejects_an_unknown_store_url_with_exit_2(home):
    out = io.StringIO()
    assert doctor.main(["--store", "ftp://nowhere"], out, out) == 2
    assert "unsupported store URL" in out.getvalue()


@pytest.mark.parametrize("endpoint,server,expected", [
    (None, None, "AWS"), ("https://s3.eu-west-1.amazonaws.com", "AmazonS3", "AWS"),
    ("https://acct.r2.cloudflarestorage.com", "cloudflare", "R2"),
    ("https://storage.googleapis.com", "UploadServer", "GCS"),
    ("http://127.0.0.1:8333", "SeaweedFS 8000GB 4.48", "SeaweedFS"),
    ("http://minio.internal:9000", "MinIO", "MinIO"),
    ("http://10.0.0.5:7480", "Ceph Object Gateway (squid)", "Ceph RGW"),
    ("http://10.0.0.5:9000", None, "unknown"),
])
def test_identify_names_the_backend_from_endpoint_and_server_header(endpoint, server, expected):
    assert doctor.identify(endpoint, server) == expected


@pytest.mark.redis
def test_doctor_probes_the_live_store_too(tmp_path, monkeypatch, redis_url):
    import io as _io
    import json as _json

    from lib import doctor

    monkeypatch.setenv("CTXLAKE_HOME", str(tmp_path))
    monkeypatch.delenv("CTXLAKE_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CTXLAKE_STORE", f"file://{tmp_path}/lake")
    monkeypatch.setenv("CTXLAKE_LIVE_STORE", redis_url)
    out = _io.StringIO()
    assert doctor.main(["--json"], out) == 0
    res = _json.loads(out.getvalue())
    assert res["backend"] == "file" and res["live_plane"]["backend"] == "redis"
    assert res["live_plane"]["ok"] and res["live_plane"]["can_write_read"]
    assert status(res["live_plane"]) == {name: True for name in NAMES}
    out = _io.StringIO()
    doctor.main([], out)
    assert "live plane (heartbeats, roster, leases): live_store redis://" in out.getvalue()
