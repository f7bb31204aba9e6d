"""Fixtures for the image tests: the built image, a host directory, and the real hook payloads the
agent side replays.

These tests run under ``make image-test``, which builds the image and then sets
``CTXLAKE_IMAGE_REQUIRE=1`` (a missing image or engine is then a failure). Anywhere else — ``make
test``, a bare ``pytest tests`` — they skip, saying so: they take minutes and need Podman."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import FIXTURES
from tests.image import engine

UID = 10001
"""The Dockerfile's ``USER`` and the chart's ``podSecurityContext.runAsUser``."""
CAPTURED = os.path.join(FIXTURES, "captured", "claude-code-2.1.332", "hooks.json")
"""Hook payloads a real Claude Code 2.1.332 sent in two sessions (tests/fixtures/NOTICE.md)."""


@pytest.fixture(scope="session")
def image() -> str:
    """The image tag, once it exists in the project's engine storage."""
    reason = None
    if os.environ.get("CTXLAKE_IMAGE_REQUIRE") != "1":
        pytest.skip("the image tests run under `make image-test` (it builds the image, then sets CTXLAKE_IMAGE_REQUIRE=1)")
    if not shutil.which("podman"):
        reason = "podman is not installed: `make image-test` (apt-get install podman runc mmdebstrap)"
    elif not engine.image_exists(engine.IMAGE):
        reason = f"{engine.IMAGE} is not built: run `make image-test` (builds it, then runs these tests)"
    if reason:
        if os.environ.get("CTXLAKE_IMAGE_REQUIRE") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return engine.IMAGE


@pytest.fixture
def host_dir(tmp_path):
    """An empty directory on the host (``str``), owned by root like a fresh node's; a world-
    traversable parent so bind mounts work for any uid."""
    d = tmp_path / "node"
    d.mkdir()
    os.chmod(tmp_path, 0o755)
    return str(d)


def owned_dir(path: str) -> str:
    """``path`` created and handed to the image's user (what the chart's init container does)."""
    os.makedirs(path, exist_ok=True)
    os.chown(path, UID, UID)
    return path


def sessions(copies: int = 1) -> list[dict]:
    """The captured payloads, ``copies`` times, each copy under fresh session ids (the payloads'
    own ids with the copy number in digits 19..24 of the last group; copy 0 keeps them), in
    capture order."""
    payloads = json.load(open(CAPTURED))
    out = []
    for n in range(copies):
        for p in payloads:
            sid = p["session_id"]
            out.append(dict(p, session_id=f"{sid[:-12]}{n:06d}{sid[-6:]}"))
    return out


def replay(path: str) -> str:
    """Shell command an agent container runs: each NDJSON line of ``path`` (inside the container)
    through the image's hook role (one runtime process per event, as a runtime calls it), one
    answer per line on stdout; then it waits for the hooks' detached captures, as an agent
    container must before it ends (docs/kubernetes.md, "Agent pods": when PID 1 exits, the kernel
    kills every process left in the container)."""
    return (f'while IFS= read -r line; do printf "%s" "$line" | /app/docker-entrypoint.sh hook claude_code'
            f' || exit $?; done < {path} && flock "$CTXLAKE_HOME/spool/.state/hooks.lock" true')


def write_payloads(directory: str, name: str, payloads: list[dict]) -> str:
    """``payloads`` as ``directory/name.ndjson`` (readable by any uid); returns the file name."""
    os.makedirs(directory, exist_ok=True)
    os.chmod(directory, 0o755)
    path = os.path.join(directory, f"{name}.ndjson")
    with open(path, "w") as fh:
        fh.writelines(json.dumps(p) + "\n" for p in payloads)
    os.chmod(path, 0o644)
    return os.path.basename(path)


def run(image: str, *args: str, env: dict | None = None, volumes: dict | None = None, stdin: str | None = None,
        entrypoint: str | None = None, timeout: float = 300):
    """``podman run --rm --network=host`` of the image's entrypoint (or ``entrypoint``) with
    ``args``; ``volumes`` maps host path → container path; returns the CompletedProcess (text, not
    checked). The container runs as the image's own user."""
    cmd = ["run", "--rm", "-i" if stdin is not None else "--tty=false", "--network=host"]
    if entrypoint:
        cmd += ["--entrypoint", entrypoint]
    for k, v in (env or {}).items():
        cmd += ["-e", f"{k}={v}"]
    for host, ctr in (volumes or {}).items():
        cmd += ["-v", f"{host}:{ctr}"]
    return engine.podman(*cmd, image, *args, input=stdin, check=False, timeout=timeout)
