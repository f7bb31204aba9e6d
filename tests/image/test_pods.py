"""The Helm chart's pods, run with ``podman kube play`` on the host network (issue #26): the
DaemonSet's pod (syncd, with its root init container), the CronJob's job pod (maint), the
operator Deployment's pod and agent pods on the node's shared ``hostPath``, all with the chart's
own command, args, env, envFrom, volumes, securityContext and probes (tests/image/kube.py says
what a controller and the kubelet would add, and what Podman 4.3 cannot take).

The store is the test SeaweedFS on 127.0.0.1, its credentials in the Secret the chart names
(``store.credentials.existingSecret``); agent pods replay the hook payloads a real Claude Code
sent (tests/fixtures/captured), through the image's hook, into the shared spool."""
from __future__ import annotations

import base64
import json
import os
import socket
import tempfile
import time
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.image import engine, kube
from tests.image.conftest import UID, owned_dir, replay, run, sessions, write_payloads

SECRET = "ctxlake-s3"
FLEET = "pods"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(what: str, check, deadline_s: float = 120, every: float = 0.25):
    """Poll ``check()`` until it returns something truthy (a bounded wait, not a timing assertion)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"never happened within {deadline_s:.0f} s: {what}")


def metrics(port: int) -> dict[str, float]:
    """syncd's ``/metrics`` as ``{sample name: value}`` (unlabelled samples; labelled ones summed);
    empty when it does not answer."""
    try:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value
    return out


class Deployment:
    """One rendering of the chart for one test: its own store prefix, node directory, ports and
    pod names; the Secret it names created in Podman; ``close()`` removes pods, secret and data."""

    def __init__(self, seaweed, base: str, tag: str, **values):
        self.seaweed, self.tag = seaweed, tag
        self.prefix = f"pods-{tag}-{uuid.uuid4().hex[:8]}"
        self.node_dir = os.path.join(base, "node")
        os.makedirs(self.node_dir)
        self.agent_dir = os.path.join(base, "agent")
        os.makedirs(self.agent_dir)
        self.metrics_port, self.liveness_port = _free_port(), _free_port()
        repo, _, image_tag = engine.IMAGE.rpartition(":")
        self.values = {
            "image": {"repository": repo, "tag": image_tag},
            "fleetId": FLEET,
            "store": {"url": seaweed.url(self.prefix), "s3": {"endpoint": seaweed.endpoint, "region": seaweed.region},
                      "credentials": {"existingSecret": SECRET}},
            "hostPath": {"path": self.node_dir},
            "syncd": {"pollSeconds": 1, "metrics": {"port": self.metrics_port}},
            "operator": {"enabled": True, "livenessPort": self.liveness_port, "statusIntervalSeconds": 1},
            "agentExample": {"enabled": True, "sleepSeconds": 1},
        }
        for key, value in values.items():  # one level deep: hostPath={"fixPermissions": False} keeps the path
            self.values[key] = {**self.values.get(key, {}), **value} if isinstance(value, dict) else value
        self.objs = kube.render(self.values)
        self.config = kube.find(self.objs, "ConfigMap")
        self.played: list[dict] = []
        # Podman 4.3 reads an envFrom secret as a JSON object of base64 values (`podman secret
        # create`); a Secret in the played YAML is stored in a form its own envFrom cannot read.
        engine.podman("secret", "rm", SECRET, check=False)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as fh:
            json.dump({k: base64.b64encode(v.encode()).decode() for k, v in
                       {"AWS_ACCESS_KEY_ID": seaweed.access_key, "AWS_SECRET_ACCESS_KEY": seaweed.secret_key}.items()},
                      fh)
            fh.flush()
            engine.podman("secret", "create", SECRET, fh.name)

    def pod(self, kind: str, name: str) -> dict:
        return kube.as_pod(kube.find(self.objs, kind), f"{self.tag}-{name}")

    def play(self, pod: dict) -> dict:
        kube.play([self.config, pod])
        self.played.append(pod)
        return pod

    def agent(self, payloads: list[dict], name: str = "agent") -> dict:
        """The chart's example agent pod (shared hostPath, uid, ConfigMap, downward-API ids), its
        container replaying ``payloads`` through the image's hook from a read-only hostPath."""
        file = write_payloads(self.agent_dir, name, payloads)
        pod = self.pod("Pod", name)
        c = pod["spec"]["containers"][0]
        c["command"] = ["/usr/bin/tini", "--", "/bin/sh", "-c", replay(f"/agent/{file}")]
        c["volumeMounts"].append({"name": "agent", "mountPath": "/agent", "readOnly": True})
        pod["spec"]["volumes"].append({"name": "agent", "hostPath": {"path": self.agent_dir, "type": "Directory"}})
        return pod

    def wait(self, pod: dict, container: str, timeout: float = 600) -> int:
        """Exit code of ``container`` once it has ended."""
        r = engine.podman("wait", kube.container_name(pod, container), timeout=timeout)
        return int(r.stdout.strip().splitlines()[-1])

    def logs(self, pod: dict, container: str) -> tuple[str, str]:
        r = engine.podman("logs", kube.container_name(pod, container), check=False)
        return r.stdout, r.stderr

    def spool_files(self) -> int:
        """Session spool files the agent side wrote on the node."""
        root = os.path.join(self.node_dir, "spool", "claude_code")
        return len([f for f in os.listdir(root) if f.endswith(".ndjson")]) if os.path.isdir(root) else 0

    def count_events(self) -> dict:
        """``count(*)`` and ``count(distinct event_id)`` over the lake's compacted parts, by the
        image's own ``ctxlake query``."""
        env = {**self.seaweed.env(), "CTXLAKE_STORE": self.seaweed.url(self.prefix), "CTXLAKE_FLEET_ID": FLEET}
        r = run(engine.IMAGE, "ctxlake", "query", "--json",
                "select count(*) n, count(distinct event_id) d from events", env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout)[0]

    def close(self) -> None:
        kube.down([self.config, *self.played])
        engine.podman("secret", "rm", SECRET, check=False)
        self.seaweed.wipe(self.prefix + "/")


