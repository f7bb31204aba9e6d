"""Go's header scanner: the outline of a Go file without a tree-sitter parse (issue #24).

Go lists only top-level declarations (lib/code/backends.py: a function's, a method's, a
``const``/``var`` spec's inside are not entered), and every top-level statement starts with a
keyword, so the scan walks the file's top level in order: :func:`lib.code.scanners.clike.groups`
matches its braces (every function body is one pair, its inside never seen by Python), and
each declaration is read from its keyword to its end with Go's own rule for where a
statement ends (a newline after an identifier, a literal, ``)``, ``]`` or ``}``: the
language's automatic semicolons). The rows are the tree path's (lib/code/backends.py ``_go``):

* ``func`` → ``function``, ``func (r T)`` → ``method``: from ``func`` to the body's ``}`` (a
  bodiless declaration to its signature's end), signed by the whole header;
* a ``type`` spec → ``type``: a lone spec's range is its declaration's (``type`` included),
  a grouped one's is its own; a ``struct`` type is signed by its header up to ``{``, any other
  by its first line;
* every name of a ``const``/``var`` spec → ``const``/``var``, signed by the spec's (or the lone
  spec's declaration's) first line; a lone spec in ``var ( … )`` keeps its own range, as the
  grammar wraps grouped ``var`` specs in a list node (``const`` and ``type`` groups it does not);
* the doc comment: the comments directly above the range.

Falls back (``None``) on anything else at top level, a ``func`` name it cannot read, a
declaration whose end it cannot find, a brace or literal :mod:`clike` cannot vouch for.
"""
from __future__ import annotations

from bisect import bisect_right

from lib.code import symbols
from lib.code.scanners import clike

DIALECT = clike.Dialect("go", backtick=True)

_SPACE = clike.lazy(rb"(?:[ \t\r\n]++|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/)*+")
"""Whitespace and comments between top-level statements."""
_KEYWORD = clike.lazy(rb"(package|import|func|type|var|const)(?![A-Za-z0-9_\x80-\xff])[ \t]*+")
_IDENT = clike.lazy(rb"[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*+")
_NAMES = clike.lazy(rb"[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*+(?:[ \t]*+,[ \t]*+[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*+)*+")
_TOKEN = clike.lazy(rb"(?P<code>(?:[^\n;()\[\]{}\"'`/]++|/(?![/*]))*+)(?:(?P<br>[\n;()\[\]{}])"
                    rb"|(?P<comment>//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/)"
                    rb"|(?P<literal>\"(?:[^\"\\\n]++|\\.)*+\"|'(?:[^'\\\n]++|\\.)*+'|`[^`]*+`)|(?P<end>\Z)|(?P<bad>))")
"""One step of a statement: the code up to the next newline, ``;``, bracket or brace
(``br``), comment, literal, the end, or a byte no rule covers (``bad``)."""
_ENDS_STATEMENT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_)]}\"'`")
"""Last bytes after which a newline ends a Go statement (identifiers, keywords, literals,
closing brackets; Go's semicolon rule). ``++``/``--`` never end a top-level one."""
_TYPE_LITERAL = (b"struct", b"interface")
_FAST_FUNC = clike.lazy(rb"func(?:[ \t]*+\((?P<recv>[^()\n/\"'`]*+)\))?[ \t]*+(?P<name>[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*+)"
                        rb"(?:[^\n{;\"'`/ \t]++|[ \t]++(?!\{)|(?<=interface)\{\}|(?<=struct)\{\})*+"
                        rb"(?<!struct)(?<!interface)[ \t]*+(?=\{)")
"""A function whose header is one line without a literal or comment (``interface{}`` and
``struct{}`` allowed) up to a ``{``: the body when it is not a type literal's."""
_NEXT = clike.lazy(_SPACE.pattern + rb"(?P<at>)(?:(?P<fast>" + _FAST_FUNC.pattern + rb"))?")
"""Whitespace and comments, then (``fast``) a function :data:`_FAST_FUNC` reads."""
_SLOW_HEAD = clike.lazy(rb"[;\"'`]|//")
"""What a one-line function header must not hold for the fast path (a statement end, a
literal, a line comment): the statement walk reads such a header instead."""


class _Fallback(Exception):
    """The scan cannot vouch for the file."""


