"""``exec`` keeps what a developer looks for, on real failing builds and test runs, and stays
bounded (issues #24 and #19).

Each toolchain case runs the real tool twice on a small broken project: once directly (the
raw output, read with an independent criterion: the lines naming the broken file plus the
tool's own summary lines, listed by hand) and once through ``ctxctl exec``; every one of those
lines must survive the fold, the output must shrink, and the exit code must be the child's.
Noise (``seq``) pads outputs that would otherwise pass through unfolded. Tools not installed
here are skipped. The #19 reproductions (a descendant that leaves the session, a catastrophic
keep pattern, a line over 1 MiB) are at the end.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from lib.code import config, execute, fold
from lib.code.errors import ExitError


def raw_run(argv, cwd) -> tuple:
    r = subprocess.run(argv, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL)
    out = r.stdout.decode("utf-8", "replace")
    err = r.stderr.decode("utf-8", "replace")
    return r.returncode, (out + ("\n" if out and err and not out.endswith("\n") else "") + err)


def folded_run(cmd: str, cwd) -> dict:
    res = execute.run(cmd, config.Config(), json_mode=True, cwd=str(cwd), timeout=120)
    doc = json.loads(res.out)
    assert res.code == doc["exit_code"]
    return doc


def _stable(line: str) -> str:
    """A line without what differs between two runs (thread ids, timings, the padding of a
    pytest summary around its timing)."""
    return re.sub(r"={2,}", "==", re.sub(r"\(\d+\)|[\d.]+m?s\b", "#", line))


def check(cmd: str, argv: list, cwd, must: list, expect_code: int):
    """Run raw and folded; every raw line matching one of the regexes ``must`` is kept."""
    code, raw = raw_run(argv, cwd)
    doc = folded_run(cmd, cwd)
    assert code == expect_code and doc["exit_code"] == code
    wanted = [_stable(line) for line in raw.splitlines() if any(re.search(m, line) for m in must)]
    assert wanted, raw  # the criterion finds real diagnostics in the raw output
    kept = [_stable(line) for line in doc["compressed"].splitlines()]
    missing = [line for line in wanted if line not in kept]
    assert not missing, (missing, doc["compressed"])
    assert len(doc["compressed"]) < len(raw)
    return raw, doc


def need(tool):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")


def test_pytest_failures_tracebacks_and_summary(tmp_path):
    (tmp_path / "test_calc.py").write_text(
        "import pytest\n\n\ndef add(a, b):\n    return a - b\n\n\n"
        "@pytest.mark.parametrize('i', range(30))\ndef test_ok(i):\n    assert i == i\n\n\n"
        "def test_add():\n    assert add(2, 2) == 4\n\n\n"
        "def helper():\n    raise KeyError('missing')\n\n\ndef test_raises():\n    helper()\n")
    cmd = f"{sys.executable} -m pytest -v -p no:cacheprovider test_calc.py"
    raw, doc = check(cmd, cmd.split(), tmp_path,
                     [r"test_calc\.py:\d", "^FAILED", "^E  ", "^>  ", "2 failed, 30 passed"], expect_code=1)
    assert "assert 0 == 4" in doc["compressed"] and "KeyError: 'missing'" in doc["compressed"]
    assert "test_ok[17] PASSED" in raw and "test_ok[17] PASSED" not in doc["compressed"]


def test_unittest_reports_keep_their_assertion_diffs(tmp_path):
    """unittest prints a failed assertEqual's diff after an empty line (``First differing
    element``, ``- [1, 2, 3]``, ``?        ^``, ``+ [1, 2, 4]``): the report runs to the next
    separator line, so the diff survives with the traceback; passing tests' lines fold away."""
    oks = "".join(f"    def test_ok{i}(self):\n        pass\n\n" for i in range(60))
    (tmp_path / "test_lists.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n"
        "    def test_lists(self):\n        self.assertEqual([1, 2, 3], [1, 2, 4])\n\n"
        "    def test_dicts(self):\n        self.assertEqual({'a': 1, 'b': 2}, {'a': 1, 'b': 3})\n\n"
        "    def test_raises(self):\n        raise KeyError('zz')\n\n" + oks)
    cmd = f"{sys.executable} -m unittest -v test_lists"
    raw, doc = check(cmd, cmd.split(), tmp_path,
                     [r"^(?:FAIL|ERROR): ", r"^First differing element", r"^- \[1, 2, 3\]", r"^\+ \[1, 2, 4\]",
                      r"^\?\s+\^", r"^- \{'a': 1, 'b': 2\}", r"^\+ \{'a': 1, 'b': 3\}", r"^AssertionError",
                      r"^KeyError", r"^Ran \d+ tests", r"^FAILED \("], expect_code=1)
    assert "test_ok17 (" in raw and "test_ok17 (" not in doc["compressed"]


