"""Header scanners of the markup languages (lib/code/scanners/markdown.py, css.py, html.py;
docs/ctxctl.md "Header scanners") held to the tree-sitter path on adversarial snippets and on
generated documents: every input either falls back (``None``) or yields the identical rows
(the oracle of tests/ctxctl/test_scanners.py, which also covers the real fixtures). Snippets the
scanner is built to answer must be answered, so a scanner that always fell back would fail."""
from __future__ import annotations

import os
import random

import pytest

from lib.code import languages, scanners, symbols
from tests.ctxctl.conftest import FIXTURES
from tests.ctxctl.test_scanners import rows, tree_rows


def scan(path: str, src: str | bytes):
    """``(scanner rows or None, tree rows)`` of ``src`` as the file ``path``."""
    data = src.encode("utf-8") if isinstance(src, str) else src
    got = scanners.outline(languages.backend_for(path), data)
    return (None if got is None else rows(got)), tree_rows(path, data)


def check(path: str, src, answered: bool | None = None):
    """Assert the scanner falls back or agrees; ``answered`` True/False also pins which."""
    got, want = scan(path, src)
    if answered is not None:
        assert (got is not None) is answered, (src, got, want)
    if got is not None:
        assert got == want, src
    return got


# -- Markdown ----------------------------------------------------------------------------------

MD_ANSWERED = [
    "# Title\n\ntext\n\n## Sub\n\nmore\n\n# Next\n",
    "```sh\n# a shell comment, not a heading\n```\n\n# Real\n",
    "~~~~\n~~~\n# still code\n~~~~\n# after\n",
    "```foo```\n# inline code is no fence\n",
    "---\nlayout: page\n# a YAML comment\n---\n\n# Page\n",
    "+++\ntitle = 'x'\n+++\n# Toml\n",
    "Title\n=====\n\nbody\n\n# Then\n",
    "Two line\nsetext title\n---\n",
    "# A\n\nNot listed\n---\n\n## B\n",  # a setext heading after the first block opens no section
    "#5 bolt\n#hashtag\n####### seven\n\\# escaped\n# ok\n",
    "# closing ###\n## C# and F#\n#\n# after empty\n",
    "    # indented code\n\n# h\n",
    "- item\n- item\n\n# After the list\n",
    "- item\n\n  ```sh\n  # comment in a listed fence\n  ```\n\n# After\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n# Table then heading\n",
    "<!-- c -->\n\n# After a comment\n",
    "Text with // slashes\n\n# Heading // with slashes\n",
    "# Ünïcode ✓\n\ntext\n",
    "# A\n\n\n",
]
MD_ADVERSARIAL = [
    "<div>\n# inside html\n</div>\n\n# out\n",
    "<!--\n\n# hidden\n-->\n# shown\n",
    "- item\n  # heading in a list item\n",
    "> # quoted heading\n\n# top\n",
    "- a\n===\n",  # lazy continuation
    "```\nx\n- ```\n# lh\n",  # tree-sitter closes a fence at `- ```` (CommonMark does not)
    "```\nunterminated\n# no\n",
    "  # indented heading\n    ```\n   ## three\n",
    "# t  ",  # tree-sitter reads a lone heading without a newline as an error
    "# A\n#",
    "\ufeff# bom\n",
    "# crlf\r\n\r\ntext\r\n",
    b"# bad \xff utf-8\n",
    "<script>\n# x\n</script>\n# y\n",
    "1. one\n\n   ```\n# col0\n   ```\n",
    "\t# tab\n",
]



_MD_TEXT = ["Some text.", "More `code` and *em*.", "text with # hash", "é ü", "Ends with two  ", "trailing \\",
            "<b>inline</b> html", "x | y", "2020 was a year", "@user said"]
_MD_BLOCKS = [
    lambda r: "# " + r.choice(_MD_TEXT), lambda r: "## Title %d" % r.randint(1, 9), lambda r: "### Sub ###",
    lambda r: "#### Deep", lambda r: "#", lambda r: "  # indented",
    lambda r: "\n".join(r.choice(_MD_TEXT) for _ in range(r.randint(1, 3))),
    lambda r: "```" + r.choice(["", "go", "sh"]) + "\n" + "\n".join(
        r.choice(["# comment", "code()", "", "  indented", "---", "===", "<div>", "- x", "- ```"])
        for _ in range(r.randint(0, 4))) + r.choice(["\n```", "\n```", ""]),
    lambda r: "~~~\n# not\n~~~",
    lambda r: "\n".join(r.choice(["- item", "* item", "1. item", "- [ ] task", "  continued", "- # h", "> q"])
                        for _ in range(r.randint(1, 4))),
    lambda r: "- item\n\n  ```sh\n  # comment\n  cmd\n  ```",
    lambda r: "> quoted\n> more", lambda r: "<!-- comment -->", lambda r: "<div align=\"center\">\n<img src=x>\n</div>",
    lambda r: "<!--\n# hidden\n-->", lambda r: "| a | b |\n|---|---|\n| 1 | 2 |", lambda r: "    code\n    # more",
    lambda r: "---", lambda r: "***", lambda r: r.choice(_MD_TEXT) + "\n" + r.choice(["===", "---", "-"]),
    lambda r: "[ref]: http://example.com", lambda r: "{% raw %}\n{{ x }}\n{% endraw %}",
]


