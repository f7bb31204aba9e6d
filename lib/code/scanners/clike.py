"""The shared lexer of the C-like header scanners (C, Go, Java, Rust; C++ and C# reuse it).

Two entry points, both compiled regular expressions over the whole bytes:

* :func:`scan` — one pass over a file that finds every ``{`` and ``}`` outside comments and
  string, character and raw literals (and, in C, outside preprocessor directives), matches
  them, and returns a :class:`Scan`; ``None`` when the file cannot be vouched for: a literal or
  comment that does not end, a nested ``/* /* */ */`` (Rust), a lone quote, braces that do not
  balance. The literals and comments are consumed *inside* the expression (possessive runs:
  no backtracking), so the per-match Python loop runs once per brace or directive, never per
  character or per literal.
* :func:`literals` — the comments and literals of one stretch of code (a header, the gap
  between two definitions), for signatures and doc comments; a stretch must start in code
  (after a brace, a ``;``, a directive, a definition's end).

Language differences are a :class:`Dialect`: ``chars`` C-style ``'x'``/``'\\n'`` literals
(a lone ``'`` is then an error); ``lifetimes`` Rust, where ``'a`` is a lifetime or a label and
``'a'`` a character; ``raw`` Rust's ``r"…"``/``r#"…"#`` (and ``br``/``cr``); ``backtick``
Go's raw `` `…` `` strings; ``text_blocks`` Java's ``\"\"\"…\"\"\"``; ``preprocessor`` C's
``#`` directive lines (a token of their own, continuation lines included); ``nested``
nested block comments are legal (Rust): a ``/*`` inside a comment makes :func:`scan` fall back
rather than pair it. JavaScript's template literals and regular expressions need the parser
state a regular expression has not got; no dialect models them.

The rules of what is a literal come from the languages' references as tree-sitter's grammars
implement them; a construct outside them makes :func:`scan` return ``None`` (the caller then
parses with tree-sitter, docs/ctxctl.md "Header scanners").
"""
from __future__ import annotations

import _sre
import sys as _sys
from bisect import bisect_right

from lib.code import symbols as _symbols


class lazy:
    """A regular expression built on first use, without the ``re`` module when it can be: a
    cold ``outline`` would otherwise pay ``import re`` (it pulls ``enum``) and ``re.compile``
    (its parser and compiler are Python), together more than a bare interpreter's start-up.
    The compiled programs of every expression the scanners define are committed in
    ``lib/code/scanners/_tables.py`` (written by ``python -m lib.code.scanners.clike``, kept
    current by a test) and handed to the engine (``_sre.compile``) as ``re.compile`` would; an
    expression missing there, or a Python whose engine differs (``_sre.MAGIC``, version), is
    compiled by ``re``. Attribute access (``match``, ``search``…) is the compiled pattern's;
    ``pattern`` is the source, for building other expressions from it. A hot loop binds
    ``p.match`` once, so it calls the compiled method directly."""

    def __init__(self, pattern: bytes, flags: int = 0):
        self.pattern, self.flags = pattern, flags

    def __getattr__(self, name: str):
        # first use only: the compiled pattern's methods become this object's attributes, so
        # later calls find them without coming back here
        compiled = _build(self.pattern, self.flags)
        for method in ("match", "fullmatch", "search", "finditer", "findall", "sub", "split"):
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


_table = None


def _build(pattern: bytes, flags: int):
    """The compiled pattern, from the committed table when it holds it, else by ``re``."""
    global _table
    if _table is None:
        try:
            from lib.code.scanners import _tables
            fits = (_tables.MAGIC == _sre.MAGIC and tuple(_tables.VERSION) == tuple(_sys.version_info[:2])
                    and _tables.BYTEORDER == _sys.byteorder)
            _table = _tables.TABLE if fits else {}
        except ImportError:
            _table = {}
    entry = _table.get((pattern, flags))
    if entry is not None:
        final_flags, code, groups, groupindex, indexgroup = entry
        return _sre.compile(pattern, final_flags, memoryview(code).cast("I").tolist(), groups, dict(groupindex),
                            indexgroup)
    import re

    return re.compile(pattern, flags)


