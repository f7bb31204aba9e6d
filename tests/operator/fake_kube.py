"""A small fake Kubernetes API server on 127.0.0.1 for running the operator under kopf.

It answers only what kopf needs for ``fleet_operator.py``: API discovery (``/api``, ``/apis`` and
their versions), list and watch of pods and ``ctxlakefleets`` (namespaced and cluster-wide),
get, and PATCH of an object or its ``/status`` (merge patch and JSON patch with kopf's ``test``
on ``resourceVersion``). Watches replay the event log after the requested ``resourceVersion``
and then stream new events as JSON lines until the server stops. Anything else is a 404 that is
recorded in :attr:`FakeKube.unknown`, so a test can see what kopf asked for.
"""
from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

GROUP = "ctxlake.io"

_CORE_RESOURCES = [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
     "verbs": ["get", "list", "watch", "patch"]},
    {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
     "verbs": ["get", "list", "watch"]},
]
_FLEET_RESOURCES = [
    {"name": "ctxlakefleets", "singularName": "ctxlakefleet", "namespaced": True, "kind": "CtxlakeFleet",
     "verbs": ["get", "list", "watch", "patch"]},
    {"name": "ctxlakefleets/status", "singularName": "", "namespaced": True, "kind": "CtxlakeFleet",
     "verbs": ["get", "patch"]},
]
_CRD_RESOURCES = [
    {"name": "customresourcedefinitions", "singularName": "customresourcedefinition", "namespaced": False,
     "kind": "CustomResourceDefinition", "verbs": ["get", "list", "watch"]},
]
_KIND = {"pods": ("v1", "Pod"), "ctxlakefleets": (f"{GROUP}/v1", "CtxlakeFleet")}


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class FakeKube:
    """The cluster state and the HTTP server. Use as a context manager; ``url`` is its address."""

    def __init__(self):
        self.objects: dict[tuple[str, str, str], dict] = {}
        self.events: list[tuple[int, str, str, str, dict]] = []  # (rv, plural, ns, type, obj)
        self.rv = 0
        self.cond = threading.Condition()
        self.stopping = False
        self.requests: list[str] = []
        self.unknown: list[str] = []
        self.patches: list[tuple[str, object]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                fake._get(self)

            def do_PATCH(self):  # noqa: N802
                fake._patch(self)

            def do_POST(self):  # noqa: N802
                fake._not_found(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- state changes (from tests and from PATCH) ------------------------------------------
    def _emit(self, plural: str, ns: str, etype: str, obj: dict) -> None:
        self.events.append((self.rv, plural, ns, etype, copy.deepcopy(obj)))
        self.cond.notify_all()

    def put(self, plural: str, obj: dict) -> dict:
        """Create or replace an object (emits ADDED or MODIFIED)."""
        with self.cond:
            self.rv += 1
            api_version, kind = _KIND[plural]
            obj = dict(copy.deepcopy(obj), apiVersion=api_version, kind=kind)
            md = obj.setdefault("metadata", {})
            md["resourceVersion"] = str(self.rv)
            md.setdefault("uid", f"uid-{plural}-{md['name']}")
            key = (plural, md.get("namespace", ""), md["name"])
            etype = "MODIFIED" if key in self.objects else "ADDED"
            self.objects[key] = obj
            self._emit(plural, key[1], etype, obj)
            return copy.deepcopy(obj)

    def delete(self, plural: str, ns: str, name: str) -> None:
        """Remove an object (emits DELETED)."""
        with self.cond:
            obj = self.objects.pop((plural, ns, name))
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._emit(plural, ns, "DELETED", obj)

    def get(self, plural: str, ns: str, name: str) -> dict:
        """A copy of the stored object."""
        with self.cond:
            return copy.deepcopy(self.objects[(plural, ns, name)])

    # -- HTTP --------------------------------------------------------------------------------
    def _send(self, h, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _not_found(self, h) -> None:
        self.unknown.append(f"{h.command} {h.path}")
        self._send(h, 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})

    @staticmethod
    def _route(path: str):
        """``(plural, namespace or None, name or None, subresource or None)`` or ``None``."""
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
        elif parts[:3] == ["apis", GROUP, "v1"]:
            rest = parts[3:]
        else:
            return None
        ns = None
        if len(rest) >= 2 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest or rest[0] not in _KIND:
            return None
        return rest[0], ns, (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)

    def _get(self, h) -> None:
        url = urlsplit(h.path)
        self.requests.append(f"GET {h.path}")
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        path = url.path.rstrip("/")
        if path == "/version":
            return self._send(h, 200, {"major": "1", "minor": "34", "gitVersion": "v1.34.0-fake"})
        if path == "/api":
            return self._send(h, 200, {"kind": "APIVersions", "versions": ["v1"]})
        if path == "/api/v1":
            return self._send(h, 200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": _CORE_RESOURCES})
        if path == "/apis":
            groups = [{"name": g, "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
                       "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"}}
                      for g in (GROUP, "apiextensions.k8s.io")]
            return self._send(h, 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        if path == f"/apis/{GROUP}/v1":
            return self._send(h, 200, {"kind": "APIResourceList", "groupVersion": f"{GROUP}/v1", "resources": _FLEET_RESOURCES})
        if path == "/apis/apiextensions.k8s.io/v1":
            return self._send(h, 200, {"kind": "APIResourceList", "groupVersion": "apiextensions.k8s.io/v1",
                                       "resources": _CRD_RESOURCES})
        route = self._route(path)
        if route is None:
            return self._not_found(h)
        plural, ns, name, sub = route
        if name:
            with self.cond:
                obj = self.objects.get((plural, ns or "", name))
            return self._send(h, 200, obj) if obj else self._not_found(h)
        if q.get("watch") == "true":
            return self._watch(h, plural, ns, int(q.get("resourceVersion") or 0))
        with self.cond:
            items = [copy.deepcopy(o) for (p, n, _), o in sorted(self.objects.items()) if p == plural and ns in (None, n)]
            rv = str(self.rv)
        api_version, kind = _KIND[plural]
        return self._send(h, 200, {"kind": f"{kind}List", "apiVersion": api_version,
                                   "metadata": {"resourceVersion": rv}, "items": items})

    def _watch(self, h, plural: str, ns: str | None, since: int) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()  # HTTP/1.0: the body is the stream until the connection closes
        seen = since
        try:
            while True:
                with self.cond:
                    while not self.stopping and not any(rv > seen for rv, *_ in self.events):
                        self.cond.wait(timeout=0.5)
                    if self.stopping:
                        return
                    fresh = [e for e in self.events if e[0] > seen]
                seen = fresh[-1][0]
                for _, p, n, etype, obj in fresh:
                    if p == plural and ns in (None, n):
                        h.wfile.write(json.dumps({"type": etype, "object": obj}).encode() + b"\n")
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return

    def _patch(self, h) -> None:
        import jsonpatch

        url = urlsplit(h.path)
        self.requests.append(f"PATCH {h.path}")
        route = self._route(url.path)
        body = json.loads(h.rfile.read(int(h.headers.get("Content-Length") or 0)) or b"null")
        if route is None or route[2] is None:
            return self._not_found(h)
        plural, ns, name, sub = route
        ctype = h.headers.get("Content-Type", "")
        with self.cond:
            key = (plural, ns or "", name)
            if key not in self.objects:
                return self._not_found(h)
            cur = self.objects[key]
            self.patches.append((f"{plural}/{name}{'/' + sub if sub else ''}", body))
            if ctype.startswith("application/json-patch+json"):
                try:
                    new = jsonpatch.apply_patch(cur, body)
                except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPatchTestFailed):
                    return self._send(h, 422, {"kind": "Status", "status": "Failure", "reason": "Invalid", "code": 422})
            else:
                new = merge_patch(cur, body)
            if sub == "status":  # the status subresource changes only status
                new = dict(cur, status=new.get("status"))
            elif "status" in cur or "status" in new:  # the main resource never changes status
                new = dict(new, status=cur.get("status"))
                if new["status"] is None:
                    del new["status"]
            obj = self.put(plural, new)
        self._send(h, 200, obj)
