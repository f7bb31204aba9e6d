"""What ``ctxlake status`` and ``ctxlake sessions`` show of this host (docs/operations.md):
config, fleet, store, the installed hooks and whether they agree, the last sync and the cause of
its error, what the cache holds (read through :mod:`lib.cache_view`), spool, agents, leases, hook
errors and lost events, and the one next step; the cached snapshot's sessions, one line each.
:func:`gather` builds the JSON-able view, :func:`render` and :func:`render_sessions` print it;
:func:`sessions_cli` is ``ctxlake sessions``."""
from __future__ import annotations

import json
import os
import time


def _secs(secs: float) -> str:
    secs = max(0.0, secs)
    return f"{secs:.0f}s" if secs < 120 else f"{secs / 60:.0f}m" if secs < 7200 else f"{secs / 3600:.1f}h"


def _age(ts) -> str:
    from lib.clock import parse_time

    t = parse_time(ts)
    return "never" if t is None else _secs(time.time() - t) + " ago"


def _roster_agents(path: str, presence_ttl: float, now: float | None = None) -> list[dict]:
    """Live agents from ``cache/<fleet>/roster.json``: ``[{agent_id, runtime, task, repo, branch,
    age_secs}]``, by the view every reader of the cached roster uses (:func:`lib.cache_view.roster`:
    the one live-agent rule, ``updated_at`` within ``presence_ttl`` by the store clock, so this
    lists whom ``fleet_status`` and the briefing list). Untrusted cache content: a roster that is
    not one lists nobody."""
    from lib import cache_view

    view = cache_view.roster(path, time.time() if now is None else now, presence_ttl)
    return [{"agent_id": str(a["agent_id"]), "runtime": str(a.get("runtime") or "?"),
             "task": str(a["task"]) if a.get("task") else "", "repo": a.get("repo"), "branch": a.get("branch"),
             "age_secs": a.get("age_secs")} for a in view["agents"]]


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


def other_spools(paths, environ=None) -> list[dict]:
    """``[{"home", "spool_dir", "files", "bytes"}]``: unshipped spool under the default home
    (``~/.ctxlake``, :meth:`lib.paths.Paths.default`) when ``paths`` (this home) is elsewhere and
    that spool is not empty. A hook or MCP server the runtime started without ``CTXLAKE_HOME``
    (an install older than ``--home``, docs/runtimes.md "Where the data goes") wrote it there,
    where this home's ``sync`` never reads. Empty when the spool is this home's own."""
    from lib import spool
    from lib.paths import HomeError, Paths

    try:
        other = Paths.default(environ)
    except HomeError:
        return []
    if os.path.realpath(other.spool_dir) == os.path.realpath(paths.spool_dir):
        return []
    b = spool.backlog(other.spool_dir, other.state_dir)
    return [{"home": other.home, "spool_dir": other.spool_dir, "files": b["files"], "bytes": b["bytes"]}] \
        if b["files"] else []


def ship_other_command(st: dict) -> str:
    """The command that ships the first of ``st["other_spools"]`` into this host's store."""
    import shlex

    o = st["other_spools"][0]
    return f"CTXLAKE_HOME={shlex.quote(o['home'])} CTXLAKE_STORE={shlex.quote(st['store'])} ctxlake sync --once"


