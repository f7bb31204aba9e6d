"""Acceptance cases 11–17 (docs/ctxctl.md, Tests): per-language symbol lists, doc comments, markup,
``.h`` routing, compact-view safety, deep nesting. Sources are parsed in-process."""
from __future__ import annotations

import os

import pytest

from lib.code import backends, compact, languages, symbols
from tests.ctxctl.conftest import FIXTURES


def outline(path: str, src: str):
    parsed = languages.parse(path, src.encode())
    return parsed, symbols.extract(parsed)


def names(path: str, src: str) -> list:
    return [s.name for s in outline(path, src)[1]]


def compact_of(path: str, src: str, name: str) -> str:
    parsed, syms = outline(path, src)
    sym = next(s for s in syms if s.name == name)
    return compact.compact(parsed, sym, backends.BACKENDS[parsed.language].comment_prefix)


def reparses(path: str, text: str) -> bool:
    return languages.parse(path, text.encode()).errors == 0


def read_fixture(name: str) -> str:
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as fh:
        return fh.read()


# -- 11. Python: the docstring decision ---------------------------------------------------------

def test_python_outline_reads_real_docstrings_not_strings_above():
    _, syms = outline("sample.py", read_fixture("sample.py"))
    assert [s.name for s in syms] == ["Point", "__init__", "norm", "add"]
    by = {s.name: s for s in syms}
    assert all(s.kind in ("class", "function") for s in syms)
    assert by["Point"].doc == "A point in 2D space."      # the class's own docstring
    assert by["__init__"].doc is None                      # upstream's quirk would give it Point's
    assert by["add"].doc == "A standalone helper."         # `#` comment directly above
    assert by["Point"].signature == "class Point"
    assert by["add"].signature == "def add(a: int, b: int) -> int"


def test_python_decorated_defs_slice_from_the_decorator():
    src = read_fixture("decorated.py")
    parsed, syms = outline("decorated.py", src)
    by = {s.name: s for s in syms}
    sliced = parsed.data[by["decorated"].start:by["decorated"].end].decode()
    assert sliced.startswith("@deco\ndef decorated(x):")
    assert by["decorated"].doc == "Returns its argument."
    assert by["decorated"].signature == "@deco def decorated(x)"  # decorators are part of the signature
    # a bare string statement above a def is not its docstring (deliberate, see docs/ctxctl.md)
    assert by["processed"].doc is None


def test_python_docstring_is_the_first_paragraph_joined():
    src = 'def f():\n    """Summary line\n    continues here.\n\n    Details are not part of it.\n    """\n    return 1\n'
    assert outline("a.py", src)[1][0].doc == "Summary line continues here."


# -- 12. Go --------------------------------------------------------------------------------------

def test_go_kinds_docs_and_method_signature():
    _, syms = outline("sample.go", read_fixture("sample.go"))
    assert [s.name for s in syms] == ["Point", "Add", "Norm", "MaxRetries", "DefaultPoint"]
    assert [symbols.DEBUG_NAMES[s.kind] for s in syms] == ["Type", "Function", "Method", "Const", "Variable"]
    norm = syms[2]
    assert norm.doc == "Norm returns the distance from the origin."
    assert "func (p *Point) Norm() float64" in norm.signature
    assert syms[0].doc == "Point is a 2D point."


# -- 13. exact name lists per language -----------------------------------------------------------

C_SRC = """// C fixture.
#include <stdio.h>
#include "util.h"

#define MAX_RETRIES 3

/** A 2D point. */
typedef struct Point {
    double x;
    double y;
} Point;

int add(int a, int b) {
    return a + b;
}

enum Color { RED, GREEN };

static int helper(int v) {
    return v * 2;
}
"""

CPP_SRC = """#include <vector>
#define VERSION 2
using namespace std;
using Alias = int;

namespace app {
/** A widget. */
template <typename T>
class Widget {
public:
    T value;
    void reset() { value = T(); }
};
}

template <typename T>
T sum(T a, T b) {
    return a + b;
}
"""

