"""Whole signatures on real multi-line headers (issue #24): parameters, defaults, return types,
decorators/attributes/annotations, in every language with definitions.

Python cases read the packages installed in this venv (boto3, pyarrow); the others read the
real files in ``fixtures/real/`` (sources and licences in tests/fixtures/NOTICE.md). Each
expected value was checked by hand against the header in the file.
"""
from __future__ import annotations

import importlib.util
import os

import pytest

from lib.code import backends, languages, symbols
from tests.ctxctl.conftest import FIXTURES

REAL = os.path.join(FIXTURES, "real")


def package_file(package: str, rel: str) -> str:
    """Path of ``rel`` inside an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    return os.path.join(list(spec.submodule_search_locations)[0], rel)


def signature_of(path: str, name: str, nth: int = 0, kind: str | None = None) -> str:
    with open(path, "rb") as fh:
        data = fh.read()
    syms = [s for s in symbols.extract(languages.parse(path, data)) if s.name == name and kind in (None, s.kind)]
    return syms[nth].signature


def test_boto3_client_keeps_every_parameter_and_default():
    # boto3/session.py spreads `def client(` over 14 lines; upstream's first-line rule printed `def client`
    sig = signature_of(package_file("boto3", "session.py"), "client")
    assert sig == ("def client(self, service_name, region_name=None, api_version=None, use_ssl=True, verify=None, "
                   "endpoint_url=None, aws_access_key_id=None, aws_secret_access_key=None, "
                   "aws_session_token=None, config=None, aws_account_id=None)")


def test_boto3_property_keeps_its_decorator_and_keyword_only_marker():
    path = package_file("boto3", "session.py")
    assert signature_of(path, "profile_name") == "@property def profile_name(self)"
    assert signature_of(path, "_account_id_set_without_credentials") == (
        "def _account_id_set_without_credentials(self, *, aws_account_id, aws_access_key_id, "
        "aws_secret_access_key, **kwargs)")


def test_pyarrow_read_table_keeps_keyword_defaults_with_strings():
    sig = signature_of(package_file("pyarrow", "parquet/core.py"), "read_table")
    assert sig.startswith("def read_table(source, *, columns=None, use_threads=True, schema=None, ")
    assert 'partitioning="hive", filesystem=None, filters=None, ' in sig
    assert sig.endswith(")") and "\n" not in sig and "  " not in sig


def test_python_whole_headers_over_the_boto3_package():
    """No multi-line def in boto3 loses a parameter: every name after `def` is followed by
    its parameter list, and the signature ends where the header does."""
    folder = os.path.dirname(package_file("boto3", "session.py"))
    checked = 0
    for base, _, files in os.walk(folder):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(base, name)
            with open(path, "rb") as fh:
                data = fh.read()
            for s in symbols.extract(languages.parse(path, data)):
                if s.kind != "function":
                    continue
                header = data[s.start:s.end].decode()
                if header.split("\n", 1)[0].rstrip().endswith("("):
                    checked += 1
                    assert s.signature.count("(") >= 1 and s.signature.rstrip().endswith(")") or "->" in s.signature, s
                    assert "def " + s.name + "(" in s.signature and not s.signature.endswith("("), s
    assert checked >= 10


def test_go_generic_function_drops_comments_between_parameters():
    sig = signature_of(os.path.join(REAL, "zap_json_encoder.go"), "safeAppendStringLike")
    assert sig == ("func safeAppendStringLike[S []byte | string](appendTo func(*buffer.Buffer, S), "
                   "decodeRune func(S) (rune, int), buf *buffer.Buffer, s S)")


def test_rust_attributes_and_where_clause():
    path = os.path.join(REAL, "serde_json_read.rs")
    assert signature_of(path, "parse_str") == (
        "#[doc(hidden)] fn parse_str<'s>(&'s mut self, scratch: &'s mut Vec<u8>) -> Result<Reference<'de, 's, str>>")
    assert any(" where " in s.signature for s in symbols.extract(languages.parse(path, open(path, "rb").read())))


def test_typescript_arrow_function_variables_are_signed_like_functions():
    path = os.path.join(REAL, "ky_merge.ts")
    assert signature_of(path, "mergeHooks") == (
        "export const mergeHooks = (original: Hooks = {}, incoming: Hooks = {}): Required<Hooks>")
    assert signature_of(path, "newHookValue") == (
        "function newHookValue<K extends keyof Hooks>(original: Hooks, incoming: Hooks, property: K): Required<Hooks>[K]")


def test_typescript_class_members():
    path = os.path.join(REAL, "ky_Ky.ts")
    assert signature_of(path, "constructor") == "constructor(input: Input, options: Options = {})"
    assert signature_of(path, "create") == "static create(input: Input, options: Options): ResponsePromise"


def test_java_annotations_generics_and_throws():
    path = os.path.join(REAL, "gson_Gson.java")
    assert signature_of(path, "fromJson", 1) == (
        '@SuppressWarnings({"unchecked", "TypeParameterUnusedInFormals"}) '
        "public <T> T fromJson(String json, Type typeOfT) throws JsonSyntaxException")
    assert signature_of(path, "excluder", kind="method") == "@Deprecated public Excluder excluder()"


def test_csharp_attribute_lists_on_method_and_parameter():
    sig = signature_of(os.path.join(REAL, "newtonsoft_JsonSchemaGenerator.cs"), "GenerateInternal")
    assert sig == ("[RequiresUnreferencedCode(MiscellaneousUtils.TrimWarning)] "
                   "[RequiresDynamicCode(MiscellaneousUtils.AotWarning)] private JsonSchema GenerateInternal("
                   "[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.Interfaces)] Type type, "
                   "Required valueRequired, bool required)")


def test_c_parameters_over_several_lines():
    sig = signature_of(os.path.join(REAL, "libuv_core.c"), "uv__getsockpeername")
    assert sig == "int uv__getsockpeername(const uv_handle_t* handle, uv__peersockfunc func, struct sockaddr* name, int* namelen)"


def test_cpp_trailing_specifiers_and_multi_line_parameters():
    path = os.path.join(REAL, "fmt_os.cc")
    assert signature_of(path, "vwindows_error") == (
        "std::system_error vwindows_error(int err_code, string_view format_str, format_args args)")
    assert signature_of(path, "utf8_system_category") == "class utf8_system_category final : public std::error_category"
    with open(path, "rb") as fh:
        names = [s.name for s in symbols.extract(languages.parse(path, fh.read()))]
    assert "FMT_CATCH" not in names  # `FMT_CATCH(...) {}` is a macro call, not a function


def test_ruby_keyword_defaults_over_two_lines():
    sig = signature_of(os.path.join(REAL, "rack_uploaded_file.rb"), "initialize")
    assert sig == ('def initialize(filepath = nil, ct = "text/plain", bin = false, path: filepath, '
                   "content_type: ct, binary: bin, filename: nil, io: nil)")


def test_lua_function_header():
    assert signature_of(os.path.join(REAL, "rxi_json.lua"), "json.decode") == "function json.decode(str)"


@pytest.mark.parametrize("source, name, expected", [
    ("class A:\n    @staticmethod\n    @cache(\n        size=3,\n    )\n    def f(a,  # first\n          b: int = 2,\n    ) -> int:\n        pass\n",
     "f", "@staticmethod @cache(size=3) def f(a, b: int = 2) -> int"),
    ("def g(x): return x\n", "g", "def g(x)"),
    ("@dataclass(frozen=True)\nclass P(Base,\n        metaclass=M):\n    x: int\n", "P",
     "@dataclass(frozen=True) class P(Base, metaclass=M)"),
])
def test_python_header_rules(source, name, expected):
    parsed = languages.parse("a.py", source.encode())
    assert next(s for s in symbols.extract(parsed) if s.name == name).signature == expected


def test_a_pathological_decorator_is_capped_but_parameters_are_not():
    table = ", ".join(f"({i}, {i + 1})" for i in range(200))
    src = f"@pytest.mark.parametrize('a, b', [{table}])\ndef test_x(a, b, c=1, d=2):\n    pass\n"
    sig = next(iter(symbols.extract(languages.parse("a.py", src.encode())))).signature
    assert sig.endswith("… def test_x(a, b, c=1, d=2)")
    assert len(sig.split("…")[0]) == symbols.DECORATOR_CAP - 1


@pytest.mark.parametrize("name", sorted(os.listdir(REAL)) + ["../sample.py", "../sample.go", "../sample.rs",
                                                           "../sample.md", "../sample.html", "../sample.css"])
def test_query_walk_finds_what_the_python_walk_finds(name):
    """The C query walk (lib.code.symbols.walk_specs) lists exactly the definitions of a full
    Python walk that honours each backend's stops, in the same order."""
    path = os.path.join(REAL, name)
    with open(path, "rb") as fh:
        parsed = languages.parse(path, fh.read())
    fast = [(s.name, s.kind, s.node.start_byte) for s in symbols.walk_specs(parsed, use_query=True)]
    slow = [(s.name, s.kind, s.node.start_byte) for s in symbols.walk_specs_python(parsed)]
    assert fast == slow and fast