def test_python_traceback_keeps_every_frame(tmp_path):
    (tmp_path / "app.py").write_text(
        "for i in range(40):\n    print('loading', i)\n\n\ndef parse(x):\n    return int(x)\n\n\n"
        "def main():\n    return parse('nope')\n\n\nmain()\n")
    cmd = f"{sys.executable} app.py"
    raw, doc = check(cmd, cmd.split(), tmp_path,
                     ["Traceback", 'File "', "return int", "return parse", r"^\s+main\(\)", "ValueError"], expect_code=1)


def test_rustc_errors_spans_and_code_frames(tmp_path):
    need("rustc")
    (tmp_path / "bad.rs").write_text(
        "fn main() {\n    let x: i32 = \"text\";\n    println!(\"{}\", undefined_name);\n}\n")
    cmd = "sh -c 'seq 1 40; rustc --color never bad.rs'"
    raw, doc = check(cmd, ["sh", "-c", "seq 1 40; rustc --color never bad.rs"], tmp_path,
                     [r"error\[E0", "--> bad.rs:", r"\^\^\^", "aborting due to", r"\d+ \|"], expect_code=1)


def test_cargo_test_failed_names_and_result(tmp_path, monkeypatch):
    need("cargo")
    monkeypatch.setenv("RUST_BACKTRACE", "0")  # the panic message, not a 20-frame backtrace
    (tmp_path / "src").mkdir()
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n')
    tests = "".join(f"    #[test]\n    fn ok_{i}() {{ assert_eq!(add(1, {i}), 1 + {i}); }}\n" for i in range(25))
    (tmp_path / "src" / "lib.rs").write_text(
        "pub fn add(a: i32, b: i32) -> i32 { a + b + (b == 7) as i32 }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n"
        + tests + "    #[test]\n    fn adds_seven() { assert_eq!(add(1, 7), 8); }\n}\n")
    env_cmd = "cargo test --offline --color never"
    raw, doc = check(env_cmd, env_cmd.split(), tmp_path,
                     ["adds_seven", "panicked at", "left: 9", "right: 8", "test result: FAILED"], expect_code=101)
    assert "test tests::ok_3 ... ok" in raw and "test tests::ok_3 ... ok" not in doc["compressed"]


def test_javac_errors_and_count(tmp_path):
    need("javac")
    (tmp_path / "Order.java").write_text(
        "public class Order {\n    int total() {\n        return missing + 1;\n    }\n"
        "    String name() {\n        return 42;\n    }\n}\n")
    cmd = "sh -c 'seq 1 40; javac Order.java'"
    raw, doc = check(cmd, ["sh", "-c", "seq 1 40; javac Order.java"], tmp_path,
                     ["Order.java:", r"^\s+\^", "2 errors", "symbol:", "location:"], expect_code=1)


def test_node_test_runner_failure_and_summary(tmp_path):
    need("node")
    (tmp_path / "calc.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "for (let i = 0; i < 25; i++) test(`passes ${i}`, () => assert.strictEqual(1, 1));\n"
        "test('adds numbers', () => { assert.strictEqual(1 + 1, 3); });\n")
    cmd = "node --test calc.test.js"
    raw, doc = check(cmd, cmd.split(), tmp_path,
                     ["not ok", "calc.test.js:", "2 !== 3", "# fail 1", "# pass 25"], expect_code=1)
    assert "ok 12 - passes 11" in raw and "ok 12 - passes 11" not in doc["compressed"]


def test_node_uncaught_exception_stack(tmp_path):
    need("node")
    (tmp_path / "app.js").write_text(
        "for (let i = 0; i < 40; i++) console.log('step', i);\n"
        "function load(cfg) { return cfg.port.value; }\nload({});\n")
    cmd = "node app.js"
    raw, doc = check(cmd, cmd.split(), tmp_path, ["app.js:", "TypeError", "^    at "], expect_code=1)


