"""Streaming compression of command output (``exec``): head, tail and keep-pattern lines.

Pipeline, fed in arbitrary byte chunks (the result is identical for any chunking, including
chunks that split a multi-byte character):

1. **Lines.** Split on ``\\n``; the final unterminated line counts. An unterminated line is
   capped at 1,048,576 bytes: the capped head is a line, then ``... [line truncated at 1048576
   bytes]``, and the rest up to the next newline is dropped from the shown output — never from
   the recovery file (``exec`` keeps it) and never from the saved figure: the dropped rest's
   tokens are estimated (:func:`lib.code.tokens.estimate_bytes`) and added to ``before``, and
   ``Folded.estimated`` says so.
2. **Normalise** (beyond upstream ctxctl, which peers' users asked for): ANSI escape sequences
   are removed; a line redrawn with carriage returns (a progress bar) keeps only its final
   state; a run of 3 or more identical lines becomes the line plus
   ``... [line repeated N more times]``. A trailing ``\\r`` (CRLF) is kept as the terminator.
3. **Passthrough.** At most ``collapse_threshold`` lines come out as they went in (terminators,
   invalid UTF-8 and a missing final newline included).
4. **Fold.** Keep the first ``head`` and last ``tail`` lines (a ring over the lines after the
   head, so they never overlap) and every middle line matching a keep pattern; each maximal run
   of dropped lines becomes ``... [N lines omitted]`` (``1 line``). Lines are joined with
   ``\\n`` without a trailing newline.

Memory is O(head + tail + kept lines + threshold): the whole output is never held.

Keep patterns are compiled one by one, always case-insensitive (a leading ``(?-i)`` turns that
off — Python's ``re`` has no bare global ``(?-i)``); an implicit ``^\\s+-->`` keeps rustc/cargo
location lines next to their error header.

Tokens: before = sum over raw lines of tokens(line including its ``\\n``), counted as lines
stream by; after = tokens(compressed text).
"""
from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from lib.code import tokens
from lib.code.errors import READ, ExitError

LINE_CAP = 1_048_576
IMPLICIT_KEEP = r"^\s+-->"
INEFFECTIVE_PERCENT = 10
COLLAPSE_RUN = 3

_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def _re2_options(case_sensitive: bool):
    import re2

    opts = re2.Options()
    opts.log_errors = False
    opts.case_sensitive = case_sensitive
    return opts


def compile_patterns(patterns) -> list:
    """Compile keep patterns (each separately) plus the implicit location pattern, with RE2:
    matching is linear in the line's length whatever the pattern, so a pattern from a cloned
    repository's ``.ctxctl/config.toml`` (``^(a+)+$``) cannot backtrack for minutes. RE2 has
    the syntax of Rust's ``regex`` (upstream's engine): a leading or inline ``(?-i)`` turns
    case-insensitivity off; lookaround and backreferences are refused, as upstream refuses them.

    :raises ExitError: code 1 for an empty pattern or an invalid regex.
    """
    import re2

    opts = _re2_options(case_sensitive=False)
    out = []
    for pat in patterns:
        if not pat.strip():
            raise ExitError(READ, f"empty keep pattern `{pat}`: an empty pattern would match every line")
        try:
            out.append(re2.compile(pat, opts))
        except re2.error as exc:
            reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            raise ExitError(READ, f"invalid regex pattern `{pat}`: {reason}") from None
    out.append(re2.compile(IMPLICIT_KEEP, opts))
    return out


