"""Java's header scanner: the outline of a Java file without a tree-sitter parse (issue #24).

The tree path (lib/code/backends.py ``_java``) lists classes, records, interfaces, enums,
annotation types, methods and constructors at any depth, and each declarator of a class's
``field_declaration`` (not an interface's constants, not an initialiser's inside). The scan
matches every brace once (:func:`lib.code.scanners.clike.scan`) and walks the member lists
of type bodies in order, reading each member from its first annotation or modifier to its
``;`` or its body's ``}``:

* a type declaration → its kind, signed by its whole header (annotations capped one by
  one), its body walked in turn;
* a method or constructor → ``method``, signed by its whole header (a bodiless one by its
  whole declaration), its body searched for local and anonymous classes, whose members the
  tree path lists too;
* a field → a ``var`` per declarator, signed by its first line (annotation-only lines skipped);
* an enum's constants → nothing, their class bodies walked.

The doc comment is the comments directly above the member. Falls back (``None``) on a member
it cannot classify, a nested brace whose header it cannot read, a brace or literal
:mod:`clike` cannot vouch for.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

from lib.code import symbols
from lib.code.scanners import clike

DIALECT = clike.Dialect("java", text_blocks=True)

_SPACE = clike.lazy(rb"(?:[ \t\r\n\f]++|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/)*+")
_IDENT = rb"[A-Za-z_$\x80-\xff][A-Za-z0-9_$\x80-\xff]*+"
_STEP = clike.lazy(rb"(?:[^;{}()\"'/,=]++|/(?![/*]))*+(?:(?P<br>[;{}(),=])|(?P<comment>//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/)"
                   rb"|(?P<literal>\"\"\"(?:[^\"\\]++|\\(?s:.)|\"(?!\"\"))*+\"\"\"|\"(?:[^\"\\\n]++|\\.)*+\"|'(?:[^'\\\n]++|\\.)*+')"
                   rb"|(?P<end>\Z)|(?P<bad>))")
_ANNOTATION = clike.lazy(rb"@(?!interface\b)[ \t\r\n]*+" + _IDENT + rb"(?:[ \t\r\n]*+\.[ \t\r\n]*+" + _IDENT + rb")*+")
_MODIFIER = clike.lazy(rb"(?:public|protected|private|static|final|abstract|native|synchronized|transient|volatile"
                       rb"|strictfp|default|sealed|non-sealed)(?![A-Za-z0-9_$])")
_TYPE_DECLARATION = clike.lazy(rb"(class|interface|enum|record|@[ \t\r\n]*+interface)[ \t\r\n]++(" + _IDENT + rb")")
_FAST_METHOD = clike.lazy(rb"[^(){};\"'/=@]*(?<![A-Za-z0-9_$])(?P<name>" + _IDENT + rb")[ \t\r\n]*+\([^(){};\"'/=@]*+\)"
                          rb"[ \t\r\n]*+(?:throws[ \t\r\n]++[^(){};\"'/=@]*+)?(?=\{)")
"""A method or constructor whose header, up to its body, holds no annotation, literal,
comment, ``=`` or nested parenthesis (a type declaration's header is told apart after)."""
_PACKAGE_IMPORT = clike.lazy(rb"(?:package|import)(?![A-Za-z0-9_$])")
_KINDS = {b"class": "class", b"record": "class", b"interface": "interface", b"enum": "enum"}
_NAME_BEFORE_PAREN = clike.lazy(rb"(" + _IDENT + rb")[ \t\r\n]*+$")
_WORD = clike.lazy(rb"(?<![A-Za-z0-9_$])(?:class|interface|enum|record|new)(?![A-Za-z0-9_$])")
_ANONYMOUS = clike.lazy(rb"(?<![A-Za-z0-9_$.])new[ \t\r\n]++[A-Za-z_$][A-Za-z0-9_$.]*+[ \t\r\n]*+(?:<[^;{}()]*>)?[ \t\r\n]*+$")
_TYPE_WORD = clike.lazy(rb"(?<![A-Za-z0-9_$])(?:class|interface|enum|record)(?![A-Za-z0-9_$])")
_DECLARATOR = clike.lazy(rb"[ \t\r\n]*+(" + _IDENT + rb")[ \t\r\n]*+(?:\[[ \t\r\n]*+\][ \t\r\n]*+)*+")
_ARGS = rb"<(?:[^<>;{}()=]|<(?:[^<>;{}()=]|<[^<>;{}()=]*+>)*+>)*+>"
_FIELD_TYPE = clike.lazy(rb"[ \t\r\n]*+(?:@[^\s(]++[ \t\r\n]*+)*+" + _IDENT + rb"(?:[ \t\r\n]*+" + _ARGS + rb")?"
                         rb"(?:[ \t\r\n]*+\.[ \t\r\n]*+" + _IDENT + rb"(?:[ \t\r\n]*+" + _ARGS + rb")?)*+"
                         rb"(?:[ \t\r\n]*+\[[ \t\r\n]*+\])*+(?=[ \t\r\n])")
"""A field's type (generic arguments nested three deep, arrays)."""
_FAST_FIELD = clike.lazy(rb"(?:(?:public|protected|private|static|final|transient|volatile)[ \t\r\n]++)*+"
                         + _FIELD_TYPE.pattern + rb"[ \t\r\n]++(?P<name>" + _IDENT + rb")[ \t\r\n]*+"
                         rb"(?:=(?:[^;{}\"'/,()]++|\"(?:[^\"\\\n]++|\\.)*+\"|\((?:[^;{}\"'/()]++|\([^;{}\"'/()]*+\))*+\))*+)?;")
"""A field with one declarator and an initialiser without braces, comments or top-level
commas (a string literal allowed)."""
_DEPTH_CHARS = clike.lazy(rb"[()\[\]{},]")


class _Fallback(Exception):
    """The scan cannot vouch for the file."""


def outline(data: bytes) -> list | None:
    """The symbols of the Java source ``data`` (module docstring), or ``None`` to fall back."""
    found = clike.scan(data, DIALECT)
    if found is None:
        return None
    try:
        walk = _Walk(data, found)
        walk.members(0, len(data), "top")
        return walk.finish()
    except _Fallback:
        return None


class _Walk:
    def __init__(self, data: bytes, found):
        self.data = data
        self.opens, self.closes = found.opens, found.closes
        self.close_of = found.close_of
        self.out = []
        self.pending = []  # (index in out, header bytes) of the fast path's methods, signed at the end

    def finish(self) -> list:
        out, data = self.out, self.data
        for (i, _), sig in zip(self.pending, symbols.collapse_headers([raw for _, raw in self.pending])):
            sym = out[i]
            sym.signature = sig or symbols.signature_at(data, sym.start, sym.end, "//")
        out.sort(key=lambda s: (s.start, -s.end))  # the tree path's pre-order
        return clike.number_lines(out, data)

    def add(self, name: bytes, kind: str, sig: str, start: int, end: int, anchor: int) -> None:
        self.out.append(symbols.Symbol(name.decode("utf-8", "replace"), kind, sig, start, end, 0, 0,
                                       source=(clike.doc_above, self.data, anchor, start, DIALECT)))

    def members(self, pos: int, stop: int, where: str) -> None:
        """Walk the member list ``data[pos:stop]`` of a type body (``where``: ``class``,
        ``interface``, ``enum`` (constants first), or ``top`` for the file)."""
        data = self.data
        anchor = pos
        if where == "enum":
            pos = anchor = self.constants(pos, stop)
            where = "class"  # after its constants an enum's members are a class's
        while True:
            pos = _SPACE.match(data, pos, stop).end()
            if pos >= stop:
                return
            if data[pos:pos + 1] == b";":
                pos = anchor = pos + 1
                continue
            end = self.member(pos, stop, where, anchor)
            pos = anchor = end

    def constants(self, pos: int, stop: int) -> int:
        """An enum's constants (``A, B(1), C { … }``) up to the ``;`` that ends them (or the
        body's end): their class bodies are walked. Returns where the members start."""
        while True:
            end, kind, at = self.statement(pos, stop, commas=True)
            if kind == "{":
                self.members(at + 1, self.close_of[at], "class")
                end, kind, at = self.statement(self.close_of[at] + 1, stop, commas=True)
                if kind == "{":
                    raise _Fallback
            if kind == ";":
                return at + 1
            if kind == "end":
                return stop
            pos = at + 1  # a comma

    def statement(self, pos: int, stop: int, commas: bool = False):
        """Walk to the first ``;``, ``{`` at parenthesis depth 0 (or ``,`` with ``commas``) or
        ``stop``: returns ``(end of the last token, what stopped it, its offset)``."""
        data, close_of, match = self.data, self.close_of, _STEP.match
        depth, last = 0, pos
        self.eq = None
        while True:
            m = match(data, pos, stop)
            end = m.end()
            kind = m.lastgroup
            if kind == "br":
                tok = data[end - 1]
                if tok == 0x28:  # (
                    depth += 1
                elif tok == 0x29:  # )
                    depth -= 1
                    if depth < 0:
                        raise _Fallback
                elif tok == 0x7B:  # {
                    if depth == 0:
                        return _rstrip(data, pos, end - 1, last), "{", end - 1
                    close = close_of.get(end - 1)
                    if close is None:
                        raise _Fallback
                    self.block(end - 1, close)  # a lambda's or an array's inside, in parentheses
                    end = close + 1
                elif tok == 0x3B:  # ;
                    if depth == 0:
                        return _rstrip(data, pos, end - 1, last), ";", end - 1
                elif tok == 0x2C and commas and depth == 0:
                    return _rstrip(data, pos, end - 1, last), ",", end - 1
                elif tok == 0x7D:
                    raise _Fallback
                elif tok == 0x3D and depth == 0 and self.eq is None:  # =
                    self.eq = end - 1
                last = end
            elif kind == "literal":
                last = end
            elif kind == "end":
                if depth:
                    raise _Fallback
                return _rstrip(data, pos, end, last), "end", stop
            elif kind != "comment":
                raise _Fallback
            pos = end

    def member(self, start: int, stop: int, where: str, anchor: int) -> int:
        data = self.data
        if where == "class" or where == "interface":
            m = _FAST_METHOD.match(data, start, stop)
            if m is not None and m.end() in self.close_of and not _TYPE_WORD.search(data, start, m.end()):
                # the common case: no annotation, literal or comment up to the body's brace
                at = m.end()
                close = self.close_of[at]
                self.pending.append((len(self.out), data[start:at]))
                self.add(m.group("name"), "method", None, start, close + 1, anchor)
                self.block(at, close)
                return close + 1
            if where == "class":
                m = _FAST_FIELD.match(data, start, stop)
                if m is not None:
                    end = m.end()
                    self.add(m.group("name"), "var", symbols.signature_at(data, start, end, "//"), start, end, anchor)
                    return end
        # leading annotations and modifiers
        pos, decorators = start, []
        while True:
            m = _ANNOTATION.match(data, pos)
            if m is not None:
                a = m.end()
                after = _SPACE.match(data, a).end()
                if data[after:after + 1] == b"(":
                    close = _paren_close(data, after, self.close_of)
                    a = close + 1
                decorators.append((pos, a))
                pos = _SPACE.match(data, a).end()
                continue
            m = _MODIFIER.match(data, pos)
            if m is not None:
                pos = _SPACE.match(data, m.end()).end()
                continue
            break
        t = _TYPE_DECLARATION.match(data, pos)
        if t is not None:
            end, kind, at = self.statement(t.end(), stop)
            if kind != "{":
                raise _Fallback
            word = t.group(1)
            sig = clike.header(data, start, at, DIALECT, decorators) or symbols.signature_at(data, start, at, "//")
            close = self.close_of[at]
            self.add(t.group(2), _KINDS.get(word, "interface"), sig, start, close + 1, anchor)
            body = {b"enum": "enum", b"class": "class", b"record": "class", b"interface": "interface"}.get(word, "annotation")
            self.members(at + 1, close, body)
            return close + 1
        end, kind, at = self.statement(pos, stop)
        if where == "top":
            if kind == ";" and pos == start and _PACKAGE_IMPORT.match(data, pos):
                return at + 1
            raise _Fallback  # a top-level statement that declares no type: not modelled
        eq = self.eq
        while kind == "{" and eq is not None:
            # an initialiser's array or anonymous class: a class's field stops the tree walk,
            # an interface's constant does not
            if where != "class":
                self.nested(eq + 1, at, self.close_of[at])
            end, kind, at = self.statement(self.close_of[at] + 1, stop)
        if kind == "{" and pos == at:  # an initializer block
            self.block(at, self.close_of[at])
            return self.close_of[at] + 1
        paren = _first_paren(data, pos, end)
        if paren is not None and (eq is None or eq > paren):
            if where == "annotation":
                if kind != ";":
                    raise _Fallback
                return at + 1  # an annotation type's element: not listed
            n = _NAME_BEFORE_PAREN.search(data, pos, paren)
            if n is None:
                raise _Fallback
            if kind == "{":
                close = self.close_of[at]
                sig = clike.header(data, start, at, DIALECT, decorators)
                self.add(n.group(1), "method", sig or symbols.signature_at(data, start, close + 1, "//"),
                         start, close + 1, anchor)
                self.block(at, close)
                return close + 1
            sig = clike.header(data, start, at + 1, DIALECT, decorators)
            self.add(n.group(1), "method", sig or symbols.signature_at(data, start, at + 1, "//"),
                     start, at + 1, anchor)
            return at + 1
        if kind != ";":
            raise _Fallback
        if where in ("interface", "annotation"):
            return at + 1  # constants: the grammar's constant_declaration, not listed
        names = self.declarators(pos, at)
        sig = symbols.signature_at(data, start, at + 1, "//")
        for name in names:
            self.add(name, "var", sig, start, at + 1, anchor)
        return at + 1

    def declarators(self, pos: int, stop: int) -> list:
        """The names a field declares: ``Type a = 1, b;`` → ``a``, ``b`` (``pos``: after the
        modifiers, ``stop``: the ``;``)."""
        text = _strip_literals(self.data, pos, stop)
        t = _FIELD_TYPE.match(text)
        if t is None:
            raise _Fallback
        names, depth, piece = [], 0, t.end()
        rest = text
        i = piece
        while True:
            j = _DEPTH_CHARS.search(rest, i)
            if j is None:
                part = rest[piece:]
            else:
                c = rest[j.start()]
                i = j.end()
                if c in b"([{":
                    depth += 1
                    continue
                if c in b")]}":
                    depth -= 1
                    continue
                if depth:
                    continue
                part = rest[piece:j.start()]  # a comma between declarators
            eq = part.find(b"=")
            if eq >= 0 and j is not None and part.find(b"<", eq) >= 0:
                raise _Fallback  # a comma after `a < b` or `new T<K, V>`: not split here
            d = _DECLARATOR.fullmatch(part[:eq] if eq >= 0 else part)
            if d is None:
                raise _Fallback
            names.append(d.group(1))
            if j is None:
                return names
            piece = i

    def nested(self, prev: int, at: int, end: int) -> None:
        """The pair ``at``…``end`` inside a body (see :func:`_classify`)."""
        kind = _classify(self.data, prev, at)
        if kind == "anonymous":
            self.members(at + 1, end, "class")
        elif kind == "block":
            self.block(at, end)
        else:
            raise _Fallback  # a local type declaration: not modelled yet

    def block(self, open_: int, close: int) -> None:
        """A method's (or initializer's, lambda's) body: its nested pairs are blocks, local
        type declarations or anonymous class bodies; the latter two hold listed members."""
        data = self.data
        find = data.find
        if find(b"new", open_, close) < 0 and find(b"class", open_, close) < 0 and find(b"interface", open_, close) < 0 \
                and find(b"enum", open_, close) < 0 and find(b"record", open_, close) < 0:
            return None  # no word that opens a class body: nothing listed inside
        opens = self.opens
        i = bisect_right(opens, open_)
        prev = open_ + 1
        while i < len(opens) and opens[i] < close:
            at = opens[i]
            end = self.close_of[at]
            self.nested(prev, at, end)
            prev = end + 1
            i = bisect_left(opens, end, i)
        return None


def _classify(data: bytes, prev: int, at: int) -> str:
    """What the ``{`` at ``at`` opens inside a body, from the code since ``prev`` (a position
    after the previous nested pair or the body's ``{``): ``anonymous`` (``new T(…) {``),
    ``block`` (a statement's block, a lambda's body, an array), or ``unknown`` (a local type
    declaration, which the scan does not model)."""
    find = data.find
    if find(b"new", prev, at) < 0 and find(b"class", prev, at) < 0 and find(b"interface", prev, at) < 0 \
            and find(b"enum", prev, at) < 0 and find(b"record", prev, at) < 0:
        return "block"
    if not _WORD.search(data, prev, at):
        return "block"
    tail = _strip_literals(data, prev, at)
    if _anonymous(tail):
        return "anonymous"
    cut = max(tail.rfind(b";"), tail.rfind(b"{"), tail.rfind(b"}"))
    if _TYPE_WORD.search(tail, cut + 1):
        return "unknown"
    return "block"


def _anonymous(tail: bytes) -> bool:
    """The text before a ``{`` ends with ``new Type(args)``: an anonymous class body."""
    t = tail.rstrip()
    if not t.endswith(b")"):
        return False
    depth, i = 0, len(t) - 1
    while i >= 0:
        c = t[i]
        if c == 0x29:
            depth += 1
        elif c == 0x28:
            depth -= 1
            if depth == 0:
                break
        i -= 1
    if i < 0:
        return False
    return _ANONYMOUS.search(t[:i]) is not None


def _strip_literals(data: bytes, start: int, end: int) -> bytes:
    """``data[start:end]`` with comments and literals blanked (same length)."""
    raw = bytearray(data[start:end])
    for a, b, _ in clike.literals(data, start, end, DIALECT):
        raw[a - start:b - start] = b" " * (b - a)
    return bytes(raw)


def _paren_close(data: bytes, open_: int, close_of: dict) -> int:
    """The ``)`` matching the ``(`` at ``open_`` (literals and comments skipped)."""
    depth, pos = 0, open_
    while True:
        m = _STEP.match(data, pos)
        kind = m.lastgroup
        end = m.end()
        if kind == "br":
            c = data[end - 1]
            if c == 0x28:
                depth += 1
            elif c == 0x29:
                depth -= 1
                if depth == 0:
                    return end - 1
            elif c == 0x7B and end - 1 in close_of:  # an array of annotation values
                end = close_of[end - 1] + 1
            elif c in (0x7B, 0x7D, 0x3B):
                raise _Fallback
        elif kind in ("end", "bad"):
            raise _Fallback
        pos = end


def _first_paren(data: bytes, start: int, end: int):
    """Offset of the first ``(`` in ``data[start:end]`` outside literals and comments, or
    ``None``."""
    i = data.find(b"(", start, end)
    if i < 0:
        return None
    if data.find(b"\"", start, i) >= 0 or data.find(b"'", start, i) >= 0 or data.find(b"/", start, i) >= 0:
        for a, b, _ in clike.literals(data, start, i, DIALECT):
            if a < i < b:
                raise _Fallback
    return i


def _rstrip(data: bytes, start: int, end: int, last: int) -> int:
    chunk = data[start:end].rstrip()
    return start + len(chunk) if chunk else last
