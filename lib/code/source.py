"""The input-file guard shared by outline, symbol, read and deps, and line arithmetic.

A path must name a regular file (symlinks followed) no larger than ``[limits] max_file_bytes``
and decode as UTF-8. A FIFO, a device or ``/dev/zero`` is refused before it is opened, so it
can neither hang the call nor exhaust memory.
"""
from __future__ import annotations

import bisect
import os
import stat
from lib.code.errors import READ, ExitError
from lib.code.record import Record


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


class Source(Record):
    """A file's bytes and decoded text; ``path`` is the path exactly as the user passed it."""

    FIELDS = (("path", ""), ("data", b""), ("text", ""))

    def line_starts(self) -> list:
        """Byte offset at which each line starts (index 0 = line 1)."""
        starts = [0]
        find = self.data.find
        i = find(b"\n")
        while i != -1:
            starts.append(i + 1)
            i = find(b"\n", i + 1)
        return starts


def regular(path: str, real: str | None = None) -> os.stat_result:
    """``os.stat`` of ``real`` (default ``path``) when it names a regular file.

    :raises ExitError: code 1 (docs/ctxctl.md "Exit codes": a read failure) — missing or
        unreadable, a directory (``<path> is a directory; pass a file ...``) or another
        non-regular file.
    """
    try:
        st = os.stat(real or path)
    except OSError as exc:
        raise ExitError(READ, f"failed to read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ExitError(READ, f"{path} is a directory, not a file; pass one file inside it")
    if not stat.S_ISREG(st.st_mode):
        raise ExitError(READ, f"{path}: not a regular file ({_kind(st.st_mode)})")
    return st


def read(path: str, max_bytes: int, real: str | None = None) -> Source:
    """Read ``path`` through the guard; ``real`` is the path to open when it differs from the
    one shown (the MCP adapter resolves paths against its workspace root).

    :raises ExitError: code 1 — not a regular file, over the size limit, unreadable or not UTF-8.
    """
    real = real or path
    st = regular(path, real)
    if st.st_size > max_bytes:
        raise ExitError(READ, f"{path}: file is {st.st_size} bytes, exceeding max_file_bytes limit of {max_bytes} bytes")
    try:
        with open(real, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise ExitError(READ, f"failed to read {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ExitError(READ, f"{path}: file is {len(data)} bytes, exceeding max_file_bytes limit of {max_bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExitError(READ, f"failed to read {path}: stream did not contain valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    return Source(path, data, text)


def line_of(starts: list, offset: int) -> int:
    """1-based line number containing byte ``offset``."""
    return bisect.bisect_right(starts, offset)


def span_lines(starts: list, start: int, end: int) -> tuple:
    """1-based ``(first, last)`` lines of the byte range ``[start, end)``; a range ending in a
    newline does not count the next line."""
    first = line_of(starts, start)
    last = line_of(starts, max(start, end - 1))
    return first, last
