"""The outline parse: function bodies left out of tree-sitter's input.

An outline needs every definition's header, name and extent, never the statements of a
function body, yet parsing those statements is most of tree-sitter's time (two thirds to
nine tenths of a C#, Go or TypeScript file). :func:`holes` finds, in one pass of string
methods over the bytes (no ``re``: its import alone costs a third of a bare interpreter's
start-up), the *interior* of every function body — the bytes between its ``{`` and its
matching ``}`` — that holds nothing the language's backend would list; the parse then runs
with ``included_ranges`` set to the rest (:func:`ranges`). tree-sitter sees ``f(a) {}``
where the source has ``f(a) { … }``; every node keeps its offsets and points in the file,
so a function's extent, its line range and its header signature are the full parse's.

The scan skips comments, string and character literals (per language: :data:`LEXERS`).
A ``{`` opens a function body when its header — the text since the previous ``; { }``,
comments removed — has a ``)`` (parameters) and no type word (``class``, ``struct``,
``impl``, ``record``, ``namespace``, ``new``…, :data:`TYPE_WORDS`; in C# only before the
first ``(`` outside attribute lists, as ``where T : class`` constrains a method and
``[A(x)] interface I`` declares a type). A body is kept whole (parsed) when
its interior may hold a definition the backend lists there (:func:`_keeps`): Java's local and
anonymous classes, Rust's nested items, C#'s local functions, TypeScript's and JavaScript's
nested named functions, classes and object-literal methods. C, C++ and Go list nothing
inside a function. Python's bodies are found by indentation (:func:`_python_holes`), Lua's and
Ruby's by matching block keywords to their ``end`` (:func:`_lua_holes`, :func:`_ruby_holes`: the
hole runs from the header to the ``end``, so such a function has no body node; a scan whose
keywords do not balance leaves nothing out).
The test ``tests/ctxctl/test_skeleton.py`` checks, on real files of every such language,
that the outline of the skeleton parse equals the outline of the full parse.

:func:`lib.code.languages.parse` falls back to the full parse when the skeleton's tree has
any syntax error (a scan misled by a preprocessor branch, a raw string, a regex literal), so
a wrong hole costs time, not symbols. A syntax error inside a left-out body is not seen: the
symbol list it would call incomplete is complete (docs/ctxctl.md, "Outline parse").
"""
from __future__ import annotations

from itertools import repeat as _repeat
from operator import add as _add

LEXERS = {
    "c": {"chars": True}, "cpp": {"chars": True}, "csharp": {"chars": True, "verbatim": True},
    "java": {"chars": True}, "go": {"chars": True, "backtick": True}, "rust": {"chars": True},
    "typescript": {"backtick": True, "single": True}, "javascript": {"backtick": True, "single": True},
    "python": {}, "lua": {}, "ruby": {},
}
"""Languages with a skeleton parse, and the literals their brace scan knows beyond ``"…"`` and
C comments (Python has its own scan, by indentation; Lua and Ruby theirs, by keywords:
:func:`_lua_holes`, :func:`_ruby_holes`):
``chars`` a one-character ``'x'``/``'\\n'`` literal (a Rust lifetime ``'a`` is none),
``single`` a ``'…'`` string, ``backtick`` a `` `…` `` string (Go raw, JS template),
``verbatim`` C#'s ``@"…"`` (``""`` escapes a quote)."""

IMPORTS_OUTSIDE_BODIES = frozenset({"c", "cpp", "go", "java", "csharp", "rust", "python"})
"""Languages whose imports ``deps`` reads outside function bodies (C's ``#include`` and C++'s
``using`` outside functions, Go's and Java's imports and C#'s ``using`` directives at top or
namespace level, Rust's ``use`` at top level and in ``mod`` blocks): ``deps`` can use the
outline parse too. JavaScript's and TypeScript's ``require``/``import()``, Ruby's and Lua's
``require`` are read anywhere, so ``deps`` parses those files whole."""

KEEPS_NO_BODY_NODE = frozenset({"lua", "ruby"})
"""Languages whose outline parse leaves a function with no body node at all (the hole runs from
its header to its ``end``; C-like languages keep ``{}``, Python the first and last statements):
``symbol --compact``, which folds the body node, parses those files whole."""

TYPE_WORDS = {
    "c": (b"struct", b"union", b"enum"),
    "cpp": (b"struct", b"union", b"enum", b"class", b"namespace"),
    "csharp": (b"class", b"struct", b"interface", b"enum", b"record", b"namespace", b"new"),
    "java": (b"class", b"interface", b"enum", b"record", b"new"),
    "go": (b"struct", b"interface"),
    "rust": (b"struct", b"enum", b"union", b"trait", b"impl", b"mod"),
    "typescript": (b"class", b"interface", b"enum", b"namespace", b"module"),
    "javascript": (b"class",),
}
"""Words that, in a ``{``'s header, make it something other than a function body (a type's
member list, an anonymous class, an object initializer)."""

NESTED_WORDS = {
    "java": (b"class", b"interface", b"enum", b"record"),
    "rust": (b"fn", b"struct", b"enum", b"union", b"trait", b"impl", b"mod", b"type", b"const", b"static",
             b"macro_rules"),
    "typescript": (b"class", b"interface", b"enum", b"type", b"namespace"),
    "javascript": (b"class",),
}
"""Words that, starting a declaration anywhere in a body's interior (:func:`_declares`;
comments and strings included: a false alarm only keeps a body), keep the body whole."""

