"""Python header scanner: ``def``/``class`` and module- and class-level assignments read from the
bytes (lib/code/scanners, docs/ctxctl.md "Header scanners"), the rows tree-sitter's outline
gives (lib/code/backends.py ``_python``).

How a file is read, every step in C but one loop over the tokens:

1. **Strings and comments** by one ``re`` pass (:data:`_TOKEN`); a quote that opens no
   complete string (an unterminated literal) makes the scanner fall back.
2. **Logical lines.** The code between those tokens, reduced to its brackets, newlines and
   backslashes, has its same-line bracket pairs removed by ``bytes.replace`` until none is
   left; what remains are the groups that span lines (and every mismatch, which falls back).
   A copy of the file (``masked``) then has every newline that does not start a logical line
   (inside a string, a bracket group or after a backslash) turned into ``\\x01`` and every
   comment blanked, so a line-anchored regex over it sees statements only.
3. **Definitions** are the logical lines that start with ``def``, ``async def``, ``class`` or a
   decorator; a header runs to its first colon outside brackets and strings; its block ends
   before the next logical code line indented less than the block, and takes in the comment
   lines after its last statement while they are indented at least as far as the block (the
   rule of tree-sitter-python's indentation scanner, which decides where a block's trailing
   comments belong).
4. **Variables**: the logical lines at indentation 0 and at a class body's indentation whose
   statement is an assignment (``X = 1``, ``X: int``, ``a = b = 1``, ``a, b = …``), named as
   :func:`lib.code.backends._python_assigned_names` names them.

Signatures are built by :func:`lib.code.symbols.collapse_header` and
:func:`lib.code.symbols.signature_at`, the functions the tree path uses; doc comments (the
docstring's first paragraph, else the comments directly above that tree-sitter makes siblings of
the definition) are read only when asked for.

Falls back (``None``) on what it does not model: ``\\r``, ``\\t`` or ``\\f`` in indentation, a
``;`` or a non-ASCII byte in code, ``match``/``case`` statements, an f-string whose braces do
not pair up inside the quotes (Python 3.12's nested quotes), an unterminated string, unbalanced
brackets, a stray backslash, an indentation that closes no open block, decorators not followed
by a definition, a header without its colon, an f-string docstring.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from itertools import accumulate
from operator import add

from lib.code.backends import docstring_paragraph
from lib.code.symbols import Symbol, collapse_header, collapse_headers, signature_at, strip_comment

_TOKEN = re.compile(
    rb'#[^\n]*'
    rb'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    rb"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    rb'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    rb"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'", re.S)
"""A comment or a string literal (without its prefix letters). A quote left in the code
between them opens no complete string (an unterminated literal)."""
_SPAN = re.Match.span
_FT = frozenset(b"fFtTrR")
_IDENT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_BLANK = bytes(1 if b == 10 else 3 for b in range(256))
"""``bytes.translate`` table blanking a string literal: newlines to \\x01, every other byte to \\x03."""
_KEEP = b"()[]{}\n\x01\\"
_DROP = bytes(b for b in range(256) if b not in _KEEP)
_GROUP = re.compile(rb"[()\[\]{}\x02]")
_DEF = re.compile(rb"\n *+()(?:(@)|(?:async[ \t]++)?(def|class)[ \t])")
_BAD = re.compile(rb"\n *+[\t\f\x01]")
_BAD_RARE = (rb"\n *+(?:match|case)[ \t]++[^=\s]|\n *+(?:def|class)\\")
"""Compiled only for a file that spells ``match``, ``case`` or a keyword before a backslash
(lib/code/scanners/python.py ``_rx``): every pattern compiled at import costs a cold call."""
_NEXT_CODE = re.compile(rb"\n( *+)[^ \n]")
_HEADER = re.compile(rb"[:()\[\]{}]")
_NAME = re.compile(rb"[ \t]*([A-Za-z_]\w*)")
_PAIRS = {41: 40, 93: 91, 125: 123}
_OPEN = frozenset(b"([{")
_QUOTES = frozenset(b"\"'")
_PREFIX = frozenset(b"rRuUbBfFtT")
_COMPOUND = frozenset({b"if", b"elif", b"else", b"for", b"while", b"try", b"except", b"finally", b"with",
                       b"def", b"class", b"async"})
_KEYWORDS = frozenset({b"False", b"None", b"True", b"and", b"as", b"assert", b"async", b"await", b"break",
                       b"class", b"continue", b"def", b"del", b"elif", b"else", b"except", b"finally", b"for",
                       b"from", b"global", b"if", b"import", b"in", b"is", b"lambda", b"nonlocal", b"not", b"or",
                       b"pass", b"raise", b"return", b"try", b"while", b"with", b"yield"})
_KEYWORD_RX = b"|".join(sorted(_KEYWORDS, key=len, reverse=True))
_dedent = {}


_compiled = {}


def _rx(name: str, pattern: bytes):
    """``pattern`` compiled on first use (a pattern only rare files need)."""
    rx = _compiled.get(name)
    if rx is None:
        rx = _compiled[name] = re.compile(pattern)
    return rx


class _Fallback(Exception):
    """The file holds something this scanner does not model: tree-sitter parses it."""


def _dedent_at(indent: int):
    """Regex finding the next logical code line indented less than ``indent`` columns."""
    rx = _dedent.get(indent)
    if rx is None:
        rx = _dedent[indent] = re.compile(rb"\n {0,%d}+[^ \n]" % (indent - 1) if indent else rb"\n[^ \n]")
    return rx


_level = {}


def _lines_at(indent: int):
    """Regex finding the logical code lines indented exactly ``indent`` columns."""
    rx = _level.get(indent)
    if rx is None:
        rx = _level[indent] = re.compile(rb"\n {%d}(?![ \n@\x03])(?!(?:%s)\b)" % (indent, _KEYWORD_RX))
    return rx


_MAX_NESTING = 64
"""Bracket groups nested deeper than this on one line make the scan fall back (bounded time)."""


def outline(data: bytes) -> list | None:
    """The outline of Python source ``data`` (rows as lib/code/symbols.py ``extract`` gives them),
    or ``None`` when this scanner cannot vouch for it (module docstring)."""
    if b"\r" in data or data.find(b"\t\n") >= 0 or data.find(b"\t ") >= 0 or data.endswith(b"\t"):
        return None  # a tab ending a line: tree-sitter leaves it out of the block's range
    try:
        return _Scan(data).symbols()
    except _Fallback:
        return None


class _Scan:
    """One file's scan: token spans, the masked copy, and the symbols."""

    def __init__(self, data: bytes):
        self.data = data
        self._starts = None
        if data.find(b"\x01") >= 0 or data.find(b"\x02") >= 0 or data.find(b"\x03") >= 0:
            raise _Fallback("marker bytes in the file")
        strings, comments, parts, prev = [], [], [b"\n"], 0
        add_part, add_string, add_comment = parts.append, strings.append, comments.append
        for s, e in map(_SPAN, _TOKEN.finditer(data)):
            add_part(data[prev:s])
            if data[s] == 35:
                add_comment((s, e))
                add_part(b" " * (e - s))
            else:
                add_string((s, e))
                add_part(data[s:e].translate(_BLANK))
                if s and data[s - 1] in _FT:
                    self._check_fstring(s, e)
            prev = e
        add_part(data[prev:])
        masked = b"".join(parts)
        # `masked`: the file after a newline, strings as \x03 runs (their newlines \x01), comments
        # as spaces; a quote left in it opens no complete string
        if masked.find(b";") >= 0 or not masked.isascii():
            raise _Fallback("construct not modelled")
        if masked.find(b'"') >= 0 or masked.find(b"'") >= 0:
            raise _Fallback("unterminated string")
        self.strings, self.comments = strings, comments
        self.string_starts = [s for s, _ in strings]
        self.comment_starts = [s for s, _ in comments]
        self.comment_ends = {e: s for s, e in comments}
        # logical lines: bracket groups spanning lines, backslash continuations
        compact = masked.translate(None, _DROP)[1:].replace(b"\\\n", b"\x02")
        if b"\\" in compact:
            raise _Fallback("stray backslash")
        for _ in range(_MAX_NESTING):
            shorter = compact.replace(b"()", b"").replace(b"[]", b"").replace(b"{}", b"")
            if len(shorter) == len(compact):
                break
            compact = shorter
        else:
            raise _Fallback("brackets nested too deep")  # each round is a pass over the file
        groups, conts, stack, brackets = [], [], [], 0
        for m in _GROUP.finditer(compact):
            pos = m.start()
            ch = compact[pos]
            line = pos - brackets
            if ch == 2:
                if not stack:
                    conts.append(line)
                continue
            brackets += 1
            if ch in _OPEN:
                stack.append((ch, line))
            else:
                if not stack or stack[-1][0] != _PAIRS[ch]:
                    raise _Fallback("unbalanced brackets")
                _, first = stack.pop()
                if not stack and line > first:
                    groups.append((first, line))
        if stack:
            raise _Fallback("unbalanced brackets")
        if conts:  # tree-sitter's reading of a continued line around a block is its own
            raise _Fallback("backslash continuation")
        if groups or conts:
            masked = bytearray(masked)
            starts = self.line_starts()
            for first, last in groups:  # the newlines ending lines first … last-1 (0-based)
                a, b = starts[first + 1], starts[last] + 1
                masked[a:b] = masked[a:b].replace(b"\n", b"\x01")
            for line in conts:
                masked[starts[line + 1]] = 1
        if _BAD.search(masked) or ((masked.find(b"match") >= 0 or masked.find(b"case") >= 0
                                    or masked.find(b"\\") >= 0) and _rx("bad", _BAD_RARE).search(masked)):
            raise _Fallback("tab, form feed or match statement")
        self.masked = masked

    def _check_fstring(self, s: int, e: int) -> None:
        """Fall back on an f-string (or t-string) at ``[s, e)`` whose braces do not pair up: its
        quotes nest (Python 3.12), which the string pass does not model."""
        data = self.data
        j = s - 1
        while j >= 0 and data[j] in _PREFIX:
            j -= 1
        if j >= 0 and (data[j] in _IDENT or s - 1 - j > 2):
            return  # the letters end a name (`elif"x"` aside, which tree-sitter rejects too)
        prefix = data[j + 1:s]
        if prefix.find(b"f") < 0 and prefix.find(b"F") < 0 and prefix.find(b"t") < 0 and prefix.find(b"T") < 0:
            return
        inner = data[s:e]
        if inner.count(b"{") != inner.count(b"}"):
            raise _Fallback("f-string with nested quotes")

    def line_starts(self) -> list:
        """Byte offset of every line's start (0-based line index)."""
        if self._starts is None:
            cum = list(accumulate(map(len, self.data.split(b"\n"))))
            self._starts = [0] + list(map(add, cum, range(1, len(cum))))
        return self._starts

    # -- helpers over the masked copy (index = data index + 1) ---------------------------------

    def eol(self, pos: int) -> int:
        """Data index of the newline ending the logical line holding data index ``pos`` (or the
        file's length)."""
        j = self.masked.find(b"\n", pos + 1)
        return len(self.data) if j < 0 else j - 1

    def code_end(self, start: int, stop: int) -> int:
        """Data index just past the last code byte in ``[start, stop)`` (comments blanked)."""
        return start + len(self.masked[start + 1:stop + 1].rstrip(b" \n\x01"))

    def string_at(self, pos: int):
        """``(start, end)`` of the string token starting at data index ``pos``, or ``None``."""
        i = bisect_left(self.string_starts, pos)
        if i < len(self.string_starts) and self.string_starts[i] == pos:
            return self.strings[i]
        return None

    def header_colon(self, pos: int, stop: int) -> int:
        """Data index of the colon ending the header that starts at ``pos`` (before ``stop``):
        the first one outside brackets (strings are blanked in ``masked``)."""
        masked, depth, i, search = self.masked, 0, pos + 1, _HEADER.search
        while True:
            m = search(masked, i, stop + 1)
            if m is None:
                raise _Fallback("header without its colon")
            j = m.start()
            ch = masked[j]
            if ch == 58:
                if depth == 0:
                    return j - 1
            elif ch in _OPEN:
                depth += 1
            else:
                depth -= 1
            i = j + 1

    def next_code(self, pos: int):
        """``(line start, indent)`` of the first logical code line after data index ``pos``
        (the start of a line itself), or ``None``."""
        m = _NEXT_CODE.search(self.masked, pos + 1)
        if m is None:
            return None
        return m.start(), len(m.group(1))

    # -- the outline -----------------------------------------------------------------------------

    def symbols(self) -> list:
        """Every definition and variable, in source pre-order, as :class:`Symbol` rows."""
        masked = self.masked
        self.plain = []  # headers without decorators, signed in one batch
        rows = []  # (start, end, name, kind, signature, doc source)
        classes = []
        decorators, dec_indent = [], -1
        for m in _DEF.finditer(masked):
            start = m.start(1) - 1  # data index of the keyword or `@`
            indent = start - m.start()
            if decorators and indent != dec_indent:
                raise _Fallback("decorators without a definition")
            if m.group(2):
                end = self.code_end(start, self.eol(start))
                nxt = self.next_code(self.eol(start))
                if nxt is None or nxt[1] != indent:
                    raise _Fallback("decorator without a definition")
                decorators.append((start, end))
                dec_indent = indent
                continue
            keyword = m.start(3) - 1
            if decorators:
                # the line before must be the last decorator's
                if self.next_code(self.eol(decorators[-1][0]))[0] != m.start():
                    raise _Fallback("decorator not followed by this definition")
            rows.append(self.definition(start, keyword, m.group(3), indent, decorators, classes))
            decorators, dec_indent = [], -1
        if decorators:
            raise _Fallback("decorators without a definition")
        if self.plain:
            signed = collapse_headers(self.plain)
            rows = [r if r[3] == "var" or type(r[4]) is str else r[:4] + (signed[r[4]],) + r[5:] for r in rows]
        self.variables(rows, classes)
        rows.sort(key=_row_start)
        return self.finish(rows)

    def definition(self, start: int, keyword: int, word: bytes, indent: int, decorators: list, classes: list):
        data, masked = self.data, self.masked
        outer = decorators[0][0] if decorators else start
        name_m = _NAME.match(data, keyword + len(word))
        if name_m is None:
            raise _Fallback("definition without a name")
        name = name_m.group(1).decode()
        eol = self.eol(start)
        colon = self.header_colon(name_m.end(), eol)
        rest = self.code_end(colon + 1, eol)
        if rest > colon + 1:  # a one-line body: `def f(): pass`
            body = colon + 1 + (len(masked[colon + 2:rest + 1]) - len(masked[colon + 2:rest + 1].lstrip(b" ")))
            if masked[body + 1] == 64 or data.startswith((b"def", b"class"), body):
                raise _Fallback("compound statement in a one-line body")
            end = eol if eol in self.comment_ends and self.comment_ends[eol] > rest else rest
            body_indent = None
        else:
            nxt = self.next_code(eol)
            if nxt is None or nxt[1] <= indent:
                raise _Fallback("block without a body")
            line, body_indent = nxt
            body = line + body_indent  # masked index of the newline + indent = data index of the body
            dedent = _dedent_at(body_indent).search(masked, body + 1)
            stop = len(data) if dedent is None else dedent.start()
            if dedent is not None:
                got = dedent.end() - dedent.start() - 2
                if got > indent:
                    raise _Fallback("inconsistent dedent")
            last = self.code_end(body, stop)
            end = self.block_comments(last, stop, body_indent)
        if word == b"class":
            classes.append((body, end, body_indent, len(decorators)))
        self.check_docstring(body)
        if decorators:
            pieces = [(self.uncommented(a, b), True) for a, b in decorators]
            pieces.append((self.uncommented(start, body), False))
            sig = collapse_header(pieces)
        else:  # signed with the others in one batch (symbols)
            sig = len(self.plain)
            self.plain.append(self.uncommented(start, body))
        kind = "class" if word == b"class" else "function"
        return (outer, end, name, kind, sig, (self.definition_doc, outer, body, indent))

    def block_comments(self, last: int, stop: int, body_indent: int) -> int:
        """End of a block whose last code byte ends at ``last``: past the comments after it that
        tree-sitter keeps in the block (the one on its last line, then each comment line while
        it is indented at least ``body_indent``)."""
        starts, comments = self.comment_starts, self.comments
        i = bisect_left(starts, last)
        end = last
        data = self.data
        while i < len(comments) and comments[i][0] < stop:
            s, e = comments[i]
            line_start = data.rfind(b"\n", 0, s) + 1
            if line_start <= last:  # on the last code line
                end = e
            elif s - line_start < body_indent:
                break
            else:
                end = e
            i += 1
        return end

    def uncommented(self, a: int, b: int) -> bytes:
        """Source ``[a, b)`` with each comment in it replaced by a space, as the tree path cuts
        comment nodes out of a header (lib/code/symbols.py ``tidy_header_piece``)."""
        cuts = self.comments_in(a, b)
        if not cuts:
            return self.data[a:b]
        data, parts, pos = self.data, [], a
        for s, e in cuts:
            parts.append(data[pos:s])
            pos = e
        parts.append(data[pos:b])
        return b" ".join(parts)

    def comments_in(self, a: int, b: int) -> list:
        starts = self.comment_starts
        lo, hi = bisect_left(starts, a), bisect_left(starts, b)
        return self.comments[lo:hi] if hi > lo else ()

    def check_docstring(self, body: int) -> None:
        """Fall back on an f-string docstring (tree-sitter reads only its literal parts)."""
        data = self.data
        if data[body] in _PREFIX:
            j = body
            while j < body + 3 and data[j] in _PREFIX:
                j += 1
            if data[j] in _QUOTES and any(c in b"fFtT" for c in data[body:j]):
                raise _Fallback("f-string docstring")

    def variables(self, rows: list, classes: list) -> None:
        data, masked = self.data, self.masked
        spans = [(0, len(data), 0)]
        for body, end, body_indent, _ in classes:
            if body_indent is None:  # `class A: x = 1`
                if not _lines_at(0).match(b"\n" + data[body:body + 10] + b" "):
                    continue  # `class A: pass`
                self.statement(rows, body, self.eol(body))
                continue
            spans.append((body, end, body_indent))
        for a, b, indent in spans:
            rx = _lines_at(indent)
            pos = a - indent if indent else 0
            for m in rx.finditer(masked, pos, b + 1):
                s = m.end() - 1
                self.statement(rows, s, self.eol(s))

    def statement(self, rows: list, start: int, eol: int) -> None:
        """Add the variables the simple statement ``[start, eol)`` assigns."""
        data = self.data
        end = self.code_end(start, eol)
        names = _assigned(bytes(self.masked[start + 1:end + 1]).translate(_SPACED))
        if names:
            sig = signature_at(data, start, end, "#")
            for name in names:
                rows.append((start, end, name, "var", sig, (self.above_doc, start)))

    def finish(self, rows: list) -> list:
        data = self.data
        positions = sorted({p for r in rows for p in (r[0], r[1])})
        line_of, count, prev = {}, 1, 0
        for p in positions:
            count += data.count(b"\n", prev, p)
            line_of[p] = count
            prev = p
        return [Symbol(name, kind, sig, s, e, line_of[s], line_of[e], source=doc)
                for s, e, name, kind, sig, doc in rows]

    # -- doc comments (read on first access) ------------------------------------------------------

    def definition_doc(self, outer: int, body: int, indent: int) -> str | None:
        """The docstring's first paragraph, else the comments directly above."""
        data = self.data
        j = body
        while j < body + 3 and data[j] in _PREFIX:
            j += 1
        span = self.string_at(j) if data[j] in _QUOTES else None
        if span is not None and j - body <= 2:
            s, e = span
            after = self.code_end(e, self.eol(e))
            if after == e:
                quote = 3 if data.startswith((b'"""', b"'''"), s) and e - s >= 6 else 1
                return docstring_paragraph(data[s + quote:e - quote].decode("utf-8", "replace"))
        return self.above_doc(outer)

    def above_doc(self, start: int) -> str | None:
        """The comments directly above the statement at ``start`` that tree-sitter makes its
        siblings (symbols.doc_above over the tree)."""
        data, masked = self.data, self.masked
        line_start = data.rfind(b"\n", 0, start) + 1
        indent = start - line_start
        if data[line_start:start].strip(b" "):
            return None  # in a one-line body (`class A: x = 1`): the block's first statement
        run = []  # comments on consecutive lines ending just above, nearest first
        row_start = line_start
        while row_start > 0:
            prev_start = data.rfind(b"\n", 0, row_start - 1) + 1
            e = row_start - 1
            s = self.comment_ends.get(e)
            if s is None:
                break
            run.append((s, e))
            if s > prev_start and data[prev_start:s].strip(b" "):
                break  # a trailing comment: the statement before it ends the chain
            row_start = prev_start
        if not run:
            return None
        # the last code before the run: which block the comments belong to
        first_comment = run[-1][0]
        last_code = self.last_code_before(first_comment)
        siblings = run
        if last_code > 0:
            logical = masked.rfind(b"\n", 0, last_code) # masked index of its logical line's newline
            lstart = logical  # data index of that line's start
            ip = len(masked[logical + 1:last_code + 1]) - len(masked[logical + 1:last_code + 1].lstrip(b" "))
            if ip < indent:
                return None  # the first statement of a block: comments above belong to the header
            trailing_last = data.rfind(b"\n", 0, last_code) + 1
            if ip == indent:
                word = _NAME.match(data, lstart + ip)
                compound = word is not None and word.group(1) in _COMPOUND
                if compound or masked[lstart + ip + 1] == 64:
                    siblings = [c for c in run if not self._same_line(c[0], last_code)]
            else:
                block = self.block_indent_above(lstart, indent)
                # comments after the last code, in order; siblings from the first one under `block`
                cs = self.comments_in(last_code, start)
                sib_from = None
                for s, e in cs:
                    ls = data.rfind(b"\n", 0, s) + 1
                    if ls <= trailing_last:
                        continue  # on the last code line: inside the innermost block
                    if s - ls < block:
                        sib_from = s
                        break
                siblings = [c for c in run if sib_from is not None and c[0] >= sib_from]
        # the chain above the statement stops at the first comment that is not a sibling
        chain = []
        sibset = set(siblings)
        for c in run:
            if c not in sibset:
                break
            chain.append(c)
        if not chain:
            return None
        text = " ".join(t for t in (strip_comment(data[s:e].decode("utf-8", "replace")) for s, e in reversed(chain)) if t)
        return text or None

    def last_code_before(self, pos: int) -> int:
        """Data index just past the last code byte before data index ``pos`` (0 when none)."""
        masked, hi, size = self.masked, pos + 1, 4096
        while hi > 1:
            lo = max(1, hi - size)
            got = len(masked[lo:hi].rstrip(b" \n\x01"))
            if got:
                return lo - 1 + got
            hi, size = lo, size * 4
        return 0

    def _same_line(self, a: int, b: int) -> bool:
        return self.data.find(b"\n", min(a, b), max(a, b)) < 0

    def block_indent_above(self, line_start: int, indent: int) -> int:
        """The body indentation of the compound statement at ``indent`` that encloses the logical
        line starting at data index ``line_start``: the first code line after its header."""
        masked = self.masked
        pos = line_start  # masked index of the newline before the line
        block = None
        line = masked[pos + 1:masked.find(b"\n", pos + 1)]
        block = len(line) - len(line.lstrip(b" "))
        while pos > 0:
            prev = masked.rfind(b"\n", 0, pos)
            text = masked[prev + 1:pos]
            stripped = text.lstrip(b" ")
            if stripped and stripped.strip(b" \x01"):
                ind = len(text) - len(stripped)
                if ind <= indent:
                    break
                block = ind
            pos = prev
        return block


