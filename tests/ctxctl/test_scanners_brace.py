"""The C-like header scanners (lib/code/scanners: c, go, java, and the shared lexer clike)
against the tree-sitter path, on programs built to mislead a brace scan: braces and quotes in
strings, comments, character literals, Go raw strings, Java text blocks and annotation arrays,
anonymous classes, preprocessor conditionals that split braces. Every program must either fall
back (``None``) or give the tree path's outline field by field (the oracle of
tests/ctxctl/test_scanners.py); programs the tree path reads with errors must fall back.
The real fixtures are held to the same oracle in tests/ctxctl/test_scanners.py."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.code import languages, scanners, symbols
from lib.code.scanners import clike
from tests.ctxctl.test_scanners import agrees

C_PARTS = [
    "int f(int a) {\n  return a;\n}\n",
    "static const char* s = \"}{\";\n",
    "/* } { */\nvoid g(void) { char c = '}'; (void)c; }\n",
    "#define BRACE {\n",
    "#define CALL(x) \\\n  do { x; } while (0)\n",
    "#if X\nint h(void) {\n#else\nint h(int a) {\n#endif\n  return 0;\n}\n",
    "// a \"quote and a } brace\nint x;\n",
    "char *t = \"a\\\"}\";\n",
    "TEST_IMPL(foo) {\n  return 0;\n}\n",
    "struct s { int a; };\n",
    "/** Doc. */\nstatic unsigned long count_of(const char *p, size_t n)\n{\n  return n;\n}\n",
    "#include <stdio.h> /* not a doc */\nint after_include;\n",
    "#ifdef Y /* a doc */\nint in_branch(void) { return '{'; }\n#endif\n",
    "static int (*hook)(int, char*);\n",
    "int proto(int a, int b);\n",
    "STATIC_ASSERT(sizeof(int) == 4);\n",
    "/* A point. */\nstruct point { int x, y; /* } */ unsigned flag : 1; };\n",
    "typedef struct node { struct node *next; char tag[4]; } node_t, *node_p;\n",
    "typedef void (*visit_cb)(node_t *n);\n",
    "static struct { int depth; union { int i; float f; } u; } state = { 0 };\n",
    "enum color { RED, GREEN = '}', BLUE };\n",
    "struct holder { struct { int a; } inner; };\n",
]
GO_PARTS = [
    "func F(a int) (int, error) {\n\treturn a, nil\n}\n",
    "var s = `raw } { \"`\n",
    "const r = '}'\n",
    "// } {\nfunc (r *T) M() {}\n",
    "var (\n\ta = 1\n\tb = \"}\"\n)\n",
    "type T struct {\n\tA int `json:\"a}\"`\n}\n",
    "func G(x interface{}) {}\n",
    "/* { */\ntype I interface {\n\tM()\n}\n",
    "const (\n\tX = iota // x\n\tY\n)\n",
    "func H(\n\ta int,\n\tb string, // a comment\n) error {\n\treturn nil\n}\n",
    "var fn = func() {\n\t_ = \"{\"\n}\n",
    "type (\n\tA int\n\tB = A\n)\n",
    "func Generic[T any](v T) T { return v }\n",
]
JAVA_PARTS = [
    "String s = \"}{\";\n",
    "char c = '{';\n",
    "String t = \"\"\"\n    } {\n    \"\"\";\n",
    "void f() { Runnable r = new Runnable() { public void run() { } }; }\n",
    "@SuppressWarnings({\"a\", \"b\"}) int g() { return 0; }\n",
    "/* } */ int x, y;\n",
    "enum E { A { void m() {} }, B; int v; }\n",
    "/** Doc {@code x}. */\npublic <T> T get(Class<T> c) throws Exception { return null; }\n",
    "interface I { int K = 1; void m(); Object O = new Object() { public String toString() { return \"{\"; } }; }\n",
    "private final java.util.Map<String, java.util.List<Integer>> m = new java.util.HashMap<>();\n",
    "static { int z = 0; }\n",
    "abstract void a(int[] v);\n",
    "int[] arr = {1, 2};\n",
    "void local() { class L { void n() {} } }\n",
]


def _program(language: str, parts: list) -> bytes:
    body = "".join(parts)
    if language == "go":
        return ("package p\n\n" + body).encode()
    if language == "java":
        return ("package p;\n\nimport java.util.List;\n\nclass A {\n" + body + "}\n").encode()
    return body.encode()


EXAMPLE = {"c": "x.c", "go": "x.go", "java": "x.java"}
PARTS = {"c": C_PARTS, "go": GO_PARTS, "java": JAVA_PARTS}


@pytest.mark.parametrize("language", sorted(PARTS))
@settings(max_examples=120, deadline=None, derandomize=True)
@given(data=st.data())
def test_a_scanner_falls_back_or_agrees_on_misleading_programs(language, data):
    parts = data.draw(st.lists(st.sampled_from(PARTS[language]), min_size=1, max_size=6))
    agrees(EXAMPLE[language], _program(language, parts))


@pytest.mark.parametrize("language", sorted(PARTS))
def test_each_misleading_part_alone_falls_back_or_agrees(language):
    answered = 0
    for part in PARTS[language]:
        answered += agrees(EXAMPLE[language], _program(language, [part])) is True
    # the scan must answer for most of them, or the test above would prove nothing
    assert answered >= len(PARTS[language]) // 2, answered


BROKEN = {
    "c": ["int f(void) {\n  return 0;\n", "char *u = \"abc\nint x;\n", "int g(void) { }\n}\n",
          "/* never closed\nint y;\n",
          "#define HEAD(name) \\\nstruct name { \\\n  int *root; /* a comment */ \\\n}\n\nint z;\n"],
    "go": ["func F() {\n", "var s = \"abc\n", "var r = `never closed\n", "func G() {}\n}\n"],
    "java": ["void f() {\n", "String s = \"abc\n;", "/* never closed\n", "int x;\n}\n}\n"],
}


@pytest.mark.parametrize("language", sorted(BROKEN))
def test_a_file_tree_sitter_reads_with_errors_falls_back(language):
    for part in BROKEN[language]:
        data = _program(language, [part])
        assert languages.parse(EXAMPLE[language], data).errors, part
        assert scanners.outline(language, data) is None, part


def test_the_scan_pairs_braces_outside_literals_and_directives():
    dialect = clike.Dialect("c", preprocessor=True)
    data = b'#define X {\nint f(void) { return "}"[0] + \'{\'; } /* { */\n'
    pairs, directives = clike.groups(data, dialect)
    assert [(data[a:a + 1], data[b:b + 1]) for a, b in pairs] == [(b"{", b"}")]
    assert data[pairs[0][0] - 2:pairs[0][0]] == b") "
    assert [data[a:b] for a, b in directives] == [b"#define X {"]
    found = clike.scan(b"a { b { '}' } c }", clike.Dialect("java"))
    assert (found.opens, found.closes, found.depths) == ([2, 6], [16, 12], [0, 1])
    rust = clike.Dialect("rust", chars=False, lifetimes=True, raw=True, nested=True, multiline_strings=True)
    assert clike.scan(b"fn f<'a>(x: &'a str) { let c = '}'; let r = r#\"}\"#; }", rust).opens == [21]
    assert clike.scan(b"/* /* nested */ */ fn f() {}", rust) is None  # not paired: falls back
    # a lone quote after a brace in a literal: as many matches as brace bytes, still refused
    assert clike.scan(b"x = \"{\"; y = ' }", clike.Dialect("java")) is None


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.text(alphabet=" \t\n(),[]{};:=>-ab\x00é", max_size=40), max_size=8))
def test_bulk_header_signatures_equal_one_by_one(headers):
    raws = [h.encode() for h in headers]
    assert symbols.collapse_headers(raws) == [symbols.join_header([symbols.collapse_piece(r)]) for r in raws]


@pytest.mark.parametrize("name", ["libuv_core.c", "zap_json_encoder.go"])
def test_the_one_expression_pairing_equals_the_brace_by_brace_one(name):
    from tests.ctxctl.test_scanners import REAL

    module = __import__(scanners.MODULES[languages.backend_for(name)], fromlist=["DIALECT"])
    with open(os.path.join(REAL, name), "rb") as fh:
        data = fh.read()
    assert clike.groups(data, module.DIALECT) == clike._top_level(data, module.DIALECT)
    deep = b"int f(void) {" + b"{" * (clike.GROUP_DEPTH + 2) + b"}" * (clike.GROUP_DEPTH + 2) + b"}\n"
    dialect = __import__("lib.code.scanners.c", fromlist=["DIALECT"]).DIALECT
    assert clike.groups(deep, dialect) == ([(12, len(deep) - 2)], [])


def test_the_committed_expression_tables_are_current():
    """Every expression the C-like scanners define is in lib/code/scanners/_tables.py with the
    program ``re`` compiles for it today (regenerate: ``python -m lib.code.scanners.clike``)."""
    from lib.code.scanners import _tables

    found = clike.expressions()
    assert len(found) >= 30
    for expr in found:
        key = (expr.pattern, expr.flags)
        assert key in _tables.TABLE, expr.pattern[:80]
        assert _tables.TABLE[key] == clike.program(*key), expr.pattern[:80]


def test_a_scanned_outline_loads_no_re_module():
    """The scanner path of a cold call builds its expressions from the table: ``re`` (and the
    ``enum`` it pulls) is never imported, nor tree-sitter."""
    import subprocess
    import sys

    from tests.ctxctl.test_scanners import REAL

    code = ("import sys\nfrom lib.code import config, outline\n"
            "for name in ('libuv_core.c', 'zap_json_encoder.go', 'gson_Gson.java'):\n"
            "    _, parsed, syms = outline.load(sys.argv[1] + '/' + name, config.Config())\n"
            "    assert parsed.tree is None and syms, name\n"
            "print(sorted(m for m in ('re', 'enum', 'tree_sitter') if m in sys.modules))\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", code, REAL], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