_CONTROL = frozenset((b"if", b"for", b"foreach", b"while", b"switch", b"catch", b"with", b"using", b"lock",
                      b"fixed", b"return", b"await", b"new", b"else", b"do", b"try", b"throw", b"yield",
                      b"function", b"sizeof", b"typeof", b"nameof", b"when", b"in", b"is", b"as", b"case",
                      b"checked", b"unchecked", b"unsafe", b"get", b"set"))
"""Words before a ``(`` that do not name a function being defined there."""

_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")
_SPACE = b" \t\r\n"
MIN_BYTES = 4096
"""Files smaller than this are parsed whole: the scan would cost about what it saves."""


def _has_word(data: bytes, word: bytes, start: int, end: int) -> bool:
    """``word`` occurs in ``data[start:end]`` as a whole word."""
    i = data.find(word, start, end)
    while i >= 0:
        j = i + len(word)
        if (i == 0 or data[i - 1] not in _WORD) and (j >= len(data) or data[j] not in _WORD):
            return True
        i = data.find(word, j, end)
    return False


def _word_before(data: bytes, i: int, floor: int) -> tuple:
    """``(word, start)`` of the identifier ending just before ``i`` (blanks skipped), or
    ``(b"", i)`` when another byte comes first."""
    while i > floor and data[i - 1] in _SPACE:
        i -= 1
    j = i
    while j > floor and data[j - 1] in _WORD:
        j -= 1
    return data[j:i], j


def _open_paren(data: bytes, close: int, floor: int) -> int:
    """Index of the ``(`` matching the ``)`` at ``close``, not before ``floor`` (literals not
    skipped), or -1."""
    depth, pos = 1, close
    rfind = data.rfind
    while True:
        o = rfind(b"(", floor, pos)
        if o < 0:
            return -1
        c = rfind(b")", o, pos)
        if c > o:
            depth += 1
            pos = c
        else:
            depth -= 1
            if depth == 0:
                return o
            pos = o


def _defines_function(data: bytes, brace: int, floor: int) -> bool:
    """The ``{`` or ``=>`` at ``brace`` follows ``name(…)`` where ``name`` is not a control
    word: a method, an object-literal method, a named function or a local function."""
    i = brace
    while i > floor and data[i - 1] in _SPACE:
        i -= 1
    if i <= floor or data[i - 1] != 41:
        return False
    start = _open_paren(data, i - 1, floor)
    if start < 0:
        return False
    word, at = _word_before(data, start, floor)
    if word and word not in _CONTROL:
        return _word_before(data, at, floor)[0] != b"new"  # `new T(…) { X = 1 }` initialises

    return word == b"" and at > floor and data[at - 1] == 93  # `[Symbol.iterator]() {`


_MODIFIERS = frozenset((b"export", b"default", b"declare", b"abstract", b"async", b"pub", b"pub(crate)",
                        b"pub(super)", b"final", b"static", b"private", b"public", b"protected", b"unsafe",
                        b"extern", b"const", b"sealed", b"strictfp"))


def _declares(data: bytes, word: bytes, start: int, end: int) -> bool:
    """``word`` occurs in ``data[start:end]`` as a whole word that starts a declaration: only
    blanks and modifiers (:data:`_MODIFIERS`) before it on its line (``Foo.class`` and
    ``'content-type'`` are no declarations)."""
    i = data.find(word, start, end)
    while i >= 0:
        j = i + len(word)
        if j >= len(data) or data[j] not in _WORD:
            line = data.rfind(b"\n", start, i) + 1 or start
            if all(w in _MODIFIERS for w in data[line:i].split()) and (i == line or data[i - 1] in _SPACE):
                return True
        i = data.find(word, j, end)
    return False


def _keeps(language: str, data: bytes, start: int, end: int) -> bool:
    """The body interior ``data[start:end]`` may hold a definition the backend lists."""
    for word in NESTED_WORDS.get(language, ()):
        if _declares(data, word, start, end):
            return True
    if language == "java":  # an anonymous class: `new T(…) {` before the statement's `;`
        i = data.find(b"new", start, end)
        while i >= 0:
            brace, semi = data.find(b"{", i, end), data.find(b";", i, end)
            if brace >= 0 and (semi < 0 or brace < semi) and _has_word(data, b"new", i, i + 3):
                return True
            i = data.find(b"new", i + 3, end)
    elif language in ("csharp", "typescript", "javascript"):
        for marker in (b"{", b"=>") if language == "csharp" else (b"{",):
            i = data.find(marker, start, end)
            while i >= 0:
                if _defines_function(data, i, start):
                    return True
                i = data.find(marker, i + 1, end)
    return False


def _is_body(language: str, data: bytes, brace: int, floor: int, in_enum: bool = False) -> bool:
    """The ``{`` at ``brace`` opens a function body (see the module docstring); ``floor`` is
    just past the previous brace outside comments and literals, ``in_enum`` whether the
    enclosing braces are a Java enum's (whose constants may have bodies)."""
    head = _uncommented(data[floor:brace])
    head = head[head.rfind(b";") + 1:]
    close = head.rfind(b")")
    if close < 0:
        return False
    if language == "javascript" or language == "typescript":
        tail = head[close + 1:].strip()
        if tail and not (tail.startswith(b":") or tail.endswith(b"=>")):
            return False
    # C# puts `class`, `struct` and `new()` in a method's `where` constraints: only the words
    # before its first `(` outside attribute lists count (`[Attr(x)] interface I {` declares a
    # type); elsewhere the whole header does (Rust `#[derive(…)] struct`)
    if language == "csharp":
        head = _unbracketed(head)
        stop = head.find(b"(")
    else:
        stop = len(head)
    for word in TYPE_WORDS[language]:
        if _has_word(head, word, 0, stop):
            return False
    if in_enum:  # an enum constant's body, `A(1) { … }`, names no type before the constant
        at = _word_before(head, head.find(b"("), 0)[1]
        if not _unannotated(head[:at]).strip(b" \t\r\n,"):
            return False
    return True