def _row_start(row) -> int:
    return row[0]


_W = rb" *+"
_SPACED = bytes(32 if b in (1, 9, 92) else b for b in range(256))
"""``bytes.translate`` table turning the separators inside a statement (masked newlines, tabs,
continuation backslashes) into spaces before the target patterns read it."""
_NAME_RX = rb"[A-Za-z_][A-Za-z0-9_]*+"
_ITEM = rb"(?:\*?" + _W + _NAME_RX + rb"(?:" + _W + rb"\." + _W + _NAME_RX + rb")*+)"
_ITEMS = _ITEM + rb"(?:" + _W + rb"," + _W + _ITEM + rb")*+(?:" + _W + rb",)?+"
_TARGETS = re.compile(rb"(?:" + _W + rb"(?:" + _ITEMS + rb"|\(" + _W + _ITEMS + _W + rb"\))" + _W + rb"=(?!=))+")
"""One or more simple assignment targets at a statement's start, each followed by its ``=``:
names, dotted names, starred names, comma lists of them, or a parenthesised list."""
_ANNOTATED = re.compile(_W + rb"(" + _NAME_RX + rb")((?:" + _W + rb"\." + _W + _NAME_RX + rb")*)" + _W + rb":(?!=)")
_NAME_ONLY = re.compile(_NAME_RX)
_EQ_MAP = bytes(b if chr(b) in "()[]{}=<>!:+-*/%&|^@~" else 120 for b in range(256))
_RUNS = re.compile(rb"x+")
_INNER = re.compile(rb"\([^()\[\]{}]*\)|\[[^()\[\]{}]*\]|\{[^()\[\]{}]*\}")
_PLAIN_EQ = re.compile(rb"(?<![=!<>+\-*/%&|^@:~])=(?!=)")
_TRAILED = _W + _NAME_RX + rb"(?:" + _W + rb"(?:\." + _W + _NAME_RX + rb"|\x05+))*" + _W
"""A subscripted or called target once its brackets are crossed out (``x[0]`` → ``x`` and four
\\x05): it binds no name."""
_LISTED = _W + rb"\x05+" + _W
"""A list pattern crossed out (``[a, b]``): it binds no name (lib/code/backends.py reads names
from pattern lists and tuple patterns only)."""


