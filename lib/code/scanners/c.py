"""C's header scanner: the outline of a C file without a tree-sitter parse (issue #24).

C lists nothing inside a function (lib/code/backends.py: ``function_definition`` and
``compound_statement`` stop the walk), so the scan walks the file's top level in order:
:func:`lib.code.scanners.clike.groups` matches its braces (a body is one pair, its inside never
seen by Python) and reports the preprocessor lines outside them; between them it reads

* ``#define`` lines → ``const`` (named by the macro, signed by the first line, the range
  the whole directive with its newline, as tree-sitter's ``preproc_def``);
* a function definition (a declarator with one parameter list, then a body) → ``function``,
  signed by its whole header;
* a declaration ending in ``;`` → a ``var`` per declarator that is not a function's (a
  prototype lists nothing), signed by the first line;
* other directives (``#include``, conditionals) → nothing: the definitions in each branch of
  a conditional are listed, as tree-sitter lists them.

The doc comment is the comments directly above, as the tree path reads siblings: a comment on
an ``#include``/``#define`` line belongs to that directive (it is no sibling), one on a
conditional's line (``#else /* x */``) is the next definition's sibling.

* ``typedef`` → a ``type`` per declarator; a ``struct``/``union``/``enum`` body → the named
  type and a ``var`` per field (a declaration's own declarators first, as the tree's pre-order).

Falls back (``None``) on anything else: a directive inside a definition's header, attributes,
a header whose declarator it does not model (function pointers returned, K&R parameters, a
macro call standing for a definition), a brace or literal :mod:`clike` cannot vouch for.
"""
from __future__ import annotations


from lib.code import symbols
from lib.code.scanners import clike

DIALECT = clike.Dialect("c", preprocessor=True)

_SPACE = clike.lazy(rb"(?:[ \t\r\n\f\v]++|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/)*+")
_IDENT = rb"[A-Za-z_][A-Za-z0-9_]*+"
_PARAMS = rb"\((?P<params>(?:[^;{}\"'#()/]++|/(?![/*])|\((?:[^;{}\"'#()/]++|\([^;{}\"'#()/]*+\))*+\))*+)\)"
_FUNCTION = clike.lazy(rb"(?P<head>[^;{}\"'#()/=\[\]]*)(?<![A-Za-z0-9_])(?P<name>" + _IDENT + rb")[ \t\r\n]*+"
                       + _PARAMS + rb"[ \t\r\n]*+(?=\{)")
"""A function definition's header up to its body: specifiers and a declarator with one
parameter list (parameters may hold one level of parentheses: function pointers)."""
_NEXT = clike.lazy(_SPACE.pattern + rb"(?P<at>)(?:(?P<fast>" + _FUNCTION.pattern + rb"))?")
_DEFINE = clike.lazy(rb"#[ \t]*+define[ \t]++(" + _IDENT + rb")")
_DIRECTIVE = clike.lazy(rb"#[ \t]*+([a-z]*+)")
_CONDITIONAL = frozenset((b"if", b"ifdef", b"ifndef", b"elif", b"elifdef", b"elifndef", b"else", b"endif"))
_STATEMENT = clike.lazy(rb"(?:[^;{}\"'/#]++|/(?![/*])|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/"
                        rb"|\"(?:[^\"\\\n]++|\\.)*+\"|'(?:[^'\\\n]++|\\.)*+')*+")
"""A statement's bytes up to its ``;``, ``{`` or a directive (literals and comments skipped)."""
_TYPE_WORDS = clike.lazy(rb"(?<![A-Za-z0-9_])(?:typedef|struct|union|enum|__attribute__|__declspec|asm|__asm__"
                         rb"|_Static_assert|static_assert|__extension__)(?![A-Za-z0-9_])")
_WORD = clike.lazy(_IDENT)
_SIMPLE_DECLARATOR = clike.lazy(rb"[ \t\r\n*]*+(?:const[ \t\r\n*]++|volatile[ \t\r\n*]++|restrict[ \t\r\n*]++)*+"
                                rb"(" + _IDENT + rb")[ \t\r\n]*+(?:\[[^\[\]]*+\][ \t\r\n]*+)*+")
