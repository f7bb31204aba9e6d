"""Symbol extraction: the iterative pre-order walk, signatures and doc comments.

The walk uses an explicit stack (source with 120,000 nested parentheses must not overflow
anything) and asks the file's backend (:mod:`lib.code.backends`) what each node defines.
Symbols come out in source pre-order, flat: nested definitions follow their parents.

Signature (beyond upstream ctxctl's first line, which loses every multi-line parameter list):
a definition with a header — function, method, class, struct, enum, interface, trait, module,
type — is signed by its *whole header*, from its first decorator, attribute or annotation
(Python ``@x``, TypeScript decorators, Rust ``#[…]``, Java/C# annotations and attribute
lists, C++ ``template <…>``) to the start of its body (or the end of a bodiless function
such as a Rust trait item or a Java interface method): modifiers, parameters with defaults
and types, return type. Comments inside it are removed, whitespace is collapsed (none after an
opening or before a closing bracket, no trailing comma before it), trailing
``=> -> ( { , ; : =`` stripped; each decorator is capped at 120 characters and the whole
signature at 2,000. Everything else (variables, constants, headings, CSS rules, elements)
keeps upstream's rule: the first source line with attribute-only (``#[…]``) and
decorator/annotation-only (``@x``, ``@x(…)``) lines skipped, a trailing ``//`` or ``/*``
comment (and ``#``/``--`` in languages that use them) dropped when preceded by whitespace,
whitespace collapsed, trailing ``=> -> ( { , ; : =`` stripped repeatedly, capped at 120
characters with ``…``; ``…`` when nothing is left.

Doc comment: the comment sibling(s) *immediately* above the symbol's range, with no blank line
in between, markers stripped and non-empty lines joined with one space. Python reads the
real docstring (first statement of the body, first paragraph) and falls back to ``#`` lines
directly above — see docs/ctxctl.md for why this differs from upstream ctxctl.
"""
from __future__ import annotations

from lib.code import backends as _backends
from lib.code.languages import Parsed

KINDS = ("class", "struct", "enum", "interface", "function", "method", "module", "const", "var", "trait",
         "type", "heading", "rule", "element")
"""Canonical kind names, in the CLI's ``--kind`` order."""
ALIASES = {"function": "fn", "module": "mod", "heading": "head", "element": "elem"}
"""Text-mode aliases; kinds not listed print as themselves."""
DEBUG_NAMES = {"class": "Class", "struct": "Struct", "enum": "Enum", "interface": "Interface",
               "function": "Function", "method": "Method", "module": "Module", "const": "Const",
               "var": "Variable", "trait": "Trait", "type": "Type", "heading": "Heading", "rule": "Rule",
               "element": "Element"}
"""Names used in ``symbol not found: x (kind Variable)``."""
SIGNATURE_CAP = 120


_UNREAD = object()


class Symbol:
    """One extracted definition. ``start``/``end`` are the byte range of its slice,
    ``start_line``/``end_line`` 1-based and inclusive; ``spec`` keeps the tree nodes for the
    compact view and is never serialised.

    ``doc`` is read on first access (:func:`doc_of`), not at extraction: only JSON output
    shows doc comments, and stripping every Javadoc or XML doc block of a file cost more
    than its parse. ``doc`` given to the constructor is taken as already read. A symbol from a
    header scanner (:mod:`lib.code.scanners`) has no ``spec``; its ``source`` is then
    ``(reader, *args)`` and the doc is ``reader(*args)``."""

    __slots__ = ("name", "kind", "signature", "start", "end", "start_line", "end_line", "_doc", "spec", "_source")

    def __init__(self, name, kind, signature, start, end, start_line, end_line, doc=_UNREAD, spec=None, source=None):
        self.name, self.kind, self.signature, self.start, self.end = name, kind, signature, start, end
        self.start_line, self.end_line, self._doc, self.spec, self._source = start_line, end_line, doc, spec, source

    @property
    def doc(self) -> str | None:
        """The doc comment (one line, markers stripped) or ``None``."""
        if self._doc is _UNREAD:
            src = self._source
            if src is None:
                self._doc = None
            elif self.spec is None:
                self._doc = src[0](*src[1:])
            else:
                self._doc = doc_of(self.spec, *src)
            self._source = None
        return self._doc

    def __repr__(self):
        return f"Symbol({self.name!r}, {self.kind!r}, L{self.start_line}-{self.end_line}, {self.signature!r})"

    def as_json(self, lines: bool = True, doc: bool = True) -> dict:
        """The JSON entry: name, kind, signature, start_line/end_line unless ``lines`` is off,
        doc_comment when present unless ``doc`` is off. Never a byte range."""
        out = {"name": self.name, "kind": self.kind, "signature": self.signature}
        if lines:
            out["start_line"], out["end_line"] = self.start_line, self.end_line
        if doc and self.doc:
            out["doc_comment"] = self.doc
        return out




