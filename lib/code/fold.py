"""Streaming compression of command output (``exec``): head, tail and keep-pattern lines.

Pipeline, fed in arbitrary byte chunks (the result is identical for any chunking, including
chunks that split a multi-byte character):

1. **Lines.** Split on ``\\n``; the final unterminated line counts. An unterminated line is
   capped at 1,048,576 bytes: the capped head is a line, then ``... [line truncated at 1048576
   bytes]``, and the rest up to the next newline is dropped.
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


def compile_patterns(patterns) -> list:
    """Compile keep patterns (each separately) plus the implicit location pattern.

    :raises ExitError: code 1 for an empty pattern or an invalid regex.
    """
    out = []
    for pat in patterns:
        if not pat.strip():
            raise ExitError(READ, f"empty keep pattern `{pat}`: an empty pattern would match every line")
        flags = re.IGNORECASE
        body = pat
        if body.startswith("(?-i)"):
            body, flags = body[5:], 0
        try:
            out.append(re.compile(body, flags))
        except re.error as exc:
            raise ExitError(READ, f"invalid regex pattern `{pat}`: {exc}") from None
    out.append(re.compile(IMPLICIT_KEEP, re.IGNORECASE))
    return out


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

    def __init__(self, patterns: list, head: int = 5, tail: int = 5, threshold: int = 20):
        self.patterns = patterns
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

    # -- stage 1: lines ------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        """Consume a chunk of raw output."""
        start = 0
        n = len(chunk)
        while start < n:
            nl = chunk.find(b"\n", start)
            end = n if nl < 0 else nl
            if self._truncating:
                if nl < 0:
                    return
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
                start = start + room
                continue
            self._partial += chunk[start:end]
            if nl < 0:
                return
            self._raw_line(bytes(self._partial), b"\n")
            self._partial.clear()
            start = nl + 1

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
        if len(self._head_out) < self.head:
            self._head_out.append(content)
            return
        self._ring.append(content)
        if len(self._ring) > self.tail:
            self._middle_line(self._ring.popleft())

    def _middle_line(self, content: bytes) -> None:
        text = content.decode("utf-8", "replace")
        if any(p.search(text) for p in self.patterns):
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
        if self._partial and not self._truncating:
            self._raw_line(bytes(self._partial), b"")
            self._partial.clear()
        self._flush_run()
        self._flush_count()
        if self._passthrough:
            text = b"".join(c + t for c, t in self._buffer)
            after = tokens.count(text.decode("utf-8", "replace"))
            before = self._raw_tokens
            if self._raw_pass is not None:  # few lines: count the raw text whole, as upstream does
                before = tokens.count(b"".join(self._raw_pass).decode("utf-8", "replace"))
            return Folded(text, self._total, 0, False, self._changed, before, after, False)
        if self.tail == 0:
            while self._ring:
                self._middle_line(self._ring.popleft())
        self._flush_omitted()
        out = self._head_out + self._middle + list(self._ring)
        text = b"\n".join(out)
        after = tokens.count(text.decode("utf-8", "replace"))
        ineffective = self._kept > 0 and tokens.percent(self._raw_tokens, after) <= INEFFECTIVE_PERCENT
        return Folded(text, self._total, self._kept, True, True, self._raw_tokens, after, ineffective)


def compress(data: bytes, patterns: list, head: int = 5, tail: int = 5, threshold: int = 20) -> Folded:
    """Batch form of :class:`Folder` (one chunk)."""
    f = Folder(patterns, head, tail, threshold)
    f.feed(data)
    return f.finish()
