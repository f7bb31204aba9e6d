"""Header scanners (lib/code/scanners, docs/ctxctl.md "Header scanners") against the
tree-sitter path they replace: on every real file of a scanned language, the scanner either
falls back (``None``) or yields the identical outline, field by field (name, kind, signature,
byte range, line range, doc comment). Real files: tests/ctxctl/fixtures/real/ (sources in
tests/fixtures/NOTICE.md) and, for Python, modules of packages installed in the venv.

Per-language scanner tests add their own cases here or beside it; this file holds the oracle."""
from __future__ import annotations

import importlib.util
import os

import pytest

from lib.code import languages, outline, scanners, symbols
from tests.ctxctl.conftest import FIXTURES

REAL = os.path.join(FIXTURES, "real")


def tree_rows(path: str, data: bytes) -> list:
    """The tree-sitter path's outline of ``data`` as comparable tuples."""
    return rows(symbols.extract(languages.parse(path, data, skip_bodies=True)))


def rows(syms: list) -> list:
    return [(s.name, s.kind, s.signature, s.start, s.end, s.start_line, s.end_line, s.doc) for s in syms]


def agrees(path: str, data: bytes) -> bool | None:
    """``None`` when the scanner falls back on ``data``; else whether it equals the tree path
    (asserted field by field, so a failure shows the first differing row)."""
    got = scanners.outline(languages.backend_for(path), data)
    if got is None:
        return None
    assert rows(got) == tree_rows(path, data), path
    return True


def installed(package: str) -> str | None:
    spec = importlib.util.find_spec(package)
    return list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None


REAL_SCANNED = sorted(n for n in os.listdir(REAL) if languages.backend_for(n) in scanners.MODULES)


@pytest.mark.parametrize("name", REAL_SCANNED or ["(no scanned language yet)"])
def test_a_scanner_equals_the_tree_sitter_outline_on_the_real_fixtures(name):
    if not REAL_SCANNED:
        assert scanners.MODULES == {}
        return
    with open(os.path.join(REAL, name), "rb") as fh:
        data = fh.read()
    assert agrees(name, data) is True, f"{name}: the scanner fell back on a benchmarked fixture"


def test_the_bypass_switch_turns_every_scanner_off(monkeypatch):
    monkeypatch.setenv(scanners.BYPASS_VAR, "off")
    assert not scanners.enabled()
    assert all(scanners.outline(language, b"") is None for language in languages.EXTENSIONS.values())
    monkeypatch.setenv(scanners.BYPASS_VAR, "on")
    assert scanners.enabled()


def test_outline_load_falls_back_to_the_tree_when_no_scanner_answers(tmp_path, monkeypatch):
    from lib.code import config as _config

    path = tmp_path / "m.py"
    path.write_text("def f(a,\n      b=2) -> int:\n    return a\n")
    monkeypatch.setenv(scanners.BYPASS_VAR, "off")
    _, parsed, syms = outline.load(str(path), _config.Config())
    assert parsed.tree is not None
    assert [(s.name, s.signature) for s in syms] == [("f", "def f(a, b=2) -> int")]


def test_outline_help_names_the_scanner_bypass():
    from lib.code import cli

    text = cli.build_parser().verbs["outline"].format_help()
    assert scanners.BYPASS_VAR + "=off" in text
    assert all(name in text for name in ("Python", "Markdown", "HTML"))
