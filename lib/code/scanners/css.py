"""CSS header scanner: the rule sets tree-sitter-css lists, read from the bytes.

What the tree-sitter path lists (lib/code/backends.py ``_css``): every ``rule_set`` — at the top
level and inside at-rule blocks such as ``@media`` — named by its selector list with whitespace
collapsed, signed by its first line (lib/code/symbols.py ``signature_at``), ranging from its
first selector to its closing brace. Keyframe blocks and at-rules are not listed.

The scan (docs/ctxctl.md "Header scanners"): one compiled pattern reads a whole item at a time
(a rule set with its block, an at-rule's opening or closing brace, a statement), consuming
comments and strings (a ``{`` in either opens nothing) and holding selector lists and
declarations to a conservative grammar, because tree-sitter-css recovers from
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
_ATOMS = rb"[\s.,#%+*-]++|[\w-]++|" + _SLASH + rb"|" + _STRING


def _nest(inner: bytes) -> bytes:
    """A parenthesised group of words, numbers, strings, operators and ``inner`` groups (a call
    is a word before a group)."""
    return rb"\((?:" + _ATOMS + (rb"|" + inner if inner else b"") + rb")*+\)"


_PAREN = _nest(_nest(_nest(b"")))
_VALUE = rb"(?:[\s.,#%+-]++|!important|" + _URL + rb"|[\w-]++|" + _SLASH + rb"|" + _STRING + rb"|" + _PAREN + rb")++"
_DECLARATION = rb"-{0,2}[A-Za-z][\w-]*+\s*+:" + _VALUE
_BLOCK = re.compile(_CW + rb"(?:" + _DECLARATION + rb";" + _CW + rb")*+(?:" + _DECLARATION + _CW + rb")?\}")
"""A block's declarations and its closing brace, in the grammar this scan vouches for:
``property: value`` separated by ``;``, values of words, numbers, ``# . , % + - /``, strings,
``!important``, ``url(…)`` and parenthesised groups three deep; comments between declarations.
(Possessive quantifiers: the match is linear, whatever the input; each sub-pattern appears
once, so compiling it costs a cold call little.)"""

_ATTRIBUTE = rb"\[\s*+" + _IDENT + rb"\s*+(?:[~|^$*]?=\s*+(?:" + _IDENT + rb"|" + _STRING + rb")\s*+)?\]"
_SUFFIX = (rb"(?:\." + _IDENT + rb"|#-?[A-Za-z_][\w-]*+|" + _ATTRIBUTE + rb"|::?" + _IDENT + rb"(?:\((?:[\w\s.#:,>+~*-]++|"
           + _STRING + rb"|" + _ATTRIBUTE + rb"|\([\w\s.#:,>+~*-]*+\))*+\))?)")
_COMPOUND = rb"(?=[*\w.#\[:-])(?:\*|" + _IDENT + rb")?+" + _SUFFIX + rb"*+"
_SELECTORS = _COMPOUND + rb"(?:(?:\s*+[>+~,]\s*+|\s++)" + _COMPOUND + rb")*+"
"""A selector list of tags, ``*``, classes, ids, attribute selectors, pseudo-classes (with
arguments of plain selector characters) and pseudo-elements, joined by combinators and commas
(one copy of each sub-pattern: a comma is read as one more combinator)."""

_PRELUDE = rb"(?:[\w\s.,:()%-]++|" + _SLASH + rb"|" + _STRING + rb")*+"
_KEYFRAME = rb"(?:from|to|\d++(?:\.\d++)?%)(?:\s*+,\s*+(?:from|to|\d++(?:\.\d++)?%))*+"
_ITEM = re.compile(
    _CW + rb"(?:(?P<sel>" + _SELECTORS + rb")\s*+" + _CW + rb"\{"
    rb"|(?P<open>@(?:media|supports|layer|container|document|-moz-document)(?![\w-])" + _PRELUDE + rb"\{)"
    rb"|(?P<close>\})"
    rb"|@(?:import|charset|namespace)\s" + _PRELUDE + rb";"
    rb"|(?P<frames>@(?:-webkit-|-moz-|-o-)?keyframes\s++" + _IDENT + rb"\s*+\{)"
    rb"|(?P<face>@font-face\s*+\{))")
"""The head of one item of a stylesheet or of a block of rules, after the comments before it: a
rule set's selector list and brace (its block follows: :data:`_BLOCK`), the opening of
``@media`` and the other at-rules whose block holds rules, the closing brace of one, an
``@import``/``@charset``/``@namespace`` statement, the opening of ``@keyframes`` (keyframe
blocks follow: :data:`_FRAME`) or ``@font-face`` (a block of declarations follows)."""
_FRAME = re.compile(_CW + rb"(?:" + _KEYFRAME + rb"\s*+\{|(?P<end>\}))")
"""A keyframe selector and its brace, or the brace closing ``@keyframes``."""
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
    block = _BLOCK.match
    while True:
        m = match(data, pos)
        if m is None:
            break
        pos = m.end()
        if m.start("sel") >= 0 or m.start("face") >= 0:
            body = block(data, pos)
            if body is None:
                return None
            if m.start("sel") >= 0:
                out.append((m.start("sel"), m.end("sel"), body.end()))
            pos = body.end()
        elif m.start("open") >= 0:
            depth += 1
        elif m.start("close") >= 0:
            depth -= 1
            if depth < 0:
                return None
        elif m.start("frames") >= 0:
            while True:
                frame = _FRAME.match(data, pos)
                if frame is None:
                    return None
                pos = frame.end()
                if frame.start("end") >= 0:
                    break
                body = block(data, pos)
                if body is None:
                    return None
                pos = body.end()
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
