"""Wire ctxlake into agent runtimes: hook entries and MCP registration (docs/design.md §6, invariant 10).

``ctxlake install`` / ``uninstall`` edit files a person also edits, so the rules are strict:

- **merge, never clobber**: only ctxlake's own entries are added, replaced or removed; every other
  key, entry and (in YAML) comment outside the ``hooks:`` and ``mcp_servers:`` blocks survives;
- **ours by exact shape, never by substring** (reference bug 12.2 #30): a hook entry is ours when
  it has exactly the shape this module writes for this checkout's ``hook.py`` (:func:`is_our_hook`):
  Claude Code's exec form ``{"command": <python>, "args": ["-I", "-S", "-c", <LAUNCHER>, <hook.py>,
  "claude_code", <event>, "--fleet=…", "--agent=…", ("--home=…"), ("--async")]}``; Cursor's and
  Hermes' command string ``<python> -I -S -c <LAUNCHER> <hook.py> <runtime> <event> --fleet=…
  --agent=… (--home=…)``; the same without ``-c <LAUNCHER>`` (written before it); or the ``env
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
standard library, through the ``-c`` :data:`~lib.install.commands.LAUNCHER`, which answers ``{}``
and exits 0 when ``hook.py`` is gone (a bare ``python hook.py`` exits 2 then, and 2 blocks a
Claude Code or Cursor tool call). An entry of our shape whose ``hook.py`` no longer exists is a dead
install: ``install`` replaces it, ``uninstall`` removes it. The MCP server runs with the environment's own interpreter path (a virtualenv
keeps its packages) and gets ``CTXLAKE_FLEET_ID``/``CTXLAKE_AGENT_ID`` in its ``env`` block. A
``CTXLAKE_HOME`` other than the default reaches every entry (:func:`install_home`): ``--home=<dir>``
after ``--agent=`` in hook arguments, ``CTXLAKE_HOME`` in every MCP ``env`` block.
Hermes starts MCP servers with a filtered environment (only ``PATH``, ``HOME``, ``USER``, ``LANG``,
``LC_ALL``, ``TERM``, ``SHELL``, ``TMPDIR``, ``XDG_*`` pass, hermes-agent 0.19.0), so its entry also
carries the ``CTXLAKE_HOME``/``CTXLAKE_CONFIG``/``CTXLAKE_SPOOL_DIR``/``CTXLAKE_CACHE_DIR`` set where
``install`` runs (unset ones are left out: the server then uses the defaults, as the hooks do).

Nothing here touches the network or the store. PyYAML is imported only for Hermes.

The package, one module per part: :mod:`lib.install.commands` (what is written and how ours is
recognised), :mod:`lib.install.targets` (which files), :mod:`lib.install.jsonfiles` (Claude Code
and Cursor), :mod:`lib.install.hermes` (the YAML splicer), :mod:`lib.install.writer` (plan and
apply: merge, never clobber), :mod:`lib.install.cli` (the verbs). The names below are the
package's public ones, as they were when it was one module.
"""
from __future__ import annotations

from lib.install.commands import (  # noqa: F401
    ASYNC_FLAG,
    HERMES_BLOCKS,
    HERMES_PASS_ENV,
    HERMES_TIMEOUT_SECS,
    HOME_FLAG,
    LAUNCHER,
    LAUNCH_ARGS,
    Identity,
    InstallError,
    MCP_NAME,
    MalformedFile,
    ROOT,
    RUNTIMES,
    adapter_events,
    claude_groups,
    claude_hook,
    hermes_mcp_entry,
    hook_args,
    hook_command,
    hook_entries,
    hook_identity,
    hook_paths,
    install_home,
    is_our_command,
    is_our_hook,
    legacy_hook_command,
    mcp_entry,
    resolve_interpreter,
)
from lib.install.targets import (  # noqa: F401
    Target,
    config_dir,
    detect,
    targets,
)
from lib.install.jsonfiles import (  # noqa: F401
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
from lib.install.hermes import (  # noqa: F401
    hermes_entry,
    load_yaml,
    outside_blocks,
    render_hermes,
    same_hermes,
    splice_hermes_hooks,
    strip_hermes,
)
from lib.install.writer import (  # noqa: F401
    Change,
    apply,
    installed_hooks,
    installed_identity,
    installed_mcp,
    plan,
    plan_install,
    plan_uninstall,
)
from lib.install.cli import (  # noqa: F401
    installed_entries,
    installed_identities,
    missing_lines,
    project_note,
    run_cli,
)
