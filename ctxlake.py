#!/usr/bin/env python3
"""ctxlake: the operator CLI (docs/design.md §1, §13).

Every verb is one short function over ``lib/``; ``sync``, ``maint`` and ``hook`` dispatch to the
role scripts' ``main``. Output is for humans; ``--json`` where a script would want it.

    ctxlake init --store URL --fleet F [--agent-id A]
    ctxlake status [--json]
    ctxlake sessions [--limit N] [--json]
    ctxlake install <claude_code|cursor|hermes>|--all [--dry-run] [--project]
    ctxlake uninstall [<runtime>|--all] [--dry-run] [--project]
    ctxlake import claude-code --path DIR_OR_FILE | import hermes [--path STATE_DB] | import cursor (refused)
    ctxlake query "SELECT ... FROM events" [--json]
    ctxlake lease claim|release|list [PATH...] [--reason R] [--ttl S]
    ctxlake demo [--fixtures DIR] [--keep]
    ctxlake doctor [--store URL] [--json]
    ctxlake claims [--status S] [--explain] | --approve ID | --retire ID --reason R
    ctxlake sync [--once] | maint --once | hook <runtime> [<event>] | mcp
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from lib.failures import Failure

ROOT = os.path.dirname(os.path.abspath(__file__))


def _epoch(value) -> float | None:
    """Epoch seconds from a number or an ISO-8601 string; ``None`` for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value:
        from lib.envelope import parse_time

        try:
            return parse_time(value)
        except ValueError:
            return None
    return None


def _secs(secs: float) -> str:
    secs = max(0.0, secs)
    return f"{secs:.0f}s" if secs < 120 else f"{secs / 60:.0f}m" if secs < 7200 else f"{secs / 3600:.1f}h"


def _age(ts) -> str:
    t = _epoch(ts)
    return "never" if t is None else _secs(time.time() - t) + " ago"


def _roster_agents(roster, now: float | None = None) -> list[dict]:
    """Live agents from ``cache/<fleet>/roster.json``: ``[{agent_id, runtime, task, repo, branch,
    age_secs}]``. The roster is untrusted cache content: entries that are not objects are skipped,
    ``agents`` may be a list or a map keyed by agent id, and ``updated_at`` (store clock, epoch
    seconds or ISO text) is aged by the store clock when the file carries ``store_time`` and
    ``refreshed_at``."""
    if not isinstance(roster, dict):
        return []
    agents = roster.get("agents")
    if isinstance(agents, dict):
        agents = [dict(v, agent_id=v.get("agent_id") or k) for k, v in agents.items() if isinstance(v, dict)]
    if not isinstance(agents, list):
        return []
    now = time.time() if now is None else now
    st, rt = _epoch(roster.get("store_time")), _epoch(roster.get("refreshed_at"))
    store_now = now + (st - rt if st is not None and rt is not None else 0.0)
    out = []
    for a in agents:
        if not isinstance(a, dict) or not a.get("agent_id"):
            continue
        updated = _epoch(a.get("updated_at"))
        out.append({"agent_id": str(a["agent_id"]), "runtime": str(a.get("runtime") or "?"),
                    "task": str(a["task"]) if a.get("task") else "", "repo": a.get("repo"), "branch": a.get("branch"),
                    "age_secs": None if updated is None else max(0.0, store_now - updated)})
    return out


def _read_json(path: str):
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read())
    except (OSError, ValueError):
        return None


