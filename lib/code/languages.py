"""Extension routing and tree-sitter parsing.

Grammars come from ``tree-sitter-language-pack`` 0.13.0 (pinned), a wheel that bundles every
compiled grammar; releases 1.x download grammars at run time and are deliberately not used.
Only the grammar a file needs is loaded (:func:`language`), straight from its compiled module.

Routing: the extension picks the backend (:data:`EXTENSIONS`); ``.tsx`` uses the TSX grammar.
A ``.h`` file is C or C++: C++-only markers route it to cpp; otherwise it is parsed as C and,
if that parse has errors, as C++ too, and the tree with fewer error bytes (then fewer error
nodes; ties to C) wins. If errors remain, annotation macros (SAL tokens, lone macro-invocation
lines, ALL-CAPS specifier macros) are blanked to spaces of the same length — byte offsets and
line numbers do not move — and the file is re-parsed incrementally from the first tree (each
mask an edit of the same length); the masked tree is kept only when it has fewer errors. ``Parsed.language`` names the backend actually used.
"""
from __future__ import annotations

import os
import sys

from lib.code.errors import USAGE, ExitError
from lib.code.record import Record

EXTENSIONS = {
    ".rs": "rust",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".py": "python", ".pyi": "python",
    ".go": "go",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".h++": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".lua": "lua",
    ".html": "html", ".htm": "html",
    ".css": "css", ".scss": "css",
    ".md": "markdown", ".markdown": "markdown",
}
"""Extension (lower-cased) → backend name (the JSON ``language`` field)."""

_GRAMMAR = {"typescript": "typescript", "javascript": "javascript", "csharp": "csharp"}

_RX = {}


def _rx(name: str):
    """The ``.h`` routing regex, compiled on first use (``re`` stays off every other path)."""
    if not _RX:
        import re

        _RX["cpp_markers"] = re.compile(
            rb"::|\btemplate\b|\bnamespace\b|\btypename\b|\bconstexpr\b|\bnullptr\b|\boverride\b|\bdecltype\b"
            rb"|\b(?:static|dynamic|const|reinterpret)_cast\b|\bnoexcept\b|\bvirtual\b|\bexplicit\b|\bfriend\b"
            rb"|\benum\s+class\b")
    return _RX[name]


class Parsed(Record):
    """A parsed file: backend name, the tree, the file's original bytes (a masked parse has the
    same offsets) and the syntax-error count (ERROR/MISSING nodes, an ERROR counted once)."""

    FIELDS = (("language", ""), ("tree", None), ("data", b""), ("errors", 0), ("error_bytes", 0))


def backend_for(path: str) -> str | None:
    """Backend name for ``path`` by extension, or ``None`` when unsupported."""
    base = os.path.basename(path).lower()
    if base.endswith(".h++"):
        return "cpp"
    return EXTENSIONS.get(os.path.splitext(base)[1])


def require_backend(path: str) -> str:
    """Backend name for ``path``.

    :raises ExitError: code 2 ``unsupported extension: <path>``.
    """
    name = backend_for(path)
    if name is None:
        raise ExitError(USAGE, f"unsupported extension: {path}")
    return name


_parsers = {}
_binding = None

CSHARP_PACKAGE = "tree_sitter_c_sharp"
"""The language pack routes ``csharp`` to this separate wheel (one of its dependencies)."""


def _machinery():
    """``importlib.machinery``'s loaders and finders without importing ``importlib`` (its
    ``__init__`` imports ``warnings``): they live in the bootstrap module the interpreter
    has already loaded, which ``importlib.machinery`` only re-exports."""
    import _frozen_importlib_external

    return _frozen_importlib_external


def _load_extension(name: str, path: str):
    """Load the compiled extension at ``path`` as module ``name``, without executing the
    ``__init__`` of the package it belongs to."""
    import _frozen_importlib

    loader = _machinery().ExtensionFileLoader(name, path)
    spec = _frozen_importlib.ModuleSpec(name, loader, origin=path)
    module = loader.create_module(spec)
    loader.exec_module(module)
    return module


