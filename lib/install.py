"""Wire ctxlake into agent runtimes: hook entries and MCP registration (docs/design.md §6, invariant 10).

``ctxlake install`` / ``uninstall`` edit files a person also edits, so the rules are strict:

- **merge, never clobber**: only ctxlake's own entries are added, replaced or removed; every other
  key, entry and (in YAML) comment outside the ``hooks:`` and ``mcp_servers:`` blocks survives;
- **ours by exact shape, never by substring** (reference bug 12.2 #30): a hook entry is ours when
  it has exactly the shape this module writes for this checkout's ``hook.py`` (:func:`is_our_hook`):
  Claude Code's exec form ``{"command": <python>, "args": ["-I", "-S", <hook.py>, "claude_code",
  <event>, "--fleet=…", "--agent=…", ("--home=…"), ("--async")]}``; Cursor's and Hermes' command
  string ``<python> -I -S <hook.py> <runtime> <event> --fleet=… --agent=… (--home=…)``; or the ``env
  CTXLAKE_FLEET_ID=… CTXLAKE_AGENT_ID=… <python> -I -S <hook.py> <runtime> <event>`` every
  runtime got before (replaced on install, removed on uninstall); an MCP server is ours when it is
  the ``ctxlake`` key of ``mcpServers`` (Hermes: ``mcp_servers``). A foreign command that merely mentions ctxlake is never
  touched;
- **idempotent**: a second install computes the same bytes and writes nothing;
- **``.bak`` only on change**: the previous bytes go to ``<file>.bak`` before a file changes;
- **malformed input is refused untouched** (:class:`MalformedFile`), with the file named;
- **exact uninstall**: ``uninstall`` strips what ``install`` added; when nothing else changed
  since, the ``.bak`` bytes come back (so install → uninstall restores the original bytes), and
  a file install created is removed.

Files (``home`` is the user's home; ``project`` a repository root for ``--project``):

==============  =====================================  ======================================
runtime         hooks                                  MCP server
==============  =====================================  ======================================
claude_code     ``.claude/settings.json``              ``~/.claude.json``
 ``--project``  ``<project>/.claude/settings.local.json``  ``~/.claude.json`` ``projects.<project>``
cursor          ``.cursor/hooks.json``                 ``.cursor/mcp.json``
hermes          ``$HERMES_HOME/config.yaml`` ``hooks:``  the same file, ``mcp_servers:`` ``ctxlake``
==============  =====================================  ======================================

``--project`` writes only the runtime's personal files: a hook command names this machine's
interpreter and checkout and speaks for one agent, so it must never land in the files a team
commits (``.claude/settings.json``, ``.mcp.json``); ours is stripped from those when an older
install put it there. Cursor and Hermes have no personal project file, so ``--project`` is
refused for them.

Claude Code hooks are exec form (spawned without a shell) and ``"async": true`` except where the
answer matters (:func:`claude_groups`). Hook commands run ``hook.py`` with the real interpreter (``os.path.realpath`` of
``sys.executable``; a pyenv ``/shims/`` path is refused) and ``-I -S``: the hook needs only the
standard library. The MCP server runs with the environment's own interpreter path (a virtualenv
keeps its packages) and gets ``CTXLAKE_FLEET_ID``/``CTXLAKE_AGENT_ID`` in its ``env`` block. A
``CTXLAKE_HOME`` other than the default reaches every entry (:func:`install_home`): ``--home=<dir>``
after ``--agent=`` in hook arguments, ``CTXLAKE_HOME`` in every MCP ``env`` block.
Hermes starts MCP servers with a filtered environment (only ``PATH``, ``HOME``, ``USER``, ``LANG``,
``LC_ALL``, ``TERM``, ``SHELL``, ``TMPDIR``, ``XDG_*`` pass, hermes-agent 0.19.0), so its entry also
carries the ``CTXLAKE_HOME``/``CTXLAKE_CONFIG``/``CTXLAKE_SPOOL_DIR``/``CTXLAKE_CACHE_DIR`` set where
``install`` runs (unset ones are left out: the server then uses the defaults, as the hooks do).

Nothing here touches the network or the store. PyYAML is imported only for Hermes.
"""
from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNTIMES = ("claude_code", "cursor", "hermes")
MCP_NAME = "ctxlake"
HERMES_TIMEOUT_SECS = 5
"""Hermes kills a hook after this many seconds; ours answers in milliseconds (fail open)."""
HERMES_BLOCKS = ("hooks", "mcp_servers")
"""The top-level keys of Hermes' config.yaml that install edits (everything else is kept byte for byte)."""
HERMES_PASS_ENV = ("CTXLAKE_HOME", "CTXLAKE_CONFIG", "CTXLAKE_SPOOL_DIR", "CTXLAKE_CACHE_DIR")
"""Location variables copied into Hermes' MCP entry (Hermes does not pass them through)."""


