"""Hermes' ``config.yaml``: the splicer that replaces only ctxlake's part of the ``hooks:`` and
``mcp_servers:`` blocks and keeps every byte outside them (comments, order, quoting). PyYAML is
imported only here, and only when a Hermes file is read.
"""
from __future__ import annotations

import re

from lib.install.commands import (
    HERMES_BLOCKS,
    HERMES_TIMEOUT_SECS,
    Identity,
    InstallError,
    MalformedFile,
    hook_command,
    is_our_command,
)


# -- Hermes YAML: splice the top-level hooks: block ------------------------------------------


def _top_key(key: str):
    return re.compile(rf"""^(?:{key}|"{key}"|'{key}')[ \t]*:(?:[ \t]|$)""")


def _top_block(lines: list[str], key: str) -> tuple[int, int] | None:
    """``(start, end)`` line indexes of the top-level ``key:`` block: from its key line to the
    next column-0 key or document marker; trailing blank lines and column-0 comments are left
    outside it (they belong to what follows). :raises ValueError: the key appears twice."""
    pattern = _top_key(key)
    starts = [i for i, ln in enumerate(lines) if pattern.match(ln)]
    if not starts:
        return None
    if len(starts) > 1:
        raise ValueError(f"more than one top-level {key}: key")
    start = starts[0]
    end = len(lines)
    for i in range(start + 1, len(lines)):
        ln = lines[i]
        if ln.strip() and not ln[0].isspace() and not ln.startswith("#"):
            end = i
            break
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return start, end


def _yaml():
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - requirements.txt pins PyYAML
        raise InstallError("editing Hermes' config.yaml needs PyYAML (pip install -r requirements.txt)") from exc
    return yaml


def load_yaml(path: str, text: str | None) -> dict:
    """A Hermes ``config.yaml``'s ``text`` as a mapping (``{}`` when absent or empty).
    :raises MalformedFile: not YAML, or not a mapping at the top (the file is left untouched)."""
    if text is None or not text.strip():
        return {}
    yaml = _yaml()
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MalformedFile(path, f"not valid YAML ({str(exc).splitlines()[0]})") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise MalformedFile(path, f"expected a mapping at the top, found {type(doc).__name__}")
    return doc


def strip_hermes(hooks: dict, ident: Identity) -> dict:
    """``hooks`` (the ``hooks:`` block) without ctxlake's entries (:func:`lib.install.commands.is_our_command`);
    an event left with none of its entries is dropped, foreign entries are kept as they are."""
    out = {}
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            out[event] = entries
            continue
        kept = [h for h in entries if not (isinstance(h, dict) and is_our_command(h.get("command"), ident, "hermes"))]
        if len(kept) != len(entries) and not kept:
            continue
        out[event] = kept
    return out


def hermes_entry(ident: Identity, event: str) -> dict:
    """ctxlake's ``hooks:`` entry for ``event``: our command, Hermes' timeout, never fail closed."""
    return {"command": hook_command(ident, "hermes", event), "timeout": HERMES_TIMEOUT_SECS, "fail_closed": False}


def render_hermes(path: str, text: str | None, doc: dict, blocks: dict) -> str:
    """``text`` with each top-level block named in ``blocks`` replaced by its new value (removed
    when the value is ``None``, appended at the end when absent), every other line kept byte for
    byte. Checked by re-parsing: the result must load as ``doc`` with ``blocks`` applied, else
    :class:`MalformedFile`."""
    yaml = _yaml()
    text = text or ""
    lines = text.splitlines(keepends=True)
    if not doc:  # an empty mapping (``{}``, ``---``): keep its comments, drop the flow-style ``{}`` line
        lines = [ln for ln in lines if not ln.strip() or ln.lstrip().startswith("#")]
    spans = {}
    for key in blocks:
        try:
            spans[key] = _top_block(lines, key)
        except ValueError as exc:
            raise MalformedFile(path, str(exc)) from None
        if spans[key] is None and key in doc:
            raise MalformedFile(path, f"{key} is not a plain top-level block (flow style or nested document?); "
                                      "edit it by hand")
    eol = "\r\n" if "\r\n" in text else "\n"
    rendered = {}
    for key, value in blocks.items():
        rendered[key] = []
        if value is not None:
            dumped = yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=False, allow_unicode=True,
                                    width=1 << 16, indent=2)
            rendered[key] = [ln + eol for ln in dumped.splitlines()]
    new_lines = list(lines)
    for key, span in sorted(((k, v) for k, v in spans.items() if v), key=lambda kv: -kv[1][0]):
        new_lines[span[0]:span[1]] = rendered[key]
    for key in blocks:
        if spans[key] is None and rendered[key]:
            if new_lines and not new_lines[-1].endswith(("\n", "\r")):
                new_lines[-1] += eol
            new_lines += rendered[key]
    new_text = "".join(new_lines)
    expected = dict(doc)
    for key, value in blocks.items():
        if value is None:
            expected.pop(key, None)
        else:
            expected[key] = value
    try:
        reparsed = load_yaml(path, new_text)
    except MalformedFile:
        reparsed = object()
    if reparsed != expected:
        raise MalformedFile(path, f"the {'/'.join(blocks)} block could not be replaced safely; edit it by hand")
    return new_text


