"""Repository identity for a path: root, normalized ``origin`` URL, branch, HEAD sha.

Leases are keyed by ``repo_id`` + repo-relative path so every clone of one repository shares
them (DESIGN.md §9): ``repo_id`` is the ``origin`` URL normalized to ``host/owner/name`` (scheme,
credentials, ``.git`` suffix and case of the host dropped; ``git@host:o/n`` = ``https://host/o/n``),
else the repository root path. Reads ``.git`` files directly — no ``git`` subprocess — because
the hook calls it on the agent's path. Standard library only.
"""
from __future__ import annotations

import os


def normalize_remote(url: str) -> str:
    """``git@github.com:Org/Repo.git`` and ``https://user:pw@GitHub.com/Org/Repo`` → ``github.com/Org/Repo``."""
    u = url.strip()
    scp = None
    if "://" not in u and ":" in u:
        left, _, right = u.partition(":")
        host = left.rsplit("@", 1)[-1]
        if host and "/" not in left and not right.startswith("/"):
            scp = (host, right)
    if scp:
        host, path = scp
    else:
        rest = u.split("://", 1)[-1]
        rest = rest.rsplit("@", 1)[-1] if "@" in rest.split("/", 1)[0] else rest
        host, _, path = rest.partition("/")
        host = host.split(":")[0] if host.count(":") == 1 and host.split(":")[1].isdigit() else host
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return f"{host.lower()}/{path}" if host else path


def find_root(path: str) -> str | None:
    """The nearest ancestor of ``path`` (or itself) holding ``.git``; ``None`` outside a repo."""
    p = os.path.abspath(path)
    if not os.path.isdir(p):
        p = os.path.dirname(p)
    while True:
        if os.path.exists(os.path.join(p, ".git")):
            return p
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


def _git_dir(root: str) -> str:
    g = os.path.join(root, ".git")
    if os.path.isfile(g):  # worktree or submodule: "gitdir: <path>"
        with open(g, encoding="utf-8", errors="replace") as fh:
            line = fh.read().strip()
        if line.startswith("gitdir:"):
            target = line[7:].strip()
            return target if os.path.isabs(target) else os.path.normpath(os.path.join(root, target))
    return g


def origin_url(root: str) -> str | None:
    """``remote.origin.url`` from the repository config, or ``None``."""
    gd = _git_dir(root)
    candidates = [os.path.join(gd, "config")]
    common = os.path.join(gd, "commondir")
    if os.path.exists(common):
        with open(common, encoding="utf-8") as fh:
            candidates.append(os.path.join(os.path.normpath(os.path.join(gd, fh.read().strip())), "config"))
    for cfg in candidates:
        try:
            with open(cfg, encoding="utf-8", errors="replace") as fh:
                section = None
                for line in fh:
                    s = line.strip()
                    if s.startswith("["):
                        section = s
                    elif section and section.replace(" ", "").lower() == '[remote"origin"]' and s.split("=", 1)[0].strip() == "url":
                        return s.split("=", 1)[1].strip()
        except OSError:
            continue
    return None


def head(root: str) -> tuple[str | None, str | None]:
    """``(branch, sha)`` of ``HEAD``; either may be ``None`` (detached HEAD has no branch)."""
    gd = _git_dir(root)
    try:
        with open(os.path.join(gd, "HEAD"), encoding="utf-8") as fh:
            ref = fh.read().strip()
    except OSError:
        return None, None
    if not ref.startswith("ref:"):
        return None, ref or None
    name = ref[4:].strip()
    branch = name[len("refs/heads/"):] if name.startswith("refs/heads/") else name
    for base in (gd,):
        try:
            with open(os.path.join(base, name), encoding="utf-8") as fh:
                return branch, fh.read().strip()
        except OSError:
            pass
        try:
            with open(os.path.join(base, "packed-refs"), encoding="utf-8") as fh:
                for line in fh:
                    parts = line.split()
                    if len(parts) == 2 and parts[1] == name:
                        return branch, parts[0]
        except OSError:
            pass
    return branch, None


def identify(path: str) -> dict:
    """``{"root", "repo_id", "branch", "git_sha"}`` for the repository holding ``path`` (values may
    be ``None``); ``{}`` outside a repository."""
    root = find_root(path)
    if not root:
        return {}
    url = origin_url(root)
    branch, sha = head(root)
    return {"root": root, "repo_id": normalize_remote(url) if url else root, "branch": branch, "git_sha": sha}


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` with ``/`` separators; a trailing ``/`` is kept (directory)."""
    rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    return rel + "/" if path.endswith("/") and not rel.endswith("/") else rel
