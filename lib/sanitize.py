"""Sanitization of text read from the lake or the cache before it reaches an agent (invariant 9).

Strips zero-width, bidirectional-control and C0/C1 control characters (keeping ``\\n`` and
``\\t`` where multi-line text is allowed), and bounds length with a visible marker so a
truncation is never silent. Standard library only.
"""
from __future__ import annotations

TRUNCATION_MARKER = "…[truncated]"
# zero-width (U+200B-U+200F incl. LRM/RLM), bidi embeddings/overrides/isolates (U+202A-U+202E,
# U+2066-U+2069), word joiner & invisible operators (U+2060-U+2064), BOM, soft hyphen, Mongolian
# vowel separator, C0 (except \t \n) and C1 controls, DEL, tag characters (U+E0000-U+E007F).
# (A str.translate table, not a regex: the hook sanitizes the briefing and must not import re.)
_RANGES = [(0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x180E, 0x180E), (0x200B, 0x200F),
           (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x2069), (0xFEFF, 0xFEFF), (0xE0000, 0xE007F)]
_TABLE = {cp: None for lo, hi in _RANGES for cp in range(lo, hi + 1)}
_FOLD = {**_TABLE, 0x0A: 0x20, 0x0D: 0x20, 0x09: 0x20}


FENCE_NAME = "ctxlake-briefing"
"""The tag name of the fence around the session-start briefing (``<ctxlake-briefing>``)."""
FENCE_DEFUSED = "[ctxlake: fence name removed]"
_FENCE_LETTERS = "ctxlakebriefing"
_FENCE_MAX_GAP = 12


_HEXDIGITS = frozenset("0123456789abcdef")


def _escape_len(low: str, i: int) -> int:
    """Length of the escape sequence starting at ``low[i]`` (``&#x2d;``, ``&lt;``, ``\\u002d``,
    ``\\x2d``, ``%2d``), or 0: its letters are not letters of the text."""
    c = low[i]
    if c == "&":
        j = low.find(";", i + 1, i + 12)
        return j - i + 1 if j > i + 1 and low[i + 1:j].lstrip("#").isalnum() else 0
    if c == "\\" and low[i + 1:i + 2] in ("u", "x"):
        n = 4 if low[i + 1] == "u" else 2
        return n + 2 if len(low) >= i + 2 + n and all(h in _HEXDIGITS for h in low[i + 2:i + 2 + n]) else 0
    if c == "%":
        return 3 if len(low) >= i + 3 and all(h in _HEXDIGITS for h in low[i + 1:i + 3]) else 0
    return 0


def _letters(low: str) -> list:
    """``[(index, letter)]`` of the ASCII letters of ``low`` outside escape sequences."""
    out, i, n = [], 0, len(low)
    while i < n:
        c = low[i]
        if c in "&\\%":
            k = _escape_len(low, i)
            if k:
                i += k
                continue
        if "a" <= c <= "z":
            out.append((i, c))
        i += 1
    return out


def defuse_fence(text: str) -> str:
    """``text`` with every spelling of the briefing fence's name replaced by
    :data:`FENCE_DEFUSED`, so captured text shown to another agent can neither open nor close
    the fence (issue #17).

    A spelling is the letters ``ctxlakebriefing`` in order, case-insensitive after NFKC
    (fullwidth ``＜／ｃｔｘ…``), with at most 12 other characters between two letters: dashes,
    spaces, HTML entities (``&#45;``), ``\\u002d`` escapes and URL encoding all count; words
    between (``ctxlake fleet briefing``) do not. Invisible characters are removed by
    :func:`clean` first. Standard library only, no ``re`` (the hook calls it)."""
    low = text.lower()
    if "ctx" not in low and "ｃ" not in low and "&#" not in low and "\\u" not in low:
        return text
    import unicodedata

    norm = unicodedata.normalize("NFKC", text)
    letters = _letters(norm.lower())
    folded = "".join(c for _, c in letters)
    spans, pos = [], folded.find(_FENCE_LETTERS)
    while pos >= 0:
        idx = [letters[k][0] for k in range(pos, pos + len(_FENCE_LETTERS))]
        if all(b - a - 1 <= _FENCE_MAX_GAP for a, b in zip(idx, idx[1:])):
            spans.append((idx[0], idx[-1] + 1))
        pos = folded.find(_FENCE_LETTERS, pos + 1)
    if not spans:
        return text
    out, last = [], 0
    for a, b in spans:
        out.append(norm[last:a])
        out.append(FENCE_DEFUSED)
        last = b
    out.append(norm[last:])
    return "".join(out)


