"""Which files ``install`` edits for a runtime (the table in :mod:`lib.install`), found under a home
and, with ``--project``, a repository.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from lib.install.commands import InstallError, RUNTIMES


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