DIAGNOSTIC_PATTERNS = (
    # file:line[:col] locations: gcc/clang, go, rustc spans, javac, tsc/C# `a.ts(3,5)`, node and
    # Java stack frames `(a.js:3:9)`, ruby `from a.rb:3:in`, lua `a.lua:3:`, pytest `x.py:12: Error`
    r"(?:^|[\s(\['\"`])(?:[A-Za-z]:)?[\w.\-/\\@+~]*\w\.[A-Za-z][\w+]{0,5}(?::\d+(?::\d+)?|\(\d+(?:,\d+)?\))",
    r"^\s*File \".*\", line \d+",                                   # Python traceback frame
    r"^Traceback \(most recent call last\):",
    r"^(?:[\w$]+[.:])*\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?::|$)",  # raised exception line
    r"^(?:Exception in thread|Caused by:|\s+\.\.\. \d+ more$)",     # Java
    r"^\s+at \S.*",                                                  # Java / node / C# stack frames
    r"^(?:panic|fatal error):|^goroutine \d+ \[|^thread '.*'.* panicked|^stack traceback:",
    r"^\S+: In (?:function|member function|constructor|destructor|instantiation)|^In file included from",
    r"^\s*(?:error|warning|note|help)(?:\[[\w-]+\])?:|^\s+= (?:note|help):",   # rustc/cargo/gcc/go vet
    r"import cycle not allowed|undefined reference to|multiple definition of|^collect2:|ld returned",
    r"^make(?:\[\d+\])?: \*\*\*|^# [\w.\-/]+$",                      # make; a go package header
    # test runners: failed names and summaries (go, pytest, unittest, cargo, jest/vitest, mocha,
    # node --test/TAP, rspec, JUnit/maven/gradle, dotnet, ctest, busted)
    r"^(?:--- FAIL|FAIL|FAILED|ERROR)\b",
    r"^=+ .* =+$|^_{3,} .* _{3,}$|^E\s{2,}|^>\s{3,}",
    r"^test result: |^test \S+ \.\.\. (?:FAILED|ignored)|--- FAILED$|^---- \S+ stdout ----|^failures:$",
    r"^Ran \d+ tests? in |^(?:OK|FAILED)(?: \(.*\))?$",
    r"^\s*(?:Tests?|Test Suites|Snapshots|Suites?|Assertions|Time):\s+\d",
    r"^\s*[●✕✗×✖]\s|^\s*\d+\) \S|^\s*\d+ (?:passing|failing|pending|skipped)\b",
    r"^not ok \d+|^# (?:tests|suites|pass|fail|cancelled|skipped|todo) \d+",
    r"^rspec \./|\d+ examples?, \d+ failures?",
    r"Tests run: \d+|^\[(?:ERROR|FATAL)\]|^BUILD (?:FAILED|SUCCESSFUL)|^Build (?:FAILED|succeeded)",
    r"^\s*\d+ (?:errors?|warnings?)(?: generated)?\.?$|Found \d+ errors?|\d+ Error\(s\)|\d+ Warning\(s\)",
    r"\d+ (?:failed|passed|errors?)\b.* in [\d.]+s|tests? (?:passed|failed)",
    # dotnet test (VSTest, xUnit) and MSBuild: a failed test's name, its error message, the run's
    # summary, a failed project and MSBuild's own diagnostics
    r"\[FAIL\]$|^\s*Failed \S.* \[(?:< )?[\d.]+ m?s\]$|^(?:Failed|Passed)!\s+- Failed:",
    r"^Test Run (?:Failed|Aborted)\.|^Total tests: \d+|^\s+Failed: \d+$|-- FAILED\.$|\bMSB\d{4}:",
    # minitest and busted summaries
    r"^\d+ (?:runs|tests), \d+ assertions, \d+ failures, \d+ errors",
    r"^\d+ success(?:es)? / \d+ failures? / \d+ errors? / \d+ pending",
)
"""Lines a developer looks for in build and test output, kept whatever the configured keep
list says (case-sensitive; RE2). docs/ctxctl.md lists the toolchains each line comes from."""

