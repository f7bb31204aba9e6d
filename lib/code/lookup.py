"""``symbol <file> --name <s>``: one symbol's source instead of the whole file, plus the
self-healing hints the MCP adapter appends to a miss.

Lookup is an exact, case-sensitive match on the name (optionally filtered by kind); the first
match in source pre-order wins. There are no qualified names: Lua's ``Counter.new`` and C#'s
``Demo.App`` match because they are the literal names.

Payload: the verbatim slice (default), the cleaned signature (``--signature``), a sub-range of
the symbol's own lines (``--lines N-M``, 1-based, one range only) or the compact view
(``--compact``). Saved metric: before = tokens(whole file), after = tokens(payload).
"""
from __future__ import annotations

from lib.code import backends, outline, ranges, render, symbols, tokens
from lib.code.errors import NOT_FOUND, PARSE, USAGE, ExitError
from lib.code.render import Result

MAX_SUGGESTIONS = 5
MINI_OUTLINE_CAP = 20


def find(syms: list, name: str, kind: str | None = None):
    """First symbol named exactly ``name`` (and of ``kind`` when given), or ``None``."""
    for s in syms:
        if s.name == name and (kind is None or s.kind == kind):
            return s
    return None


def not_found_message(name: str, kind: str | None = None) -> str:
    """``symbol not found: <name>`` plus `` (kind <Debug name>)`` when a kind filtered the lookup."""
    msg = f"symbol not found: {name}"
    if kind:
        msg += f" (kind {symbols.DEBUG_NAMES[kind]})"
    return msg


def payload(parsed, sym, *, signature: bool = False, lines: str | None = None, compact: bool = False) -> str:
    """The text delivered for ``sym``.

    :raises ExitError: 2 for a bad/multiple/out-of-bounds ``lines``; 3 for a slice out of bounds.
    """
    if sym.end > len(parsed.data) or sym.start > sym.end:
        raise ExitError(PARSE, f"symbol {sym.name}: byte range out of bounds")
    if signature:
        return sym.signature
    if compact:
        from lib.code import compact as _compact  # its regexes load only for --compact

        return _compact.compact(parsed, sym, backends.BACKENDS[parsed.language].comment_prefix)
    try:
        raw = parsed.data[sym.start:sym.end].decode("utf-8")
    except UnicodeDecodeError:
        raise ExitError(PARSE, f"symbol {sym.name}: slice is not valid UTF-8") from None
    if lines is None:
        return raw
    rngs = ranges.parse_ranges(lines)
    if len(rngs) != 1:
        raise ExitError(USAGE, "symbol --lines accepts a single range (e.g. 3-10)")
    own = ranges.split_lines(raw)
    start, end = ranges.clamp(rngs[0], len(own), what="symbol")
    return "".join(own[start - 1:end])


def run(path: str, name: str, config, *, kind: str | None = None, signature: bool = False,
        lines: str | None = None, compact: bool = False, json_mode: bool = False, show_saved: bool = True,
        real: str | None = None, counter: tokens.Counter = tokens.EXACT) -> Result:
    """The ``symbol`` command; ``counter`` counts the saved metric exactly or estimates it.

    :raises ExitError: 1 read, 2 unsupported extension or bad range, 3 slice failure, 4 not found.
    """
    src, parsed, syms = outline.load(path, config, real,
                                     want=lambda spec: spec.name == name and (kind is None or spec.kind == kind),
                                     bodies=compact, name=name)
    sym = find(syms, name, kind)
    if sym is None:
        raise ExitError(NOT_FOUND, not_found_message(name, kind))
    text = payload(parsed, sym, signature=signature, lines=lines, compact=compact)
    before = counter.count(src.text) if show_saved else 0
    after = counter.count(text) if show_saved else 0
    if json_mode:
        env = render.envelope("symbol", path=path, language=parsed.language, name=name,
                              symbol=sym.as_json(lines=True, doc=True))
        env["compact" if compact else "slice"] = text
        if show_saved:
            env["saved"] = counter.saved(before, after)
        return Result(render.dumps(env) + "\n")
    loc = f"{path}:{sym.start_line}" if sym.start_line == sym.end_line else f"{path}:{sym.start_line}-{sym.end_line}"
    header = f"# {sym.name}  {loc}"
    if show_saved:
        header += f"  ({counter.figure(after)} tokens, saved ~{tokens.percent(before, after)}%)"
    return Result(f"{header}\n{text}\n")


def _within_two(a: str, b: str) -> bool:
    """Levenshtein distance of ``a`` and ``b`` is at most 2 (bounded, early exits)."""
    if abs(len(a) - len(b)) > 2:
        return False
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        if min(cur) > 2:
            return False
        prev = cur
    return prev[-1] <= 2


def suggestions(query: str, syms: list, limit: int = MAX_SUGGESTIONS) -> list:
    """Up to ``limit`` look-alike names: case-insensitive prefix matches, then substring
    matches, then edit distance ≤ 2; ties broken by plain string order; names deduplicated."""
    q = query.lower()
    best = {}
    for s in syms:
        n = s.name.lower()
        if n.startswith(q):
            tier = 0
        elif q in n:
            tier = 1
        elif _within_two(n, q):
            tier = 2
        else:
            continue
        if s.name not in best or tier < best[s.name]:
            best[s.name] = tier
    ranked = sorted(best.items(), key=lambda kv: (kv[1], kv[0].encode("utf-8")))
    return [name for name, _ in ranked[:limit]]


def top_level(syms: list) -> list:
    """Symbols not nested inside an earlier accepted one (by byte span), in start order."""
    out, last_end = [], -1
    for s in sorted(syms, key=lambda s: s.start):
        if out and s.start < last_end:
            continue
        out.append(s)
        last_end = s.end
    return out


def mini_outline(syms: list, cap: int = MINI_OUTLINE_CAP) -> list:
    """``kind name`` lines for the top-level symbols, at most ``cap``, then ``... and N more``."""
    tops = top_level(syms)
    lines = [f"{s.kind} {s.name}" for s in tops[:cap]]
    if len(tops) > cap:
        lines.append(f"... and {len(tops) - cap} more")
    return lines


def heal(message: str, query: str, syms: list) -> str:
    """A ``symbol not found`` message with suggestions and a mini-outline appended; the bare
    message when nothing resembles the query."""
    names = suggestions(query, syms)
    if not names:
        return message
    return message + "\nsuggestions: " + ", ".join(names) + "\n\n" + "\n".join(mini_outline(syms))