def _package_dir(package: str) -> str:
    spec = _machinery().PathFinder.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{package} is not installed (requirements.txt)")
    return list(spec.submodule_search_locations)[0]


def _extension(folder: str, stem: str) -> str:
    for suffix in _machinery().EXTENSION_SUFFIXES:
        candidate = os.path.join(folder, stem + suffix)
        if os.path.isfile(candidate):
            return candidate
    raise ImportError(f"no compiled module {stem} in {folder}")


def _int_enum(name: str, members: dict):
    """Stand-in for ``enum.IntEnum``'s functional call while the core initialises: the one
    enum it builds (``LogType``, handed only to a ``Parser.logger``, which ctxctl never sets)
    becomes a plain ``int`` subclass with the same member values."""
    return type(name, (int,), dict(members))


def _re_compile(pattern, flags=0):
    """Stand-in for ``re.compile`` kept by the core: imports the real ``re`` on first use (a
    query's ``#match?`` predicate), never at load."""
    import re

    return re.compile(pattern, flags)


def binding():
    """tree-sitter's compiled core (``Language``, ``Parser``, ``Query``…), loaded directly:
    the ``tree_sitter`` package's ``__init__`` imports ``typing`` for one Protocol class.

    The core's initialisation imports ``re`` (for ``#match?`` query predicates) and ``enum``
    (to build ``LogType``), together about a third of a bare interpreter's start-up, for
    features the file commands never use. When neither is loaded yet and no other thread runs
    (one could import them meanwhile), the core is initialised against stand-in modules
    (:func:`_re_compile`, :func:`_int_enum`) that are removed again right after, so a later
    ``import re`` or ``import enum`` anywhere gets the real module."""
    global _binding
    if _binding is None:
        import _thread

        path = _extension(_package_dir("tree_sitter"), "_binding")
        stand_ins = {}
        if _thread._count() == 0:
            for name, attr, value in (("re", "compile", _re_compile), ("enum", "IntEnum", _int_enum)):
                if name not in sys.modules:
                    module = stand_ins[name] = type(sys)(name)
                    setattr(module, attr, value)
                    sys.modules[name] = module
        try:
            _binding = _load_extension("tree_sitter._binding", path)
        finally:
            for name, module in stand_ins.items():
                if sys.modules.get(name) is module:
                    del sys.modules[name]
    return _binding


def language(grammar: str):
    """The ``Language`` of one grammar of tree-sitter-language-pack, loading only that
    grammar's compiled module — never the pack's ``__init__``, which imports every helper
    package and ``pathlib`` — or tree-sitter-c-sharp's for ``csharp``."""
    if grammar == "csharp":
        module = _load_extension(f"{CSHARP_PACKAGE}._binding", _extension(_package_dir(CSHARP_PACKAGE), "_binding"))
    else:
        folder = os.path.join(_package_dir("tree_sitter_language_pack"), "bindings")
        module = _load_extension(f"tree_sitter_language_pack.bindings.{grammar}", _extension(folder, grammar))
    return binding().Language(module.language())


_tree_languages = {}


def language_of(root):
    """The ``Language`` of the tree whose root node is ``root`` (a Node does not expose it; the
    trees this module parsed are remembered by root node id)."""
    return _tree_languages[root.id]


def parser(grammar: str):
    """A cached tree-sitter parser for a grammar name of tree-sitter-language-pack."""
    p = _parsers.get(grammar)
    if p is None:
        p = _parsers[grammar] = binding().Parser(language(grammar))
    return p


def count_errors(tree) -> tuple:
    """``(error nodes, error bytes)``: ERROR and MISSING nodes, an ERROR's children not descended."""
    root = tree.root_node
    if not root.has_error:
        return 0, 0
    count = size = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error:
            count += 1
            size += node.end_byte - node.start_byte
            continue
        if node.is_missing:
            count += 1
            continue
        if node.has_error:
            stack.extend(node.children)
    return count, size


