"""``deps <file>``: a file's imports, each classified ``local``, ``external``, ``ignored`` or
``unresolved`` — anchored on the file, never on the working directory.

Project root: the nearest ancestor of the file's (canonical) directory holding ``.git``, else
the file's directory. Relative imports (``./``, ``../``, Python leading dots, Rust
``crate::``/``super::``/``self::`` and ``mod x;``, Ruby ``require_relative``, quoted
``#include``, path-prefixed Lua ``require``) are joined to the file's project-relative
directory and normalised (Rust ones are always local); the result is ``ignored`` when it
matches an ignore glob, else ``local``. Bare targets: ``ignored`` on a glob match; Rust
``x::…`` is ``local`` when ``mod x;`` is declared in the file; Python, Go, Java and C# probe
candidate files — under the project root → ``local``, only next to the file → ``unresolved``
(a local ``os.py`` shadowing the stdlib); a Python module of the file's own top-level package
(found beside that package, e.g. in site-packages) → ``local``; otherwise ``external``.

Ignore globs (``[paths] ignore``): a pattern without ``/`` must match one path segment, one with
``/`` the whole project-relative path; only ``*`` (crossing ``/``) and ``?``. Matching is
memoised, so hostile patterns stay polynomial. Only the project-relative part is matched, so
an ancestor directory outside the project cannot taint anything.
"""
from __future__ import annotations

import os
import posixpath

from lib.code import backends, outline, render, tokens
from lib.code.errors import PARSE
from lib.code.render import Result

_PROBES = {
    "python": ("{p}", "{p}.py", "{p}/__init__.py", "{p}.pyi"),
    "go": ("{p}", "{p}.go"),
    "java": ("{p}", "{p}.java"),
    "csharp": ("{p}", "{p}.cs"),
}


def glob_match(pattern: str, path: str) -> bool:
    """Whole-string glob match: ``*`` any run (including ``/``), ``?`` one character.

    Dynamic programming over (pattern position, path position), O(len(pattern) × len(path)),
    so a hostile pattern like ``*a*a*a…b`` cannot blow up."""
    n = len(path)
    row = [False] * (n + 1)
    row[0] = True
    for c in pattern:
        nxt = [False] * (n + 1)
        if c == "*":
            acc = False
            for j in range(n + 1):
                acc = acc or row[j]
                nxt[j] = acc
        else:
            for j in range(1, n + 1):
                nxt[j] = row[j - 1] and (c == "?" or c == path[j - 1])
        row = nxt
    return row[n]


def ignored(path: str, patterns) -> bool:
    """True when the normalised project-relative ``path`` matches an ignore glob."""
    path = path.strip("/")
    if not path:
        return False
    segments = path.split("/")
    for pat in patterns:
        if "/" in pat:
            if glob_match(pat.strip("/"), path):
                return True
        elif any(glob_match(pat, seg) for seg in segments):
            return True
    return False


def project_root(file_path: str) -> str:
    """Nearest ancestor of the file's canonical directory that contains ``.git`` (else that directory)."""
    start = os.path.dirname(os.path.realpath(file_path))
    here = start
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return start
        here = parent


def _join(rel_dir: str, target: str) -> str:
    joined = posixpath.normpath(posixpath.join(rel_dir, target)) if rel_dir not in ("", ".") else posixpath.normpath(target)
    return "" if joined == "." else joined


def _python_relative(rel_dir: str, target: str) -> str:
    dots = len(target) - len(target.lstrip("."))
    rest = target[dots:].replace(".", "/")
    base = rel_dir if rel_dir not in ("", ".") else ""
    for _ in range(dots - 1):
        base = posixpath.dirname(base)
    return _join(base, rest) if rest else (posixpath.normpath(base) if base else "")