def cmd_init(args, cfg, out) -> int:
    """Write ctxlake.toml (no secrets) and prove the store with a real write and read back.

    The store URL is saved absolute (``file://~/lake`` and ``file://lake`` resolve against the
    home and the current directory), so every working directory sees one lake. An existing
    config with another fleet or store is replaced only with ``--force``.
    Example: ``ctxlake init --store file://~/.ctxlake/lake --fleet team-a``
    """
    from lib import config
    from lib.paths import safe_segment
    from lib.store import CREATE, PreconditionFailed, StoreError, open_store

    try:
        store_url = config.store_url(args.store)
    except config.ConfigError as exc:
        raise Failure("usage", f"init: {exc}") from None
    if not args.fleet.strip():
        raise Failure("usage", "init: --fleet is empty; name the fleet every host of the team shares")
    try:
        store = open_store(store_url)
    except ValueError as exc:
        raise Failure("usage", f"init: {exc}") from None
    path = config.config_file_path()
    text = config.render_toml(store_url, args.fleet, args.agent_id)
    old = _read_text(path)
    if old is not None and old != text and not args.force:
        raise Failure("refused", f"init: {path} already exists (fleet {cfg.fleet_id}, store {cfg.store}); "
                                 "pass --force to replace it, then run `ctxlake install` again so the hooks speak "
                                 "the new fleet")
    try:
        key = f"_meta/fleets/{safe_segment(args.fleet)}.json"
        body = json.dumps({"fleet_id": args.fleet, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode()
        try:
            store.put(key, body, CREATE)
        except PreconditionFailed:
            pass
        store.get(key)
    except (StoreError, OSError) as exc:
        raise Failure("store", f"init: the store {store_url} failed a write and read back: {exc}; "
                               "nothing was saved, fix it and run init again") from None
    os.makedirs(os.path.dirname(path), exist_ok=True)
    from lib.spool import atomic_write

    atomic_write(path, text.encode(), mode=0o644)
    out.write(f"wrote {path}\nstore {store.url} is writable and readable (fleet {args.fleet})\n")
    installed = _installed_identities()
    stale = sorted({f for f, _ in installed.values()} - {args.fleet})
    if stale:
        out.write(f"note: installed hooks still speak fleet {', '.join(stale)}; run `ctxlake install --all` again\n")
    out.write("next: ctxlake install --all   (hooks + MCP), then: ctxlake sync\n")
    return 0


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _installed_identities(home: str | None = None) -> dict:
    """``{file: (fleet, agent)}`` of the hooks ``install`` wrote into this user's runtime files
    (and the current directory's ``.claude/settings.local.json``); files without ours are left out."""
    from lib import install

    home = home or os.path.expanduser("~")
    found = {}
    for rt in install.RUNTIMES:
        paths = [install.targets(rt, home)[0].path]
        if rt == "claude_code":
            paths.append(os.path.join(os.getcwd(), ".claude", "settings.local.json"))
        for path in paths:
            ident = install.installed_identity(path, rt)
            if ident:
                found[path] = ident
    return found


def _hook_log(path: str) -> dict:
    """``{"errors", "uncaptured", "last"}`` from hook-errors.log: lines whose ``step`` is ``map``
    record an event kind ctxlake does not capture (informational), the rest are errors; ``last``
    is the newest error line's ``error`` text."""
    errors, uncaptured, last = 0, 0, None
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    rec = {}
                if isinstance(rec, dict) and rec.get("step") == "map":
                    uncaptured += 1
                else:
                    errors += 1
                    last = (rec.get("error") if isinstance(rec, dict) else None) or raw.decode("utf-8", "replace").strip()
    except OSError:
        pass
    return {"errors": errors, "uncaptured": uncaptured, "last": last}


def _status(cfg) -> dict:
    """Everything ``ctxlake status`` shows, as one JSON-able dict (see :func:`cmd_status`)."""
    from lib import config, lost_events, spool

    p = cfg.paths
    sync = _read_json(p.sync_status(cfg.fleet_id))
    sync = sync if isinstance(sync, dict) else {}
    roster = _read_json(p.roster(cfg.fleet_id)) or {}
    leases = _read_json(p.leases(cfg.fleet_id)) or {}
    backlog = spool.backlog(p.spool_dir, p.state_dir)
    snap = None
    if os.path.exists(p.snapshot(cfg.fleet_id)):
        from lib import snapshot

        try:
            conn = snapshot.open_readonly(p.snapshot(cfg.fleet_id))
            meta = dict(conn.execute("SELECT key, value FROM snapshot_meta").fetchall())
            snap = {"sessions": conn.execute("SELECT count(*) FROM sessions").fetchone()[0],
                    "claims": conn.execute("SELECT count(*) FROM claims").fetchone()[0],
                    "built_at": meta.get("built_at") or meta.get("created_at"),
                    "fleet_id": meta.get("fleet_id")}
            conn.close()
        except Exception as exc:  # corrupt cache file: say so, never crash
            snap = {"error": f"unreadable snapshot: {exc}"}
    brief = _read_json(p.briefing(cfg.fleet_id))
    hooks = [{"file": f, "fleet_id": fl, "agent_id": ag, "agrees": fl == cfg.fleet_id}
             for f, (fl, ag) in sorted(_installed_identities().items())]
    st = {"fleet_id": cfg.fleet_id, "agent_id": cfg.agent_id, "store": cfg.store, "config": cfg.source,
          "config_path": config.config_file_path(), "configured": cfg.configured,
          "summarize_mode": cfg.summarize_mode, "last_sync": sync.get("last_run_at"),
          "last_sync_errors": sync.get("errors"), "last_error": sync.get("last_error"),
          "last_ok_sync": sync.get("last_ok_at"), "snapshot_sha": sync.get("snapshot_sha"), "snapshot": snap,
          "quarantined_lines": sync.get("quarantined_lines_total") or 0, "last_quarantined": sync.get("last_quarantined"),
          "hook_lost": lost_events.read(p.hook_lost),
          "synced_store": sync.get("store"),
          "briefing": {"chars": len(brief.get("text") or ""), "rendered_at": brief.get("rendered_at")}
          if isinstance(brief, dict) else None,
          "spool_backlog": backlog, "agents": _roster_agents(roster),
          "leases": _held_leases(leases), "leases_refused": leases.get("refused") if isinstance(leases, dict) else None,
          "hooks": hooks, "hook_log": _hook_log(p.hook_errors), "spool_disk": spool.disk_free(p.spool_dir)}
    st["hook_errors"] = st["hook_log"]["errors"]
    from lib import snapshot as snapmod

    st["lake"] = snapmod.cached_lake_figures(p.snapshot(cfg.fleet_id))  # the Delta table, as of the last maint
    st["next"] = _next_step(st)
    return st


def _next_step(st: dict) -> str:
    """The one command that moves this host forward, judged from :func:`_status`."""
    if not st["configured"]:
        return "ctxlake init --store file://~/.ctxlake/lake --fleet NAME   (or s3://bucket/prefix)"
    if st["synced_store"] not in (None, st["store"]):
        return "ctxlake sync --once   (the cache still holds what syncd pulled from the previous store)"
    if st["last_sync_errors"]:
        return "fix the last error above, then: ctxlake sync --once   (ctxlake doctor tests the store)"
    if not st["hooks"]:
        return "ctxlake install --all   (or name a runtime: ctxlake install claude_code)"
    wrong = [h for h in st["hooks"] if not h["agrees"]]
    if wrong:
        return f"ctxlake install --all   (hooks in {wrong[0]['file']} speak fleet {wrong[0]['fleet_id']})"
    if not st["last_sync"]:
        return "ctxlake sync   (the daemon; or ctxlake sync --once)"
    if not st["snapshot"]:
        return "ctxlake maint --once, then ctxlake sync --once   (needs one ended session in the lake)"
    if st["spool_backlog"]["files"] and st["spool_backlog"]["bytes"]:
        return "ctxlake sync --once   (ships the spool; the daemon does it every few seconds)"
    return "nothing: capture is wired and the cache is current"


def _held_leases(view) -> list[dict]:
    """Unexpired leases of the cached view by the store clock (:func:`lib.live.view_leases`)."""
    from lib import live

    return live.view_leases(view) if isinstance(view, dict) else []


def _mib(n: int) -> str:
    return f"{n / 1048576:.1f} MiB"


def _lake_line(lake: dict) -> str:
    """One line on the Delta table from the cached pointer figures (see ``_status``)."""
    if "bytes" not in lake:
        return "no figures yet (run maint, then sync)"
    return (f"{_mib(lake['bytes'])} in {lake.get('files', '?')} file(s), table version {lake.get('version', '?')}; "
            f"next vacuum frees {_mib(lake.get('vacuum_due_bytes', 0))}, "
            f"{_mib(lake.get('unreferenced_bytes', 0))} unreferenced in all (as of {lake.get('built_at', '?')})")


def cmd_status(args, cfg, out) -> int:
    """Show this host on one screen, with the next step.

    Config, fleet, store; the installed hooks and whether they agree with the config; the last
    sync and the cause of its error; what the cache holds; spool, agents, leases, hook errors.

    Example: ``ctxlake status --json``
    """
    st = _status(cfg)
    if args.json:
        out.write(json.dumps(st, sort_keys=True, default=str) + "\n")
        return 0
    w = out.write
    w(f"config     {st['config'] or 'none at ' + st['config_path'] + ' (every value is a default)'}\n"
      f"fleet      {st['fleet_id']} (agent {st['agent_id']}, summarize {st['summarize_mode']})\n"
      f"store      {st['store']}\n")
    if not st["hooks"]:
        w("hooks      none installed\n")
    for h in st["hooks"]:
        w(f"hooks      {h['file']}: fleet {h['fleet_id']}, agent {h['agent_id']}"
          + ("" if h["agrees"] else f"  MISMATCH: the config says fleet {st['fleet_id']}") + "\n")
    if st["synced_store"] not in (None, st["store"]):
        w(f"last sync  never against this store; the last pass ({_age(st['last_sync'])}) was against "
          f"{st['synced_store']}, and the cache below still holds what it pulled\n")
    elif not st["last_sync"]:
        w("last sync  never\n")
    elif st["last_sync_errors"]:
        w(f"last sync  {_age(st['last_sync'])}, FAILED ({st['last_sync_errors']} error(s)): {st['last_error'] or '?'}\n"
          f"           last good pass: {_age(st['last_ok_sync'])}\n")
    else:
        w(f"last sync  {_age(st['last_sync'])}, ok\n")
    snap = st["snapshot"]
    if snap is None:
        w("cache      no snapshot yet\n")
    elif "error" in snap:
        w(f"cache      {snap['error']}\n")
    else:
        w(f"cache      snapshot {str(st['snapshot_sha'] or '?')[:12]}: {snap['sessions']} sessions, {snap['claims']} claims"
          + (f", built {_age(snap['built_at'])}" if snap.get("built_at") else "") + "\n")
    if st["briefing"]:
        w(f"           briefing {st['briefing']['chars']} chars, rendered {_age(st['briefing']['rendered_at'])}\n")
    b = st["spool_backlog"]
    w(f"lake       {_lake_line(st['lake'])}\n"
      f"spool      {b['files']} file(s), {b['bytes']} bytes unshipped\n"
      f"agents     {len(st['agents'])} live\n")
    for a in st["agents"]:
        age = "age ?" if a["age_secs"] is None else f"seen {_secs(a['age_secs'])} ago"
        where = f" {a['repo']}" + (f"@{a['branch']}" if a.get("branch") else "") if a.get("repo") else ""
        w(f"  - {a['agent_id']} ({a['runtime']}){where}, {age}" + (f': "{a["task"]}"' if a["task"] else "") + "\n")
    w(f"leases     {len(st['leases'])}" + (f" (refused: the store does not honour conditional writes: "
                                          f"{st['leases_refused']}; run ctxlake doctor)" if st["leases_refused"] else "") + "\n")
    for lease in st["leases"]:
        w(f"  - {lease.get('path') or lease.get('resource')} held by {lease.get('holder')} ({lease.get('reason')})\n")
    hl = st["hook_log"]
    w(f"hook errors {hl['errors']}" + (f", last: {str(hl['last'])[:120]}" if hl["errors"] else "")
      + (f" ({hl['uncaptured']} event(s) of kinds ctxlake does not capture)" if hl["uncaptured"] else "")
      + (f"; see {cfg.paths.hook_errors}" if hl["errors"] or hl["uncaptured"] else "") + "\n")
    lost = st["hook_lost"]
    if lost["count"]:
        last = lost["recent"][0] if lost["recent"] else {}
        w(f"hook LOST  {lost['count']} time(s) a hook could not write its event nor hook-errors.log (a full disk?); "
          f"last {last.get('ts', '?')} {last.get('runtime', '?')} {last.get('event', '?')}: {str(last.get('error'))[:120]}"
          f"; free space on the filesystem of {os.path.dirname(cfg.paths.hook_lost)}\n")
    if st["quarantined_lines"]:
        lq = st["last_quarantined"] if isinstance(st["last_quarantined"], dict) else {}
        w(f"quarantine {st['quarantined_lines']} spool line(s) could not be events and were kept with their reason "
          f"under quarantine/fleet={st['fleet_id']}/ in the store; last {_age(lq.get('at'))}: {str(lq.get('reason'))[:160]}\n")
    w(f"next       {st['next']}\n")
    disk = st["spool_disk"]
    if disk["low"]:
        w(f"spool disk  LOW: {disk['free_bytes'] >> 20} MiB free on the spool's filesystem; hooks lose events "
          "and cannot log them: free space\n")
    return 0


def _fmt_duration(ms) -> str:
    s = int((ms or 0) / 1000)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def cmd_sessions(args, cfg, out) -> int:
    """One line per sealed session from the cached snapshot, under a header: start, duration,
    agent, repo name, commands ok/failed, files written or edited, cost (only where the runtime
    reported one), the runtime's own title else the first typed prompt.

    Example: ``ctxlake sessions --limit 20``
    """
    from lib import snapshot

    path = cfg.paths.snapshot(cfg.fleet_id)
    if not os.path.exists(path):
        out.write("no snapshot in the cache yet: run `ctxlake maint --once` then `ctxlake sync --once`\n")
        return 0
    conn = snapshot.open_readonly(path)
    rows = snapshot.recent_sessions(conn, args.limit)
    conn.close()
    if args.json:
        out.write(json.dumps(rows, sort_keys=True) + "\n")
        return 0
    if not rows:
        out.write("the snapshot holds no sessions yet\n")
        return 0
    from lib.sanitize import clean

    out.write(f"{'STARTED':<16}  {'DURATION':>8}  {'AGENT':<10} {'REPO':<24} {'OK':>4} {'FAIL':>4} {'FILES':>5} "
              f"{'COST':>7}  TITLE\n")
    for r in rows:
        repo = clean(str(r.get("repo") or "-"), 24, single_line=True)
        cost = (r.get("usage") or {}).get("cost_usd") if isinstance(r.get("usage"), dict) else None
        cost_text = f"${cost:.2f}" if isinstance(cost, (int, float)) else "-"
        title = clean(r.get("title") or r.get("summary") or "", 90, single_line=True)
        out.write(f"{str(r.get('started_at') or '').replace('T', ' ')[:16]:<16}  {_fmt_duration(r['duration_ms']):>8}  "
                  f"{clean(str(r['agent_id']), 10, single_line=True):<10} {repo[:24]:<24} {r['commands_ok']:>4} "
                  f"{r['commands_failed']:>4} {len(r.get('files_touched') or []):>5} {cost_text:>7}  {title}\n")
    return 0


def cmd_import(args, cfg, out) -> int:
    """Import a runtime's on-disk history into the spool (redacted); syncd ships it.

    Example: ``ctxlake import claude-code --path ~/.claude/projects`` or ``ctxlake import hermes``
    """
    runtime = args.runtime.replace("_", "-")
    if runtime == "cursor":
        raise Failure("usage", "import: cursor keeps no history ctxlake can import (its chats live in an undocumented "
                               "editor database, not a transcript format); Cursor sessions are captured from the moment its "
                               "hooks are installed: ctxlake install cursor")
    if runtime not in ("claude-code", "hermes"):
        raise Failure("usage", f"import: no importer for {args.runtime!r} (supported: claude-code, hermes)")
    from lib import logs

    log = logs.setup("import", quiet=True)
    agent = args.agent_id or cfg.agent_id
    if runtime == "hermes":
        import sqlite3

        from lib.importers import hermes

        path = os.path.expanduser(args.path) if args.path else hermes.default_path()
        try:
            res = hermes.import_db(path, cfg.paths, fleet_id=cfg.fleet_id, agent_id=agent, log=log)
        except (FileNotFoundError, hermes.SchemaMismatch, sqlite3.DatabaseError) as exc:
            raise Failure("usage", f"import: {exc}")
        out.write(f"imported {path}: {len(res.sessions)} session(s), {res.envelopes} envelope(s) into the spool; "
                  "run `ctxlake sync --once` to ship them\n")
        return 0
    if not args.path:
        raise Failure("usage", "import claude-code: --path is required (a transcript file or a folder of them)")
    from lib.importers import claude_code

    try:
        results = claude_code.import_path(os.path.expanduser(args.path), cfg.paths, fleet_id=cfg.fleet_id,
                                          agent_id=agent, log=log)
    except FileNotFoundError as exc:
        raise Failure("usage", f"import: {exc}")
    for r in results:
        out.write(f"imported {os.path.basename(r.path)}: {len(r.sessions)} session(s), {r.envelopes} envelope(s)"
                  + (f", skipped {r.skipped_lines} malformed line(s)" if r.skipped_lines else "") + "\n")
    out.write(f"{len(results)} file(s) imported into the spool; run `ctxlake sync --once` to ship them\n")
    return 0


def _install_run(action: str, args, cfg, out) -> int:
    """Shared body of ``install``/``uninstall``: pick runtimes, plan every file, then write or diff."""
    from lib import install

    home = os.path.expanduser("~")
    if args.runtime and args.all:
        raise Failure("usage", f"{action}: give a runtime or --all, not both")
    if args.runtime:
        runtimes = [args.runtime.replace("-", "_")]
    else:
        if action == "install" and not args.all:
            raise Failure("usage", f"install: name a runtime ({', '.join(install.RUNTIMES)}) or --all")
        runtimes = install.detect(home) if not args.project else ["claude_code"]
        if not runtimes:
            raise Failure("refused", f"{action}: no runtime config folder found under {home} (.claude, .cursor, .hermes)")
    try:
        ident = install.Identity.current(cfg.fleet_id, args.agent_id or cfg.agent_id)
        changes = install.plan(action, runtimes, ident, home, os.getcwd() if args.project else None)
    except install.InstallError as exc:
        raise Failure("refused", f"{action}: {exc}")
    changes = [c for c in changes if c.changed or not c.target.legacy]  # a clean team file is not news
    for c in changes:
        if args.dry_run:
            out.write(c.diff())
        else:
            install.apply(c)
        verb = {"unchanged": "unchanged", "create": "create", "update": "update", "delete": "remove"}[c.action]
        out.write(f"{'would ' + verb if args.dry_run and c.changed else verb:<14} {c.target.path}"
                  + (f" (backup {c.target.path}.bak)" if c.writes_backup and not args.dry_run else "")
                  + (" (restored from its .bak)" if c.from_bak and not args.dry_run else "") + "\n")
        for note in c.notes if c.changed and action == "install" else []:
            out.write(f"               note: {note}\n")
    if not args.dry_run:
        pending = [c.target.path for c in install.plan(action, runtimes, ident, home, os.getcwd() if args.project else None)
                   if c.changed]
        if pending:  # never claim an install that is not on disk
            raise Failure("refused", f"{action}: {', '.join(pending)} still differ(s) from what {action} wrote; "
                                     "another program may be rewriting it: close the runtime and run again")
    if args.project and action == "install":
        out.write(_project_note(os.getcwd()))
    if action == "install" and not args.dry_run:
        out.write(f"hooks speak for fleet {ident.fleet_id}, agent {ident.agent_id}; restart the runtime to load them\n")
        if cfg.source is None and not os.environ.get("CTXLAKE_FLEET_ID"):
            out.write("note: no ctxlake.toml found, so the fleet is 'default'; run `ctxlake init` and install again\n")
    return 0


def _project_note(project: str) -> str:
    """What ``install --project`` leaves to commit and what stays personal (README "Install")."""
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


def cmd_install(args, cfg, out) -> int:
    """Wire ctxlake's hooks and MCP server into a runtime's config (merge, never clobber).

    Example: ``ctxlake install --all --dry-run`` then ``ctxlake install claude_code``
    """
    return _install_run("install", args, cfg, out)


def cmd_uninstall(args, cfg, out) -> int:
    """Remove exactly what ``install`` added (every detected runtime when none is named).

    Example: ``ctxlake uninstall cursor``
    """
    return _install_run("uninstall", args, cfg, out)


def cmd_query(args, cfg, out) -> int:
    """Run SQL with DuckDB over the fleet's Delta table (its current version), as view ``events``.

    Example: ``ctxlake query "SELECT event_type, count(*) FROM events GROUP BY 1"``
    """
    from lib import lake
    from lib.store import open_store

    store = open_store(cfg.store, live=cfg.live_store)
    try:
        con = lake.duckdb_connect(store, cfg.fleet_id, os.path.join(cfg.paths.fleet_cache(cfg.fleet_id), "lake"))
    except lake.TableError as exc:
        raise Failure("store", f"query: {exc}") from None
    import duckdb

    if con is None:  # an empty lake is an empty table with the lake's columns, not a refusal
        con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
        con.register("events", lake.table_schema().empty_table())
        sys.stderr.write("ctxlake query: note: the lake has no compacted data yet, so events is empty "
                         "(`ctxlake maint --once` compacts what syncd shipped)\n")
    try:
        cur = con.execute(args.sql)
        cols = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchall() if cols else []
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Failure("usage", f"query: DuckDB refused the SQL: {first}; the table is `events` "
                               "(its columns: ctxlake query \"DESCRIBE events\")") from None
    if args.json:
        out.write(json.dumps([dict(zip(cols, r)) for r in rows], default=str) + "\n")
        return 0
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) if rows else len(str(c)) for i, c in enumerate(cols)]
    out.write("  ".join(str(c).ljust(w) for c, w in zip(cols, widths)) + "\n")
    for r in rows:
        out.write("  ".join(str(v).ljust(w) for v, w in zip(r, widths)) + "\n")
    return 0


