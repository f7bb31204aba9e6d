"""Merge, never clobber (the rules in :mod:`lib.install`): a :class:`Change` per file — planned
from the file's current bytes, idempotent, ``.bak`` only on change, an uninstall that restores the
``.bak`` bytes when nothing else changed — and :func:`apply`, the one writer.
"""
from __future__ import annotations

import copy
import difflib
import os
from dataclasses import dataclass, field

from lib.install.commands import (
    Identity,
    InstallError,
    MCP_NAME,
    MalformedFile,
    adapter_events,
    hermes_mcp_entry,
    hook_entries,
    hook_identity,
    hook_paths,
    is_our_hook,
    mcp_entry,
)
from lib.install.hermes import (
    hermes_entry,
    load_yaml,
    outside_blocks,
    render_hermes,
    same_hermes,
    splice_hermes_hooks,
    strip_hermes,
)
from lib.install.jsonfiles import (
    JsonStyle,
    install_claude,
    install_cursor,
    install_mcp,
    load_json,
    strip_claude,
    strip_cursor,
    strip_mcp,
    typed_member,
)
from lib.install.targets import Target, targets


def installed_identity(path: str, runtime: str) -> tuple[str, str] | None:
    """``(fleet_id, agent_id)`` the hooks of this checkout in ``path`` speak for (the first one
    found), or ``None`` when the file is absent, unreadable or holds none of ours."""
    probe = Identity("", "", "", "")
    try:
        text = _read(path)
        doc = load_yaml(path, text) if runtime == "hermes" else load_json(path, text)
    except InstallError:
        return None
    for hook in hook_entries(doc, runtime):
        if is_our_hook(hook, probe, runtime):
            return hook_identity(hook)
    return None


def installed_hooks(path: str, runtime: str) -> list[dict]:
    """Every hook entry of our shape in ``path``, from any checkout: ``{"fleet_id", "agent_id",
    "python", "script", "missing"}``, ``missing`` listing which of the interpreter and ``hook.py``
    no longer exist (a runtime then spawns a command that cannot start). ``[]`` when the file is
    absent, unreadable or holds none of ours."""
    probe = Identity("", "", "", "", hook_script="")
    try:
        text = _read(path)
        doc = load_yaml(path, text) if runtime == "hermes" else load_json(path, text)
    except InstallError:
        return []
    out = []
    for hook in hook_entries(doc, runtime):
        if is_our_hook(hook, probe, runtime):
            (fleet, agent), (python, script) = hook_identity(hook), hook_paths(hook)
            out.append({"fleet_id": fleet, "agent_id": agent, "python": python, "script": script,
                        "missing": [f for f in (python, script) if not os.path.exists(f)]})
    return out