def _remember(tree) -> None:
    if len(_tree_languages) > 64:  # a long-lived MCP server parses without end: stay bounded
        _tree_languages.clear()
    _tree_languages[tree.root_node.id] = tree.language


def _parse(grammar: str, data: bytes):
    tree = parser(grammar).parse(data)
    _remember(tree)
    errors, size = count_errors(tree)
    return tree, errors, size


_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_IDENT_START = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_IDENT_HEAD = frozenset(bytes([c]) for c in _IDENT_START)
_CAPS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_CAPS_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_SAL_PREFIXES = tuple(p.lower().encode() for p in (
    "In", "Out", "Inout", "Ret", "Deref", "Pre", "Post", "Outptr", "Must", "Check", "Success", "Printf", "Null",
    "Notnull", "Maybenull", "Reserved", "Field", "Frees", "Use", "When", "At", "Struct", "Acquires", "Releases",
    "Requires", "Analysis", "Always", "Kernel", "Interlocked", "Readable", "Writable", "Result", "Return", "Opt"))
_SAL_HEADS = frozenset(p[:2] for p in _SAL_PREFIXES)
_STATEMENT_WORDS = frozenset((b"if", b"while", b"for", b"switch", b"return", b"sizeof", b"case", b"do", b"else"))


def _sal_spans(data: bytes) -> list:
    """``(start, end)`` of every SAL annotation token: a whole word that starts with ``_`` and a
    SAL prefix (case-insensitive: ``_In_``, ``_Out_writes_(n)``'s ``_Out_writes_``, ``_Ret_z_``),
    ends with ``_`` and is followed by a non-word byte."""
    out, n, i = [], len(data), data.find(b"_")
    while i >= 0:
        if (i and data[i - 1] in _WORD) or data[i + 1:i + 3].lower() not in _SAL_HEADS:
            i = data.find(b"_", i + 1)  # inside a word, or no SAL prefix can start here
            continue
        end = i + 1
        while end < n and data[end] in _WORD:
            end += 1
        if end < n and end - i >= 3 and data[end - 1] == 0x5F:
            word = data[i + 1:end - 1].lower()
            if any(word.startswith(p) for p in _SAL_PREFIXES):
                out.append((i, end))
        i = data.find(b"_", end)
    return out


def _lone_macro(line: bytes) -> bool:
    """``line`` is one macro invocation alone (``DECLARE_HANDLE(x)``, ``Q_OBJECT_CHECK()``): an
    identifier that is not a statement keyword, ``(``, no ``; { }`` up to a final ``)``."""
    if not line.rstrip(b" \t").endswith(b")"):
        return False
    s = line.lstrip(b" \t")
    if not s or s[0] not in _IDENT_START:
        return False
    j = 1
    while j < len(s) and s[j] in _WORD:
        j += 1
    if s[:j] in _STATEMENT_WORDS:
        return False
    rest = s[j:].lstrip(b" \t")
    return (rest[:1] == b"(" and rest.rstrip(b" \t").endswith(b")")
            and rest.find(b";") < 0 and rest.find(b"{") < 0 and rest.find(b"}") < 0)


def _caps_specifier(line: bytes) -> tuple | None:
    """``(start, end)`` in ``line`` of a leading ALL-CAPS specifier macro (``SECUREC_INLINE int
    f(…)``, ``WINAPI``): at least three of ``[A-Z0-9_]`` starting with a letter, then blanks, a
    type-like token and a declarator (``[A-Za-z_~]`` after blanks, ``*`` or ``&``)."""
    start = len(line) - len(line.lstrip(b" \t"))
    n = len(line)
    if start >= n or not 65 <= line[start] <= 90:
        return None
    end = start + 1
    while end < n and line[end] in _CAPS:
        end += 1
    if end - start < 3 or end >= n or line[end] not in b" \t":
        return None
    k = end
    while k < n and line[k] in b" \t":
        k += 1
    if k >= n or line[k] not in _IDENT_START:
        return None
    j = k + 1  # the type-like token is [A-Za-z_][\w*&]*, then [ \t*&]+, then [A-Za-z_~]
    while True:
        if j < n and line[j] in b" \t*&":
            m = j
            while m < n and line[m] in b" \t*&":
                m += 1
            if m < n and (line[m] in _IDENT_START or line[m] == 0x7E):
                return start, end
        if j >= n or not (line[j] in _WORD or line[j] in b"*&"):
            return None
        j += 1