def _unbracketed(text: bytes) -> bytes:
    """``text`` without its ``[…]`` groups (nested ones included; an unclosed ``[`` runs to the
    end): C#'s attribute lists, whose arguments are no parameter list."""
    if text.find(b"[") < 0:
        return text
    out, depth, pos, i = [], 0, 0, 0
    find = text.find
    while True:
        o = find(b"[", i)
        if depth == 0:
            if o < 0:
                out.append(text[pos:])
                return b" ".join(out)
            out.append(text[pos:o])
            depth, i = 1, o + 1
            continue
        c = find(b"]", i)
        if c < 0:
            return b" ".join(out)
        if 0 <= o < c:
            depth, i = depth + 1, o + 1
        else:
            depth, i = depth - 1, c + 1
            pos = i


def _cut(text: bytes, marker: bytes, skip) -> bytes:
    """``text`` with each span that starts at a ``marker`` and that ``skip(text, at)`` ends
    (the index past it, or ``at + 1`` when the marker starts nothing) replaced by a space."""
    if text.find(marker) < 0:  # not `in`: `bytes in bytes` tries the needle as an int first, and raises
        return text
    out, i, n = [], 0, len(text)
    while i < n:
        k = text.find(marker, i)
        if k < 0:
            out.append(text[i:])
            break
        out.append(text[i:k])
        i = skip(text, k)
        if i == k + 1:
            out.append(marker)
    return b" ".join(out)


def _comment_end(text: bytes, k: int) -> int:
    if text.startswith(b"/*", k):
        e = text.find(b"*/", k + 2)
        return len(text) if e < 0 else e + 2
    if text.startswith(b"//", k):
        e = text.find(b"\n", k)
        return len(text) if e < 0 else e
    return k + 1


def _annotation_end(text: bytes, k: int) -> int:
    i, n = k + 1, len(text)
    while i < n and (text[i] in _WORD or text[i] == 46):
        i += 1
    if text.startswith(b"(", i):
        e = text.find(b")", i)
        return n if e < 0 else e + 1
    return max(i, k + 2)


def _uncommented(text: bytes) -> bytes:
    """``text`` without its ``/* … */`` and ``// …`` comments."""
    return _cut(text, b"/", _comment_end)


def _unannotated(text: bytes) -> bytes:
    """``text`` without annotations (``@A``, ``@A.b(…)``)."""
    return _cut(text, b"@", _annotation_end)


def _skip_string(data: bytes, i: int, quote: int, n: int, verbatim: bool = False) -> int:
    """Index just past the literal opened by ``data[i]`` (``quote``); ``n`` when unclosed. A
    ``"…"`` or ``'…'`` literal ends at its line's end (the quote was no literal's, say a
    regular expression's): scanning resumes just after it."""
    q = bytes([quote])
    if quote == 34 and data.startswith(b'"""', i):  # a Java text block
        k = data.find(b'"""', i + 3)
        return n if k < 0 else k + 3
    line_end = n if verbatim or quote == 96 else data.find(b"\n", i)
    if line_end < 0:
        line_end = n
    j = i + 1
    while True:
        k = data.find(q, j, line_end)
        if k < 0:
            return n if line_end == n else i + 1
        if verbatim:
            if data[k + 1:k + 2] == q:
                j = k + 2
                continue
            return k + 1
        back = k
        while back > j and data[back - 1] == 92:  # a quote after an odd run of backslashes is escaped
            back -= 1
        if (k - back) % 2 == 0:
            return k + 1
        j = k + 1


def _triple_strings(data: bytes) -> list:
    """Sorted ``(start, end)`` spans of the file's triple-quoted strings, each ``\"\"\"`` or
    ``\'\'\'`` paired with the next of the same kind (approximate: a misread shows as a
    syntax error in the skeleton's tree, or as a ``def`` inside a hole, and costs the hole)."""
    out, n = [], len(data)
    find = data.find
    dq, sq = find(b'"""'), find(b"'''")
    while True:
        if dq < 0 and sq < 0:
            return out
        i, q = (dq, b'"""') if sq < 0 or 0 <= dq < sq else (sq, b"'''")
        k = find(q, i + 3)
        end = n if k < 0 else k + 3
        out.append((i, end))
        if end >= n:
            return out
        # a kind absent past here stays absent: searching again would rescan the file's tail
        dq = find(b'"""', end) if dq >= 0 else -1
        sq = find(b"'''", end) if sq >= 0 else -1


def _balanced(seg: bytes) -> bool:
    """``seg`` closes every bracket it opens (literals not skipped)."""
    return seg.count(b"(") == seg.count(b")") and seg.count(b"[") == seg.count(b"]") and \
        seg.count(b"{") == seg.count(b"}")


def _python_header_end(data: bytes, i: int, n: int) -> int:
    """Index of the ``:`` that ends the ``def`` header starting at ``i`` (brackets balanced,
    so annotations and defaults may hold ``:``), or -1."""
    j = data.find(b":", i)
    while 0 <= j < n:
        if _balanced(data[i:j]):
            return j
        j = data.find(b":", j + 1)
    return -1


_CLAUSES = (b"except", b"else", b"elif", b"finally")
_DECORATED = (b"@", b"def ", b"async def ", b"class ")
"""Lines that continue a decorated statement after its decorator."""
"""Lines that continue a compound statement at its own indentation: no statement starts there."""


