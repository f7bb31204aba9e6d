"""The Helm chart, rendered offline with helm-python-sdk (Helm v4's Go engine, no helm binary) for
several value sets; every manifest validated with kubernetes-validate in strict mode; the CR
instance validated against the chart's own CRD; lint and schema failures checked (issue #9)."""
from __future__ import annotations

import json
import os

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT

helm = pytest.importorskip("helm_python", reason="helm-python-sdk is in requirements-dev.txt")
kv = pytest.importorskip("kubernetes_validate.utils", reason="kubernetes-validate is in requirements-dev.txt")

CHART = os.path.join(ROOT, "charts", "ctxlake")
K8S_VERSIONS = ("1.30.0", "1.37.0")
"""The oldest minor the chart claims comfortably (CronJob timeZone is GA since 1.27) and the newest
kubernetes-validate ships schemas for."""
NS = "ctxlake"

VALUE_SETS = {
    "defaults": {},
    "s3-irsa": {"store": {"url": "s3://team-lake/ctxlake", "s3": {"region": "eu-west-1"}},
                "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/ctxlake"}}},
    "s3-secret-endpoint": {"store": {"url": "s3://lake", "s3": {"endpoint": "http://seaweedfs.storage:8333"},
                                     "credentials": {"existingSecret": "ctxlake-s3"}},
                           "maint": {"timeZone": "Etc/UTC"}, "image": {"digest": "sha256:" + "ab" * 32}},
    "operator": {"operator": {"enabled": True}, "store": {"url": "s3://team-lake/ctxlake"}},
    "operator-cluster-wide": {"operator": {"enabled": True, "clusterWide": True}},
    "operator-namespaces": {"operator": {"enabled": True, "watchNamespaces": ["agents-a", "agents-b"]}},
    "agent-example": {"agentExample": {"enabled": True, "agentId": "alice"}, "fleetId": "team-a"},
}


@pytest.fixture(scope="module")
def chart():
    with helm.Chart.load(CHART) as c:
        yield c


def render(chart, values: dict) -> tuple[list[dict], str]:
    """Rendered objects (every YAML document of every template) and the NOTES text."""
    out = chart.render(values=values, name="ctx", namespace=NS, is_install=True)
    objs = []
    for name, text in out.items():
        if name.endswith("NOTES.txt"):
            continue
        objs += [d for d in yaml.safe_load_all(text) if d]
    notes = next((t for n, t in out.items() if n.endswith("NOTES.txt")), "")
    return objs, notes


def by_kind(objs: list[dict], kind: str) -> list[dict]:
    return [o for o in objs if o["kind"] == kind]


def one(objs, kind):
    found = by_kind(objs, kind)
    assert len(found) == 1, f"{kind}: {len(found)}"
    return found[0]


def crd(chart) -> dict:
    return yaml.safe_load(chart.crds[0]["data"])


