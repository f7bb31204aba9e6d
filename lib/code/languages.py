"""Extension routing and tree-sitter parsing.

Grammars come from ``tree-sitter-language-pack`` 0.13.0 (pinned), a wheel that bundles every
compiled grammar; releases 1.x download grammars at run time and are deliberately not used.
Only the grammar a file needs is loaded (:func:`language`), straight from its compiled module.

Routing: the extension picks the backend (:data:`EXTENSIONS`); ``.tsx`` uses the TSX grammar.
A ``.h`` file is C or C++: C++-only markers route it to cpp; otherwise it is parsed as C and,
if that parse has errors, as C++ too, and the tree with fewer error bytes (then fewer error
nodes; ties to C) wins. If errors remain, annotation macros (SAL tokens, lone macro-invocation
lines, ALL-CAPS specifier macros) are blanked to spaces of the same length — byte offsets and
line numbers do not move — and the file is re-parsed; the masked tree is kept only when it has
fewer errors. ``Parsed.language`` names the backend actually used.
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
    """The C/C++ routing and masking regexes, compiled on first use (``re`` stays off the path
    of every other language)."""
    if not _RX:
        import re

        _RX["cpp_markers"] = re.compile(
            rb"::|\btemplate\b|\bnamespace\b|\btypename\b|\bconstexpr\b|\bnullptr\b|\boverride\b|\bdecltype\b"
            rb"|\b(?:static|dynamic|const|reinterpret)_cast\b|\bnoexcept\b|\bvirtual\b|\bexplicit\b|\bfriend\b"
            rb"|\benum\s+class\b")
        _RX["sal"] = re.compile(
            rb"\b_(?:In|Out|Inout|Ret|Deref|Pre|Post|Outptr|Must|Check|Success|Printf|Null|Notnull|Maybenull"
            rb"|Reserved|Field|Frees|Use|When|At|Struct|Acquires|Releases|Requires|Analysis|Always|Kernel"
            rb"|Interlocked|Readable|Writable|Result|Return|Opt)\w*_(?=\W)", re.IGNORECASE)
        _RX["lone_macro"] = re.compile(rb"(?m)^[ \t]*(?!(?:if|while|for|switch|return|sizeof|case|do|else)\b)"
                                       rb"[A-Za-z_]\w*[ \t]*\([^;{}\n]*\)[ \t]*$")
        _RX["caps_specifier"] = re.compile(
            rb"(?m)^([ \t]*)([A-Z][A-Z0-9_]{2,})(?=[ \t]+[A-Za-z_][\w*&]*[ \t*&]+[A-Za-z_~])")
        _RX["non_newline"] = re.compile(rb"[^\n]")
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


def _parse(grammar: str, data: bytes):
    tree = parser(grammar).parse(data)
    if len(_tree_languages) > 64:  # a long-lived MCP server parses without end: stay bounded
        _tree_languages.clear()
    _tree_languages[tree.root_node.id] = tree.language
    errors, size = count_errors(tree)
    return tree, errors, size


def mask_annotations(data: bytes) -> bytes:
    """``data`` with annotation macros replaced by spaces of the same length (newlines kept)."""
    def blank(m):
        return b" " * (m.end() - m.start())

    out = _rx("sal").sub(blank, data)
    out = _rx("lone_macro").sub(lambda m: _rx("non_newline").sub(b" ", m.group(0)), out)
    out = _rx("caps_specifier").sub(lambda m: m.group(1) + b" " * len(m.group(2)), out)
    return out


def parse(path: str, data: bytes) -> Parsed:
    """Parse ``data`` with the backend chosen for ``path``.

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
    tree, errors, size = _parse(grammar, data)
    if errors and name in ("c", "cpp"):
        masked = mask_annotations(data)
        if masked != data:
            t2, e2, s2 = _parse(grammar, masked)
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
        masked = mask_annotations(data)
        if masked != data:
            for lang in ([name] + [n for n in ("c", "cpp") if n != name]):
                t2, e2, s2 = _parse(lang, masked)
                if (e2, s2) < (result.errors, result.error_bytes):
                    result = Parsed(lang, t2, data, e2, s2)
                if e2 == 0:
                    break
    return result
