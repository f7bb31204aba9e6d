"""``symbol --compact``: a symbol's header and closer with its body folded into one marker line.

The marker is ``<indent><comment prefix> ... [N lines omitted]`` (``/* … */`` for CSS) and the
result must re-parse without errors, so folding is conservative: whenever a rule below cannot
be satisfied the symbol comes back unchanged.

* Single-line symbols, Markdown sections, symbols without a body (data literals: template
  strings, JSX, array/struct literals) pass through unchanged.
* ``#define`` macros fold after their first line; no closer is kept (a ``\\`` continuation
  would splice it into the directive).
* Brace bodies (anchored on the AST body node): keep the header through the ``{`` line, fold
  the middle, keep the closing line (``} Point;``) and a ``;`` just after the node. Bail out on
  code after ``{``, an inline closer, a closer closing more braces than the header opened, or an
  unclosed ``/*`` in the header.
* Keyword/indent bodies (Python, Ruby, Lua): fold from the body start, keep ``end`` closers;
  Python keeps decorators, multi-line signatures and (a deliberate addition) the docstring,
  which the slides below keep naturally. A stub on the signature line passes through.
* Safety slides move the fold start down past operator/separator line ends and starts, open
  multi-line strings, unbalanced ``(``/``[``, block comments and lone-keyword lines; a
  preprocessor line inside the folded region (in languages whose comments are not ``#``)
  cancels the fold.

The output ends with a newline and uses CRLF when the source does.
"""
from __future__ import annotations

import re

from lib.code.source import line_of

_PREV_END_OPS = tuple("+-*/%=([,&|~^<")
_NEXT_START_OPS = tuple("+-/=.:&|?<;\"'")
_PREPROC = re.compile(r"^\s*#\s*[A-Za-z]")
_LONE_WORD = re.compile(r"^[A-Za-z_]\w*$")
_QUOTE_STRING_LANGUAGES = frozenset({"python", "ruby", "lua", "javascript", "typescript", "css"})
_CHAR_LITERAL = re.compile(r"'(?:\\.[^']*|[^\\'])'")


def _marker(indent: str, prefix: str, n: int) -> str:
    noun = "line" if n == 1 else "lines"
    if prefix == "/*":
        return f"{indent}/* ... [{n} {noun} omitted] */"
    if prefix == "<!--":
        return f"{indent}<!-- ... [{n} {noun} omitted] -->"
    return f"{indent}{prefix} ... [{n} {noun} omitted]"


class _Scanner:
    """Per-line lexical state at each line end: open multi-line string, open block comment,
    ``(``/``[`` depth. Comments and char literals are masked so quotes and brackets inside
    them do not count."""

    def __init__(self, line_comment: str, hash_comments: bool, quote_strings: bool):
        self.line_comment = line_comment
        self.hash = hash_comments
        self.quotes = quote_strings
        self.string = None      # the open quote: '"', '`', '"""' or "'''"
        self.block = False
        self.depth = 0

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if self.block:
                j = line.find("*/", i)
                if j < 0:
                    return
                self.block, i = False, j + 2
                continue
            if self.string:
                q = self.string
                if c == "\\":
                    i += 2
                    continue
                if line.startswith(q, i):
                    self.string, i = None, i + len(q)
                    continue
                i += 1
                continue
            if self.line_comment and line.startswith(self.line_comment, i):
                return
            if not self.hash and line.startswith("/*", i):
                self.block, i = True, i + 2
                continue
            if line.startswith('"""', i) or line.startswith("'''", i):
                if self.hash:
                    self.string, i = line[i:i + 3], i + 3
                    continue
            if c in "\"`":
                self.string, i = c, i + 1
                continue
            if c == "'":
                if self.quotes:
                    j = line.find("'", i + 1)
                    i = j + 1 if j > 0 else n
                    continue
                m = _CHAR_LITERAL.match(line, i)
                i = m.end() if m else i + 1
                continue
            if c in "([":
                self.depth += 1
            elif c in ")]":
                self.depth = max(0, self.depth - 1)
            i += 1


def _code_part(line: str, line_comment: str) -> str:
    if line_comment:
        idx = line.find(line_comment)
        if idx >= 0:
            line = line[:idx]
    return line.rstrip()


