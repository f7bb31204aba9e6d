"""The scan every rule works on (lib/redact/__init__.py, "How it stays fast"): the UTF-8 bytes of
one field, mapped by ``bytes.translate`` to character-class strings in which runs are found by one
literal-prefixed sre search; lazily compiled patterns (:class:`_Lazy`: the hook's capture child
scrubs one event and exits, so a pattern compiles only when a candidate asks for it); and
:class:`_Scan`, the mutable state of one scrub (spans to replace, rules fired, keyword offsets
shared between rules)."""
from __future__ import annotations

import math
import re


# --------------------------------------------------------------------------------------
# Character classes. Each table maps a byte to a class byte, for bytes.translate.

def _table(classes: dict, default: int) -> bytes:
    out = bytearray([default]) * 256
    for chars, cls in classes.items():
        for ch in chars.encode():
            out[ch] = cls
    return bytes(out)


class _Lazy:
    """A regex compiled on first use. The hook's capture child scrubs one event and exits, so
    the ~100 provider patterns are compiled only when a candidate token asks for one. The first
    use of a method (``match``, ``search``, ``fullmatch``, ``finditer``, ``sub``, ``split``,
    ``findall``) compiles the pattern and binds all of them on the instance, so later calls go
    straight to the compiled pattern's C methods (no Python frame per call)."""

    _METHODS = ("match", "search", "fullmatch", "finditer", "sub", "split", "findall")

    def __init__(self, pattern):
        self.pattern = pattern

    def __getattr__(self, name):
        if name not in _Lazy._METHODS:
            raise AttributeError(name)
        rx = re.compile(self.pattern)
        for m in _Lazy._METHODS:
            setattr(self, m, getattr(rx, m))
        return getattr(rx, name)


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
"""``bytes.lower`` as a translate table (ASCII only, as ``bytes.lower``; ~4x faster per MiB)."""
_WORD_BYTES = frozenset((_ALNUM + "_").encode())


def _bounded(b: bytes, i: int) -> bool:
    """True when position ``i`` starts a word: start of text, a non-word byte before it, or a
    JSON/shell escape (``\\n``, ``\\t``, ``\\r``) right before it."""
    if i == 0 or b[i - 1] not in _WORD_BYTES:
        return True
    return i >= 2 and b[i - 1] in b"ntr" and b[i - 2] == 92


_HAS_DIGIT = re.compile(rb"[0-9]").search
_HAS_UPPER = re.compile(rb"[A-Z]").search
_HAS_LOWER = re.compile(rb"[a-z]").search


def _mixed(tail: bytes) -> bool:
    """Token-shaped: the tail mixes digits and letters, or upper and lower case."""
    upper = _HAS_UPPER(tail) is not None
    lower = _HAS_LOWER(tail) is not None
    return (upper and lower) or ((upper or lower) and _HAS_DIGIT(tail) is not None)


# --------------------------------------------------------------------------------------

def _runs(cls: bytes, min_len: int, start: int = 0, stop: int | None = None):
    """Yield (start, end) of each maximal run of class byte ``a`` of length >= ``min_len`` that
    starts in [start, stop); ``start`` must be 0 or a separator. Runs extend past ``stop`` to
    their natural end. The leftmost occurrence of ``a * min_len`` after a separator is always a
    run start, so one regex search per run suffices: a literal prefix of ``min_len`` bytes,
    which sre scans with its overlap table (``bytes.find`` of ``a * n`` in text made of ``a``
    and blanks is Horspool's worst case: ~2x the instructions)."""
    stop = len(cls) if stop is None else stop
    for m in _run_rx(min_len).finditer(cls, start):
        k = m.start()
        if k >= stop:
            return
        yield k, m.end()


_RUN_RX: dict = {}


