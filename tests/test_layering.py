"""The import graph keeps its layers (issue 20): ``tests/`` never imports ``bench/`` (what both
need lives in ``tests/support/``). Read from the source with :mod:`ast`, so an import inside a
function counts as much as one at the top."""
from __future__ import annotations

import ast
import os

from tests.conftest import ROOT


def imports_of(path: str) -> set[str]:
    """Every module name ``path`` imports (``import a.b`` → ``a.b``; ``from a import b`` → ``a``
    and ``a.b``), at any depth of the file, relative imports excluded."""
    tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def python_files(folder: str):
    """Every ``.py`` file under ``ROOT/folder``, as (path relative to ROOT, absolute path)."""
    for dirpath, dirnames, files in os.walk(os.path.join(ROOT, folder)):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "fixtures")]
        for name in sorted(files):
            if name.endswith(".py"):
                full = os.path.join(dirpath, name)
                yield os.path.relpath(full, ROOT), full


def test_tests_never_import_bench():
    bad = {rel: sorted(m for m in imports_of(full) if m == "bench" or m.startswith("bench."))
           for rel, full in python_files("tests")}
    assert not {k: v for k, v in bad.items() if v}, bad
