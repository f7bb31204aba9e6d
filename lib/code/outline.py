"""``outline <file>``: every symbol of a file, one row each, instead of the file.

Text rows: two spaces, kind alias left-aligned to 7, the name padded to max(10, longest), the
location ``L:a-b`` (``L:a`` for one line; blank with ``--no-lines``) padded to 9, four spaces,
the signature. More than ``[outline] fold_threshold`` symbols show the first N rows and
``  ... [K symbols omitted]``; JSON lists the same first N and says ``"omitted": K`` (so a
JSON outline of a 3000-symbol file costs no more than the text one); it never carries byte ranges.

A tree with syntax errors still yields the partial list, with exit code 3, a stderr warning in
text mode and a ``parse_error`` object in JSON.

Saved metric: before = tokens(whole file); after = tokens(rendered rows, header excluded) in
text mode, tokens(the JSON payload before ``saved`` is added) in JSON mode.
"""
from __future__ import annotations

from lib.code import languages, render, scanners, skeleton, source, symbols, tokens
from lib.code.errors import PARSE
from lib.code.render import Result

PARSE_MESSAGE = "tree-sitter reported syntax errors; symbol list may be incomplete"


def location(sym, show: bool = True) -> str:
    """``L:a-b``, ``L:a`` for a one-line symbol, empty when lines are hidden."""
    if not show:
        return ""
    if sym.start_line == sym.end_line:
        return f"L:{sym.start_line}"
    return f"L:{sym.start_line}-{sym.end_line}"


def _shown(syms: list, fold_threshold: int | None) -> list:
    return syms if fold_threshold is None or len(syms) <= fold_threshold else syms[:fold_threshold]


def rows(syms: list, show_lines: bool = True, fold_threshold: int | None = None) -> list:
    """Text rows for ``syms`` (folded past ``fold_threshold``), each without a newline."""
    shown = _shown(syms, fold_threshold)
    width = max([10] + [len(s.name) for s in shown])
    out = []
    for s in shown:
        alias = symbols.ALIASES.get(s.kind, s.kind)
        out.append(f"  {alias:<7} {s.name:<{width}} {location(s, show_lines):<9}    {s.signature}")
    if len(shown) < len(syms):
        out.append(f"  ... [{len(syms) - len(shown)} symbols omitted]")
    return out


def load(path: str, config, real: str | None = None, extract: bool = True, want=None, bodies: bool = False,
         name: str | None = None):
    """Read and parse ``path``: returns ``(Source, Parsed, symbols)`` (``symbols`` is ``None``
    when ``extract`` is off: ``deps`` needs none; only those ``want`` accepts when given, see
    :func:`lib.code.symbols.extract`). ``bodies``: every symbol keeps its body node (the
    compact view folds it; :data:`lib.code.skeleton.KEEPS_NO_BODY_NODE`). ``name``: the name
    ``want`` looks for, which lets the extraction start from its occurrences.

    Where the language has a header scanner (:mod:`lib.code.scanners`) and the tree is not
    needed (``extract`` on, ``bodies`` off), the scanner answers and ``Parsed.tree`` is
    ``None``; it falls back to the tree-sitter parse whenever the scanner cannot vouch for the file.

    :raises ExitError: 1 read failure (a directory included), 2 unsupported extension.
    """
    if languages.backend_for(path) is None:
        source.regular(path, real)  # a directory is a bad path, not an unsupported extension
        languages.require_backend(path)
    src = source.read(path, config.limits.max_file_bytes, real)
    backend = languages.backend_for(path)
    if extract and not bodies and scanners.supports(backend):
        syms = scanners.outline(backend, src.data)
        if syms is not None:
            if want is not None:
                syms = [s for s in syms if want(s)]
            return src, languages.Parsed(backend, None, src.data, 0, 0), syms
    skip = (extract or backend in skeleton.IMPORTS_OUTSIDE_BODIES) and not (
        bodies and backend in skeleton.KEEPS_NO_BODY_NODE)
    parsed = languages.parse(path, src.data, skip_bodies=skip)
    syms = symbols.extract(parsed, want, name) if extract else None
    return src, parsed, syms


def run(path: str, config, *, json_mode: bool = False, show_saved: bool = True, no_doc: bool = False,
        no_lines: bool = False, real: str | None = None, counter: tokens.Counter = tokens.EXACT) -> Result:
    """The ``outline`` command; ``counter`` counts the saved metric exactly or estimates it.

    :raises ExitError: 1 read failure, 2 unsupported extension."""
    src, parsed, syms = load(path, config, real)
    show_doc = config.outline.show_doc and not no_doc
    before = counter.count(src.text) if show_saved else 0
    code = PARSE if parsed.errors else 0
    warnings, diagnostic = [], None
    if parsed.errors:
        warnings.append(f"parse failed ({parsed.errors} error node(s)); symbol list may be incomplete")
        diagnostic = f"tree-sitter reported {parsed.errors} syntax error node(s); symbol list may be incomplete"
    if json_mode:
        shown = _shown(syms, config.outline.fold_threshold)
        env = render.envelope("outline", path=path, language=parsed.language,
                              symbols=[s.as_json(lines=not no_lines, doc=show_doc) for s in shown])
        if len(shown) < len(syms):
            env["omitted"] = len(syms) - len(shown)
        if parsed.errors:
            env["parse_error"] = {"count": parsed.errors, "message": PARSE_MESSAGE}
        if show_saved:
            env["saved"] = counter.saved(before, counter.count(render.dumps(env)))
        return Result(render.dumps(env) + "\n", code, warnings, diagnostic)
    body = "".join(r + "\n" for r in rows(syms, not no_lines, config.outline.fold_threshold))
    if show_saved:
        after = counter.count(body)
        header = (f"# {path}  [{len(syms)} symbols, {render.human_bytes(len(src.data))} -> "
                  f"{counter.figure(after)} tokens, saved ~{tokens.percent(before, after)}%]")
    else:
        header = f"# {path}  [{len(syms)} symbols]"
    return Result(header + "\n" + body, code, warnings, diagnostic)