CS_SRC = """using System;
namespace Demo.App {
    /// A 2D point.
    public class Point {
        private double x;
        private double y;
        public double Norm() {
            return Math.Sqrt(x * x + y * y);
        }
    }
    public interface IRepo {
        string[] All();
    }
    public record Pair(int A, int B);
    public enum Status { On, Off }
    public struct Vector2 {
        public double X;
    }
}
"""

RUBY_SRC = """require 'json'

# A user entity.
class User
  def greet(name)
    "hi #{name}"
  end

  def self.build
    User.new
  end
end

# Computes a sum.
def add(a, b)
  a + b
end

module Utils
  def normalize(x)
    x.to_f
  end
end
"""

LUA_SRC = """local json = require "json"
local helpers = require("./helpers")

-- A counter.
local Counter = {}
Counter.__index = Counter

function Counter.new()
  return setmetatable({ n = 0 }, Counter)
end

-- Adds two numbers.
local function add(a, b)
  return a + b
end

function Counter:increment()
  self.n = self.n + 1
end

local MAX_RETRIES = 3
"""

JS_SRC = """import express from "express";
const os = require("os");

/** A user entity. */
class User {
  greet() {
    return "hi";
  }
}

export function formatName(user) {
  return user.name.trim();
}

const MAX_RETRIES = 3;
var legacy = 1;
"""

JAVA_SRC = """package demo;
import java.util.List;

/** A 2D point. */
public class Point {
    private double x;
    private double y;
    public double norm() { return Math.sqrt(x * x + y * y); }
}

interface Repo {
    List<String> all();
}

record Pair(int a, int b) {}

enum Status { ON, OFF }

class App {
    App() {}
    public static void main(String[] args) {}
}
"""

TS_SRC = """/** A user entity. */
export interface User {
  id: number;
}
export type Id = string;
export enum Color { Red, Green }
export abstract class Store {
  abstract load(): void;
  save(): void {}
}
export function formatName(user: User): string {
  return String(user.id);
}
export const LIMIT = 3;
"""

TSX_SRC = """import React from "react";

type Props = { name: string };

export function Greeting({ name }: Props) {
  return <div className="greeting">Hello, {name}</div>;
}

export const App = () => <><Greeting name="x" /></>;
"""


@pytest.mark.parametrize("path,src,expected", [
    ("sample.c", C_SRC, ["MAX_RETRIES", "Point", "x", "y", "add", "Color", "helper"]),
    ("sample.cpp", CPP_SRC, ["VERSION", "app", "Widget", "value", "reset", "sum"]),
    ("Sample.cs", CS_SRC, ["Demo.App", "Point", "x", "y", "Norm", "IRepo", "All", "Pair", "Status", "Vector2", "X"]),
    ("sample.rb", RUBY_SRC, ["User", "greet", "build", "add", "Utils", "normalize"]),
    ("sample.lua", LUA_SRC, ["json", "helpers", "Counter", "Counter.new", "add", "Counter:increment", "MAX_RETRIES"]),
    ("sample.js", JS_SRC, ["os", "User", "greet", "formatName", "MAX_RETRIES", "legacy"]),
    ("Sample.java", JAVA_SRC, ["Point", "x", "y", "norm", "Repo", "all", "Pair", "Status", "App", "App", "main"]),
    ("globals.c", "int values[10];\nint *next(void);\nint (*fp)(int);\nstruct S { int a; } inst;\n",
     ["values", "fp", "inst", "S", "a"]),
    ("special.cpp", "class W {\n    ~W() {}\n    W& operator=(const W& o) { return *this; }\n    W(int x) : x_(x) {}\n"
     "    int x_;\n};\n", ["W", "~W", "operator=", "W", "x_"]),
    ("sample.ts", TS_SRC, ["User", "Id", "Color", "Store", "load", "save", "formatName", "LIMIT"]),
])
def test_exact_symbol_names_in_source_order(path, src, expected):
    parsed, syms = outline(path, src)
    assert parsed.errors == 0
    assert [s.name for s in syms] == expected


