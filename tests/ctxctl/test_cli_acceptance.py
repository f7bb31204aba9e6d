"""Acceptance cases 1–10 of the ctxctl contract (docs/ctxctl.md, Tests): outline, symbol and read on the
21-line Rust fixture, errors and exit codes, JSON envelopes."""
from __future__ import annotations

import json
import os

import pytest


def test_outline_text_lists_symbols_with_aligned_kinds_and_metrics(ctxctl, fixture):
    path = fixture("sample.rs")
    r = ctxctl("outline", path)
    assert r.code == 0, r
    assert r.out.startswith("# sample.rs  [4 symbols, ~622 B -> ")
    assert "4 symbols" in r.out and "saved ~" in r.out
    assert "L:4-6" in r.out
    assert "struct  Point" in r.out and "const   ANSWER" in r.out
    assert "pub fn add(a: i32, b: i32) -> i32\n" in r.out
    assert "  fn      add        L:4-6        pub fn add(a: i32, b: i32) -> i32\n" in r.out


def test_outline_json_has_entries_without_byte_ranges_and_positive_savings(ctxctl, fixture):
    path = fixture("sample.rs")
    r = ctxctl("outline", path, "--json", "--exact-tokens")
    assert r.code == 0 and r.out.endswith("}\n")
    doc = json.loads(r.out)
    assert list(doc) == sorted(doc)
    assert doc["tool"] == "outline" and doc["schema_version"] == 1 and doc["path"] == "sample.rs"
    assert doc["language"] == "rust"
    assert len(doc["symbols"]) == 4
    add = doc["symbols"][0]
    assert set(add) == {"name", "kind", "start_line", "end_line", "signature", "doc_comment"}
    assert add["doc_comment"] == "Adds two numbers."
    assert all("byte_range" not in s for s in doc["symbols"])
    saved = doc["saved"]
    assert saved["percent"] > 0 and saved["tokens_before"] > saved["tokens_after"] and "estimated" not in saved
    assert ctxctl("outline", path, "--format", "json", "--exact-tokens").out == r.out
    estimated = json.loads(ctxctl("outline", path, "--json").out)["saved"]  # the default: no tokenizer load
    assert estimated["estimated"] is True and estimated["tokens_before"] > 0


def test_outline_json_no_doc_no_lines_drops_fields(ctxctl, fixture):
    path = fixture("sample.rs")
    doc = json.loads(ctxctl("outline", path, "--json", "--no-doc", "--no-lines").out)
    for s in doc["symbols"]:
        assert set(s) == {"name", "kind", "signature"}


def test_missing_file_exits_1_with_failed_to_read(ctxctl, project):
    r = ctxctl("outline", "missing.rs")
    assert r.code == 1 and "failed to read" in r.err and r.err.startswith("error: ")
    r = ctxctl("outline", "missing.rs", "--json")
    assert r.code == 1 and r.err == ""
    err = json.loads(r.out)["error"]
    assert err["code"] == 1 and "failed to read missing.rs" in err["message"]


def test_unsupported_extension_exits_2(ctxctl, write):
    path = write("nope.xyz", "whatever\n")
    for cmd in ("outline", "deps"):
        r = ctxctl(cmd, path)
        assert r.code == 2 and "unsupported extension: nope.xyz" in r.err


def test_directory_and_oversized_inputs_are_refused(ctxctl, project, write):
    os.mkdir("adir.rs")
    r = ctxctl("outline", "adir.rs")
    assert r.code == 1 and r.err == "error: adir.rs is a directory, not a file; pass one file inside it\n"
    os.mkdir("src")  # no extension at all: a bad path (exit 1), not "unsupported extension" (new-user report)
    for argv in (("outline", "src"), ("deps", "src"), ("symbol", "src", "--name", "x"), ("read", "src", "--lines", "1")):
        r = ctxctl(*argv)
        assert r.code == 1 and r.err == "error: src is a directory, not a file; pass one file inside it\n", (argv, r)
    write(".ctxctl/config.toml", "[limits]\nmax_file_bytes = 10\n")
    path = write("big.rs", "fn a() {}\nfn b() {}\n")
    r = ctxctl("outline", path)
    assert r.code == 1 and "big.rs: file is 20 bytes, exceeding max_file_bytes limit of 10 bytes" in r.err


def test_fifo_input_is_refused_without_hanging(ctxctl, project):
    os.mkfifo("pipe.rs")
    r = ctxctl("read", "pipe.rs", "--lines", "1")
    assert r.code == 1 and "not a regular file (FIFO)" in r.err