def classify(language: str, target: str, detail, file_path: str, root: str, patterns, local_mods: set) -> str:
    """Kind of one import (``local``/``external``/``ignored``/``unresolved``); ``detail`` is the
    backend's extra tag (Rust ``use``/``mod``/``extern``, Ruby method, C include style)."""
    file_dir = os.path.dirname(os.path.realpath(file_path))
    rel_dir = os.path.relpath(file_dir, root).replace(os.sep, "/")
    rel_dir = "" if rel_dir == "." else rel_dir
    if language == "rust":
        if detail == "mod" or target.startswith(("crate::", "super::", "self::")) or target in ("crate", "super", "self"):
            return "local"
        if ignored(target.replace("::", "/"), patterns):
            return "ignored"
        if target.split("::")[0] in local_mods:
            return "local"
        return "external"
    relative = None
    if language == "python" and target.startswith("."):
        relative = _python_relative(rel_dir, target)
    elif target.startswith(("./", "../")) and language in ("typescript", "javascript", "lua", "ruby"):
        relative = _join(rel_dir, target)
    elif language == "ruby" and detail == "require_relative":
        relative = _join(rel_dir, target)
    elif language in ("c", "cpp") and detail == "local":
        relative = _join(rel_dir, target)
    if relative is not None:
        return "ignored" if ignored(relative, patterns) else "local"
    if ignored(target, patterns):
        return "ignored"
    probes = _PROBES.get(language)
    if probes:
        path = target.replace(".", "/") if language in ("python", "java", "csharp") else target
        if language == "java" and path.endswith("/*"):
            path = path[:-2]
        candidates = [p.format(p=path) for p in probes]
        if any(os.path.exists(os.path.join(root, c)) for c in candidates):
            return "local"
        if any(os.path.exists(os.path.join(file_dir, c)) for c in candidates):
            return "unresolved"
        if language == "python" and _own_package(file_dir, path, candidates):
            return "local"
    return "external"


def _own_package(file_dir: str, path: str, candidates: list) -> bool:
    """True when the Python import ``path`` (slashes) is a module of the file's own top-level
    package, importable from the file's own tree: the file sits in a package (a chain of
    ``__init__.py`` directories) whose top is ``path``'s first segment, and a candidate exists
    beside that top. ``boto3/session.py`` in site-packages (no ``.git``) importing
    ``boto3.utils`` is local; ``botocore`` beside it stays external (another package)."""
    top = file_dir
    if not os.path.exists(os.path.join(top, "__init__.py")):
        return False
    while os.path.exists(os.path.join(os.path.dirname(top), "__init__.py")) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
    if path.split("/")[0] != os.path.basename(top):
        return False
    return any(os.path.exists(os.path.join(os.path.dirname(top), c)) for c in candidates)


def collect(parsed, file_path: str, config) -> list:
    """``[{"target", "kind", "line"}]`` for a parsed file, in source order."""
    backend = backends.BACKENDS[parsed.language]
    if backend.imports is None:
        return []
    raw = backend.imports(parsed.tree.root_node, parsed.data)
    root = project_root(file_path)
    local_mods = {r[0] for r in raw if len(r) > 2 and r[2] == "mod"}
    out = []
    for item in raw:
        target, line = item[0], item[1]
        detail = item[2] if len(item) > 2 else None
        if not target:
            continue
        kind = classify(parsed.language, target, detail, file_path, root, config.paths.ignore, local_mods)
        out.append({"target": target, "kind": kind, "line": line})
    return out


def run(path: str, config, *, json_mode: bool = False, show_saved: bool = True, real: str | None = None,
        counter: tokens.Counter = tokens.EXACT) -> Result:
    """The ``deps`` command; ``counter`` counts the saved metric exactly or estimates it.

    :raises ExitError: 1 read failure, 2 unsupported extension."""
    src, parsed, _ = outline.load(path, config, real, extract=False)
    imports = collect(parsed, real or path, config)
    before = counter.count(src.text) if show_saved else 0
    after = counter.many(i["target"] for i in imports) if show_saved else 0
    code = PARSE if parsed.errors else 0
    warnings, diagnostic = [], None
    if parsed.errors:
        warnings.append(f"parse failed ({parsed.errors} error node(s)); import list may be incomplete")
        diagnostic = f"tree-sitter reported {parsed.errors} syntax error node(s); import list may be incomplete"
    if json_mode:
        env = render.envelope("deps", path=path, language=parsed.language, imports=imports)
        if show_saved:
            env["saved"] = counter.saved(before, after)
        return Result(render.dumps(env) + "\n", code, warnings, diagnostic)
    width = max([10] + [len(i["target"]) for i in imports])
    body = "".join(f"  {i['kind']:<9} {i['target']:<{width}}    L:{i['line']}\n" for i in imports)
    if show_saved:
        header = (f"# {path}  [{len(imports)} imports, {render.human_bytes(len(src.data))} -> "
                  f"{counter.figure(after)} tokens, saved ~{tokens.percent(before, after)}%]")
    else:
        header = f"# {path}  [{len(imports)} imports]"
    return Result(header + "\n" + body, code, warnings, diagnostic)