@pytest.mark.parametrize("name", sorted(os.listdir(REAL)) + ["../sample.py", "../sample.go", "../sample.rs"])
def test_a_lookup_from_the_names_occurrences_finds_what_the_walk_finds(name):
    """``symbol`` starts from its name's occurrences (lib.code.symbols.specs_named): for every
    name of every real fixture's outline, the symbols found are the whole walk's, field for
    field, and the shortcut is taken for most of them."""
    path = os.path.join(REAL, name)
    with open(path, "rb") as fh:
        parsed = languages.parse(path, fh.read(), skip_bodies=True)

    def fields(syms):
        return [(s.name, s.kind, s.signature, s.start, s.end, s.start_line, s.end_line, s.doc) for s in syms]

    names = sorted({s.name for s in symbols.extract(parsed)})
    shortcut = 0
    for target in names:
        def want(spec, target=target):
            return spec.name == target

        assert fields(symbols.extract(parsed, want, target)) == fields(symbols.extract(parsed, want)), target
        specs = symbols.specs_named(parsed, target)
        shortcut += bool(specs and any(want(spec) for spec in specs))
    if parsed.language in symbols.NAMED_LANGUAGES:
        assert shortcut >= len(names) * 0.7, (shortcut, len(names))
    else:
        assert shortcut == 0


