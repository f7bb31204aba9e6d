"""Every store key and every local path is built by its owner (issue 20): store keys by
``lib/keys.py``, paths under ``CTXLAKE_HOME`` by ``lib/paths.py``. Grep-level, over the syntax
tree of ``lib/`` and the role scripts (docstrings and comments are free to name a key)."""
from __future__ import annotations

import ast
import os

from tests.conftest import ROOT
from tests.test_layering import ROLE_SCRIPTS, python_files

KEY_ROOTS = ("sessions/", "live/", "claims/", "snapshot/", "compacted/", "quarantine/", "handoffs/", "_meta/")
"""The first segment of every store key (lib/keys.py's layout)."""
HOME_DIRS = ("home", "spool_dir", "cache_dir", "state_dir", "quarantine_spool")
"""``Paths`` attributes naming a directory of ``CTXLAKE_HOME``: joining onto one builds a path."""
HOME_NAMES = ("spool", ".state", "cache", "hook-errors.log", "hooks.lock", "consumers", "snapshot.bin",
              "briefing.json", "roster.json", "leases.json", "sync.json", "ctxlake.toml")
"""Names of ``CTXLAKE_HOME``'s layout (lib/paths.py's module docstring)."""


def _sources():
    for rel, full in python_files("lib"):
        yield rel, full
    for name in ROLE_SCRIPTS:
        yield name + ".py", os.path.join(ROOT, name + ".py")


def _docstrings(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    for node in ast.walk(tree):  # an attribute docstring: a string statement right after an assignment
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.add(id(node.value))
    return out


def _leading_text(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return node.values[0].value
    return None


def key_literals(path: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every string in ``path`` (not a docstring) that starts a store key."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    docs = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for part in node.values:  # its parts are judged with it, not again on their own
                docs.add(id(part))
        if id(node) in docs:
            continue
        text = _leading_text(node)
        if text and text.startswith(KEY_ROOTS):
            hits.append((node.lineno, text))
    return hits


def home_joins(path: str) -> list[tuple[int, str]]:
    """``(line, source)`` of every ``os.path.join`` in ``path`` onto a ``CTXLAKE_HOME`` directory
    (a ``Paths`` attribute) or with a name of its layout."""
    src = open(path, encoding="utf-8").read()
    hits = []
    for node in ast.walk(ast.parse(src)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
                and ast.unparse(node.func.value) == "os.path"):
            continue
        first = node.args[0] if node.args else None
        onto_home = isinstance(first, ast.Attribute) and first.attr in HOME_DIRS and first.attr != "home" or (
            isinstance(first, ast.Attribute) and first.attr == "home" and "paths" in ast.unparse(first.value))
        named = any(_leading_text(a) in HOME_NAMES for a in node.args)
        if onto_home or named:
            hits.append((node.lineno, ast.unparse(node)))
    return hits


CACHE_FILES = ("roster", "leases", "briefing", "sync_status", "snapshot", "snapshot_pointer")
"""``Paths`` accessors of the files under ``cache/<fleet>/``."""
FILE_IO = ("open", "atomic_write", "read_object", "load", "loads", "write_bytes", "read_bytes", "stat", "remove", "unlink",
           "replace", "rename")
"""Calls that open, write, move or inspect a file (``json.load(s)`` reads one)."""


def cache_file_io(path: str) -> list[tuple[int, str]]:
    """``(line, function)`` of every function in ``path`` that names a cache file
    (``<...>paths.roster(...)`` and its siblings) and itself does file I/O."""
    hits = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
        names_cache = any(isinstance(c.func, ast.Attribute) and c.func.attr in CACHE_FILES
                          and ast.unparse(c.func.value).endswith("paths") for c in calls)
        does_io = any((isinstance(c.func, ast.Name) and c.func.id in FILE_IO)
                      or (isinstance(c.func, ast.Attribute) and c.func.attr in FILE_IO
                          and ast.unparse(c.func.value) in ("os", "json", "jsonfast", "spool", "fh", "Path"))
                      for c in calls)
        if names_cache and does_io:
            hits.append((node.lineno, node.name))
    return hits


def test_cache_files_are_read_and_written_by_lib_cache_view_only():
    """``cache/<fleet>/*`` has one owner (issue 20): a function elsewhere may name a cache file
    and hand it to ``lib.cache_view`` (or to ``lib.memory.snapshot``'s SQLite reader), never open it."""
    owners = {os.path.join("lib", "cache_view.py"), os.path.join("lib", "paths.py")}
    bad = {rel: cache_file_io(full) for rel, full in _sources() if rel not in owners}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_store_keys_are_built_by_lib_keys_only():
    bad = {rel: key_literals(full) for rel, full in _sources() if rel != os.path.join("lib", "keys.py")}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_local_paths_are_built_by_lib_paths_only():
    bad = {rel: home_joins(full) for rel, full in _sources() if rel != os.path.join("lib", "paths.py")}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_the_checks_find_what_they_look_for(tmp_path):
    """The detectors are only as good as their recall: feed them each shape they must catch."""
    probe = tmp_path / "probe.py"
    probe.write_text('"""live/ in a docstring is free."""\nimport os\n'
                     'K = f"live/{fleet}/roster.json"\nP = "claims/events/"\n'
                     'def f(paths, cfg):\n    """snapshot/ here too."""\n'
                     '    os.path.join(paths.state_dir, "x")\n    os.path.join(cfg.paths.home, "y")\n'
                     '    os.path.join(base, "hooks.lock")\n    os.path.join(cwd, "src")\n')
    assert [t for _, t in key_literals(str(probe))] == ["live/", "claims/events/"]
    assert len(home_joins(str(probe))) == 3
    probe.write_text("import json\ndef a(cfg):\n    with open(cfg.paths.roster(f)) as fh:\n        return json.load(fh)\n"
                     "def b(paths):\n    p = paths.leases(f)\n    os.stat(p)\n"
                     "def c(cfg):\n    return cache_view.read_json(cfg.paths.briefing(f))\n")
    assert [name for _, name in cache_file_io(str(probe))] == ["a", "b"]
