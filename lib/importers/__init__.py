"""Importers: a runtime's on-disk history → redacted envelopes in the spool (``ctxlake import``).

Imported envelopes carry ``imported: true`` and the event ids of :mod:`lib.identity` (derived
from the runtime's own ids, the same a hook derives), so importing the same history twice, or
after the hooks captured it, duplicates nothing in the lake. They go
through the same redaction as the hook (invariant 7) and land in ``spool/import/``, where syncd
ships and seals them like any other session.
"""
from __future__ import annotations



class ImportResult:
    """Per-source counts: ``path``, ``sessions`` (ids), ``envelopes``, ``skipped_lines`` (not
    JSON, or cut), ``repaired_lines`` (invalid UTF-8 replaced), ``records``."""

    def __init__(self, path: str):
        self.path = path
        self.sessions: set = set()
        self.envelopes = 0
        self.skipped_lines = 0
        self.records = 0
        self.repaired_lines = 0


def run_cli(args, cfg, out) -> int:
    """``ctxlake import <runtime> [--path P] [--agent-id A]``: one line per imported source to
    ``out``; returns the exit code. Without ``--path`` each runtime's documented history is read
    (Claude Code: :func:`lib.importers.claude_code.default_path`, saying which path; Hermes:
    :func:`lib.importers.hermes.default_path`). :raises lib.failures.Failure: ``usage`` for Cursor (no history
    to import), an unknown runtime, a missing path or a file that is not the runtime's format."""
    import os

    from lib.failures import Failure

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
    from lib.importers import claude_code

    path = os.path.expanduser(args.path) if args.path else claude_code.default_path()
    if not args.path:
        if not os.path.isdir(path):
            raise Failure("usage", f"import claude-code: no Claude Code history at {path} (its default place); "
                                   "pass --path with a transcript file or a folder of them")
        out.write(f"reading Claude Code's history at {path} (--path for another file or folder)\n")
    try:
        results = claude_code.import_path(path, cfg.paths, fleet_id=cfg.fleet_id, agent_id=agent, log=log)
    except FileNotFoundError as exc:
        raise Failure("usage", f"import: {exc}")
    for r in results:
        out.write(f"imported {os.path.basename(r.path)}: {len(r.sessions)} session(s), {r.envelopes} envelope(s)"
                  + (f", skipped {r.skipped_lines} malformed line(s)" if r.skipped_lines else "") + "\n")
    out.write(f"{len(results)} file(s) imported into the spool; run `ctxlake sync --once` to ship them\n")
    return 0