class InstallError(Exception):
    """The installation cannot proceed (bad interpreter, unsupported option); nothing was written."""


class MalformedFile(InstallError):
    """A runtime config file exists but cannot be parsed or has an unexpected shape; it was left
    untouched. ``path`` names it."""

    def __init__(self, path: str, detail: str):
        self.path = path
        super().__init__(f"{path}: {detail}; left untouched (fix or move it, then run again)")


# -- identity and commands ----------------------------------------------------------------


def resolve_interpreter(executable: str | None = None, *, keep_venv: bool = False) -> str:
    """Absolute path of the Python to write into runtime configs.

    ``os.path.realpath`` of ``executable`` (default ``sys.executable``), so a hook never runs
    through a version-manager shim; with ``keep_venv`` the un-resolved absolute path of a
    virtualenv's interpreter is kept (its ``site-packages`` belong to it).

    :raises InstallError: no interpreter path, or a path through ``/shims/`` (pyenv, asdf).
    """
    exe = executable or sys.executable
    if not exe:
        raise InstallError("cannot tell which Python runs ctxlake (sys.executable is empty)")
    absolute = os.path.abspath(exe)
    real = os.path.realpath(absolute)
    for candidate in (absolute, real):
        if "/shims/" in candidate.replace(os.sep, "/"):
            raise InstallError(f"{candidate} is a version-manager shim; run ctxlake with the real interpreter "
                               "(e.g. `$(pyenv which python) ctxlake.py install ...`)")
    if keep_venv and os.path.exists(os.path.join(os.path.dirname(os.path.dirname(absolute)), "pyvenv.cfg")):
        return absolute
    return real


@dataclass(frozen=True)
class Identity:
    """Who the installed hooks and MCP server speak for, and what they run.

    ``hook_python``/``mcp_python`` are absolute interpreter paths; ``hook_script`` and
    ``mcp_script`` absolute paths of this checkout's ``hook.py`` and ``mcp_server.py``; ``home``
    the absolute ``CTXLAKE_HOME`` they must write to, ``None`` for the default ``~/.ctxlake``
    (:func:`install_home`).
    """

    fleet_id: str
    agent_id: str
    hook_python: str
    mcp_python: str
    hook_script: str = os.path.join(ROOT, "hook.py")
    mcp_script: str = os.path.join(ROOT, "mcp_server.py")
    home: str | None = None

    @classmethod
    def current(cls, fleet_id: str, agent_id: str, executable: str | None = None,
                home: str | None = None) -> "Identity":
        """The identity for this process's interpreter and checkout. :raises InstallError:"""
        return cls(fleet_id, agent_id, resolve_interpreter(executable), resolve_interpreter(executable, keep_venv=True),
                   home=home)


def install_home(environ=None) -> str | None:
    """The ``CTXLAKE_HOME`` (absolute) every installed entry must carry, or ``None`` when it is the
    default ``~/.ctxlake``: a runtime starts hooks and MCP servers with its own environment, which
    seldom holds ``CTXLAKE_HOME``, and they would spool where ``sync`` never reads
    (docs/runtimes.md "Where the data goes"). :raises lib.paths.HomeError:"""
    from lib.paths import Paths

    home = Paths.from_env(environ).home
    return None if home == Paths.default(environ).home else home


def hook_command(ident: Identity, runtime: str, event: str) -> str:
    """The shell-form hook command line for ``event`` (Cursor, Hermes): ``<python> -I -S <hook.py>
    <runtime> <event> --fleet=<f> --agent=<a>`` (POSIX-quoted, the arguments of
    :func:`hook_args`). Cursor runs it through a shell (its only form), Hermes splits it with
    ``shlex`` and spawns it without one; neither needs ``env`` any more. Claude Code gets
    :func:`claude_hook` (exec form). :raises InstallError: see :func:`hook_args`."""
    return " ".join(shlex.quote(t) for t in [ident.hook_python, *hook_args(ident, runtime, event)])


