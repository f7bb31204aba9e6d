"""CSS header scanner: the rule sets tree-sitter-css lists, read from the bytes.

What the tree-sitter path lists (lib/code/backends.py ``_css``): every ``rule_set`` — at the top
level and inside at-rule blocks such as ``@media`` — named by its selector list with whitespace
collapsed, signed by its first line (lib/code/symbols.py ``signature_at``), ranging from its
first selector to its closing brace. Keyframe blocks and at-rules are not listed.

The scan (docs/ctxctl.md "Header scanners"): one compiled pattern finds the braces, comments and
strings (so a ``{`` in a string or comment opens nothing); each selector list and each block's
declarations are checked against a conservative grammar, because tree-sitter-css recovers from
what it cannot parse by reshaping whole rules (an IE hack such as ``*zoom: 1`` turns the rest of
the file into one rule). The scanner returns ``None`` (tree-sitter parses the file) on anything
outside that grammar: nested rules (CSS nesting, SCSS), unknown at-rules, a selector or value
it does not model, a comment inside a selector list, ``//`` outside a ``url(…)``, an
unterminated comment or string, braces that do not balance, NUL, bytes that are not UTF-8.
"""
from __future__ import annotations

import re

from lib.code.symbols import Symbol, clean_signatures, signature_at

_CW = rb"(?:\s++|/\*[^*]*+\*++(?:[^/*][^*]*+\*++)*+/)*+"
"""Whitespace and comments."""
_STRING = rb"(?:\"(?:[^\"\\\n]++|\\.)*+\"|'(?:[^'\\\n]++|\\.)*+')"
_IDENT = rb"-{0,2}[A-Za-z_][\w-]*+"
_SLASH = rb"/(?![/*])"  # a `/` that opens no comment (tree-sitter-css reads `//` as one)
_URL = rb"url\((?:\s*+" + _STRING + rb"\s*+|[\w:/.?&=%#@+~!$,;-]*+)\)"
_PAREN0 = rb"\((?:[\s.,#%+*-]++|[\w-]++|" + _SLASH + rb"|" + _STRING + rb")*+\)"


def _nest(inner: bytes) -> bytes:
    """A parenthesised group whose calls and groups are ``inner``."""
    return rb"\((?:[\s.,#%+*-]++|[\w-]++(?:" + inner + rb")?|" + _SLASH + rb"|" + _STRING + rb"|" + inner + rb")*+\)"


_PAREN2 = _nest(_nest(_PAREN0))
_VALUE = (rb"(?:[\s.,#%+-]++|!important|" + _URL + rb"|[\w-]++(?:" + _PAREN2 + rb")?|" + _SLASH + rb"|" + _STRING
          + rb"|" + _PAREN2 + rb")++")
_DECLARATION = rb"-{0,2}[A-Za-z][\w-]*+\s*+:" + _VALUE
_DECLARATIONS = _CW + rb"(?:" + _DECLARATION + rb";" + _CW + rb")*+(?:" + _DECLARATION + _CW + rb")?"
"""A block's declarations in the grammar this scan vouches for: ``property: value`` separated by
``;``, values of words, numbers, ``# . , % + - /``, strings, ``!important``, ``url(…)`` and
parenthesised groups three deep; comments between declarations. (Possessive quantifiers: the
match is linear, whatever the input.)"""

_ATTRIBUTE = rb"\[\s*+" + _IDENT + rb"\s*+(?:[~|^$*]?=\s*+(?:" + _IDENT + rb"|" + _STRING + rb")\s*+)?\]"
_SUFFIX = (rb"(?:\." + _IDENT + rb"|#-?[A-Za-z_][\w-]*+|" + _ATTRIBUTE + rb"|::?" + _IDENT + rb"(?:\((?:[\w\s.#:,>+~*-]++|"
           + _STRING + rb"|" + _ATTRIBUTE + rb"|\([\w\s.#:,>+~*-]*+\))*+\))?)")