def test_symbol_prints_header_and_verbatim_body(ctxctl, fixture):
    path = fixture("sample.rs")
    r = ctxctl("symbol", path, "--name", "add")
    assert r.code == 0
    assert r.out.startswith("# add  sample.rs:4-6  (")
    assert ":4-6" in r.out and "a + b" in r.out and "saved ~" in r.out
    r = ctxctl("symbol", path, "--name", "norm", "--json")
    doc = json.loads(r.out)
    assert doc["symbol"]["kind"] == "function" and doc["tool"] == "symbol" and "slice" in doc
    one = ctxctl("symbol", path, "--name", "ANSWER")
    assert one.out.startswith("# ANSWER  sample.rs:19  (")


def test_symbol_signature_and_line_subranges(ctxctl, fixture):
    path = fixture("sample.rs")
    r = ctxctl("symbol", path, "--name", "add", "--signature")
    assert r.code == 0 and "a + b" not in r.out and "pub fn add(a: i32, b: i32) -> i32" in r.out
    r = ctxctl("symbol", path, "--name", "add", "--lines", "2-3")
    assert r.code == 0 and "a + b" in r.out and "}" in r.out
    assert "pub fn add" not in r.out.split("\n", 1)[1]
    assert r.out.startswith("# add  sample.rs:4-6")
    r = ctxctl("symbol", path, "--name", "add", "--lines", "5-9")
    assert r.code == 2 and "out of bounds (symbol has 3 lines)" in r.err
    r = ctxctl("symbol", path, "--name", "add", "--lines", "1-2,4-5")
    assert r.code == 2 and "symbol --lines accepts a single range (e.g. 3-10)" in r.err


def test_symbol_compact_folds_body_and_conflicts_with_other_views(ctxctl, fixture):
    path = fixture("sample.rs")
    r = ctxctl("symbol", path, "--name", "add", "--compact")
    assert r.code == 0
    assert "// ... [1 line omitted]" in r.out and "a + b" not in r.out
    doc = json.loads(ctxctl("symbol", path, "--name", "add", "--compact", "--json").out)
    assert "compact" in doc and "slice" not in doc
    assert ctxctl("symbol", path, "--name", "add", "--compact", "--signature").code == 2
    assert ctxctl("symbol", path, "--name", "add", "--compact", "--lines", "1-2").code == 2


def test_symbol_not_found_exits_4(ctxctl, fixture):
    path = fixture("sample.rs")
    r = ctxctl("symbol", path, "--name", "nope")
    assert r.code == 4 and "symbol not found: nope" in r.err
    r = ctxctl("symbol", path, "--name", "add", "--kind", "var")
    assert r.code == 4 and "symbol not found: add (kind Variable)" in r.err
    assert ctxctl("symbol", path, "--name", "add", "--kind", "nonsense").code == 2


def test_symbol_kind_filter_picks_the_matching_definition(ctxctl, write):
    path = write("dup.ts", "class A {\n  run() { return 1; }\n}\nconst run = 2;\n")
    doc = json.loads(ctxctl("symbol", path, "--name", "run", "--kind", "var", "--json").out)
    assert doc["symbol"]["kind"] == "var" and doc["symbol"]["start_line"] == 4


def test_read_ranges_in_order_with_saved_line(ctxctl, fixture):
    path = fixture("sample.rs")
    r = ctxctl("read", path, "--lines", "1-3,4-4")
    assert r.code == 0
    assert r.out.startswith("# sample.rs:1-3\n//! Fixture module")
    assert "/// Adds two numbers." in r.out and "# sample.rs:4-4\npub fn add" in r.out
    assert "Saved ~" in r.out
    assert "pub const ANSWER: i32 = 42;" in ctxctl("read", path, "--lines", "19-").out
    r = ctxctl("read", path, "--lines", "99-100")
    assert r.code == 2 and "line range 99-100 out of bounds (file has 21 lines)" in r.err
    r = ctxctl("read", path, "--lines", "abc")
    assert r.code == 2 and r.err == "error: invalid range `abc`: expected N, N-M, or N-\n"
    doc = json.loads(ctxctl("read", path, "--lines", "1-2", "--json").out)
    assert "language" not in doc
    first = doc["ranges"][0]
    assert first["start_line"] == 1 and first["end_line"] == 2 and "Fixture module" in first["slice"]


def test_read_range_errors(ctxctl, fixture):
    path = fixture("sample.rs")
    assert "empty line range" in ctxctl("read", path, "--lines", " , ").err
    assert "ranges are 1-based; start must be >= 1" in ctxctl("read", path, "--lines", "0-2").err
    assert "range 5-3 is inverted" in ctxctl("read", path, "--lines", "5-3").err


def test_read_keeps_crlf_and_clamps_closed_end(ctxctl, write):
    path = write("crlf.txt", b"one\r\ntwo\r\nthree")
    r = ctxctl("read", path, "--lines", "2-99", "--json")
    assert json.loads(r.out)["ranges"][0] == {"start_line": 2, "end_line": 3, "slice": "two\r\nthree"}