def _python_holes(data: bytes) -> list:
    """Python's holes: the statements of a ``def`` body between its first (which may be the
    docstring the outline reads) and its last (kept so that the function's node ends where
    its body ends), when no ``def`` or ``class`` sits among them. The body is the lines
    indented deeper than the ``def`` (blank and comment lines do not end it; lines inside a
    triple-quoted string do not count); a statement starts on a line at the body's
    indentation, not an ``except``/``else``/``elif``/``finally`` clause nor the ``def`` or
    ``class`` a decorator starts, with every bracket opened before it closed. The blank and
    comment lines just above the last statement are kept with it (a nested def's doc comment).
    A body indented with tabs (or by 254 columns or more) is kept.

    Per line, one list comprehension reads its indentation (:data:`_NOT_CODE` for a blank,
    comment or in-string line) into a byte string; a body's end and the lines at its
    statements' indentation are then found by ``bytes.find`` on it, so only those lines cost
    a Python step."""
    from bisect import bisect_right
    from itertools import accumulate, count as counter

    lines = data.split(b"\n")
    n = len(lines)
    starts = list(map(_add, accumulate(map(len, lines), initial=0), counter()))
    lstrip = bytes.lstrip
    level = bytearray([(d if (d := len(line) - len(s)) < _NOT_CODE else _NOT_CODE - 1) if s and s[0] != 35
                       else _NOT_CODE for line, s in zip(lines, map(lstrip, lines, _repeat(b" ")))])
    in_string = bytearray(n)
    strings = _triple_strings(data)
    for a, b in strings:  # lines that start inside a string are no code lines
        first, last = bisect_right(starts, a), min(bisect_right(starts, b - 1) - 1, n - 1)
        if last >= first:
            level[first:last + 1] = bytes([_NOT_CODE]) * (last - first + 1)
            in_string[first:last + 1] = b"\x01" * (last - first + 1)
    ends = {}  # depth -> `level` with every code line no deeper than it as 0
    out, floor, count = [], 0, data.count
    find, lfind = data.find, level.find
    i = find(b"def ")
    while i >= 0:
        row = bisect_right(starts, i) - 1
        line = lines[row]
        head = line.lstrip(b" ")
        if row < floor or not (head.startswith(b"def ") or head.startswith(b"async def ")) or b"\t" in line[:8]:
            i = find(b"def ", i + 4)
            continue
        colon = _python_header_end(data, i, len(data))
        if colon < 0:
            break
        crow = bisect_right(starts, colon) - 1
        rest = data[colon + 1:starts[crow] + len(lines[crow])].strip()
        depth = len(line) - len(head)
        if (rest and rest[0] != 35) or depth >= _NOT_CODE - 1:  # a one-line body: `def f(): pass`
            i = find(b"def ", i + 4)
            continue
        view = ends.get(depth)
        if view is None:
            view = ends[depth] = level.translate(_shallow_table(depth))
        end = view.find(0, crow + 1)
        end = n if end < 0 else end  # the first code line no deeper than the def
        j = crow + 1
        while j < end and level[j] == _NOT_CODE:
            j += 1
        stmts = []
        body_indent = level[j] if j < end else _NOT_CODE
        if body_indent < _NOT_CODE - 1:
            stmts.append(j)
            mark = starts[j]
            decorating = lines[j][body_indent:body_indent + 1] == b"@"  # the last statement is a decorator
            key = bytes([body_indent])
            j = lfind(key, j + 1, end)
            while j >= 0:
                stmt = lines[j][body_indent:]
                if not stmt.startswith(_CLAUSES):
                    if decorating and stmt.startswith(_DECORATED):  # its def or class continues it
                        decorating = stmt[:1] == b"@"
                    else:
                        seg = (mark, starts[j])
                        if (count(b"(", *seg) + count(b"[", *seg) + count(b"{", *seg)
                                == count(b")", *seg) + count(b"]", *seg) + count(b"}", *seg)):
                            stmts.append(j)
                            mark = starts[j]
                            decorating = stmt[:1] == b"@"
                j = lfind(key, j + 1, end)
        if len(stmts) >= 3:
            last = stmts[-1]  # the comments just above the last statement stay: its doc comment
            while last - 1 > stmts[1] and level[last - 1] == _NOT_CODE and not in_string[last - 1]:
                last -= 1
            a, b = starts[stmts[1]], starts[last]
            if not (_declares(data, b"def", a, b) or _declares(data, b"class", a, b)):
                out.append((a, b))
                floor = stmts[-1]
        i = find(b"def ", i + 4)
    return _with_hollow_strings(data, out, strings)


_NOT_CODE = 255
""":func:`_python_holes`' level of a blank, comment or in-string line (254: indented that deep
or deeper)."""
_SHALLOW = {}


def _shallow_table(depth: int) -> bytes:
    """``bytes.translate`` table: a level no deeper than ``depth`` to 0, any other to 1."""
    table = _SHALLOW.get(depth)
    if table is None:
        table = _SHALLOW[depth] = bytes(0 if v <= depth else 1 for v in range(256))
    return table


HOLLOW_MIN = 64
"""Shortest triple-quoted string interior worth leaving out of the parse, in bytes."""


