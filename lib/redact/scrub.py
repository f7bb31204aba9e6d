"""The scrub driver (docs/design.md §7 order): one text value through the rules — provider markers
and keyed rules (a marker withholds the whole value), structural spans in place, then the entropy
rule on what steps 2–3 left — with a second pass over the confusable-folded text; and
:func:`scrub_deep`, every string of a JSON-like value (the MCP write guard, docs/design.md §11)."""
from __future__ import annotations

from lib.redact.outcome import CLEAN, Outcome, withheld
from lib.redact.scan import _Scan
from lib.redact.keyed import _scan_keywords
from lib.redact.providers import _scan_rare, _scan_tokens, _scan_wide
from lib.redact.structural import _scan_structural
from lib.redact.entropy import _scan_entropy
from lib.redact.confusables import _needs_fold, fold_confusables


def _apply(b: bytes, spans: list) -> bytes:
    """Replace ``spans`` (start, end, placeholder) in ``b``; overlapping spans merge into the
    first one's placeholder. Spans are ASCII-bounded, so the result is valid UTF-8 when ``b``
    was."""
    spans.sort(key=lambda t: (t[0], -t[1]))
    out = []
    pos = 0
    cur_s, cur_e, cur_p = spans[0]
    for s, e, p in spans[1:]:
        if s < cur_e:
            cur_e = max(cur_e, e)
            continue
        out.append(b[pos:cur_s])
        out.append(cur_p)
        pos = cur_e
        cur_s, cur_e, cur_p = s, e, p
    out.append(b[pos:cur_s])
    out.append(cur_p)
    out.append(b[cur_e:])
    return b"".join(out)


def scrub(text: str, is_tool_output: bool = False) -> tuple[str, Outcome]:
    """Scrub one text value. Returns ``(text_to_store, Outcome)``; never raises on any ``str``.

    ``is_tool_output`` enables the entropy rule (tool input and result, not prose). A marker hit
    returns :func:`withheld` of the whole value with status ``quarantined``; otherwise spans are
    replaced in place (status ``redacted``) or the very same ``text`` object comes back with
    :data:`CLEAN`. Rules and their sources: module docstring; docs/design.md §7; docs/security.md, Redaction.

    >>> scrub("key AKIAQWERTYUIOPASDFGH here")[1].status
    'quarantined'
    >>> scrub("postgres://app:hunter22@db:5432/x")[0]
    'postgres://app:[ctxlake:redacted]@db:5432/x'
    """
    if not text:
        return text, CLEAN
    b = text.encode("utf-8", "surrogatepass")
    if _needs_fold(b):
        # Lookalike evasion ("pаssword" with a Cyrillic "а", "ｔｏｋｅｎ", "pass\u200bword"): the
        # folded text is scrubbed too; a rule that fires only there withholds the whole value.
        out, oc = _scrub_bytes(text, b, is_tool_output)
        try:
            folded = fold_confusables(text)
        except ValueError:  # lone surrogates: unicodedata refuses them
            return out, oc
        if folded != text:
            extra = set(_scrub_bytes(folded, folded.encode("utf-8", "surrogatepass"), is_tool_output)[1].rules) - set(oc.rules)
            if extra:
                return withheld(text), Outcome("quarantined", tuple(sorted(set(oc.rules) | extra | {"confusable_text"})))
        return out, oc
    return _scrub_bytes(text, b, is_tool_output)


def _scrub_bytes(text: str, b: bytes, is_tool_output: bool) -> tuple[str, Outcome]:
    """:func:`scrub` of ``text`` whose UTF-8 (``surrogatepass``) bytes are ``b``, no folding."""
    sc = _Scan(b)
    _scan_tokens(sc)
    _scan_keywords(sc)
    _scan_wide(sc)
    _scan_rare(sc)
    if sc.marks:
        return withheld(text), Outcome("quarantined", tuple(sorted(sc.marks)))
    _scan_structural(sc)
    rules = sc.inplace
    if sc.spans:
        b = _apply(b, sc.spans)
    if is_tool_output:
        # Step 4 runs on the text as steps 2-3 left it (docs/design.md §7 order): a run's entropy
        # is judged once, on what will be stored, so a second scrub sees the same runs.
        # Until nothing more is found (at most a few rounds): a kept-clean judgement may rest on
        # the text around a run ("<run>://<run>" reads as a URL's scheme and host), and a redacted
        # neighbour changes it, so the stored text must be one a second scrub leaves alone.
        for _ in range(4):
            ent = _Scan(b)
            if b is sc.b:
                ent.token_runs = sc.token_runs  # the same bytes: the marker scan's token runs hold
            _scan_entropy(ent)
            if not ent.spans:
                break
            b = _apply(b, ent.spans)
            rules = rules | ent.inplace
    if not rules:
        return text, CLEAN
    return b.decode("utf-8", "surrogatepass"), Outcome("redacted", tuple(sorted(rules)))


_BIG_INT = 10 ** 12


def scrub_deep(value, is_tool_output: bool = False):
    """Scrub every string at any depth of a JSON-like value (MCP write guard, docs/design.md §11).

    Returns ``(new_value, [Outcome, ...])`` with one outcome per changed leaf. Dict keys are
    scrubbed too; lists, tuples and dicts are rebuilt, other leaves kept. Integers of 13 digits
    or more are checked as text (a card number can arrive as a JSON number) and replaced by the
    scrubbed string when a rule fires. Never raises on JSON-like input.
    """
    outcomes: list = []

    def walk(v):
        if isinstance(v, str):
            t, o = scrub(v, is_tool_output)
            if o.status != "clean":
                outcomes.append(o)
            return t
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= _BIG_INT:
            t, o = scrub(str(v), is_tool_output)
            if o.status != "clean":
                outcomes.append(o)
                return t
        return v

    return walk(value), outcomes
