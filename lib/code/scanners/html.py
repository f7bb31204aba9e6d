"""HTML header scanner: the elements tree-sitter-html lists, read from the bytes.

What the tree-sitter path lists (lib/code/backends.py ``_html``, ``_html_candidates``): every
element whose start tag has an ``id`` attribute with a value (kind ``element``, named by the
value) and every ``h1``–``h6`` element with text (kind ``heading``, named by its text), in
source order, an element's ``id`` row before its heading row; each signed by its first line
(lib/code/symbols.py ``signature_at``), ranging over the whole element.

The scan (docs/ctxctl.md "Header scanners"): one compiled pattern reads every tag, comment,
doctype and raw-text (``script``/``style``) body, and a stack matches end tags to start tags,
so each element's end is known. tree-sitter-html closes elements implicitly (an ``li`` by the
next ``li``, a ``p`` by a ``div``, everything at the end of the file) and recovers from stray
end tags; the scanner models none of that and returns ``None`` (tree-sitter parses the file)
when an element other than a void one (``br``, ``img``, ``input``…) is not closed by its own
end tag, when a parent could not hold a child (``p``, ``li``, ``td``… rules of tree-sitter-html's
scanner), on a ``<`` or ``>`` outside a tag, an ``&`` that is no entity, a CDATA section or
processing instruction, an unterminated comment or raw text, NUL, or bytes that are not UTF-8.
A heading's text is its content without tags and comments (a heading holding a ``script`` or
``style`` falls back).
"""
from __future__ import annotations

import re

from lib.code.symbols import Symbol, clean_signatures, signature_at

_ATTRIBUTES = rb"""(?:\s++[^\s"'<>/=]++(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|[^\s"'=<>`]++))?+)*+"""
_NAME = rb"[A-Za-z][A-Za-z0-9:-]*+"
_NO_ID_ATTRIBUTES = (rb"""(?:\s++(?![iI][dD](?![^\s"'<>/=]))[^\s"'<>/=]++(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'"""
                     rb"""|[^\s"'=<>`]++))?+)*+""")


def _raw(name: str) -> bytes:
    """A whole ``name`` raw-text element: start tag, content up to the first end tag, end tag."""
    word = b"".join(b"[%s%s]" % (c.upper().encode(), c.encode()) for c in name)
    return (rb"<" + word + rb"(" + _ATTRIBUTES + rb")\s*+>(?:[^<]++|<(?!/" + word + rb"\s*+>))*+</" + word
            + rb"\s*+>")


_TOKEN = re.compile(
    rb"((?:[^<>&]++|&(?=[A-Za-z#]))*+"
    rb"(?:(" + _raw("script") + rb"|" + _raw("style") + rb")"
    rb"|((<(?P<leaf>" + _NAME + rb")(" + _NO_ID_ATTRIBUTES + rb")\s*+>)((?:[^<>&]++|&(?=[A-Za-z#]))*+)</(?P=leaf)\s*+>)"
    rb"|(<(" + _NAME + rb")(" + _ATTRIBUTES + rb")\s*+(/?)>)"
    rb"|(</(" + _NAME + rb")\s*+>)"
    rb"|<!--(?:[^-]++|-(?!->))*+-->|<![Dd][Oo][Cc][Tt][Yy][Pp][Ee][^<>]*+>"
    rb"|([<>&])))")
"""Text (entities included), then one of: a whole ``script`` or ``style`` element (groups 2–4:
the element, its attributes as a script's or a style's), a whole element of text alone whose
start tag has no ``id`` and whose end tag is spelt alike (5–9: the element, its start tag, name,
attributes, content; one token instead of three, most elements of a page are such leaves), a
start tag (10–13: the tag, its name, attributes, the ``/`` of a self-closing tag), an end tag
(14–15: the tag, its name), a comment, a doctype; or what the scan does not model (16): any
other ``<`` or ``>``, an ``&`` that is no entity. Group 1 is the whole match: consecutive matches tile the file up to its last token, so
``findall`` gives every token's offset by its length."""
_ATTRIBUTE = re.compile(rb"""\s++([^\s"'<>/=]++)(?:\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s"'=<>`]++)))?+""")
"""One attribute of a start tag's attribute text: name, then the value's three spellings."""
_MARKUP = re.compile(rb"<(?:[A-Za-z][A-Za-z0-9:-]*+" + _ATTRIBUTES + rb"\s*+/?>|/[A-Za-z][A-Za-z0-9:-]*+\s*+>|!--(?:[^-]++|-(?!->))*+-->)")
"""The tags and comments inside an element's content, as :data:`_TOKEN` reads them."""
_ID_HINT = re.compile(rb"""\s[iI][dD]\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s"'=<>`]++))""")
"""An ``id`` attribute in a start tag's attribute text, when no quote comes before it."""
_QUOTE = re.compile(rb"[\"']")
_SPACE = re.compile(rb"\s")
_HEADINGS = frozenset({b"h1", b"h2", b"h3", b"h4", b"h5", b"h6"})
_VOID = frozenset(b"area base basefont bgsound br col command embed frame hr image img input isindex keygen link "
                  b"menuitem meta nextid param source track wbr".split())
