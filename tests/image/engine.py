"""Podman as this project's container engine: the engine configuration, the Debian-made base image
and the ctxlake image built on it (issue #26; docs/kubernetes.md, "Run for real on Podman").

Everything lives under ``.cache/image/`` in the checkout (ignored by git); no system file is
touched:

- ``containers.conf`` (passed as ``CONTAINERS_CONF``): runtime ``runc``, ``cgroupfs`` cgroup
  manager, lowered ``default_ulimits`` (``nofile``/``nproc`` 1024: a sandboxed host cannot raise
  them to Podman's defaults); ``storage-<driver>.conf`` (``CONTAINERS_STORAGE_CONF``): kernel
  ``overlay`` where ``podman info`` accepts it, else ``vfs`` (:func:`storage_driver`), with its
  graph root in ``.cache/image/storage-<driver>``, so layers are reused between runs;
- ``rootfs-bookworm-<key>.tar``: a Debian bookworm root filesystem made by ``mmdebstrap
  --variant=minbase`` from *this host's* apt sources (read from ``/etc/apt/sources.list`` and
  ``/etc/apt/sources.list.d/`` at run time, never written into the repository), with
  ``python3``, ``python3-venv`` and ``ca-certificates``. The host's CA bundle replaces Debian's in
  it and a ``pip.conf`` points pip at it, so ``RUN`` steps reach the package registries exactly as
  the host does (a TLS-inspecting proxy's root included). Imported as :data:`BASE_IMAGE`;
- the ctxlake image :data:`IMAGE`: the repository's Dockerfile with
  ``--build-arg PYTHON_IMAGE=``:data:`BASE_IMAGE` (bookworm's Python is 3.11, like the default
  ``python:3.11-slim-bookworm``), ``podman build --network=host``.

Run as a script (``make image`` / ``make image-test`` do)::

    python -m tests.image.engine check    # exit 0: an engine starts containers; 75: it cannot (why on stderr)
    python -m tests.image.engine image    # check, then base + image; prints build seconds and size (--json)

Exit 75 (``EX_TEMPFAIL``) only when no engine can start a container (``podman``/``runc``/
``mmdebstrap`` missing, ``podman info`` failing, or ``true`` failing to run in the fresh base);
a failing Dockerfile build is 1.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import ssl
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, ".cache", "image")
SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv", "ca-certificates")
BASE_IMAGE = f"localhost/ctxlake-base:{SUITE}"
IMAGE = os.environ.get("CTXLAKE_IMAGE") or "localhost/ctxlake:test"
EX_TEMPFAIL = 75

CONTAINERS_CONF = """\
# Written by tests/image/engine.py (issue #26). See its docstring.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


class PodmanError(subprocess.CalledProcessError):
    """A podman command failed; its message ends with podman's stderr."""

    def __str__(self) -> str:
        return f"{super().__str__()}: {(self.stderr or self.stdout or '').strip()[-2000:]}"


class EngineUnavailable(RuntimeError):
    """No container engine can start a container here; the message says why and what fixes it."""


DRIVERS = ("overlay", "vfs")
"""Storage drivers in order of preference: kernel ``overlay`` (a container costs a mount), then
``vfs`` (works anywhere, but every layer and every container is a full copy of the tree: a cold
build takes minutes longer). Each has its own graph root, so switching never mixes them."""


def _storage_conf(driver: str) -> str:
    return ("# Written by tests/image/engine.py (issue #26).\n[storage]\n"
            f"driver = \"{driver}\"\ngraphroot = \"{os.path.join(CACHE, 'storage-' + driver)}\"\n"
            f"runroot = \"{os.path.join(CACHE, 'run-' + driver)}\"\n")


def _write(path: str, text: str) -> None:
    try:
        with open(path) as fh:
            if fh.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w") as fh:
        fh.write(text)


_DRIVER: list[str] = []


def storage_driver() -> str:
    """The storage driver this host takes: ``CTXLAKE_IMAGE_STORAGE_DRIVER`` when set, else the
    first of :data:`DRIVERS` for which ``podman info`` succeeds (decided once per process)."""
    if not _DRIVER:
        forced = os.environ.get("CTXLAKE_IMAGE_STORAGE_DRIVER")
        choice = forced or DRIVERS[-1]
        if not forced and shutil.which("podman"):
            for driver in DRIVERS:
                r = subprocess.run(["podman", "info", "--format", "{{.Store.GraphDriverName}}"],
                                   env=_env_for(driver), capture_output=True, text=True, timeout=120)
                if r.returncode == 0 and r.stdout.strip() == driver:
                    choice = driver
                    break
        _DRIVER.append(choice)
    return _DRIVER[0]