def clean(text: str, max_chars: int = 4000, single_line: bool = False) -> str:
    """Return ``text`` without invisible/control characters and without the briefing fence's
    name (:func:`defuse_fence`), at most ``max_chars`` characters (plus the marker
    ``…[truncated]`` when cut). ``single_line`` folds newlines to spaces, so a value cannot
    forge a heading in a rendered block (reference bug 12.2 #31)."""
    if not isinstance(text, str):
        text = str(text)
    if single_line:
        text = " ".join(text.translate(_FOLD).split(" ")).strip()
        while "  " in text:
            text = text.replace("  ", " ")
    else:
        text = text.translate(_TABLE)
    text = defuse_fence(text)
    if len(text) > max_chars:
        text = text[:max_chars] + TRUNCATION_MARKER
    return text


def for_terminal(value, max_chars: int = 300) -> str:
    """``value`` (any type; ``None`` stays ``"None"``) as one line a CLI may print to a terminal:
    :func:`clean` with ``single_line``, so no control character (ESC, BEL, CSI, C1) of text another
    fleet member wrote into the store reaches the operator's terminal (an agent id or lease
    reason could otherwise retitle or clear it; docs/security.md "Terminal output"). Every CLI
    render of store- or cache-sourced text goes through it; ``--json`` output is escaped by
    JSON itself."""
    return clean(value if isinstance(value, str) else str(value), max_chars, single_line=True)


_INF = float("inf")


def clean_deep(value, max_chars: int = 4000):
    """Apply :func:`clean` to every string (keys too) at any depth of a JSON-like value; a float
    that is not finite (NaN, ±Infinity: not JSON, RFC 8259 §6) becomes ``None``."""
    if isinstance(value, str):
        return clean(value, max_chars)
    if isinstance(value, list):
        return [clean_deep(v, max_chars) for v in value]
    if isinstance(value, dict):
        return {clean(k, 200): clean_deep(v, max_chars) for k, v in value.items()}
    if isinstance(value, float) and (value != value or value in (_INF, -_INF)):
        return None
    return value


_ANSI = None


def strip_ansi(text: str) -> str:
    """``text`` without ANSI/VT100 escape sequences (CSI ``ESC [ … final``, OSC ``ESC ] … BEL/ST``,
    two-character ``ESC x``), as terminals and tool output emit them (ECMA-48). Fast path: text
    without ``ESC`` is returned as is, without compiling a regex."""
    global _ANSI
    if "\x1b" not in text and "\x9b" not in text:
        return text
    if _ANSI is None:
        import re

        _ANSI = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()*+][0-~]|\x1b[@-Z\\-_]")
    return _ANSI.sub("", text)


URL_SECRET_MASK = "***"


def has_url_password(url) -> bool:
    """True when ``url`` (``scheme://user:password@host...``) carries a password in its userinfo."""
    return isinstance(url, str) and mask_url(url) != url


def mask_url(url: str) -> str:
    """``url`` with the password of its userinfo replaced by :data:`URL_SECRET_MASK`
    (``redis://:Hunter2@h:6379/0`` → ``redis://:***@h:6379/0``; the user name, host, path and
    query stay), the one form in which every CLI and daemon shows a store URL (docs/security.md:
    the password belongs in ``REDIS_PASSWORD``). The userinfo ends at the last ``@`` before the
    path (RFC 3986 §3.2.1; a raw ``@`` in a password is masked with it). Anything else passes
    unchanged; never raises."""
    if not isinstance(url, str) or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    end = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    authority = rest[:end]
    if "@" not in authority:
        return url
    userinfo, host = authority.rsplit("@", 1)
    if ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:{URL_SECRET_MASK}@{host}{rest[end:]}"