"""Elements without content: their start tag is the whole element (tree-sitter-html's list)."""
_RAW_NAMES = frozenset({b"script", b"style"})
"""Raw-text elements: their content runs to their end tag, unparsed (read whole by :data:`_TOKEN`)."""
_NOT_IN_PARAGRAPH = frozenset(b"address article aside blockquote details dialog div dl fieldset figcaption figure "
                              b"footer form h1 h2 h3 h4 h5 h6 header hgroup hr main menu nav ol p pre section table "
                              b"ul".split())
class _AnyBut(frozenset):
    """Every name but these (``colgroup`` holds only ``col``)."""

    def __contains__(self, name):
        return not frozenset.__contains__(self, name)


_ANY_BUT_COL = _AnyBut({b"col"})
_SECTIONS = frozenset({b"thead", b"tbody", b"tfoot"})
_IMPLIED = {b"li": frozenset({b"li"}), b"dt": frozenset({b"dt", b"dd"}), b"dd": frozenset({b"dt", b"dd"}),
            b"rb": frozenset({b"rb", b"rt", b"rp"}), b"rt": frozenset({b"rb", b"rt", b"rp"}),
            b"rp": frozenset({b"rb", b"rt", b"rp"}), b"optgroup": frozenset({b"optgroup"}),
            b"option": frozenset({b"option", b"optgroup"}), b"thead": _SECTIONS, b"tbody": _SECTIONS, b"tfoot": _SECTIONS,
            b"tr": frozenset({b"tr"}),
            b"td": frozenset({b"td", b"th", b"tr"}), b"th": frozenset({b"td", b"th", b"tr"}), b"p": _NOT_IN_PARAGRAPH,
            b"colgroup": _ANY_BUT_COL}
"""Parent → the children whose start tag closes it implicitly in tree-sitter-html (its scanner's
``can_contain``, and, to be safe, ``option`` and the table sections). The scan falls back on
any of them."""


MAX_DEPTH = 256
"""Elements open at once beyond this make the scan fall back (its time stays linear)."""


def outline(data: bytes) -> list | None:
    """The ``id`` elements and headings of HTML ``data`` as :class:`~lib.code.symbols.Symbol`
    rows identical to the tree-sitter path's, in source order; ``None`` when the scan cannot
    vouch for them (see the module docstring)."""
    if b"\0" in data or b"<![" in data or b"<?" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    found = _elements(data)
    if found is None:
        return None
    if any(e[2] is not None and (e[2].find(b"\n") >= 0 or e[2].find(b"\r") >= 0) for e in found):
        return None  # tree-sitter-html names it with the break folded: not modelled
    return _symbols(data, text if len(text) == len(data) else None, found)