_POINTER_DECLARATOR = clike.lazy(rb"[ \t\r\n]*+\([ \t\r\n]*+\*[ \t\r\n*]*+(" + _IDENT + rb")[ \t\r\n]*+\)"
                                 rb"[ \t\r\n]*+\([^()]*+\)[ \t\r\n]*+")
_WORDS = clike.lazy(rb"[ \t\r\n]*+(?:" + _IDENT + rb"[ \t\r\n]*+)*+")
"""The words a declaration starts with: its specifiers, and its first declarator's name
unless a ``*`` or ``(*`` starts the declarator."""
_PROTOTYPE = clike.lazy(rb"[ \t\r\n*]*+" + _IDENT + rb"[ \t\r\n]*+\([^()]*+(?:\([^()]*+\)[^()]*+)*+\)[ \t\r\n]*+")
_ELABORATED = clike.lazy(rb"(?<![A-Za-z0-9_])(?:struct|union|enum)[ \t\r\n]++[A-Za-z_][A-Za-z0-9_]*+(?![ \t\r\n]*+\{)")
"""``struct name`` used as a type (no body): one type name to the specifier rules."""
_TYPEDEF = clike.lazy(rb"[ \t\r\n]*+typedef(?![A-Za-z0-9_])")
_TAGGED = clike.lazy(rb"[ \t\r\n]*+(typedef[ \t\r\n]++)?((?:(?:static|extern|const|volatile)[ \t\r\n]++)*+)"
                     rb"(struct|union|enum)(?:[ \t\r\n]++(" + _IDENT + rb"))?[ \t\r\n]*+")
"""The header of a struct, union or enum with a body (before its ``{``), maybe a typedef's."""
_BITFIELD = clike.lazy(rb":[^,]*+")
_CALL = clike.lazy(rb"[A-Za-z_][A-Za-z0-9_]*+[ \t]*+\((?=[^;]*?(?:[=<>!+\-%&|^?:,\"']|\bsizeof\b|\(\s*[0-9]))[^;{}]*\)[ \t\r\n]*+")
"""A top-level statement that is a macro call whose arguments hold an operator, a comma, a
literal or ``sizeof`` (none of which a declarator can): an expression, no definition."""
_QUALIFIERS = frozenset((b"static", b"extern", b"const", b"volatile", b"inline", b"register", b"auto", b"restrict",
                         b"_Thread_local", b"__thread", b"__inline", b"__inline__", b"_Noreturn", b"__restrict"))
_PRIMITIVES = frozenset((b"unsigned", b"signed", b"int", b"char", b"short", b"long", b"float", b"double", b"void",
                         b"_Bool", b"bool", b"size_t", b"ssize_t", b"int8_t", b"int16_t", b"int32_t", b"int64_t",
                         b"uint8_t", b"uint16_t", b"uint32_t", b"uint64_t", b"intptr_t", b"uintptr_t", b"ptrdiff_t",
                         b"char16_t", b"char32_t", b"_Complex"))
_KEYWORDS = frozenset((b"static", b"extern", b"const", b"volatile", b"inline", b"register", b"auto", b"unsigned",
                       b"signed", b"int", b"char", b"short", b"long", b"float", b"double", b"void", b"_Bool",
                       b"restrict", b"_Thread_local", b"__thread", b"if", b"else", b"for", b"while", b"do",
                       b"return", b"switch", b"case", b"default", b"goto", b"sizeof", b"break", b"continue"))


class _Fallback(Exception):
    """The scan cannot vouch for the file."""


def outline(data: bytes) -> list | None:
    """The symbols of the C source ``data`` (module docstring), or ``None`` to fall back."""
    if not _continuations_in_directives(data):
        return None
    found = clike.groups(data, DIALECT)
    if found is None:
        return None
    try:
        return _walk(data, *found)
    except _Fallback:
        return None


def _continuations_in_directives(data: bytes) -> bool:
    """True when every backslash-newline of ``data`` continues a preprocessor directive. One
    elsewhere splices lines (C11 §5.1.1.2 phase 2): a ``//`` comment then runs on, and a token
    may be split, which the lexer does not model."""
    i, chain_end = data.find(b"\\\n"), -1
    while i >= 0:
        start = data.rfind(b"\n", 0, i) + 1
        if start != chain_end and not data[start:i].lstrip(b" \t").startswith(b"#"):
            return False
        chain_end = i + 2  # the next line continues this directive
        i = data.find(b"\\\n", i + 2)
    return True