def attribute_only(line: str) -> bool:
    """``line`` is nothing but an attribute (``#[…]``, ``#![…]``) or a decorator/annotation
    (``@x``, ``@x.y(…)``). (String methods, not ``re``: this module is on every call's path.)"""
    s = line.strip()
    if s.startswith(("#[", "#![")):
        return s.endswith("]")
    if s.startswith("@") and len(s) > 1:
        head, paren, _ = s[1:].partition("(")
        if not head or not all(c.isalnum() or c in "_." for c in head):
            return False
        return not paren or s.endswith(")")
    return False


def _comment_cut(line: str, marker: str, need_space_after: bool = False) -> int:
    """Index of the whitespace before the first ``marker`` preceded by whitespace (and, with
    ``need_space_after``, followed by whitespace or the end), or -1."""
    i = line.find(marker, 1)
    while i > 0:
        after = line[i + len(marker):i + len(marker) + 1]
        if line[i - 1].isspace() and (not need_space_after or after == "" or after.isspace()):
            return i - 1
        i = line.find(marker, i + 1)
    return -1
_TRAILING = ("=>", "->", "(", "{", ",", ";", ":", "=")
FIRST_LINE_CAP = 120
"""Cap, in characters, of a first-line signature (variables, constants, headings, rules)."""
SIGNATURE_CAP = 2000
"""Cap, in characters, of a whole header signature: far above any real one, it only bounds a
pathological (generated or minified) header."""
DECORATOR_CAP = 120
"""Cap, in characters, of each decorator, attribute or annotation in a header signature (a
``@pytest.mark.parametrize`` table would otherwise swamp the outline)."""
HEADER_KINDS = frozenset({"function", "method", "class", "struct", "enum", "interface", "trait", "module", "type"})
"""Kinds whose signature is the whole header (definition start to body start), not one line."""
_STOP_CHILDREN = frozenset({"arrow_expression_clause", "field_initializer_list"})
"""Children that end a header although they are not the body (C# ``=> expr``, C++ ``: a_(a)``)."""
_PREFIX_SIBLINGS = frozenset({"decorator", "attribute_item"})
"""Siblings just before a definition that belong to its signature (TypeScript method
decorators, Rust ``#[…]`` attributes)."""
_DECORATOR_CHILDREN = frozenset({"decorator", "attribute_item", "attribute_list", "annotation", "marker_annotation"})
_ALL_HEADER_TYPES = _STOP_CHILDREN | _PREFIX_SIBLINGS | _DECORATOR_CHILDREN
_header_types = {}


def header_types(lang) -> frozenset:
    """The node types of :data:`_STOP_CHILDREN`, :data:`_PREFIX_SIBLINGS` and
    :data:`_DECORATOR_CHILDREN` that the tree-sitter ``Language`` ``lang`` has (a ``Language``
    hashes and compares by its grammar):
    :func:`header_signature` does not look for a group its grammar cannot produce (C and Go
    have none of them)."""
    got = _header_types.get(lang)
    if got is None:
        got = _header_types[lang] = frozenset(k for k in _ALL_HEADER_TYPES if lang.id_for_node_kind(k, True))
    return got


def _strip_trailing(sig: str) -> str:
    """``sig`` without its trailing :data:`_TRAILING`, repeatedly (at most one of them ends a
    string at a time: only ``=>`` and ``->`` share a last character)."""
    while sig.endswith(_TRAILING):
        for suffix in _TRAILING:
            if sig.endswith(suffix):
                sig = sig[: -len(suffix)].rstrip()
                break
    return sig


def _cap(sig: str, cap: int) -> str:
    return sig[: cap - 1] + "…" if len(sig) > cap else sig


