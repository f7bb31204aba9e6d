"""Shape judgements every rule shares: whether a run or a value is made of words, a path or an id
(:func:`_wordy`, :func:`_word_piece`), and whether a keyed value could be a secret at all
rather than a variable, placeholder, path or alias (:func:`_secretish`). Measured in
``bench/redact_corpus.py``."""
from __future__ import annotations

import re

from lib.redact.scan import _Lazy


_HEX = re.compile(rb"[0-9a-fA-F]+")
_ANTHROPIC_ID_IN = _Lazy(rb"(?:msg|toolu|srvtoolu|req|msgbatch|file)_01[A-Za-z0-9]{20,30}")
_ANTHROPIC_ID = _Lazy(rb"(?:[a-z]+_)?(?:msg|toolu|srvtoolu|req|msgbatch|file)_01[A-Za-z0-9]{20,30}")
_ULIDS = _Lazy(rb"(?:[a-z]+_)?[0-7][0-9A-HJKMNP-TV-Z]{25}(?:[_-](?:[a-z]+_)?[0-7][0-9A-HJKMNP-TV-Z]{25})*")
"""Ids that look random and are not secrets: Anthropic message / tool-use ids and ULIDs (one,
or several joined by ``_``/``-``)."""
_LETTER_CHUNK = _Lazy(rb"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
"""A camelCase chunk of letters; every ASCII letter of a piece lies in exactly one."""
_PIECES = _Lazy(rb"[/_+=.-]+")
_CONSONANTS5 = _Lazy(rb"[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{5,}")
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_NOT_LETTERS = bytes(c for c in range(256) if c not in _LETTERS)
_NOT_VOWELS = bytes(c for c in range(256) if c not in b"aeiouyAEIOUY")
"""Bytes ``translate`` deletes to count a piece's letters and vowels in C (a loop over the
bytes cost ~60 % of a scrub of a short path)."""


def _word_piece(p: bytes, strict: bool = True) -> bool:
    """A piece is a word (or words): >= 1 vowel per 6 letters, no run of 5 consonants (unless
    ``strict`` is off: path pieces such as ``connectscheduling``), and letter chunks (camelCase
    split) of >= 3 letters on average."""
    letters = len(p.translate(None, _NOT_LETTERS))
    if not letters:
        return True
    if len(p.translate(None, _NOT_VOWELS)) * 6 < letters or (strict and _CONSONANTS5.search(p)):
        return False
    return letters >= 3 * len(_LETTER_CHUNK.findall(p))


def _wordy(run: bytes) -> bool:
    """True when a run is made of words, numbers and hex ids: paths (``node_modules/call-bind/
    package``), identifiers and test names (``test_scrub_keeps_git_shas``), Rust/Cargo target
    names with hashes (``python_utils-1d9cbe00910c3870``). Pieces are split on ``/ _ + = . -``;
    every piece longer than 4 characters must be hex, digits or a word (:func:`_word_piece`).

    Measured (``bench/redact_corpus.py``): random base62/base64 tokens of >= 32 characters are
    judged wordy < 0.2 % of the time; random lowercase+digit tokens ~ 13 % (a recall cost we
    accept: such tokens are mostly caught by their provider marker instead).
    """
    if b"_01" in run:
        run = _ANTHROPIC_ID_IN.sub(b"id", run)  # tool-use ids inside paths (tool-results/toolu_01...)
    for p in _PIECES.split(run):
        if len(p) <= 4 or _HEX.fullmatch(p):
            continue
        if not _word_piece(p):
            return False
    return True


def _case_mixed_hex(chars: set) -> bool:
    """Hex digits in both cases, at least four of each (``c6aB8b6DA5a8421F47FD...``): no digest,
    SHA or id is printed so (each encoder writes one case), so the run is a random token drawn
    from ``[0-9a-fA-F]`` (gitleaks ``sourcegraph-access-token``), not a checksum."""
    return len(chars & _HEX_UPPER) >= 4 and len(chars & _HEX_LOWER) >= 4


_HEX_UPPER = frozenset(b"ABCDEF")
_HEX_LOWER = frozenset(b"abcdef")
_LETTER_WORDS = _Lazy(rb"[A-Za-z]+(?:[-_. ][A-Za-z]+)*[-_.]?")
_SAME_CHAR = _Lazy(rb"(.)\1+")


_YAML_ALIAS = _Lazy(rb"\*+[A-Za-z0-9_.-]*")


def _secretish(v: bytes) -> bool:
    """A keyed value that could be a secret (not a variable, placeholder or code reference)."""
    if v[:1] in (b"$", b"%", b"@", b"&", b"!", b"#", b"|", b"{", b"<", b"[") or b"ctxlake:" in v:
        return False
    if v[:1] == b"*" and _YAML_ALIAS.fullmatch(v):
        return False  # "*", "*****", a YAML alias (*default_token); "*xbfY\/wW,1D'v" is a value
    if (v[:1] in (b"/", b"~", b".") or (b"/" in v and b"=" not in v and b"+" not in v)) and _wordy(v):
        return False  # a file path (GOOGLE_APPLICATION_CREDENTIALS=/etc/sa.json), not a secret
    if _LETTER_WORDS.fullmatch(v) or _SAME_CHAR.fullmatch(v):
        return False  # letters-only words (your_password_here, settings.DB_PASSWORD), xxxxxx
    if b"xxxx" in v.lower() or b"..." in v or b"***" in v:
        return False
    return True


_DIGEST_PREFIXES = (b"h1:", b"sha1=", b"sha224=", b"sha256=", b"sha384=", b"sha512=", b"md5=",
                    b"sha256:", b"sha512:", b"sha384:", b"sha1:")
