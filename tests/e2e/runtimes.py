"""The agent CLIs the e2e tests drive: pinned versions, where ``make e2e`` installs them, and
the installer itself.

Both live in ``.cache/e2e/`` inside the checkout (ignored by git), one folder per version, so a
pin change installs beside the old one and nothing is ever installed globally:

- Claude Code: ``npm install --prefix .cache/e2e/claude-code-<v> @anthropic-ai/claude-code@<v>``
  (the native binary comes from the npm package ``@anthropic-ai/claude-code-linux-x64``);
- Hermes: a virtualenv ``.cache/e2e/hermes-<v>`` with ``hermes-agent[mcp]==<v>`` (the ``mcp``
  extra is Hermes' own MCP client).

Run as a script (``make e2e`` does)::

    python tests/e2e/runtimes.py install     # exit 0 installed, 75 registry unreachable, 1 other failure

Exit 75 (``EX_TEMPFAIL``) only when npm or pip failed *and* their output names a network error
(DNS, refused or reset connection, timeout); any other failure is 1, so a broken pin or a broken
package can never pass as "offline". The versions may be overridden with
``CTXLAKE_E2E_CLAUDE_CODE`` / ``CTXLAKE_E2E_HERMES`` to verify another release.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, ".cache", "e2e")
CLAUDE_CODE_VERSION = os.environ.get("CTXLAKE_E2E_CLAUDE_CODE") or "2.1.332"
HERMES_VERSION = os.environ.get("CTXLAKE_E2E_HERMES") or "0.19.0"
EX_TEMPFAIL = 75
STAMP = ".ctxlake-e2e-installed"

NETWORK_ERRORS = re.compile(
    r"\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ERR_SOCKET_TIMEOUT"
    r"|NewConnectionError|ConnectTimeoutError|ReadTimeoutError|ProxyError|SSLError"
    r"|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known"
    r"|Network is unreachable|Connection refused|Connection reset by peer|network request to .* failed)")


def claude_dir(version: str = CLAUDE_CODE_VERSION) -> str:
    return os.path.join(CACHE, f"claude-code-{version}")


def hermes_dir(version: str = HERMES_VERSION) -> str:
    return os.path.join(CACHE, f"hermes-{version}")


def claude_bin(version: str = CLAUDE_CODE_VERSION) -> str | None:
    """The installed ``claude`` executable for ``version``, or ``None``."""
    d = claude_dir(version)
    path = os.path.join(d, "node_modules", ".bin", "claude")
    return path if os.path.exists(os.path.join(d, STAMP)) and os.access(path, os.X_OK) else None


def hermes_bin(version: str = HERMES_VERSION) -> str | None:
    """The installed ``hermes`` executable for ``version``, or ``None``."""
    d = hermes_dir(version)
    path = os.path.join(d, "bin", "hermes")
    return path if os.path.exists(os.path.join(d, STAMP)) and os.access(path, os.X_OK) else None


class InstallFailed(Exception):
    """An install step failed; ``network`` is True when its output names a network error."""

    def __init__(self, what: str, output: str):
        self.what, self.output = what, output
        m = NETWORK_ERRORS.search(output)
        self.network = m is not None
        self.evidence = m.group(0) if m else None
        super().__init__(f"{what} failed" + (f" (network: {self.evidence})" if m else ""))


def _run(what: str, argv: list[str], **kw) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, **kw)
    except FileNotFoundError as exc:  # no npm / python on this machine: a failure, never a skip
        raise InstallFailed(what, f"cannot run {argv[0]}: {exc}") from None
    out = (r.stdout or "") + (r.stderr or "")
    if r.returncode != 0:
        raise InstallFailed(what, out)
    return out


def _env() -> dict:
    env = dict(os.environ)
    env.update(npm_config_update_notifier="false", npm_config_fund="false", npm_config_audit="false",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def install_claude(version: str = CLAUDE_CODE_VERSION) -> str:
    """Install Claude Code ``version`` under ``.cache/e2e`` (no-op when present); its binary path."""
    if claude_bin(version):
        return claude_bin(version)
    d = claude_dir(version)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    try:
        _run(f"npm install @anthropic-ai/claude-code@{version}",
             ["npm", "install", "--prefix", d, "--no-audit", "--no-fund", "--no-save", f"@anthropic-ai/claude-code@{version}"],
             env=_env())
        path = os.path.join(d, "node_modules", ".bin", "claude")
        out = _run("claude --version", [path, "--version"], env=_env(), timeout=120)
        if not out.strip().startswith(version):
            raise InstallFailed("claude --version", f"expected {version}, got {out.strip()!r}")
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise
    open(os.path.join(d, STAMP), "w").write(version + "\n")
    return path


def install_hermes(version: str = HERMES_VERSION) -> str:
    """Install hermes-agent ``version`` (with its ``mcp`` extra) in its own virtualenv under
    ``.cache/e2e`` (no-op when present); its ``hermes`` path."""
    if hermes_bin(version):
        return hermes_bin(version)
    d = hermes_dir(version)
    shutil.rmtree(d, ignore_errors=True)
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    try:
        _run("python -m venv", [base_python, "-m", "venv", d])
        _run(f"pip install hermes-agent[mcp]=={version}",
             [os.path.join(d, "bin", "python"), "-m", "pip", "install", "-q", f"hermes-agent[mcp]=={version}"], env=_env())
        out = _run("hermes-agent version", [os.path.join(d, "bin", "python"), "-c",
                                            "import importlib.metadata as m; print(m.version('hermes-agent'))"])
        if out.strip() != version:
            raise InstallFailed("hermes-agent version", f"expected {version}, got {out.strip()!r}")
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise
    open(os.path.join(d, STAMP), "w").write(version + "\n")
    return os.path.join(d, "bin", "hermes")


def main(argv: list[str]) -> int:
    if argv != ["install"]:
        print(__doc__)
        return 2
    jobs = {"Claude Code " + CLAUDE_CODE_VERSION: install_claude, "Hermes " + HERMES_VERSION: install_hermes}
    failures = []
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(fn) for name, fn in jobs.items()}
        for name, fut in futures.items():
            try:
                print(f"e2e: {name}: {os.path.relpath(fut.result(), ROOT)}")
            except InstallFailed as exc:
                failures.append((name, exc))
    if not failures:
        return 0
    for name, exc in failures:
        print(f"e2e: installing {name}: {exc}", file=sys.stderr)
        if not exc.network:
            print("\n".join(exc.output.splitlines()[-30:]), file=sys.stderr)
    if all(exc.network for _, exc in failures):
        print("e2e: SKIPPED — a package registry is unreachable (" +
              "; ".join(f"{name}: {exc.evidence}" for name, exc in failures) + "); the e2e tests of "
              + ", ".join(name for name, _ in failures) + " are skipped", file=sys.stderr)
        return EX_TEMPFAIL
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