def clean_signature(line: str, comment_prefix: str = "//") -> str:
    """Normalise one source line into a first-line signature (rules in the module docstring)."""
    if "//" in line or "/*" in line:  # no opener, no cut (header scanners sign hundreds of lines a call)
        cuts = [c for c in (_comment_cut(line, "//"), _comment_cut(line, "/*")) if c >= 0]
        if cuts:
            line = line[:min(cuts)]
    if comment_prefix in ("#", "--"):
        cut = _comment_cut(line, comment_prefix, need_space_after=True)
        if cut >= 0:
            line = line[:cut]
    sig = " ".join(line.split())
    if sig.endswith(_TRAILING):
        sig = _strip_trailing(sig)
    return (sig if len(sig) <= FIRST_LINE_CAP else sig[:FIRST_LINE_CAP - 1] + "…") or "…"


def clean_signatures(lines: list, comment_prefix: str = "//") -> list:
    """``[clean_signature(line, comment_prefix) for line in lines]`` with the whitespace of all of
    them collapsed in one pass over them joined: the markup header scanners sign every rule or
    element of a file with it. ``tests/ctxctl/test_scanners_markup.py`` holds it to the
    one-by-one result."""
    text = "\0".join(lines)
    if comment_prefix in ("#", "--") or text.count("\0") != len(lines) - 1 or not lines:
        return [clean_signature(line, comment_prefix) for line in lines]
    if "//" in text or "/*" in text:
        cut = []
        for line in lines:
            if "//" in line or "/*" in line:
                cuts = [c for c in (_comment_cut(line, "//"), _comment_cut(line, "/*")) if c >= 0]
                if cuts:
                    line = line[:min(cuts)]
            cut.append(line)
        text = "\0".join(cut)
    # NUL is no whitespace: the runs collapse within each line, and the spaces left beside a NUL go
    text = " ".join(text.split()).replace("\0 ", "\0").replace(" \0", "\0")
    out = text.split("\0")
    for i, sig in enumerate(out):
        if sig.endswith(_TRAILING):
            sig = _strip_trailing(sig)
        out[i] = (sig if len(sig) <= FIRST_LINE_CAP else sig[:FIRST_LINE_CAP - 1] + "…") or "…"
    return out


def signature_at(data: bytes, start: int, end: int, comment_prefix: str) -> str:
    """First-line signature from the source lines starting at byte ``start`` (not past ``end``).
    Reads line by line: an element or section spanning the whole file costs one line, not a
    decode of the file."""
    first, pos = None, start
    while pos < end:
        nl = data.find(b"\n", pos, end)
        stop = end if nl < 0 else nl
        line = data[pos:stop].decode("utf-8", "replace")
        if first is None:
            first = line
        if line.strip() and not attribute_only(line):
            return clean_signature(line.rstrip("\r"), comment_prefix)
        pos = stop + 1
    return clean_signature(first or "", comment_prefix)




def tidy_header(text: str) -> str:
    """Whitespace of a multi-line header collapsed to one line: runs of whitespace become one
    space, none after an opening or before a closing bracket, no trailing comma before a
    closing bracket; trailing ``=> -> ( { , ; : =`` stripped."""
    return _tidy_collapsed(" ".join(text.split()))


def _tidy_collapsed(sig: str) -> str:
    """:func:`tidy_header` of a header whose whitespace runs are already single spaces."""
    for old, new in (("( ", "("), ("[ ", "["), (", )", ")"), (", ]", "]"), (" )", ")"), (" ]", "]")):
        if old in sig:
            sig = sig.replace(old, new)
    return _strip_trailing(sig)


def _header_end(spec, start: int, types: frozenset = _ALL_HEADER_TYPES) -> int | None:
    """End byte of the header of ``spec``'s node, or ``None`` when it has none (no body);
    ``types``: the grammar's :func:`header_types`."""
    node, body = spec.node, spec.body
    end = None
    if body is not None and body.start_byte > start and data_starts_block(body):
        end = body.start_byte
    if types.isdisjoint(_STOP_CHILDREN):
        return end
    for child in node.children:
        if child.type in _STOP_CHILDREN and child.start_byte > start:
            end = child.start_byte if end is None else min(end, child.start_byte)
            break
    return end


def data_starts_block(body) -> bool:
    """A body node that opens a block (not a tuple struct's ``(…)`` field list)."""
    return body.type != "ordered_field_declaration_list"