def generated(blocks, seed: int, count: int, front: str = ""):
    """``count`` documents of random blocks (deterministic: ``seed``)."""
    rnd = random.Random(seed)
    for _ in range(count):
        parts = [rnd.choice(blocks)(rnd) for _ in range(rnd.randint(1, 10))]
        if front and rnd.random() < 0.2:
            parts.insert(0, front)
        yield rnd.choice(["\n\n", "\n", "\n\n\n"]).join(parts) + rnd.choice(["\n", "\n", "\n\n", ""])


def answered_share(path: str, docs: list) -> float:
    """Check every generated document (:func:`check`); the share the scanner answered."""
    return sum(check(path, src) is not None for src in docs) / len(docs)


def test_markdown_scanner_agrees_on_generated_documents():
    docs = list(generated(_MD_BLOCKS, 24, 600, "---\nlayout: x\n# yaml comment\n---"))
    assert answered_share("x.md", docs) >= 0.25  # the scan answers a real share of them


# -- CSS ---------------------------------------------------------------------------------------

CSS_ANSWERED = [
    "html {\n  line-height: 1.15; /* 1 */\n  -webkit-text-size-adjust: 100%; /* 2 */\n}\n",
    "/* a { brace in a comment */\na[title=\"{\"] { content: \"}\"; }\nb { c: d }\n",
    "a,\nb,\nc { margin: 0.67em 0 }\n",
    "@media (max-width: 1px) {\n  .x > y { a: b }\n  @supports (display: grid) { z { c: d } }\n}\n",
    "@keyframes spin { from { transform: rotate(0deg) } to { transform: rotate(360deg) } }\nq { r: s }\n",
    "@font-face { font-family: x; src: url(a.woff2) format(\"woff2\"), url(http://x/a.woff); }\n.k { l: m }\n",
    "@charset \"utf-8\";\n@import url(\"x.css\") screen;\np { q: r }\n",
    "a /* trailing */ { b: c }\n",
    "a{b:c}d{e:f}\n",
    "button::-moz-focus-inner, [type=\"button\"]:-moz-focusring { outline: 1px dotted ButtonText; }\n",
    "a { background: url(data:image/png;base64,AAA=) no-repeat; font: 12px/1.5 \"Helvetica Neue\", Arial; }\n",
    "a { b: c }\r\n\r\nd\r\n{\r\n  e: f;\r\n}\r\n",
    "a { b: c }\n/* \u00e9 in a comment */\n",
]
CSS_ADVERSARIAL = [
    ".\u00e9 { a: b }\n",
    "a { *zoom: 1; _height: 1px; filter: progid:DXImageTransform.Microsoft.gradient(startColorstr=#1); }\nb {}\n",
    "// c {\nd { e: f }\n",
    "a { b: c // d\n}\n",
    "a { b { c: d } }\n",  # nesting
    ".a { &:hover { b: c } }\n",
    "$x: 1px;\n.a { b: $x; }\n",
    "a, /* mid */ b { c: d }\n",
    "/* unterminated\na { b: c }\n",
    "a { content: \"unterminated }\n",
    "a { b: c }\n}\n",
    "a { b: c\n",
    "[href$=\".pdf\" i] { a: b }\n",
    "@page :first { margin: 1in; }\n",
    "@unknown x { a { b: c } }\n",
    "<!-- a { b: c } -->\n",
    "a\\:b { c: d }\n",
    b"a { b: \xff }\n",
]



_CSS_SELECTORS = ["a", "html", ".x", "#id", "a:hover", "a::before", "[title]", "[href$=\".pdf\"]", "a > b", "a + b",
                  "a ~ b", "ul li", "*", "a, b", "a,\nb", ".-x", "li:nth-child(2n+1)", "a:not(.b, .c)", "*zoom", "&:hover",
                  "a:", "a..b", "#1", "a /* c */", "/* c */ a", "a /* c */ , b", "input[type=\"search\"]", ":root"]
_CSS_VALUES = ["red", "1px", "0 0 0 0", "100%", "#fff", "#ggg", "rgba(0,0,0,.5)", "url(x.png)", "url(\"a{b}\")",
               "url(http://x/y)", "url(data:image/png;base64,AAA)", "calc(100% - 2px)", "\"str\"", "'s;t'", "bold !important",
               "12px/1.5 a, b", "progid:DX(a=1)", "x // y", "a /* c */", "\"\\201C\"", "", "a:b", "var(--x)", "x)", "(x",
               "a * b", "U+0000-00FF"]
