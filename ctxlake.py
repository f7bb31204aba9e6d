#!/usr/bin/env python3
"""ctxlake: the operator CLI (docs/design.md §1, §13).

Every verb is one short function over ``lib/``; ``sync``, ``maint`` and ``mcp`` become the role
script's process (``syncd.py``, ``maint.py``, ``mcp_server.py``: no role script imports another),
``hook`` runs :mod:`lib.hookproc`. Output is for humans; ``--json`` where a script would want it.

    ctxlake init --store URL --fleet F [--agent-id A]
    ctxlake status [--json]
    ctxlake sessions [--limit N] [--json]
    ctxlake install <claude_code|cursor|hermes>|--all [--dry-run] [--project]
    ctxlake uninstall [<runtime>|--all] [--dry-run] [--project]
    ctxlake import claude-code [--path DIR_OR_FILE] | import hermes [--path STATE_DB] | import cursor (refused)
    ctxlake query "SELECT ... FROM events" [--json]
    ctxlake lease acquire|release|list [PATH...] [--reason R] [--ttl S]
    ctxlake demo [--fixtures DIR] [--keep]
    ctxlake doctor [--store URL] [--json]
    ctxlake claims [--status S] [--explain] | --approve ID | --retire ID --reason R
    ctxlake sync [--once] | maint --once | hook <runtime> [<event>] | mcp
"""
from __future__ import annotations

import signal
import sys

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
"""The signals that stop the daemon. Blocked from the first line when this process will become
``syncd.py``: a blocked signal stays pending across ``execv`` (also one inherited as ignored),
and syncd delivers it to its own handler once installed, so a Ctrl-C during startup is never
lost (docs/operations.md "Stopping syncd")."""
if sys.argv[1:2] == ["sync"] and sys.argv[0].endswith(("ctxlake", "ctxlake.py")):
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

import json  # noqa: E402
import os  # noqa: E402

from lib.failures import Failure  # noqa: E402

ROOT = os.path.dirname(os.path.abspath(__file__))


def cmd_init(args, cfg, out) -> int:
    """Write ctxlake.toml (no secrets) and prove the store with a real write and read back.

    The store URL is saved absolute (``file://~/lake`` and ``file://lake`` resolve against the
    home and the current directory), so every working directory sees one lake. An existing
    config with another fleet or store is replaced only with ``--force``.
    Example: ``ctxlake init --store file://~/.ctxlake/lake --fleet team-a``
    """
    from lib import config

    return config.init(args, cfg, out)


def cmd_status(args, cfg, out) -> int:
    """Show this host on one screen, with the next step.

    Config, fleet, store; the installed hooks and whether they agree with the config; the last
    sync and the cause of its error; what the cache holds; spool, agents, leases, hook errors.

    Example: ``ctxlake status --json``
    """
    from lib import status

    st = status.gather(cfg)
    if args.json:
        out.write(json.dumps(st, sort_keys=True, default=str) + "\n")
    else:
        status.render(st, cfg, out)
    return 0


def cmd_sessions(args, cfg, out) -> int:
    """One line per sealed session from the cached snapshot, under a header: start, duration,
    agent, repo name, commands ok/failed, files written or edited, cost (only where the runtime
    reported one), the runtime's own title else the first typed prompt.

    Example: ``ctxlake sessions --limit 20``
    """
    from lib import status

    return status.sessions_cli(args, cfg, out)


def cmd_import(args, cfg, out) -> int:
    """Import a runtime's on-disk history into the spool (redacted); syncd ships it.

    Example: ``ctxlake import claude-code --path ~/.claude/projects`` or ``ctxlake import hermes``
    """
    from lib import importers

    return importers.run_cli(args, cfg, out)


def cmd_install(args, cfg, out) -> int:
    """Wire ctxlake's hooks and MCP server into a runtime's config (merge, never clobber).

    Example: ``ctxlake install --all --dry-run`` then ``ctxlake install claude_code``
    """
    from lib import install

    return install.run_cli("install", args, cfg, out)