def _comment_ranges(top, start: int, end: int, comment_types) -> list:
    """``(start, end)`` byte ranges of comment nodes inside ``[start, end)`` under ``top``."""
    out = []
    stack = [top]
    while stack:
        n = stack.pop()
        if n.end_byte <= start or n.start_byte >= end:
            continue
        if n.type in comment_types:
            out.append((n.start_byte, n.end_byte))
        elif n.child_count:
            stack.extend(n.children)
    out.sort()
    return out


def header_signature(spec, data: bytes, backend, types: frozenset = _ALL_HEADER_TYPES) -> str | None:
    """The whole header of a definition as one line: decorators/attributes/annotations (each
    capped at :data:`DECORATOR_CAP` characters), modifiers, name, parameters with defaults and
    types, return type — everything from the definition's start to its body, comments removed,
    whitespace tidied (:func:`tidy_header`), capped at :data:`SIGNATURE_CAP`. ``None`` when
    the definition has no header of that shape (a variable, a bodiless non-function).
    ``types``: the node types the grammar has (:func:`header_types`), every one by default."""
    top = spec.sig_node if spec.sig_node is not None else spec.node
    start = top.start_byte
    if spec.sig_end is not None:
        end = spec.sig_end.start_byte
    elif spec.kind in HEADER_KINDS:
        end = _header_end(spec, start, types)
    else:
        return None
    if end is None:
        if spec.kind not in ("function", "method"):  # a bodiless type or class: first line
            return None
        end = spec.node.end_byte
    prefix = []
    prev = None if types.isdisjoint(_PREFIX_SIBLINGS) else top.prev_named_sibling
    while prev is not None and prev.type in _PREFIX_SIBLINGS:
        prefix.append(prev)
        prev = prev.prev_named_sibling
    pieces = [tidy_header_piece(data, p.start_byte, p.end_byte, p, backend) for p in reversed(prefix)]
    pos = start
    # decorators inside the definition (Python's decorated_definition, annotations in Java/C#
    # modifiers) are capped one by one; the rest of the header is kept whole
    for child in () if types.isdisjoint(_DECORATOR_CHILDREN) else _decorator_children(top, spec.node):
        if child.start_byte < pos or child.end_byte > end:
            continue
        if child.start_byte > pos:
            pieces.append(tidy_header_piece(data, pos, child.start_byte, top, backend, strip=False))
        pieces.append(tidy_header_piece(data, child.start_byte, child.end_byte, child, backend))
        pos = child.end_byte
    pieces.append(tidy_header_piece(data, pos, end, top, backend, strip=False))
    return join_header(pieces)


def join_header(pieces: list) -> str | None:
    """The last step of a whole-header signature: ``pieces`` (str, each already collapsed by
    :func:`tidy_header_piece` or :func:`collapse_header`) joined and tidied
    (:func:`tidy_header`), capped at :data:`SIGNATURE_CAP`; ``None`` when nothing is left."""
    # one piece is already collapsed: only the brackets and the tail are left
    sig = _tidy_collapsed(pieces[0]) if len(pieces) == 1 else tidy_header(" ".join(p for p in pieces if p))
    return _cap(sig, SIGNATURE_CAP) or None


def collapse_header(pieces) -> str | None:
    """:func:`header_signature` for a header already cut into ``pieces``: a list of ``(raw
    bytes with comments removed, is_decorator)`` in source order, each collapsed as
    :func:`tidy_header_piece` does (a decorator capped at :data:`DECORATOR_CAP`), then
    :func:`join_header`. The header scanners (lib/code/scanners) sign with it, so both paths
    make the same string."""
    return join_header([collapse_piece(raw, is_decorator) for raw, is_decorator in pieces])


def collapse_headers(raws: list) -> list:
    """``[join_header([collapse_piece(raw)]) for raw in raws]`` (each a one-piece header's
    bytes, comments already cut out) in a few passes over all of them joined, not a dozen
    string operations per header: the header scanners sign a file's definitions with it.
    ``tests/ctxctl/test_scanners_brace.py`` holds it to the one-by-one result."""
    if not raws:
        return []
    text = "\0".join(" ".join(t.split()) for t in b"\0".join(raws).decode("utf-8", "replace").split("\0"))
    if text.count("\0") != len(raws) - 1:  # a header held a NUL byte: one by one
        return [join_header([collapse_piece(raw)]) for raw in raws]
    for old, new in (("( ", "("), ("[ ", "["), (", )", ")"), (", ]", "]"), (" )", ")"), (" ]", "]")):
        if old in text:
            text = text.replace(old, new)
    out = text.split("\0")
    for i, sig in enumerate(out):
        if sig.endswith(_TRAILING):
            sig = _strip_trailing(sig)
        out[i] = (_cap(sig, SIGNATURE_CAP) if len(sig) > SIGNATURE_CAP else sig) or None
    return out


