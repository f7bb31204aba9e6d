#!/usr/bin/env python3
"""ctxlake: the operator CLI (DESIGN.md §1, §13).

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

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ROOT)


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
    """Write ``ctxlake.toml`` (no secrets), verify the store with a real write and read back.

    Example: ``ctxlake init --store file://~/.ctxlake/lake --fleet team-a``
    """
    from lib import config
    from lib.paths import safe_segment
    from lib.store import CREATE, PreconditionFailed, open_store

    store_url = args.store
    if store_url.startswith("file://~"):
        store_url = "file://" + os.path.expanduser(store_url[7:])
    path = config.config_file_path()
    store = open_store(store_url)
    key = f"_meta/fleets/{safe_segment(args.fleet)}.json"
    body = json.dumps({"fleet_id": args.fleet, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode()
    try:
        store.put(key, body, CREATE)
    except PreconditionFailed:
        pass
    store.get(key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(config.render_toml(store_url, args.fleet, args.agent_id))
    out.write(f"wrote {path}\nstore {store.url} is writable and readable (fleet {args.fleet})\n"
              "next: ctxlake install --all   (hooks + MCP), then: ctxlake sync\n")
    return 0


def _status(cfg) -> dict:
    from lib import spool

    p = cfg.paths
    sync = _read_json(p.sync_status(cfg.fleet_id)) or {}
    roster = _read_json(p.roster(cfg.fleet_id)) or {}
    leases = _read_json(p.leases(cfg.fleet_id)) or {}
    backlog = spool.backlog(p.spool_dir, p.state_dir)
    snap = None
    if os.path.exists(p.snapshot(cfg.fleet_id)):
        from lib import snapshot

        try:
            conn = snapshot.open_readonly(p.snapshot(cfg.fleet_id))
            snap = {"sessions": conn.execute("SELECT count(*) FROM sessions").fetchone()[0],
                    "claims": conn.execute("SELECT count(*) FROM claims").fetchone()[0]}
            conn.close()
        except Exception as exc:  # corrupt cache file: say so, never crash
            snap = {"error": f"unreadable snapshot: {exc}"}
    errors = 0
    try:
        with open(p.hook_errors, "rb") as fh:
            errors = sum(1 for _ in fh)
    except OSError:
        pass
    from lib import snapshot as snapmod

    lake = snapmod.cached_lake_figures(p.snapshot(cfg.fleet_id))
    return {"fleet_id": cfg.fleet_id, "agent_id": cfg.agent_id, "store": cfg.store, "config": cfg.source, "lake": lake,
            "summarize_mode": cfg.summarize_mode, "last_sync": sync.get("last_run_at"), "last_sync_errors": sync.get("errors"),
            "snapshot_sha": sync.get("snapshot_sha"), "snapshot": snap,
            "spool_backlog": backlog, "agents": _roster_agents(roster),
            "leases": _held_leases(leases), "leases_refused": leases.get("refused") if isinstance(leases, dict) else None,
            "hook_errors": errors}


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
    """Fleet, store, sync and snapshot age, spool backlog, live agents, leases, hook errors.

    Example: ``ctxlake status --json``
    """
    st = _status(cfg)
    if args.json:
        out.write(json.dumps(st, sort_keys=True, default=str) + "\n")
        return 0
    b = st["spool_backlog"]
    snap = st["snapshot"] or {}
    out.write(f"fleet      {st['fleet_id']} (agent {st['agent_id']}, summarize {st['summarize_mode']})\n"
              f"store      {st['store']}\n"
              f"last sync  {_age(st['last_sync'])}" + (f" ({st['last_sync_errors']} errors)" if st['last_sync_errors'] else "") + "\n"
              f"snapshot   " + (f"{str(st['snapshot_sha'])[:12]}: {snap.get('sessions')} sessions, {snap.get('claims')} claims"
                                if st["snapshot_sha"] and "error" not in snap else snap.get("error", "none yet (run maint)")) + "\n"
              f"lake       {_lake_line(st['lake'])}\n"
              f"spool      {b['files']} file(s), {b['bytes']} bytes unshipped\n"
              f"agents     {len(st['agents'])} live\n")
    for a in st["agents"]:
        age = "age ?" if a["age_secs"] is None else f"seen {_secs(a['age_secs'])} ago"
        where = f" {a['repo']}" + (f"@{a['branch']}" if a.get("branch") else "") if a.get("repo") else ""
        out.write(f"  - {a['agent_id']} ({a['runtime']}){where}, {age}" + (f': "{a["task"]}"' if a["task"] else "") + "\n")
    out.write(f"leases     {len(st['leases'])}" + (f" (refused: the store does not honour conditional writes: "
                                                    f"{st['leases_refused']}; run ctxlake doctor)" if st["leases_refused"] else "") + "\n")
    for lease in st["leases"]:
        out.write(f"  - {lease.get('path') or lease.get('resource')} held by {lease.get('holder')} ({lease.get('reason')})\n")
    out.write(f"hook errors {st['hook_errors']} line(s) in {cfg.paths.hook_errors}\n" if st["hook_errors"] else "hook errors none\n")
    return 0


def _fmt_duration(ms) -> str:
    s = int((ms or 0) / 1000)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def cmd_sessions(args, cfg, out) -> int:
    """One line per sealed session from the cached snapshot: agent, repo, duration, commands
    ok/failed, files touched, one-line summary.

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
    for r in rows:
        repo = r.get("repo") or "-"
        out.write(f"{r['ended_at'][:16]}  {r['agent_id']:<10} {str(repo)[:28]:<28} {_fmt_duration(r['duration_ms']):>7}  "
                  f"cmds {r['commands_ok']:>3} ok {r['commands_failed']:>2} failed  files {len(r.get('files_touched') or []):>3}  "
                  f"{r['summary'][:90]}\n")
    return 0