def _with_hollow_strings(data: bytes, holes: list, strings: list) -> list:
    """``holes`` with the interiors of the triple-quoted strings ``strings`` (approximate
    spans, :func:`_triple_strings`) added, sorted: docstrings are most of many a module's
    bytes. The quotes stay, so the parse still sees a string with the same extent (the
    docstring reader reads its text from the bytes, lib.code.backends). Left whole: f-strings
    (their interpolations are nodes), an interior under :data:`HOLLOW_MIN` bytes, an unclosed
    string, a closing quote after a backslash, and a string inside a hole. A misread span is
    caught after the parse (:func:`hollows_hold`)."""
    out, n, h, count = [], len(data), 0, len(holes)
    for a, b in strings:
        while h < count and holes[h][1] <= a:
            out.append(holes[h])
            h += 1
        if h < count and holes[h][0] < b:
            continue  # inside (or across) a hole
        if b - a - 6 < HOLLOW_MIN or b > n or data[b - 3:b] != data[a:a + 3] or data[b - 4] == 92:
            continue
        k = a
        while k > 0 and data[k - 1] in b"rRbBuUfF":
            k -= 1
        if b"f" in data[k:a].lower():
            continue
        out.append((a + 3, b - 3))
    out.extend(holes[h:])
    return out


def hollows_hold(tree, data: bytes, cuts: list) -> bool:
    """Every string interior among ``cuts`` (one whose first byte follows a quote) is, in
    ``tree`` (the outline parse), the whole inside of one string: its opening quotes are a
    ``string_start`` ending where the cut starts and a ``string_end`` follows at its end. A
    cut the triple-quote pairing misread (a quote in a comment) fails this, and the whole
    file is parsed instead."""
    root = tree.root_node
    for a, b in cuts:
        if data[a - 1] not in (34, 39):
            continue
        node = root.descendant_for_byte_range(a - 1, a)
        if node is None or node.type != "string_start" or node.end_byte != a:
            return False
        after = node.next_sibling
        if after is None or after.type != "string_end" or after.start_byte != b:
            return False
    return True


def _long_bracket_end(data: bytes, i: int, n: int) -> int:
    """Index just past the Lua long bracket (``[[…]]``, ``[==[…]==]``) opening at ``i``; ``i + 1``
    when ``data[i]`` opens none; ``n`` when it never closes."""
    j = i + 1
    while j < n and data[j] == 61:  # =
        j += 1
    if j >= n or data[j] != 91:  # [
        return i + 1
    k = data.find(b"]" + b"=" * (j - i - 1) + b"]", j + 1)
    return n if k < 0 else k + j - i + 1


def _outermost(candidates: list, keeps) -> list:
    """The ``(start, end)`` candidates (any order, nested or disjoint) that ``keeps`` does not
    refuse and no chosen candidate contains, sorted: a body kept whole may still hold holes."""
    out, reach = [], -1
    for a, b in sorted(candidates):
        if a >= reach and b - a > 2 and not keeps(a, b):
            out.append((a, b))
            reach = b
    return out


_LUA_TOKENS = (b"--", b"[[", b"[=", b'"', b"'", b"function", b"if", b"do", b"repeat", b"end", b"until")


_WORD_VIEW = bytes(c if c in _WORD else 32 for c in range(256))
"""``bytes.translate`` table: word bytes (:data:`_WORD`) kept, every other byte a space."""


def _tokens(data: bytes, tokens: tuple, words: int) -> list:
    """``(position, index)`` of every occurrence of ``tokens`` in ``data``, sorted (an
    occurrence inside a literal or comment included: the caller skips those by position).
    ``tokens[words:]`` are keywords, found only as whole words (no byte of :data:`_WORD` on
    either side): they are searched in a copy of the file whose other bytes are spaces, so a
    keyword inside an identifier (``send``, ``modified``) costs no Python step. Each token's
    occurrences come from ``bytes.find`` and one sort merges them: a few C calls per
    occurrence, no heap or generator step."""
    view = b" " + data.translate(_WORD_VIEW) + b" "  # view[i] is the byte before data[i]
    out = []
    append = out.append
    for k, token in enumerate(tokens):
        if k < words:
            find, size = data.find, len(token)
        else:
            find, size, token = view.find, len(token), b" " + token + b" "
        i = find(token)
        while i >= 0:
            append((i, k))
            i = find(token, i + size)
    out.sort()
    return out


def _lua_holes(data: bytes) -> list:
    """Lua's holes: the interior of every function (named or not) from just past its parameter
    list to its ``end``, when no ``function name`` (a declaration the outline lists) sits in
    it. Blocks are matched by keyword: ``function``, ``if``, ``do`` (which ``while`` and ``for``
    end in) and ``repeat`` open one, ``end`` and ``until`` close one; comments, quoted strings
    and long brackets are skipped. A file whose keywords do not balance has no holes."""
    n = len(data)
    find = data.find
    stack, candidates, floor = [], [], 0
    for i, k in _tokens(data, _LUA_TOKENS, 5):
        if i < floor:
            continue  # inside a comment or literal
        if k < 5:
            if k == 0:  # -- a comment, long when a bracket follows
                pos = _long_bracket_end(data, i + 2, n) if data[i + 2:i + 3] == b"[" else i + 2
                if pos <= i + 3:
                    e = find(b"\n", i)
                    pos = n if e < 0 else e
            elif k <= 2:
                pos = _long_bracket_end(data, i, n)
            else:
                pos = _skip_string(data, i, data[i], n)
            floor = pos
            continue
        j = i + len(_LUA_TOKENS[k])
        if (i and (data[i - 1] in _WORD or data[i - 1] == 46)) or (j < n and data[j] in _WORD):
            continue  # a keyword counts as a whole word only
        if k <= 8:
            stack.append((k, i))
            continue
        if not stack:
            return []
        kind, at = stack.pop()
        if (kind == 8) != (k == 10):  # `until` closes `repeat`, `end` every other block
            return []
        if kind == 5:
            paren = find(b"(", at, i)
            close = find(b")", paren, i) if paren > 0 else -1
            if close > 0:
                candidates.append((close + 1, i))
    if stack:
        return []
    return _outermost(candidates, lambda a, b: _lua_declares(data, a, b))