def _decorator_children(top, node):
    out = [c for c in top.children if c.type in _DECORATOR_CHILDREN]
    if node is not top:
        out += [c for c in node.children if c.type in _DECORATOR_CHILDREN]
    for holder in (c for c in node.children if c.type == "modifiers"):
        out += [c for c in holder.children if c.type in _DECORATOR_CHILDREN]
    out.sort(key=lambda c: c.start_byte)
    return out


_ANY_COMMENT_OPENER = (b"//", b"/*", b"#", b"--")
_COMMENT_OPENERS = {"//": (b"//", b"/*")}
"""What every comment starts with, by ``Backend.comment_prefix``: a header piece without one has
no comment node to cut (a Rust ``#[…]`` attribute is none); other languages look for any."""


def tidy_header_piece(data: bytes, start: int, end: int, top, backend, strip: bool = True) -> str:
    """Source ``[start, end)`` with comment nodes under ``top`` removed and whitespace collapsed;
    a decorator piece (``strip``) is capped at :data:`DECORATOR_CAP`."""
    raw = data[start:end]
    # bytes.find, not `in`: `bytes in bytes` first tries the needle as an int and raises inside
    find = raw.find
    for opener in _COMMENT_OPENERS.get(backend.comment_prefix, _ANY_COMMENT_OPENER):
        if find(opener) < 0:
            continue
        cuts = _comment_ranges(top, start, end, backend.comments)
        if cuts:
            parts, pos = [], start
            for a, b in cuts:
                if a >= pos:
                    parts.append(data[pos:a])
                    pos = b
            parts.append(data[pos:end])
            raw = b" ".join(parts)
        break
    return collapse_piece(raw, strip)


def collapse_piece(raw: bytes, decorator: bool = False) -> str:
    """One header piece (comments already cut out) with its whitespace collapsed; a decorator
    piece capped at :data:`DECORATOR_CAP`."""
    piece = " ".join(raw.decode("utf-8", "replace").split())
    return _cap(piece, DECORATOR_CAP) if decorator else piece


def _strip_marker(line: str) -> str:
    """``line`` (stripped) without its comment marker: ``/*``, ``*``, ``//``, ``///``, ``//!``,
    ``#``, ``#!``, ``--`` and Lua's ``--[[``/``--[==[`` openers, then leading ``*/!``."""
    if line.startswith("#"):
        line = line.lstrip("#")
        line = line[1:] if line.startswith("!") else line
    elif line.startswith("--"):
        line = line.lstrip("-")
        if line.startswith("["):
            j = 1
            while j < len(line) and line[j] == "=":
                j += 1
            if j < len(line) and line[j] == "[":
                line = line[j + 1:]
    return line.lstrip("*/!").strip()


def strip_comment(raw: str) -> str:
    """Comment text without its markers; non-empty lines joined with single spaces."""
    body = raw.strip()
    for end in ("*/", "]]"):
        if body.endswith(end):
            body = body[: -len(end)]
    out = []
    for line in body.splitlines():
        line = _strip_marker(line.strip())
        if line:
            out.append(line)
    return " ".join(out)


def _comment_last_row(node, data: bytes) -> int:
    end = node.end_byte
    row = node.end_point[0]
    if end > node.start_byte and data[end - 1:end] == b"\n" and node.end_point[1] == 0:
        row -= 1
    return row


def doc_above(node, data: bytes, comment_types) -> str | None:
    """Doc comment directly above ``node`` (adjacent comment siblings, no blank line)."""
    parts = []
    row = node.start_point[0]
    prev = node.prev_named_sibling
    while prev is not None and (prev.type in comment_types or prev.type == "attribute_item"):
        if prev.type == "attribute_item":  # Rust `#[derive(…)]` between the doc and the item
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
            continue
        if _comment_last_row(prev, data) != row - 1:
            break
        parts.append(prev)
        row = prev.start_point[0]
        prev = prev.prev_named_sibling
    if not parts:
        return None
    text = " ".join(s for s in (strip_comment(data[p.start_byte:p.end_byte].decode("utf-8", "replace"))
                                for p in reversed(parts)) if s)
    return text or None


