"""What ctxlake writes into a runtime's config and how it knows its own (docs/design.md §6): the hook
command of each runtime in its exact shape, the MCP server entry, and the exact-shape tests that
recognise them (never by substring). Standard library only.
"""
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    """The shell-form hook command line for ``event`` (Cursor, Hermes): ``<python> -I -S -c
    <LAUNCHER> <hook.py> <runtime> <event> --fleet=<f> --agent=<a>`` (POSIX-quoted, the arguments of
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
                and os.path.isabs(t[3]) and t[4:6] == ["-I", "-S"] and our_script(t[6], ident)
                and t[7] == runtime and bool(t[8]))
    return bool(t) and _is_our_argv(t[0], t[1:], ident, runtime, allow_async=False)


ASYNC_FLAG = "--async"
"""The ``hook.py`` argument that marks an event the runtime does not wait for (capture only)."""


HOME_FLAG = "--home="
"""The ``hook.py`` argument naming a ``CTXLAKE_HOME`` other than the default (:func:`install_home`)."""


LAUNCHER = ("import os,sys;p=sys.argv[1]\n"
            "if not os.path.isfile(p):print('{}');print('ctxlake: hook '+p+' is gone: run `ctxlake install` "
            "again, or `ctxlake uninstall --all`',file=sys.stderr);sys.exit(0)\n"
            "del sys.argv[0];__file__=p;exec(compile(open(p,'rb').read(),p,'exec'))")
"""The ``-c`` program every installed hook command runs: it executes ``hook.py`` (its first
argument) as ``__main__``, or, when that file is gone (the tool uninstalled or upgraded, the
checkout moved), answers ``{}`` and exits 0. Without it the interpreter itself exits 2 on a
missing script ("can't open file"), which Claude Code's PreToolUse and Cursor's gate events read
as "block this call" (docs/runtimes.md "When the hook is gone"). Standard library only; it adds
one tiny ``compile`` to the start (bench/hook_latency.py)."""

LAUNCH_ARGS = ("-I", "-S", "-c", LAUNCHER)
"""What precedes ``hook.py`` in every command ``install`` writes."""
_DIRECT_ARGS = ("-I", "-S")
"""What preceded ``hook.py`` before the launcher (recognised, so an older install is replaced)."""


def hook_args(ident: Identity, runtime: str, event: str, *, run_async: bool = False) -> list[str]:
    """The exec-form arguments after the interpreter: ``-I -S -c <LAUNCHER> <hook.py> <runtime>
    <event> --fleet=<f> --agent=<a> [--home=<h>] [--async]`` (:data:`LAUNCHER` runs ``hook.py``,
    which parses the rest with :func:`lib.hookproc.parse_argv`);
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
    return ([*LAUNCH_ARGS, ident.hook_script, runtime, event, f"--fleet={ident.fleet_id}", f"--agent={ident.agent_id}"]
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
    """``cmd`` + ``args`` are exactly :func:`hook_args` (or the direct ``-I -S <hook.py>`` form
    written before :data:`LAUNCHER`) after an absolute interpreter path."""
    if not isinstance(cmd, str) or not os.path.isabs(cmd):
        return False
    lead = len(LAUNCH_ARGS) if tuple(args[:len(LAUNCH_ARGS)]) == LAUNCH_ARGS else len(_DIRECT_ARGS)
    if tuple(args[:2]) != _DIRECT_ARGS:
        return False
    args = args[lead:]
    rest = args[6:] if len(args) > 5 and args[5].startswith(HOME_FLAG) else args[5:]
    return (len(args) >= 5 and our_script(args[0], ident) and args[1] == runtime and bool(args[2])
            and args[3].startswith("--fleet=") and args[4].startswith("--agent=")
            and rest in ([], [ASYNC_FLAG] if allow_async else []))


def our_script(path, ident: Identity) -> bool:
    """True when ``path`` (the ``hook.py`` a command of our shape runs) is ours: this checkout's
    ``ident.hook_script``; any absolute ``…/hook.py`` when ``ident.hook_script`` is empty (the
    probe of :func:`lib.install.writer.installed_hooks`); or a ``…/hook.py`` that no longer exists
    (a dead install: the tool was uninstalled or moved), so ``install`` replaces it and
    ``uninstall`` removes it instead of leaving a command that cannot run."""
    if not isinstance(path, str) or not os.path.isabs(path) or os.path.basename(path) != "hook.py":
        return False
    return path == ident.hook_script or not ident.hook_script or not os.path.exists(path)


def hook_paths(hook: dict) -> tuple[str, str]:
    """``(interpreter, hook.py)`` an entry of ours runs (any shape :func:`is_our_hook` accepts;
    call it only on one that passed)."""
    args = hook.get("args")
    tokens = [hook["command"], *args] if isinstance(args, list) else shlex.split(hook["command"])
    if tokens[:1] == ["env"]:
        tokens = tokens[3:]
    return tokens[0], tokens[1 + (len(LAUNCH_ARGS) if tuple(tokens[1:1 + len(LAUNCH_ARGS)]) == LAUNCH_ARGS
                                  else len(_DIRECT_ARGS))]


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