def _unreadable_segments(snapshot_path: str) -> int:
    """Bronze segments the last maint pass set aside as unreadable (``lake.unreadable_segments``
    of the pointer syncd mirrored beside the cached snapshot; 0 when absent or not an int)."""
    from lib import cache_view
    from lib.paths import snapshot_pointer_path

    ptr = cache_view.read_pointer_side(snapshot_pointer_path(snapshot_path)).get("pointer")
    figures = ptr.get("lake") if isinstance(ptr, dict) else None
    n = figures.get("unreadable_segments") if isinstance(figures, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0


def gather(cfg) -> dict:
    """Everything ``ctxlake status`` shows, as one JSON-able dict (see :func:`render`)."""
    from lib import cache_view, config, install, lost_events, spool

    p = cfg.paths
    sync = cache_view.read_raw(p.sync_status(cfg.fleet_id)) or {}
    leases = cache_view.read_raw(p.leases(cfg.fleet_id)) or {}
    backlog = spool.backlog(p.spool_dir, p.state_dir)
    snap = None
    if os.path.exists(p.snapshot(cfg.fleet_id)):
        from lib.memory import snapshot

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
    brief = cache_view.read_raw(p.briefing(cfg.fleet_id))
    entries = install.installed_entries()
    hooks = [{"file": e["file"], "runtime": e["runtime"], "fleet_id": e["fleet_id"], "agent_id": e["agent_id"],
              "agrees": e["fleet_id"] == cfg.fleet_id, "missing": e["missing"]} for e in entries if e["what"] == "hooks"]
    mcp = [{"file": e["file"], "runtime": e["runtime"], "missing": e["missing"]} for e in entries if e["what"] == "mcp"]
    st = {"fleet_id": cfg.fleet_id, "agent_id": cfg.agent_id, "home": p.home, "store": cfg.store, "config": cfg.source,
          "config_path": config.config_file_path(), "configured": cfg.configured,
          "summarize_mode": cfg.summarize_mode, "last_sync": sync.get("last_run_at"),
          "last_sync_errors": sync.get("errors"), "last_error": sync.get("last_error"),
          "last_ok_sync": sync.get("last_ok_at"), "snapshot_sha": sync.get("snapshot_sha"), "snapshot": snap,
          "quarantined_lines": sync.get("quarantined_lines_total") or 0, "last_quarantined": sync.get("last_quarantined"),
          "hook_lost": lost_events.read(p.hook_lost), "last_disk_error": sync.get("disk_error"),
          "hook_lost_at_last_sync": sync.get("hook_lost") if isinstance(sync.get("hook_lost"), int) else 0,
          "synced_store": sync.get("store"),
          "briefing": {"chars": len(brief.get("text") or ""), "rendered_at": brief.get("rendered_at")}
          if isinstance(brief, dict) else None,
          "spool_backlog": backlog, "agents": _roster_agents(p.roster(cfg.fleet_id), cfg.sync.presence_ttl_secs),
          "leases": _held_leases(leases), "leases_refused": leases.get("refused") if isinstance(leases, dict) else None,
          "hooks": hooks, "mcp": mcp, "hook_log": _hook_log(p.hook_errors), "spool_disk": spool.disk_free(p.spool_dir),
          "other_spools": other_spools(p)}
    st["hook_errors"] = st["hook_log"]["errors"]
    from lib.memory import snapshot as snapmod

    st["lake"] = snapmod.cached_lake_figures(p.snapshot(cfg.fleet_id))  # the Delta table, as of the last maint
    st["unreadable_segments"] = _unreadable_segments(p.snapshot(cfg.fleet_id))
    st["next"] = next_step(st)
    return st


def next_step(st: dict) -> str:
    """The one command that moves this host forward, judged from :func:`gather`."""
    if not st["configured"]:
        return "ctxlake init --store file://~/.ctxlake/lake --fleet NAME   (or s3://bucket/prefix)"
    dead = [e for e in st["hooks"] + st["mcp"] if e["missing"]]
    if dead:
        return (f"ctxlake install {dead[0]['runtime']}   ({dead[0]['file']} runs {dead[0]['missing'][0]}, which no "
                "longer exists; install again writes this checkout's paths)")
    if st["other_spools"]:
        return (f"{ship_other_command(st)}   (ships what was spooled under {st['other_spools'][0]['home']}), "
                "then ctxlake install --all   (so the hooks carry this home)")
    if st["synced_store"] not in (None, st["store"]):
        return "ctxlake sync --once   (the cache still holds what syncd pulled from the previous store)"
    disk = st["spool_disk"]
    new_losses = st["hook_lost"]["count"] > st["hook_lost_at_last_sync"]
    if disk["low"] or new_losses or (st["last_sync_errors"] and st.get("last_disk_error")):
        why = ("the spool's filesystem is almost full" if disk["low"] else
               "hooks lost events since the last sync" if new_losses else str(st["last_disk_error"])[:160])
        return (f"free space on the filesystem of {st['home']}   ({why}; hooks lose events and sync cannot "
                "write), then: ctxlake sync --once")
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
    """Unexpired leases of the cached view by the store clock (:func:`lib.live.leases.view_leases`)."""
    from lib.live import leases

    return leases.view_leases(view) if isinstance(view, dict) else []


def _mib(n: int) -> str:
    return f"{n / 1048576:.1f} MiB"


def _lake_line(lake: dict) -> str:
    """One line on the Delta table from the cached pointer figures (see :func:`gather`)."""
    if "bytes" not in lake:
        return "no figures yet (run maint, then sync)"
    return (f"{_mib(lake['bytes'])} in {lake.get('files', '?')} file(s), table version {lake.get('version', '?')}; "
            f"next vacuum frees {_mib(lake.get('vacuum_due_bytes', 0))}, "
            f"{_mib(lake.get('unreferenced_bytes', 0))} unreferenced in all (as of {lake.get('built_at', '?')})")


def render(st: dict, cfg, out) -> None:
    """Write the view :func:`gather` built as one screen for a human to ``out`` (text). Text from
    the store or the cache (ids, repos, tasks, lease reasons, errors) goes through
    :func:`lib.sanitize.for_terminal`: no control character reaches the terminal."""
    from lib import install
    from lib.sanitize import for_terminal as t

    w = out.write
    w(f"config     {st['config'] or 'none at ' + st['config_path'] + ' (every value is a default)'}\n"
      f"fleet      {t(st['fleet_id'])} (agent {t(st['agent_id'])}, summarize {st['summarize_mode']})\n"
      f"store      {st['store']}\n")
    if not st["hooks"]:
        w("hooks      none installed\n")
    for h in st["hooks"]:
        w(f"hooks      {h['file']}: fleet {t(h['fleet_id'])}, agent {t(h['agent_id'])}"
          + ("" if h["agrees"] else f"  MISMATCH: the config says fleet {t(st['fleet_id'])}") + "\n")
    for line in install.missing_lines([dict(e, what=kind) for kind in ("hooks", "mcp") for e in st[kind]]):
        w(f"MISSING    {line}\n")
    if st["synced_store"] not in (None, st["store"]):
        w(f"last sync  never against this store; the last pass ({_age(st['last_sync'])}) was against "
          f"{st['synced_store']}, and the cache below still holds what it pulled\n")
    elif not st["last_sync"]:
        w("last sync  never\n")
    elif st["last_sync_errors"]:
        w(f"last sync  {_age(st['last_sync'])}, FAILED ({st['last_sync_errors']} error(s)): {t(st['last_error'] or '?')}\n"
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
    w(f"lake       {_lake_line(st['lake'])}\n")
    if st["unreadable_segments"]:
        w(f"lake       UNREADABLE: {st['unreadable_segments']} unreadable segment(s) set aside by maint (not merged, "
          "never deleted); `ctxlake maint --once --json` lists them (unreadable_keys); see docs/operations.md "
          "\"Unreadable segments\"\n")
    w(f"spool      {b['files']} file(s), {b['bytes']} bytes unshipped\n")
    for o in st["other_spools"]:
        w(f"spool      ELSEWHERE: {o['files']} file(s), {o['bytes']} bytes not shipped under {o['spool_dir']}, not this "
          f"home ({cfg.paths.home}): hooks or MCP servers started without CTXLAKE_HOME wrote them and this home's sync "
          f"never reads them; ship them with `{ship_other_command(st)}`, then run ctxlake install again\n")
    w(f"agents     {len(st['agents'])} live\n")
    for a in st["agents"]:
        age = "age ?" if a["age_secs"] is None else f"seen {_secs(a['age_secs'])} ago"
        where = f" {t(a['repo'])}" + (f"@{t(a['branch'])}" if a.get("branch") else "") if a.get("repo") else ""
        w(f"  - {t(a['agent_id'])} ({t(a['runtime'])}){where}, {age}" + (f': "{t(a["task"])}"' if a["task"] else "") + "\n")
    w(f"leases     {len(st['leases'])}" + (f" (refused: the store does not honour conditional writes: "
                                          f"{st['leases_refused']}; run ctxlake doctor)" if st["leases_refused"] else "") + "\n")
    for lease in st["leases"]:
        w(f"  - {t(lease.get('path') or lease.get('resource'))} held by {t(lease.get('holder'))} ({t(lease.get('reason'))})\n")
    hl = st["hook_log"]
    w(f"hook errors {hl['errors']}" + (f", last: {t(hl['last'], 120)}" if hl["errors"] else "")
      + (f" ({hl['uncaptured']} event(s) of kinds ctxlake does not capture)" if hl["uncaptured"] else "")
      + (f"; see {cfg.paths.hook_errors}" if hl["errors"] or hl["uncaptured"] else "") + "\n")
    lost = st["hook_lost"]
    if lost["count"]:
        last = lost["recent"][0] if lost["recent"] else {}
        w(f"hook LOST  {lost['count']} time(s) a hook could not write its event nor hook-errors.log (a full disk?); "
          f"last {last.get('ts', '?')} {t(last.get('runtime', '?'))} {t(last.get('event', '?'))}: {t(last.get('error'), 120)}"
          f"; free space on the filesystem of {os.path.dirname(cfg.paths.hook_lost)}\n")
    if st["quarantined_lines"]:
        lq = st["last_quarantined"] if isinstance(st["last_quarantined"], dict) else {}
        w(f"quarantine {st['quarantined_lines']} spool line(s) could not be events and were kept with their reason "
          f"under quarantine/fleet={st['fleet_id']}/ in the store; last {_age(lq.get('at'))}: {t(lq.get('reason'), 160)}\n")
    w(f"next       {st['next']}\n")
    disk = st["spool_disk"]
    if disk["low"]:
        w(f"spool disk  LOW: {disk['free_bytes'] >> 20} MiB free on the spool's filesystem; hooks lose events "
          "and cannot log them: free space\n")


def _fmt_duration(ms) -> str:
    s = int((ms or 0) / 1000)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def render_sessions(rows: list[dict], out) -> None:
    """One line per session of :func:`lib.memory.snapshot.recent_sessions` under a header, to ``out``."""
    if not rows:
        out.write("the snapshot holds no sessions yet\n")
        return
    from lib.sanitize import for_terminal

    out.write(f"{'STARTED':<16}  {'DURATION':>8}  {'AGENT':<10} {'REPO':<24} {'OK':>4} {'FAIL':>4} {'FILES':>5} "
              f"{'COST':>7}  TITLE\n")
    for r in rows:
        repo = for_terminal(r.get("repo") or "-", 24)
        cost = (r.get("usage") or {}).get("cost_usd") if isinstance(r.get("usage"), dict) else None
        cost_text = f"${cost:.2f}" if isinstance(cost, (int, float)) else "-"
        title = for_terminal(r.get("title") or r.get("summary") or "", 90)
        out.write(f"{str(r.get('started_at') or '').replace('T', ' ')[:16]:<16}  {_fmt_duration(r['duration_ms']):>8}  "
                  f"{for_terminal(r['agent_id'], 10):<10} {repo[:24]:<24} {r['commands_ok']:>4} "
                  f"{r['commands_failed']:>4} {len(r.get('files_touched') or []):>5} {cost_text:>7}  {title}\n")


def sessions_cli(args, cfg, out) -> int:
    """``ctxlake sessions [--limit N] [--json]``: the newest ``args.limit`` sealed sessions of the
    cached snapshot (:func:`render_sessions`, or a JSON list) to ``out``; returns the exit code.
    :raises lib.failures.Failure: ``refused`` when the cached snapshot cannot be read (truncated,
    not SQLite): the next ``ctxlake sync`` re-hashes it and downloads the store's copy again
    (:func:`lib.memory.snapshot.fetch`)."""
    import sqlite3

    from lib.memory import snapshot
    from lib.failures import Failure

    path = cfg.paths.snapshot(cfg.fleet_id)
    if not os.path.exists(path):
        out.write("no snapshot in the cache yet: run `ctxlake maint --once` then `ctxlake sync --once`\n")
        return 0
    try:
        conn = snapshot.open_readonly(path)
        try:
            rows = snapshot.recent_sessions(conn, args.limit)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise Failure("refused", f"sessions: the cached snapshot {path} is corrupt ({exc}); run `ctxlake sync --once`: "
                                 "it replaces the copy with the store's") from None
    if args.json:
        out.write(json.dumps(rows, sort_keys=True) + "\n")
    else:
        render_sessions(rows, out)
    return 0
