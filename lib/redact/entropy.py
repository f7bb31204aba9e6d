"""Generic detection by entropy (docs/design.md §7; docs/security.md, Redaction, rule 4): tool
input and output only, the first :data:`MAX_SCAN_BYTES` of a field: runs of
``[A-Za-z0-9+/=_-]`` of ≥ :data:`ENTROPY_MIN_LEN` characters that look random
(:func:`_entropy_secret`) are replaced in place, unless the kept-clean classes
(:mod:`lib.redact.kept`) claim them. Pure hex, UUIDs, ULIDs, Anthropic ids, integrity strings,
go.sum hashes, image payloads and runs made of words stay clean (precision trades, each tested in
``tests/redact/``)."""
from __future__ import annotations

import math

from lib.redact.outcome import _P_SECRET
from lib.redact.scan import _ALNUM, _entropy, _HAS_DIGIT, _Lazy, _mixed, _runs, _Scan, _table
from lib.redact.shapes import _ANTHROPIC_ID, _case_mixed_hex, _DIGEST_PREFIXES, _ULIDS, _wordy
from lib.redact.kept import _kept
from lib.redact.assigned import _scan_assigned


ENTROPY_MIN_LEN = 32
"""Shortest run (characters) the entropy rule looks at (docs/design.md §7)."""
ENTROPY_THRESHOLD = 4.5
"""Shannon entropy (bits/char) above which a run of any shape is a secret (docs/design.md §7)."""
ENTROPY_THRESHOLD_MIXED = 4.2
"""Lower threshold for runs that mix letters and digits. A uniformly random 32-character
base62 token has a median entropy of only ~4.54 bits/char, so 4.5 alone misses a third of them
(measured in ``bench/redact_corpus.py``); words and paths are excluded before this test."""
MAX_SCAN_BYTES = 256 * 1024
"""The entropy scan covers the first 256 KiB (UTF-8 bytes) of a field; a run that starts inside
the window is scanned to its end. Markers and structural rules scan the whole field."""
MAX_SCAN_CHARS = MAX_SCAN_BYTES
"""Backward-compatible alias of :data:`MAX_SCAN_BYTES` (the window is measured in bytes)."""


def shannon_entropy(s) -> float:
    """Shannon entropy of ``s`` (``str`` or ``bytes``) in bits per character; 0.0 if empty."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(ch) for ch in set(s)))
_ENT_CLS = _table({_ALNUM + "+/=_-": ord("a")}, ord(" "))  # entropy runs (docs/design.md §7)
_IMAGE_MAGIC = (b"iVBORw0KGgo", b"/9j/", b"R0lGOD", b"UklGR", b"PHN2Zy", b"AAAAIGZ0eXB", b"AAAAHGZ0eXB")
_DATA_URI = _Lazy(rb"data:(?:image|font|audio|video)/[A-Za-z0-9.+-]+;base64,$")
_SEQUENCES = (b"abcdefgh", b"ABCDEFGH", b"01234567", b"zyxwvuts", b"ZYXWVUTS")


_HEX_DASH = frozenset(b"0123456789abcdefABCDEF-")
_INTEGRITY_PREFIXES = tuple(p + sep for p in (b"sha1", b"sha224", b"sha256", b"sha384", b"sha512", b"md5")
                            for sep in (b"-", b"="))
_ENTROPY_SAMPLE = 4096
"""Entropy of runs longer than this is estimated on their first 4 KiB (a long random blob is
uniform; a long blob that starts random and turns into prose does not exist in practice)."""


def _entropy_secret(b: bytes, s: int, e: int) -> bool:
    """Decide whether the run ``b[s:e]`` (>= 32 chars of ``[A-Za-z0-9+/=_-]``) is a secret.

    Clean: fewer than 19 distinct characters (entropy <= log2(18) = 4.17 < both thresholds),
    pure hex and UUID-ish (SHAs, digests) unless its letters mix cases (:func:`_case_mixed_hex`), ``sha512-``/``sha256=`` integrity strings, go.sum
    ``h1:`` hashes, image payloads, ULIDs, Anthropic ids, alphabet literals and runs of words.
    Otherwise a secret if its entropy is >= 4.5 bits/char, or >= 4.2 when it mixes letters and
    digits (random tokens of 32–40 chars sit around 4.5). Cheap checks run first.
    """
    run = b[s:e]
    chars = set(run)
    if chars <= _HEX_DASH:
        return _case_mixed_hex(chars) and not _ULIDS.fullmatch(run)
    if len(chars) <= 18:
        return False
    if run.startswith(_INTEGRITY_PREFIXES) or b.endswith(_DIGEST_PREFIXES, max(0, s - 8), s):
        return False  # lock files, wheel RECORD, SRI, go.sum "h1:", "sha256:" digests
    if run.startswith(_IMAGE_MAGIC) or (b.endswith(b";base64,", max(0, s - 8), s)
                                        and _DATA_URI.search(b, max(0, s - 64), s)):
        return False  # image/font payloads are data, not secrets (precision over recall)
    if len(run) > _ENTROPY_SAMPLE:
        run = run[:_ENTROPY_SAMPLE]
        chars = set(run)
    h = _entropy(run, chars, _THRESHOLDS)
    if h < ENTROPY_THRESHOLD and not (h >= ENTROPY_THRESHOLD_MIXED and _HAS_DIGIT(run) and _mixed(run)):
        return False
    if _ULIDS.fullmatch(run) or _ANTHROPIC_ID.fullmatch(run):
        return False
    if any(q in run for q in _SEQUENCES):
        return False  # alphabet tables in code (base64/base32 alphabets)
    return not _wordy(run[:512])
_THRESHOLDS = (ENTROPY_THRESHOLD, ENTROPY_THRESHOLD_MIXED)
_EQ_PIECE = _Lazy(rb"[^=]+=*")
_ENT_TAIL = _Lazy(rb"[A-Za-z0-9+/=_-]*")


def _scan_entropy(sc: _Scan) -> None:
    b = sc.b
    if len(b) < 19:
        return  # too short for an entropy run or a 3-letter name and a 16-character assigned token
    window = min(len(b), MAX_SCAN_BYTES)
    if len(b) < ENTROPY_MIN_LEN:
        _scan_assigned(sc, window)  # no entropy run fits; the assigned rule's runs are shorter
        return
    cls = b[:window + 4096].translate(_ENT_CLS)
    for k, j in _runs(cls, ENTROPY_MIN_LEN, 0, window):
        if j == len(cls) < len(b):
            j = _ENT_TAIL.match(b, j).end()  # a run crossing the window edge is scanned whole
        s = k
        if k >= 1 and b[k] in b"ntr" and b[k - 1] == 92:
            s = k + 1  # keep the JSON escape (\n) out of the redacted span
        eq = b.find(b"=", s, j)
        if 0 <= eq < j - 1 and b[eq + 1:j].strip(b"="):
            # "name=value" joined into one run: base64 has "=" only at its end, so judge each
            # "=" separated piece on its own and keep the names.
            for m in _EQ_PIECE.finditer(b, s, j):
                if m.end() - m.start() >= ENTROPY_MIN_LEN and _entropy_secret(b, m.start(), m.end()):
                    sc.span(m.start(), m.end(), _P_SECRET, "high_entropy_run")
        elif j - s >= ENTROPY_MIN_LEN and _entropy_secret(b, s, j) and not _kept(sc, s, j):
            sc.span(s, j, _P_SECRET, "high_entropy_run")
    _scan_assigned(sc, window)  # random-shaped values after a name (lib/redact/assigned.py)