def _env_for(driver: str) -> dict:
    os.makedirs(CACHE, exist_ok=True)
    conf, storage = os.path.join(CACHE, "containers.conf"), os.path.join(CACHE, f"storage-{driver}.conf")
    _write(conf, CONTAINERS_CONF)
    _write(storage, _storage_conf(driver))
    return dict(os.environ, CONTAINERS_CONF=conf, CONTAINERS_STORAGE_CONF=storage)


def engine_env() -> dict:
    """``os.environ`` plus ``CONTAINERS_CONF`` and ``CONTAINERS_STORAGE_CONF`` pointing at this
    project's engine configuration (written to ``.cache/image/``) for :func:`storage_driver`."""
    return _env_for(storage_driver())


def podman(*args: str, check: bool = True, timeout: float | None = 600, **kw) -> subprocess.CompletedProcess:
    """Run ``podman ARGS`` with the project's engine configuration; text output captured unless
    ``stdout``/``stderr`` are given.

    :raises PodmanError: non-zero exit when ``check`` (stderr in the message).
    """
    kw.setdefault("capture_output", "stdout" not in kw and "stderr" not in kw)
    kw.setdefault("text", True)
    r = subprocess.run(["podman", *args], env=engine_env(), timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise PodmanError(r.returncode, r.args, r.stdout, r.stderr)
    return r


def image_exists(name: str) -> bool:
    """True when ``name`` is in the project's image storage."""
    return podman("image", "exists", name, check=False).returncode == 0


# -- the host's apt sources ----------------------------------------------------------------------

def _deb822(text: str) -> list[dict]:
    stanzas, cur, key = [], {}, None
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                stanzas.append(cur)
            cur, key = {}, None
        elif line[0] in " \t" and key:
            cur[key] += " " + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            cur[key] = value.strip()
    return stanzas


def apt_sources(suite: str = SUITE, etc: str = "/etc/apt") -> list[str]:
    """This host's apt sources for ``suite`` and its ``-updates``/``-security`` suites, as one-line
    ``deb URI SUITE COMPONENTS`` entries (what ``mmdebstrap`` takes as mirrors), from
    ``sources.list`` and ``sources.list.d/*.list``/``*.sources`` (deb822); disabled stanzas
    (``Enabled: no``) and ``deb-src`` are skipped. Options in brackets are dropped.

    :raises EngineUnavailable: no enabled ``deb`` source names ``suite``.
    """
    wanted = {suite, f"{suite}-updates", f"{suite}-security"}
    out = []
    files = [os.path.join(etc, "sources.list")] + sorted(glob.glob(os.path.join(etc, "sources.list.d", "*.list")))
    for path in files:
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except OSError:
            continue
        for line in lines:
            words = line.split("#", 1)[0].split()
            if words[:1] != ["deb"]:
                continue
            words = words[1:]
            if words and words[0].startswith("["):
                while words and not words[0].endswith("]"):
                    words.pop(0)
                words = words[1:]
            if len(words) >= 3 and words[1] in wanted:
                out.append(" ".join(["deb", *words]))
    for path in sorted(glob.glob(os.path.join(etc, "sources.list.d", "*.sources"))):
        try:
            stanzas = _deb822(open(path, encoding="utf-8").read())
        except OSError:
            continue
        for st in stanzas:
            if "deb" not in st.get("types", "").split() or st.get("enabled", "yes").lower() == "no":
                continue
            for uri in st.get("uris", "").split():
                for s in st.get("suites", "").split():
                    if s in wanted:
                        out.append(f"deb {uri} {s} {st.get('components', 'main')}")
    if not any(line.split()[2] == suite for line in out):
        raise EngineUnavailable(f"no apt source for Debian {suite} in {etc}/sources.list(.d): the base image "
                                f"is made from the host's Debian mirror; add one (e.g. a deb822 .sources file)")
    return list(dict.fromkeys(out))


def host_ca_bundle() -> str:
    """The CA bundle this host's OpenSSL trusts (``SSL_CERT_FILE`` or OpenSSL's default file)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (os.environ.get(paths.openssl_cafile_env), paths.cafile, paths.openssl_cafile):
        if candidate and os.path.isfile(candidate):
            return os.path.realpath(candidate)
    raise EngineUnavailable("no CA bundle on this host (ssl.get_default_verify_paths()): install ca-certificates")


# -- base image and ctxlake image ------------------------------------------------------------------

def check() -> None:
    """Raise :class:`EngineUnavailable` unless the tools are here and ``podman info`` works."""
    for tool in ("podman", "runc", "mmdebstrap"):
        if not shutil.which(tool):
            raise EngineUnavailable(f"{tool} is not installed: apt-get install podman runc mmdebstrap")
    r = podman("info", "--format", "{{.Store.GraphDriverName}}", check=False, timeout=120)
    if r.returncode != 0:
        raise EngineUnavailable(f"podman info failed: {(r.stderr or r.stdout).strip()[-500:]}")


def _rootfs(sources: list[str], ca: str) -> str:
    """Path of the cached mmdebstrap tarball for these sources and CA bundle (made when missing)."""
    with open(ca, "rb") as fh:
        ca_bytes = fh.read()
    key = hashlib.sha256("\n".join([SUITE, *PACKAGES, *sources]).encode() + ca_bytes).hexdigest()[:12]
    tar = os.path.join(CACHE, f"rootfs-{SUITE}-{key}.tar")
    if os.path.exists(tar):
        return tar
    pip_conf = os.path.join(CACHE, "pip.conf")
    with open(pip_conf, "w") as fh:
        fh.write("[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")
    partial = tar + ".partial"
    cmd = ["mmdebstrap", "--quiet", "--format=tar", "--variant=minbase", f"--include={','.join(PACKAGES)}",
           f"--customize-hook=upload {ca} /etc/ssl/certs/ca-certificates.crt",
           f"--customize-hook=upload {pip_conf} /etc/pip.conf",
           SUITE, partial, *sources]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"mmdebstrap failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    os.replace(partial, tar)
    for old in glob.glob(os.path.join(CACHE, f"rootfs-{SUITE}-*.tar")):
        if old != tar:
            os.unlink(old)
    return tar


def ensure_base() -> dict:
    """Make :data:`BASE_IMAGE` unless it is in storage already, then prove a container starts in it.

    :returns: ``{"image", "seconds", "made"}`` (``made`` false when it was already there).
    :raises EngineUnavailable: ``true`` does not run in the base (the engine cannot start containers).
    :raises RuntimeError: mmdebstrap failed.
    """
    check()
    start = time.monotonic()
    made = not image_exists(BASE_IMAGE)
    if made:
        tar = _rootfs(apt_sources(), host_ca_bundle())
        podman("import", "--quiet", tar, BASE_IMAGE, timeout=900)
    r = podman("run", "--rm", "--network=host", BASE_IMAGE, "true", check=False, timeout=300)
    if r.returncode != 0:
        raise EngineUnavailable(f"podman cannot start a container: {(r.stderr or r.stdout).strip()[-800:]}")
    return {"image": BASE_IMAGE, "seconds": round(time.monotonic() - start, 1), "made": made}


def image_size(name: str = IMAGE) -> int:
    """Bytes of ``name``'s layers as the engine reports them."""
    return int(podman("image", "inspect", "--format", "{{.Size}}", name).stdout.strip())


def build(tag: str = IMAGE, log=None) -> dict:
    """Build the repository's Dockerfile on :data:`BASE_IMAGE` as ``tag`` (layers cached).

    :returns: ``{"image", "seconds", "size_bytes", "base_seconds"}``.
    :raises subprocess.CalledProcessError: the build failed (its output went to ``log``, default stderr).
    """
    base = ensure_base()
    start = time.monotonic()
    podman("build", "--network=host", "--layers", f"--build-arg=PYTHON_IMAGE={BASE_IMAGE}", "-t", tag,
           "-f", os.path.join(ROOT, "Dockerfile"), ROOT, stdout=log or sys.stderr, stderr=subprocess.STDOUT,
           timeout=1800)
    seconds = round(time.monotonic() - start, 1)
    return {"image": tag, "seconds": seconds, "size_bytes": image_size(tag), "base_seconds": base["seconds"]}


def main(argv: list[str] | None = None) -> int:
    """``check`` or ``image [--json]``; see the module docstring for exit codes."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m tests.image.engine")
    p.add_argument("action", choices=["check", "image"])
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        if args.action == "check":
            check()
            ensure_base()
            print(f"engine ok: podman starts containers ({BASE_IMAGE})")
            return 0
        out = build()
    except EngineUnavailable as exc:
        print(f"no container engine can start here: {exc}", file=sys.stderr)
        return EX_TEMPFAIL
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or "").strip()[-2000:] or "see the build output above"
        print(f"image build failed: {' '.join(map(str, exc.cmd[:3]))} exited {exc.returncode}: {detail}",
              file=sys.stderr)
        return 1
    except RuntimeError as exc:
        print(f"image build failed: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['image']}: built in {out['seconds']} s (base ready in {out['base_seconds']} s), "
              f"{out['size_bytes'] / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
