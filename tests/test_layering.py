"""The import graph keeps its layers (issue 20), read from the source with :mod:`ast`, so an
import inside a function counts as much as one at the top:

- role scripts (``ROLE_SCRIPTS``) import only ``lib/``, never each other (``ctxlake sync`` becomes
  ``syncd.py``'s process, syncd runs ``maint.py`` as one);
- ``lib/`` never imports a role script, ``tests/`` or ``bench/``;
- the foundation (``FOUNDATION``) imports nothing above it, the store seam (``lib/store/``) only
  itself and the foundation; no cycle among module-level imports;
- ``tests/`` never imports ``bench/`` (what both need lives in ``tests/support/``);
- role scripts stay parse, wire and loop: ``maint.py``, ``syncd.py`` and ``ctxlake.py`` within
  their length (``ROLE_SCRIPT_LINES``).

The hook's and the MCP server's import sets are ``tests/test_import_discipline.py``'s."""
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


ROLE_SCRIPTS = ("ctxlake", "syncd", "maint", "hook", "mcp_server", "ctxctl", "fleet_operator")
"""The processes' entry points at the top of the checkout (docs/architecture.md)."""


FOUNDATION = ("lib.paths", "lib.keys", "lib.clock", "lib.jsonfast", "lib.sanitize", "lib.ulid", "lib.logs",
              "lib.mcp_records")
"""The bottom layer: value rules every process shares. Each imports the standard library and
other foundation modules only (the hook imports most of them, so nothing heavy hides here)."""


def _module_name(rel: str) -> str:
    name = rel[:-3].replace(os.sep, ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _top_level_imports(path: str) -> set[str]:
    """Like :func:`imports_of`, for the statements that run at import time only (not inside a
    function or class body)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    out: set[str] = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        else:
            stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))
    return out


def _graph(top_level_only: bool = False) -> dict[str, set[str]]:
    """``{lib module: the lib modules it imports}`` (``lib.store`` for ``from lib import store``)."""
    files = {_module_name(rel): full for rel, full in python_files("lib")}
    graph = {}
    for mod, full in files.items():
        deps = set()
        for m in (_top_level_imports(full) if top_level_only else imports_of(full)):
            while m and m not in files:
                m = m.rpartition(".")[0]
            if m and m not in (mod, "lib"):
                deps.add(m)
        graph[mod] = deps
    return graph


def _all_imports(path: str) -> set[str]:
    """:func:`imports_of` plus ``__import__("name")`` calls with a constant name."""
    out = imports_of(path)
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__" \
                and node.args and isinstance(node.args[0], ast.Constant):
            out.add(node.args[0].value)
    return out


PROJECT = set(ROLE_SCRIPTS) | {"lib", "tests", "bench"}


def test_role_scripts_import_only_lib_and_never_each_other():
    bad = {}
    for name in ROLE_SCRIPTS:
        ours = {m for m in _all_imports(os.path.join(ROOT, name + ".py")) if m.split(".")[0] in PROJECT}
        wrong = sorted(m for m in ours if m.split(".")[0] != "lib")
        if wrong:
            bad[name + ".py"] = wrong
    assert not bad, f"role scripts importing other role scripts, tests or bench: {bad}"


def test_lib_never_imports_a_role_script_tests_or_bench():
    bad = {}
    for rel, full in python_files("lib"):
        wrong = sorted(m for m in _all_imports(full) if m.split(".")[0] in PROJECT - {"lib"})
        if wrong:
            bad[rel] = wrong
    assert not bad, bad


def test_the_foundation_and_the_store_seam_import_nothing_above_them():
    graph = _graph()
    above = {m: sorted(d for d in deps if d not in FOUNDATION) for m, deps in graph.items() if m in FOUNDATION}
    assert not {m: d for m, d in above.items() if d}, f"foundation modules importing higher layers: {above}"
    store_ok = set(FOUNDATION) | {m for m in graph if m == "lib.store" or m.startswith("lib.store.")}
    store = {m: sorted(deps - store_ok) for m, deps in graph.items() if m == "lib.store" or m.startswith("lib.store.")}
    assert not {m: d for m, d in store.items() if d}, f"the store seam importing higher layers: {store}"


def test_no_import_cycle_at_import_time():
    """Between ``lib`` modules, module-level imports form no cycle (a function may import lazily
    what would close one: that import runs after both modules are loaded)."""
    graph = _graph(top_level_only=True)
    state: dict[str, int] = {}
    cycles = []

    def visit(m, trail):
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(trail[trail.index(d):] + [d] if d in trail else [m, d])
            elif d not in state:
                visit(d, trail + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles


ROLE_SCRIPT_LINES = {"maint": 120, "syncd": 200, "ctxlake": 350}
"""Role scripts parse, wire and loop (docs/architecture.md "Modules"): the maintenance pass,
syncd's pass and each verb's logic live in ``lib/``, so these stay a page or two."""


def test_role_scripts_stay_parse_wire_and_loop():
    long = {}
    for name, limit in ROLE_SCRIPT_LINES.items():
        with open(os.path.join(ROOT, name + ".py"), encoding="utf-8") as fh:
            n = sum(1 for _ in fh)
        if n > limit:
            long[name + ".py"] = (n, limit)
    assert not long, f"role scripts past their length (lines, limit): move the logic into lib/: {long}"
