"""``ctxlake query``: SQL with DuckDB over the fleet's Delta table at its current version, as
the view ``events`` (docs/lake.md); an empty lake is an empty table with the lake's columns."""
from __future__ import annotations

import json
import sys


def run_cli(args, cfg, out) -> int:
    """Run ``args.sql`` and print the rows as aligned columns (or JSON with ``args.json``) to
    ``out``; returns the exit code. :raises lib.failures.Failure: ``store`` (the table cannot be
    read), ``usage`` (DuckDB refused the SQL: its first line, and how to see the columns)."""
    from lib.failures import Failure
    from lib import lake
    from lib.store import open_store

    store = open_store(cfg.store, live=cfg.live_store)
    try:
        con = lake.duckdb_connect(store, cfg.fleet_id, cfg.paths.lake_cache(cfg.fleet_id))
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
    from lib.sanitize import for_terminal

    cells = [[for_terminal(v, 1 << 20) for v in r] for r in [cols, *rows]]  # lake text: no control characters
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    for r in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(r, widths)) + "\n")
    return 0
