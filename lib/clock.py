"""Time: one representation, one tolerant parser, one store-clock offset (docs/design.md §5, §9).

- **Representation.** In memory a time is epoch seconds (``float``, UTC). On the wire — envelopes,
  cache files, store records — it is either that number or the ISO-8601 string
  :func:`format_time` writes (``YYYY-MM-DDTHH:MM:SS.mmmZ``). Every reader goes through
  :func:`parse_time`, so either spelling is accepted wherever a time is read.
- **Range.** A time outside [:data:`TIME_MIN`, :data:`TIME_MAX`] (1970-01-01 to
  9999-12-31T23:59:59.999Z) is no time: the parser answers ``None`` and the formatter clamps.
- **The store clock.** Expiry is judged by the store's clock, never the host's (invariant 6).
  A process that just read the store clock knows the offset (:func:`offset`); a cache file
  carries the pair ``store_time``/``refreshed_at`` written at one instant, from which a reader
  that cannot reach the store recovers it (:func:`view_offset`, :func:`view_now`).

Standard library only; ``datetime`` is imported only when a string is parsed, so the hook's
answer path, which reads numbers, stays light.
"""
from __future__ import annotations

import time

TIME_MIN, TIME_MAX = 0.0, 253402300799.999
"""The epoch seconds a time may hold: 1970-01-01 to 9999-12-31T23:59:59.999Z."""


def format_time(epoch_secs: float | None = None) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC) for ``epoch_secs`` (default: now), clamped to
    [:data:`TIME_MIN`, :data:`TIME_MAX`] (NaN reads as :data:`TIME_MIN`). Never raises."""
    v = time.time() if epoch_secs is None else float(epoch_secs)
    v = TIME_MIN if v != v else min(TIME_MAX, max(TIME_MIN, v))
    ms = int(round(v * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def parse_time(value, *, millis: bool = True) -> float | None:
    """Epoch seconds from a number (seconds; with ``millis``, values above 1e12 are read as
    milliseconds, as some runtimes write them) or an ISO-8601 string (``Z``/``z`` or an offset;
    no offset = UTC; a date alone = midnight UTC). ``None`` for anything else: a bool, an empty
    or malformed string, a non-finite number, a time outside [:data:`TIME_MIN`,
    :data:`TIME_MAX`]. Never raises.

    ``millis=False`` is for records ctxlake writes itself in seconds (leases): a forged
    ``expires_at`` of 1e13 is then no time, not a lease until the year 2286.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            v = float(value)
        except OverflowError:  # an int beyond float range
            return None
        if millis and v > 1e12:
            v /= 1000.0
        return v if TIME_MIN <= v <= TIME_MAX else None
    if not isinstance(value, str) or not value.strip():
        return None
    from datetime import datetime, timezone

    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        v = dt.timestamp()
    except (OverflowError, ValueError):
        return None
    return v if TIME_MIN <= v <= TIME_MAX else None


def parse_time_strict(value) -> float:
    """:func:`parse_time` for input that must hold a time (an envelope's ``emitted_at``).

    :raises ValueError: it holds none (the message quotes the value, cut to 80 characters).
    """
    v = parse_time(value)
    if v is None:
        raise ValueError(f"not a timestamp: {str(value)[:80]!r}")
    return v


def offset(store_now: float, local_now: float) -> float:
    """Seconds to add to this host's clock to get the store's, from two readings taken
    together (``store.clock()`` and ``time.time()`` in the same pass)."""
    return store_now - local_now


def view_offset(view: dict) -> float:
    """The store-clock offset a cache view recorded at refresh (its ``store_time`` minus its
    ``refreshed_at``); 0 when the view does not carry both."""
    st, rt = parse_time(view.get("store_time")), parse_time(view.get("refreshed_at"))
    return offset(st, rt) if st is not None and rt is not None else 0.0


def view_now(view: dict, local_now: float | None = None) -> float:
    """Store time now, estimated from a cache view's offset (:func:`view_offset`) and this
    host's clock (``local_now``, default ``time.time()``)."""
    local_now = time.time() if local_now is None else local_now
    return local_now + view_offset(view)