def test_gcc_errors_notes_and_code_frames(tmp_path):
    need("gcc")
    (tmp_path / "bad.c").write_text(
        "#include <stdio.h>\nint main(void) {\n    int x = undeclared + 1;\n    printf(\"%d\\n\", x)\n    return 0;\n}\n")
    cmd = "sh -c 'seq 1 40; gcc -fdiagnostics-color=never -c bad.c -o bad.o'"
    raw, doc = check(cmd, ["sh", "-c", "seq 1 40; gcc -fdiagnostics-color=never -c bad.c -o bad.o"], tmp_path,
                     ["bad.c", "undeclared", r"\|"], expect_code=1)


def test_gxx_template_errors_with_instantiation_context(tmp_path):
    """C++: a failed template instantiation — g++ names the file, the function it was in
    (``In instantiation of …``, ``required from here``) and the failing line."""
    need("g++")
    (tmp_path / "bad.cpp").write_text(
        "#include <string>\n#include <vector>\ntemplate <typename T>\nT twice(const T& v) {\n"
        "    return v * 2;\n}\nint main() {\n    std::vector<int> xs{1, 2};\n"
        "    std::string s = twice(std::string(\"a\"));\n    return xs.size() + s.size() + missing;\n}\n")
    argv = ["sh", "-c", "seq 1 40; g++ -fdiagnostics-color=never -c bad.cpp -o bad.o"]
    check(" ".join(argv[:2]) + f" '{argv[2]}'", argv, tmp_path,
          ["bad.cpp", "In instantiation of", "required from here", "missing"], expect_code=1)


def test_go_build_the_issue_transcript(tmp_path):
    """Issue #24's Go build: 120 `go: downloading` lines around the three diagnostics. Go is
    not installed here, so the transcript is replayed with the exit code Go gives."""
    downloads = [f"go: downloading example.com/mod{i} v1.{i}.0" for i in range(120)]
    diagnostics = ["# example.com/shop",
                   "./order.go:12:5: undefined: NewRepo",
                   "./order.go:20:9: cannot use total (variable of type int) as string value in argument to fmt.Sprint",
                   "package example.com/shop",
                   "\timports example.com/shop/store",
                   "\timports example.com/shop: import cycle not allowed"]
    lines = downloads[:60] + diagnostics[:3] + downloads[60:] + diagnostics[3:]
    script = tmp_path / "go.sh"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(lines) + "\nEOF\nexit 1\n")
    script.chmod(0o755)
    doc = folded_run(str(script), tmp_path)
    assert doc["exit_code"] == 1
    kept = doc["compressed"].splitlines()
    for line in diagnostics[:3] + diagnostics[5:]:
        assert line in kept, doc["compressed"]
    assert sum(1 for line in kept if line.startswith("go: downloading")) <= 10


EXEC_FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "exec")


