"""Markdown header scanner: the headings tree-sitter-markdown lists, read from the bytes.

What the tree-sitter path lists (lib/code/backends.py ``_markdown``): every ``section`` whose
first block is a heading. tree-sitter-markdown opens a section at each ATX heading (``#`` …
``######``), reaching to the next ATX heading of the same or a higher level (or the end of the
file); setext headings (a paragraph underlined by ``===``/``---``) open none, so the only setext
heading listed is the first block of the file's first section (after any front matter). A
heading's name is its text with whitespace collapsed and a closing ``#`` run stripped; its
signature the first line (lib/code/symbols.py ``signature_at``); its range the section's.

The scan (CommonMark block structure, docs/ctxctl.md "Header scanners"): one compiled pattern
finds the lines that can matter — ATX markers, code fences, HTML block starts, list and block
quote markers, setext underlines — and a small state machine over them skips
fenced code, front matter and HTML blocks. A column-0 heading or fence always belongs to the
document (it closes every list and quote); what sits in or next to a list or block quote is
not modelled, so the scanner returns ``None`` (tree-sitter parses the file) when a heading,
underline or HTML block could belong to one, and also on an unterminated fence or HTML block,
tabs before a marker, a carriage return, a byte-order mark, NUL or bytes that are not UTF-8.
"""
from __future__ import annotations

import re

from lib.code.symbols import Symbol, signature_at

_LINE_BODY = (
    rb"(?P<ind>[ \t]*)(?=[#`~<>+*=\-0-9])(?:(?P<atx>#{1,6})(?=[ \t]|$)|(?P<fence>`{3,}|~{3,})|(?P<lt><)"
    rb"|(?P<cont>>|[-+*](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$))|(?P<ul>(?:=+|-+)[ \t]*$))")
_LINE = re.compile(rb"\n" + _LINE_BODY, re.M)
"""A line that can matter, found by the newline before it (a literal prefix ``re`` searches for
fast), by its first token after indentation (groups named by kind)."""
_FIRST_LINE = re.compile(_LINE_BODY, re.M)
""":data:`_LINE` at the start of the file."""
_CLOSES_CONTAINERS = re.compile(rb"\n[ \t]*\n(?=[^ \t\n])(?!>|[-+*](?:[ \t\n]|$)|\d{1,9}[.)](?:[ \t\n]|$))", re.M)
"""A blank line before a column-0 line that opens no list or quote: every list and quote ends."""
_PREFIX = re.compile(rb"[ \t]*(?:>[ \t]*|(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$))+", re.M)
"""The list and block-quote markers opening a line."""
_AFTER_PREFIX = re.compile(rb"(#{1,6}(?:[ \t]|$)|`{3,}|~{3,}|<|(?:=+|-+)[ \t]*$)", re.M)
"""What, after a line's container markers, makes it matter: a heading, fence, HTML or underline."""
_BLANK_LINE = re.compile(rb"^[ \t]*$", re.M)
_HTML_END = (
    (re.compile(rb"<(?:script|pre|style|textarea)(?=[ \t>]|$)", re.I | re.M),
     re.compile(rb"</(?:script|pre|style|textarea)>", re.I)),
    (re.compile(rb"<!--"), re.compile(rb"-->")),
    (re.compile(rb"<\?"), re.compile(rb"\?>")),
    (re.compile(rb"<![A-Za-z]"), re.compile(rb">")),
    (re.compile(rb"<!\[CDATA\["), re.compile(rb"\]\]>")),
)
"""CommonMark HTML blocks 1–5: the start, and the text whose line ends the block."""
_OPENS_BLOCK = re.compile(rb" {0,3}(?:#{1,6}(?:[ \t]|$)|`{3,}[^`\n]*$|~{3,})", re.M)
"""A first line that opens a block no setext heading can start with: an ATX heading or a fence."""
_UNDERLINE = re.compile(rb"^([ \t]*)(?:=+|-+)[ \t]*$", re.M)
_PLAIN = re.compile(rb"(?![ \t]*(?:[#>`~<*+\-=|\[_]|\d{1,9}[.)](?:[ \t]|$)))[ \t]*[^ \t\n]", re.M)
"""A paragraph line no block construct can claim (text starting with a letter, a digit …)."""
_FENCE_INSIDE = re.compile(rb"^[ \t]*[>*+\-.)0-9][ \t>*+\-.)0-9]*(?:```|~~~)", re.M)
"""A fence-like run inside a fence's content: tree-sitter-markdown closes a fence at ``- ```…``
(CommonMark does not), so a fence holding one is left to it."""
_fence_closers = {}
_shallower = {}
_indented_closers = {}