def legacy_hook_command(ident: Identity, runtime: str, event: str) -> str:
    """The shape every runtime's hooks had before issue #22: ``env CTXLAKE_FLEET_ID=<f>
    CTXLAKE_AGENT_ID=<a> <python> -I -S <hook.py> <runtime> <event>``. Never written any more;
    recognised by :func:`is_our_command` so an older install is replaced and uninstalled."""
    q = shlex.quote
    return " ".join(["env", q(f"CTXLAKE_FLEET_ID={ident.fleet_id}"), q(f"CTXLAKE_AGENT_ID={ident.agent_id}"),
                     q(ident.hook_python), "-I", "-S", q(ident.hook_script), q(runtime), q(event)])


def is_our_command(command, ident: Identity, runtime: str) -> bool:
    """True when the command string ``command`` has exactly the shape :func:`hook_command` or
    :func:`legacy_hook_command` writes for this checkout's ``hook.py`` and ``runtime`` (any fleet,
    agent, interpreter and event). Never a substring test."""
    if not isinstance(command, str):
        return False
    try:
        t = shlex.split(command)
    except ValueError:
        return False
    if t[:1] == ["env"]:
        return (len(t) == 9 and t[1].startswith("CTXLAKE_FLEET_ID=") and t[2].startswith("CTXLAKE_AGENT_ID=")
                and os.path.isabs(t[3]) and t[4:6] == ["-I", "-S"] and t[6] == ident.hook_script
                and t[7] == runtime and bool(t[8]))
    return bool(t) and _is_our_argv(t[0], t[1:], ident, runtime, allow_async=False)


ASYNC_FLAG = "--async"
"""The ``hook.py`` argument that marks an event the runtime does not wait for (capture only)."""


HOME_FLAG = "--home="
"""The ``hook.py`` argument naming a ``CTXLAKE_HOME`` other than the default (:func:`install_home`)."""


def hook_args(ident: Identity, runtime: str, event: str, *, run_async: bool = False) -> list[str]:
    """The exec-form arguments after the interpreter: ``-I -S <hook.py> <runtime> <event>
    --fleet=<f> --agent=<a> [--home=<h>] [--async]`` (parsed by :func:`lib.hookproc.parse_argv`);
    ``--home`` only when ``ident.home`` is set.

    :raises InstallError: an id or home holding ``${`` (Claude Code substitutes ``${…}`` in
        ``args``), an id starting with ``-``.
    """
    for what, value in (("fleet", ident.fleet_id), ("agent", ident.agent_id)):
        if "${" in value or value.startswith("-") or not value:
            raise InstallError(f"{what} id {value!r} cannot be passed as a hook argument (empty, starts with '-' "
                               "or holds '${'); choose another id in the config")
    if ident.home is not None and "${" in ident.home:
        raise InstallError(f"CTXLAKE_HOME {ident.home!r} cannot be passed as a hook argument (holds '${{'); "
                           "choose another directory")
    return (["-I", "-S", ident.hook_script, runtime, event, f"--fleet={ident.fleet_id}", f"--agent={ident.agent_id}"]
            + ([HOME_FLAG + ident.home] if ident.home is not None else []) + ([ASYNC_FLAG] if run_async else []))


def claude_hook(ident: Identity, event: str, *, run_async: bool) -> dict:
    """One Claude Code exec-form command hook: ``{"type": "command", "command": <python>,
    "args": hook_args(...)}`` plus ``"async": true`` for an event the agent must not wait for.
    Exec form (``command`` + ``args``: spawned directly, no shell) and ``async`` as documented in
    the Claude Code hooks reference (docs/runtimes.md "Claude Code")."""
    hook = {"type": "command", "command": ident.hook_python,
            "args": hook_args(ident, "claude_code", event, run_async=run_async)}
    if run_async:
        hook["async"] = True
    return hook


def is_our_hook(hook, ident: Identity, runtime: str) -> bool:
    """True when the hook object ``hook`` (a Claude Code ``hooks[]`` item, a Cursor or Hermes
    entry) is ours: the exec form :func:`claude_hook` writes (Claude Code: any fleet, agent,
    interpreter, event; ``--async`` or not), or the shell form :func:`hook_command` writes (the
    only form for Cursor and Hermes; an older install for Claude Code). Never a substring test."""
    if not isinstance(hook, dict):
        return False
    args = hook.get("args")
    if args is None:
        return is_our_command(hook.get("command"), ident, runtime)
    if runtime != "claude_code" or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return False
    return _is_our_argv(hook.get("command"), args, ident, runtime, allow_async=True)