def installed_mcp(target: Target) -> dict | None:
    """The ``ctxlake`` MCP server entry in ``target`` (a ``claude_mcp``, ``cursor_mcp`` or
    ``hermes_config`` file): ``{"command", "script", "missing"}`` (``missing``: which of the
    interpreter and ``mcp_server.py`` no longer exist), or ``None`` when there is none."""
    try:
        text = _read(target.path)
        doc = load_yaml(target.path, text) if target.kind == "hermes_config" else load_json(target.path, text)
    except InstallError:
        return None
    holder = doc
    if target.project is not None:
        holder = (doc.get("projects") or {}).get(target.project) if isinstance(doc.get("projects"), dict) else None
    servers = holder.get("mcp_servers" if target.kind == "hermes_config" else "mcpServers") \
        if isinstance(holder, dict) else None
    entry = servers.get(MCP_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    args = entry.get("args") if isinstance(entry.get("args"), list) else []
    files = [entry["command"]] + [a for a in args[:1] if isinstance(a, str) and a.endswith(".py")]
    return {"command": entry["command"], "script": files[1] if len(files) > 1 else None,
            "missing": [f for f in files if os.path.isabs(f) and not os.path.exists(f)]}


# -- plan and apply -------------------------------------------------------------------------


@dataclass
class Change:
    """One file's planned edit: ``before``/``after`` text (``None`` = absent). ``after is None``
    with ``before`` set means delete. ``created`` is True when install makes a new file."""

    target: Target
    before: str | None
    after: str | None
    notes: list[str] = field(default_factory=list)
    mode: str = "install"
    """``install`` (the previous bytes go to ``<file>.bak``) or ``uninstall`` (no new ``.bak``)."""
    from_bak: bool = False
    """``after`` is the ``.bak`` install kept: applying restores it and removes the ``.bak``."""

    @property
    def writes_backup(self) -> bool:
        """True when :func:`apply` saves the previous bytes to ``<file>.bak``."""
        return self.mode == "install" and self.changed and self.before is not None and self.after is not None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def action(self) -> str:
        """``create``, ``update``, ``delete`` or ``unchanged``."""
        if not self.changed:
            return "unchanged"
        return "create" if self.before is None else "delete" if self.after is None else "update"

    def diff(self) -> str:
        """Unified diff of the edit (empty when unchanged)."""
        if not self.changed:
            return ""
        a = (self.before or "").splitlines(keepends=True)
        b = (self.after or "").splitlines(keepends=True)
        for seq in (a, b):
            if seq and not seq[-1].endswith("\n"):
                seq[-1] += "\n\\ No newline at end of file\n"
        return "".join(difflib.unified_diff(a, b, fromfile=self.target.path if self.before is not None else "/dev/null",
                                            tofile=self.target.path if self.after is not None else "/dev/null"))


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedFile(path, "not UTF-8 text") from None


def _empty(kind: str, doc: dict) -> bool:
    return not doc or (kind == "cursor_hooks" and doc == {"version": 1})


def plan_install(target: Target, ident: Identity, environ=None) -> Change:
    """What ``install`` would do to ``target`` (reads it, writes nothing). ``environ`` (default
    ``os.environ``) supplies the location variables of Hermes' MCP entry.

    :raises MalformedFile: the file exists and cannot be understood.
    """
    path, kind = target.path, target.kind
    before = _read(path)
    if kind == "hermes_config":
        doc = load_yaml(path, before)
        hooks = typed_member(doc, "hooks", dict, path, "")
        servers = typed_member(doc, "mcp_servers", dict, path, "")
        base = strip_hermes(hooks or {}, ident)
        wanted = dict(base)
        for e in adapter_events("hermes"):
            entries = wanted.get(e)
            if entries is not None and not isinstance(entries, list):
                raise MalformedFile(path, f"hooks.{e} is a {type(entries).__name__}, expected a list")
            wanted[e] = list(entries or []) + [hermes_entry(ident, e)]
        entry = hermes_mcp_entry(ident, environ)
        blocks = {}
        text = before
        if hooks is None or not same_hermes(hooks, wanted, ident):
            spliced = splice_hermes_hooks(path, before, doc, hooks, wanted) if hooks == base else None
            if spliced is None:
                blocks["hooks"] = wanted
            else:  # the user's own entries keep their quotes, flow lists and comments
                text, doc = spliced, dict(doc, hooks=wanted)
        if servers is None or servers.get(MCP_NAME) != entry:
            blocks["mcp_servers"] = dict(servers or {}, **{MCP_NAME: entry})
        if not blocks and text == before:
            return Change(target, before, before)
        return Change(target, before, render_hermes(path, text, doc, blocks) if blocks else text,
                      ["Hermes asks once per new hook for consent: run `hermes` interactively once, "
                       "or pass --accept-hooks / set hooks_auto_accept"])
    doc = load_json(path, before)
    merge = {"claude_settings": lambda d: install_claude(d, ident, path),
             "cursor_hooks": lambda d: install_cursor(d, ident, path)}.get(
        kind, lambda d: install_mcp(d, mcp_entry(ident, claude=kind == "claude_mcp"), path, target.project))
    # The merge works on a deep copy and is compared with the document as parsed: a merge that
    # edited the document it is compared against once reported "unchanged" and wrote no hook.
    new = merge(copy.deepcopy(doc))
    if new == doc and before is not None:
        return Change(target, before, before)
    return Change(target, before, JsonStyle.of(before).dumps(new))


def plan_uninstall(target: Target, ident: Identity) -> Change:
    """What ``uninstall`` would do to ``target``: strip ours; restore the ``.bak`` bytes when
    they hold exactly what is left (nothing else changed since install); remove the file when
    nothing but ours was in it. :raises MalformedFile:"""
    path, kind = target.path, target.kind
    before = _read(path)
    if before is None:
        return Change(target, None, None, mode="uninstall")
    if kind == "hermes_config":
        doc = load_yaml(path, before)
        hooks = typed_member(doc, "hooks", dict, path, "")
        servers = typed_member(doc, "mcp_servers", dict, path, "")
        blocks = {}
        if hooks is not None:
            rest = strip_hermes(hooks, ident)
            if rest != hooks:
                blocks["hooks"] = rest or None
        if servers is not None and MCP_NAME in servers:
            blocks["mcp_servers"] = {k: v for k, v in servers.items() if k != MCP_NAME} or None
        if not blocks:
            return Change(target, before, before, mode="uninstall")
        stripped = dict(doc)
        for key, value in blocks.items():
            if value is None:
                stripped.pop(key)
            else:
                stripped[key] = value
        bak = _bak_text(path)
        bak_doc = _load_quiet(load_yaml, path, bak) if bak is not None else None
        if bak is not None and _norm(bak_doc) == _norm(stripped) and \
                (outside_blocks(bak) == outside_blocks(before) or bak_doc == {}):
            return Change(target, before, bak, mode="uninstall", from_bak=True)
        if not stripped and not outside_blocks(before).strip():
            return Change(target, before, None, mode="uninstall")
        return Change(target, before, render_hermes(path, before, doc, blocks), mode="uninstall")
    doc = load_json(path, before)
    if kind == "claude_settings":
        stripped = strip_claude(doc, ident, path)
    elif kind == "cursor_hooks":
        stripped = strip_cursor(doc, ident, path)
    else:
        stripped = strip_mcp(doc, path, target.project)
    if stripped == doc:
        return Change(target, before, before, mode="uninstall")
    bak = _bak_text(path)
    if bak is not None and _norm(_load_quiet(load_json, path, bak)) == _norm(_without_added_version(kind, stripped, bak)):
        return Change(target, before, bak, mode="uninstall", from_bak=True)
    if _empty(kind, stripped):
        return Change(target, before, None, mode="uninstall")
    return Change(target, before, JsonStyle.of(before).dumps(stripped), mode="uninstall")


def _without_added_version(kind: str, stripped: dict, bak: str) -> dict:
    """``stripped`` without the ``"version": 1`` install adds to a Cursor hooks file, when the
    ``.bak`` (the file before install) had none: so ``{}`` or ``{"telemetry": false}`` come back."""
    if kind != "cursor_hooks" or stripped.get("version") != 1:
        return stripped
    old = _load_quiet(load_json, "", bak)
    if isinstance(old, dict) and "version" not in old:
        return {k: v for k, v in stripped.items() if k != "version"}
    return stripped


def _norm(value):
    """``value`` with empty lists and objects dropped at any depth: install → strip cannot tell an
    event list the user left empty from one it emptied, so the ``.bak`` comparison ignores them."""
    if isinstance(value, dict):
        out = {k: _norm(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def _bak_text(path: str) -> str | None:
    try:
        return _read(path + ".bak")
    except InstallError:
        return None


def _load_quiet(loader, path, text):
    try:
        return loader(path, text)
    except InstallError:
        return object()


def apply(change: Change) -> None:
    """Write ``change``. Install: the previous bytes to ``<path>.bak`` first (only when the file
    existed and changes), then the new bytes atomically (temp file + fsync + rename). Uninstall:
    no new ``.bak``; a ``.bak`` whose bytes were restored is removed, and so is a file that held
    nothing but ctxlake's entries, with its folder when that is left empty (a ``~/.cursor``
    install created). Nothing happens for an unchanged file."""
    if not change.changed:
        return
    from lib.spool import atomic_write

    path = change.target.path
    if change.after is None:  # only ctxlake's own entries were left: nothing of the user's to back up
        os.unlink(path)
        try:
            os.rmdir(os.path.dirname(path))  # only succeeds when empty
        except OSError:
            pass
        return
    if change.writes_backup:
        atomic_write(path + ".bak", change.before.encode("utf-8"), mode=_mode(path))
    real = os.path.realpath(path)  # a dotfiles symlink stays a symlink; its target gets the bytes
    os.makedirs(os.path.dirname(real), exist_ok=True)
    atomic_write(real, change.after.encode("utf-8"), mode=_mode(path))
    if change.from_bak:
        try:
            os.unlink(path + ".bak")
        except FileNotFoundError:
            pass


def _mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        return 0o600 if os.path.basename(path) == ".claude.json" else 0o644


def plan(action: str, runtimes: list[str], ident: Identity, home: str, project: str | None = None,
         environ=None) -> list[Change]:
    """Every file edit ``install``/``uninstall`` (``action``) would make for ``runtimes``.

    All files are read and checked before anything is written, so a malformed file stops the
    whole run untouched. :raises InstallError: (and :class:`MalformedFile`)
    """
    if action not in ("install", "uninstall"):
        raise ValueError(f"unknown action {action!r}")
    return [plan_install(t, ident, environ) if action == "install" and not t.legacy else plan_uninstall(t, ident)
            for rt in runtimes for t in targets(rt, home, project, environ)]