_CSS_PROPERTIES = ["color", "margin", "-webkit-appearance", "--x", "*zoom", "_height", "a b"]


def _css_rule(r):
    decls = [r.choice(_CSS_PROPERTIES) + r.choice([": ", ":", " : "]) + r.choice(_CSS_VALUES) for _ in range(r.randint(0, 4))]
    body = r.choice(["; ", ";\n  ", "; /* 1 */\n  "]).join(decls) + r.choice([";", "", ";;"])
    return r.choice(_CSS_SELECTORS) + r.choice([" ", "", "\n"]) + "{" + r.choice([" ", "\n  "]) + body + r.choice([" ", "\n"]) + "}"


def _css_item(r, depth=0):
    k = r.random()
    if k < 0.6:
        return _css_rule(r)
    if k < 0.7 and depth < 2:
        return "@media screen {\n" + "\n".join(_css_item(r, depth + 1) for _ in range(r.randint(0, 3))) + "\n}"
    return r.choice(["@keyframes k { from { a: b } 50% { c: d } to { e: f } }", "@font-face { font-family: x; }",
                     "@import url(\"x.css\");", "/* c { */", "// line {", "/* unterminated", "}", "{", "\"str",
                     "a { b { c: d } }", "@layer base { a { b: c } }", "@page :first { margin: 1in; }"])


def test_css_scanner_agrees_on_generated_stylesheets():
    rnd = random.Random(24)
    docs = [rnd.choice(["\n", "\n\n", " ", "\r\n"]).join(_css_item(rnd) for _ in range(rnd.randint(1, 6)))
            + rnd.choice(["\n", ""]) for _ in range(500)]
    assert answered_share("x.css", docs) >= 0.05


# -- HTML --------------------------------------------------------------------------------------

HTML_ANSWERED = [
    "<!DOCTYPE html>\n<html>\n<body>\n<h1 id=\"top\">Title <code>x</code></h1>\n<div id=main>\n<p>text</p>\n</div>\n</body>\n</html>\n",
    "<h2 class=\"a b\"><code>a</code>, <code>b</code></h2>\n",
    "<h3>x<b class=y>z</b></h3>\n",  # a space where a tag holds whitespace, as the tree path's walk joins texts
    "<h4>a &amp; b</h4><h5>R&D</h5>\n",
    "<!-- <h1 id=no>in a comment</h1> -->\n<h1>yes</h1>\n",
    "<script id=s>if (a < b && c > d) { x = '<h1 id=no>' }</script>\n<style id=st>a > b { c: d }</style>\n",
    "<div>\n  <input type=number id=\"in\" value=5>\n  text\n</div>\n",  # a void element runs to the next tag
    "<p><br id=b>\n<!-- c --></p>\n<img id=i>\n\n",
    "<div id=\"self\" /><span ID='Up'>x</span>\n",
    "<a title=\" id=fake\" id=real>x</a>\n",
    "<section id=\"\" id=second>x</section>\n",
    "<html>\n<body>\n<h1 id=a>unclosed html and body at the end</h1>\n",
    "<h1>\u00e9t\u00e9</h1>\n",
]
HTML_ADVERSARIAL = [
    "<ul><li id=a>one<li id=b>two</ul>\n",  # li closed implicitly
    "<p id=p>para<div>block</div></p>\n",  # p closed implicitly by a div
    "<div id=a><span>x</div>\n",
    "<div id=a>unclosed\n",
    "</div><h1>x</h1>\n",
    "<h1>a < b</h1>\n",
    "<h1>a > b</h1>\n",
    "<h1>fish & chips</h1>\n",
    "<h1>x<script>y</script></h1>\n",
    "<script>never closed\n<h1>x</h1>\n",
    "<!-- never closed\n<h1>x</h1>\n",
    "<![CDATA[<h1>x</h1>]]>\n",
    "<?xml version=\"1.0\"?><h1>x</h1>\n",
    "<a href=x/>y</a><h1 id=q>z</h1>\n",
    "<table><tr><td id=c>1<td>2</table>\n",
    b"<h1>\xff</h1>\n",
]



_HTML_TEXT = ["text", "a &amp; b", "R&D", "x > y", "a < b", "\u00e9", "  ", "\n  ", "&frac12;", "& ", "line\nbreak"]
_HTML_TAGS = ["div", "span", "p", "section", "ul", "li", "a", "code", "table", "tr", "td", "custom-el", "DIV", "b"]


def _html_attributes(r):
    return "".join(" " + r.choice(['id="x%d"' % r.randint(0, 9), "id=u%d" % r.randint(0, 9), "id=''", 'ID="Up"',
                                    'class="c d"', 'title=" id=fake"', "data-id=z", "hidden", 'href="a>b"', "id", "x=a/"])
                   for _ in range(r.randint(0, 3)))