def _is_our_argv(cmd, args: list, ident: Identity, runtime: str, *, allow_async: bool) -> bool:
    """``cmd`` + ``args`` are exactly :func:`hook_args` after an absolute interpreter path."""
    rest = args[8:] if len(args) > 7 and args[7].startswith(HOME_FLAG) else args[7:]
    return (isinstance(cmd, str) and os.path.isabs(cmd) and len(args) >= 7 and args[:2] == ["-I", "-S"]
            and args[2] == ident.hook_script and args[3] == runtime and bool(args[4])
            and args[5].startswith("--fleet=") and args[6].startswith("--agent=")
            and rest in ([], [ASYNC_FLAG] if allow_async else []))


def claude_groups(ident: Identity, event: str) -> list[dict]:
    """The matcher groups ``install`` adds to ``hooks.<event>`` in Claude Code's settings.

    An event in the adapter's ``SYNC_EVENTS`` whose answer matters for every call (value
    ``None``: SessionStart's briefing, SessionEnd) gets one synchronous hook; one whose answer
    matters only for some tools (PreToolUse: the write tools' lease check) gets a synchronous
    hook with a ``matcher`` naming those tools and an async hook for every call (which skips the
    tools the synchronous one captures); every other event one async hook. docs/runtimes.md
    "Claude Code" gives the reasons."""
    from lib.adapters import claude_code

    tools = claude_code.SYNC_EVENTS.get(event, False)
    if tools is None:
        return [{"hooks": [claude_hook(ident, event, run_async=False)]}]
    groups = []
    if tools:
        groups.append({"matcher": "|".join(tools), "hooks": [claude_hook(ident, event, run_async=False)]})
    groups.append({"hooks": [claude_hook(ident, event, run_async=True)]})
    return groups


def hook_entries(doc: dict, runtime: str) -> list:
    """Every hook object in a runtime's parsed hook file (``hooks.<event>[]``; Claude Code:
    ``hooks.<event>[].hooks[]``), whatever its shape; never raises."""
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    out = []
    for entries in (hooks.values() if isinstance(hooks, dict) else ()):
        for e in entries if isinstance(entries, list) else ():
            inner = e.get("hooks") if runtime == "claude_code" and isinstance(e, dict) else [e]
            out += [h for h in inner if isinstance(h, dict)] if isinstance(inner, list) else []
    return out


def hook_identity(hook: dict) -> tuple[str, str]:
    """``(fleet_id, agent_id)`` an entry of ours speaks for (any of the shapes :func:`is_our_hook`
    accepts; call it only on one that passed)."""
    args = hook.get("args")
    tokens = args if isinstance(args, list) else shlex.split(hook["command"])
    if tokens[:1] == ["env"]:
        return tokens[1].split("=", 1)[1], tokens[2].split("=", 1)[1]
    flags = dict(t[2:].split("=", 1) for t in tokens if t.startswith(("--fleet=", "--agent=")))
    return flags["fleet"], flags["agent"]


def installed_identity(path: str, runtime: str) -> tuple[str, str] | None:
    """``(fleet_id, agent_id)`` the hooks of this checkout in ``path`` speak for (the first one
    found), or ``None`` when the file is absent, unreadable or holds none of ours."""
    probe = Identity("", "", "", "")
    try:
        text = _read(path)
        doc = _load_yaml(path, text) if runtime == "hermes" else _load_json(path, text)
    except InstallError:
        return None
    for hook in hook_entries(doc, runtime):
        if is_our_hook(hook, probe, runtime):
            return hook_identity(hook)
    return None


def mcp_entry(ident: Identity, *, claude: bool) -> dict:
    """``mcpServers.ctxlake``: ``{"command", "args", "env"}`` (+ ``"type": "stdio"`` for Claude Code);
    ``env`` holds the identity and, when ``ident.home`` is set, ``CTXLAKE_HOME``."""
    entry = {"type": "stdio"} if claude else {}
    entry.update(command=ident.mcp_python, args=[ident.mcp_script],
                 env={"CTXLAKE_FLEET_ID": ident.fleet_id, "CTXLAKE_AGENT_ID": ident.agent_id})
    if ident.home is not None:
        entry["env"]["CTXLAKE_HOME"] = ident.home
    return entry


