"""The outline parse (lib/code/skeleton.py, docs/ctxctl.md "Outline parse"): function bodies
left out of tree-sitter's input must not change an outline. Checked on the real files of
every language with a skeleton parse (tests/ctxctl/fixtures/real/, sources in
tests/fixtures/NOTICE.md), on the constructs whose bodies must be kept, and on arbitrary bytes."""
from __future__ import annotations

import json
import os

import pytest

from lib.code import languages, skeleton, symbols
from tests.ctxctl.conftest import FIXTURES

REAL = os.path.join(FIXTURES, "real")
SKELETON_FILES = sorted(n for n in os.listdir(REAL) if languages.backend_for(n) in skeleton.LEXERS)


def rows(parsed) -> list:
    return [(s.name, s.kind, s.signature, s.start_line, s.end_line, s.doc) for s in symbols.extract(parsed)]


def real(name: str) -> bytes:
    with open(os.path.join(REAL, name), "rb") as fh:
        return fh.read()


@pytest.mark.parametrize("name", SKELETON_FILES)
def test_outline_of_the_skeleton_parse_equals_the_full_parse_on_real_files(name):
    data = real(name)
    full, outline = languages.parse(name, data), languages.parse(name, data, skip_bodies=True)
    if full.errors == 0:
        assert rows(outline) == rows(full)
    else:  # the full parse misreads a body (macros, grammar gaps): the outline only gains
        assert outline.errors <= full.errors
        assert {r[0] for r in rows(outline)} >= {r[0] for r in rows(full) if r[1] != "var"}


PYTHON_MODULES = [("boto3", "session.py"), ("botocore", "handlers.py"), ("botocore", "utils.py"), ("botocore", "client.py"),
                  ("botocore", "credentials.py"), ("pyarrow", "parquet/core.py"), ("jsonschema", "validators.py")]