def _top_level_eq(text: bytes) -> bool:
    """``text`` (strings blanked) holds an ``=`` outside brackets that is no comparison or
    augmented operator: an assignment's."""
    if text.find(b"=") < 0:
        return False
    flat = _RUNS.sub(b"x", text.translate(_EQ_MAP))
    while True:
        shorter = _INNER.sub(b"x", flat)
        if len(shorter) == len(flat):
            break
        flat = shorter
    return _PLAIN_EQ.search(flat) is not None


def _assigned(text: bytes) -> list:
    """Names a simple statement ``text`` (``masked`` bytes: strings blanked) binds, as
    lib/code/backends.py ``_python_assigned_names`` reads them from the tree: ``X = 1``,
    ``X: int``, ``a = b = 1``, ``a, b = …``, ``(a, b) = …`` (a starred, dotted or
    subscripted target binds none; ``[]`` when the statement is no assignment).

    :raises _Fallback: a chain or target shape this scanner does not model."""
    m = _TARGETS.match(text)
    if m is not None:
        rest = text[m.end():]
        if _top_level_eq(rest) and not rest.lstrip(b" \t\x01\\").startswith(b"lambda"):
            raise _Fallback("assignment chain with a complex target")
        names = []
        for target in text[:m.end()].split(b"=")[:-1]:
            target = target.replace(b" ", b"")
            if target.startswith(b"("):
                items = target[1:-1].split(b",")
                if len(items) < 2:
                    raise _Fallback("parenthesised target")
            else:
                items = target.split(b",")
            for item in items:
                if item and _NAME_ONLY.fullmatch(item) and item not in _KEYWORDS:
                    names.append(item.decode())
                elif item and not item.startswith(b"*") and b"." not in item:
                    raise _Fallback("keyword as a target")
        return names
    m = _ANNOTATED.match(text)
    if m is not None:
        if m.group(1) in _KEYWORDS:
            return []
        return [] if m.group(2) else [m.group(1).decode()]
    if not _top_level_eq(text):
        return []
    # `x[0] = …`, `f().y = …`: one subscripted or called target binds no name
    flat = text
    while True:
        shorter = _INNER.sub(_crossed, flat)
        if shorter == flat:
            break
        flat = shorter
    cut = _PLAIN_EQ.search(flat)
    if cut is not None and (_rx("trailed", _TRAILED).fullmatch(flat, 0, cut.start()) or (
            text.lstrip(b" ").startswith(b"[") and _rx("listed", _LISTED).fullmatch(flat, 0, cut.start()))):
        rest = text[cut.end():]
        if not _top_level_eq(rest) or rest.lstrip(b" \t\x01\\").startswith(b"lambda"):
            return []
    raise _Fallback("assignment to a target shape not modelled")


def _crossed(m) -> bytes:
    return b"\x05" * (m.end() - m.start())
