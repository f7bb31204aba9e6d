"""Header scanners: ``outline`` and ``symbol`` without a tree-sitter parse (issue #24).

Why a second path: measured with callgrind, tree-sitter's parse of a file's kept headers alone
(bodies left out, lib/code/skeleton.py) costs more than Universal Ctags' whole pass for most
languages, so no tuning of the Python around the parse reaches the budget of docs/ctxctl.md
(parse CPU per 1,000 lines at or below ctags'). A scanner reads a file's definitions straight
from its bytes with compiled regular expressions and bracket/indentation matching, the way
ctags does, and yields the same :class:`lib.code.symbols.Symbol` rows the tree-sitter path
yields (names, kinds, whole signatures, line ranges, doc comments).

Contract of a scanner module ``lib.code.scanners.<language>``: one function
``outline(data: bytes) -> list[Symbol] | None``. It returns the symbols in source pre-order,
or ``None`` whenever its own checks cannot vouch for the answer (an unterminated string or
comment, brackets that do not balance, a construct it does not model): the caller then parses
with tree-sitter as before. A scanner never guesses. Its agreement with the tree-sitter path
is a test over real files (``tests/ctxctl/test_scanners.py``): every file either falls back or
gives the identical outline.

Who uses it: :func:`lib.code.outline.load` for ``outline`` and ``symbol`` (not for
``symbol --compact``, which folds tree nodes, nor ``deps``, which reads imports from the tree).
A scanned file reports no syntax errors (exit code 3 comes from tree-sitter only), so a scanner
falls back wherever its checks see a broken file.

``CTXCTL_SCANNERS=off`` in the environment turns the scanners off (every file is parsed by
tree-sitter): the bypass for a suspected scanner bug, and the oracle the tests compare with.
"""
from __future__ import annotations

import os

MODULES = {
    "c": "lib.code.scanners.c",
    "go": "lib.code.scanners.go",
    "java": "lib.code.scanners.java",
    "markdown": "lib.code.scanners.markdown",
    "css": "lib.code.scanners.css",
    "html": "lib.code.scanners.html",
    "python": "lib.code.scanners.python",
}
"""Backend name (lib/code/languages.py) → the module holding its scanner. A language missing
here is always parsed by tree-sitter."""

BYPASS_VAR = "CTXCTL_SCANNERS"


def enabled(environ=None) -> bool:
    """False when ``CTXCTL_SCANNERS`` is ``off`` (also ``0``, ``false``, ``no``), else True."""
    value = (os.environ if environ is None else environ).get(BYPASS_VAR, "")
    return value.strip().lower() not in ("off", "0", "false", "no")


def supports(language: str) -> bool:
    """True when ``language`` has a scanner and scanners are on."""
    return language in MODULES and enabled()


_NOT_CONTROL = bytes(b for b in range(256) if not (b < 32 or b == 127) or b in (9, 10, 13))
"""Every byte but the C0 controls (tab, newline and carriage return excepted) and DEL."""


def plain(data: bytes) -> bool:
    """True when ``data`` is text a scanner may read: valid UTF-8 without a byte-order mark, and
    no control byte other than tab, newline and carriage return. tree-sitter reads a NUL, a form
    feed, a vertical tab or an invalid byte by rules of its own (an error node, a token split, a
    replacement name), so a file holding one always goes to the tree path."""
    if data.translate(None, _NOT_CONTROL):
        return False
    if data.isascii():
        return True
    if data.startswith(b"\xef\xbb\xbf"):
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def outline(language: str, data: bytes) -> list | None:
    """The symbols of ``data`` by ``language``'s scanner, or ``None`` when it has none, when
    scanners are off, or when the scanner cannot vouch for this file (see the module
    docstring). ``data`` is the file's bytes as read; a file that is not :func:`plain` text
    always falls back."""
    if not supports(language) or not plain(data):
        return None
    module = __import__(MODULES[language], fromlist=["outline"])
    return module.outline(data)