def cmd_migrate(args, cfg, out) -> int:
    """Move the compacted lake from the old ``gen=<hash>`` layout into the fleet's Delta table,
    once (docs/lake.md "Migration"). Idempotent: with no old layout left it changes nothing.

    The migration is the first maintenance pass's (``maint --once`` does it too): this runs one,
    under the maintenance lease, so it never races maint. ``--json`` prints
    ``{"migrated": <old objects deleted>, "pending_before": <old objects found>, "table_version",
    "already_done": bool}``. Example: ``ctxlake migrate --json``
    """
    import maint
    from lib import lake
    from lib.store import open_store

    store = open_store(cfg.store, live=cfg.live_store)
    pending = len(lake.legacy_keys(store, cfg.fleet_id))
    report = {"fleet": cfg.fleet_id, "pending_before": pending, "migrated": 0, "already_done": not pending}
    if pending:
        summary = maint.run_once(cfg, store, lambda *a, **k: None)
        if not summary.get("ran"):
            raise Failure("refused", f"migrate: {summary.get('message')}; the pass holding the maintenance lease migrates "
                                "the lake itself — run `ctxlake migrate` again after it to check")
        if summary.get("lake_error") or summary.get("fenced"):
            raise Failure("store", f"migrate: the lake was not migrated ({summary.get('lake_error') or summary.get('message')}); "
                                   "nothing of the old layout was deleted, run it again once that is fixed")
        report["migrated"] = summary.get("migrated") or 0
    try:
        table = lake.open_table(store, cfg.fleet_id)
    except lake.TableError as exc:
        raise Failure("store", f"migrate: {exc}") from None
    report["table_version"] = table.version() if table is not None else None
    if args.json:
        out.write(json.dumps(report, sort_keys=True) + "\n")
    elif report["already_done"]:
        out.write(f"migrate: nothing to migrate for fleet {cfg.fleet_id}: no gen=<hash> layout left "
                  f"(Delta table version {report['table_version']})\n")
    else:
        out.write(f"migrate: fleet {cfg.fleet_id}: the gen=<hash> layout is in the Delta table "
                  f"(version {report['table_version']}); {report['migrated']} old object(s) deleted\n")
    return 0