@pytest.mark.parametrize("package,rel", PYTHON_MODULES)
def test_python_outline_of_the_skeleton_parse_equals_the_full_parse_on_installed_packages(package, rel):
    """Python's holes are found by indentation (lib/code/skeleton.py): real modules of the
    packages installed in this venv, with their docstrings, decorators and nested functions."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    path = os.path.join(list(spec.submodule_search_locations)[0], rel) if spec else ""
    if not os.path.isfile(path):
        pytest.skip(f"{package}/{rel} not installed")
    with open(path, "rb") as fh:
        data = fh.read()
    full, outline = languages.parse(path, data), languages.parse(path, data, skip_bodies=True)
    assert full.errors == 0
    assert rows(outline) == rows(full)
    assert languages._parse_skeleton("python", "python", data), "the skeleton parse was used"


def test_a_csharp_interface_after_an_attribute_with_arguments_keeps_its_members():
    """AutoMapper's InternalApi.cs (tests/fixtures/NOTICE.md): ``[EditorBrowsable(…)]`` before
    ``public interface IGlobalConfiguration`` once made the scan take the interface's members
    for a function body, so the outline silently lost 52 of them."""
    path = os.path.join(FIXTURES, "heldout", "automapper_InternalApi.cs")
    with open(path, "rb") as fh:
        data = fh.read()
    full, outline = languages.parse(path, data), languages.parse(path, data, skip_bodies=True)
    assert full.errors == 0
    assert rows(outline) == rows(full)
    assert len(rows(outline)) > 52


def test_real_files_leave_most_of_their_bodies_out():
    """The point of the design: the parse reads a fraction of these files."""
    for name in ("libuv_core.c", "zap_json_encoder.go", "serde_json_read.rs", "ky_Ky.ts",
                 "newtonsoft_JsonSchemaGenerator.cs", "express_response.js", "rxi_json.lua", "rack_lint.rb",
                 "fmt_os.cc"):
        data = real(name)
        cut = sum(b - a for a, b in skeleton.holes(languages.backend_for(name), data))
        assert cut > len(data) * (0.25 if name.endswith(".rb") else 0.4), name
        tree = languages._parse_skeleton(languages.backend_for(name), languages.backend_for(name), data)
        assert tree, name  # used: no syntax error in the skeleton's tree


def test_a_c_function_the_full_parse_loses_to_a_body_error_is_listed():
    """libuv's core.c: a ``#ifdef`` inside ``uv_available_parallelism`` breaks the full parse,
    which lists its locals instead of it; its skeleton has no body to misread."""
    syms = symbols.extract(languages.parse("core.c", real("libuv_core.c"), skip_bodies=True))
    by = {s.name: s for s in syms}
    assert by["uv_available_parallelism"].kind == "function"
    assert by["uv_available_parallelism"].signature == "unsigned int uv_available_parallelism(void)"
    assert "len" not in by


def padded(text: str, comment: str = "//") -> bytes:
    """``text`` after a comment block that takes it past :data:`skeleton.MIN_BYTES`."""
    return ((comment + " padding line for the outline parse threshold\n") * 90 + text).encode()


def names_both_ways(path: str, data: bytes) -> tuple:
    full = [s.name for s in symbols.extract(languages.parse(path, data))]
    return full, [s.name for s in symbols.extract(languages.parse(path, data, skip_bodies=True))]


@pytest.mark.parametrize("path,text,expected", [
    ("a.java", "enum P { A() { @Override String f(int x) { return \"}\"; } }, B; }\n"
               "class Q { void g() { Runnable r = new Runnable() { public void run() { } }; "
               "class Local { void h() {} } } }\n", ["P", "f", "Q", "g", "run", "Local", "h"]),
    ("a.cs", "class C { void M() { int Local(int a) { return a; } int Twice(int b) => b * 2; "
             "var x = new D(1) { Y = 2 }; } }\n", ["C", "M", "Local", "Twice"]),
    ("b.cs", "[EditorBrowsable(EditorBrowsableState.Never)]\npublic interface I\n{\n    void M(int a);\n}\n"
             "[Attr(new[] { 1 })] sealed class K { [Obsolete(\"x\")] void N() { } }\n", ["I", "M", "K", "N"]),
    ("a.rs", "fn outer() { fn inner(x: u8) -> u8 { x } const K: u8 = 1; let s = '}'; }\n"
             "impl<'a> S<'a> { fn m(&self) -> &'a str { \"{\" } }\n", ["outer", "inner", "K", "m"]),
    ("a.ts", "const re = /[\"'{]/g;\nfunction f(a: string): { b: number } { function g() {} "
             "return { b: 1, m() { return 2; } }; }\nclass K { x(): void { if (a) { } } }\n",
     ["re", "f", "g", "m", "K", "x"]),
    ("a.js", "module.exports.get = function get(a) { const s = `${a}}`; return s; };\n"
             "(function () { function hidden() {} })();\n", ["module.exports.get", "hidden"]),
    ("a.go", "package p\nfunc F(a int) (int, error) { s := `}`; _ = s; return a, nil }\n"
             "type T struct { A int }\nfunc (t *T) M() { r := '}'; _ = r }\n", ["F", "T", "M"]),
    ("a.py", 'class A:\n    def m(self, a=(1,\n2)):\n        """Doc."""\n        try:\n            x = [\n1]\n'
             "        except E:\n            pass\n        s = '''\n}\n'''\n        def inner():\n            pass\n"
             "        return x\n\n    def n(self):\n        y = 1\n        z = 2\n        return y\n",
     ["A", "m", "inner", "n"]),
    ("a.c", "struct s { int a; };\nstatic int f(int x) { char c = '}'; return x; }\n"
            "int g(void) { return f(1); }\n", ["s", "a", "f", "g"]),
    ("a.lua", "local function f(a)\n  local s = [[ end ]] .. \"end\" -- end\n  if a then return 1 end\n"
              "  repeat a = a - 1 until a < 0\n  for i = 1, 2 do print(i) end\n  return s\nend\n"
              "function M.g(b)\n  local function inner() return b end\n  return inner\nend\n"
              "local h = function(c)\n  while c do c = nil end\n  return function() return 1 end\nend\n",
     ["f", "M.g", "inner", "h"]),
    ("a.rb", "class A\n  LIMIT = 3\n  def f(a, b = {})\n    return a unless b\n    x = if a then 1 else 2 end\n"
             "    while a do a = nil end\n    s = <<~EOS\n      end if\n    EOS\n    t = %w[end do] + [$']\n"
             "    a.each do |v| v.end end\n    y = a ? :end : {end: 1}\n    z = /end/\n  end\n\n"
             "  def g = 42\n\n  def h\n    define = 1\n    def nested; end\n  end\n\n"
             "  def self.k(*args, **opts)\n    args.map { |a| a if a }\n  end\nend\n",
     ["A", "LIMIT", "f", "g", "h", "nested", "k"]),
])
def test_bodies_that_hold_listed_definitions_are_kept_and_literals_are_skipped(path, text, expected):
    comment = {".py": "#", ".rb": "#", ".lua": "--"}.get(os.path.splitext(path)[1], "//")
    full, outline = names_both_ways(path, padded(text, comment))
    assert full == outline
    assert [n for n in outline if n in expected] == expected
    if comment != "//" or path.endswith(".py"):  # the keyword and indentation scans: the skeleton was used
        language = languages.backend_for(path)
        assert languages._parse_skeleton(language, language, padded(text, comment)), path


@pytest.mark.parametrize("name,comment,src", [
    ("big.rb", "#", "def f(a)\n  case a\n  when 1\n    true\n  else\n    false\n  end\nend\n"),
    ("big.lua", "--", "local function f(a)\n  if a then\n    return 1\n  end\n  return 2\nend\n"),
])
def test_symbol_compact_folds_a_body_the_outline_parse_leaves_out(ctxctl, write, name, comment, src):
    """Ruby's and Lua's holes take the body node with them: ``--compact`` parses such a file
    whole and folds the body; the plain slice is the same source either way."""
    path = write(name, padded(src, comment).decode())
    assert languages._parse_skeleton(languages.backend_for(name), languages.backend_for(name), padded(src, comment))
    r = ctxctl("symbol", path, "--name", "f", "--compact")
    assert r.code == 0, r.err
    assert f"{comment} ... [" in r.out and r.out.rstrip().endswith("end")
    r = ctxctl("symbol", path, "--name", "f")
    assert r.code == 0 and src.strip() in r.out


def test_a_syntax_error_in_a_header_still_exits_3_on_a_large_file(ctxctl, write):
    path = write("big.rs", padded("fn ok() { let x = 1; }\nfn broken( {\n").decode())
    r = ctxctl("outline", path, "--json")
    assert r.code == 3
    doc = json.loads(r.out)
    assert doc["parse_error"]["count"] >= 1 and "ok" in [s["name"] for s in doc["symbols"]]


def test_a_syntax_error_inside_a_left_out_body_does_not_flag_a_complete_outline(ctxctl, write):
    """The contract's exit 3 says the symbol or import list may be incomplete; an error inside
    a body the outline parse leaves out cannot make it so (docs/ctxctl.md, "Outline parse")."""
    path = write("big.go", padded('package p\nimport "fmt"\nfunc A() { x := ; }\nfunc B() {}\n').decode())
    r = ctxctl("outline", path, "--json")
    assert r.code == 0, r.err
    assert [s["name"] for s in json.loads(r.out)["symbols"]] == ["A", "B"]
    r = ctxctl("deps", path, "--json")
    assert r.code == 0 and [i["target"] for i in json.loads(r.out)["imports"]] == ["fmt"]


def test_deps_parses_whole_the_languages_that_import_inside_functions(ctxctl, write):
    path = write("big.js", padded("function a() { const x = require('left-pad'); return x; }\n").decode())
    r = ctxctl("deps", path, "--json")
    assert r.code == 0  # the `require` inside the function is read: the whole file was parsed
    assert [i["target"] for i in json.loads(r.out)["imports"]] == ["left-pad"]


@pytest.mark.parametrize("name", [n for n in SKELETON_FILES
                                  if languages.backend_for(n) in skeleton.IMPORTS_OUTSIDE_BODIES])
def test_imports_of_the_skeleton_parse_equal_the_full_parse_on_real_files(name):
    from lib.code import backends

    data = real(name)
    full, outline = languages.parse(name, data), languages.parse(name, data, skip_bodies=True)
    imports = backends.BACKENDS[full.language].imports
    assert imports(outline.tree.root_node, data) == imports(full.tree.root_node, data)


def test_holes_on_arbitrary_bytes_are_sorted_disjoint_interiors():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    alphabet = st.sampled_from(list("{}()\"'`/*\\\n ;=>@abcfnstruclassenum"))

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.sampled_from(sorted(skeleton.LEXERS)), st.lists(alphabet, max_size=300).map("".join))
    def check(language, text):
        data = text.encode()
        cuts = skeleton.holes(language, data)
        last = 0
        for a, b in cuts:
            assert last <= a < b <= len(data)
            assert data[a - 1:a] == b"{" and data[b:b + 1] == b"}"
            last = b
        parts = skeleton.ranges(data, cuts)
        assert sum(e - s for s, e, _, _ in parts) + sum(b - a for a, b in cuts) == len(data)
        for s, e, (row, col), _ in parts:
            assert row == data.count(b"\n", 0, s) and col == s - (data.rfind(b"\n", 0, s) + 1)

    check()


@pytest.mark.parametrize("path,openers,closer,statements", [
    ("a.rb", ["def f(a)\n", "def g\n", "class K\n", "if x\n", "while x do\n", "a.each do |v|\n", "begin\n",
              "case a\nwhen 1\n", "x = if y\n", "def self.k(*a, **o)\n", "module M\n"], "end\n",
     ["a = 1\n", "s = \"end\"\n", "# end\n", "b = <<~E\n  end\nE\n", "c = %w[end do]\n", "r = /end/\n",
      "C = 2\n", "def h = 1\n", "return if a\n", "v.end\n", "z = {end: 1}\n", "x += 1 while y\n",
      "q = a ? :end : 2\n", "m = $'\n", "def one; end\n"]),
    ("a.lua", ["function f(a)\n", "local function g()\n", "local x = function()\n", "if x then\n",
               "for i = 1, 2 do\n", "while x do\n", "function M.h(b, ...)\n", "do\n"], "end\n",
     ["a = 1\n", "s = \"end\"\n", "-- end\n", "t = [[end]]\n", "--[[ end\n]]\n", "local y = 2\n",
      "repeat a = a - 1 until a\n", "u = 'do'\n", "print(a.x)\n", "v = [==[ ]] end ]==]\n"]),
])
def test_keyword_scans_never_change_an_outline_on_generated_code(path, openers, closer, statements):
    """Ruby's and Lua's scans match blocks by keyword: on generated programs of nested blocks
    and statements that spell keywords in literals, comments and modifiers, the skeleton parse,
    when used (no syntax error), gives the full parse's outline, and it is used."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    language = languages.backend_for(path)
    comment = "#" if language == "ruby" else "--"
    blocks = st.recursive(st.sampled_from(statements), lambda inner: st.tuples(
        st.sampled_from(openers), st.lists(inner, min_size=1, max_size=5)).map(
        lambda t: t[0] + "".join(t[1]) + closer), max_leaves=40)
    used = []

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(blocks, min_size=1, max_size=8))
    def check(parts):
        data = padded("".join(parts), comment)
        cuts = skeleton.holes(language, data)
        for (a, b), after in zip(cuts, cuts[1:] + [(len(data), len(data))]):
            assert a < b <= after[0] and data[b:b + 3] == b"end"
        full = languages.parse(path, data)
        if full.errors == 0 and languages._parse_skeleton(language, language, data):
            used.append(1)
            assert rows(languages.parse(path, data, skip_bodies=True)) == rows(full)

    check()
    assert len(used) > 30, len(used)


