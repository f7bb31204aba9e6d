"""ULIDs: 26-character Crockford base32 ids, lexicographically ordered by creation time.

Spec: https://github.com/ulid/spec (48-bit millisecond timestamp + 80 random bits). The
generator is monotonic within a process: a second id in the same millisecond increments the
random part, so sorting ids sorts events in the order this process made them (docs/design.md §5).
Standard library only.
"""
from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def _encode(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_ulid(now_ms: int | None = None) -> str:
    """Return a new ULID string (26 chars). ``now_ms`` overrides the clock (tests)."""
    global _last_ms, _last_rand
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            rand = _last_rand + 1
            if rand >= 1 << 80:  # overflow inside one millisecond: move to the next one
                ms += 1
                rand = int.from_bytes(os.urandom(10), "big")
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last_ms, _last_rand = ms, rand
    return _encode(ms, 10) + _encode(rand, 16)


def ulid_at(ms: int, tail: str) -> str:
    """A ULID-shaped id that sorts at ``ms`` (epoch milliseconds, clamped to 48 bits) with a
    caller's deterministic ``tail`` (its last 16 characters, Crockford base32, left-padded
    with ``0``) instead of random bits: the same inputs give the same id."""
    return _encode(max(0, min(int(ms), (1 << 48) - 1)), 10) + tail[-16:].rjust(16, "0")


def ulid_time_ms(ulid: str) -> int:
    """Milliseconds since the epoch encoded in the first 10 characters of ``ulid``."""
    value = 0
    for ch in ulid[:10].upper():
        value = value * 32 + _ALPHABET.index(ch)
    return value
