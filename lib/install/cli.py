"""``ctxlake install`` / ``uninstall``: choose the runtimes, plan every file, write it or print its
diff, and the identities the installed hooks speak (``ctxlake init``, ``ctxlake status``).
"""
from __future__ import annotations

import os

from lib.install.commands import Identity, InstallError, RUNTIMES, install_home
from lib.install.targets import detect, targets
from lib.install.writer import apply, installed_hooks, installed_identity, installed_mcp, plan


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


def installed_entries(home: str | None = None) -> list[dict]:
    """Every hook and MCP entry of ctxlake's in this user's runtime files (any checkout; the
    current directory's ``.claude/settings.local.json`` and its ``~/.claude.json`` project entry
    too): ``{"file", "runtime", "what": "hooks"|"mcp", "fleet_id", "agent_id", "missing"}`` per
    file and kind (``fleet_id``/``agent_id`` ``None`` for MCP), ``missing`` naming the files the
    entries run that no longer exist (fix: ``ctxlake install <runtime>`` again, docs/runtimes.md
    "When the hook is gone"). Never raises on a malformed file (it is left out)."""
    home = home or os.path.expanduser("~")
    found = []
    for rt in RUNTIMES:
        tgts = targets(rt, home)
        if rt == "claude_code":
            tgts += [t for t in targets(rt, home, os.getcwd()) if not t.legacy]
        for t in tgts:
            if t.kind in ("claude_settings", "cursor_hooks", "hermes_config"):
                hooks = installed_hooks(t.path, rt)
                if hooks:
                    found.append({"file": t.path, "runtime": rt, "what": "hooks", "fleet_id": hooks[0]["fleet_id"],
                                  "agent_id": hooks[0]["agent_id"],
                                  "missing": sorted({m for h in hooks for m in h["missing"]})})
            if t.kind in ("claude_mcp", "cursor_mcp", "hermes_config"):
                mcp = installed_mcp(t)
                if mcp:
                    found.append({"file": t.path + (f" (project {t.project})" if t.project else ""), "runtime": rt,
                                  "what": "mcp", "fleet_id": None, "agent_id": None, "missing": mcp["missing"]})
    return found


def missing_lines(entries: list[dict]) -> list[str]:
    """One line per entry of :func:`installed_entries` that runs a file which no longer exists,
    with the fix; ``[]`` when every entry can start."""
    return [f"{e['what']} in {e['file']} run {', '.join(e['missing'])}, which no longer exist(s): the runtime cannot "
            f"start them; run `ctxlake install {e['runtime']}` again (or `ctxlake uninstall {e['runtime']}`)"
            for e in entries if e["missing"]]


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