def _lua_declares(data: bytes, start: int, end: int) -> bool:
    """``data[start:end]`` holds ``function`` followed by a name: a declaration the outline lists
    (comments and strings included: a false alarm only keeps a body)."""
    i = data.find(b"function", start, end)
    while i >= 0:
        j = i + 8
        while j < end and data[j] in b" \t":
            j += 1
        if j > i + 8 and j < end and data[j] in _WORD and data[j] not in b"0123456789$":
            return True
        i = data.find(b"function", i + 8, end)
    return False


def holes(language: str, data: bytes) -> list:
    """Sorted, disjoint ``(start, end)`` byte ranges: the interiors of function bodies that can
    be left out of the outline parse. Empty for a language without a skeleton parse."""
    if language == "python":
        return _python_holes(data)
    if language == "lua":
        return _lua_holes(data)
    if language == "ruby":
        return _ruby_holes(data)
    lexer = LEXERS.get(language)
    if lexer is None:
        return []
    n = len(data)
    chars, single, backtick = lexer.get("chars"), lexer.get("single"), lexer.get("backtick")
    verbatim = lexer.get("verbatim")
    specials = b"{}\"/" + (b"'" if chars or single else b"") + (b"`" if backtick else b"")
    find = data.find
    keys = [bytes([c]) for c in specials]
    slot = {c: k for k, c in enumerate(specials)}
    nxt = [find(key) for key in keys]  # the next position of each special byte, n when none
    nxt = [v if v >= 0 else n for v in nxt]
    out, stack, inside = [], [], -1  # stack of (brace, candidate, Java enum); inside: depth of an open candidate
    floor = 0
    java = language == "java"
    while True:
        i = min(nxt)
        if i >= n:
            break
        c = data[i]
        if c == 123 or c == 125:  # { }: only this byte's next position moves
            if c == 123:
                body = inside < 0 and _is_body(language, data, i, floor, bool(stack) and stack[-1][2])
                if body:
                    inside = len(stack)
                stack.append((i, body, java and not body and _has_word(data, b"enum", floor, i)))
            elif stack:
                start, body, _ = stack.pop()
                if body:
                    inside = -1
                    if i - start > 2 and not _keeps(language, data, start + 1, i):
                        out.append((start + 1, i))
            floor = i + 1
            k = slot[c]
            v = find(keys[k], floor)
            nxt[k] = v if v >= 0 else n
            continue
        if c == 47:  # /
            after = data[i + 1:i + 2]
            if after == b"/":
                k = find(b"\n", i)
                pos = n if k < 0 else k
            elif after == b"*":
                k = find(b"*/", i + 2)
                pos = n if k < 0 else k + 2
            elif single and _regex_may_start(data, i):  # a JavaScript regular expression literal
                pos = _skip_regex(data, i, n)
            else:
                pos = i + 1
        elif c == 39 and not single:  # a character literal, or a Rust lifetime / stray quote
            if data[i + 1:i + 2] == b"\\":
                k = find(b"'", i + 2)
                pos = i + 1 if k < 0 or k - i > 12 else k + 1
            else:
                pos = i + 3 if data[i + 2:i + 3] == b"'" else i + 1
        elif c == 34 and verbatim and i and data[i - 1] == 64:  # C# @"…"
            pos = _skip_string(data, i, c, n, verbatim=True)
        else:  # " ' `
            pos = _skip_string(data, i, c, n)
        if pos >= n:
            break
        for k, v in enumerate(nxt):
            if v < pos:
                v = find(keys[k], pos)
                nxt[k] = v if v >= 0 else n
    return out


_BEFORE_REGEX = frozenset(b"(,=:[!&|?{};+-*%<>~^")


def _regex_may_start(data: bytes, i: int) -> bool:
    """The ``/`` at ``i`` opens a regular expression literal, not a division: the byte before
    it (blanks skipped) is an operator or opener, or it follows ``return``/``typeof``."""
    j = i
    while j > 0 and data[j - 1] in b" \t":
        j -= 1
    if j == 0 or data[j - 1] in _BEFORE_REGEX:
        return True
    return data[max(0, j - 6):j] == b"return" or data[max(0, j - 6):j] == b"typeof"


def _skip_regex(data: bytes, i: int, n: int, multiline: bool = False) -> int:
    """Index just past the regular expression literal at ``i`` (``[…]`` classes and escapes
    honoured); ``i + 1`` when the line ends first (it was a division after all), unless
    ``multiline`` (Ruby's ``/…/x``: ``n`` when it never closes)."""
    j, in_class = i + 1, False
    while j < n:
        c = data[j]
        if c == 92:  # backslash
            j += 2
            continue
        if c == 10 and not multiline:
            return i + 1
        if in_class:
            in_class = c != 93
        elif c == 91:
            in_class = True
        elif c == 47:
            return j + 1
        j += 1
    return n if multiline else i + 1