def program(pattern: bytes, flags: int = 0) -> tuple:
    """The table entry of one expression, as ``re.compile`` builds it: ``(flags, code,
    groups, groupindex, indexgroup)`` (``re._parser``/``re._compiler``, Python 3.11), the code
    as native unsigned ints in bytes (one ``marshal`` copy to load, not a tuple of ints)."""
    from re import _compiler, _parser

    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    indexgroup = [None] * parsed.state.groups
    for name, index in parsed.state.groupdict.items():
        indexgroup[index] = name
    import array

    return (flags | parsed.state.flags, array.array("I", code).tobytes(), parsed.state.groups - 1,
            tuple(sorted(parsed.state.groupdict.items())), tuple(indexgroup))


def expressions() -> list:
    """Every :class:`lazy` expression of the scanners in :data:`lib.code.scanners.MODULES`:
    their modules' own and their ``DIALECT``'s (what ``_tables.py`` holds)."""
    from lib.code import scanners

    out = []
    for name in scanners.MODULES.values():
        module = __import__(name, fromlist=["_"])
        out += [v for v in vars(module).values() if isinstance(v, lazy)]
        dialect = getattr(module, "DIALECT", None)
        if isinstance(dialect, Dialect):
            out += [dialect.braces, dialect.groups, dialect.tokens]
    return out


def write_tables(path: str) -> int:
    """Write ``_tables.py`` (the programs of :func:`expressions`); returns how many."""
    entries = {(e.pattern, e.flags): program(e.pattern, e.flags) for e in expressions()}
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('"""Compiled programs of the header scanners\' regular expressions (generated by\n'
                 '``python -m lib.code.scanners.clike``; see :class:`lib.code.scanners.clike.lazy`)."""\n')
        fh.write(f"MAGIC = {_sre.MAGIC}\nVERSION = {tuple(_sys.version_info[:2])!r}\nBYTEORDER = {_sys.byteorder!r}\n"
                 "TABLE = {\n")
        for key in sorted(entries):
            fh.write(f"    {key!r}:\n        {entries[key]!r},\n")
        fh.write("}\n")
    return len(entries)