def _walk(data: bytes, pairs: list, directives: list) -> list:
    close_of = dict(pairs)
    starts = [a for a, _ in directives]
    out, pending = [], []
    size = len(data)
    pos = anchor = 0
    di = 0
    step = _NEXT.match

    def add(name, kind, sig, start, end, anchor):
        out.append(symbols.Symbol(name, kind, sig, start, end, 0, 0,
                                  source=None if anchor is None else (clike.doc_above, data, anchor, start, DIALECT)))

    while True:
        m = step(data, pos)
        pos = m.start("at")
        next_directive = starts[di] if di < len(starts) else size
        if m.lastgroup == "fast" and m.end() < next_directive and m.end() in close_of:
            brace = m.end()
            name = m.group("name")
            head = m.group("head")
            end = close_of[brace] + 1
            if not head.strip():
                # `TEST_IMPL(x) { … }`: the grammar reads a type `TEST_IMPL` and a parenthesised
                # declarator `x`, a function named x
                inner = _WORD.fullmatch(m.group("params").strip())
                if inner is None or inner.group() in _KEYWORDS:
                    raise _Fallback
                name = inner.group()
            elif not _is_function_head(head, name):
                raise _Fallback
            pending.append((len(out), data[pos:brace]))
            add(name.decode(), "function", None, pos, end, anchor)
            pos = anchor = end
            continue
        if pos >= size:
            break
        if pos == next_directive:
            start, end = directives[di]
            di += 1
            word = _DIRECTIVE.match(data, start).group(1)
            stop = end + 1 if end < size else end
            if word == b"define":
                d = _DEFINE.match(data, start)
                if d is None:
                    raise _Fallback
                if data.find(b"\\\n", start, end) >= 0 and (data.find(b"/*", start, end) >= 0
                                                           or data.find(b"//", start, end) >= 0):
                    raise _Fallback  # a comment in a continued macro ends tree-sitter's preproc_arg
                add(d.group(1).decode(), "const", symbols.signature_at(data, start, stop, "//"), start, stop, anchor)
            if word not in _CONDITIONAL:
                anchor = stop  # a comment on this line is the directive's, no sibling of what follows
            pos = stop
            continue
        if pos > next_directive:
            raise _Fallback
        pos = anchor = _statement(data, pos, anchor, close_of, next_directive, add)
    for (i, _), sig in zip(pending, symbols.collapse_headers([raw for _, raw in pending])):
        sym = out[i]
        sym.signature = sig or symbols.signature_at(data, sym.start, sym.end, "//")
    return clike.number_lines(out, data)


def _is_function_head(head: bytes, name: bytes) -> bool:
    """``head`` (the specifiers before a function's name) is a type the tree path reads as
    one: some word that is not a storage keyword alone, no type-defining keyword or attribute."""
    head = _ELABORATED.sub(b" T ", head)
    if _TYPE_WORDS.search(head):
        return False
    return _one_type(_WORD.findall(head))


def _one_type(words: list) -> bool:
    """``words`` (the specifiers of a declaration) name one type as the grammar reads it:
    qualifiers and storage classes, then primitive type words or a single type name. Two type
    names (``UV_EXTERN int``, ``WINBASEAPI BOOL``: a macro the grammar cannot expand) make it
    recover with an error, which the scan does not model."""
    names = primitive = 0
    for w in words:
        if w in _QUALIFIERS:
            continue
        if w in _PRIMITIVES:
            primitive += 1
        else:
            names += 1
    return (names == 1 and not primitive) or (names == 0 and primitive > 0)