@pytest.mark.parametrize("name,noise,must", [
    # a GitHub Actions log of `dotnet test` (VSTest, xUnit, MSBuild) with two failing tests
    ("dotnet_test_window_logger.log", 0,
     [r"\[FAIL\]$", r"^\s+Failed \S+ \[\d+ ms\]$", r"^\s+Error Message:$", r"^\s+Expected dataSource",
      r"MainFormTests\.cs[(:]", r"^Test Run Failed\.", r"^Total tests: 6$", r"^\s+Failed: 2$", r"-- FAILED\.$",
      r"MSB4181", r"^Build FAILED\."]),
    # busted's utfTerminal output of one failing spec (ANSI colours as the terminal got them)
    ("busted_utfTerminal_failure.txt", 100,
     [r"successes / .*failure", r"Failure .* @ ", r"should be easy to use$", r"spec/test_spec\.lua:3:", r"'Yup\.'"]),
    # a GitHub Actions log of octokit.rb's `bundle exec rspec`: one failing example, two errors in it
    ("rspec_octokit_actions.log", 0,
     [r"  1\) Octokit::Client::Repositories\.edit_repository", r"Got 0 failures and 2 other errors:$",
      r"1\.1\) Failure/Error: raise error$", r"1\.2\) Failure/Error: @client\.delete_repository",
      r"Octokit::Forbidden:$", r"403 - Resource not accessible", r"NoMethodError:$", r"undefined method `full_name'",
      r"# \./spec/octokit/client/repositories_spec\.rb:67:in", r"# \./spec/octokit/client/repositories_spec\.rb:71:in",
      r"854 examples, 1 failure$", r"Z Failed examples:$", r"rspec \./spec/octokit/client/repositories_spec\.rb:75 # ",
      r"exit code 1\.$"]),
    # a GitHub Actions log of a minitest run through rake: three failures and rake's abort
    ("minitest_actions.log", 0,
     [r"  \d\) Failure:$", r"GithubDiffParserTest#test_boom1 \[\S+_test\.rb:7\]:$",
      r"GithubDiffParserTest#test_boom3 \[\S+_test\.rb:15\]:$", r"GithubDiffParserTest#test_boom2 \[\S+_test\.rb:11\]:$",
      r"Expected true to not be truthy\.$", r"Epic Fail!$", r"Expected false to be truthy\.$",
      r"31 runs, 903 assertions, 3 failures, 0 errors, 0 skips$", r"rake aborted!$", r"Command failed with status \(1\)$"]),
    # tsc's own output of a failing `tsc --explainFiles --listEmittedFiles` (TypeScript's test baseline)
    ("tsc_dts_errors.txt", 100,
     [r"^src/index\.ts:2:14 - error TS4023: Exported variable 'api'", r"^Found 1 error in src/index\.ts:2$"]),
])
def test_recorded_runs_of_toolchains_not_installed_here_keep_their_diagnostics(tmp_path, name, noise, must):
    """Real output of tools this machine lacks (sources in tests/fixtures/NOTICE.md), replayed
    through ``ctxctl exec`` with the failing run's exit code: every line the criterion picks
    (the failed tests' names, messages and locations, the tool's summary) survives the fold.
    ``noise`` lines of ``seq`` come first where the output alone is too short to fold."""
    path = os.path.join(EXEC_FIXTURES, name)
    argv = ["sh", "-c", f"seq 1 {noise}; cat '{path}'; exit 1" if noise else f"cat '{path}'; exit 1"]
    code, raw = raw_run(argv, tmp_path)
    doc = folded_run(" ".join(argv[:2]) + " \"" + argv[2] + "\"", tmp_path)
    assert code == 1 and doc["exit_code"] == 1
    plain = [fold.normalise(line.encode()).decode() for line in raw.splitlines()]
    wanted = [line for line in plain if any(re.search(m, line) for m in must)]
    assert len(wanted) >= len(must), wanted  # every criterion finds its line in the raw output
    kept = [fold.normalise(line.encode()).decode() for line in doc["compressed"].splitlines()]
    missing = [line for line in wanted if line not in kept]
    assert not missing, (missing, doc["compressed"])
    assert len(doc["compressed"]) < len(raw)


def test_exit_codes_are_exactly_the_childs(tmp_path):
    for code in (0, 1, 2, 101, 255):
        assert folded_run(f"sh -c 'exit {code}'", tmp_path)["exit_code"] == code
    assert folded_run("sh -c 'kill -9 $$'", tmp_path)["exit_code"] == 137


def test_empty_output_invents_nothing(tmp_path):
    doc = folded_run("true", tmp_path)
    assert doc["compressed"] == "" and "full_output" not in doc and "warning" not in doc
    assert doc["saved"] == {"percent": 0, "tokens_after": 0, "tokens_before": 0}
    res = execute.run("true", config.Config(), cwd=str(tmp_path))
    assert res.out == "$ true\nSaved ~0% (0 -> 0 tokens)\n" and res.warnings == []


def test_raw_bypass_prints_everything(tmp_path):
    cmd = "sh -c 'seq 1 500'"
    res = execute.run(cmd, config.Config(), cwd=str(tmp_path), raw=True, json_mode=True)
    doc = json.loads(res.out)
    assert doc["compressed"] == "".join(f"{i}\n" for i in range(1, 501)) and "full_output" not in doc
    assert doc["saved"]["percent"] == 0


# -- issue #19: bounded ------------------------------------------------------------------------

def _alive(marker: str) -> list:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        out.append(int(name))
            except OSError:
                pass
    return out


def test_descendant_that_leaves_the_session_does_not_hold_the_call(tmp_path):
    # `setsid` forks (the child is a session leader already), so the command exits at once
    # while `sleep` in its own new session holds stdout open
    start = time.monotonic()
    res = execute.run("setsid sleep 75.19", config.Config(), cwd=str(tmp_path), timeout=30)
    assert time.monotonic() - start < 20  # not a budget: the 75 s sleeper did not hold the answer
    assert res.code == 0
    assert any("background processes kept its output open" in w for w in res.warnings)
    time.sleep(0.2)
    assert _alive("75.19") == []