def splice_hermes_hooks(path: str, text: str | None, doc: dict, hooks: dict | None, wanted: dict) -> str | None:
    """``text`` with ours appended to the existing block-style ``hooks:`` mapping line by line
    (each event's list gets its entries after the user's; a missing event is added at the end of
    the block), every user line kept byte for byte; ``None`` when the block is absent, not in
    block style, or the result does not re-parse to ``wanted`` (then the block is re-rendered)."""
    if not text or not hooks:
        return None
    yaml = _yaml()
    lines = text.splitlines(keepends=True)
    try:
        span = _top_block(lines, "hooks")
    except ValueError:
        return None
    if span is None or lines[span[0]].split(":", 1)[1].split("#", 1)[0].strip():
        return None  # absent, or ``hooks: {...}`` in flow style
    start, end = span
    eol = "\r\n" if "\r\n" in text else "\n"
    body = [i for i in range(start + 1, end) if lines[i].strip() and not lines[i].lstrip().startswith("#")]
    if not body:
        return None
    indent = len(lines[body[0]]) - len(lines[body[0]].lstrip())
    inserts: dict[int, list[str]] = {}
    tail: list[str] = []
    for event, entries in wanted.items():
        added = entries[len(hooks.get(event) or []):]
        if not added:
            continue
        key = [i for i in body if len(lines[i]) - len(lines[i].lstrip()) == indent
               and _top_key(re.escape(event)).match(lines[i][indent:])]
        dumped = yaml.safe_dump(added, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16)
        if not key:
            tail += [" " * indent + f"{event}:" + eol] + [" " * (indent + 2) + ln + eol for ln in dumped.splitlines()]
            continue
        k = key[0]
        if lines[k].split(":", 1)[1].split("#", 1)[0].strip():
            return None  # ``event: [...]``: flow style, re-render
        items = [i for i in body if i > k and (len(lines[i]) - len(lines[i].lstrip()) > indent)]
        nxt = next((i for i in body if i > k and len(lines[i]) - len(lines[i].lstrip()) <= indent), end)
        items = [i for i in items if i < nxt]
        if not items:
            return None
        item_indent = len(lines[items[0]]) - len(lines[items[0]].lstrip())
        inserts[items[-1] + 1] = [" " * item_indent + ln + eol for ln in dumped.splitlines()]
    out = []
    for i, ln in enumerate(lines):
        if i == end:
            out += tail
        out += inserts.get(i, [])
        if i == end - 1 and not ln.endswith(("\n", "\r")):
            ln += eol
        out.append(ln)
    if end == len(lines):
        out += inserts.get(end, []) + tail
    new_text = "".join(out)
    try:
        reparsed = load_yaml(path, new_text)
    except MalformedFile:
        return None
    return new_text if reparsed == dict(doc, hooks=wanted) else None


def outside_blocks(text: str) -> str:
    """``text`` without the blocks install edits (what must be unchanged for a ``.bak`` restore)."""
    lines = text.splitlines(keepends=True)
    drop = set()
    for key in HERMES_BLOCKS:
        try:
            span = _top_block(lines, key)
        except ValueError:
            return text
        if span:
            drop.update(range(*span))
    return "".join(ln for i, ln in enumerate(lines) if i not in drop)


def same_hermes(hooks: dict, wanted: dict, ident: Identity) -> bool:
    """True when ``hooks`` already holds exactly ``wanted`` with ours in place (order-insensitive
    only in where ours sit among foreign entries)."""
    def ours(d):
        return {e: [h for h in v if isinstance(h, dict) and is_our_command(h.get("command"), ident, "hermes")]
                for e, v in d.items() if isinstance(v, list)}

    def theirs(d):
        return {e: [h for h in v if not (isinstance(h, dict) and is_our_command(h.get("command"), ident, "hermes"))]
                if isinstance(v, list) else v for e, v in d.items()}

    strip_empty = lambda d: {e: v for e, v in d.items() if v}  # noqa: E731
    return strip_empty(ours(hooks)) == strip_empty(ours(wanted)) and strip_empty(theirs(hooks)) == strip_empty(theirs(wanted))