def _slide(lines: list, first: int, last: int, states: list, prefix: str, preproc_lang: bool) -> int:
    """Smallest safe fold start in ``[first, last]``; ``last + 1`` when none is safe."""
    line_comment = prefix if prefix in ("//", "#", "--") else ""
    f = first
    while f <= last:
        prev = _code_part(lines[f - 1], line_comment).rstrip()
        nxt = lines[f].strip()
        string, block, depth = states[f - 1]
        bad = (string is not None or block or depth > 0
               or (prev.endswith(_PREV_END_OPS) and not prev.endswith(("*/", "//")))
               or (prev.endswith("\\") and not (preproc_lang and prev.lstrip().startswith("#")))
               or nxt.startswith(_NEXT_START_OPS)
               or bool(_LONE_WORD.match(prev.strip())))
        if not bad:
            return f
        f += 1
    return f


def compact(parsed, sym, prefix: str) -> str:
    """The compact view of ``sym`` (a :class:`~lib.code.symbols.Symbol`) in ``parsed``."""
    data = parsed.data
    raw = data[sym.start:sym.end].decode("utf-8", "replace")
    if "\n" not in raw.rstrip("\r\n") or parsed.language == "markdown":
        return raw
    spec = sym.spec
    node = spec.node if spec is not None else None
    eol = "\r\n" if "\r\n" in raw else "\n"
    lines = [ln.rstrip("\r") for ln in raw.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    sym_line = sym.start_line
    preproc_lang = parsed.language in ("c", "cpp", "csharp")

    if node is not None and node.type in ("preproc_def", "preproc_function_def"):
        n = len(lines) - 1
        indent = re.match(r"\s*", lines[0]).group(0)
        return eol.join([lines[0], _marker(indent, prefix, n)]) + eol

    body = spec.body if spec is not None else None
    if body is None:
        return raw
    starts_idx = _line_starts(data)
    body_first = line_of(starts_idx, body.start_byte) - sym_line
    body_last = line_of(starts_idx, max(body.start_byte, body.end_byte - 1)) - sym_line
    body_text = data[body.start_byte:body.end_byte].decode("utf-8", "replace")
    hash_comments = prefix == "#"
    scanner = _Scanner(prefix if prefix in ("//", "#", "--") else "", hash_comments,
                       parsed.language in _QUOTE_STRING_LANGUAGES)
    states = []
    for line in lines:
        scanner.feed(line)
        states.append((scanner.string, scanner.block, scanner.depth))

    if body_text.lstrip().startswith("{") and body_text.rstrip().endswith("}"):
        open_line, close_line = body_first, body_last
        if open_line >= len(lines) or close_line >= len(lines) or close_line - open_line < 2:
            return raw
        brace = body.start_byte + (len(body_text) - len(body_text.lstrip()))
        line_end = data.find(b"\n", brace)
        after = data[brace + 1:line_end if line_end >= 0 else len(data)].decode("utf-8", "replace").rstrip("\r")
        if _code_part(after, "//").strip():
            return raw
        if not lines[close_line].lstrip().startswith("}"):
            return raw
        header = lines[:open_line + 1]
        closer = lines[close_line:]
        header_text = "\n".join(header)
        if header_text.count("/*") > header_text.count("*/"):
            return raw
        closer_text = "\n".join(closer)
        opened = header_text.count("{") - header_text.count("}")
        closed = closer_text.count("}") - closer_text.count("{")
        if closed > opened:
            return raw
        first, last = open_line + 1, close_line - 1
    else:
        if prefix not in ("#", "--"):
            return raw
        if body_first == 0:
            return raw  # a stub on the signature line: `def f(): ...`
        first = body_first
        if parsed.language == "python":
            last = len(lines) - 1
        else:
            last = body_last
            if last >= len(lines) - 1:
                return raw
        header, closer = lines[:first], lines[last + 1:]
    if preproc_lang and any(_PREPROC.match(lines[i]) for i in range(first, last + 1)):
        return raw
    start = _slide(lines, first, last, states, prefix, preproc_lang)
    if start > last:
        return raw
    header = lines[:start]
    folded = lines[start:last + 1]
    indent_src = next((ln for ln in folded if ln.strip()), folded[0])
    indent = re.match(r"[ \t]*", indent_src).group(0)
    out = header + [_marker(indent, prefix, len(folded))] + closer
    text = eol.join(out)
    tail = data[sym.end:sym.end + 64].decode("utf-8", "replace")
    m = re.match(r"[ \t]*;", tail)
    if m and not text.rstrip().endswith(";"):
        text = text.rstrip() + ";"
    return text + eol


def _line_start(data: bytes, offset: int) -> int:
    return data.rfind(b"\n", 0, offset) + 1


def _line_starts(data: bytes) -> list:
    starts = [0]
    i = data.find(b"\n")
    while i != -1:
        starts.append(i + 1)
        i = data.find(b"\n", i + 1)
    return starts