def _fence_closer(char: bytes, size: int):
    key = (char, size)
    got = _fence_closers.get(key)
    if got is None:
        got = _fence_closers[key] = re.compile(rb"^ {0,3}%s{%d,}[ \t]*$" % (re.escape(char), size), re.M)
    return got


def _indented_closer(col: int, char: bytes, size: int):
    key = (col, char, size)
    got = _indented_closers.get(key)
    if got is None:
        got = _indented_closers[key] = re.compile(rb"^ {%d}%s{%d,}[ \t]*$" % (col, re.escape(char), size), re.M)
    return got


def _shallower_line(depth: int):
    """A non-blank line indented by fewer than ``depth`` spaces (a tab counts as shallower)."""
    got = _shallower.get(depth)
    if got is None:
        got = _shallower[depth] = re.compile(rb"^ {0,%d}[^ \n]" % (depth - 1), re.M)
    return got


def _line_end(data: bytes, pos: int) -> int:
    """Index of the ``\\n`` ending the line at ``pos`` (``len(data)`` on the last line)."""
    nl = data.find(b"\n", pos)
    return len(data) if nl < 0 else nl


def _front_matter_end(data: bytes) -> int | None:
    """End of a ``---``/``+++`` front matter block at the start (0 when there is none), or
    ``None`` when the start looks like one in a form not modelled."""
    if not data.startswith((b"---", b"+++")):
        return 0
    fence = data[:3]
    if data[3:4] != b"\n":
        return None if data[3:4] in (b"-", b"+", b" ", b"\t") or fence == b"+++" else 0
    close = data.find(b"\n" + fence + b"\n", 3)
    if close < 0:
        return None
    return close + 5


def _html_region_end(data: bytes, start: int) -> int | None:
    """The largest end a block starting with ``<`` at ``start`` can have: the blank line after
    it, or the line that ends an HTML block of types 1–5; ``None`` when such a block is not
    terminated."""
    blank = _BLANK_LINE.search(data, _line_end(data, start))
    end = len(data) if blank is None else blank.start()
    for opener, closer in _HTML_END:
        if opener.match(data, start):
            term = closer.search(data, start)
            if term is None:
                return None
            end = max(end, _line_end(data, term.end()))
            break
    return end


def outline(data: bytes) -> list | None:
    """The headings of Markdown ``data`` as :class:`~lib.code.symbols.Symbol` rows identical to
    the tree-sitter path's, in source order; ``None`` when the scan cannot vouch for them (see
    the module docstring)."""
    if b"\r" in data or b"\0" in data or data.startswith(b"\xef\xbb\xbf"):
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    begin = _front_matter_end(data)
    if begin is None:
        return None
    if data and data[-1] != 10:  # tree-sitter-markdown misreads some blocks ended by the end of file
        if _FIRST_LINE.match(data, data.rfind(b"\n") + 1):
            return None
    first = _first_setext(data, begin)
    if first is False:
        return None
    heads = _atx_headings(data, begin)
    return None if heads is None else _symbols(data, begin, first, heads)


def _atx_headings(data: bytes, pos: int) -> list | None:
    """``(start, level, marker end)`` of every ATX heading of the document from ``pos`` on, or
    ``None`` when one may belong to a list or block quote, or a fence or HTML block is not
    terminated (the state machine of the module docstring)."""
    heads = []
    container = -1  # start of the last list or quote line while one may be open, else -1
    html_end = -1  # lines before this may be inside an HTML block
    search = _LINE.search
    m = _FIRST_LINE.match(data, 0) if pos == 0 else None
    if m is None:
        m = search(data, pos - 1 if pos else 0)
    while m is not None:
        at, pos = m.start("ind"), m.end()
        kind = m.lastgroup
        if container >= 0 and kind != "cont" and _CLOSES_CONTAINERS.search(data, container, at + 1):
            container = -1
        ind = m.group("ind")
        if b"\t" in ind:
            return None
        depth = len(ind)
        if kind == "atx":
            if depth >= 4 and container < 0:
                pass  # indented code or a paragraph's continuation
            elif at < html_end or depth:  # an indented heading's section may start after its indent
                return None
            else:
                heads.append((at, len(m.group("atx")), pos))
                container = -1
        elif kind == "fence":
            if at < html_end:
                return None
            run = m.group("fence")
            rest_end = _line_end(data, pos)
            if run[:1] == b"`" and b"`" in data[pos:rest_end]:
                pass  # inline code, not a fence
            elif depth == 0 or (container < 0 and depth < 4):
                close = _fence_closer(run[:1], len(run)).search(data, rest_end)
                if close is None or _FENCE_INSIDE.search(data, rest_end, close.start()):
                    return None
                pos = close.end()
                container = -1
            elif container >= 0:
                pos = _container_fence(data, depth, run, rest_end)
                if pos is None:
                    return None
        elif kind == "lt":
            if depth < 4 or container >= 0:
                end = _html_region_end(data, at + depth)
                if end is None:
                    return None
                html_end = max(html_end, end)
        elif kind == "ul":
            if container >= 0:
                return None
        else:  # a list or block quote marker: what follows it on the line may matter
            container = at
            prefix = _PREFIX.match(data, at)
            after = _AFTER_PREFIX.match(data, prefix.end())
            if after is not None:
                token = after.group(1)
                if token[:1] == b"<":
                    end = _html_region_end(data, prefix.end())
                    if end is None:
                        return None
                    html_end = max(html_end, end)
                elif token[:1] in b"`~" and b">" not in data[at:prefix.end()]:
                    rest_end = _line_end(data, after.end())
                    if token[:1] != b"`" or b"`" not in data[after.end():rest_end]:
                        pos = _container_fence(data, prefix.end() - at, token, rest_end)
                        if pos is None:
                            return None
                else:
                    return None
        m = search(data, pos)
    return heads


