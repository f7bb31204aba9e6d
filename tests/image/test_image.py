"""The built image, run for real on Podman (issue #26): every role through the image's own
entrypoint, as the non-root user the Dockerfile declares, against the test SeaweedFS on
127.0.0.1 (the container shares the host's network)."""
from __future__ import annotations

import json
import os

from tests.image import engine
from tests.image.conftest import UID, owned_dir, replay, run, sessions, write_payloads

HOME = "/var/lib/ctxlake"


def _store_env(seaweed, prefix: str) -> dict:
    return {**seaweed.env(), "CTXLAKE_STORE": seaweed.url(prefix), "CTXLAKE_FLEET_ID": "img",
            "CTXLAKE_AGENT_ID": "node-1"}


def test_the_image_declares_a_numeric_non_root_user_and_tini(image):
    cfg = json.loads(engine.podman("image", "inspect", "--format", "{{json .Config}}", image).stdout)
    assert cfg["User"] == f"{UID}:{UID}"
    assert cfg["Entrypoint"][:2] == ["/usr/bin/tini", "--"] and cfg["Cmd"] == ["syncd"]


def test_ctxlake_help_and_an_unknown_role(image):
    r = run(image, "ctxlake", "--help")
    assert r.returncode == 0, r.stderr
    assert "usage: ctxlake" in r.stdout and "doctor" in r.stdout
    r = run(image, "bogus")
    assert r.returncode == 64 and "usage: <syncd|maint|operator|mcp|hook|ctxlake>" in r.stderr


def test_hook_syncd_and_maint_in_the_image_against_seaweedfs(image, seaweed, host_dir):
    home = owned_dir(os.path.join(host_dir, "home"))
    prefix = "img-" + os.path.basename(os.path.dirname(host_dir))[-12:]
    env = _store_env(seaweed, prefix)
    agent = os.path.join(host_dir, "agent")
    vols = {home: HOME, agent: "/agent:ro"}
    payloads = sessions()
    try:
        # the hook: every captured payload on stdin, one JSON answer on stdout, spooled as uid 10001
        r = run(image, "-c", replay("/agent/" + write_payloads(agent, "two-sessions", payloads)),
                entrypoint="/bin/sh", env=env, volumes=vols)
        assert r.returncode == 0, r.stderr
        answers = [json.loads(line) for line in r.stdout.splitlines()]
        assert len(answers) == len(payloads) and all(isinstance(a, dict) for a in answers)
        spooled = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(home, "spool", "claude_code")) for f in fs]
        assert len([f for f in spooled if f.endswith(".ndjson")]) == 2  # one spool file per session
        assert {os.stat(f).st_uid for f in spooled} == {UID} and {os.stat(f).st_mode & 0o777 for f in spooled} == {0o600}

        r = run(image, "syncd", "--once", "--json", env=env, volumes=vols)
        assert r.returncode == 0, r.stderr[-2000:]
        sync = json.loads(r.stdout)
        assert sync["errors"] == 0 and sync["shipped"] == len(payloads) and sync["sealed"] == 2
        keys = [o["Key"] for o in seaweed.client().list_objects_v2(Bucket=seaweed.bucket, Prefix=prefix + "/sessions/")
                .get("Contents", [])]
        assert len([k for k in keys if k.endswith(".parquet")]) == 2, keys

        r = run(image, "maint", "--once", "--json", env=env, volumes=vols)
        assert r.returncode == 0, r.stderr[-2000:]
        maint = json.loads(r.stdout)
        assert maint["ran"] and maint["rows_out"] == len(payloads) and maint["snapshot"]["published"]

        r = run(image, "ctxlake", "query", "--json", "select count(*) n, count(distinct event_id) d from events",
                env=env, volumes=vols)
        assert r.returncode == 0, r.stderr[-2000:]
        assert json.loads(r.stdout) == [{"n": len(payloads), "d": len(payloads)}]

        # the next pass brings the snapshot's briefing into the cache; a new session gets it
        r = run(image, "syncd", "--once", "--json", env=env, volumes=vols)
        assert r.returncode == 0 and json.loads(r.stdout)["snapshot_sha"] == maint["snapshot"]["sha256"]
        start = dict(payloads[0], session_id="00000000-0000-4000-8000-0000000000ff")
        r = run(image, "-c", f"/app/docker-entrypoint.sh hook claude_code < /agent/{write_payloads(agent, 'new', [start])}",
                entrypoint="/bin/sh", env=env, volumes=vols)
        context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "<ctxlake-briefing>" in context and "Fix the app so main() returns 2" in context
    finally:
        seaweed.wipe(prefix + "/")