def test_kinds_and_docs_across_languages():
    _, c = outline("a.c", C_SRC)
    assert [s.kind for s in c] == ["const", "type", "var", "var", "function", "enum", "function"]
    assert c[1].doc == "A 2D point."
    _, cpp = outline("a.cpp", CPP_SRC)
    widget = cpp[2]
    assert widget.kind == "class" and widget.doc == "A widget."
    parsed = languages.parse("a.cpp", CPP_SRC.encode())
    assert parsed.data[widget.start:widget.end].decode().startswith("template <typename T>\nclass Widget")
    _, cs = outline("a.cs", CS_SRC)
    assert [s.kind for s in cs][:3] == ["type", "class", "var"]
    assert cs[1].doc == "A 2D point." and cs[7].kind == "class" and cs[9].kind == "struct"
    _, rb = outline("a.rb", RUBY_SRC)
    assert rb[0].doc == "A user entity." and rb[4].kind == "type" and rb[1].kind == "function"
    _, lua = outline("a.lua", LUA_SRC)
    assert lua[0].kind == "var" and lua[4].kind == "function" and lua[4].doc == "Adds two numbers."
    _, ts = outline("a.ts", TS_SRC)
    assert ts[0].kind == "interface" and ts[0].doc == "A user entity."
    assert ts[6].signature == "export function formatName(user: User): string"


def test_rust_methods_inside_impl_are_functions_and_mod_is_module():
    _, syms = outline("a.rs", "mod config;\nstruct S;\nimpl S {\n    fn go(&self) {}\n}\n")
    assert [(s.name, s.kind) for s in syms] == [("config", "module"), ("S", "struct"), ("go", "function")]
    assert syms[0].signature == "mod config"


def test_tsx_uses_the_tsx_grammar():
    parsed, syms = outline("App.tsx", TSX_SRC)
    assert parsed.errors == 0
    assert {"Greeting", "App"} <= {s.name for s in syms}


def test_signature_cleaning_rules():
    clean = symbols.clean_signature
    assert clean("pub fn add(a: i32, b: i32) -> i32 {") == "pub fn add(a: i32, b: i32) -> i32"
    assert clean("def validate(cfg):") == "def validate(cfg)"
    assert clean("mod config;") == "mod config"
    assert clean('fetch("http://x.org/a") {  // trailing') == 'fetch("http://x.org/a")'
    assert clean("   ") == "…"
    long = "fn " + "漢" * 200
    assert len(clean(long)) == 120 and clean(long).endswith("…")
    _, syms = outline("a.rs", "#[derive(Debug)]\n/// not adjacent\n\npub struct A {}\n")
    assert syms[0].doc is None


def test_doc_comment_needs_direct_adjacency():
    _, syms = outline("a.rs", "/// Far away.\n\nfn a() {}\n/// Close.\n#[inline]\nfn b() {}\n")
    assert syms[0].doc is None and syms[1].doc == "Close."


# -- 14. markup ---------------------------------------------------------------------------------

def test_html_ids_css_rules_and_markdown_sections():
    _, html = outline("sample.html", read_fixture("sample.html"))
    assert [(s.name, s.kind) for s in html] == [("app", "element"), ("plain", "element"), ("logo", "element"),
                                                ("tail", "element")]
    assert (html[0].start_line, html[0].end_line) == (3, 5)
    _, css = outline("sample.css", read_fixture("sample.css"))
    assert [s.name for s in css] == [".btn", "#main", "h1, h2", ".narrow"]
    assert all(s.kind == "rule" for s in css)
    _, md = outline("sample.md", read_fixture("sample.md"))
    assert [(s.start_line, s.end_line) for s in md] == [(1, 15), (5, 8), (9, 15), (13, 15)]
    assert [s.name for s in md] == ["Top", "A", "B", "B1"]
    _, setext = outline("s.md", "Title\n=====\n\nbody\n")
    assert [(s.name, s.start_line, s.end_line) for s in setext] == [("Title", 1, 4)]