def test_no_saved_and_output_file(ctxctl, fixture, project):
    path = fixture("sample.rs")
    r = ctxctl("outline", path, "--no-saved")
    assert r.out.startswith("# sample.rs  [4 symbols]\n") and "saved" not in r.out
    r = ctxctl("outline", path, "--json", "--output", "out.json")
    assert r.out == "" and r.err == "wrote out.json\n"
    with open(os.path.join(project, "out.json"), encoding="utf-8") as fh:
        assert fh.read() == ctxctl("outline", path, "--json").out


def test_outline_parse_failure_exits_3_with_partial_list(ctxctl, write):
    path = write("broken.rs", "fn ok() {}\nfn broken( {\n")
    r = ctxctl("outline", path)
    assert r.code == 3
    assert "warning: parse failed (" in r.err and "symbol list may be incomplete" in r.err
    doc = json.loads(ctxctl("outline", path, "--json").out)
    assert doc["parse_error"]["count"] >= 1
    assert doc["parse_error"]["message"] == "tree-sitter reported syntax errors; symbol list may be incomplete"
    assert "ok" in [s["name"] for s in doc["symbols"]]


def test_every_command_has_help_text():
    import ctxctl as cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(sub.choices) == {"outline", "symbol", "read", "deps", "exec", "mcp"}
    for name, sp in sub.choices.items():
        assert sp.description, name


def test_docs_cover_every_command_and_the_mcp_tool_list():
    from lib.code import mcp
    from tests.ctxctl.conftest import ROOT

    with open(os.path.join(ROOT, "docs", "ctxctl.md"), encoding="utf-8") as fh:
        doc = fh.read()
    for command in ("outline", "symbol", "read", "deps", "exec", "mcp"):
        assert f"ctxctl.py {command}" in doc, command
    for tool in mcp.tool_list():
        assert f"`{tool['name']}`" in doc, tool["name"]
    assert "reads the real docstring" in doc


@pytest.mark.parametrize("argv", [
    ["outline", "sample.rs", "--json", "--no-saved"],
    ["symbol", "sample.rs", "--name", "add", "--kind", "fn", "--signature"],
    ["read", "sample.rs", "--lines", "1-3", "--no-saved"],
    ["deps", "sample.rs", "--format", "json"],
])
def test_the_fast_command_line_parser_agrees_with_argparse(argv):
    """ctxctl.fast_args (the file commands without argparse) yields what argparse yields."""
    import ctxctl as cli

    fast = vars(cli.fast_args(argv))
    slow = vars(cli.build_parser().parse_args(argv))
    assert {k: v for k, v in fast.items() if k in slow} == slow


@pytest.mark.parametrize("argv", [["outline"], ["outline", "a.rs", "--bogus"], ["symbol", "a.rs"],
                                  ["symbol", "a.rs", "--name", "x", "--compact", "--lines", "1"],
                                  ["outline", "-h"], ["exec", "true"], ["symbol", "a.rs", "--name", "x", "--kind", "nope"]])
def test_the_fast_parser_leaves_everything_unusual_to_argparse(argv):
    import ctxctl as cli

    assert cli.fast_args(argv) is None


@pytest.mark.parametrize("argv, wrong", [
    (("outline", "a.py", "--bogus"), "unrecognized arguments: --bogus; see `ctxctl outline --help`"),
    (("symbol", "a.py"), "the following arguments are required: --name; see `ctxctl symbol --help`"),
    (("exec", "true", "--head", "x"), "argument --head: invalid value 'x': expected a non-negative integer; "
                                      "see `ctxctl exec --help`"),
    (("frobnicate",), "argument COMMAND: invalid choice: 'frobnicate'"),
])
def test_a_bad_flag_is_one_line_naming_the_help_not_the_usage_block(ctxctl, argv, wrong):
    """New-user report 3: a bad command line printed the whole usage text."""
    r = ctxctl(*argv)
    assert r.code == 2 and r.out == "", r
    assert r.err.count("\n") == 1 and r.err.startswith("error: ") and wrong in r.err and "--help`" in r.err, r
    assert "usage:" not in r.err


def test_a_closed_stdout_ends_quietly_with_141(tmp_path):
    """New-user report 1: ``ctxctl outline --json f | head -c 300`` printed a BrokenPipeError
    traceback. The reader closes the pipe before ctxctl writes; no traceback, exit 141."""
    import subprocess
    import sys

    from tests.ctxctl.conftest import ROOT

    big = tmp_path / "many.py"
    big.write_text("".join(f"def function_number_{i}(argument_{i}, other=None):\n    return {i}\n" for i in range(400)))
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "ctxctl.py"), "outline", "--json", str(big)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path))
    proc.stdout.close()  # like `head` exiting before the first write: deterministic EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == "", err