class Dialect:
    """A language's literal rules (see the module docstring) and its compiled expressions:
    ``braces`` (:func:`scan`'s pass, over the file :meth:`folded`) and ``tokens``
    (:func:`literals`', over the bytes themselves)."""

    __slots__ = ("name", "preprocessor", "table", "_rules", "_compiled")

    def __init__(self, name: str, chars: bool = True, lifetimes: bool = False, raw: bool = False,
                 backtick: bool = False, text_blocks: bool = False, preprocessor: bool = False,
                 nested: bool = False, multiline_strings: bool = False):
        self.name, self.preprocessor = name, preprocessor
        specials = b"{}\"'/*\\\n#" + (b"`" if backtick else b"") + (b"r" if raw else b"")
        # every other byte becomes `a`: a run of code is then a run of one literal byte, which
        # the engine skips several times faster than a character class
        if lifetimes:
            # a lifetime `'a` ends where its identifier does: identifier bytes become `a`, other
            # bytes `b`, so `'a>(x: &'b` cannot read as one character literal
            word = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | set(range(0x80, 0x100))
            self.table = bytes(c if c in specials else 0x61 if c in word else 0x62 for c in range(256))
        else:
            self.table = bytes(c if c in specials else 0x61 for c in range(256))
        self._rules = (chars, lifetimes, raw, backtick, text_blocks, preprocessor, nested, multiline_strings)
        self._compiled = {}

    # compiled on first use: a cold call compiles only the expressions its scanner runs (the
    # nested-groups one costs a few milliseconds, a third of a bare interpreter's start-up)
    @property
    def braces(self):
        """The per-brace pass (:func:`scan`), over folded bytes."""
        return self._compile("braces", True, 0)

    @property
    def groups(self):
        """The top-level pass (:func:`groups`), pairs matched :data:`GROUP_DEPTH` deep."""
        return self._compile("groups", True, GROUP_DEPTH)

    @property
    def tokens(self):
        """Comments and literals (:func:`literals`), over the bytes themselves."""
        return self._compile("tokens", False, 0)

    def _compile(self, key: str, folded: bool, depth: int):
        got = self._compiled.get(key)
        if got is None:
            got = self._compiled[key] = lazy(self._pattern(folded, *self._rules, depth))
        return got

    @staticmethod
    def _pattern(folded, chars, lifetimes, raw, backtick, text_blocks, preprocessor, nested, multiline_strings,
                 depth=0):
        line = rb"//[^\n]*+"
        # a nested opener stops the comment: the run cannot go on, and scan() reports it
        block = rb"/\*(?:[^*/]++|\*(?!/)|/(?!\*))*+\*/" if nested else rb"/\*(?:[^*]++|\*(?!/))*+\*/"
        string = rb'"(?:[^"\\]++|\\(?s:.))*+"' if multiline_strings else rb'"(?:[^"\\\n]++|\\(?s:.))*+"'
        alts = [line, block]
        if text_blocks:
            alts.append(rb'"""(?:[^"\\]++|\\(?s:.)|"(?!""))*+"""')
        alts.append(string)
        if lifetimes:
            if folded:  # letters, digits and UTF-8 bytes are all `a`
                char = rb"'(?:[^'\\\n]|a{2,4}|\\(?:a\{a*+\}|[^\n]a*+))'"  # UTF-8: 2 to 4 `a`
                life = rb"'a++(?!')"
            else:
                char = (rb"'(?:\\(?:x[0-7][0-9a-fA-F]|u\{[0-9a-fA-F_]{1,8}\}|[nrt\\0'\"])|[^'\\\n\r\t\x80-\xff]"
                        rb"|[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf7][\x80-\xbf]{3})'")
                life = rb"'[A-Za-z_][A-Za-z0-9_]*+(?!')"
            alts += [char, life]
        elif chars:
            alts.append(rb"'(?:[^'\\\n]++|\\.)*+'")
        if raw:
            alts.append(rb'r(?P<h>#*+)"(?s:.*?)"(?P=h)')
        if backtick:
            alts.append(rb"`[^`]*+`")
        literal = b"|".join(alts)
        if not folded:
            return literal
        code = [rb"a++", rb"\*", rb"/(?![/*])", rb"\\"] + ([rb"b++"] if lifetimes else [])
        if raw:
            code.append(rb'r(?!#*+")')  # an identifier's r, not a raw string's
        if preprocessor:
            # a newline is code unless a directive starts the next line (blanks are folded to
            # `a`: groups() checks that a top-level directive's `#` starts its line's text)
            code.append(rb"\n(?!a*+#)")
        else:
            code += [rb"\n", rb"#"]
        inner = b"|".join(code) + b"|" + literal
        directive = None
        if preprocessor:
            directive = (rb"(?:^|\n)a*+#(?:[^\n\\/\"']++|\\(?s:.)|" + block + b"|" + line + b"|" + string
                         + rb"|'(?:[^'\\\n]++|\\.)*+'|'|/)*+")
        run = rb"(?:" + inner + rb")*+"
        if depth:
            # a balanced {…} up to `depth` levels deep, consumed by the engine: the group's
            # directives are part of it (inside a body they split nothing the scanner reads)
            body = inner + (b"|" + directive if directive else b"")
            group = rb"\{(?:" + body + rb")*+\}"
            for _ in range(depth - 1):
                group = rb"\{(?:" + body + b"|" + group + rb")*+\}"
            brace = rb"(?P<group>" + group + rb")"
        else:
            brace = rb"(?P<brace>[{}])"
        tail = rb"|(?P<end>\Z)|(?P<bad>(?s:.))"
        if directive:
            return _number_raw(run + rb"(?:" + brace + rb"|(?P<directive>" + directive + rb")" + tail + rb")")
        return _number_raw(run + rb"(?:" + brace + tail + rb")")

    def folded(self, data: bytes) -> bytes:
        """``data`` with every byte that opens, closes or escapes nothing replaced by ``a``
        (same length, so offsets carry over)."""
        return data.translate(self.table)


def _number_raw(pattern: bytes) -> bytes:
    """``pattern`` with each copy of the raw-string alternative's group ``h`` (and its
    back-reference) renamed ``h1``, ``h2``…: the nested groups repeat the alternative, and a
    name may be defined once."""
    parts = pattern.split(b"(?P<h>")
    out = [parts[0]]
    for i, part in enumerate(parts[1:], 1):
        out.append(b"(?P<h%d>" % i + part.replace(b"(?P=h)", b"(?P=h%d)" % i, 1))
    return b"".join(out)


