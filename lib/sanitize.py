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
_LOOKALIKES = {
    "a": "аɑαａ@ᴀꓮᎪ", "b": "ьЬƅᏏвʙꓐᏴ", "c": "сϲᴄⅽςꓚᏟ", "e": "еєҽ℮εᴇꓰᎬ", "f": "ғẝꞙꜰꓝ", "g": "ɡɢցǥꓖᏀ",
    "i": "іıɩιӀΙїíìîï!¡ɪꓲᎥ", "k": "кκĸᴋꓗᏦ", "l": "ӏǀ1|ⅼℓΙIʟꓡᏞ", "n": "пոɴηꓠ", "r": "гᴦʀꭇꓣᎡ",
    "t": "тτᴛꓔᎢ", "x": "хχ×ⅹꓫ",
}
"""Characters that read as a letter of the fence's name without being it, by letter: the
Cyrillic, Greek, Armenian, Lisu, Cherokee, small-capital and Latin-extended entries of
Unicode's confusables (UTS #39) for ``c t x l a k e b r i f n g`` (Lisu alone spells the whole
name: ``ꓚꓔꓫꓡꓮꓗꓰ``), the digit ``1`` and ``|``/``I`` for ``l``, ``!`` for ``i`` (a capital
``I`` reads as ``l`` in a sans-serif font). Fullwidth, mathematical and circled forms and
accented letters need no entry: each character is also read through NFKD without its combining
marks."""
_READS_AS: dict = {}
for _latin, _alikes in _LOOKALIKES.items():
    for _ch in _alikes:
        _READS_AS[_ch] = _READS_AS.get(_ch, "") + _latin
_FOLD_CACHE: dict = {}
_FORMS = [letter + _LOOKALIKES.get(letter, "").lower() for letter in sorted(set(_FENCE_LETTERS))]
"""Per letter of the fence's name, every lowercase form that reads as it (:func:`_may_spell_fence`)."""


def _reads_as(ch: str) -> tuple:
    """The lowercase ASCII letters ``ch`` reads as, one string of alternatives per letter (``()``
    when none): itself (``I`` → ``("il",)``), its NFKD base letters (``ｃ`` ``ⓒ`` ``𝐜`` ``ç`` →
    ``("c",)``; ``ﬁ`` → ``("f", "i")``), its lookalikes (:data:`_LOOKALIKES`: ``с`` → ``("c",)``)."""
    got = _FOLD_CACHE.get(ch)
    if got is None:
        import unicodedata

        base = [c for c in unicodedata.normalize("NFKD", ch).lower() if "a" <= c <= "z"]
        alike = _READS_AS.get(ch, "") + _READS_AS.get(ch.lower(), "")
        if len(base) > 1:
            got = tuple(base)
        elif base or alike:
            got = ("".join(dict.fromkeys(base + list(alike))),)
        else:
            got = ()
        _FOLD_CACHE[ch] = got
    return got


def _decoded(text: str, i: int) -> tuple[str, int]:
    """``(character, length)`` of the escape sequence at ``text[i]`` (``&#99;``, ``&#x63;``,
    ``\\u0063``, ``\\x63``, ``%63``), or ``("", length)`` for a named HTML entity (``&lt;``),
    or ``("", 0)`` when none starts there. An escaped letter is a letter of the text (issue #17:
    ``br&#105;efing`` spells the fence too)."""
    c = text[i]
    if c == "&":
        j = text.find(";", i + 1, i + 12)
        body = text[i + 1:j].lower() if j > i + 1 else ""
        if not body.lstrip("#").isalnum():
            return "", 0
        try:
            if body.startswith("#x"):
                return chr(int(body[2:], 16)), j - i + 1
            if body.startswith("#"):
                return chr(int(body[1:])), j - i + 1
        except (ValueError, OverflowError):
            return "", 0
        return "", j - i + 1
    n = {"\\u": 4, "\\x": 2}.get(text[i:i + 2]) if c == "\\" else (2 if c == "%" else 0)
    if not n:
        return "", 0
    at = i + (1 if c == "%" else 2)
    digits = text[at:at + n]
    if len(digits) != n or not all(h in _HEXDIGITS for h in digits.lower()):
        return "", 0
    return chr(int(digits, 16)), at + n - i


def _letters(text: str) -> list:
    """``[(start, end, letters)]``, one per letter that a character or escape sequence of ``text``
    reads as (:func:`_reads_as`, :func:`_decoded`; ``letters`` holds the alternatives); other
    characters are gaps."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        k = 0
        if c in "&\\%":
            dec, k = _decoded(text, i)
            if k:
                out += [(i, i + k, alt) for alt in (_reads_as(dec) if dec else ())]
                i += k
                continue
        if "a" <= c <= "z" or "A" <= c <= "H" or "J" <= c <= "Z":
            out.append((i, i + 1, c.lower()))
        elif c not in " -_/<>.:,;'\"()[]{}=":
            out += [(i, i + 1, alt) for alt in _reads_as(c)]
        i += 1
    return out


def _may_spell_fence(text: str) -> bool:
    """Cheap test (substring scans, no per-character loop) that ``text`` could spell the fence's
    name: every letter of the name is in it in some form (NFKD, lowercase, or a lookalike), or it
    holds an escape that can stand for a letter (``&#``, ``\\u``, ``\\x``, ``%``)."""
    low = text.lower()
    if not low.isascii():
        import unicodedata

        low = unicodedata.normalize("NFKD", low).lower()
    if all(any(c in low for c in forms) for forms in _FORMS):
        return True
    return "&#" in low or "\\u" in low or "\\x" in low or "%" in low


def defuse_fence(text: str) -> str:
    """``text`` with every spelling of the briefing fence's name replaced by
    :data:`FENCE_DEFUSED`, so captured text shown to another agent can neither open nor close
    the fence (issue #17).

    A spelling is a run of characters that read as the letters ``ctxlakebriefing`` in order,
    with at most 12 other characters between two of them: any case, fullwidth, mathematical,
    circled or accented forms (NFKD), Cyrillic/Greek lookalikes (``сtxlаke``), ``1``/``|``/``I``
    for ``l``, HTML entities and ``\\u``/``\\x``/``%`` escapes of the letters themselves
    (``br&#105;efing``) or of what stands between them (``&#45;``, ``\\u002d``, ``%2D``); words
    between (``ctxlake fleet briefing``) do not count. Invisible characters are removed by
    :func:`clean` first. Standard library only, no ``re`` (the hook calls it)."""
    if not _may_spell_fence(text):
        return text
    return _defuse_all(text)


def _defuse_all(text: str) -> str:
    """:func:`defuse_fence` of ``text``, read letter by letter over its whole length."""
    letters = _letters(text)
    want = _FENCE_LETTERS
    spans = []
    k, n, w = 0, len(letters), len(want)
    while k + w <= n:
        j = 0
        while j < w and want[j] in letters[k + j][2] and (
                j == 0 or letters[k + j][0] - letters[k + j - 1][1] <= _FENCE_MAX_GAP):
            j += 1
        if j == w:
            spans.append((letters[k][0], letters[k + w - 1][1]))
            k += w
        else:
            k += 1
    if not spans:
        return text
    out, last = [], 0
    for a, b in spans:
        out.append(text[last:a])
        out.append(FENCE_DEFUSED)
        last = b
    out.append(text[last:])
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