def test_markdown_compact_is_the_raw_section():
    src = read_fixture("sample.md")
    parsed, syms = outline("sample.md", src)
    b = syms[2]
    assert compact.compact(parsed, b, "") == parsed.data[b.start:b.end].decode()


# -- 15. .h routing and annotation masking -----------------------------------------------------

def test_header_routing_picks_cpp_or_c():
    cpp = "#ifndef A_H\n#define A_H\n#include <string>\nclass Atom {\npublic:\n  Atom(std::string n) : n_(n) {}\nprivate:\n  std::string n_;\n};\n#endif\n"
    parsed = languages.parse("atom.h", cpp.encode())
    assert parsed.language == "cpp" and parsed.errors == 0
    c = "#ifndef P_H\n#define P_H\ntypedef struct Point { int x; int y; } Point;\nint add(int a, int b);\n#endif\n"
    parsed = languages.parse("point.h", c.encode())
    assert parsed.language == "c" and parsed.errors == 0


def test_annotation_macros_are_masked_for_a_clean_parse():
    src = ("#ifndef S_H\n#define S_H\nSECUREC_INLINE void sec_trim(char *buf, size_t n) { (void)buf; }\n"
           "int copy(_In_ const char *src, _Out_ char *dst);\n#endif\n")
    parsed = languages.parse("sec.h", src.encode())
    assert parsed.language == "c" and parsed.errors == 0
    assert "sec_trim" in [s.name for s in symbols.extract(parsed)]
    assert parsed.data == src.encode()  # ranges and slices come from the original bytes


# -- 16. compact safety -------------------------------------------------------------------------

def test_compact_quote_in_comment_still_folds():
    src = "export function foo(x) {\n  const a = 1;\n  // \" odd quote\n  const b = 2;\n  const c = 3;\n  return a + b;\n}\n"
    out = compact_of("a.ts", src, "foo")
    assert "... [5 lines omitted]" in out and out.rstrip().endswith("}") and reparses("a.ts", out)


def test_compact_python_paren_in_comment_still_folds():
    src = "def foo(x):\n    a = 1\n    # unbalanced ( in comment\n    b = 2\n    return a + b\n"
    out = compact_of("a.py", src, "foo")
    assert "# ... [4 lines omitted]" in out and reparses("a.py", out)


def test_compact_go_continuation_is_not_folded():
    src = 'package x\n\nvar spaces = "" +\n\tstrings.Repeat(" ", 256) +\n\tstrings.Repeat(" ", 256)\n'
    out = compact_of("a.go", src, "spaces")
    assert "strings.Repeat" in out and reparses("a.go", out)


@pytest.mark.parametrize("path,src,name,needle", [
    ("a.js", "const help = () => console.log(\n`line one\nline two`);\n", "help", "line two"),
    ("a.jsx", "const X = (<>\n  {\n    value\n  }\n</>);\n", "X", "</>"),
    ("a.rs", "const TYPED: &[Def] = &[\n    Def {\n        name: \"a\",\n    },\n];\n", "TYPED", "name"),
])
def test_compact_data_literals_pass_through(path, src, name, needle):
    out = compact_of(path, src, name)
    assert needle in out and reparses(path, out)


def test_compact_keeps_typedef_and_struct_closers():
    out = compact_of("a.c", "typedef struct {\n    int a;\n    int b;\n} Pair;\n", "Pair")
    assert out.rstrip().endswith("} Pair;") and "... [2 lines omitted]" in out and reparses("a.c", out)
    out = compact_of("a.cpp", "struct Pseudo\n{\n    int type;\n    bool negated;\n};\n", "Pseudo")
    assert out.rstrip().endswith("};") and reparses("a.cpp", out)


def test_compact_crlf_source_gives_crlf_output():
    src = "fn f() {\r\n    let a = 1;\r\n    let b = 2;\r\n}\r\n"
    out = compact_of("a.rs", src, "f")
    assert "... [2 lines omitted]" in out
    assert out.count("\n") == out.count("\r\n") and out.endswith("\r\n")