def test_timeout_kills_descendants_outside_the_process_group(tmp_path):
    start = time.monotonic()
    with pytest.raises(ExitError) as info:
        execute.run("sh -c 'setsid sleep 76.29 & sleep 60'", config.Config(), cwd=str(tmp_path), timeout=1)
    assert "exceeded the 1s execution timeout and was killed" in info.value.message
    assert time.monotonic() - start < 20  # not a budget
    time.sleep(0.2)
    assert _alive("76.29") == []


def test_mcp_exec_with_a_session_leaving_descendant_answers(tmp_path):
    from lib.code import mcp

    adapter = mcp.Adapter(str(tmp_path), config.Config(), exec_timeout=30)
    r = adapter.call("ctxctl_exec", {"cmd": "setsid sleep 77.39"})
    assert "isError" not in r and "they were killed after 2s" in r["content"][0]["text"]
    assert adapter.call("ctxctl_read", {"file": "x"})["isError"] is True  # the server still answers
    time.sleep(0.2)
    assert _alive("77.39") == []


def test_catastrophic_keep_pattern_runs_in_linear_time(tmp_path):
    (tmp_path / ".ctxctl").mkdir()
    data = "".join("a" * 5000 + f"b{i}\n" for i in range(200)).encode()
    patterns = fold.compile_patterns(["^(a+)+$"])
    start = time.monotonic()
    out = fold.compress(data, patterns)
    assert time.monotonic() - start < 20  # not a budget: backtracking `re` would run for ages here
    assert out.folded and out.kept == 0


def test_keep_patterns_without_a_linear_time_guarantee_are_refused():
    for pat in ("(?=lookahead)", r"(a)\1"):
        with pytest.raises(ExitError) as info:
            fold.compile_patterns([pat])
        assert info.value.message.startswith(f"invalid regex pattern `{pat}`: ")


def test_over_long_line_keeps_a_recovery_file_and_an_honest_figure(tmp_path):
    size = 3 * fold.LINE_CAP
    cmd = f"{sys.executable} -c \"import sys; sys.stdout.write('word ' * {size // 5} + chr(10) + 'end' + chr(10))\""
    doc = folded_run(cmd, tmp_path)
    assert f"... [line truncated at {fold.LINE_CAP} bytes]" in doc["compressed"]
    with open(doc["full_output"], "rb") as fh:
        assert len(fh.read()) == size // 5 * 5 + 5  # every byte, the dropped two thirds included
    saved = doc["saved"]
    assert saved["estimated"] is True
    # the shown part is about a third of the line: an honest figure saves about two thirds
    assert 55 <= saved["percent"] <= 75, saved


def test_catastrophic_pattern_from_a_cloned_repositorys_config(ctxctl, write):
    """The #19 reproduction end to end: the pattern comes from the project's .ctxctl/config.toml."""
    write(".ctxctl/config.toml", '[exec]\nkeep = ["^(a+)+$"]\n')
    script = "import sys; [print('a' * 3000 + 'b' + str(i)) for i in range(100)]"
    start = time.monotonic()
    r = ctxctl("exec", f"{sys.executable} -c \"{script}\"", "--json")
    assert time.monotonic() - start < 60  # not a budget: `re` would backtrack 2**3000 ways per line
    doc = json.loads(r.out)
    assert r.code == 0 and doc["exit_code"] == 0 and "... [90 lines omitted]" in doc["compressed"]


@pytest.mark.parametrize("line,expected", [
    ("2022-07-26T16:33:03.5643571Z Failures:", "Failures:"),
    ("2025-07-19T08:32:12Z   1) Failure:", "  1) Failure:"),
    ("2022-07-26 16:33:03 Failures:", "2022-07-26 16:33:03 Failures:"),
    ("order.go:12:5: undefined: NewRepo", "order.go:12:5: undefined: NewRepo"),
    ("2022-07-26T16:33:03.5643571Z", "2022-07-26T16:33:03.5643571Z"),
])
def test_a_github_actions_timestamp_is_not_part_of_the_line_judged(line, expected):
    assert fold.without_timestamp(line) == expected
