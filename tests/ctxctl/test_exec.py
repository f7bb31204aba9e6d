"""Acceptance cases 18–21 (docs/ctxctl.md, Tests) for ``exec`` and its compressor, plus what goes
beyond the contract: ANSI and progress-bar stripping, repeated-line collapse, raw-output
recovery, the process-group timeout."""
from __future__ import annotations

import json
import os
import sys
import time

import pytest

from lib.code import fold
from lib.code.errors import ExitError

DEFAULT = fold.compile_patterns(["error", "warning", "failed", "panic", "fatal"])


def printf_lines(lines) -> str:
    return "printf '" + "\\n".join(lines) + "\\n'"


LINES_27 = [f"l{i}" for i in range(1, 14)] + ["error: boom"] + [f"l{i}" for i in range(14, 27)]


# -- 18-20. the CLI -----------------------------------------------------------------------------

def test_exec_folds_and_keeps_error_lines(ctxctl):
    r = ctxctl("exec", printf_lines(LINES_27))
    assert r.code == 0, r
    assert r.out.startswith("$ printf")
    assert "error: boom" in r.out
    assert r.out.count("... [8 lines omitted]") == 2
    assert "Saved ~" in r.out
    assert "[full output: " in r.out


def test_exec_keep_flag_appends_and_config_keep_replaces(ctxctl, write):
    lines = [f"l{i}" for i in range(1, 12)] + ["TODO: later", "the step failed"] + [f"l{i}" for i in range(12, 26)]
    r = ctxctl("exec", printf_lines(lines), "--keep", "TODO")
    assert "TODO: later" in r.out and "the step failed" in r.out
    write(".ctxctl/config.toml", '[exec]\nkeep = ["TODO"]\n')
    body = ctxctl("exec", printf_lines(lines)).out.split("\n", 1)[1]  # past the `$ cmd` echo
    assert "TODO: later" in body and "the step failed" not in body


def test_exec_config_head_tail_threshold(ctxctl, write):
    write(".ctxctl/config.toml", "[exec]\nhead_lines = 2\ntail_lines = 2\ncollapse_threshold = 0\n")
    r = ctxctl("exec", printf_lines(LINES_27))
    assert r.out.count("... [11 lines omitted]") == 2


def test_exec_passes_exit_code_through(ctxctl):
    r = ctxctl("exec", "sh -c 'exit 3'")
    assert r.code == 3
    r = ctxctl("exec", "sh -c 'exit 3'", "--json")
    assert r.code == 3 and json.loads(r.out)["exit_code"] == 3
    r = ctxctl("exec", "sh -c 'kill -TERM $$'")
    assert r.code == 128 + 15


def test_exec_rejects_bad_patterns_before_spawning(ctxctl, project):
    marker = os.path.join(project, "spawned")
    r = ctxctl("exec", f"touch {marker}", "--keep", "[")
    assert r.code == 1 and "invalid regex pattern `[`" in r.err
    r = ctxctl("exec", f"touch {marker}", "--keep", "  ")
    assert r.code == 1 and "empty" in r.err and "every line" in r.err
    assert not os.path.exists(marker)


def test_exec_no_saved_removes_the_saved_line(ctxctl):
    r = ctxctl("exec", "echo hi", "--no-saved")
    assert r.out == "$ echo hi\nhi\n"


@pytest.mark.parametrize("cmd,ch", [("pwd && ls", "&"), ("ls | wc", "|"), ("a; b", ";"), ("echo $(x)", "("),
                                    ("cat < f", "<"), ("echo > f", ">"), ("a\nb", "\\n")])
def test_exec_rejects_unquoted_metacharacters(ctxctl, cmd, ch):
    r = ctxctl("exec", cmd)
    assert r.code == 1
    assert (f"error: exec runs a single command, not a shell; found unquoted `{ch}` — "
            f"wrap compound commands as sh -c \"<command>\"") in r.err


def test_exec_allows_quoted_and_escaped_metacharacters(ctxctl):
    r = ctxctl("exec", "echo 'a | b' \"c && d\" e\\;f")
    assert r.code == 0 and "a | b c && d e;f" in r.out


def test_exec_pre_spawn_errors(ctxctl):
    assert "invalid command line" in ctxctl("exec", "echo 'open").err
    assert "error: empty command" in ctxctl("exec", "   ").err
    r = ctxctl("exec", "definitely-not-a-command-xyz")
    assert r.code == 1 and "failed to run `definitely-not-a-command-xyz`: No such file or directory" in r.err


def test_exec_merges_stdout_then_stderr(ctxctl):
    r = ctxctl("exec", "sh -c 'printf err >&2; printf out'")
    assert r.out.startswith("$ sh -c 'printf err >&2; printf out'\nout\nerr\n")


def test_exec_over_broad_keep_is_flagged(ctxctl):
    lines = [f"test case run {i}" for i in range(30)]
    r = ctxctl("exec", printf_lines(lines), "--keep", "test")
    assert "warning: keep patterns matched most of the output; compression saved only" in r.err
    doc = json.loads(ctxctl("exec", printf_lines(lines), "--keep", "test", "--json").out)
    assert doc["warning"].endswith("— check --keep patterns")


def test_exec_timeout_kills_the_process_group(project):
    from lib.code import config, execute

    start = time.monotonic()
    with pytest.raises(ExitError) as info:
        execute.run("sh -c 'sleep 30 & sleep 30'", config.Config(), timeout=0.5)
    assert info.value.code == 1
    assert "exceeded the 0.5s execution timeout and was killed" in info.value.message
    assert time.monotonic() - start < 20  # not a budget: only proves the group did not outlive the kill
    assert execute.TIMEOUT_SECS == 30.0


