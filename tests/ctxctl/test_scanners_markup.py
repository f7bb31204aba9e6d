"""Header scanners of the markup languages (lib/code/scanners/markdown.py, css.py, html.py;
docs/ctxctl.md "Header scanners") held to the tree-sitter path on adversarial snippets and on
generated documents: every input either falls back (``None``) or yields the identical rows
(the oracle of tests/ctxctl/test_scanners.py, which also covers the real fixtures). Snippets the
scanner is built to answer must be answered, so a scanner that always fell back would fail."""
from __future__ import annotations

import random

import pytest

from lib.code import languages, scanners
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


@pytest.mark.parametrize("src", MD_ANSWERED)
def test_markdown_scanner_answers_and_agrees(src):
    check("x.md", src, answered=True)


@pytest.mark.parametrize("src", MD_ADVERSARIAL)
def test_markdown_scanner_falls_back_or_agrees_on_adversarial_snippets(src):
    check("x.md", src)


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


def test_markdown_scanner_agrees_on_generated_documents():
    answered = 0
    docs = list(generated(_MD_BLOCKS, 24, 600, "---\nlayout: x\n# yaml comment\n---"))
    for src in docs:
        answered += check("x.md", src) is not None
    assert answered >= len(docs) // 4, answered  # the scan answers a real share of them