_queries = {}


def definition_nodes(parsed: Parsed, backend) -> list:
    """Every node of a type in ``backend.definitions``, in source pre-order, found by one
    tree-sitter query run in C (a Python walk over every node costs several times the parse)."""
    from lib.code import languages

    lang = parsed.tree.language
    key = (id(lang), backend.name)
    query = _queries.get(key)
    if query is None:
        kinds = sorted(k for k in backend.definitions if lang.id_for_node_kind(k, True))
        query = _queries[key] = languages.binding().Query(lang, "[" + " ".join(f"({k})" for k in kinds) + "] @d")
    nodes = languages.binding().QueryCursor(query).captures(parsed.tree.root_node).get("d", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    return nodes


def walk_specs(parsed: Parsed, use_query: bool | None = None):
    """Yield every :class:`~lib.code.backends.Spec` of the tree in source pre-order.

    The candidates come from the backend's ``candidates`` finder when it has one, else from
    :func:`definition_nodes`; one under a ``backend.stops`` node is
    skipped, exactly as a walk that does not descend there would skip it. Deep nesting costs
    nothing in Python: only the candidates' ancestors are looked at. ``use_query`` ``None``
    chooses by ``Backend.query_min_bytes``; ``True``/``False`` force one walk."""
    backend = _backends.BACKENDS[parsed.language]
    if use_query is None:
        use_query = (len(parsed.data) >= backend.query_min_bytes
                     or (id(parsed.tree.language), backend.name) in _queries)
    if not use_query:
        yield from walk_specs_python(parsed)  # a small file: the walk costs less than compiling the query
        return
    visit, data, stops = backend.visit, parsed.data, backend.stops
    if backend.candidates is not None:
        nodes = backend.candidates(parsed.tree.root_node, data)
    else:
        nodes = definition_nodes(parsed, backend)
    for node in nodes:
        parent = node.parent
        if stops:
            up = parent
            while up is not None and up.type not in stops:
                up = up.parent
            if up is not None:
                continue
        specs, _ = visit(node, data, parent)
        for spec in specs:
            if spec.name:
                if "\n" in spec.name:  # a C++ specialisation's name may span lines
                    spec.name = " ".join(spec.name.split())
                yield spec


def walk_specs_python(parsed: Parsed):
    """:func:`walk_specs` as an explicit-stack walk in Python: used for small files of grammars
    whose query is slow to compile (``Backend.query_min_bytes``), and to cross-check the query
    walk in tests."""
    backend = _backends.BACKENDS[parsed.language]
    visit, data = backend.visit, parsed.data
    # parents travel on the stack: tree-sitter's Node.parent walks down from the root, which
    # would make the walk quadratic on deeply nested source
    stack = [(parsed.tree.root_node, None)]
    while stack:
        node, parent = stack.pop()
        specs, descend = visit(node, data, parent)
        for spec in specs:
            if spec.name:
                if "\n" in spec.name:  # a C++ specialisation's name may span lines
                    spec.name = " ".join(spec.name.split())
                yield spec
        if descend and node.child_count:
            stack.extend((child, node) for child in reversed(node.named_children) if child.child_count)


def doc_of(spec, data: bytes, backend) -> str | None:
    """The doc comment of ``spec``'s definition: the backend's own docstring reader (Python's
    first body statement) when it finds one, else the comment directly above (:func:`doc_above`)
    where the language puts doc comments there."""
    if backend.docstring is not None:
        doc = backend.docstring(spec.body, data)
        if doc is not None:
            return doc
    if not backend.doc_above:
        return None
    return doc_above(spec.outer if spec.outer is not None else spec.node, data, backend.comments)


def _last_row(node) -> int:
    """0-based row of the last byte of ``node`` (a range ending in a newline does not count the
    next line), from the points tree-sitter computed while parsing."""
    row, col = node.end_point
    if col == 0 and row > node.start_point[0]:
        return row - 1
    return row


NAMED_LANGUAGES = frozenset({"python", "go", "rust", "java", "csharp", "c", "cpp", "typescript", "javascript",
                             "ruby", "lua"})
"""Languages whose definitions are named by an identifier spelled inside the definition:
:func:`specs_named` can find one by its name's occurrences."""
NAMED_MAX_OCCURRENCES = 64
"""More occurrences of a name than this and :func:`specs_named` gives way to the whole walk."""
_IDENT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")


def specs_named(parsed: Parsed, name: str):
    """The specs :func:`walk_specs_python` yields whose node contains an occurrence of ``name``'s
    last identifier (``A::f`` → ``f``) as a whole word, in source pre-order; ``None`` when this
    shortcut does not apply (a language not in :data:`NAMED_LANGUAGES`, a name that does not end
    in an identifier, or more than :data:`NAMED_MAX_OCCURRENCES` occurrences).

    A ``symbol`` lookup needs one definition, not the outline: from each occurrence, the path
    up to the root is visited as the walk would visit it (a node's specs count only when every
    ancestor lets the walk descend), so neither the whole walk nor a query's compilation is
    paid. Every spec the walk yields for a definition containing the name is found; a name not
    spelled in its definition is not, and the caller then walks the whole tree."""
    if parsed.language not in NAMED_LANGUAGES:
        return None
    raw = name.encode("utf-8", "replace")
    k = len(raw)
    while k and raw[k - 1] in _IDENT:
        k -= 1
    word = raw[k:]
    if not word or word[:1].isdigit():
        return None
    data, find, size = parsed.data, parsed.data.find, len(word)
    hits, i = [], find(word)
    while i >= 0:
        j = i + size
        if (i == 0 or data[i - 1] not in _IDENT) and (j >= len(data) or data[j] not in _IDENT):
            hits.append(i)
            if len(hits) > NAMED_MAX_OCCURRENCES:
                return None
        i = find(word, j)
    visit = _backends.BACKENDS[parsed.language].visit
    root = parsed.tree.root_node
    seen, found = {}, {}
    for i in hits:
        node = root.descendant_for_byte_range(i, i + size)
        path = []
        while node is not None and node.id not in seen:
            path.append(node)
            node = node.parent
        allowed = True if node is None else seen[node.id]
        for node in reversed(path):  # root first: each node as the walk reaches it
            if not allowed or not node.is_named or not node.child_count:
                seen[node.id] = False
                allowed = False
                continue
            parent = node.parent
            specs, descend = visit(node, data, parent)
            if specs:
                found[node.id] = (node.start_byte, -node.end_byte, specs)
            seen[node.id] = allowed = bool(descend)
    out = []
    for _, _, specs in sorted(found.values(), key=lambda t: t[:2]):
        for spec in specs:
            if spec.name:
                if "\n" in spec.name:  # a C++ specialisation's name may span lines
                    spec.name = " ".join(spec.name.split())
                out.append(spec)
    return out


def extract(parsed: Parsed, want=None, name: str | None = None) -> list:
    """All symbols of a parsed file, in source pre-order.

    Line numbers come from the tree's points (no line index of the file is built).

    :param want: when given, a predicate on each :class:`~lib.code.backends.Spec` (its ``name``
        and ``kind`` are final): only the specs it accepts get a signature and doc comment and
        become symbols (``symbol`` needs one, not the whole outline).
    :param name: with ``want``, the name it looks for: the specs come from
        :func:`specs_named` when it applies and one of them is wanted, else from the walk.
    """
    backend = _backends.BACKENDS[parsed.language]
    data = parsed.data
    source = (data, backend)
    out = []
    types = header_types(parsed.tree.language)
    specs = specs_named(parsed, name) if want is not None and name else None
    if not specs or not any(want(spec) for spec in specs):
        specs = walk_specs(parsed)
    for spec in specs:
        if want is not None and not want(spec):
            continue
        outer = spec.outer if spec.outer is not None else spec.node
        start, end = outer.start_byte, outer.end_byte
        sig = header_signature(spec, data, backend, types)
        if sig is None:
            sig_node = spec.sig_node if spec.sig_node is not None else spec.node
            sig = signature_at(data, sig_node.start_byte, sig_node.end_byte, backend.comment_prefix)
        first, last = outer.start_point[0] + 1, _last_row(outer) + 1
        out.append(Symbol(spec.name, spec.kind, sig, start, end, first, last, spec=spec, source=source))
    return out