def test_exec_strips_ansi_and_progress_and_collapses_repeats_with_recovery_file(ctxctl):
    script = "import sys; sys.stdout.write('\\x1b[31mred\\x1b[0m\\n10%\\r50%\\r100%\\n' + 'same\\n' * 6 + 'end\\n')"
    r = ctxctl("exec", f"{sys.executable} -c \"{script}\"", "--json")
    doc = json.loads(r.out)
    assert doc["compressed"] == "red\n100%\nsame\n... [line repeated 5 more times]\nend\n"
    assert "\x1b" not in r.out
    with open(doc["full_output"], "rb") as fh:
        assert fh.read().startswith(b"\x1b[31mred")
    assert ctxctl("exec", f"{sys.executable} -c \"{script}\"", "--json").out == r.out


def test_exec_passthrough_has_no_recovery_file(ctxctl):
    doc = json.loads(ctxctl("exec", "echo hello", "--json").out)
    assert doc["compressed"] == "hello\n" and "full_output" not in doc
    assert doc["saved"]["percent"] == 0


# -- 21. the compressor ---------------------------------------------------------------------------

def test_compress_24_lines():
    data = "".join(f"l{i}\n" for i in range(1, 25)).encode()
    r = fold.compress(data, DEFAULT)
    assert r.text == b"l1\nl2\nl3\nl4\nl5\n... [14 lines omitted]\nl20\nl21\nl22\nl23\nl24"


def test_compress_short_output_passes_through_byte_for_byte():
    data = b"a\r\nb\n\xff\xfe invalid\nd\ne\nf\ng\nno newline"
    r = fold.compress(data, DEFAULT)
    assert r.text == data and r.percent == 0 and not r.folded


def test_compress_threshold():
    data = "".join(f"l{i}\n" for i in range(1, 27)).encode()
    assert not fold.compress(data, DEFAULT, threshold=26).folded
    r = fold.compress(b"a\nb\nc\n", DEFAULT, head=1, tail=1, threshold=0)
    assert r.folded and r.text == b"a\n... [1 line omitted]\nc"


def test_compress_empty_input():
    r = fold.compress(b"", DEFAULT)
    assert r.text == b"" and r.lines == 0


def test_compress_patterns_keep_their_anchors():
    pats = fold.compile_patterns(["^PASS"])
    data = "".join(f"l{i}\n" for i in range(10)) + "xxPASSxx\nPASS ok\n" + "".join(f"m{i}\n" for i in range(10))
    text = fold.compress(data.encode(), pats, threshold=0).text.decode()
    assert "PASS ok" in text and "xxPASSxx" not in text


def test_compress_streaming_equals_batch_for_any_chunking():
    data = ("".join(f"line {i} ünïcødé ✓\n" for i in range(60)) + "error: here\n\x1b[1mbold\x1b[0m\n"
            + "dup\n" * 4 + "tail without newline").encode()
    batch = fold.compress(data, DEFAULT)
    for size in range(1, 8):
        f = fold.Folder(DEFAULT)
        for i in range(0, len(data), size):
            f.feed(data[i:i + size])
        assert f.finish() == batch, size


def test_compress_10001_lines_saves_over_90_percent():
    data = "".join(f"compiling crate number {i}\n" for i in range(10001)).encode()
    r = fold.compress(data, DEFAULT)
    assert r.text.count(b"\n") + 1 < 200 and r.percent > 90


def test_compress_broad_pattern_is_flagged_ineffective():
    data = "".join(f"test case run {i}\n" for i in range(30)).encode()
    assert fold.compress(data, fold.compile_patterns(["test"])).ineffective
    assert not fold.compress("".join(f"x{i}\n" for i in range(30)).encode(), DEFAULT).ineffective


def test_compress_keeps_rustc_location_after_error():
    data = ("".join(f"  Compiling c{i}\n" for i in range(10)) + "error[E0425]: cannot find value\n"
            "  --> src/main.rs:3:5\n" + "".join(f"  Compiling d{i}\n" for i in range(10))).encode()
    text = fold.compress(data, DEFAULT).text.decode()
    assert "error[E0425]: cannot find value\n  --> src/main.rs:3:5\n" in text


def test_compress_caps_an_endless_line_deterministically():
    data = b"x" * (fold.LINE_CAP + 10) + b"\nnext\n"
    a = fold.compress(data, DEFAULT)
    f = fold.Folder(DEFAULT)
    for i in range(0, len(data), 300_000):
        f.feed(data[i:i + 300_000])
    assert f.finish() == a
    assert f"... [line truncated at {fold.LINE_CAP} bytes]".encode() in a.text and a.text.endswith(b"next\n")


def test_compress_case_insensitive_unless_opted_out():
    data = "".join(f"l{i}\n" for i in range(10)) + "TODO: loud\ntodo: quiet\n" + "".join(f"m{i}\n" for i in range(10))
    text = fold.compress(data.encode(), fold.compile_patterns(["todo"]), threshold=0).text.decode()
    assert "TODO: loud" in text and "todo: quiet" in text
    text = fold.compress(data.encode(), fold.compile_patterns(["(?-i)todo"]), threshold=0).text.decode()
    assert "TODO: loud" not in text and "todo: quiet" in text