BLOCK_START = (
    r"^Traceback \(most recent call last\):|^stack traceback:|^goroutine \d+ \[|^thread '.*'.* panicked"
    r"|^panic:|^(?:error|warning)(?:\[[\w-]+\])?:|^_{3,} .* _{3,}$|^---- \S+ stdout ----"
    r"|^\S.*:\d+(?::\d+)?: (?:fatal )?(?:error|warning)\b|^Exception in thread|^not ok \d+"
    r"|^\s*Error Message:$"
)
"""Lines that open a diagnostic block: the indented lines after them (traceback frames and
their source lines, rustc/gcc code frames with their ``^^^`` markers, a pytest failure's
assertion diff, a goroutine's stack, a TAP failure's YAML, a dotnet test's error message and
stack trace) are kept up to an empty or unindented line."""
PARAGRAPH_START = (
    r"^thread '.*'.* panicked|^panic:|^goroutine \d+ \[|^---- \S+ stdout ----|^failures:$"
    r"|^(?:Failure|Error) (?:→|->) \S+ @ \d+|^\s+\d+\) (?:Failure|Error):$"
    r"|^\s+(?:[A-Z]\w*::)+[A-Z]\w*:$|^\s+[A-Z]\w*(?:Error|Exception):$"
)
"""Block openers whose block runs to the next empty line, unindented lines included (a Rust
panic's message and ``left``/``right``, a Go goroutine's stack, cargo's failure list,
unittest's failure report, busted's and minitest's failure reports: the test's name, its
location and the expected and actual values; RSpec's exception class alone on an indented line,
``Octokit::Forbidden:``, then its message and backtrace)."""
SECTION_START = r"^(?:FAIL|ERROR): \S"
"""unittest's report of one failed or erroring test (``FAIL: test_a (pkg.T.test_a)``): its
traceback, exception line and assertion diff (``First differing element``, the ``-``/``+``/``?``
lines after an empty line) run to the next separator line (:data:`SECTION_END`), not to the
first empty line."""
SECTION_END = r"^(?:={20,}|-{20,})$"
"""The separator lines of unittest's report: ``====…`` before each failure, ``----…`` under its
header and before ``Ran N tests``."""
BLOCK_MAX = 60
"""Most continuation lines one block keeps (a runaway stack trace stays bounded)."""


class Diagnostics:
    """Per-line classifier for :data:`DIAGNOSTIC_PATTERNS` and diagnostic blocks; sees every
    line in order (head and tail included, so a block opened in the head continues)."""

    def __init__(self):
        import re2

        opts = _re2_options(case_sensitive=True)
        self._line = re2.compile("|".join(f"(?:{p})" for p in DIAGNOSTIC_PATTERNS), opts)
        self._start = re2.compile(BLOCK_START, opts)
        self._frame = re2.compile(r"^\d+\s*\|", opts)  # a numbered code-frame line (rustc, gcc)
        self._para = re2.compile(PARAGRAPH_START, opts)
        self._section = re2.compile(SECTION_START, opts)
        self._section_end = re2.compile(SECTION_END, opts)
        self._block = 0
        self._paragraph = False
        self._in_section = 0  # lines left in a unittest report (0: none open)

    def keep(self, text: str) -> bool:
        """Whether ``text`` (one line, no terminator) is a diagnostic or inside a block. A line
        of a GitHub Actions log is judged without its timestamp (:func:`without_timestamp`)."""
        text = without_timestamp(text)
        if self._in_section:
            if self._section_end.match(text) is None or self._in_section == BLOCK_MAX:
                self._in_section -= 1  # the first ``----`` sits under the header: still inside
                return True
            self._in_section = 0
            return True
        if self._section.match(text):
            self._in_section, self._block = BLOCK_MAX, 0
            return True
        if self._block:
            inside = text.strip() != "" if self._paragraph else (
                text[:1] in (" ", "\t", "|") or self._frame.match(text) is not None)
            if inside:
                self._block -= 1
                return True
            self._block = 0
        if self._para.search(text):
            self._block, self._paragraph = BLOCK_MAX, True
            return True
        if self._start.search(text):
            self._block, self._paragraph = BLOCK_MAX, False
            return True
        return self._line.search(text) is not None


def without_timestamp(text: str) -> str:
    """``text`` without a leading ISO 8601 UTC timestamp and its space
    (``2022-07-26T16:33:03.5643571Z Failures:`` → ``Failures:``), the prefix of every line of a
    downloaded GitHub Actions log; other lines unchanged."""
    if len(text) > 20 and text[10] == "T" and text[4] == "-" and text[7] == "-" and text[:4].isdigit():
        z = text.find("Z ", 19, 40)
        if z > 0 and text[11:13].isdigit() and text[17:19].isdigit():
            return text[z + 2:]
    return text