def as_jsonschema(openapi: dict) -> dict:
    """A CRD's structural OpenAPI v3 schema as plain JSON Schema: ``nullable: true`` admits null,
    as the API server does; Kubernetes' ``x-kubernetes-*`` markers are dropped."""
    if isinstance(openapi, list):
        return [as_jsonschema(x) for x in openapi]
    if not isinstance(openapi, dict):
        return openapi
    out = {k: as_jsonschema(v) for k, v in openapi.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if openapi.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_every_manifest_validates_strictly(chart, name):
    objs, notes = render(chart, VALUE_SETS[name])
    assert objs and "Check that it works" in notes
    fleet_schema = as_jsonschema(crd(chart)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    for obj in objs + [crd(chart)]:
        if obj["apiVersion"] == "ctxlake.io/v1":
            jsonschema.validate(obj, fleet_schema)  # the CR against the chart's own CRD
            continue
        for version in K8S_VERSIONS:
            try:
                kv.validate(obj, version, strict=True)
            except kv.ValidationError as exc:
                raise AssertionError(f"{name}: {obj['kind']}/{obj['metadata']['name']} on {version}: "
                                     f"{'.'.join(map(str, exc.path))}: {exc.message}") from None


def test_lint_passes_strict_for_defaults_and_each_value_set():
    for values in [None, *VALUE_SETS.values()]:
        report = helm.lint(CHART, values, strict=True, namespace=NS, kube_version="v1.34.0")
        bad = [m for m in report["messages"] if m["severity"] >= 2]
        assert not bad and not report["errors"], (values, bad, report["errors"])


def test_syncd_daemonset_shares_the_host_dir_probes_and_stops_gracefully(chart):
    objs, _ = render(chart, {})
    ds = one(objs, "DaemonSet")
    pod = ds["spec"]["template"]
    spec = pod["spec"]
    c = spec["containers"][0]
    assert c["args"] == ["syncd"]
    assert {"name": "ctxlake-home", "hostPath": {"path": "/var/lib/ctxlake", "type": "DirectoryOrCreate"}} in spec["volumes"]
    assert {"name": "CTXLAKE_HOME", "value": "/var/lib/ctxlake"} in c["env"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(c["ports"][0]["containerPort"]) == "9464"
    assert spec["terminationGracePeriodSeconds"] == 60
    assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
    assert spec["securityContext"]["runAsNonRoot"] and spec["securityContext"]["runAsUser"] == 10001
    assert c["securityContext"]["readOnlyRootFilesystem"] and c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert spec["automountServiceAccountToken"] is False
    init = spec["initContainers"][0]
    assert init["securityContext"]["capabilities"]["add"] == ["CHOWN", "FOWNER"]


def test_the_configmap_is_a_ctxlake_toml_that_turns_metrics_on_and_maint_off(chart, tmp_path):
    from lib import config

    objs, _ = render(chart, VALUE_SETS["s3-irsa"])
    toml = one(objs, "ConfigMap")["data"]["ctxlake.toml"]
    path = tmp_path / "ctxlake.toml"
    path.write_text(toml)
    cfg = config.load(environ={"CTXLAKE_HOME": str(tmp_path / "home"), "CTXLAKE_CONFIG": str(path)})
    assert cfg.store == "s3://team-lake/ctxlake" and cfg.fleet_id == "default"
    assert cfg.sync.metrics_port == 9464 and cfg.sync.metrics_addr == "0.0.0.0" and cfg.sync.maint_every_secs == 0


def test_maint_cronjob_never_overlaps_and_keeps_history(chart):
    objs, _ = render(chart, VALUE_SETS["s3-secret-endpoint"])
    cj = one(objs, "CronJob")["spec"]
    assert cj["concurrencyPolicy"] == "Forbid" and cj["startingDeadlineSeconds"] == 120
    assert cj["successfulJobsHistoryLimit"] == 3 and cj["failedJobsHistoryLimit"] == 5
    assert cj["timeZone"] == "Etc/UTC"
    job = cj["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] == 900
    c = job["template"]["spec"]["containers"][0]
    assert c["args"] == ["maint", "--once"]
    assert c["image"] == "ctxlake@sha256:" + "ab" * 32
    # an S3 store: the node's disk is not mounted; credentials only by Secret reference
    vols = {v["name"]: v for v in job["template"]["spec"]["volumes"]}
    assert "emptyDir" in vols["ctxlake-home"]
    assert c["envFrom"] == [{"secretRef": {"name": "ctxlake-s3"}}]
    assert {"name": "AWS_ENDPOINT_URL_S3", "value": "http://seaweedfs.storage:8333"} in c["env"]


def test_credentials_are_never_rendered_and_irsa_goes_on_the_service_account(chart):
    for name, values in VALUE_SETS.items():
        objs, _ = render(chart, values)
        assert not by_kind(objs, "Secret"), name
    objs, _ = render(chart, VALUE_SETS["s3-irsa"])
    sas = by_kind(objs, "ServiceAccount")
    assert sas[0]["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/ctxlake"}
    ds = one(objs, "DaemonSet")["spec"]["template"]["spec"]
    assert "envFrom" not in ds["containers"][0] and ds["serviceAccountName"] == sas[0]["metadata"]["name"]
    assert {"name": "AWS_REGION", "value": "eu-west-1"} in ds["containers"][0]["env"]


def _rules(role) -> set:
    return {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


LEAST = {("", "pods", "get"), ("", "pods", "list"), ("", "pods", "watch"),
         ("ctxlake.io", "ctxlakefleets", "get"), ("ctxlake.io", "ctxlakefleets", "list"),
         ("ctxlake.io", "ctxlakefleets", "watch"), ("ctxlake.io", "ctxlakefleets", "patch"),
         ("ctxlake.io", "ctxlakefleets/status", "get"), ("ctxlake.io", "ctxlakefleets/status", "patch")}


def test_operator_is_off_by_default_and_least_privilege_when_on(chart):
    objs, _ = render(chart, {})
    assert not by_kind(objs, "Deployment") and not by_kind(objs, "Role") and not by_kind(objs, "ClusterRole")
    objs, _ = render(chart, VALUE_SETS["operator"])
    dep = one(objs, "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert c["args"][:2] == ["operator", f"--namespace={NS}"] and dep["spec"]["replicas"] == 1
    role = one(objs, "Role")
    assert role["metadata"]["namespace"] == NS and _rules(role) == LEAST
    binding = one(objs, "RoleBinding")
    assert binding["subjects"][0]["name"] == dep["spec"]["template"]["spec"]["serviceAccountName"]
    fleet = one(objs, "CtxlakeFleet")
    assert fleet["spec"] == {"fleetId": "default"}
    objs, _ = render(chart, VALUE_SETS["operator-cluster-wide"])
    assert _rules(one(objs, "ClusterRole")) == LEAST and one(objs, "ClusterRoleBinding")
    assert "--all-namespaces" in one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    objs, _ = render(chart, VALUE_SETS["operator-namespaces"])
    assert sorted(r["metadata"]["namespace"] for r in by_kind(objs, "Role")) == ["agents-a", "agents-b"]


def test_crd_names_the_status_the_operator_writes(chart):
    import fleet_operator

    doc = crd(chart)
    version = doc["spec"]["versions"][0]
    assert doc["metadata"]["name"] == "ctxlakefleets.ctxlake.io" and version["subresources"] == {"status": {}}
    status_props = set(version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"])
    summary = {"live_agents": 1, "agents": ["a"], "leases_held": 2, "leases_by_agent": {"a": 2},
               "maintenance_holder": None, "snapshot_built_at": None, "snapshot_age_s": None}
    status = fleet_operator.status_for(summary, "f", "2026-01-01T00:00:00.000Z")
    assert set(status) == status_props
    jsonschema.validate({"spec": {"fleetId": "f"}, "status": status}, as_jsonschema(version["schema"]["openAPIV3Schema"]))


def test_agent_example_gets_ids_from_the_downward_api_and_the_shared_volume(chart):
    objs, _ = render(chart, VALUE_SETS["agent-example"])
    pod = one(objs, "Pod")
    assert pod["metadata"]["labels"]["ctxlake.io/agent-id"] == "alice"
    assert pod["metadata"]["labels"]["ctxlake.io/fleet-id"] == "team-a"
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["CTXLAKE_AGENT_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['ctxlake.io/agent-id']"
    assert env["CTXLAKE_FLEET_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['ctxlake.io/fleet-id']"
    assert env["CTXLAKE_HOME"]["value"] == "/var/lib/ctxlake"
    ds = one(objs, "DaemonSet")["spec"]["template"]["spec"]
    host = [v for v in ds["volumes"] if v["name"] == "ctxlake-home"][0]
    assert host in pod["spec"]["volumes"]
    assert pod["spec"]["securityContext"]["runAsUser"] == ds["securityContext"]["runAsUser"]


BAD_VALUES = {
    "a secret in values": {"store": {"url": "s3://b", "credentials": {"accessKeyId": "AKIA", "existingSecret": ""}}},
    "a typo at the top": {"fleetID": "x"},
    "metrics port not a number": {"syncd": {"metrics": {"port": "nine"}}},
    "an unknown store scheme": {"store": {"url": "http://minio:9000/bucket"}},
    "root": {"podSecurityContext": {"runAsUser": 0, "runAsGroup": 0, "fsGroup": 0}},
    "a bad lease policy": {"leases": {"policy": "deny"}},
    "a bad fleet id": {"fleetId": "team a/../b"},
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_bad_values_fail_schema_validation_at_install_time(chart, case):
    with pytest.raises(helm.HelmValuesError):
        chart.validate_schema(BAD_VALUES[case])
    with pytest.raises(helm.HelmError):
        chart.render(values=BAD_VALUES[case], name="ctx", namespace=NS, is_install=True)


def test_good_value_sets_pass_schema_validation(chart):
    for values in VALUE_SETS.values():
        chart.validate_schema(values)
    json.dumps(chart.schema)  # the schema ships inside the chart


def test_the_validator_is_not_vacuous(chart):
    """Strict validation rejects a misspelt field and a wrong type in a rendered DaemonSet."""
    import copy

    ds = one(render(chart, {})[0], "DaemonSet")
    typo = copy.deepcopy(ds)
    typo["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kv.ValidationError):
        kv.validate(typo, K8S_VERSIONS[-1], strict=True)
    wrong = copy.deepcopy(ds)
    wrong["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = "sixty"
    with pytest.raises(kv.ValidationError):
        kv.validate(wrong, K8S_VERSIONS[-1], strict=True)