def test_a_decorated_def_that_ends_a_body_keeps_its_decorator():
    """numpy's test_overrides.py: a function whose last statement is a decorated nested def;
    the decorator line and the def line are one statement, so the hole stops before both."""
    text = ("def test_dispatch(self):\n    x = 1\n    y = 2\n\n    # should not raise\n"
            "    @dispatch(lambda x: (x,), verify=False)\n    def f(y):\n        pass\n")
    data = padded(text, "#")
    assert languages._parse_skeleton("python", "python", data)
    outline, full = rows(languages.parse("a.py", data, skip_bodies=True)), rows(languages.parse("a.py", data))
    assert outline == full
    assert full[-1][2] == "@dispatch(lambda x: (x,), verify=False) def f(y)"


def test_docstrings_are_left_out_of_the_parse_and_read_from_the_bytes():
    """A triple-quoted string's interior is a hole (lib/code/skeleton.py): the parse sees
    empty quotes, yet the docstring, the extent and the signature are the whole parse's."""
    doc = "Return the thing.\n\n    " + "More words about it, none of which the parse reads. " * 4
    text = "".join(f'def f{i}(a,\n       b=2):\n    """{doc}"""\n    x = a\n    y = b\n    return x + y\n\n\n'
                   for i in range(40)).encode()
    cuts = skeleton.holes("python", text)
    assert sum(1 for a, _ in cuts if text[a - 1] == 34) == 40
    outline, full = languages.parse("a.py", text, skip_bodies=True), languages.parse("a.py", text)
    assert languages._parse_skeleton("python", "python", text), "the skeleton parse was used"
    assert rows(outline) == rows(full)
    assert symbols.extract(outline)[0].doc == "Return the thing."