@pytest.fixture
def deploy(image, seaweed, tmp_path):
    made = []

    def factory(tag: str, **values) -> Deployment:
        base = tmp_path / tag
        base.mkdir()
        os.chmod(tmp_path, 0o755)
        os.chmod(base, 0o755)
        d = Deployment(seaweed, str(base), tag, **values)
        made.append(d)
        return d

    yield factory
    for d in made:
        d.close()


def test_chart_pods_carry_real_hook_events_to_the_lake_and_the_briefing_back(deploy):
    d = deploy("flow")
    assert os.stat(d.node_dir).st_uid == 0  # a fresh node: the DaemonSet's init container takes it over
    syncd = d.play(d.pod("DaemonSet", "syncd"))
    container = kube.find(d.objs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]
    until("syncd is live", lambda: kube.probe(container, "livenessProbe")[0] == 200)
    until("syncd is ready (cache refreshed from the store)", lambda: kube.probe(container, "readinessProbe")[0] == 200)
    assert os.stat(d.node_dir).st_uid == UID and oct(os.stat(d.node_dir).st_mode & 0o777) == "0o770"

    payloads = sessions()
    agent = d.play(d.agent(payloads))
    assert d.wait(agent, "agent") == 0, d.logs(agent, "agent")
    answers = [json.loads(line) for line in d.logs(agent, "agent")[0].splitlines()]
    assert len(answers) == len(payloads)  # syncd, already running, may have shipped a session and removed its file
    until("syncd shipped the spool", lambda: (m := metrics(d.metrics_port))
          and m.get("ctxlake_spool_backlog_files") == 0 and m.get("ctxlake_envelopes_shipped_total", 0) >= len(payloads))

    maint = d.play(d.pod("CronJob", "maint"))
    assert d.wait(maint, "maint") == 0, d.logs(maint, "maint")
    out, err = d.logs(maint, "maint")
    assert "snapshot" in out and "published" in out, (out, err[-2000:])
    assert d.count_events() == {"n": len(payloads), "d": len(payloads)}

    briefing = os.path.join(d.node_dir, "cache", FLEET, "briefing.json")
    until("syncd brought the snapshot's briefing into the node's cache",
          lambda: os.path.exists(briefing) and "Fix the app" in open(briefing).read())
    # the chart's example agent pod, unchanged: its SessionStart gets the briefing from the cache
    example = d.play(d.pod("Pod", "example"))
    assert d.wait(example, "agent") == 0, d.logs(example, "agent")
    context = json.loads(d.logs(example, "agent")[0])["hookSpecificOutput"]["additionalContext"]
    assert "<ctxlake-briefing>" in context and "Fix the app so main() returns 2" in context

    # probes and metrics as the chart's probes and scrape annotations expect
    status, body = kube.probe(container, "livenessProbe")
    assert status == 200 and json.loads(body)
    assert kube.probe(container, "readinessProbe")[0] == 200
    ann = syncd["metadata"]["annotations"]
    assert ann["prometheus.io/port"] == str(d.metrics_port) and ann["prometheus.io/path"] == "/metrics"
    m = metrics(d.metrics_port)
    assert m["ctxlake_ready"] == 1 and m["ctxlake_envelopes_shipped_total"] >= len(payloads)
    assert m["ctxlake_sync_passes_total"] >= 2 and m["ctxlake_spool_lines_dropped_total"] == 0