GROUP_DEPTH = 6
"""How deep :func:`groups` matches braces inside a top-level pair in one expression (a
deeper file is paired by :func:`scan` instead: slower, same answer)."""


class Scan:
    """What :func:`scan` found. ``opens[i]`` and ``closes[i]`` are the byte offsets of the
    ``i``-th ``{`` (in source order) and of its matching ``}``; ``depths[i]`` how many pairs
    enclose it (0 at top level); ``directives`` the ``(start, end)`` byte ranges of C
    preprocessor lines (from the ``#``; ``end`` at their last line's newline), in order."""

    __slots__ = ("opens", "closes", "depths", "directives", "close_of")

    def __init__(self, opens, closes, depths, directives):
        self.opens, self.closes, self.depths, self.directives = opens, closes, depths, directives
        self.close_of = dict(zip(opens, closes))


def scan(data: bytes, dialect: Dialect) -> Scan | None:
    """Match the braces of ``data`` (module docstring); ``None`` when a literal or comment does
    not end, a byte no rule covers stops the pass, or the braces do not balance. One Python
    step per brace (a stack); literals and comments never reach Python."""
    opens, closes, depths, directives = [], [], [], []
    stack = []
    push, pop = stack.append, stack.pop
    add_open, add_close, add_depth = opens.append, closes.append, depths.append
    folded = dialect.folded(data)
    for m in dialect.braces.finditer(folded):
        kind = m.lastgroup
        if kind == "brace":
            at = m.end() - 1
            if folded[at] == 0x7B:  # {
                push(len(opens))
                add_depth(len(stack) - 1)
                add_open(at)
                add_close(-1)
            elif stack:
                closes[pop()] = at
            else:
                return None
        elif kind == "directive":
            span = _directive(m, folded, data)
            if span is None:
                return None
            directives.append(span)
        elif kind == "end":
            break
        else:
            return None  # "bad": an unterminated literal or comment, a lone quote
    if stack:
        return None
    return Scan(opens, closes, depths, directives)


def _directive(m, folded: bytes, data: bytes):
    """``(start, end)`` of the directive match ``m`` from its ``#``, or ``None`` when code
    precedes the ``#`` on its line (blanks are folded like code, so this is checked here)."""
    start, end = m.span("directive")
    if folded[start:start + 1] == b"\n":
        start += 1
    at = folded.index(b"#", start)
    return None if data[start:at].strip() else (at, end)


def groups(data: bytes, dialect: Dialect):
    """``(pairs, directives)`` at top level: ``pairs`` the ``(open, close)`` byte offsets of
    every top-level ``{`` and its ``}`` (the inside consumed by the engine, no Python per inner
    brace), ``directives`` as :attr:`Scan.directives` but only those outside every pair;
    ``None`` as :func:`scan` (also for nesting deeper than :data:`GROUP_DEPTH`)."""
    pairs, directives = [], []
    folded = dialect.folded(data)
    for m in dialect.groups.finditer(folded):
        kind = m.lastgroup
        if kind == "group":
            start, end = m.span("group")
            pairs.append((start, end - 1))
        elif kind == "directive":
            span = _directive(m, folded, data)
            if span is None:
                return None
            directives.append(span)
        elif kind == "end":
            return pairs, directives
        elif folded[m.start("bad"):m.start("bad") + 1] == b"{":
            return _top_level(data, dialect)  # nested deeper than GROUP_DEPTH, or unbalanced
        else:
            return None
    return None


def _top_level(data: bytes, dialect: Dialect):
    """:func:`groups`' answer from :func:`scan` (every brace, a Python step each)."""
    found = scan(data, dialect)
    if found is None:
        return None
    pairs = [(a, b) for a, b, depth in zip(found.opens, found.closes, found.depths) if depth == 0]
    if not found.directives:
        return pairs, []
    opens = [a for a, _ in pairs]
    directives = []
    for start, end in found.directives:
        i = bisect_right(opens, start) - 1
        if i < 0 or pairs[i][1] < start:
            directives.append((start, end))
    return pairs, directives