def cmd_demo(args, cfg, out) -> int:
    """Run the whole pipeline on real fixtures in a temporary home (embedded file:// store).

    On the real fixtures: import transcripts, replay hook payloads as two agents, sync, maint,
    sync, then print status, sessions, the briefing a new SessionStart gets, and a DuckDB query.

    Example: ``ctxlake demo``
    """
    import shutil
    import tempfile

    fixtures = args.fixtures or os.path.join(ROOT, "tests", "fixtures")
    home = tempfile.mkdtemp(prefix="ctxlake-demo-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_CONFIG=os.path.join(home, "ctxlake.toml"), CTXLAKE_FLEET_ID="demo-fleet")
    py = sys.executable

    def step(title):
        out.write(f"\n== {title}\n")
        out.flush()

    def run(argv, agent="alice", stdin=None, show=True):
        e = dict(env, CTXLAKE_AGENT_ID=agent)
        r = subprocess.run(argv, input=stdin, capture_output=True, env=e, cwd=ROOT)
        if show and r.stdout:
            out.write(r.stdout.decode())
        if r.returncode not in (0,):
            out.write(r.stderr.decode()[-2000:])
        return r

    out.write(f"ctxlake demo in {home} (store file://{home}/lake, fleet demo-fleet)\n")
    step("1. import real Claude Code transcripts (agent alice)")
    run([py, "ctxlake.py", "import", "claude-code", "--path", os.path.join(fixtures, "claude-transcripts")])
    step("2. replay real hook payloads through hook.py, one process each (agents alice and bob)")
    counts = {}
    for name in sorted(os.listdir(os.path.join(fixtures, "claude-hooks"))):
        agent = "bob" if name.startswith("serverless") else "alice"
        with open(os.path.join(fixtures, "claude-hooks", name), "rb") as fh:
            payloads = json.load(fh)
        for payload in payloads:
            run([py, "-I", "-S", "hook.py", "claude_code"], agent=agent, stdin=json.dumps(payload).encode(), show=False)
            counts[agent] = counts.get(agent, 0) + 1
    from lib.spool import wait_for_hooks

    wait_for_hooks(os.path.join(home, "spool", ".state"))
    out.write(", ".join(f"{a}: {n} payloads" for a, n in sorted(counts.items())) + "\n")
    step("3. syncd --once (spool → Parquet segments → seal → cache)")
    run([py, "syncd.py", "--once"])
    step("4. maint --once (lease, compaction, digests, snapshot)")
    run([py, "maint.py", "--once"])
    step("5. syncd --once (pull the snapshot, render the briefing)")
    run([py, "syncd.py", "--once"])
    step("ctxlake status")
    run([py, "ctxlake.py", "status"])
    step("ctxlake sessions")
    run([py, "ctxlake.py", "sessions"])
    step("the briefing a new SessionStart receives (exactly what hook.py prints)")
    start = {"session_id": "demo-new-session", "hook_event_name": "SessionStart", "source": "startup", "cwd": home}
    run([py, "-I", "-S", "hook.py", "claude_code", "SessionStart"], agent="carol", stdin=json.dumps(start).encode())
    step("DuckDB over the lake: events per type per session")
    run([py, "ctxlake.py", "query",
         "SELECT session_id, event_type, count(*) AS n FROM events GROUP BY ALL ORDER BY session_id, n DESC"])
    wait_for_hooks(os.path.join(home, "spool", ".state"))
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    else:
        out.write(f"\nkept {home}\n")
    return 0


def cmd_lease(args, cfg, out) -> int:
    """Claim, release or list advisory leases, directly on the store with the code syncd uses.

    Paths resolve against the current directory's git repository (``origin`` URL + repo-relative
    path, so every clone shares them); a trailing ``/`` or an existing directory claims the whole
    directory. A claim by the current holder renews it. Exit 1 on a refusal.

    Examples: ``ctxlake lease claim src/parser/ --reason "rewrite the parser"``,
    ``ctxlake lease release src/parser/`` (no path: everything you hold), ``ctxlake lease list``
    """
    from lib import live
    from lib.store import open_store

    store = open_store(cfg.store, live=cfg.live_store)  # leases live where syncd keeps them
    holder = args.holder or cfg.agent_id
    view, now = live.list_leases(store, cfg.fleet_id)
    if args.action == "list":
        held = [r for r in view if live.is_live(r, now)]
        if args.json:
            out.write(json.dumps(held, sort_keys=True) + "\n")
            return 0
        for r in sorted(held, key=lambda r: (str(r.get("repo")), str(r.get("path")))):
            out.write(f"{r.get('repo') or '-'}  {r.get('path') or r.get('resource')}  held by {r.get('holder')} "
                      f"({r.get('reason') or 'no reason'}), {max(0, int(float(r['expires_at']) - now))} s left, epoch {r.get('epoch')}\n")
        out.write(f"{len(held)} lease(s) held in fleet {cfg.fleet_id}. {live.ADVISORY_NOTE}\n")
        return 0
    resources = []
    for p in args.paths:
        where = live.resolve(p, os.getcwd())
        if where is None:
            raise Failure("usage", f"lease: {p} is not inside a git repository (leases are keyed by repository and path)")
        resources.append(where)
    if args.action == "claim":
        if not resources:
            raise Failure("usage", "lease claim: name at least one path")
        try:
            records = live.claim(store, cfg.fleet_id, resources, holder=holder, reason=args.reason or "",
                                 ttl=args.ttl or cfg.leases.ttl_secs, view=view, view_time=now)
        except live.Refused as exc:
            raise Failure("refused", f"lease claim: {str(exc).removeprefix('ctxlake: ')}") from None
        except live.Unsafe as exc:
            raise Failure("refused", f"lease claim: {exc}") from None
        for r in records:
            out.write(f"claimed {r['path']} in {r['repo']} as {holder} until "
                      f"{time.strftime('%H:%M:%SZ', time.gmtime(r['expires_at']))} (epoch {r['epoch']})\n")
        out.write("claim again to renew before it expires. " + live.ADVISORY_NOTE + "\n")
        return 0
    keys = ([live.lease_key(cfg.fleet_id, live.resource_key(r["repo"], r["path"])) for r in resources] if resources
            else [r["key"] for r in view if r.get("holder") == holder])
    try:
        freed = sum(live.release(store, k, holder=holder) for k in keys)
    except live.Unsafe as exc:
        raise Failure("refused", f"lease release: {exc}") from None
    out.write(f"released {freed} lease(s) held by {holder}\n")
    return 0


def cmd_claims(args, cfg, out) -> int:
    """List claims by status, explain what holds a candidate back, approve or retire one.

    Reads the gate's fold (``claims/fleet/<f>/``) from the store; ``--approve``/``--retire``
    write a human ClaimEvent the next maintenance pass folds in.
    Example: ``ctxlake claims --status candidate --explain``
    """
    from lib import claims
    from lib.paths import safe_segment
    from lib.store import open_store

    store = open_store(cfg.store, live=cfg.live_store)
    if args.approve or args.retire:
        cid = args.approve or args.retire
        folded = claims.fold(claims.load_events(store, cfg.fleet_id))
        matches = [c for c in folded if c.startswith(cid)]
        if len(matches) != 1:
            raise Failure("usage", f"claims: {cid!r} matches {len(matches)} claims; give more of the id")
        if args.retire and not args.reason:
            raise Failure("usage", "claims: --retire needs --reason")
        kind = "approved" if args.approve else "retired"
        claims.write_event(store, cfg.fleet_id, "_human", {"kind": kind, "claim_id": matches[0], "by": cfg.agent_id,
                                                           "reason": args.reason})
        out.write(f"{kind} {matches[0]}; takes effect at the next `ctxlake maint --once`\n")
        return 0
    rows = []
    for entry in store.list(f"claims/fleet/{safe_segment(cfg.fleet_id)}/"):
        try:
            c = json.loads(store.get(entry.key).data)
        except ValueError:
            continue
        if not args.status or c.get("status") == args.status:
            rows.append(c)
    if args.json:
        out.write(json.dumps(rows, sort_keys=True, default=str) + "\n")
        return 0
    for c in sorted(rows, key=lambda c: (c.get("status") or "", -(c.get("confidence") or 0))):
        out.write(f"{c['claim_id']}  {c.get('status'):<10} {c.get('claim_type'):<11} conf {c.get('confidence') or 0:.2f}  "
                  f"{len(c.get('evidence') or [])} cite(s)  {str(c.get('claim'))[:80]}\n")
        if args.explain:
            out.write(f"    why: {c.get('explain') or c.get('reason') or '-'}\n")
    if not rows:
        out.write("no claims" + (f" with status {args.status}" if args.status else "") + "\n")
    return 0


def _dispatch(module: str, argv: list[str], prog: str) -> int:
    mod = __import__(module)
    return mod.main(argv, prog=prog)


def _help(fn) -> str:
    """The first sentence of ``fn``'s docstring as plain text (no RST ``` `` ``` markup): what
    ``ctxlake --help`` lists per verb."""
    first = " ".join(fn.__doc__.split("\n\n")[0].split()).replace("``", "")
    return first.split(". ")[0].rstrip(".")


VERBS_WITHOUT_CONFIG = ("init", "demo")
"""Verbs that do not read the fleet's config (the rest say so when every value is a default)."""


def main(argv=None, stdout=None, stderr=None) -> int:
    """Parse ``argv`` and run one verb; returns the exit code (docs/operations.md "Exit codes").
    A failure is one line on ``stderr``; ``--debug`` adds the traceback."""
    from lib import failures

    argv = sys.argv[1:] if argv is None else argv
    err = stderr or sys.stderr
    return failures.run("ctxlake", lambda a: _main(a, stdout or sys.stdout, err), argv, err)


def _main(argv: list[str], out, err) -> int:
    if argv and argv[0] in ("sync", "maint"):
        return _dispatch({"sync": "syncd", "maint": "maint"}[argv[0]], argv[1:], f"ctxlake {argv[0]}")
    if argv and argv[0] == "mcp":
        return __import__("mcp_server").main(argv[1:])
    if argv and argv[0] == "doctor":
        from lib import doctor

        return doctor.main(argv[1:], out, err)
    if argv and argv[0] == "hook":
        if len(argv) < 2 or argv[1] in ("-h", "--help"):  # a human asking, not a runtime: no hook error
            out.write("usage: ctxlake hook <runtime> [<event>] < payload.json\n"
                      "  runtime: claude_code | cursor | hermes. Prints the runtime's answer, captures the\n"
                      "  event into the local spool (redacted), always exits 0. Runtimes call this;\n"
                      "  `ctxlake install` wires it.\n")
            return 0
        from lib.hookproc import run

        return run(argv[1:], sys.stdin.buffer, sys.stdout)
    from lib.failures import Parser

    p = Parser(prog="ctxlake", description="Shared memory and coordination for fleets of coding agents.",
               epilog="--debug (anywhere) prints the traceback of a failure. Exit codes: docs/operations.md.")
    sub = p.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("init", help=_help(cmd_init))
    s.add_argument("--store", required=True, help="file:///abs/path (file://~/x and file://rel are made absolute) or s3://bucket/prefix")
    s.add_argument("--fleet", required=True, help="fleet id")
    s.add_argument("--agent-id", help="this host's agent id (default: host name)")
    s.add_argument("--force", action="store_true", help="replace an existing config with another fleet or store")
    s = sub.add_parser("status", help=_help(cmd_status))
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("sessions", help=_help(cmd_sessions))
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("import", help=_help(cmd_import))
    s.add_argument("runtime", help="claude-code | hermes | cursor (refused: no importable history)")
    s.add_argument("--path", help="claude-code: a transcript file or folder; hermes: state.db (default $HERMES_HOME/state.db)")
    s.add_argument("--agent-id", help="attribute the imported sessions to this agent id")
    for verb, fn in (("install", cmd_install), ("uninstall", cmd_uninstall)):
        s = sub.add_parser(verb, help=_help(fn))
        s.add_argument("runtime", nargs="?", choices=["claude_code", "cursor", "hermes", "claude-code"],
                       help="the runtime to " + verb)
        s.add_argument("--all", action="store_true", help="every runtime whose config folder exists")
        s.add_argument("--dry-run", action="store_true", help="print a unified diff; write nothing")
        s.add_argument("--project", action="store_true",
                       help="Claude Code for the current directory only: hooks in .claude/settings.local.json and the MCP "
                            "server in ~/.claude.json (personal files; the committed .claude/settings.json and .mcp.json "
                            "are not edited)")
        s.add_argument("--agent-id", help="agent id the hooks report (default: the configured one)")
    s = sub.add_parser("query", help=_help(cmd_query))
    s.add_argument("sql")
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("migrate", help=_help(cmd_migrate))
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("demo", help=_help(cmd_demo))
    s.add_argument("--fixtures", help="fixtures folder (default: tests/fixtures)")
    s.add_argument("--keep", action="store_true", help="keep the temporary home")
    s = sub.add_parser("lease", help=_help(cmd_lease))
    s.add_argument("action", choices=("claim", "release", "list"))
    s.add_argument("paths", nargs="*", help="files or directories (trailing / or an existing directory = the whole directory)")
    s.add_argument("--reason", help="why you need these paths (other agents read it)")
    s.add_argument("--ttl", type=int, help="seconds until the lease expires by the store clock (default [leases] ttl_secs)")
    s.add_argument("--holder", help="holder id (default: this agent id)")
    s.add_argument("--json", action="store_true", help="list: print JSON")
    s = sub.add_parser("claims", help=_help(cmd_claims))
    s.add_argument("--status", choices=["candidate", "promoted", "contested", "retired", "rejected"])
    s.add_argument("--explain", action="store_true", help="say which gate rule holds each claim where it is")
    s.add_argument("--approve", metavar="ID", help="approve a preference claim (human)")
    s.add_argument("--retire", metavar="ID", help="retire a claim (human); needs --reason")
    s.add_argument("--reason")
    s.add_argument("--json", action="store_true")
    sub.add_parser("sync", help="run the sync daemon in the foreground; --once for one pass")
    sub.add_parser("maint", help="run one maintenance pass (maint --once)")
    sub.add_parser("hook", help="run the hook for <runtime> [<event>] (what runtimes call)")
    sub.add_parser("doctor", help="probe the store's primitives and print what each failure costs (--json)")
    sub.add_parser("mcp", help="serve the stdio MCP server for one agent session")
    args = p.parse_args(argv)
    if getattr(args, "ttl", None) is not None and args.ttl <= 0:
        raise Failure("usage", f"lease: --ttl must be a positive number of seconds, got {args.ttl}")
    if getattr(args, "limit", None) is not None and args.limit <= 0:
        raise Failure("usage", f"sessions: --limit must be positive, got {args.limit}")
    from lib import config

    cfg = config.load()
    if args.verb not in VERBS_WITHOUT_CONFIG and not cfg.configured:
        if args.verb == "install" and not args.dry_run:
            raise Failure("config", f"install: no ctxlake config at {config.config_file_path()}, so the hooks would "
                                    "speak for fleet 'default'; run `ctxlake init --store URL --fleet NAME` first")
        err.write(f"ctxlake: note: no config at {config.config_file_path()}: fleet 'default', store {cfg.store}; "
                  "`ctxlake init` chooses them\n")
    return {"init": cmd_init, "status": cmd_status, "sessions": cmd_sessions, "import": cmd_import,
            "install": cmd_install, "uninstall": cmd_uninstall, "query": cmd_query, "migrate": cmd_migrate, "demo": cmd_demo,
            "claims": cmd_claims, "lease": cmd_lease}[args.verb](args, cfg, out)


if __name__ == "__main__":
    sys.exit(main())