def _run_rx(min_len: int):
    """The compiled ``a{min_len}a*`` (written as literals, so sre sees a literal prefix)."""
    rx = _RUN_RX.get(min_len)
    if rx is None:
        rx = _RUN_RX[min_len] = re.compile(b"a" * min_len + b"a*")
    return rx


class _Scan:
    """Mutable state of one scrub: the UTF-8 bytes, the spans to replace, the rules fired."""

    __slots__ = ("b", "low", "spans", "marks", "inplace", "blocks", "auth_at", "secret_at", "kw_hits", "wide_cls",
                 "token_runs")

    def __init__(self, b: bytes):
        self.b = b
        self.low = None
        self.blocks: dict = {}
        self.spans: list = []
        self.marks: set = set()
        self.inplace: set = set()
        self.auth_at: list = []
        self.secret_at: list = []
        self.wide_cls = None  # the field translated to the wide-marker class (lib.redact.providers)
        self.kw_hits: list = []  # (keyword, [offsets]) of _scan_keyed, reused by the command-line rule
        self.token_runs = None  # (start, end) of every [A-Za-z0-9_-] run of >= 14 bytes (lib.redact.providers)

    def lower(self) -> bytes:
        if self.low is None:
            self.low = self.b.translate(_LOWER)  # bytes.lower() costs 4x a translate
        return self.low

    def span(self, s: int, e: int, placeholder: bytes, rule: str) -> None:
        """Record a replacement, unless it would cut into a placeholder already in the text
        (a re-scrub must not redact inside ``[ctxlake:redacted-ssn]``)."""
        b = self.b
        p = b.rfind(b"[ctxlake", max(0, s - 512), e + 8)  # a value cut short by one counts too
        if p >= 0 and (p >= s or b.find(b"]", p, e + 1) < 0 or b.find(b"]", p) >= s):
            return
        self.spans.append((s, e, placeholder))
        self.inplace.add(rule)


class _CLogC(dict):
    """``c * log2(c)`` by count ``c`` (``0`` for ``0``), filled on first use of each count, so
    :func:`_entropy` sums a run's counts with C-level ``map`` calls and no bytecode per symbol."""

    def __missing__(self, c):
        v = self[c] = c * math.log2(c) if c else 0.0
        return v


_C_LOG_C = _CLogC()
_EXACT_NEAR = 1e-6
"""How close (bits/char) the fast sum may come to a threshold before the exact sum decides: the
two differ by under 1e-12 on runs of up to 1 MiB, so every comparison agrees with the exact one."""


def _entropy(run: bytes, chars, thresholds) -> float:
    """Shannon entropy (bits/char) of the non-empty ``run`` whose distinct bytes are ``chars``:
    ``log2(n) - sum(c * log2(c)) / n`` over the counts ``c`` (C-level ``map``, ~4x faster than a
    generator of ``c / n * log2(c / n)``), or that generator itself when the fast value lies within
    :data:`_EXACT_NEAR` of one of ``thresholds``, so a comparison against them decides as the
    textbook sum does (:func:`lib.redact.entropy.shannon_entropy`)."""
    n = len(run)
    h = math.log2(n) - sum(map(_C_LOG_C.__getitem__, map(run.count, chars))) / n
    for t in thresholds:
        if -_EXACT_NEAR < h - t < _EXACT_NEAR:
            return -sum(c / n * math.log2(c / n) for c in map(run.count, chars))
    return h


def _finds(hay: bytes, needle: bytes, start: int = 0, stop: int | None = None):
    """Every start position of ``needle`` in ``hay[start:stop]``, as a list (``()`` when there is
    none: most fields hold no needle, and an empty tuple costs no generator). ``bytes.find``:
    far faster than a regex's own literal-prefix scan for needles of 4+ bytes."""
    stop = len(hay) if stop is None else stop
    i = hay.find(needle, start, stop)
    if i < 0:
        return ()
    out = []
    while i >= 0:
        out.append(i)
        i = hay.find(needle, i + 1, stop)
    return out
