"""The Python header scanner (lib/code/scanners/python.py) against the tree-sitter outline it
replaces (docs/ctxctl.md "Header scanners"): on real modules of the packages installed in the
venv every file either falls back or yields identical rows (name, kind, signature, byte and line
range, doc comment), and the scanner falls back on what it does not model instead of guessing.

The oracle is :func:`tests.ctxctl.test_scanners.agrees` (the tree path with bodies left out)."""
from __future__ import annotations

import glob
import os
import sysconfig

import pytest

from lib.code import config as _config
from lib.code import outline, scanners
from lib.code.scanners import python as pyscan
from tests.ctxctl.test_scanners import agrees, installed, rows, tree_rows

SITE = sysconfig.get_paths()["purelib"]
SAMPLE_EVERY = 12
"""One installed module in this many (sorted by path) is checked: a few hundred files, so the
test stays well under 20 s on a loaded machine while covering every package."""


def _sample() -> list:
    paths = sorted(glob.glob(os.path.join(SITE, "**", "*.py"), recursive=True))
    return [p for i, p in enumerate(paths) if i % SAMPLE_EVERY == 0 and os.path.getsize(p) <= 400_000]


def test_the_python_scanner_equals_the_tree_on_installed_packages():
    sample = _sample()
    assert len(sample) >= 200, f"too few installed modules under {SITE}"
    same = fell = 0
    for path in sample:
        with open(path, "rb") as fh:
            data = fh.read()
        got = agrees(path, data)  # asserts the rows equal when the scanner answers
        if got is None:
            fell += 1
        else:
            same += 1
    # a scanner that falls back on most files saves nothing: measured 1.4% over all 5,433 modules
    assert fell <= len(sample) // 10, f"fell back on {fell} of {len(sample)}"
    assert same + fell == len(sample)


@pytest.mark.parametrize("module", ["boto3/session.py", "botocore/utils.py", "boto3/resources/factory.py"])
def test_the_benchmarked_modules_are_scanned_not_parsed(module):
    root = installed(module.split("/")[0])
    with open(os.path.join(os.path.dirname(root), module), "rb") as fh:
        data = fh.read()
    assert agrees(module, data) is True


CASES = {
    "trailing comments stay in the block they follow (tree-sitter's indentation scanner)":
        "def f():\n    return 1   # c\n    # trailing\n\nx = 1\n",
    "a comment less indented than the body ends it and documents the next statement":
        "def f():\n    pass\n  # weird\n    # more\nz = 1 # t\n",
    "comments popping nested blocks one by one":
        "def g():\n    if x:\n        pass\n      # c6\n     # c5\n  # c2\n# c0\ndef f(): pass\n",
    "a trailing comment on the previous statement is a doc comment; inside a one-line body it is not":
        "x = 1  # about x\ndef f(): pass\ndef g(): pass  # c\ndef h(): pass\n",
    "a comment after a block header belongs to the header":
        "class A:  # hdr\n    # first\n    x = 1\n    # d\n    y: int = 2\n",
    "one-line class bodies":
        "class A: x = 1\nclass B(Exception): pass\nclass C: ...\n",
    "decorators, comments inside a header, multi-line docstring":
        "@dec  # c\n# between\n@dec2(a,\n   b)\nasync def f(a, # z\n  b) -> dict[str, int]: # q\n"
        "    '''Doc\n    more\n\n    para'''\n",
    "assignment shapes":
        "a = b = 3\n(c, d) = 1, 2\n[e] = [1]\nf.g = 2\nh, *i = j\nk[0] = 1\nl: int\nm += 1\n"
        "n = lambda x=1: x\no = p == q\nr.s: int = 1\nt, = u\nos.environ['A'] = '1'\n",
    "strings and brackets that hide definitions":
        "s = '''\ndef not_a_def():\n'''\nt = (\n1,\ndef_ := 2)\nu = {'a': \"def x():\"}\n"
        "def real(a=\"):\", b={'k': [1, 2]}) -> 'x:y':\n    r'''doc \\''' ok'''\n",
    "a decorated class with a long decorator and a backslash":
        "@pytest.mark.parametrize('a,b', [" + ", ".join(f"({i}, {i + 1})" for i in range(60)) + "])\n"
        "class T(\\\n        Base):\n    \"\"\"Tests.\"\"\"\n    X = 1\n\n    def test(self, a, b):\n        pass\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_python_scanner_equals_the_tree_on_constructs_that_decide_rows(name):
    data = CASES[name].encode()
    assert agrees("m.py", data) is True, f"{name}: the scanner fell back"


FALLBACKS = {
    "unterminated string": "def f():\n    return 'x\n",
    "unterminated triple-quoted string": 'def f():\n    """doc\n',
    "unbalanced bracket": "def f(a, b:\n    pass\n",
    "mismatched brackets": "x = (1, 2]\ndef f(): pass\n",
    "tab indentation": "def f():\n\treturn 1\n",
    "semicolons": "import os; x = 1\n",
    "match statement": "match x:\n    case 1:\n        pass\n",
    "nested f-string quotes (3.12)": 'x = f"{d["k"]}"\ndef f(): pass\n',
    "inconsistent dedent": "def f():\n        a = 1\n    b = 2\n",
    "decorator without a definition": "@dec\nx = 1\n",
    "a block without a body": "def f():\n\nx = 1\n",
    "carriage returns": "def f():\r\n    pass\r\n",
    "a non-ASCII name": "def caf\u00e9():\n    pass\n",
    "f-string docstring": 'def f():\n    f"""doc {x}"""\n',
    "an assignment chain through a subscript": "v = w[0] = 1\n",
    "a parenthesised name as a target": "(a) = 1\n",
}


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_the_python_scanner_falls_back_where_it_cannot_vouch(name):
    assert pyscan.outline(FALLBACKS[name].encode()) is None, name


def test_a_scanned_outline_reads_docs_only_when_asked():
    data = b'def f(a,\n      b=2) -> int:\n    """Add.\n\n    More."""\n    return a\n'
    syms = pyscan.outline(data)
    assert [(s.name, s.signature) for s in syms] == [("f", "def f(a, b=2) -> int")]
    assert syms[0]._doc is not None and syms[0]._source is not None  # unread until asked
    assert syms[0].doc == "Add." and rows(syms) == tree_rows("m.py", data)


def test_outline_load_answers_from_the_scanner_without_a_tree(tmp_path, monkeypatch):
    monkeypatch.delenv(scanners.BYPASS_VAR, raising=False)
    path = tmp_path / "m.py"
    path.write_text("class A:\n    X = 1\n\n    def f(self, a,\n          b=2):\n        return a\n")
    _, parsed, syms = outline.load(str(path), _config.Config())
    assert parsed.tree is None and parsed.errors == 0
    assert [(s.name, s.kind, s.signature, s.start_line, s.end_line) for s in syms] == [
        ("A", "class", "class A", 1, 6), ("X", "var", "X = 1", 2, 2),
        ("f", "function", "def f(self, a, b=2)", 4, 6)]


def test_a_syntax_error_the_scanner_sees_still_exits_3(ctxctl, write):
    path = write("broken.py", "def ok():\n    pass\n\ndef broken(:\n    pass\n")
    r = ctxctl("outline", path)
    assert r.code == 3 and "symbol list may be incomplete" in r.err
