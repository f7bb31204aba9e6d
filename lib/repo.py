"""Repository identity for a path: root, normalized ``origin`` URL, branch, HEAD sha.

Leases are keyed by ``repo_id`` + repo-relative path (:func:`canonical_path`: symlinks, ``.``,
``..`` and case resolved, so every spelling of one file is one key) and every clone of one
repository shares them (docs/design.md §9): ``repo_id`` is the ``origin`` URL normalized to ``host/owner/name`` (scheme,
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
    branch, sha = head(root)
    return {"root": root, "repo_id": repo_id(root), "branch": branch, "git_sha": sha}


def repo_id(root: str) -> str:
    """The identity of working tree ``root``: its normalized ``origin`` URL, else ``root``."""
    url = origin_url(root)
    return normalize_remote(url) if url else root


_FOLDS: dict = {}


def folds_case(root: str) -> bool:
    """True when the file system holding working tree ``root`` folds case (``.GIT`` names the
    same entry as ``.git``, as on macOS and Windows defaults). One stat, cached per root."""
    if root not in _FOLDS:
        upper = os.path.join(root, ".GIT")
        try:
            _FOLDS[root] = os.path.lexists(upper) and os.path.samefile(upper, os.path.join(root, ".git"))
        except OSError:
            _FOLDS[root] = False
    return _FOLDS[root]


def _stored_case(path: str) -> str:
    """``path`` (absolute, symlinks resolved) with each existing component spelled as its
    directory stores it (case-folding file systems accept any case); the first missing
    component and what follows are kept as given."""
    head, parts = os.sep, [p for p in path.split(os.sep) if p]
    for i, part in enumerate(parts):
        try:
            names = os.listdir(head)
        except OSError:
            return os.path.join(head, *parts[i:])
        if part not in names:
            folded = [n for n in names if n.casefold() == part.casefold()]
            if not folded:
                return os.path.join(head, *parts[i:])
            part = folded[0]
        head = os.path.join(head, part)
    return head


def canonical_path(path: str, cwd: str | None = None) -> tuple[str, str] | None:
    """``(root, repo-relative path)`` naming ``path`` the way its repository sees it, or ``None``
    outside every git working tree. Every spelling of one file gives one answer (docs/design.md §9):

    - relative paths are taken against ``cwd``; ``.``, ``..``, repeated ``/`` are resolved;
    - symlinks are resolved (:func:`os.path.realpath`) *before* ``..`` is applied, so
      ``link/../x`` means what the file system means. A symlink is keyed by its target: one
      inside the working tree gives the target's path; one pointing into another repository
      gives that repository's root; one pointing outside every repository gives ``None``
      (refused: "not inside a git repository");
    - an existing directory, a path ending in ``/`` (or ``/.``, ``/..``) is a directory and its
      relative path ends in ``/``; the root itself is ``/`` (the whole repository);
    - on a file system that folds case (:func:`folds_case`) existing components take the case
      the directory stores; a component that does not exist yet keeps the case given.

    Reads the file system (``lstat``, ``listdir`` only where case folds); no ``git``.
    """
    full = path if os.path.isabs(path) or not cwd else os.path.join(cwd, path)
    is_dir = full.endswith((os.sep, "/")) or os.path.basename(full) in (".", "..")
    real = os.path.realpath(full)
    if os.path.isdir(real):
        is_dir = True
    root = find_root(real if os.path.isdir(real) else os.path.dirname(real))
    if not root:
        return None
    if folds_case(root):
        real, root = _stored_case(real), _stored_case(root)
    rel = os.path.relpath(real, root).replace(os.sep, "/")
    if rel == ".":
        return root, "/"
    return root, rel + "/" if is_dir else rel


def locate(path: str, cwd: str | None = None) -> dict:
    """``{"root", "repo_id", "path"}`` for ``path`` by :func:`canonical_path` (``path`` is the
    repo-relative key part of a lease), with ``repo_id`` as in :func:`identify`; ``{}`` outside
    every repository."""
    where = canonical_path(path, cwd)
    if where is None:
        return {}
    root, rel = where
    return {"root": root, "repo_id": repo_id(root), "path": rel}


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` with ``/`` separators; a trailing ``/`` is kept (directory)."""
    rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    return rel + "/" if path.endswith("/") and not rel.endswith("/") else rel
