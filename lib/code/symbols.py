"""Symbol extraction: the iterative pre-order walk, signatures and doc comments.

The walk uses an explicit stack (source with 120,000 nested parentheses must not overflow
anything) and asks the file's backend (:mod:`lib.code.backends`) what each node defines.
Symbols come out in source pre-order, flat: nested definitions follow their parents.

Signature: the definition's first source line with attribute-only (``#[…]``) and
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

import re
from dataclasses import dataclass

from lib.code import backends as _backends
from lib.code.languages import Parsed
from lib.code.source import span_lines

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


@dataclass
class Symbol:
    """One extracted definition. ``start``/``end`` are the byte range of its slice,
    ``start_line``/``end_line`` 1-based and inclusive; ``spec`` keeps the tree nodes for the
    compact view and is never serialised."""

    name: str
    kind: str
    signature: str
    start: int
    end: int
    start_line: int
    end_line: int
    doc: str | None
    spec: object = None

    def as_json(self, lines: bool = True, doc: bool = True) -> dict:
        """The JSON entry: name, kind, signature, start_line/end_line unless ``lines`` is off,
        doc_comment when present unless ``doc`` is off. Never a byte range."""
        out = {"name": self.name, "kind": self.kind, "signature": self.signature}
        if lines:
            out["start_line"], out["end_line"] = self.start_line, self.end_line
        if doc and self.doc:
            out["doc_comment"] = self.doc
        return out


_ATTRIBUTE_LINE = re.compile(r"^\s*(#!?\[.*\]|@[\w.]+(\(.*\))?)\s*$")
_TRAILING = ("=>", "->", "(", "{", ",", ";", ":", "=")


def clean_signature(line: str, comment_prefix: str = "//") -> str:
    """Normalise one source line into a signature (rules in the module docstring)."""
    cut = re.search(r"\s(//|/\*)", line)
    if cut:
        line = line[:cut.start()]
    if comment_prefix in ("#", "--"):
        cut = re.search(r"\s" + re.escape(comment_prefix) + r"(\s|$)", line)
        if cut:
            line = line[:cut.start()]
    sig = " ".join(line.split())
    changed = True
    while changed and sig:
        changed = False
        for suffix in _TRAILING:
            if sig.endswith(suffix):
                sig = sig[: -len(suffix)].rstrip()
                changed = True
    if len(sig) > SIGNATURE_CAP:
        sig = sig[: SIGNATURE_CAP - 1] + "…"
    return sig or "…"


def signature_at(data: bytes, start: int, end: int, comment_prefix: str) -> str:
    """Signature from the source lines starting at byte ``start`` (not past ``end``)."""
    chunk = data[start:end].decode("utf-8", "replace")
    lines = chunk.split("\n")
    for line in lines:
        if line.strip() and not _ATTRIBUTE_LINE.match(line):
            return clean_signature(line.rstrip("\r"), comment_prefix)
    return clean_signature(lines[0] if lines else "", comment_prefix)


_MARKER = re.compile(r"^(?:/\*+|\*+/?|//+!?|#+!?|--+(?:\[=*\[)?)")


def strip_comment(raw: str) -> str:
    """Comment text without its markers; non-empty lines joined with single spaces."""
    body = raw.strip()
    for end in ("*/", "]]"):
        if body.endswith(end):
            body = body[: -len(end)]
    out = []
    for line in body.splitlines():
        line = _MARKER.sub("", line.strip())
        line = line.lstrip("*/!").strip()
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


def walk_specs(parsed: Parsed):
    """Yield every :class:`~lib.code.backends.Spec` of the tree in source pre-order."""
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
                yield spec
        if descend and node.child_count:
            stack.extend((child, node) for child in reversed(node.children))


def extract(parsed: Parsed, starts: list | None = None) -> list:
    """All symbols of a parsed file, in source pre-order.

    :param starts: line-start offsets of ``parsed.data`` (computed when omitted).
    """
    backend = _backends.BACKENDS[parsed.language]
    data = parsed.data
    if starts is None:
        from lib.code.source import Source

        starts = Source("", data, "").line_starts()
    out = []
    for spec in walk_specs(parsed):
        outer = spec.outer if spec.outer is not None else spec.node
        start, end = outer.start_byte, outer.end_byte
        sig_node = spec.sig_node if spec.sig_node is not None else spec.node
        sig = signature_at(data, sig_node.start_byte, sig_node.end_byte, backend.comment_prefix)
        doc = spec.doc
        if doc is None and backend.doc_above:
            doc = doc_above(outer, data, backend.comments)
        first, last = span_lines(starts, start, end)
        out.append(Symbol(spec.name, spec.kind, sig, start, end, first, last, doc, spec))
    return out
