"""Lookalike evasion (issue #17): Greek and Cyrillic letters that look Latin, fullwidth forms and
invisible characters that split a keyword (``pаssword`` with a Cyrillic ``а``, ``ｔｏｋｅｎ``,
``pass\u200bword``). :func:`_needs_fold` decides with memchr-speed scans whether a text holds
any; :func:`fold_confusables` maps it to what the keyword rules should read."""
from __future__ import annotations

import re


_CONFUSABLE_LEADS = tuple(bytes([c]) for c in range(0xCE, 0xD5))
"""UTF-8 lead bytes of Greek and Cyrillic (U+0380–U+053F); each is looked for with one memchr."""
_FULLWIDTH = re.compile(rb"\xef[\xbc\xbd]")
_ZERO_WIDTH = re.compile(rb"\xe2\x80[\x8b-\x8d]")
_SOFT_HYPHEN = re.compile(rb"\xc2\xad")
_CONFUSABLES = {ord(k): v for k, v in zip(
    "аеорсухкіјѕԁһԛԝвмнтАВЕКМНОРСТУХІЈЅαοινκρτυχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxkijsdhqwbmhtABEKMHOPCTYXIJSaoivkptuxeABEZHIKMNOPTYX")}
_CONFUSABLES.update({0x200B: None, 0x200C: None, 0x200D: None, 0x00AD: None})
"""Latin lookalikes of Cyrillic and Greek letters (the single-letter ``MA`` entries of Unicode's
confusables.txt, UTS #39, that map to ASCII) and the invisible characters that can split a
keyword (zero-width space / non-joiner / joiner, soft hyphen), dropped."""


def _needs_fold(b: bytes) -> bool:
    """Whether the UTF-8 text holds a Greek, Cyrillic, fullwidth or invisible character that
    could disguise a keyword: ~12 single-byte ``find`` s (memchr) when it does not, a regex only
    where the memchr saw a byte the character needs."""
    if b.isascii():
        return False
    find = b.find
    if any(find(c) >= 0 for c in _CONFUSABLE_LEADS):
        return True
    return (_by_memchr(b, b"\xef", _FULLWIDTH, 0)
            or any(_by_memchr(b, c, _ZERO_WIDTH, 2) for c in (b"\x8b", b"\x8c", b"\x8d"))
            or _by_memchr(b, b"\xad", _SOFT_HYPHEN, 1))


def _by_memchr(b: bytes, byte: bytes, rx, back: int) -> bool:
    """Whether ``rx`` (a short literal-led pattern holding ``byte`` ``back`` bytes after its start)
    occurs in ``b``: each occurrence of ``byte`` (memchr) is checked with ``rx.match`` at
    ``i - back``; past 64 occurrences one ``rx.search`` decides."""
    i = b.find(byte)
    seen = 0
    while i >= 0:
        seen += 1
        if seen > 64:
            return rx.search(b, max(0, i - back)) is not None
        if i >= back and rx.match(b, i - back):
            return True
        i = b.find(byte, i + 1)
    return False


def fold_confusables(text: str) -> str:
    """``text`` as the keyword rules should read it: NFKC-normalized (fullwidth ``ｐａｓｓ`` →
    ``pass``, mathematical letters → ASCII), Cyrillic/Greek lookalikes mapped to Latin
    (:data:`_CONFUSABLES`), zero-width characters and soft hyphens removed."""
    import unicodedata

    return unicodedata.normalize("NFKC", text).translate(_CONFUSABLES)