def _statement(data: bytes, pos: int, anchor: int, close_of: dict, next_directive: int, add) -> int:
    """Read one top-level statement that is not a one-expression function definition: a
    declaration up to its ``;`` (vars listed through ``add``), or a function definition whose
    header holds comments. Returns the byte after it."""
    m = _STATEMENT.match(data, pos)
    end = m.end()
    if end >= next_directive:
        raise _Fallback  # a directive inside a statement
    stop = data[end:end + 1]
    if stop == b";" and _CALL.fullmatch(data, pos, end):
        return end + 1  # `STATIC_ASSERT(a == b);`: a call, which declares nothing
    if stop == b";":
        bare = _ELABORATED.sub(b" T ", _strip(data, pos, end))
        typedef = _TYPEDEF.match(bare)
        if typedef is not None:  # `typedef int (*cb)(void);`: a type per declarator
            rest = bare[typedef.end():]
            if _TYPE_WORDS.search(rest):
                raise _Fallback
            sig = symbols.signature_at(data, pos, end + 1, "//")
            for name in _declarator_names(rest, functions=True):
                add(name.decode(), "type", sig, pos, end + 1, anchor)
            return end + 1
        if _TYPE_WORDS.search(bare):
            raise _Fallback
        _declaration(data, pos, end + 1, bare, anchor, add)
        return end + 1
    if stop == b"{" and end in close_of:
        tagged = _TAGGED.fullmatch(_strip(data, pos, end))
        if tagged is not None:
            return _tagged(data, pos, end, tagged, anchor, close_of, next_directive, add)
    if _TYPE_WORDS.search(_strip(data, pos, end)):
        raise _Fallback
    if stop == b"{":
        close = close_of.get(end)
        if close is None:
            raise _Fallback
        bare = _strip(data, pos, end)
        f = _FUNCTION.fullmatch(bare + b"{", 0, len(bare)) if bare.rstrip().endswith(b")") else None
        if f is not None and _is_function_head(f.group("head"), f.group("name")):
            sig = clike.header(data, pos, end, DIALECT) or symbols.signature_at(data, pos, close + 1, "//")
            add(f.group("name").decode(), "function", sig, pos, close + 1, anchor)
            return close + 1
        # `int x[] = { … };`: an initialiser list, then the declaration's end
        if not bare.rstrip().endswith(b"="):
            raise _Fallback
        after = _SPACE.match(data, close + 1).end()
        if data[after:after + 1] != b";":
            raise _Fallback
        _declaration(data, pos, after + 1, bare, anchor, add)
        return after + 1
    raise _Fallback


def _strip(data: bytes, start: int, end: int) -> bytes:
    """``data[start:end]`` with comments replaced by a space and literals kept."""
    return clike.uncommented(data, start, end, DIALECT)


def _declaration(data: bytes, start: int, end: int, text: bytes, anchor, add, kind: str = "var") -> None:
    """The vars of the declaration ``text`` (``data[start:end]``, its ``;`` excluded from
    ``text``): every declarator that is not a function's."""
    names = _declarator_names(text)
    if names:
        sig = symbols.signature_at(data, start, end, "//")
        for name in names:
            add(name.decode(), kind, sig, start, end, anchor)


def _declarator_names(text: bytes, functions: bool = False, specifiers: bool = True) -> list:
    """The names ``text`` (specifiers, then declarators; only declarators without
    ``specifiers``) declares: a pointer's, an array's, a function pointer's; a prototype's
    only with ``functions`` (a typedef of a function type names a type)."""
    parts = _split_declarators(text)
    cut = 0
    if specifiers:
        first = parts[0]
        m = _WORDS.match(first)
        words = _WORD.findall(m.group())
        rest = first[m.end():]
        if rest.startswith(b"*") or rest.startswith(b"(") and rest[1:].lstrip().startswith(b"*"):
            cut = m.end()  # every word is a specifier: the declarator is `*x` or `(*x)(…)`
        elif len(words) >= 2:
            words.pop()  # the last word is the declarator's name
            cut = len(m.group()) - len(m.group().lstrip()) + _last_word_start(m.group().strip())
        else:
            raise _Fallback
        if not _one_type(words):
            raise _Fallback
    names = []
    for i, part in enumerate(parts):
        decl = part[cut:] if i == 0 else part
        decl = decl.split(b"=", 1)[0]
        if b"(" in decl:
            p = _POINTER_DECLARATOR.fullmatch(decl)
            if p is not None:
                names.append(p.group(1))
                continue
            f = _PROTOTYPE.fullmatch(decl)
            if f is not None:
                if functions:
                    names.append(_WORD.search(decl).group())
                continue  # a prototype
            raise _Fallback
        d = _SIMPLE_DECLARATOR.fullmatch(decl)
        if d is None or d.group(1) in _KEYWORDS:
            raise _Fallback
        names.append(d.group(1))
    return names