def test_compact_keyword_bodies_keep_end_and_decorators():
    out = compact_of("a.lua", LUA_SRC, "add")
    assert "-- ... [1 line omitted]" in out and out.rstrip().endswith("end") and reparses("a.lua", out)
    rb = "def loopback?\n  case @family\n  when 1\n    true\n  else\n    false\n  end\nend\n"
    out = compact_of("a.rb", rb, "loopback?")
    assert out.startswith("def loopback?") and "# ... [" in out and out.rstrip().endswith("end")
    assert reparses("a.rb", out)
    out = compact_of("decorated.py", read_fixture("decorated.py"), "decorated")
    assert out.startswith("@deco\ndef decorated(x):") and '"""Returns its argument."""' in out
    assert "# ... [1 line omitted]" in out and reparses("a.py", out)
    assert compact_of("a.py", "def f(): ...\n\nx = 1\n", "f") == "def f(): ..."


def test_compact_macro_drops_its_closer():
    src = "#define CLEANUP(x) \\\n  do { int r = (x); \\\n       if (r) return r; \\\n  } while (0)\n\nint y;\n"
    out = compact_of("a.c", src, "CLEANUP")
    assert out.rstrip().endswith("]") and reparses("a.c", out)


def test_every_compact_view_reparses():
    for path, src in [("a.c", C_SRC), ("a.cpp", CPP_SRC), ("a.cs", CS_SRC), ("a.rb", RUBY_SRC), ("a.lua", LUA_SRC),
                      ("a.js", JS_SRC), ("a.java", JAVA_SRC), ("a.ts", TS_SRC), ("a.go", read_fixture("sample.go")),
                      ("a.rs", read_fixture("sample.rs")), ("a.py", read_fixture("sample.py")),
                      ("a.css", read_fixture("sample.css"))]:
        parsed, syms = outline(path, src)
        prefix = backends.BACKENDS[parsed.language].comment_prefix
        for s in syms:
            raw = parsed.data[s.start:s.end].decode()
            if not reparses(path, raw):
                continue  # the criterion: a compact view re-parses whenever its raw slice does
            out = compact.compact(parsed, s, prefix)
            assert reparses(path, out), (path, s.name, out)


def test_single_line_symbols_pass_through_unchanged():
    parsed, syms = outline("a.rs", read_fixture("sample.rs"))
    answer = next(s for s in syms if s.name == "ANSWER")
    assert compact.compact(parsed, answer, "//") == parsed.data[answer.start:answer.end].decode()


# -- 17. deep nesting ---------------------------------------------------------------------------

def test_deep_nesting_does_not_crash():
    depth = 120_000
    src = "function f() { return " + "(" * depth + "1" + ")" * depth + "; }\n"
    parsed, syms = outline("deep.js", src)
    assert [s.name for s in syms] == ["f"] and parsed.errors == 0
    assert backends.BACKENDS["javascript"].imports(parsed.tree.root_node, parsed.data) == []