def _container_fence(data: bytes, col: int, run: bytes, rest_end: int) -> int | None:
    """End of a fence opened at column ``col`` where a list may be open: the fence runs to the
    next line that is the same fence indented alike, and every line between must be indented at
    least as deep (then it is code whether the fence belongs to the list or to the document).
    ``None`` when that cannot be shown."""
    if col > 16:
        return None
    close = _indented_closer(col, run[:1], len(run)).search(data, rest_end)
    if close is None or _shallower_line(col).search(data, rest_end, close.start()) or \
            _FENCE_INSIDE.search(data, rest_end, close.start()):
        return None
    return close.end()


def _first_setext(data: bytes, begin: int):
    """``(start, underline start, end)`` of the setext heading that is the first block after
    ``begin`` (its end: the underline line's, newline included), ``None`` when the first block is not one, or
    ``False`` when that cannot be decided by this scan."""
    pos = begin
    n = len(data)
    while pos < n:
        m = _BLANK_LINE.match(data, pos)
        if m is None:
            break
        pos = m.end() + 1
    if pos >= n or _OPENS_BLOCK.match(data, pos):
        return None
    blank = _BLANK_LINE.search(data, pos)
    run_end = n if blank is None else blank.start()
    under = _UNDERLINE.search(data, pos, run_end)
    if under is None:
        return None
    if len(under.group(1)) > 3 or b"\t" in under.group(1) or under.start() == pos:
        return False
    line = pos
    while line < under.start():
        if not _PLAIN.match(data, line) or (line == pos and data[pos:pos + 4] == b"    "):
            return False
        line = _line_end(data, line) + 1
    end = under.end()
    return pos, under.start(), (end + 1 if end < n else end)


def _symbols(data: bytes, begin: int, first, heads: list) -> list:
    """The rows: the first block's setext heading (its section runs from ``begin`` to the first
    ATX heading) and every ATX heading's section, with lines counted incrementally."""
    n = len(data)
    ends = [n] * len(heads)
    stack = []  # indices of open sections, levels increasing
    for i, (_, level, _) in enumerate(heads):
        while stack and heads[stack[-1]][1] >= level:
            ends[stack.pop()] = heads[i][0]
        stack.append(i)
    rows = []
    if first is not None:
        stop = heads[0][0] if heads else n
        rows.append((begin, stop, first[0], first[2], None))
    for (start, _, marker_end), end in zip(heads, ends):
        rows.append((start, end, start, _line_end(data, start) + 1, marker_end))
    out = []
    count = data.count
    row, pos = 0, 0  # 0-based row of byte ``pos``
    for start, end, head, head_end, marker_end in rows:
        if marker_end is None:
            name = " ".join(data[head:first[1]].decode("utf-8").split())
        else:
            name = " ".join(data[marker_end:head_end - 1].decode("utf-8").split()).rstrip("#").strip()
        row += count(b"\n", pos, start)
        pos = start
        if not name:
            continue
        last = row + count(b"\n", start, end)
        if end > start and data[end - 1] == 10 and last > row:
            last -= 1
        sig = signature_at(data, head, min(head_end, n), "")
        out.append(Symbol(name, "heading", sig, start, end, row + 1, last + 1, doc=None))
    return out