def number_lines(syms: list, data: bytes) -> list:
    """Set ``start_line``/``end_line`` (1-based, inclusive) of ``syms`` (sorted by start) from
    their byte ranges in one forward pass over ``data``'s newlines; returns ``syms``."""
    count, row, pos = data.count, 0, 0
    for sym in syms:
        start, end = sym.start, sym.end
        row += count(b"\n", pos, start)
        pos = start
        sym.start_line = row + 1
        sym.end_line = row + 1 + count(b"\n", start, end - 1) if end > start else row + 1
    return syms


def literals(data: bytes, start: int, end: int, dialect: Dialect) -> list:
    """``(start, end, is_comment)`` of every comment and literal in ``data[start:end]`` (a
    stretch that starts in code), in order. A literal cut by ``end`` is not listed."""
    out = []
    for m in dialect.tokens.finditer(data, start, end):
        a, b = m.span()
        out.append((a, b, data[a:a + 1] == b"/"))
    return out


def comments(data: bytes, start: int, end: int, dialect: Dialect) -> list:
    """``(start, end)`` of the comments in ``data[start:end]`` (see :func:`literals`)."""
    return [(a, b) for a, b, is_comment in literals(data, start, end, dialect) if is_comment]


def header(data: bytes, start: int, end: int, dialect: Dialect, decorators=()) -> str | None:
    """The whole-header signature of ``data[start:end]`` (a definition's start to its body), as
    :func:`lib.code.symbols.header_signature` makes it (:func:`lib.code.symbols.collapse_header`):
    comments removed, whitespace collapsed, brackets tidied, the trailing ``{ : ; = => ->``
    stripped, capped; ``None`` when nothing is left. ``decorators``: ``(start, end)`` of the
    annotations or attributes in the range, in order, each capped on its own."""
    pieces, pos = [], start
    for a, b in decorators:
        if a > pos:
            pieces.append((uncommented(data, pos, a, dialect), False))
        pieces.append((uncommented(data, a, b, dialect), True))
        pos = b
    pieces.append((uncommented(data, pos, end, dialect), False))
    return _symbols.collapse_header(pieces)


def uncommented(data: bytes, start: int, end: int, dialect: Dialect) -> bytes:
    """``data[start:end]`` with its comments cut out (the pieces joined by one space)."""
    raw = data[start:end]
    if raw.find(b"//") < 0 and raw.find(b"/*") < 0:
        return raw
    cuts = comments(data, start, end, dialect)
    if not cuts:
        return raw
    parts, pos = [], start
    for a, b in cuts:
        parts.append(data[pos:a])
        pos = b
    parts.append(data[pos:end])
    return b" ".join(parts)


def doc_above(data: bytes, anchor: int, start: int, dialect: Dialect) -> str | None:
    """The doc comment directly above the definition starting at byte ``start``, as
    :func:`lib.code.symbols.doc_above` reads it: the comments between ``anchor`` (a code
    position no later than the previous sibling's end) and ``start`` with nothing but
    whitespace after them, each ending on the line just above the next, markers stripped,
    joined with single spaces. (A Rust item passes the start of its first ``#[…]``: the tree
    path skips those siblings.)"""
    found = literals(data, anchor, start, dialect)
    count = data.count
    row = count(b"\n", anchor, start)
    parts, pos = [], start
    for a, b, is_comment in reversed(found):
        if not is_comment or (b != pos and not data[b:pos].isspace()):
            break
        # a line comment's node ends before its newline, a block comment's at its "*/"
        if count(b"\n", anchor, b) != row - 1:
            break
        parts.append((a, b))
        row = count(b"\n", anchor, a)
        pos = a
    if not parts:
        return None
    text = " ".join(s for s in (_symbols.strip_comment(data[a:b].decode("utf-8", "replace"))
                                for a, b in reversed(parts)) if s)
    return text or None


if __name__ == "__main__":
    import os

    from lib.code.scanners import clike as _module  # the module the scanners register with

    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_tables.py")
    print(f"{_module.write_tables(target)} expressions written to lib/code/scanners/_tables.py")