def _tagged(data: bytes, pos: int, brace: int, tagged, anchor, close_of: dict, next_directive: int, add,
            field: bool = False) -> int:
    """``[typedef] struct|union|enum [name] { … } [declarators];`` from ``pos`` (its body at
    ``brace``), as the tree path lists it: a typedef's types (signed up to the body), else the
    declarators' vars then the named type; then the fields of a struct or union. Returns the
    byte after its ``;``."""
    close = close_of[brace]
    m = _STATEMENT.match(data, close + 1)
    semi = m.end()
    if semi >= next_directive or data[semi:semi + 1] != b";":
        raise _Fallback
    rest = _ELABORATED.sub(b" T ", _strip(data, close + 1, semi))
    if _TYPE_WORDS.search(rest):
        raise _Fallback
    names = _declarator_names(rest, specifiers=False) if rest.strip() else []
    word, name = tagged.group(3), tagged.group(4)
    kind = "enum" if word == b"enum" else "struct"
    start = pos + tagged.start(3)  # the specifier's node starts at its keyword
    if tagged.group(1) is not None:
        if not names or field:
            raise _Fallback
        sig = clike.header(data, pos, brace, DIALECT) or symbols.signature_at(data, pos, semi + 1, "//")
        for n in names:
            add(n.decode(), "type", sig, pos, semi + 1, anchor)
    else:
        if names:
            sig = symbols.signature_at(data, pos, semi + 1, "//")
            for n in names:
                add(n.decode(), "var", sig, pos, semi + 1, anchor)
        if name is not None:
            sig = clike.header(data, start, brace, DIALECT) or symbols.signature_at(data, start, close + 1, "//")
            # inside a declaration the specifier has no comment sibling before it
            add(name.decode(), kind, sig, start, close + 1, None if names or start != pos or field else anchor)
    if kind == "struct":
        _fields(data, brace + 1, close, close_of, add)
    return semi + 1


def _fields(data: bytes, pos: int, stop: int, close_of: dict, add) -> None:
    """The fields of a struct or union body ``data[pos:stop]``: a var per declarator (a
    bit-field's width dropped), nested bodies as :func:`_tagged` reads them."""
    anchor = pos
    while True:
        pos = _SPACE.match(data, pos, stop).end()
        if pos >= stop:
            return
        m = _STATEMENT.match(data, pos, stop)
        end = m.end()
        c = data[end:end + 1]
        if end >= stop:
            raise _Fallback
        if c == b"{" and end in close_of:
            tagged = _TAGGED.fullmatch(_strip(data, pos, end))
            if tagged is None or tagged.group(1) is not None:
                raise _Fallback
            pos = anchor = _tagged(data, pos, end, tagged, anchor, close_of, stop, add, field=True)
            continue
        if c != b";":
            raise _Fallback
        text = _BITFIELD.sub(b"", _ELABORATED.sub(b" T ", _strip(data, pos, end)))
        if _TYPE_WORDS.search(text):
            raise _Fallback
        _declaration(data, pos, end + 1, text, anchor, add)
        pos = anchor = end + 1


def _last_word_start(words: bytes) -> int:
    """Offset of the last word in ``words`` (stripped words separated by blanks)."""
    i = len(words)
    while i and (words[i - 1:i].isalnum() or words[i - 1:i] == b"_"):
        i -= 1
    return i


def _split_declarators(text: bytes) -> list:
    """``text`` cut at its commas outside brackets and braces (initialisers' own commas kept)."""
    if text.find(b",") < 0:
        return [text]
    parts, depth, last = [], 0, 0
    for i, c in enumerate(text):
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
        elif c == 0x2C and depth == 0:
            parts.append(text[last:i])
            last = i + 1
        elif c in b"\"'":
            raise _Fallback  # a literal in a declaration list: not modelled
    parts.append(text[last:])
    return parts
