"""Inputs a red-team pass found where a header scanner (lib/code/scanners) answered and
differed from the tree-sitter path: each must now fall back or agree, field by field. Also the
inputs that made a scan's time grow with the square of the file: they fall back at once."""
from __future__ import annotations

import pytest

from lib.code import scanners
from tests.ctxctl.test_scanners import agrees

DIFFERED = [
    # Python: a tab ending a line (tree-sitter leaves it out of the block), form feed, vertical tab
    ("a.py", b"def f():\n    pass\t\n"), ("a.py", b"def f():\n    pass \t\n"), ("a.py", b"def f():\n    '''d'''\t\n"),
    ("a.py", b"def f(): pass\x0c\n"), ("a.py", b"x = 1\x0b\ny = 2\n"),
    # Python: backslash continuations around a block
    ("a.py", b"def f(): \\\n  '''doc'''\n"), ("a.py", b"def f(): \\\n\n  pass\n"), ("a.py", b"def f():\n  pass\n  \\\n\n"),
    ("a.py", b"def f(): pass \\\n"),
    # Python: control bytes
    ("a.py", b'X = "a\x00b"\n'), ("a.py", b"x=1\x1c\n"), ("a.py", b"a\x0cb: int\n"), ("a.py", b"class A:\n    '''a\x00b'''\n"),
    ("a.py", b"def f(): x = 1\x1d\n"),
    # C: a byte-order mark, NULs, a backslash-newline outside a directive
    ("a.c", b"\xef\xbb\xbfint f(void) { return 0; }\n"), ("a.c", b"// d \\\nint f(void) { return 0; }\n"),
    ("a.c", b"/* d */ \\\nint f(void) { return 0; }\n"), ("a.c", b"\x00\nint f(int a) { return 0; }\n"),
    ("a.c", b"#define A\x00 B\n"),
    # Go: a backslash-newline, a NUL, an invalid UTF-8 byte
    ("a.go", b"package p\nfunc f() \\\n{\n}\n"), ("a.go", b"package p\nfunc f() \x00{\n}\n"),
    ("a.go", b"package p\nfunc \xff(r R) M() {\n}\n"),
    # HTML: a line break inside a quoted id
    ("a.html", b'<div id="a\nb"></div>\n'), ("a.html", b"<div id='a\r\nb'></div>\n"), ("a.html", b'<div id="a\r\nb"></div>\n'),
]


@pytest.mark.parametrize("path,data", DIFFERED)
def test_what_the_red_team_found_falls_back_or_agrees(path, data):
    assert agrees(path, data) in (None, True)


@pytest.mark.parametrize("path,data", [
    ("a.c", b"#define X(a) \\\n  a + \\\n  1\nint f(void) { return 0; }\n"),  # a continued directive
    ("a.html", b'<div id="ab"></div>\n'),
    ("a.py", b"def f(a,\n      b=2) -> int:\n    return a\n"),
])
def test_the_ordinary_neighbours_of_those_inputs_are_still_scanned(path, data):
    assert agrees(path, data) is True


@pytest.mark.parametrize("path,data", [
    ("a.py", b"x = (" * 5000 + b")" * 5000 + b"\n"),  # a round of pair removal per nesting level
    ("a.html", b"<div id=a>" * 4000 + b"</div>" * 4000),  # each open element's row reads its range
])
def test_deep_nesting_falls_back_instead_of_growing_quadratically(path, data):
    from lib.code import languages

    assert scanners.outline(languages.backend_for(path), data) is None


@pytest.mark.parametrize("data,expected", [
    (b"plain\ttext\r\n", True), ("caf\u00e9\n".encode(), True), (b"\xef\xbb\xbfx\n", False), (b"a\x00b", False),
    (b"a\x0cb", False), (b"a\x7fb", False), (b"\xff\xfe", False), (b"", True),
])
def test_plain_text_is_valid_utf8_without_a_bom_or_control_bytes(data, expected):
    assert scanners.plain(data) is expected