def test_a_syncd_pod_killed_mid_pass_and_started_again_loses_nothing(deploy):
    d = deploy("kill", hostPath={"fixPermissions": False})
    owned_dir(d.node_dir)  # a node provisioned with the directory (the chart's fixPermissions=false)
    payloads = sessions(copies=20)
    agent = d.play(d.agent(payloads))
    assert d.wait(agent, "agent") == 0, d.logs(agent, "agent")
    assert d.spool_files() == 40

    syncd = d.play(d.pod("DaemonSet", "syncd"))
    name = kube.container_name(syncd, "syncd")
    files = until("syncd serves its metrics", lambda: metrics(d.metrics_port).get("ctxlake_spool_backlog_files"),
                  every=0.02)
    left = until("syncd is part-way through the backlog",
                 lambda: 0 < (metrics(d.metrics_port).get("ctxlake_spool_backlog_files") or files) < files
                 and metrics(d.metrics_port)["ctxlake_spool_backlog_files"], every=0.02)
    engine.podman("kill", name)
    assert engine.podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip() == "false"
    assert 0 < left < files  # killed mid-pass: some sessions shipped, some not

    # the kubelet restarts the container in its pod (restartPolicy Always); Podman stops a pod's
    # infra container when its last container dies, so the pod is started again as a whole
    engine.podman("pod", "start", syncd["metadata"]["name"])
    try:
        until("the restarted syncd shipped the rest", lambda: (m := metrics(d.metrics_port))
              and m.get("ctxlake_spool_backlog_files") == 0, deadline_s=240)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; metrics {metrics(d.metrics_port)}; syncd log: {d.logs(syncd, 'syncd')[1][-3000:]}")
    maint = d.play(d.pod("CronJob", "maint"))
    assert d.wait(maint, "maint") == 0, d.logs(maint, "maint")
    assert d.count_events() == {"n": len(payloads), "d": len(payloads)}


def test_the_operator_pod_retires_an_ended_agent_and_reports_the_fleet(deploy, monkeypatch):
    """The operator Deployment's pod against a fake API server on 127.0.0.1 (tests/operator):
    a kubeconfig on a hostPath stands in for the service-account token the kubelet mounts."""
    from lib.live import leases
    from lib.store import open_store
    from tests.operator.conftest import populate
    from tests.operator.fake_kube import FakeKube
    from tests.support.s3server import use_server_env

    d = deploy("op")
    use_server_env(monkeypatch, d.seaweed)
    store = open_store(d.seaweed.url(d.prefix))
    held = populate(store, FLEET)
    fleet_cr = kube.find(d.objs, "CtxlakeFleet")
    ns = kube.NAMESPACE
    with FakeKube() as api:
        api.put("ctxlakefleets", dict(fleet_cr, metadata={**fleet_cr["metadata"], "namespace": ns}))
        api.put("pods", {"metadata": {"name": "alice-0", "namespace": ns, "labels": {"ctxlake.io/agent-id": "alice",
                                                                                  "ctxlake.io/fleet-id": FLEET}},
                         "status": {"phase": "Running"}})
        with open(os.path.join(d.agent_dir, "kubeconfig"), "w") as fh:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "fake",
                       "clusters": [{"name": "fake", "cluster": {"server": api.url}}],
                       "users": [{"name": "operator", "user": {}}],
                       "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "operator", "namespace": ns}}]},
                      fh)
        os.chmod(os.path.join(d.agent_dir, "kubeconfig"), 0o644)
        pod = d.pod("Deployment", "operator")
        c = pod["spec"]["containers"][0]
        c["env"].append({"name": "KUBECONFIG", "value": "/var/run/kube/kubeconfig"})
        c["volumeMounts"].append({"name": "kubeconfig", "mountPath": "/var/run/kube", "readOnly": True})
        pod["spec"]["volumes"].append({"name": "kubeconfig", "hostPath": {"path": d.agent_dir, "type": "Directory"}})
        d.play(pod)
        rendered = kube.find(d.objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        until("the operator's liveness probe answers", lambda: kube.probe(rendered, "livenessProbe")[0] == 200,
              deadline_s=180)
        name = fleet_cr["metadata"]["name"]
        status = until("the CtxlakeFleet status shows the fleet",
                       lambda: (api.get("ctxlakefleets", ns, name).get("status") or {}).get("liveAgents") == 2
                       and api.get("ctxlakefleets", ns, name)["status"], deadline_s=180)
        assert status["fleetId"] == FLEET and status["leasesHeld"] == 3

        ended = api.get("pods", ns, "alice-0")
        ended["status"]["phase"] = "Succeeded"
        api.put("pods", ended)
        until("alice's leases are released by the operator pod",
              lambda: all(leases.read(store, k)[0]["holder"] is None for k in held["alice"]), deadline_s=120)
        assert leases.read(store, held["bob"][0])[0]["holder"] == "bob"
        out, err = d.logs(pod, "operator")
        assert f"agent alice of fleet {FLEET} retired: 2 lease(s) released" in out + err