def cmd_import(args, cfg, out) -> int:
    """Import a runtime's on-disk history into the spool (redacted); syncd ships it.

    Example: ``ctxlake import claude-code --path ~/.claude/projects`` or ``ctxlake import hermes``
    """
    runtime = args.runtime.replace("_", "-")
    if runtime == "cursor":
        out.write("ctxlake import: cursor keeps no history ctxlake can import (its chats live in an undocumented "
                  "editor database, not a transcript format); Cursor sessions are captured from the moment its "
                  "hooks are installed: ctxlake install cursor\n")
        return 2
    if runtime not in ("claude-code", "hermes"):
        out.write(f"ctxlake import: no importer for {args.runtime!r} (supported: claude-code, hermes)\n")
        return 2
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
            out.write(f"ctxlake import: {exc}\n")
            return 2
        out.write(f"imported {path}: {len(res.sessions)} session(s), {res.envelopes} envelope(s) into the spool; "
                  "run `ctxlake sync --once` to ship them\n")
        return 0
    if not args.path:
        out.write("ctxlake import claude-code: --path is required (a transcript file or a folder of them)\n")
        return 2
    from lib.importers import claude_code

    try:
        results = claude_code.import_path(os.path.expanduser(args.path), cfg.paths, fleet_id=cfg.fleet_id,
                                          agent_id=agent, log=log)
    except FileNotFoundError as exc:
        out.write(f"ctxlake import: {exc}\n")
        return 2
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
        out.write(f"ctxlake {action}: give a runtime or --all, not both\n")
        return 2
    if args.runtime:
        runtimes = [args.runtime.replace("-", "_")]
    else:
        if action == "install" and not args.all:
            out.write(f"ctxlake install: name a runtime ({', '.join(install.RUNTIMES)}) or --all\n")
            return 2
        runtimes = install.detect(home) if not args.project else ["claude_code"]
        if not runtimes:
            out.write(f"ctxlake {action}: no runtime config folder found under {home} (.claude, .cursor, .hermes)\n")
            return 1
    try:
        ident = install.Identity.current(cfg.fleet_id, args.agent_id or cfg.agent_id)
        changes = install.plan(action, runtimes, ident, home, os.getcwd() if args.project else None)
    except install.InstallError as exc:
        out.write(f"ctxlake {action}: {exc}\n")
        return 1
    changes = [c for c in changes if c.changed or not c.target.legacy]  # a clean team file is not news
    for c in changes:
        if args.dry_run:
            out.write(c.diff())
        else:
            install.apply(c)
        verb = {"unchanged": "unchanged", "create": "create", "update": "update", "delete": "remove"}[c.action]
        out.write(f"{'would ' + verb if args.dry_run and c.changed else verb:<14} {c.target.path}"
                  + (f" (backup {c.target.path}.bak)" if c.changed and c.before is not None and not args.dry_run else "") + "\n")
        for note in c.notes if c.changed and action == "install" else []:
            out.write(f"               note: {note}\n")
    if not args.dry_run:
        pending = [c.target.path for c in install.plan(action, runtimes, ident, home, os.getcwd() if args.project else None)
                   if c.changed]
        if pending:  # never claim an install that is not on disk
            out.write(f"ctxlake {action}: {', '.join(pending)} still differ(s) from what {action} wrote; "
                      "another program may be rewriting it: close the runtime and run again\n")
            return 1
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
        out.write(f"ctxlake query: {exc}\n")
        return 2
    if con is None:
        out.write("the lake has no compacted data yet: run `ctxlake sync --once` and `ctxlake maint --once`\n")
        return 0
    import duckdb

    try:
        cur = con.execute(args.sql)
    except duckdb.Error as exc:
        out.write(f"ctxlake query: {str(exc).splitlines()[0]} (the table is the view `events`; "
                  "`ctxlake query \"DESCRIBE events\"` lists its columns)\n")
        return 2
    cols = [d[0] for d in cur.description]
    rows = cur.fetchall()
    if args.json:
        out.write(json.dumps([dict(zip(cols, r)) for r in rows], default=str) + "\n")
        return 0
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) if rows else len(str(c)) for i, c in enumerate(cols)]
    out.write("  ".join(str(c).ljust(w) for c, w in zip(cols, widths)) + "\n")
    for r in rows:
        out.write("  ".join(str(v).ljust(w) for v, w in zip(r, widths)) + "\n")
    return 0