def cmd_uninstall(args, cfg, out) -> int:
    """Remove exactly what ``install`` added (every detected runtime when none is named).

    Example: ``ctxlake uninstall cursor``
    """
    from lib import install

    return install.run_cli("uninstall", args, cfg, out)


def cmd_query(args, cfg, out) -> int:
    """Run SQL with DuckDB over the fleet's Delta table (its current version), as view ``events``.

    Example: ``ctxlake query "SELECT event_type, count(*) FROM events GROUP BY 1"``
    """
    from lib import query

    return query.run_cli(args, cfg, out)


def cmd_migrate(args, cfg, out) -> int:
    """Move the compacted lake from the old ``gen=<hash>`` layout into the fleet's Delta table,
    once (docs/lake.md "Migration"). Idempotent: with no old layout left it changes nothing.

    The migration is the first maintenance pass's (``maint --once`` does it too): this runs one,
    under the maintenance lease, so it never races maint. ``--json`` prints
    ``{"migrated": <old objects deleted>, "pending_before": <old objects found>, "table_version",
    "already_done": bool}``. Example: ``ctxlake migrate --json``
    """
    from lib import maintenance

    return maintenance.migrate(args, cfg, out)


def cmd_demo(args, cfg, out) -> int:
    """Run the whole pipeline on real fixtures in a temporary home (embedded file:// store).

    On the real fixtures: import transcripts, replay hook payloads as two agents, sync, maint,
    sync, then print status, sessions, the briefing a new SessionStart gets, and a DuckDB query.

    Example: ``ctxlake demo``
    """
    from lib import demo

    return demo.run_cli(args, cfg, out)


def cmd_lease(args, cfg, out) -> int:
    """Acquire, release or list advisory leases, directly on the store with the code syncd uses.

    Paths resolve against the current directory's git repository (``origin`` URL + repo-relative
    path, so every clone shares them); a trailing ``/`` or an existing directory leases the whole
    directory. Acquiring again as the current holder renews it (``claim`` is the verb's old
    name, still accepted). Exit 1 on a refusal.

    Examples: ``ctxlake lease acquire src/parser/ --reason "rewrite the parser"``,
    ``ctxlake lease release src/parser/`` (no path: everything you hold), ``ctxlake lease list``
    """
    from lib.live import leases

    return leases.run_cli(args, cfg, out)


def cmd_claims(args, cfg, out) -> int:
    """List claims by status, explain what holds a candidate back, approve or retire one.

    Reads the gate's fold (``claims/fleet/<f>/``) from the store; ``--approve``/``--retire``
    write a human ClaimEvent the next maintenance pass folds in.
    Example: ``ctxlake claims --status candidate --explain``
    """
    from lib.memory import claims

    return claims.run_cli(args, cfg, out)


def _exec_role(script: str, argv: list[str], prog: str | None = None) -> int:
    """Become ``python <script> <argv>`` (``os.execv``: same process, so signals, stdin, stdout
    and the exit code are the role's own). Role scripts are processes, not libraries: none
    imports another. ``prog`` is the name the role's one-line errors give the command
    (``lib.failures.PROG_ENV``); ``--debug`` reaches it as ``CTXLAKE_DEBUG``."""
    from lib.failures import PROG_ENV

    if prog:
        os.environ[PROG_ENV] = prog
    if script == "syncd.py":  # pending until syncd installs its handlers (STOP_SIGNALS)
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, os.path.join(ROOT, script), *argv])
    return 70  # not reached: execv replaces this process or raises OSError


def version() -> str:
    """The installed package's version (``importlib.metadata``), else ``pyproject.toml``'s
    ``version`` (a checkout that was never installed), else ``unknown``."""
    from importlib import metadata

    try:
        return metadata.version("ctxlake")
    except metadata.PackageNotFoundError:
        pass
    try:
        import tomllib

        with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
            return str(tomllib.load(fh)["project"]["version"])
    except (OSError, ValueError, KeyError):
        return "unknown"