def _html_node(r, depth=0):
    k = r.random()
    if k < 0.25:
        return r.choice(_HTML_TEXT)
    if k < 0.4:
        h = "h%d" % r.randint(1, 6)
        inner = "".join(_html_node(r, 3) for _ in range(r.randint(0, 3)))
        return "<%s%s>%s</%s>" % (h, _html_attributes(r), inner, r.choice([h, h, h.upper(), "div"]))
    if k < 0.5:
        return "<%s%s%s>" % (r.choice(["br", "img", "input", "hr", "meta"]), _html_attributes(r), r.choice(["", "/", " /"]))
    if k < 0.55:
        return r.choice(["<!-- c -->", "<!-- <h1>x</h1> -->", "<!--", "<script>if (a < b) {}</script>",
                         "<style>a > b {}</style>", "<script id=s>x</script>", "<script>", "</div>", "<div id=self />"])
    tag = r.choice(_HTML_TAGS)
    inner = "".join(_html_node(r, depth + 1) for _ in range(r.randint(0, 3))) if depth < 4 else ""
    return "<%s%s>%s%s" % (tag, _html_attributes(r), inner, r.choice(["</%s>" % tag] * 6 + ["", "</%s>" % tag.upper()]))


def test_html_scanner_agrees_on_generated_documents():
    rnd = random.Random(24)
    docs = [rnd.choice(["", "<!DOCTYPE html>\n", "<!doctype html>\n<html>\n"])
            + rnd.choice(["\n", "", "\n  "]).join(_html_node(rnd) for _ in range(rnd.randint(1, 6)))
            + rnd.choice(["\n", "", "</html>\n"]) for _ in range(500)]
    assert answered_share("x.html", docs) >= 0.05


ANSWERED = [("x.md", s) for s in MD_ANSWERED] + [("x.css", s) for s in CSS_ANSWERED] + [("x.html", s) for s in HTML_ANSWERED]
ADVERSARIAL = ([("x.md", s) for s in MD_ADVERSARIAL] + [("x.css", s) for s in CSS_ADVERSARIAL]
               + [("x.html", s) for s in HTML_ADVERSARIAL])


@pytest.mark.parametrize("path,src", ANSWERED)
def test_a_markup_scanner_answers_and_agrees(path, src):
    check(path, src, answered=True)


@pytest.mark.parametrize("path,src", ADVERSARIAL)
def test_a_markup_scanner_falls_back_or_agrees_on_adversarial_snippets(path, src):
    check(path, src)


def test_clean_signatures_equals_clean_signature_line_by_line():
    lines = []
    for root, _, names in os.walk(FIXTURES):
        for name in names:
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as fh:
                lines += fh.read().split("\n")
    lines += ["a" * 200 + " {", "x => ", "", "   ", "a // b", "a /* b", "a = =", "\x1c a \x1f", "\u00a0x\u2003", "\t", "a\0b"]
    rnd = random.Random(24)
    for prefix in ("//", "/*", "<!--", "", "#"):
        for _ in range(100):
            chunk = rnd.sample(lines, 40)
            assert symbols.clean_signatures(chunk, prefix) == [symbols.clean_signature(line, prefix) for line in chunk]


# -- arbitrary input ----------------------------------------------------------------------------

_PIECES = {
    "x.md": ["# ", "## ", "#", "\n", "\n\n", "```", "~~~", "    ", "  ", "- ", "> ", "1. ", "<div>", "<!--", "-->", "===",
             "---", "+++", "text", "\t", "|", "[a]: b", "\\", "é", "`"],
    "x.css": ["a", ".b", "#c", " ", "\n", "{", "}", ";", ":", ",", "/*", "*/", "//", "\"", "'", "@media x", "@keyframes k",
              "(", ")", "url(", "0", "px", "%", "!important", "*", "_", "-", "&", "$", "\\", "[x]", "=", "é"],
    "x.html": ["<", ">", "</", "/>", "div", "h1", "h2", "p", "li", "br", "input", "script", "style", " id=", " ID='", "\"",
               "'", "x", " ", "\n", "&amp;", "&", "<!--", "-->", "<!DOCTYPE html>", "é", "=", "/"],
}


@pytest.mark.parametrize("path", ["x.md", "x.css", "x.html"])
def test_a_markup_scanner_falls_back_or_agrees_on_arbitrary_input(path):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.lists(st.sampled_from(_PIECES[path]), max_size=40))
    def run(pieces):
        check(path, "".join(pieces))

    @settings(max_examples=100, deadline=None, derandomize=True)
    @given(st.binary(max_size=300))
    def run_bytes(data):
        check(path, data)

    run()
    run_bytes()