def ranges(data: bytes, cuts: list) -> list:
    """``(start_byte, end_byte, start_point, end_point)`` of the parts of ``data`` outside
    ``cuts`` (sorted, disjoint), points as ``(row, column)`` in bytes, for ``included_ranges``."""
    out, pos, row, line_start = [], 0, 0, 0

    def point(offset: int) -> tuple:
        nonlocal row, line_start, pos_seen
        row += data.count(b"\n", pos_seen, offset)
        nl = data.rfind(b"\n", pos_seen, offset)
        if nl >= 0:
            line_start = nl + 1
        pos_seen = offset
        return row, offset - line_start

    pos_seen = 0
    for a, b in cuts:
        out.append((pos, a, point(pos), point(a)))
        point(b)
        pos = b
    out.append((pos, len(data), point(pos), point(len(data))))
    return out


_RUBY_TOKENS = (b"#", b'"', b"'", b"`", b"<<", b"%", b"/", b"?", b"\n=begin", b"\n__END__",
                b"def", b"class", b"module", b"if", b"unless", b"while", b"until", b"for", b"case", b"begin",
                b"do", b"end")
_RUBY_KEYWORDS = 10
"""Index of the first keyword in :data:`_RUBY_TOKENS`; before it, the literals and comments."""
_RUBY_DEF, _RUBY_END = 10, len(_RUBY_TOKENS) - 1
_RUBY_MODIFIABLE = frozenset((13, 14, 15, 16))
"""``if``, ``unless``, ``while``, ``until``: a block only at a statement's start (else a modifier)."""
_RUBY_LOOPS = frozenset((15, 16, 17))
"""``while``, ``until``, ``for``: an optional ``do`` on their line opens nothing more."""
_RUBY_STATEMENT_ENDS = frozenset(b"=(,[{;|&<>+-*~^%")
_RUBY_STATEMENT_WORDS = frozenset((b"then", b"else", b"do", b"begin", b"ensure"))
_PERCENT_CLOSE = {40: 41, 91: 93, 123: 125, 60: 62}


def _ruby_statement_start(data: bytes, i: int) -> bool:
    """The keyword at ``i`` starts a statement: only blanks before it on its line, or an
    operator or opener (``x = if …``, ``(if …``), or one of :data:`_RUBY_STATEMENT_WORDS`
    (``else if …``); anything else before it (``return if x``, ``y += 1 while z``) makes it a
    modifier. A misjudged one shows as unbalanced blocks or a syntax error, which cost the
    holes, not symbols."""
    line = data.rfind(b"\n", 0, i) + 1
    head = data[line:i].rstrip(b" \t")
    if not head or head[-1] in _RUBY_STATEMENT_ENDS:
        return True
    return head.split()[-1] in _RUBY_STATEMENT_WORDS


def _ruby_literal_end(data: bytes, i: int, k: int, n: int) -> int:
    """Index just past the comment or literal that token ``k`` of :data:`_RUBY_TOKENS` starts
    at ``i`` (``i + 1`` when it starts none there: ``%`` as modulo, ``/`` as division, ``<<``
    as a shift); ``n`` when it never ends."""
    find = data.find
    if k == 0:  # a comment
        e = find(b"\n", i)
        return n if e < 0 else e
    if k <= 3:  # "…" '…' `…`: may span lines; a backslash escapes; $' $" $` are variables
        if i and data[i - 1] == 36:
            return i + 1
        q, j = data[i], i + 1
        while True:
            e = find(bytes([q]), j)
            if e < 0:
                return n
            back = e
            while back > j and data[back - 1] == 92:
                back -= 1
            if (e - back) % 2 == 0:
                return e + 1
            j = e + 1
    if k == 4:  # a heredoc: <<ID, <<-ID, <<~ID, quoted or not; its body starts on the next line
        j = i + 2
        if j < n and data[j] in b"~-":
            j += 1
        quote = data[j] if j < n and data[j] in b"'\"`" else 0
        if quote:
            j += 1
        s = j
        while j < n and data[j] in _WORD:
            j += 1
        if j == s or not (65 <= data[s] <= 90 or data[s] == 95 or quote) or (i and data[i - 1] in _WORD):
            return i + 2
        ident = data[s:j]
        line_end = find(b"\n", j)
        if line_end < 0:
            return n
        pos = line_end + 1
        while pos < n:  # the terminator: a line that is the identifier, indented or not
            e = find(b"\n", pos)
            e = n if e < 0 else e
            if data[pos:e].strip() == ident:
                return -e  # the caller resumes at the line after the heredoc, scanning its header line first
            pos = e + 1
        return n
    if k == 5:  # %w[…] %q(…) %r{…} %{…}: a literal when a delimiter follows (at a letter's distance)
        j = i + 1
        if j < n and data[j] in b"qQwWiIrsx":
            j += 1
        if j >= n or data[j] not in b"([{<|!/":
            return i + 1
        if j == i + 1 and i and data[i - 1] not in b" \t(,=[":  # `a %(b)` reads as modulo at a word's end
            return i + 1
        if j == i + 1 and i and data[i - 1] in b" \t" and data[i + 1:i + 2] == b" ":
            return i + 1
        opener = data[j]
        closer = _PERCENT_CLOSE.get(opener, opener)
        depth, m = 1, j + 1
        while m < n:
            c = data[m]
            if c == 92:
                m += 2
                continue
            if c == closer and opener != closer or c == opener and opener == closer:
                depth -= 1
                if depth == 0:
                    return m + 1
            elif c == opener:
                depth += 1
            m += 1
        return n
    if k == 6:  # a regular expression where an operand starts, else a division
        return _ruby_regex_end(data, i, n)
    if k == 7:  # ?x, a character literal (not the ternary's ?)
        if i + 1 < n and data[i + 1] not in b" \t\n" and (i + 2 >= n or data[i + 2] not in _WORD) and \
                (i == 0 or data[i - 1] in b" \t(,[=") and data[i + 1] != 92:
            return i + 2
        return i + 1
    if k == 8:  # =begin … =end, a block comment
        e = find(b"\n=end", i + 1)
        return n if e < 0 else e + 5
    return n  # __END__: nothing after it is code