_COMPOUND = rb"(?:(?:\*|" + _IDENT + rb")" + _SUFFIX + rb"*+|" + _SUFFIX + rb"++)"
_COMPLEX = _COMPOUND + rb"(?:\s*+[>+~]\s*+" + _COMPOUND + rb"|\s++" + _COMPOUND + rb")*+"
_SELECTORS = _COMPLEX + rb"(?:\s*+,\s*+" + _COMPLEX + rb")*+"
"""A selector list of tags, ``*``, classes, ids, attribute selectors, pseudo-classes (with
arguments of plain selector characters) and pseudo-elements, joined by combinators and commas."""

_PRELUDE = rb"(?:[\w\s.,:()%-]++|" + _SLASH + rb"|" + _STRING + rb")*+"
_KEYFRAME = rb"(?:from|to|\d++(?:\.\d++)?%)(?:\s*+,\s*+(?:from|to|\d++(?:\.\d++)?%))*+"
_ITEM = re.compile(
    _CW + rb"(?:(?P<sel>" + _SELECTORS + rb")\s*+" + _CW + rb"\{" + _DECLARATIONS + rb"\}"
    rb"|(?P<open>@(?:media|supports|layer|container|document|-moz-document)(?![\w-])" + _PRELUDE + rb"\{)"
    rb"|(?P<close>\})"
    rb"|@(?:import|charset|namespace)\s" + _PRELUDE + rb";"
    rb"|@(?:-webkit-|-moz-|-o-)?keyframes\s++" + _IDENT + rb"\s*+\{" + _CW + rb"(?:" + _KEYFRAME + rb"\s*+\{"
    + _DECLARATIONS + rb"\}" + _CW + rb")*+\}"
    rb"|@font-face\s*+\{" + _DECLARATIONS + rb"\})")
"""One item of a stylesheet or of a block of rules, after the comments before it: a rule set
(its selector list, then a block of declarations), the opening of ``@media`` and the other
at-rules whose block holds rules, the closing brace of one, an ``@import``/``@charset``/
``@namespace`` statement, a whole ``@keyframes`` or ``@font-face`` rule."""
_TAIL = re.compile(_CW)


def outline(data: bytes) -> list | None:
    """The rule sets of CSS ``data`` as :class:`~lib.code.symbols.Symbol` rows identical to the
    tree-sitter path's, in source order; ``None`` when the scan cannot vouch for them (see the
    module docstring)."""
    if b"\0" in data:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    found = _rules(data)
    return None if found is None else _symbols(data, found)


def _rules(data: bytes) -> list | None:
    """``(selector start, selector end, rule end)`` of every rule set in source order, or
    ``None`` when an item is outside the grammar or the braces do not balance."""
    out = []
    depth = 0
    pos, n = 0, len(data)
    match = _ITEM.match
    while True:
        m = match(data, pos)
        if m is None:
            break
        pos = m.end()
        if m.start("sel") >= 0:
            out.append((m.start("sel"), m.end("sel"), pos))
        elif m.start("open") >= 0:
            depth += 1
        elif m.start("close") >= 0:
            depth -= 1
            if depth < 0:
                return None
    if depth or _TAIL.match(data, pos).end() != n:
        return None
    return out


def _symbols(data: bytes, found: list) -> list:
    """The rows, lines counted incrementally. A rule's first line is never blank nor an
    attribute line, so its signature is :func:`~lib.code.symbols.clean_signature` of the line
    (cut at the rule's end), as :func:`~lib.code.symbols.signature_at` reads it; the lines of
    an ASCII file are signed together (:func:`~lib.code.symbols.clean_signatures`)."""
    count = data.count
    text = data.decode("utf-8")
    if len(text) != len(data):  # not ASCII: offsets differ, decode each slice
        sigs = [signature_at(data, start, close, "/*") for start, _, close in found]
        names = [" ".join(data[start:end].decode("utf-8").split()) for start, end, _ in found]
    else:
        find = text.find
        sigs = clean_signatures([text[start:close if nl < 0 else nl].rstrip("\r")
                                 for start, _, close in found for nl in (find("\n", start, close),)], "/*")
        names = [" ".join(text[start:end].split()) for start, end, _ in found]
    out = []
    row, pos = 0, 0
    for (start, end, close), name, sig in zip(found, names, sigs):
        row += count(b"\n", pos, start)
        pos = start
        last = row + count(b"\n", start, close)
        out.append(Symbol(name, "rule", sig, start, close, row + 1, last + 1, doc=None))
    return out