def hermes_mcp_entry(ident: Identity, environ=None) -> dict:
    """``mcp_servers.ctxlake`` in Hermes' config.yaml: ``{"command", "args", "env"}``, ``env``
    holding the identity plus whichever of :data:`HERMES_PASS_ENV` is set in ``environ``
    (default ``os.environ``). Hermes names the tools ``mcp__ctxlake__<tool>``."""
    env = os.environ if environ is None else environ
    entry = mcp_entry(ident, claude=False)
    entry["env"].update({k: env[k] for k in HERMES_PASS_ENV if env.get(k)})
    if ident.home is not None:  # absolute, as the hooks get it
        entry["env"]["CTXLAKE_HOME"] = ident.home
    return entry


def adapter_events(runtime: str) -> tuple[str, ...]:
    """The events ``install`` wires for ``runtime``: the adapter's ``INSTALL_EVENTS``."""
    from lib import adapters

    return tuple(adapters.get(runtime).INSTALL_EVENTS)


# -- targets --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One file to edit: ``path``, ``kind`` (``claude_settings``, ``cursor_hooks``,
    ``hermes_config``, ``claude_mcp``, ``cursor_mcp``) and the ``runtime`` it belongs to.

    ``project`` (``claude_mcp`` only) is the repository whose entry in ``~/.claude.json``
    (``projects.<project>.mcpServers``, Claude Code's "local" scope) holds the server; ``legacy``
    marks a team file an older ``--project`` install wrote into: ours is only ever stripped from it.
    """

    path: str
    kind: str
    runtime: str
    project: str | None = None
    legacy: bool = False


def config_dir(runtime: str, home: str, environ=None) -> str:
    """The runtime's user config folder: ``~/.claude``, ``~/.cursor``, ``$HERMES_HOME`` or ``~/.hermes``."""
    env = os.environ if environ is None else environ
    if runtime == "hermes":
        return os.path.expanduser(env.get("HERMES_HOME") or os.path.join(home, ".hermes"))
    return os.path.join(home, {"claude_code": ".claude", "cursor": ".cursor"}[runtime])


def detect(home: str, environ=None) -> list[str]:
    """Runtimes whose config folder exists under ``home`` (what ``--all`` means)."""
    return [rt for rt in RUNTIMES if os.path.isdir(config_dir(rt, home, environ))]


def targets(runtime: str, home: str, project: str | None = None, environ=None) -> list[Target]:
    """The files ``install``/``uninstall`` edit for ``runtime``.

    :raises InstallError: unknown runtime, or ``project`` for Hermes (it has no project config).
    """
    if runtime not in RUNTIMES:
        raise InstallError(f"unknown runtime {runtime!r}; known: {', '.join(RUNTIMES)}")
    if runtime == "hermes":
        if project:
            raise InstallError("hermes has no project-level hook config; install it without --project")
        return [Target(os.path.join(config_dir("hermes", home, environ), "config.yaml"), "hermes_config", runtime)]
    if runtime == "claude_code":
        if project:
            project = os.path.abspath(project)
            return [Target(os.path.join(project, ".claude", "settings.local.json"), "claude_settings", runtime),
                    Target(os.path.join(home, ".claude.json"), "claude_mcp", runtime, project=project),
                    Target(os.path.join(project, ".claude", "settings.json"), "claude_settings", runtime, legacy=True),
                    Target(os.path.join(project, ".mcp.json"), "claude_mcp", runtime, legacy=True)]
        return [Target(os.path.join(home, ".claude", "settings.json"), "claude_settings", runtime),
                Target(os.path.join(home, ".claude.json"), "claude_mcp", runtime)]
    if project:
        raise InstallError("cursor has only team-shared project files (.cursor/hooks.json is committed), and a hook "
                           "command names this machine's paths; install it without --project (user hooks fire in "
                           "every project)")
    base = os.path.join(home, ".cursor")
    return [Target(os.path.join(base, "hooks.json"), "cursor_hooks", runtime),
            Target(os.path.join(base, "mcp.json"), "cursor_mcp", runtime)]


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


def _load_json(path: str, text: str | None) -> dict:
    if text is None or not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise MalformedFile(path, f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise MalformedFile(path, f"expected a JSON object at the top, found {type(doc).__name__}")
    return doc


def _sub(doc: dict, key: str, kind, path: str, where: str):
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise MalformedFile(path, f"{where}{key} is a {type(value).__name__}, expected {kind.__name__}")
    return value


def _strip_claude(doc: dict, ident: Identity, path: str) -> dict:
    """Remove our command hooks from ``hooks.<Event>[].hooks[]``; drop groups, event lists and
    the ``hooks`` object only when removing ours emptied them."""
    hooks = _sub(doc, "hooks", dict, path, "")
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


def _install_claude(doc: dict, ident: Identity, path: str) -> dict:
    """Ours replaced by fresh groups per installed event (:func:`claude_groups`), appended after
    foreign groups; an event already wired exactly is left as is. Older shell-form entries of ours
    are replaced (the upgrade path)."""
    events = adapter_events("claude_code")
    hooks = _sub(doc, "hooks", dict, path, "") or {}
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
    out = _strip_claude(doc, ident, path)
    new_hooks = dict(out.get("hooks") or {})
    for e in events:
        groups = new_hooks.get(e)
        if groups is not None and not isinstance(groups, list):
            raise MalformedFile(path, f"hooks.{e} is a {type(groups).__name__}, expected a list")
        new_hooks[e] = list(groups or []) + wanted[e]
    out["hooks"] = new_hooks
    return out


def _strip_cursor(doc: dict, ident: Identity, path: str) -> dict:
    """Remove our ``{"command": ...}`` entries from ``hooks.<event>[]``."""
    hooks = _sub(doc, "hooks", dict, path, "")
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


def _install_cursor(doc: dict, ident: Identity, path: str) -> dict:
    """``{"version": 1 (only if absent), "hooks": {<event>: [..., {"command": ours}]}}``."""
    events = adapter_events("cursor")
    hooks = _sub(doc, "hooks", dict, path, "") or {}
    current = {e: [h.get("command") for h in v if isinstance(h, dict) and is_our_command(h.get("command"), ident, "cursor")]
               for e, v in hooks.items() if isinstance(v, list)}
    current = {e: v for e, v in current.items() if v}
    wanted = {e: [hook_command(ident, "cursor", e)] for e in events}
    if current == wanted and "version" in doc:
        return doc
    out = _strip_cursor(doc, ident, path)
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
    projects = _sub(doc, "projects", dict, path, "")
    entry = _sub(projects or {}, project, dict, path, "projects.")
    if entry is None and not create:
        return None, None
    out = dict(doc)
    out["projects"] = dict(projects or {})
    out["projects"][project] = dict(entry or {})
    return out, out["projects"][project]


def _strip_mcp(doc: dict, path: str, project: str | None = None) -> dict:
    out, holder = _mcp_holder(doc, path, project, create=False)
    if holder is None:
        return doc
    servers = _sub(holder, "mcpServers", dict, path, "projects.<dir>." if project else "")
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


def _install_mcp(doc: dict, entry: dict, path: str, project: str | None = None) -> dict:
    out, holder = _mcp_holder(doc, path, project, create=True)
    servers = _sub(holder, "mcpServers", dict, path, "projects.<dir>." if project else "")
    if servers is not None and servers.get(MCP_NAME) == entry:
        return doc
    holder["mcpServers"] = dict(servers or {}, **{MCP_NAME: entry})
    return out


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


def _load_yaml(path: str, text: str | None) -> dict:
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


def _strip_hermes(hooks: dict, ident: Identity) -> dict:
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


def _hermes_entry(ident: Identity, event: str) -> dict:
    return {"command": hook_command(ident, "hermes", event), "timeout": HERMES_TIMEOUT_SECS, "fail_closed": False}


def _render_hermes(path: str, text: str | None, doc: dict, blocks: dict) -> str:
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
        reparsed = _load_yaml(path, new_text)
    except MalformedFile:
        reparsed = object()
    if reparsed != expected:
        raise MalformedFile(path, f"the {'/'.join(blocks)} block could not be replaced safely; edit it by hand")
    return new_text


def _splice_hermes_hooks(path: str, text: str | None, doc: dict, hooks: dict | None, wanted: dict) -> str | None:
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
        reparsed = _load_yaml(path, new_text)
    except MalformedFile:
        return None
    return new_text if reparsed == dict(doc, hooks=wanted) else None


def _outside_blocks(text: str) -> str:
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
        doc = _load_yaml(path, before)
        hooks = _sub(doc, "hooks", dict, path, "")
        servers = _sub(doc, "mcp_servers", dict, path, "")
        base = _strip_hermes(hooks or {}, ident)
        wanted = dict(base)
        for e in adapter_events("hermes"):
            entries = wanted.get(e)
            if entries is not None and not isinstance(entries, list):
                raise MalformedFile(path, f"hooks.{e} is a {type(entries).__name__}, expected a list")
            wanted[e] = list(entries or []) + [_hermes_entry(ident, e)]
        entry = hermes_mcp_entry(ident, environ)
        blocks = {}
        text = before
        if hooks is None or not _same_hermes(hooks, wanted, ident):
            spliced = _splice_hermes_hooks(path, before, doc, hooks, wanted) if hooks == base else None
            if spliced is None:
                blocks["hooks"] = wanted
            else:  # the user's own entries keep their quotes, flow lists and comments
                text, doc = spliced, dict(doc, hooks=wanted)
        if servers is None or servers.get(MCP_NAME) != entry:
            blocks["mcp_servers"] = dict(servers or {}, **{MCP_NAME: entry})
        if not blocks and text == before:
            return Change(target, before, before)
        return Change(target, before, _render_hermes(path, text, doc, blocks) if blocks else text,
                      ["Hermes asks once per new hook for consent: run `hermes` interactively once, "
                       "or pass --accept-hooks / set hooks_auto_accept"])
    doc = _load_json(path, before)
    merge = {"claude_settings": lambda d: _install_claude(d, ident, path),
             "cursor_hooks": lambda d: _install_cursor(d, ident, path)}.get(
        kind, lambda d: _install_mcp(d, mcp_entry(ident, claude=kind == "claude_mcp"), path, target.project))
    # The merge works on a deep copy and is compared with the document as parsed: a merge that
    # edited the document it is compared against once reported "unchanged" and wrote no hook.
    new = merge(copy.deepcopy(doc))
    if new == doc and before is not None:
        return Change(target, before, before)
    return Change(target, before, JsonStyle.of(before).dumps(new))


def _same_hermes(hooks: dict, wanted: dict, ident: Identity) -> bool:
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


def plan_uninstall(target: Target, ident: Identity) -> Change:
    """What ``uninstall`` would do to ``target``: strip ours; restore the ``.bak`` bytes when
    they hold exactly what is left (nothing else changed since install); remove the file when
    nothing but ours was in it. :raises MalformedFile:"""
    path, kind = target.path, target.kind
    before = _read(path)
    if before is None:
        return Change(target, None, None, mode="uninstall")
    if kind == "hermes_config":
        doc = _load_yaml(path, before)
        hooks = _sub(doc, "hooks", dict, path, "")
        servers = _sub(doc, "mcp_servers", dict, path, "")
        blocks = {}
        if hooks is not None:
            rest = _strip_hermes(hooks, ident)
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
        bak_doc = _load_quiet(_load_yaml, path, bak) if bak is not None else None
        if bak is not None and _norm(bak_doc) == _norm(stripped) and \
                (_outside_blocks(bak) == _outside_blocks(before) or bak_doc == {}):
            return Change(target, before, bak, mode="uninstall", from_bak=True)
        if not stripped and not _outside_blocks(before).strip():
            return Change(target, before, None, mode="uninstall")
        return Change(target, before, _render_hermes(path, before, doc, blocks), mode="uninstall")
    doc = _load_json(path, before)
    if kind == "claude_settings":
        stripped = _strip_claude(doc, ident, path)
    elif kind == "cursor_hooks":
        stripped = _strip_cursor(doc, ident, path)
    else:
        stripped = _strip_mcp(doc, path, target.project)
    if stripped == doc:
        return Change(target, before, before, mode="uninstall")
    bak = _bak_text(path)
    if bak is not None and _norm(_load_quiet(_load_json, path, bak)) == _norm(_without_added_version(kind, stripped, bak)):
        return Change(target, before, bak, mode="uninstall", from_bak=True)
    if _empty(kind, stripped):
        return Change(target, before, None, mode="uninstall")
    return Change(target, before, JsonStyle.of(before).dumps(stripped), mode="uninstall")


def _without_added_version(kind: str, stripped: dict, bak: str) -> dict:
    """``stripped`` without the ``"version": 1`` install adds to a Cursor hooks file, when the
    ``.bak`` (the file before install) had none: so ``{}`` or ``{"telemetry": false}`` come back."""
    if kind != "cursor_hooks" or stripped.get("version") != 1:
        return stripped
    old = _load_quiet(_load_json, "", bak)
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


def installed_identities(home: str | None = None) -> dict:
    """``{file: (fleet, agent)}`` of the hooks ``install`` wrote into this user's runtime files
    (and the current directory's ``.claude/settings.local.json``); files without ours are left out."""
    home = home or os.path.expanduser("~")
    found = {}
    for rt in RUNTIMES:
        paths = [targets(rt, home)[0].path]
        if rt == "claude_code":
            paths.append(os.path.join(os.getcwd(), ".claude", "settings.local.json"))
        for path in paths:
            ident = installed_identity(path, rt)
            if ident:
                found[path] = ident
    return found


def run_cli(action: str, args, cfg, out) -> int:
    """``ctxlake install``/``uninstall`` (``action``): pick the runtimes ``args`` name (or detect them),
    plan every file, then write it (or print its diff with ``--dry-run``), one line per file to ``out``;
    returns the exit code. :raises lib.failures.Failure: usage, a file it must not touch, or a file
    that still differs after the write (another program rewriting it)."""
    from lib.failures import Failure

    home = os.path.expanduser("~")
    if args.runtime and args.all:
        raise Failure("usage", f"{action}: give a runtime or --all, not both")
    if args.runtime:
        runtimes = [args.runtime.replace("-", "_")]
    else:
        if action == "install" and not args.all:
            raise Failure("usage", f"install: name a runtime ({', '.join(RUNTIMES)}) or --all")
        runtimes = detect(home) if not args.project else ["claude_code"]
        if not runtimes:
            raise Failure("refused", f"{action}: no runtime config folder found under {home} (.claude, .cursor, .hermes)")
    try:
        ident = Identity.current(cfg.fleet_id, args.agent_id or cfg.agent_id, home=install_home())
        changes = plan(action, runtimes, ident, home, os.getcwd() if args.project else None)
    except InstallError as exc:
        raise Failure("refused", f"{action}: {exc}")
    changes = [c for c in changes if c.changed or not c.target.legacy]  # a clean team file is not news
    for c in changes:
        if args.dry_run:
            out.write(c.diff())
        else:
            apply(c)
        verb = {"unchanged": "unchanged", "create": "create", "update": "update", "delete": "remove"}[c.action]
        out.write(f"{'would ' + verb if args.dry_run and c.changed else verb:<14} {c.target.path}"
                  + (f" (backup {c.target.path}.bak)" if c.writes_backup and not args.dry_run else "")
                  + (" (restored from its .bak)" if c.from_bak and not args.dry_run else "") + "\n")
        for note in c.notes if c.changed and action == "install" else []:
            out.write(f"               note: {note}\n")
    if not args.dry_run:
        pending = [c.target.path for c in plan(action, runtimes, ident, home, os.getcwd() if args.project else None)
                   if c.changed]
        if pending:  # never claim an install that is not on disk
            raise Failure("refused", f"{action}: {', '.join(pending)} still differ(s) from what {action} wrote; "
                                     "another program may be rewriting it: close the runtime and run again")
    if args.project and action == "install":
        out.write(project_note(os.getcwd()))
    if action == "install" and not args.dry_run:
        out.write(f"hooks speak for fleet {ident.fleet_id}, agent {ident.agent_id}; restart the runtime to load them\n")
        if cfg.source is None and not os.environ.get("CTXLAKE_FLEET_ID"):
            out.write("note: no ctxlake.toml found, so the fleet is 'default'; run `ctxlake init` and install again\n")
    return 0


def project_note(project: str) -> str:
    """What ``install --project`` leaves to commit and what stays personal (README "Install")."""
    import subprocess

    note = ("team files (commit them) are not edited: .claude/settings.json, .mcp.json; personal: "
            ".claude/settings.local.json (hooks) and ~/.claude.json projects entry (MCP server)\n")
    try:
        r = subprocess.run(["git", "-C", project, "check-ignore", "-q", ".claude/settings.local.json"],
                           capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return note
    if r.returncode == 1:  # a git repository that would commit the personal file
        note += ("note: .claude/settings.local.json is not git-ignored here; add it to .gitignore "
                 "so it is never committed\n")
    return note