def outline(data: bytes) -> list | None:
    """The symbols of the Go source ``data`` (module docstring), or ``None`` to fall back."""
    if data.find(b"\\\n") >= 0:
        return None  # a backslash ending a line is an error outside a raw string: the tree recovers
    found = clike.groups(data, DIALECT)
    if found is None:
        return None
    pairs, _ = found
    try:
        return _Walk(data, pairs).run()
    except _Fallback:
        return None


class _Walk:
    """One sequential pass over a file's top level."""

    def __init__(self, data: bytes, pairs: list):
        self.data = data
        self.opens = [a for a, _ in pairs]
        self.close_of = dict(pairs)
        self.out = []

    def run(self) -> list:
        data, size, close_of, out = self.data, len(self.data), self.close_of, self.out
        pos = anchor = 0
        pending = []  # (index in out, header bytes) of the fast path's functions, signed at the end
        step = _NEXT.match
        append, Symbol, doc = out.append, symbols.Symbol, clike.doc_above
        while True:
            m = step(data, pos)
            pos = m.start("at")
            brace = m.end()
            if m.lastgroup == "fast" and brace in close_of:
                # the common case: a one-line header with no literal or comment, then the body
                end = close_of[brace] + 1
                pending.append((len(out), data[pos:brace]))
                append(Symbol(m.group("name").decode("utf-8", "replace"),
                              "function" if m.group("recv") is None else "method", None, pos, end, 0, 0,
                              source=(doc, data, anchor, pos, DIALECT)))
                pos = anchor = end
                continue
            if pos >= size:
                for (i, _), sig in zip(pending, symbols.collapse_headers([raw for _, raw in pending])):
                    sym = out[i]
                    sym.signature = sig or symbols.signature_at(data, sym.start, sym.end, "//")
                return clike.number_lines(out, data)
            m = _KEYWORD.match(data, pos)
            if m is None:
                if data[pos:pos + 1] == b";":
                    pos += 1
                    continue
                raise _Fallback
            word = m.group(1)
            if word == b"func":
                end = self.func(pos, m.end(), anchor)
            elif word in (b"package", b"import"):
                end, stop = self.statement(m.end())
                if stop is not None:
                    raise _Fallback
            else:
                end = self.declaration(word, pos, m.end(), anchor)
            pos = anchor = end

    def statement(self, pos: int, stop_group: bool = False):
        """Walk from ``pos`` to the end of the statement (or of a grouped spec): returns
        ``(end, stop)``: ``end`` the byte after its last token; ``stop`` the offset of the
        grouped declaration's ``)`` that ended it, or (with ``stop_group``) of the first
        top-level ``{`` at bracket depth 0 that is not a type literal's (a body: the walk stops
        there), else ``None``."""
        data, close_of, match = self.data, self.close_of, _TOKEN.match
        depth, last = 0, pos
        first = pos
        while True:
            m = match(data, pos)
            cs, ce = m.span("code")
            if ce > cs:
                chunk = data[cs:ce].rstrip()
                if chunk:
                    last = cs + len(chunk)
            kind = m.lastgroup
            end = m.end()
            if kind == "br":
                tok = data[ce]
                if tok == 0x0A or tok == 0x3B:  # newline, ;
                    if depth == 0 and (tok == 0x3B or last > first and data[last - 1] in _ENDS_STATEMENT):
                        return last, None
                elif tok == 0x28 or tok == 0x5B:  # ( [
                    depth += 1
                    last = end
                elif tok == 0x29 or tok == 0x5D:  # ) ]
                    depth -= 1
                    if depth < 0:
                        if tok != 0x29:
                            raise _Fallback
                        return last, ce
                    last = end
                elif tok == 0x7B:  # {
                    close = close_of.get(ce)
                    if close is None:
                        raise _Fallback
                    if stop_group and depth == 0 and not _type_literal(data, ce):
                        return last, ce
                    last = end = close + 1
                else:  # a } the group pass did not pair
                    raise _Fallback
            elif kind == "literal":
                last = end
            elif kind == "end":
                if depth:
                    raise _Fallback
                return last, None
            elif kind != "comment":
                raise _Fallback
            pos = end

    def func(self, start: int, pos: int, anchor: int) -> int:
        data = self.data
        kind = "function"
        if data[pos:pos + 1] == b"(":
            kind = "method"
            # the receiver: one parenthesised list, no literal in it
            close = data.find(b")", pos)
            if close < 0 or data.find(b"(", pos + 1, close) >= 0 or data.find(b"\n", pos, close) >= 0:
                raise _Fallback
            pos = _SPACE.match(data, close + 1).end()
        m = _IDENT.match(data, pos)
        if m is None:
            raise _Fallback
        name = m.group().decode("utf-8", "replace")
        # the common case, one line up to the body's brace: the next pair not a type literal's
        opens, i = self.opens, bisect_right(self.opens, m.end())
        while i < len(opens) and _type_literal(data, opens[i]):
            i += 1
        body = opens[i] if i < len(opens) else -1
        head = data[m.end():body] if body >= 0 else b"\n"
        if head.find(b"\n") < 0 and not _SLOW_HEAD.search(head):
            end = None
        else:
            end, body = self.statement(m.end(), stop_group=True)
        if body is not None and data[body:body + 1] != b"{":
            raise _Fallback
        if body is not None:
            end = self.close_of[body] + 1
            sig = clike.header(data, start, body, DIALECT)
        else:
            sig = clike.header(data, start, end, DIALECT)
        if sig is None:
            sig = symbols.signature_at(data, start, end, "//")
        self.add(name, kind, sig, start, end, anchor)
        return end

    def declaration(self, word: bytes, start: int, pos: int, anchor: int) -> int:
        data = self.data
        kind = {b"type": "type", b"var": "var", b"const": "const"}[word]
        if data[pos:pos + 1] != b"(":
            return self.spec(kind, start, pos, anchor, None)
        # a grouped declaration: specs one by one up to the closing parenthesis
        specs, inner = [], pos + 1
        while True:
            inner = _SPACE.match(data, inner).end()
            if data[inner:inner + 1] == b")":
                close = inner
                break
            if data[inner:inner + 1] == b";":
                inner += 1
                continue
            spec_end, closed = self.statement(inner)
            specs.append((inner, spec_end))
            if closed is not None:
                close = closed
                break
            inner = spec_end
        end = close + 1
        if len(specs) == 1 and kind != "var":  # tree-sitter-go wraps grouped var specs in a list
            self.spec(kind, start, specs[0][0], anchor, end, spec_end=specs[0][1])
        else:
            spec_anchor = pos + 1
            for a, b in specs:
                self.spec(kind, a, a, spec_anchor, b, spec_end=b)
                spec_anchor = b
        return end

    def spec(self, kind: str, start: int, pos: int, anchor: int, end, spec_end=None) -> int:
        """One spec starting at ``pos`` whose symbol range starts at ``start`` (its declaration
        when it is the lone spec) and ends at ``end`` (``None``: the spec's end)."""
        data = self.data
        if spec_end is None:
            spec_end, closed = self.statement(pos)
            if closed is not None:
                raise _Fallback
        if end is None:
            end = spec_end
        if kind == "type":
            m = _IDENT.match(data, pos)
            if m is None:
                raise _Fallback
            names = [m.group()]
            sig = None
            rest = m.end()
            if data[rest:rest + 1] == b"[":  # type parameters, or an array type
                raise _Fallback
            rest = _SPACE.match(data, rest).end()
            if data[rest:rest + 1] == b"=":
                rest = _SPACE.match(data, rest + 1).end()
            if data.startswith(b"struct", rest):
                brace = _SPACE.match(data, rest + 6).end()
                if data[brace:brace + 1] == b"{" and brace in self.close_of:
                    if self.close_of[brace] + 1 != spec_end:
                        raise _Fallback
                    sig = clike.header(data, start, brace, DIALECT)
        else:
            m = _NAMES.match(data, pos)
            if m is None:
                raise _Fallback
            names = [n.strip() for n in m.group().split(b",")]
            sig = None
        if sig is None:
            sig = symbols.signature_at(data, start, end, "//")
        for name in names:
            self.add(name.decode("utf-8", "replace"), kind, sig, start, end, anchor)
        return end

    def add(self, name: str, kind: str, sig, start: int, end: int, anchor: int) -> None:
        self.out.append(symbols.Symbol(name, kind, sig, start, end, 0, 0,
                                       source=(clike.doc_above, self.data, anchor, start, DIALECT)))


def _type_literal(data: bytes, brace: int) -> bool:
    """The ``{`` at ``brace`` opens a ``struct``/``interface`` type literal, not a body."""
    head = data[max(0, brace - 12):brace].rstrip()
    for word in _TYPE_LITERAL:
        if head.endswith(word):
            before = head[-len(word) - 1:-len(word)]
            return not before or before[0] not in _WORD_BYTES
    return False


_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