def _elements(data: bytes) -> list | None:
    """``[start, end, id value or None, heading content start or (start, end) or None]`` of
    every element the tree path may list, in source order; ``None`` when the structure is not
    the modelled one."""
    out = []
    names = []  # the open elements' names
    listed_at = []  # for each open element, its index in ``out`` or -1
    void = -1  # index of a listed void element whose end is not known yet
    implied_by = _IMPLIED.get
    pos = 0
    for (whole, raw, script_attrs, style_attrs, leaf, leaf_tag, leaf_name, leaf_attrs, leaf_text, tag, name, attrs,
         self_closing, end_tag, close, bad) in _TOKEN.findall(data):
        pos += len(whole)
        if leaf:  # an element of text alone
            start = pos - len(leaf)
            if void >= 0:
                out[void][1] = start
                void = -1
            name = leaf_name.lower()
            if name in _VOID or (leaf_attrs and leaf_attrs[-1] == 47):
                return None  # `<br>x</br>`: an erroneous end tag; `<a href=x/>`
            if names:
                implied = implied_by(names[-1])
                if implied is not None and name in implied:
                    return None
            if name in _HEADINGS:
                text_at = start + len(leaf_tag)
                out.append([start, pos, None, (text_at, text_at + len(leaf_text))])
            continue
        if tag or raw:  # a start tag, or a whole raw-text element
            start = pos - len(tag or raw)
            if void >= 0:
                out[void][1] = start  # a void element runs over text and comments to the next tag
                void = -1
            if raw:
                name = b"script" if raw[1:2] in b"sS" else b"style"
                attrs = script_attrs or style_attrs
                if not _HEADINGS.isdisjoint(names):
                    return None  # a heading's text leaves raw text out
            else:
                name = name.lower()
                if name in _RAW_NAMES:
                    return None  # a script or style without its end tag
            if names:
                implied = implied_by(names[-1])
                if implied is not None and name in implied:
                    return None
            ident = None
            if attrs:
                if attrs[-1] == 47:  # `<a href=x/>`: an unquoted value or a self-closing tag
                    return None
                hint = (b"id" in attrs or b"ID" in attrs or b"Id" in attrs or b"iD" in attrs) and _ID_HINT.search(attrs)
                if hint:
                    ident = hint.group(1) or hint.group(2) or hint.group(3)
                    if not ident or _QUOTE.search(attrs, 0, hint.start()):
                        ident = _id_value(attrs)  # a quote before it, or no value: read every attribute
            closed = raw or self_closing or name in _VOID
            heading = name in _HEADINGS
            if heading or ident is not None:
                out.append([start, pos, ident, pos if heading and not closed else None])
                if closed:
                    if not (raw or self_closing):
                        void = len(out) - 1
                    continue
                names.append(name)
                listed_at.append(len(out) - 1)
            elif not closed:
                names.append(name)
                listed_at.append(-1)
            if len(names) > MAX_DEPTH:
                return None  # each listed element's row reads its whole range: bounded time
        elif end_tag:
            start = pos - len(end_tag)
            if void >= 0:
                out[void][1] = start
                void = -1
            if not names or names[-1] != close.lower():
                return None
            names.pop()
            index = listed_at.pop()
            if index >= 0:
                element = out[index]
                element[1] = pos
                if element[3] is not None:
                    element[3] = (element[3], start)
        elif bad:
            return None  # a `<` or `>` outside a tag, an `&` that is no entity
    if void >= 0:
        out[void][1] = len(data)
    # tree-sitter-html closes what is open at the end of the file (a missing `</html>`): fine
    # unless an element that is listed would end there
    return None if any(index >= 0 for index in listed_at) else out


def _id_value(attrs: bytes) -> bytes | None:
    """The value of the first ``id`` attribute with a non-empty value in a start tag's
    attribute text, as tree-sitter-html reads it, or ``None``."""
    for a in _ATTRIBUTE.finditer(attrs):
        if a.group(1).lower() == b"id":
            value = a.group(2) if a.group(2) is not None else a.group(3) if a.group(3) is not None else a.group(4)
            if value:
                return value
    return None


def _gap(tag) -> bytes:
    """A tag or comment inside a heading's text: a space when it holds whitespace, else nothing."""
    return b" " if _SPACE.search(tag.group()) else b""


def _symbols(data: bytes, text: str | None, found: list) -> list:
    """The rows, lines counted incrementally. A heading's text is its content with each tag and
    comment removed — replaced by a space when it holds whitespace — and whitespace collapsed:
    what the tree path's walk over its ``text`` and ``entity`` nodes gives (``html_text_walk``
    in lib/code/backends.py joins two texts with a space when whitespace, inside a tag or not,
    separates them) when raw text is not among them."""
    if text is None:  # not ASCII: offsets differ, read each line from the bytes
        sigs = [signature_at(data, start, end, "<!--") for start, end, _, _ in found]
    else:
        find = text.find
        sigs = clean_signatures([text[start:end if nl < 0 else nl].rstrip("\r")
                                 for start, end, _, _ in found for nl in (find("\n", start, end),)], "<!--")
    out = []
    count = data.count
    row, pos = 0, 0
    for (start, end, ident, content), sig in zip(found, sigs):
        row += count(b"\n", pos, start)
        pos = start
        last = row + count(b"\n", start, end)
        if data[end - 1] == 10 and last > row:  # a void element's range may end after a newline
            last -= 1
        if ident is not None:
            out.append(Symbol(ident.decode("utf-8"), "element", sig, start, end, row + 1, last + 1, doc=None))
        if content is not None:
            inner = data[content[0]:content[1]]
            if b"<" in inner:
                inner = _MARKUP.sub(_gap, inner)
            words = " ".join(inner.decode("utf-8").split())
            if words:
                out.append(Symbol(words, "heading", sig, start, end, row + 1, last + 1, doc=None))
    return out