def _help(fn) -> str:
    """The first sentence of ``fn``'s docstring as plain text (no RST ``` `` ``` markup): what
    ``ctxlake --help`` lists per verb."""
    first = " ".join(fn.__doc__.split("\n\n")[0].split()).replace("``", "")
    return first.split(". ")[0].rstrip(".")


SESSIONS_LIMIT_MAX = 1_000_000
"""The most sessions ``ctxlake sessions --limit`` lists (a snapshot holds far fewer)."""

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
        return _exec_role({"sync": "syncd.py", "maint": "maint.py"}[argv[0]], argv[1:], f"ctxlake {argv[0]}")
    if argv and argv[0] == "mcp":
        return _exec_role("mcp_server.py", argv[1:], "ctxlake mcp")
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
    from lib.failures import Parser, bounded_int
    from lib.live.leases import TTL_MAX, TTL_MIN

    p = Parser(prog="ctxlake", description="Shared memory and coordination for fleets of coding agents.",
               epilog="--debug (anywhere) prints the traceback of a failure. Exit codes: docs/operations.md.")
    p.add_argument("--version", action="version", version=f"ctxlake {version()}")
    sub = p.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("init", help=_help(cmd_init))
    s.add_argument("--store", required=True, help="file:///abs/path (file://~/x and file://rel are made absolute) or s3://bucket/prefix")
    s.add_argument("--fleet", required=True, help="fleet id")
    s.add_argument("--agent-id", help="this host's agent id (default: host name)")
    s.add_argument("--force", action="store_true", help="replace an existing config with another fleet or store")
    s = sub.add_parser("status", help=_help(cmd_status))
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("sessions", help=_help(cmd_sessions))
    s.add_argument("--limit", type=bounded_int(1, SESSIONS_LIMIT_MAX), default=50,
                   help=f"newest sessions to list (1 to {SESSIONS_LIMIT_MAX}, default 50)")
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("import", help=_help(cmd_import))
    s.add_argument("runtime", help="claude-code | hermes | cursor (refused: no importable history)")
    s.add_argument("--path", help="claude-code: a transcript file or folder (default ~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects); "
                        "hermes: state.db (default $HERMES_HOME/state.db)")
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
    s.add_argument("--fixtures", help="a folder holding claude-transcripts/ and claude-hooks/ (default: the checkout's tests/fixtures)")
    s.add_argument("--keep", action="store_true", help="keep the temporary home")
    s = sub.add_parser("lease", help=_help(cmd_lease))
    s.add_argument("action", choices=("acquire", "release", "list", "claim"),
                   help="acquire (claim: its old name), release or list")
    s.add_argument("paths", nargs="*", help="files or directories (trailing / or an existing directory = the whole directory)")
    s.add_argument("--reason", help="why you need these paths (other agents read it)")
    s.add_argument("--ttl", type=bounded_int(TTL_MIN, TTL_MAX, " of seconds"),
                   help=f"seconds until the lease expires by the store clock, {TTL_MIN} to {TTL_MAX} (default [leases] ttl_secs)")
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
    args, extra = p.parse_known_args(argv)
    if extra:  # name the verb's own help, where its flags are listed
        sub.choices[args.verb].error(f"unrecognized arguments: {' '.join(extra)}")
    from lib import config

    cfg = config.load(strict=args.verb not in VERBS_WITHOUT_CONFIG)
    if args.verb not in VERBS_WITHOUT_CONFIG:
        if args.verb == "install" and not args.dry_run and not cfg.configured:
            raise Failure("config", f"install: no ctxlake config at {config.config_file_path()}, so the hooks would "
                                    "speak for fleet 'default'; run `ctxlake init --store URL --fleet NAME` first")
        err.write(config.startup_notes(cfg))
    return {"init": cmd_init, "status": cmd_status, "sessions": cmd_sessions, "import": cmd_import,
            "install": cmd_install, "uninstall": cmd_uninstall, "query": cmd_query, "migrate": cmd_migrate, "demo": cmd_demo,
            "claims": cmd_claims, "lease": cmd_lease}[args.verb](args, cfg, out)


if __name__ == "__main__":
    sys.exit(main())