def test_javascript_methods_assigned_to_an_object_are_listed():
    """Express's response.js defines every method as `res.x = function x(…) {…}`; upstream's
    outline of it showed only its imports."""
    path = os.path.join(REAL, "express_response.js")
    with open(path, "rb") as fh:
        syms = symbols.extract(languages.parse(path, fh.read()))
    by = {s.name: s for s in syms}
    assert by["res.status"].kind == "function" and by["res.status"].signature == "res.status = function status(code)"
    assert by["res.links"].signature == "res.links = function(links)"
    assert by["res.sendFile"].signature == "res.sendFile = function sendFile(path, options, callback)"
    assert "module.exports" not in by  # `module.exports = res` assigns no function
    with open(path, encoding="utf-8") as fh:  # every `res.x =` at the start of a line, chained ones too
        written = {line.split(" =")[0] for line in fh if line.startswith("res.") and " =" in line}
    assert {"res.set", "res.header", "res.contentType", "res.type"} <= written and len(written) == 22
    assert {s.name for s in syms if s.name.startswith("res.")} == written  # chained `a = b = function` too


@pytest.mark.parametrize("path, source, name, expected", [
    ("a.ts", 'class A {\n  @HostListener("click", ["$event"])\n  onClick(e: Event): void {}\n}\n', "onClick",
     '@HostListener("click", ["$event"]) onClick(e: Event): void'),
    ("a.rs", '#[derive(Debug, Clone)]\n#[serde(rename_all = "camelCase")]\npub struct Config {\n    a: u8,\n}\n', "Config",
     '#[derive(Debug, Clone)] #[serde(rename_all = "camelCase")] pub struct Config'),
])
def test_decorators_outside_the_definition_node(path, source, name, expected):
    """TypeScript method decorators and Rust attributes are siblings before the definition."""
    parsed = languages.parse(path, source.encode())
    assert next(s for s in symbols.extract(parsed) if s.name == name).signature == expected


@pytest.mark.parametrize("name", sorted(os.listdir(REAL)))
def test_symbol_extracts_only_its_match_and_equals_the_outline_entry(name):
    """``symbol`` builds a signature and doc only for the specs it looks for; the symbol it gets
    is the outline's first of that name (and kind), field for field."""
    from lib.code import lookup

    path = os.path.join(REAL, name)
    with open(path, "rb") as fh:
        parsed = languages.parse(path, fh.read())
    full = symbols.extract(parsed)
    names = sorted({s.name for s in full})
    for wanted in names[::max(1, len(names) // 3)]:
        for kind in (None, next(s.kind for s in full if s.name == wanted)):
            one = symbols.extract(parsed, want=lambda spec: spec.name == wanted and kind in (None, spec.kind))
            expected = lookup.find(full, wanted, kind)
            got = lookup.find(one, wanted, kind)
            assert (got.name, got.kind, got.signature, got.start, got.end, got.start_line, got.end_line, got.doc) == (
                expected.name, expected.kind, expected.signature, expected.start, expected.end, expected.start_line,
                expected.end_line, expected.doc)


@pytest.mark.parametrize("name", ["real/normalize_test.html", "sample.html"])
def test_an_html_heading_read_from_the_bytes_is_the_walks_text(name):
    """Plain element content is read from the bytes (lib.code.backends._html_plain_text): for
    every element of real HTML, the text equals the walk over its text and entity nodes, and
    most elements take the byte path."""
    path = os.path.join(REAL, "..", name)
    with open(path, "rb") as fh:
        data = fh.read()
    stack, plain, total = [languages.parse(path, data).tree.root_node], 0, 0
    while stack:
        node = stack.pop()
        if node.type == "element" and node.child_count >= 2:
            total += 1
            tag, end = node.child(0), node.child(node.child_count - 1)
            if end.type == "end_tag" and backends._html_plain_text(data[tag.end_byte:end.start_byte]) is not None:
                plain += 1
            assert backends._html_text(node, data) == backends.html_text_walk(node, data)
        stack.extend(node.children)
    assert total and plain * 2 > total