def cmd_demo(args, cfg, out) -> int:
    """The main job end to end on the embedded ``file://`` store, in a fresh temporary home, on
    the real fixtures: import transcripts, replay hook payloads as two agents, sync, maint,
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
            out.write(f"ctxlake lease: {p} is not inside a git repository (leases are keyed by repository and path)\n")
            return 2
        resources.append(where)
    if args.action == "claim":
        if not resources:
            out.write("ctxlake lease claim: name at least one path\n")
            return 2
        try:
            records = live.claim(store, cfg.fleet_id, resources, holder=holder, reason=args.reason or "",
                                 ttl=args.ttl or cfg.leases.ttl_secs, view=view, view_time=now)
        except (live.Refused, live.Unsafe) as exc:
            out.write(("" if isinstance(exc, live.Refused) else "ctxlake lease claim: ") + str(exc) + "\n")
            return 1
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
        out.write(f"ctxlake lease release: {exc}\n")
        return 1
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
            out.write(f"ctxlake claims: {cid!r} matches {len(matches)} claims; give more of the id\n")
            return 2
        if args.retire and not args.reason:
            out.write("ctxlake claims: --retire needs --reason\n")
            return 2
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


def _dispatch(module: str, argv: list[str]) -> int:
    mod = __import__(module)
    return mod.main(argv)


def main(argv=None, stdout=None) -> int:
    """Parse ``argv`` and run one verb; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    out = stdout or sys.stdout
    if argv and argv[0] in ("sync", "maint"):
        return _dispatch({"sync": "syncd", "maint": "maint"}[argv[0]], argv[1:])
    if argv and argv[0] == "mcp":
        return _dispatch("mcp_server", argv[1:])
    if argv and argv[0] == "doctor":
        from lib import doctor

        return doctor.main(argv[1:], out)
    if argv and argv[0] == "hook":
        if len(argv) < 2 or argv[1] in ("-h", "--help"):  # a human asking, not a runtime: no hook error
            out.write("usage: ctxlake hook <runtime> [<event>] < payload.json\n"
                      "  runtime: claude_code | cursor | hermes. Prints the runtime's answer, captures the\n"
                      "  event into the local spool (redacted), always exits 0. Runtimes call this;\n"
                      "  `ctxlake install` wires it.\n")
            return 0
        from lib.hookproc import run

        return run(argv[1:], sys.stdin.buffer, sys.stdout)
    p = argparse.ArgumentParser(prog="ctxlake", description="Shared memory and coordination for fleets of coding agents.")
    sub = p.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("init", help=cmd_init.__doc__.splitlines()[0])
    s.add_argument("--store", required=True, help="file:///path or s3://bucket/prefix")
    s.add_argument("--fleet", required=True, help="fleet id")
    s.add_argument("--agent-id", help="this host's agent id (default: host name)")
    s = sub.add_parser("status", help=cmd_status.__doc__.splitlines()[0])
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("sessions", help=cmd_sessions.__doc__.splitlines()[0])
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("import", help=cmd_import.__doc__.splitlines()[0])
    s.add_argument("runtime", help="claude-code | hermes | cursor (refused: no importable history)")
    s.add_argument("--path", help="claude-code: a transcript file or folder; hermes: state.db (default $HERMES_HOME/state.db)")
    s.add_argument("--agent-id", help="attribute the imported sessions to this agent id")
    for verb, fn in (("install", cmd_install), ("uninstall", cmd_uninstall)):
        s = sub.add_parser(verb, help=fn.__doc__.splitlines()[0])
        s.add_argument("runtime", nargs="?", choices=["claude_code", "cursor", "hermes", "claude-code"],
                       help="the runtime to " + verb)
        s.add_argument("--all", action="store_true", help="every runtime whose config folder exists")
        s.add_argument("--dry-run", action="store_true", help="print a unified diff; write nothing")
        s.add_argument("--project", action="store_true",
                       help="Claude Code for the current directory only: hooks in .claude/settings.local.json and the MCP "
                            "server in ~/.claude.json (personal files; the committed .claude/settings.json and .mcp.json "
                            "are not edited)")
        s.add_argument("--agent-id", help="agent id the hooks report (default: the configured one)")
    s = sub.add_parser("query", help=cmd_query.__doc__.splitlines()[0])
    s.add_argument("sql")
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("demo", help=cmd_demo.__doc__.splitlines()[0])
    s.add_argument("--fixtures", help="fixtures folder (default: tests/fixtures)")
    s.add_argument("--keep", action="store_true", help="keep the temporary home")
    s = sub.add_parser("lease", help=cmd_lease.__doc__.splitlines()[0])
    s.add_argument("action", choices=("claim", "release", "list"))
    s.add_argument("paths", nargs="*", help="files or directories (trailing / or an existing directory = the whole directory)")
    s.add_argument("--reason", help="why you need these paths (other agents read it)")
    s.add_argument("--ttl", type=int, help="seconds until the lease expires by the store clock (default [leases] ttl_secs)")
    s.add_argument("--holder", help="holder id (default: this agent id)")
    s.add_argument("--json", action="store_true", help="list: print JSON")
    s = sub.add_parser("claims", help=cmd_claims.__doc__.splitlines()[0])
    s.add_argument("--status", choices=["candidate", "promoted", "contested", "retired", "rejected"])
    s.add_argument("--explain", action="store_true", help="say which gate rule holds each claim where it is")
    s.add_argument("--approve", metavar="ID", help="approve a preference claim (human)")
    s.add_argument("--retire", metavar="ID", help="retire a claim (human); needs --reason")
    s.add_argument("--reason")
    s.add_argument("--json", action="store_true")
    sub.add_parser("sync", help="run the sync daemon (syncd.py); --once for one pass")
    sub.add_parser("maint", help="run one maintenance pass (maint.py --once)")
    sub.add_parser("hook", help="run the hook for <runtime> [<event>] (what runtimes call)")
    sub.add_parser("doctor", help="probe the store's primitives and print what each failure costs (--json)")
    sub.add_parser("mcp", help="serve the stdio MCP server (mcp_server.py) for one agent session")
    args = p.parse_args(argv)
    from lib import config

    try:
        cfg = config.load()
    except config.ConfigError as exc:
        out.write(f"ctxlake: {exc}\n")
        return 2
    return {"init": cmd_init, "status": cmd_status, "sessions": cmd_sessions, "import": cmd_import,
            "install": cmd_install, "uninstall": cmd_uninstall, "query": cmd_query, "demo": cmd_demo,
            "claims": cmd_claims, "lease": cmd_lease}[args.verb](args, cfg, out)


if __name__ == "__main__":
    sys.exit(main())
