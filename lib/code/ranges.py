"""Line ranges and the ``read <file> --lines R[,R…]`` command (no AST: any extension works).

Range syntax: comma-separated tokens, each trimmed (empty ones dropped), each ``N``, ``N-M`` or
``N-`` (to the end). Ranges are 1-based, kept in the given order, never merged or sorted; a
closed end is clamped to the file length. Errors (exit 2): ``empty line range``, ``invalid
range `tok`: expected N, N-M, or N-``, ``ranges are 1-based; start must be >= 1``, ``range S-E is inverted``, ``line
range S-E out of bounds (file has N lines)``.

Lines split *inclusive* of their terminators, so CRLF survives byte for byte.
Saved metric: before = tokens(whole file), after = sum of tokens(each slice).
"""
from __future__ import annotations

from lib.code import render, source, tokens
from lib.code.errors import USAGE, ExitError
from lib.code.render import Result

OPEN = None
"""The end of an open range (``N-``)."""



def _number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_token(tok: str) -> tuple:
    """``"3"`` → (3, 3); ``"3-9"`` → (3, 9); ``"3-"`` → (3, OPEN).

    :raises ExitError: code 2 ``invalid range `tok`: expected N, N-M, or N-``, ``ranges are 1-based…``, ``… is inverted``.
    """
    first, dash, last = tok.partition("-")
    if not _number(first) or (last and not _number(last)):
        raise ExitError(USAGE, f"invalid range `{tok}`: expected N, N-M, or N-")
    start = int(first)
    if not dash:
        end = start
    elif not last:
        end = OPEN
    else:
        end = int(last)
    if start < 1:
        raise ExitError(USAGE, "ranges are 1-based; start must be >= 1")
    if end is not OPEN and end < start:
        raise ExitError(USAGE, f"range {start}-{end} is inverted")
    return start, end


def parse_ranges(spec: str) -> list:
    """Parse a comma list of ranges. :raises ExitError: code 2, see :func:`parse_token`."""
    toks = [t.strip() for t in spec.split(",")]
    toks = [t for t in toks if t]
    if not toks:
        raise ExitError(USAGE, "empty line range")
    return [parse_token(t) for t in toks]


def split_lines(text: str) -> list:
    """Lines split on ``\\n`` including their terminators (a ``\\r\\n`` stays whole)."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def clamp(rng: tuple, n_lines: int, what: str = "file") -> tuple:
    """Resolve an open/over-long end against ``n_lines``.

    :raises ExitError: code 2 when the start is past the last line.
    """
    start, end = rng
    if start > n_lines:
        shown = "" if end is OPEN else str(end)
        raise ExitError(USAGE, f"line range {start}-{shown} out of bounds ({what} has {n_lines} lines)")
    return start, n_lines if end is OPEN else min(end, n_lines)


def run(path: str, spec: str | None, config, *, json_mode: bool = False, show_saved: bool = True,
        real: str | None = None, counter: tokens.Counter = tokens.EXACT) -> Result:
    """The ``read`` command; ``spec`` ``None`` or empty means the whole file (the MCP form);
    ``counter`` counts the saved metric exactly or estimates it.

    :raises ExitError: 1 read failure, 2 bad or out-of-bounds range.
    """
    ranges = parse_ranges(spec) if spec and spec.strip() else [(1, OPEN)]
    src = source.read(path, config.limits.max_file_bytes, real)
    lines = split_lines(src.text)
    resolved = [clamp(r, len(lines)) for r in ranges]
    slices = [(s, e, "".join(lines[s - 1:e])) for s, e in resolved]
    before = counter.count(src.text) if show_saved else 0
    after = counter.many(sl for _, _, sl in slices) if show_saved else 0
    if json_mode:
        env = render.envelope("read", path=path,
                              ranges=[{"start_line": s, "end_line": e, "slice": sl} for s, e, sl in slices])
        if show_saved:
            env["saved"] = counter.saved(before, after)
        return Result(render.dumps(env) + "\n")
    out = "".join(f"# {path}:{s}-{e}\n{sl}\n" for s, e, sl in slices)
    if show_saved:
        out += (f"Saved ~{tokens.percent(before, after)}% ({counter.figure(before)} -> "
                f"{counter.figure(after)} tokens)\n")
    return Result(out)