def mask_spans(data: bytes) -> list:
    """``(start, end)`` byte spans of ``data`` that :func:`mask_annotations` blanks, sorted and
    disjoint: SAL tokens, lines that are one macro invocation, leading ALL-CAPS specifier
    macros. (String methods, not ``re``: a C file with a syntax error is common, and ``re``'s
    import and compilation would cost more than the scan.)"""
    sal = _sal_spans(data)
    masked = bytearray(data)
    for a, b in sal:
        masked[a:b] = b" " * (b - a)
    spans, pos = [], 0
    for line in bytes(masked).split(b"\n"):
        if line.lstrip(b" \t")[:1] in _IDENT_HEAD:  # both rules need an identifier first
            if _lone_macro(line):
                spans.append((pos, pos + len(line)))
            else:
                caps = _caps_specifier(line)
                if caps is not None:
                    spans.append((pos + caps[0], pos + caps[1]))
        pos += len(line) + 1
    if not sal:
        return spans
    merged = []
    for a, b in sorted(sal + spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def mask_annotations(data: bytes, spans: list | None = None) -> bytes:
    """``data`` with annotation macros (:func:`mask_spans`) replaced by spaces of the same
    length: newlines, byte offsets and line numbers do not move."""
    out = bytearray(data)
    for a, b in (mask_spans(data) if spans is None else spans):
        out[a:b] = b" " * (b - a)
    return bytes(out)


def _edit_masks(tree, data: bytes, spans: list):
    """``tree`` (edited in place and returned) told that each span of ``data`` was rewritten
    with as many bytes: the edits an incremental parse of the masked text starts from."""
    for a, b in spans:
        row, col = data.count(b"\n", 0, a), a - (data.rfind(b"\n", 0, a) + 1)
        row2, col2 = row + data.count(b"\n", a, b), b - (data.rfind(b"\n", 0, b) + 1)
        tree.edit(a, b, b, (row, col), (row2, col2), (row2, col2))
    return tree


def _reparse_masked(grammar: str, tree, data: bytes, masked: bytes, spans: list):
    """``(tree, errors, error bytes)`` of ``masked``, re-parsed incrementally from ``tree`` (the
    parse of ``data``): each blanked span is an edit of the same length, so tree-sitter reuses
    every subtree the masks do not touch (a tenth of a full parse)."""
    new = parser(grammar).parse(masked, _edit_masks(tree.copy(), data, spans))
    _remember(new)
    errors, size = count_errors(new)
    return new, errors, size


_skeleton_parsers = {}


def _parse_skeleton(name: str, grammar: str, data: bytes):
    """The outline parse (:mod:`lib.code.skeleton`): the tree of ``data`` with the interiors of
    function bodies left out; ``False`` when nothing can be left out, ``None`` when that tree
    has a syntax error (the caller parses the whole file instead). A C or C++ skeleton is
    parsed again with its annotation macros masked (:func:`mask_spans`) when it has errors, and
    kept when all that remains is statement macros (:func:`_only_statement_macros`)."""
    from lib.code import skeleton

    if len(data) < skeleton.MIN_BYTES:
        return False
    cuts = skeleton.holes(name, data)
    if not cuts:
        return False
    p = _skeleton_parsers.get(grammar)
    if p is None:
        p = _skeleton_parsers[grammar] = binding().Parser(language(grammar))
    Range = binding().Range
    p.included_ranges = [Range(a_point, b_point, a, b) for a, b, a_point, b_point in skeleton.ranges(data, cuts)]
    tree = p.parse(data)
    if tree.root_node.has_error and name in ("c", "cpp"):
        spans = mask_spans(data)  # annotation macros in headers: the whole parse masks them too
        if spans:
            tree = _edit_masks(tree, data, spans)
            tree = p.parse(mask_annotations(data, spans), tree)
    if tree.root_node.has_error and not (name in ("c", "cpp") and _only_statement_macros(tree, data)):
        return None
    if name == "python" and not skeleton.hollows_hold(tree, data, cuts):
        return None
    _remember(tree)
    return tree


def _only_statement_macros(tree, data: bytes) -> bool:
    """Every syntax error of ``tree`` is a MISSING ``;`` on a line that holds one ALL-CAPS
    identifier and nothing else: an object-like macro used as a statement
    (``FMT_BEGIN_NAMESPACE``, ``G_BEGIN_DECLS``), which no scan of bodies can have caused and
    which the whole parse reports the same way."""
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_missing:
            if node.type != ";":
                return False
            at = node.start_byte
            line = data[data.rfind(b"\n", 0, at) + 1:at].strip()
            if len(line) < 3 or not (65 <= line[0] <= 90) or line.strip(_CAPS_BYTES):
                return False
            continue
        if node.is_error:
            return False
        if node.has_error:
            stack.extend(node.children)
    return True


def parse(path: str, data: bytes, skip_bodies: bool = False) -> Parsed:
    """Parse ``data`` with the backend chosen for ``path``; with ``skip_bodies``, function
    bodies whose statements no symbol needs are left out of the parse where the language
    allows it (:mod:`lib.code.skeleton`): the tree then serves symbols, and imports only of
    the languages whose imports never sit in a function (:data:`skeleton.IMPORTS_OUTSIDE_BODIES`).

    :raises ExitError: code 2 for an unsupported extension.
    """
    name = require_backend(path)
    base = os.path.basename(path).lower()
    if name == "typescript" and base.endswith(".tsx"):
        grammar = "tsx"
    elif name == "javascript":
        grammar = "javascript"
    else:
        grammar = name
    if name in ("c", "cpp") and base.endswith(".h"):
        return _parse_header(data)
    if skip_bodies:
        tree = _parse_skeleton(name, grammar, data)
        if tree:
            return Parsed(name, tree, data, *count_errors(tree))
    tree, errors, size = _parse(grammar, data)
    if errors and name in ("c", "cpp"):
        spans = mask_spans(data)
        if spans:
            t2, e2, s2 = _reparse_masked(grammar, tree, data, mask_annotations(data, spans), spans)
            if e2 < errors:
                return Parsed(name, t2, data, e2, s2)
    return Parsed(name, tree, data, errors, size)


def _parse_header(data: bytes) -> Parsed:
    if _rx("cpp_markers").search(data):
        candidates = [("cpp", *_parse("cpp", data))]
    else:
        c = ("c", *_parse("c", data))
        candidates = [c]
        if c[2]:
            candidates.append(("cpp", *_parse("cpp", data)))
    best = min(candidates, key=lambda c: (c[3], c[2]))  # error bytes, then nodes; min keeps C on ties
    name, tree, errors, size = best
    result = Parsed(name, tree, data, errors, size)
    if errors:
        spans = mask_spans(data)
        if spans:
            masked = mask_annotations(data, spans)
            trees = {c[0]: c[1] for c in candidates}
            for lang in ([name] + [n for n in ("c", "cpp") if n != name]):
                if lang in trees:
                    t2, e2, s2 = _reparse_masked(lang, trees[lang], data, masked, spans)
                else:
                    t2, e2, s2 = _parse(lang, masked)
                if (e2, s2) < (result.errors, result.error_bytes):
                    result = Parsed(lang, t2, data, e2, s2)
                if e2 == 0:
                    break
    return result