def test_core_loads_without_re_or_enum_and_both_still_work_after():
    """tree-sitter's core is initialised against stand-ins for ``re`` and ``enum`` (a cold call
    need not pay for them); afterwards the real modules import, a ``#match?`` predicate (the
    one use of ``re.compile``) filters, and ``LogType`` keeps its member values."""
    import subprocess
    import sys

    from tests.ctxctl.conftest import ROOT

    code = (f"import sys; sys.path.insert(0, {ROOT!r})\n"
            "from lib.code import languages\n"
            "core = languages.binding()\n"
            "assert 're' not in sys.modules and 'enum' not in sys.modules, sorted(sys.modules)\n"
            "assert (core.LogType.PARSE, core.LogType.LEX) == (0, 1)\n"
            "tree = languages.parser('python').parse(b'abc = xyz + abd')\n"
            "query = core.Query(tree.language, '((identifier) @i (#match? @i \"^ab\"))')\n"
            "found = [n.text for n in core.QueryCursor(query).captures(tree.root_node)['i']]\n"
            "assert found == [b'abc', b'abd'], found\n"
            "import enum, re\n"
            "assert re.compile('a+').fullmatch('aa') and issubclass(enum.IntEnum, int)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


# The masking rules as first written with ``re`` (the reference the scanner must equal).
_SAL_RX = rb"\b_(?:In|Out|Inout|Ret|Deref|Pre|Post|Outptr|Must|Check|Success|Printf|Null|Notnull|Maybenull" \
          rb"|Reserved|Field|Frees|Use|When|At|Struct|Acquires|Releases|Requires|Analysis|Always|Kernel" \
          rb"|Interlocked|Readable|Writable|Result|Return|Opt)\w*_(?=\W)"
_LONE_RX = rb"(?m)^[ \t]*(?!(?:if|while|for|switch|return|sizeof|case|do|else)\b)[A-Za-z_]\w*[ \t]*\([^;{}\n]*\)[ \t]*$"
_CAPS_RX = rb"(?m)^([ \t]*)([A-Z][A-Z0-9_]{2,})(?=[ \t]+[A-Za-z_][\w*&]*[ \t*&]+[A-Za-z_~])"


def _mask_by_regex(data: bytes) -> bytes:
    import re

    out = re.sub(_SAL_RX, lambda m: b" " * (m.end() - m.start()), data, flags=re.IGNORECASE)
    out = re.sub(_LONE_RX, lambda m: re.sub(rb"[^\n]", b" ", m.group(0)), out)
    return re.sub(_CAPS_RX, lambda m: m.group(1) + b" " * len(m.group(2)), out)


def _real_c_sources(limit: int = 400) -> list:
    """Real C/C++ sources on this machine: the committed fixtures, the interpreter's own headers
    and, where present, the system's (a deterministic sample)."""
    import glob
    import sysconfig

    paths = sorted(glob.glob(os.path.join(FIXTURES, "**", "*.[ch]*"), recursive=True))
    paths += sorted(glob.glob(os.path.join(sysconfig.get_paths()["include"], "**", "*.h"), recursive=True))
    system = sorted(glob.glob("/usr/include/**/*.h", recursive=True))
    paths += system[::max(1, len(system) // limit)]
    return [p for p in paths if os.path.isfile(p) and p.endswith((".c", ".h", ".cc", ".cpp", ".hpp"))]


def test_annotation_mask_scanner_equals_the_regex_rules_on_real_sources():
    sources = _real_c_sources()
    assert len(sources) >= 50
    for path in sources:
        with open(path, "rb") as fh:
            data = fh.read()
        assert languages.mask_annotations(data) == _mask_by_regex(data), path


def test_annotation_mask_scanner_equals_the_regex_rules_on_generated_lines():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    words = st.sampled_from(["_In_", "_out_writes_", "_Ret_z_", "__in", "x_In_", "SECUREC_INLINE", "WINAPI", "AB",
                             "int", "char", "if", "do", "do_it", "FOO", "Foo", "_", "~W", "(", ")", "*", "&", ";",
                             "{", "}", " ", "\t", "\n", "\r\n", "é", "1", "x"])

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(words, max_size=24))
    def check(parts):
        data = "".join(parts).encode()
        assert languages.mask_annotations(data) == _mask_by_regex(data)

    check()


def test_masked_reparse_is_incremental_and_equals_a_fresh_parse():
    """The masked tree is re-parsed from the original tree (each mask an edit of the same
    length) and is the tree a fresh parse of the masked bytes gives."""
    checked = 0
    for path in _real_c_sources(limit=40):
        with open(path, "rb") as fh:
            data = fh.read()
        grammar = "cpp" if path.endswith((".cc", ".cpp", ".hpp")) else "c"
        tree, errors, _ = languages._parse(grammar, data)
        spans = languages.mask_spans(data)
        if not errors or not spans:
            continue
        masked = languages.mask_annotations(data, spans)
        incremental = languages._reparse_masked(grammar, tree, data, masked, spans)
        fresh = languages._parse(grammar, masked)
        assert str(incremental[0].root_node) == str(fresh[0].root_node), path
        assert incremental[1:] == fresh[1:], path
        checked += 1
    assert checked >= 3


# -- symbols ctags lists that the outline missed (bench/ctxctl_speed.py --agreement) -------------

def _extract_file(path: str) -> list:
    with open(path, "rb") as fh:
        return symbols.extract(languages.parse(path, fh.read()))


def test_python_module_level_assignments_are_vars():
    import importlib.util

    src = ("X = 1\nY: int = 2\nA = B = 3\na, b = f()\nself.x = 1\nif X:\n    Z = 2\ndef f():\n    Q = 1\n"
           "class C:\n    x: int\n    def m(self):\n        z = 1\n")
    got = [(s.name, s.kind, s.signature) for s in outline("m.py", src)[1]]
    assert got == [("X", "var", "X = 1"), ("Y", "var", "Y: int = 2"), ("A", "var", "A = B = 3"),
                   ("B", "var", "A = B = 3"), ("a", "var", "a, b = f()"), ("b", "var", "a, b = f()"),
                   ("f", "function", "def f()"), ("C", "class", "class C"), ("x", "var", "x: int"),
                   ("m", "function", "def m(self)")]
    folder = list(importlib.util.find_spec("botocore").submodule_search_locations)[0]
    real = {s.name: s for s in _extract_file(os.path.join(folder, "utils.py"))}
    assert real["DEFAULT_METADATA_SERVICE_TIMEOUT"].kind == "var"
    assert real["DEFAULT_METADATA_SERVICE_TIMEOUT"].signature == "DEFAULT_METADATA_SERVICE_TIMEOUT = 1"
    assert real["CACHE_DIR"].kind == "var" and real["IMDSFetcher"].kind == "class"


def test_ruby_constants_are_consts():
    syms = _extract_file(os.path.join(FIXTURES, "real", "rack_lint.rb"))
    consts = [s.name for s in syms if s.kind == "const"]
    assert consts[:3] == ["ALLOWED_SCHEMES", "REQUEST_PATH_ORIGIN_FORM", "REQUEST_PATH_ABSOLUTE_FORM"]
    assert {"BODY_METHODS", "REQUIRED_METHODS", "HTTP_HOST_PATTERN"} <= set(consts)
    first = next(s for s in syms if s.name == "ALLOWED_SCHEMES")
    assert (first.start_line, first.signature) == (21, "ALLOWED_SCHEMES = %w(https http wss ws).freeze")


def test_html_headings_are_listed_by_their_text():
    syms = _extract_file(os.path.join(FIXTURES, "real", "normalize_test.html"))
    heads = [(s.name, s.start_line) for s in syms if s.kind == "heading"]
    assert heads[:3] == [("Normalize.css: UI tests", 86), ("html", 88), ("should have a line height of 1.15", 89)]
    assert ("audio, canvas, progress, video", 127) in heads
    assert len(heads) == 74
    src = '<h2 id="intro">Intro <em>now</em></h2>\n<div id="app"></div>\n'
    assert [(s.name, s.kind) for s in outline("p.html", src)[1]] == [
        ("intro", "element"), ("Intro now", "heading"), ("app", "element")]


def test_cpp_conversion_operators_are_listed():
    """(``using X = …`` stays unlisted: the contract's C++ name list leaves it out.)"""
    src = ("struct S { explicit operator bool() const noexcept { return 1; } operator int() const; };\n"
           "using rw = int;\nnamespace { using m = int; }\nvoid f() { using q = int; }\n")
    assert [(s.name, s.kind, s.signature) for s in outline("a.cc", src)[1]] == [
        ("S", "struct", "struct S"), ("operator bool", "function", "explicit operator bool() const noexcept"),
        ("f", "function", "void f()")]
    names = [s.name for s in _extract_file(os.path.join(FIXTURES, "real", "fmt_os.cc"))]
    assert {"operator bool", "operator fmt::basic_string_view<wchar_t>"} <= set(names)