def test_a_triple_quote_the_string_pairing_misreads_costs_the_holes_not_symbols():
    """A ``\"\"\"`` in a comment pairs the file's triple quotes wrongly, so a string interior
    spans code; the check after the parse (skeleton.hollows_hold) sees the mismatch and the
    whole file is parsed. Written, and the real case of tiktoken's encodings module."""
    body = "".join(f'def f{i}(a):\n    """Doc {i}, long enough to be left out of the parse: ' + "x" * 60 +
                   '."""\n    b = a\n    c = b  # a comment long enough for the span between strings\n'
                   '    return c\n\n' for i in range(30))
    text = ("# a stray \"\"\" in a comment\nX = 1\n" + body + "Y = 2\n").encode()
    assert any(text[a - 1] == 34 and b"def " in text[a:b] for a, b in skeleton.holes("python", text))
    assert languages._parse_skeleton("python", "python", text) is None
    assert rows(languages.parse("a.py", text, skip_bodies=True)) == rows(languages.parse("a.py", text))
    import importlib.util

    spec = importlib.util.find_spec("tiktoken_ext")
    path = os.path.join(list(spec.submodule_search_locations)[0], "openai_public.py") if spec else ""
    if os.path.isfile(path):
        with open(path, "rb") as fh:
            data = fh.read()
        assert rows(languages.parse(path, data, skip_bodies=True)) == rows(languages.parse(path, data))
