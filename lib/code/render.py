"""Byte-stable output helpers: compact sorted JSON, thousands grouping, human byte sizes.

JSON mode prints one compact object with keys sorted and non-ASCII raw, then ``\\n`` — the
same bytes for the same input on every run.
"""
from __future__ import annotations


from lib.code.record import Record

SCHEMA_VERSION = 1


def dumps(obj) -> str:
    """Compact JSON with sorted keys and raw UTF-8 (no trailing newline)."""
    import json

    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def group(n: int) -> str:
    """``1240`` → ``"1,240"``."""
    return f"{n:,}"


def human_bytes(n: int) -> str:
    """``~N B`` below 1024 bytes, else ``~X.X KB`` (one decimal, no MB unit)."""
    if n < 1024:
        return f"~{n} B"
    return f"~{n / 1024:.1f} KB"


def envelope(tool: str, **fields) -> dict:
    """A JSON envelope: ``schema_version``, ``tool`` and the given fields (``None`` values dropped)."""
    out = {"schema_version": SCHEMA_VERSION, "tool": tool}
    out.update({k: v for k, v in fields.items() if v is not None})
    return out


def error_json(code: int, message: str) -> str:
    """The JSON-mode error object ``{"error":{"code":N,"message":…}}`` (no trailing newline)."""
    return dumps({"error": {"code": code, "message": message}})


class Result(Record):
    """A command's outcome: ``out`` is everything stdout carries, ``code`` the exit code,
    ``warnings`` the stderr lines (without ``warning: ``), ``diagnostic`` a one-line reason for
    a non-zero code (used by the MCP adapter)."""

    FIELDS = (("out", ""), ("code", 0), ("warnings", list), ("diagnostic", None))
