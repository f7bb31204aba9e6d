"""The JSON runtime files — Claude Code's settings and ``~/.claude.json``, Cursor's ``hooks.json`` and
``mcp.json`` — parsed, stripped of ctxlake's entries and given them again, every other key kept
as it was, and written back in the file's own style (:class:`JsonStyle`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from lib.install.commands import (
    Identity,
    MCP_NAME,
    MalformedFile,
    adapter_events,
    claude_groups,
    hook_command,
    is_our_command,
    is_our_hook,
)


# -- JSON documents -------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonStyle:
    """How a JSON file was written, so a rewrite changes only what it must: ``indent`` (spaces,
    a tab string, or ``None`` for a one-line document), ``ascii`` (non-ASCII escaped as ``\\uXXXX``), ``newline`` (trailing)."""

    indent: int | str | None = 2
    ascii: bool = False
    newline: bool = True

    @classmethod
    def of(cls, text: str | None) -> "JsonStyle":
        """The style of ``text``; a document written on one line stays on one line (``indent``
        ``None``), so install does not expand a hand-written compact file."""
        if not text or not text.strip():
            return cls()
        indent: int | str | None = 2
        m = re.search(r"\n([ \t]+)\S", text)
        if m:
            ws = m.group(1)
            indent = ws if "\t" in ws else len(ws)
        elif "\n" not in text.strip():
            indent = None
        return cls(indent=indent, ascii=text.isascii() and "\\u" in text, newline=text.endswith("\n"))

    def dumps(self, doc) -> str:
        out = json.dumps(doc, indent=self.indent, ensure_ascii=self.ascii)
        return out + "\n" if self.newline else out


def load_json(path: str, text: str | None) -> dict:
    """A runtime's JSON file ``text`` as an object (``{}`` when absent or empty).
    :raises MalformedFile: not JSON, or not an object at the top (the file is left untouched)."""
    if text is None or not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise MalformedFile(path, f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise MalformedFile(path, f"expected a JSON object at the top, found {type(doc).__name__}")
    return doc


def typed_member(doc: dict, key: str, kind, path: str, where: str):
    """``doc[key]`` when it is a ``kind`` (``None`` when absent). :raises MalformedFile: another type,
    named as ``<where><key>`` in ``path``."""
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise MalformedFile(path, f"{where}{key} is a {type(value).__name__}, expected {kind.__name__}")
    return value


def strip_claude(doc: dict, ident: Identity, path: str) -> dict:
    """Remove our command hooks from ``hooks.<Event>[].hooks[]``; drop groups, event lists and
    the ``hooks`` object only when removing ours emptied them."""
    hooks = typed_member(doc, "hooks", dict, path, "")
    if hooks is None:
        return dict(doc)
    new_hooks = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            new_hooks[event] = groups
            continue
        kept_groups, removed = [], False
        for g in groups:
            inner = g.get("hooks") if isinstance(g, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(g)
                continue
            kept = [h for h in inner if not is_our_hook(h, ident, "claude_code")]
            if len(kept) == len(inner):
                kept_groups.append(g)
                continue
            removed = True
            if kept:
                kept_groups.append(dict(g, hooks=kept))
        if kept_groups or not removed:
            new_hooks[event] = kept_groups
    out = dict(doc)
    if new_hooks or not hooks:
        out["hooks"] = new_hooks
    else:
        del out["hooks"]
    return out


def install_claude(doc: dict, ident: Identity, path: str) -> dict:
    """Ours replaced by fresh groups per installed event (:func:`claude_groups`), appended after
    foreign groups; an event already wired exactly is left as is. Older shell-form entries of ours
    are replaced (the upgrade path)."""
    events = adapter_events("claude_code")
    hooks = typed_member(doc, "hooks", dict, path, "") or {}
    current = {}
    for event, groups in hooks.items():
        if isinstance(groups, list):
            ours = [g for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                    and any(is_our_hook(h, ident, "claude_code") for h in g["hooks"])]
            if ours:
                current[event] = ours
    wanted = {e: claude_groups(ident, e) for e in events}
    if current == wanted:
        return doc
    out = strip_claude(doc, ident, path)
    new_hooks = dict(out.get("hooks") or {})
    for e in events:
        groups = new_hooks.get(e)
        if groups is not None and not isinstance(groups, list):
            raise MalformedFile(path, f"hooks.{e} is a {type(groups).__name__}, expected a list")
        new_hooks[e] = list(groups or []) + wanted[e]
    out["hooks"] = new_hooks
    return out


def strip_cursor(doc: dict, ident: Identity, path: str) -> dict:
    """Remove our ``{"command": ...}`` entries from ``hooks.<event>[]``."""
    hooks = typed_member(doc, "hooks", dict, path, "")
    if hooks is None:
        return dict(doc)
    new_hooks, removed_any = {}, False
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            new_hooks[event] = entries
            continue
        kept = [h for h in entries if not (isinstance(h, dict) and is_our_command(h.get("command"), ident, "cursor"))]
        if len(kept) != len(entries):
            removed_any = True
            if not kept:
                continue
        new_hooks[event] = kept
    out = dict(doc)
    if new_hooks or not removed_any:
        out["hooks"] = new_hooks
    else:
        del out["hooks"]
    return out


def install_cursor(doc: dict, ident: Identity, path: str) -> dict:
    """``{"version": 1 (only if absent), "hooks": {<event>: [..., {"command": ours}]}}``."""
    events = adapter_events("cursor")
    hooks = typed_member(doc, "hooks", dict, path, "") or {}
    current = {e: [h.get("command") for h in v if isinstance(h, dict) and is_our_command(h.get("command"), ident, "cursor")]
               for e, v in hooks.items() if isinstance(v, list)}
    current = {e: v for e, v in current.items() if v}
    wanted = {e: [hook_command(ident, "cursor", e)] for e in events}
    if current == wanted and "version" in doc:
        return doc
    out = strip_cursor(doc, ident, path)
    if "version" not in out:
        out = {"version": 1, **out}
    new_hooks = dict(out.get("hooks") or {})
    for e in events:
        entries = new_hooks.get(e)
        if entries is not None and not isinstance(entries, list):
            raise MalformedFile(path, f"hooks.{e} is a {type(entries).__name__}, expected a list")
        new_hooks[e] = list(entries or []) + [{"command": wanted[e][0]}]
    out["hooks"] = new_hooks
    return out


def _mcp_holder(doc: dict, path: str, project: str | None, create: bool):
    """``(outer, holder)``: the object holding ``mcpServers`` (``doc`` itself, or
    ``doc.projects[project]`` for Claude Code's local scope) and a copy of ``doc`` to edit
    (``None`` when the project entry is absent and ``create`` is false)."""
    if project is None:
        out = dict(doc)
        return out, out
    projects = typed_member(doc, "projects", dict, path, "")
    entry = typed_member(projects or {}, project, dict, path, "projects.")
    if entry is None and not create:
        return None, None
    out = dict(doc)
    out["projects"] = dict(projects or {})
    out["projects"][project] = dict(entry or {})
    return out, out["projects"][project]


def strip_mcp(doc: dict, path: str, project: str | None = None) -> dict:
    """``doc`` without the ``ctxlake`` MCP server (of ``projects.<project>`` with ``project``); an
    empty project entry install created goes too. Returns ``doc`` itself when there is none."""
    out, holder = _mcp_holder(doc, path, project, create=False)
    if holder is None:
        return doc
    servers = typed_member(holder, "mcpServers", dict, path, "projects.<dir>." if project else "")
    if servers is None or MCP_NAME not in servers:
        return doc
    rest = {k: v for k, v in servers.items() if k != MCP_NAME}
    if rest or project is not None:  # Claude Code keeps "mcpServers": {} in every project entry
        holder["mcpServers"] = rest
    else:
        del holder["mcpServers"]
    if project is not None and holder == {"mcpServers": {}}:  # the entry install created
        del out["projects"][project]
        if not out["projects"]:
            del out["projects"]
    return out


def install_mcp(doc: dict, entry: dict, path: str, project: str | None = None) -> dict:
    """``doc`` with ``entry`` as its ``ctxlake`` MCP server (of ``projects.<project>`` with
    ``project``), every other server kept. Returns ``doc`` itself when it already holds ``entry``."""
    out, holder = _mcp_holder(doc, path, project, create=True)
    servers = typed_member(holder, "mcpServers", dict, path, "projects.<dir>." if project else "")
    if servers is not None and servers.get(MCP_NAME) == entry:
        return doc
    holder["mcpServers"] = dict(servers or {}, **{MCP_NAME: entry})
    return out
