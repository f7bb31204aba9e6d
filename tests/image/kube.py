"""The Helm chart's workloads as Pods on Podman (issue #26): render the chart with helm-python-sdk,
take each workload's pod template as the controller would stamp it out, and run it with
``podman kube play`` on the host network.

What a controller adds and a kubelet resolves is done here, and only that:

- the DaemonSet controller binds its Pod to a node (``spec.nodeName``), the Job controller (under
  the CronJob) and the ReplicaSet (under the Deployment) copy their template; every Pod keeps the
  template's labels, annotations, containers (command, args, env, envFrom, ports, probes,
  resources, securityContext), init containers and volumes unchanged;
- ``hostNetwork: true`` is added: there is no cluster network; every pod shares the host's, where
  SeaweedFS and the fake API server listen on 127.0.0.1;
- the kubelet's downward API is resolved for ``spec.nodeName`` and ``metadata.namespace`` (Podman
  4.3 resolves ``metadata.name`` and ``metadata.labels[...]`` but refuses those two) by writing
  the value as a plain one;
- Podman 4.3 refuses an annotation value over 63 characters (it checks them as if they were
  label values; Kubernetes allows 256 KiB in all), so the chart's ``checksum/config`` (a 64-digit
  sha256, which only makes a rollout restart pods) is dropped, and any other such annotation;
- Podman 4.3 refuses ``ports`` on the host network ("PortMappings can only be used with Bridge
  or slirp4netns networking"); on the host network a container port is the host's port anyway,
  so ``ports`` is dropped from what Podman sees and kept for :func:`probe`, which resolves the
  probes' named ports against the rendered container;
- init containers are played with Podman's ``io.podman.annotations.init.container.type: always``
  (kept after they ran, as the kubelet keeps them): with the default ``once`` Podman 4.3 removes
  them right after they exit and, on a loaded host, fails the whole play when the container is
  not marked stopped yet ("cannot remove container ... as it is running");
- probes are not run by Podman without systemd timers: :func:`probe` performs an ``httpGet`` probe
  the way the kubelet does (named port resolved against the container's ports, success is
  200..399, the probe's ``timeoutSeconds``).
"""
from __future__ import annotations

import copy
import os
import socket
import tempfile
import urllib.error
import urllib.request

import yaml

from tests.image.engine import ROOT, podman

CHART = os.path.join(ROOT, "charts", "ctxlake")
RELEASE, NAMESPACE = "ctx", "ctxlake"


def render(values: dict) -> list[dict]:
    """Every object the chart renders for ``values`` (release ``ctx`` in namespace ``ctxlake``)."""
    import helm_python as helm

    with helm.Chart.load(CHART) as chart:
        out = chart.render(values=values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return [d for name, text in out.items() if not name.endswith("NOTES.txt") for d in yaml.safe_load_all(text) if d]


def find(objs: list[dict], kind: str) -> dict:
    """The one object of ``kind`` in ``objs``; :raises AssertionError: none or several."""
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"{kind}: {len(found)} rendered"
    return found[0]


def pod_template(workload: dict) -> dict:
    """The pod template of a DaemonSet, Deployment, Job or CronJob (its job template's), or the
    Pod itself."""
    kind = workload["kind"]
    if kind == "Pod":
        return {"metadata": workload["metadata"], "spec": workload["spec"]}
    if kind == "CronJob":
        return workload["spec"]["jobTemplate"]["spec"]["template"]
    if kind in ("DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet"):
        return workload["spec"]["template"]
    raise ValueError(f"{kind} has no pod template")


def as_pod(workload: dict, name: str, node: str | None = None) -> dict:
    """``workload``'s pod template as a Pod named ``name``, bound to ``node`` (default: this host's
    name), on the host network, adapted as the module docstring lists."""
    node = node or socket.gethostname()
    tpl = copy.deepcopy(pod_template(workload))
    meta = dict(tpl.get("metadata") or {})
    meta["name"] = name
    meta["annotations"] = {k: v for k, v in (meta.get("annotations") or {}).items() if len(str(v)) <= 63}
    meta.setdefault("namespace", workload["metadata"].get("namespace", NAMESPACE))
    spec = tpl["spec"]
    if spec.get("initContainers"):
        meta["annotations"]["io.podman.annotations.init.container.type"] = "always"
    spec["hostNetwork"] = True
    spec["nodeName"] = node
    resolved = {"spec.nodeName": node, "metadata.namespace": meta["namespace"]}
    for c in spec.get("initContainers", []) + spec["containers"]:
        c.pop("ports", None)
        for e in c.get("env", []):
            field = (e.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
            if field in resolved:
                e.pop("valueFrom")
                e["value"] = resolved[field]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def secret(name: str, data: dict) -> dict:
    """A v1 Secret with ``stringData`` (what the chart's ``existingSecret`` names)."""
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NAMESPACE},
            "type": "Opaque", "stringData": data}


def play(docs: list[dict], *extra: str, timeout: float = 600):
    """``podman kube play --replace`` of ``docs`` (one YAML stream: ConfigMaps, Secrets, Pods).

    :raises subprocess.CalledProcessError: Podman refused or could not start a pod.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        yaml.safe_dump_all(docs, fh, sort_keys=False)
        path = fh.name
    try:
        return podman("kube", "play", "--replace", *extra, path, timeout=timeout)
    finally:
        os.unlink(path)


def down(docs: list[dict]) -> None:
    """Remove the pods ``docs`` describe (``podman kube down``), ignoring ones already gone."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        yaml.safe_dump_all(docs, fh, sort_keys=False)
        path = fh.name
    try:
        podman("kube", "down", path, check=False, timeout=300)
    finally:
        os.unlink(path)


def container_name(pod: dict, container: str) -> str:
    """Podman's name for ``container`` of ``pod`` (``<pod>-<container>``)."""
    return f"{pod['metadata']['name']}-{container}"


def probe(container: dict, which: str, host: str = "127.0.0.1") -> tuple[int, bytes]:
    """Run ``container[which]`` (``livenessProbe``/``readinessProbe``), an ``httpGet`` probe, as
    the kubelet does: the port by name from the container's ``ports`` or by number, ``timeoutSeconds``
    (default 1). Returns ``(status, body)``; a connection error is status 0.

    :raises KeyError: the container has no such probe or it is not ``httpGet``.
    """
    spec = container[which]["httpGet"]
    port = spec["port"]
    if isinstance(port, str) and not port.isdigit():
        port = next(p["containerPort"] for p in container.get("ports", []) if p.get("name") == port)
    url = f"{spec.get('scheme', 'HTTP').lower()}://{host}:{port}{spec.get('path', '/')}"
    try:
        with urllib.request.urlopen(url, timeout=container[which].get("timeoutSeconds", 1)) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""
