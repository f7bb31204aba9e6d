"""JSON for the hook's synchronous path, on CPython's C codec (``_json``) without ``json``/``re``.

Why a module of its own: on the agent's path every millisecond of the hook counts (docs/design.md
§12: median ≤ 1.5× a bare interpreter). ``import json`` pulls in ``re`` and costs more than
that whole budget on a small machine; the C scanner and encoder it wraps load in ~0.3 ms.
Semantics match ``json.loads``/``json.dumps(ensure_ascii=False, separators=(",", ":"))``.
Falls back to ``json`` when ``_json`` is missing (other interpreters).
"""
from __future__ import annotations

try:
    import _json
except ImportError:  # pragma: no cover - non-CPython
    _json = None


class _Ctx:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name):
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


_scanner = _json.make_scanner(_Ctx()) if _json else None
_WS = " \t\n\r"


def loads(data: bytes | str):
    """Parse one JSON document. :raises ValueError: not valid JSON (or trailing garbage)."""
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")
    if _scanner is None:  # pragma: no cover
        import json

        return json.loads(data)
    start = 0
    n = len(data)
    while start < n and data[start] in _WS:
        start += 1
    if data.startswith("\ufeff", start):
        raise ValueError("unexpected UTF-8 BOM")
    try:
        obj, end = _scanner(data, start)
    except StopIteration as exc:
        raise ValueError(f"invalid JSON at offset {exc.value}") from None
    except SystemError:
        # The C scanner reports a syntax error by raising json.decoder.JSONDecodeError, which it
        # looks up in sys.modules only: with json never imported (the hook's case) it fails with
        # SystemError instead. Load json.decoder on this error path only and scan again, which
        # now raises JSONDecodeError (a ValueError) with the real message.
        import json.decoder  # noqa: F401

        try:
            obj, end = _scanner(data, start)
        except StopIteration as exc:
            raise ValueError(f"invalid JSON at offset {exc.value}") from None
    while end < n and data[end] in _WS:
        end += 1
    if end != n:
        raise ValueError(f"extra data after JSON at offset {end}")
    return obj


def _float_repr(o: float) -> str:
    if o != o or o in (float("inf"), float("-inf")):
        raise ValueError("NaN/Infinity are not JSON")
    return float.__repr__(o)


def _default(o):
    return str(o)


_encoder = (_json.make_encoder(None, _default, _json.encode_basestring, None, ":", ",", False, False, False)
            if _json else None)


def dumps(obj) -> str:
    """Compact JSON text (no spaces, non-ASCII kept, no NaN); unknown types become ``str(o)``."""
    if _encoder is None:  # pragma: no cover
        import json

        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    return "".join(_encoder(obj, 0))


def read_object(path: str, max_bytes: int = 8 << 20) -> dict:
    """The JSON object in the cache file ``path``; ``{}`` when it is missing, unreadable, not
    JSON or not an object. The hook's fail-open reader for every cache file (invariant 12)."""
    try:
        with open(path, "rb") as fh:
            data = loads(fh.read(max_bytes))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deep
        return {}
    return data if isinstance(data, dict) else {}