def normalise(line: bytes) -> bytes:
    """Strip ANSI escapes and carriage-return redraws from one line (no terminator)."""
    if b"\x1b" in line:
        line = _ANSI.sub(b"", line)
    if b"\r" in line:
        parts = [p for p in line.split(b"\r") if p.strip()]
        line = parts[-1] if parts else b""
    return line


@dataclass
class Folded:
    """Outcome: ``text`` (bytes) to print, line counts, token counts and the flags."""

    text: bytes
    lines: int
    kept: int
    folded: bool
    changed: bool
    tokens_before: int
    tokens_after: int
    ineffective: bool
    estimated: bool = False

    @property
    def percent(self) -> int:
        """Saved percentage (0–100)."""
        return tokens.percent(self.tokens_before, self.tokens_after)

    def warning(self) -> str | None:
        """The over-broad keep warning, or ``None``."""
        if not self.ineffective:
            return None
        return (f"keep patterns matched most of the output; compression saved only {self.percent}% "
                f"({self.tokens_before} -> {self.tokens_after} tokens) — check --keep patterns")


class Folder:
    """The streaming compressor. ``feed(chunk)`` any number of times, then ``finish()``."""

    def __init__(self, patterns: list, head: int = 5, tail: int = 5, threshold: int = 20, raw: bool = False):
        self.patterns = patterns
        self.raw = raw
        self._raw_chunks = [] if raw else None
        self.head, self.tail, self.threshold = head, tail, threshold
        self._partial = bytearray()
        self._truncating = False
        self._raw_tokens = 0
        self._raw_batch = []
        self._raw_batch_bytes = 0
        self._run_line = None      # (content, terminator) of the current identical run
        self._run_count = 0
        self._buffer = []          # passthrough buffer: (content, terminator)
        self._passthrough = True
        self._head_out = []
        self._ring = deque()
        self._middle = []          # kept middle lines and markers, in order
        self._omitted = 0
        self._kept = 0
        self._total = 0
        self._changed = False
        self._raw_pass = []        # raw lines while few enough for a whole-text passthrough count
        self._diagnostics = Diagnostics()
        self._dropped_tokens = 0   # estimated tokens of over-long lines' rest, dropped after the cap
        self._estimated = False

    # -- stage 1: lines ------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        """Consume a chunk of raw output."""
        if self.raw:
            self._raw_chunks.append(chunk)
            return
        start = 0
        n = len(chunk)
        while start < n:
            nl = chunk.find(b"\n", start)
            end = n if nl < 0 else nl
            if self._truncating:
                if nl < 0:
                    self._drop(chunk[start:])
                    return
                self._drop(chunk[start:nl])
                self._truncating = False
                start = nl + 1
                continue
            room = LINE_CAP - len(self._partial)
            if end - start > room:
                self._partial += chunk[start:start + room]
                self._raw_line(bytes(self._partial), b"")
                self._partial.clear()
                self._line(f"... [line truncated at {LINE_CAP} bytes]".encode(), b"\n", raw=False)
                self._truncating = True
                self._changed = True  # the recovery file keeps the whole line
                start = start + room
                continue
            self._partial += chunk[start:end]
            if nl < 0:
                return
            self._raw_line(bytes(self._partial), b"\n")
            self._partial.clear()
            start = nl + 1

    def _drop(self, part: bytes) -> None:
        """Count the tokens of a capped line's dropped rest (estimated: it may be gigabytes)."""
        if part:
            self._dropped_tokens += tokens.estimate_bytes(part)
            self._estimated = True

    def _raw_line(self, line: bytes, terminator: bytes) -> None:
        self._count_raw(line + terminator)
        if self._raw_pass is not None:
            self._raw_pass.append(line + terminator)
            if len(self._raw_pass) > self.threshold + 1:
                self._raw_pass = None
        term = terminator
        if line.endswith(b"\r") and terminator:
            line, term = line[:-1], b"\r\n"
        clean = normalise(line)
        if clean != line:
            self._changed = True
        self._line(clean, term)

    def _count_raw(self, raw: bytes) -> None:
        self._raw_batch.append(raw.decode("utf-8", "replace"))
        self._raw_batch_bytes += len(raw)
        if len(self._raw_batch) >= 512 or self._raw_batch_bytes >= 1 << 20:
            self._flush_count()

    def _flush_count(self) -> None:
        if self._raw_batch:
            self._raw_tokens += tokens.count_many(self._raw_batch)
            self._raw_batch, self._raw_batch_bytes = [], 0
        self._raw_tokens += self._dropped_tokens
        self._dropped_tokens = 0

    # -- stage 2: collapse runs ----------------------------------------------------------------
    def _line(self, content: bytes, term: bytes, raw: bool = True) -> None:
        if self._run_line is not None and content == self._run_line[0] and term:
            self._run_count += 1
            self._run_line = (content, term)
            return
        self._flush_run()
        self._run_line, self._run_count = (content, term), 1

    def _flush_run(self) -> None:
        if self._run_line is None:
            return
        content, term = self._run_line
        count = self._run_count
        self._run_line, self._run_count = None, 0
        if count >= COLLAPSE_RUN:
            self._changed = True
            self._emit(content, term or b"\n")
            self._emit(f"... [line repeated {count - 1} more times]".encode(), term)
        else:
            for _ in range(count - 1):
                self._emit(content, term or b"\n")
            self._emit(content, term)

    # -- stage 3/4: passthrough or fold --------------------------------------------------------
    def _emit(self, content: bytes, term: bytes) -> None:
        self._total += 1
        if self._passthrough:
            self._buffer.append((content, term))
            if len(self._buffer) > self.threshold:
                self._passthrough = False
                pending, self._buffer = self._buffer, []
                for c, _ in pending:
                    self._fold(c)
            return
        self._fold(content)

    def _fold(self, content: bytes) -> None:
        text = content.decode("utf-8", "replace")
        # the classifier sees every line in order, so a block opened in the head continues
        keep = self._diagnostics.keep(text)
        if len(self._head_out) < self.head:
            self._head_out.append(content)
            return
        self._ring.append((content, keep, text))
        if len(self._ring) > self.tail:
            self._middle_line(*self._ring.popleft())

    def _middle_line(self, content: bytes, diagnostic: bool, text: str) -> None:
        if diagnostic or any(p.search(text) for p in self.patterns):
            self._flush_omitted()
            self._middle.append(content)
            self._kept += 1
        else:
            self._omitted += 1

    def _flush_omitted(self) -> None:
        if self._omitted:
            noun = "line" if self._omitted == 1 else "lines"
            self._middle.append(f"... [{self._omitted} {noun} omitted]".encode())
            self._omitted = 0

    def finish(self) -> Folded:
        """Flush and return the compressed output with its metrics."""
        if self.raw:
            text = b"".join(self._raw_chunks)
            n = tokens.count(text.decode("utf-8", "replace"))
            return Folded(text, text.count(b"\n"), 0, False, False, n, n, False)
        if self._partial and not self._truncating:
            self._raw_line(bytes(self._partial), b"")
            self._partial.clear()
        self._flush_run()
        self._flush_count()
        if self._passthrough:
            text = b"".join(c + t for c, t in self._buffer)
            after = tokens.count(text.decode("utf-8", "replace"))
            before = self._raw_tokens
            if self._raw_pass is not None and not self._estimated:  # few lines: count the raw text whole, as upstream does
                before = tokens.count(b"".join(self._raw_pass).decode("utf-8", "replace"))
            return Folded(text, self._total, 0, False, self._changed, before, after, False, self._estimated)
        if self.tail == 0:
            while self._ring:
                self._middle_line(*self._ring.popleft())
        self._flush_omitted()
        out = self._head_out + self._middle + [c for c, _, _ in self._ring]
        text = b"\n".join(out)
        after = tokens.count(text.decode("utf-8", "replace"))
        ineffective = self._kept > 0 and tokens.percent(self._raw_tokens, after) <= INEFFECTIVE_PERCENT
        return Folded(text, self._total, self._kept, True, True, self._raw_tokens, after, ineffective, self._estimated)


def compress(data: bytes, patterns: list, head: int = 5, tail: int = 5, threshold: int = 20) -> Folded:
    """Batch form of :class:`Folder` (one chunk)."""
    f = Folder(patterns, head, tail, threshold)
    f.feed(data)
    return f.finish()