def _ruby_regex_end(data: bytes, i: int, n: int) -> int:
    """Index just past the regular expression literal at ``i`` (it may span lines: ``/…/x``),
    when the byte before it, blanks and newlines skipped, is an operator or opener; else
    ``i + 1`` (a division)."""
    j = i
    while j > 0 and data[j - 1] in b" \t\r\n":
        j -= 1
    if j and data[j - 1] not in _BEFORE_REGEX:
        return i + 1
    return _skip_regex(data, i, n, multiline=True)


def _ruby_holes(data: bytes) -> list:
    """Ruby's holes: the interior of every ``def`` from just past the newline or ``;`` that ends
    its header to its ``end``, when no ``def``, ``class`` or ``module``
    sits in it. Blocks are matched by keyword (``def class module case begin do for``, and
    ``if unless while until`` at a statement's start, open one; ``end`` closes one); a keyword
    after ``.``, ``:``, ``@`` or ``$``, or followed by ``:``, ``?``, ``!`` or ``=``, is a method,
    symbol, variable or hash key; an endless ``def f(x) = …`` opens nothing. Comments,
    strings, heredocs, ``%`` literals, regular expressions and ``=begin`` blocks are skipped.
    A file whose keywords do not balance has no holes (and a misread that balances shows as a
    syntax error in the skeleton's tree: the whole parse runs)."""
    n = len(data)
    find = data.find
    tokens = _RUBY_TOKENS
    stack, candidates, loop_line_end, pending, floor = [], [], -1, [], 0
    for i, k in _tokens(data, tokens, _RUBY_KEYWORDS):
        if i < floor:
            continue  # inside a comment, literal or heredoc body
        while pending and i >= pending[0][0]:  # a heredoc's body: resume past it
            stop = pending.pop(0)[1]
            if i < stop:
                floor = stop
                break
        if i < floor:
            continue
        token = tokens[k]
        if k < _RUBY_KEYWORDS:
            pos = _ruby_literal_end(data, i, k, n)
            if pos < 0:  # a heredoc: its header line is still code; its body is skipped when reached
                pending.append((find(b"\n", i) + 1, -pos))
                pending.sort()
                pos = i + 2
            floor = pos
            continue
        j = i + len(token)
        if i and (data[i - 1] in _WORD or data[i - 1] in b".:@$"):
            continue
        if j < n and (data[j] in _WORD or data[j] in b"?!" or (data[j] == 58 and data[j + 1:j + 2] != b":")
                      or (data[j] == 61 and data[j + 1:j + 2] not in (b"=", b"~"))):
            continue
        if k == _RUBY_END:
            if not stack:
                return []
            kind, at = stack.pop()
            if kind is not None:  # the header's line end (or `;`) stays: the scanner needs a separator
                candidates.append((kind + 1, i))
            continue
        if k in _RUBY_MODIFIABLE and not _ruby_statement_start(data, i):
            continue
        if k == 20 and i < loop_line_end:  # `while x do`: the loop's own do
            loop_line_end = -1
            continue
        if k in _RUBY_LOOPS:
            e = find(b"\n", j)
            loop_line_end = n if e < 0 else e
        if k == _RUBY_DEF:
            header = _ruby_def_header_end(data, j, n)
            if header < 0:
                continue  # an endless def: no end
            stack.append((header, i))
        else:
            stack.append((None, i))
    if stack:
        return []
    return _outermost(candidates, lambda a, b: _ruby_declares(data, a, b))


def _ruby_def_header_end(data: bytes, j: int, n: int) -> int:
    """Where the header of the ``def`` whose keyword ends at ``j`` ends: past its parameter
    list's ``)``, else at its line's end; -1 for an endless method (``def f(x) = expr``)."""
    while j < n and data[j] in b" \t":
        j += 1
    while j < n and data[j] not in b" \t\r\n(;":  # the name: self.x, x=, ==, [], +@ …
        j += 1
    while j < n and data[j] in b" \t":
        j += 1
    if j < n and data[j] == 40:
        depth, m = 1, j + 1
        while m < n and depth:
            c = data[m]
            depth += (c == 40) - (c == 41)
            m += 1
        j = m
        while j < n and data[j] in b" \t":
            j += 1
    if j < n and data[j] == 61:
        return -1
    if data[j:j + 1] in (b"\n", b"\r", b";"):
        return j
    e = data.find(b"\n", j)  # parameters without parentheses: the line's end
    return n if e < 0 else e


def _ruby_declares(data: bytes, start: int, end: int) -> bool:
    """``data[start:end]`` holds ``def``, ``class`` or ``module`` as a whole word, or a constant
    assignment (``Name = …`` starting a line: Ruby rejects it in a method, tree-sitter lists it)
    (comments and strings included: a false alarm only keeps a body)."""
    if any(_has_word(data, w, start, end) for w in (b"def", b"class", b"module")):
        return True
    i = data.find(b"=", start, end)
    while i >= 0:
        if data[i + 1:i + 2] not in (b"=", b"~", b">") and data[i - 1:i] not in (b"=", b"!", b"<", b">"):
            word, at = _word_before(data, i, start)
            line = data.rfind(b"\n", start, at) + 1 or start
            if word and 65 <= word[0] <= 90 and not data[line:at].strip(b" \t"):
                return True
        i = data.find(b"=", i + 1, end)
    return False
