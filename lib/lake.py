"""The Parquet lake: typed schema, segment encoding and the Delta table (docs/design.md §4, §5; keys in lib/keys.py).

One row per envelope, typed columns so any engine (DuckDB, Spark, Trino, Athena) can query
without parsing JSON, plus ``envelope_json`` — the whole envelope, for forward compatibility and
exact round-trip. Segments are Zstd, one row group, deterministic bytes for the same rows (so a
re-sent segment after a crash is byte-identical). Imports pyarrow lazily; never used by the hook
or the MCP server.
"""
from __future__ import annotations

import io
import json

from lib.keys import (  # noqa: F401 - lake's keys, used here and by callers as lake.<name>
    delta_log_prefix,
    digest_key,
    fleet_sessions_prefix,
    ledger_key,
    legacy_root,
    manifest_key,
    parse_session_prefix,
    quarantine_key,
    sealed_key,
    segment_key,
    session_prefix,
    snapshot_blob_key,
    snapshot_pointer_key,
    table_root,
    table_state_prefix,
)

_SCHEMA = None

STRING_COLUMNS = ("event_id", "fleet_id", "agent_id", "runtime", "runtime_version", "host_id", "session_id",
                  "turn_id", "message_id", "parent_message_id", "event_type", "role", "content", "content_hash",
                  "tool_name", "tool_input", "tool_result", "model", "redaction_status", "repo", "cwd", "branch",
                  "git_sha")
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
EVENT_COLUMNS = ("user_kind", "failure_reason", "title", "compact_trigger")
"""Typed columns of the optional event fields (docs/architecture.md "User records"); with
``pre_tokens`` (int64). Older segments lack them: readers union by name."""


def schema():
    """The lake's ``pyarrow.Schema`` (docs/design.md §5). ``emitted_at`` is timestamp[ms, UTC]."""
    global _SCHEMA
    if _SCHEMA is None:
        import pyarrow as pa

        fields = [pa.field("event_id", pa.string(), nullable=False),
                  pa.field("emitted_at", pa.timestamp("ms", tz="UTC"), nullable=False)]
        for name in STRING_COLUMNS[1:]:
            fields.append(pa.field(name, pa.string()))
        fields += [pa.field("exit_code", pa.int32()), pa.field("duration_ms", pa.int64()),
                   pa.field("paths", pa.list_(pa.string()))]
        fields += [pa.field(t, pa.int64()) for t in TOKEN_COLUMNS]
        fields += [pa.field("cost_usd", pa.float64()), pa.field("rules_fired", pa.list_(pa.string())),
                   pa.field("imported", pa.bool_())]
        fields += [pa.field(n, pa.string()) for n in EVENT_COLUMNS] + [pa.field("pre_tokens", pa.int64())]
        fields += [pa.field("envelope_json", pa.string(), nullable=False)]
        _SCHEMA = pa.schema(fields)
    return _SCHEMA


def to_columns(envs: list[dict], raw: list[str] | None = None) -> dict:
    """Column lists for ``envs`` in schema order (pure Python; the slow half of encoding).

    ``raw`` (optional, same length) are the envelopes' spool lines, used verbatim as
    ``envelope_json`` instead of re-serializing. ``emitted_at`` stays a string here; Arrow
    casts the whole column at once.
    """
    cols: dict[str, list] = {f: [] for f in schema().names}
    dump = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode
    for i, e in enumerate(envs):
        tool = e.get("tool") or {}
        usage = e.get("usage") or {}
        red = e.get("redaction") or {}
        row = {
            "event_id": e["event_id"], "emitted_at": e["emitted_at"],
            "tool_name": tool.get("name"), "tool_input": tool.get("input"), "tool_result": tool.get("result"),
            "exit_code": tool.get("exit_code"), "duration_ms": tool.get("duration_ms"),
            "paths": tool.get("paths") if tool else None, "model": usage.get("model"),
            "cost_usd": usage.get("cost_usd"), "redaction_status": red.get("status"),
            "rules_fired": red.get("rules_fired") or [], "imported": bool(e.get("imported")),
            "envelope_json": raw[i] if raw is not None else dump(e),
        }
        for t in TOKEN_COLUMNS:
            row[t] = usage.get(t) if usage else None
        row["pre_tokens"] = e.get("pre_tokens")
        for name in EVENT_COLUMNS:
            v = e.get(name)
            row[name] = v if v is None or isinstance(v, str) else str(v)
        for name in STRING_COLUMNS:
            if name not in row:
                v = e.get(name)
                row[name] = v if v is None or isinstance(v, str) else str(v)
        for k, v in row.items():
            cols[k].append(v)
    return cols


def to_table(envs: list[dict], raw: list[str] | None = None):
    """A ``pyarrow.Table`` with the lake schema for ``envs`` (``raw``: their spool lines).

    :raises ValueError: empty batch, or a value of the wrong type for its column.
    """
    import pyarrow as pa

    if not envs:
        raise ValueError("refusing to encode an empty batch")
    sch = schema()
    cols = to_columns(envs, raw)
    arrays = []
    for f in sch:
        if f.name == "emitted_at":
            arrays.append(pa.array(cols[f.name], type=pa.string()).cast(f.type))
            continue
        try:
            arrays.append(pa.array(cols[f.name], type=f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError, OverflowError, TypeError, ValueError):
            arrays.append(pa.array([holdable(v, f.type) for v in cols[f.name]], type=f.type))
    return pa.Table.from_arrays(arrays, schema=sch)


_SURROGATE = None
_LIMITS = {"int32": 1 << 31, "int64": 1 << 63}


def holdable(value, typ):
    """``value`` made holdable by a column of Arrow type ``typ`` (issue #16: a poison pill must
    not wedge a session): lone surrogates in text become U+FFFD; an integer out of the column's
    range, a NaN/infinite number or a non-number becomes null; a float that is integral becomes
    that integer. The envelope's own JSON (``envelope_json``) keeps the original numbers."""
    global _SURROGATE
    import math

    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_list(typ):
        return [holdable(v, typ.value_type) for v in value] if isinstance(value, list) else None
    if pa.types.is_string(typ):
        text = value if isinstance(value, str) else str(value)
        if _SURROGATE is None:
            import re

            _SURROGATE = re.compile("[\ud800-\udfff]")
        return _SURROGATE.sub("\ufffd", text)
    if pa.types.is_boolean(typ):
        return bool(value)
    if pa.types.is_floating(typ):
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None
    if pa.types.is_integer(typ):
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            value = int(value)
        limit = _LIMITS.get(str(typ), 1 << 63)
        return value if isinstance(value, int) and not isinstance(value, bool) and -limit <= value < limit else None
    return value


_JSON_SCHEMA = None


def _json_schema():
    """Explicit schema for Arrow's NDJSON reader: the envelope's nested shape (docs/design.md §5)."""
    global _JSON_SCHEMA
    if _JSON_SCHEMA is None:
        import pyarrow as pa

        fields = [pa.field(n, pa.string()) for n in STRING_COLUMNS if n not in ("tool_name", "tool_input", "tool_result",
                                                                               "model", "redaction_status")]
        fields += [pa.field(n, pa.string()) for n in EVENT_COLUMNS] + [pa.field("pre_tokens", pa.int64())]
        fields += [pa.field("schema_version", pa.int64()), pa.field("emitted_at", pa.string()), pa.field("imported", pa.bool_()),
                   pa.field("tool", pa.struct([pa.field("name", pa.string()), pa.field("input", pa.string()),
                                               pa.field("result", pa.string()), pa.field("exit_code", pa.int32()),
                                               pa.field("duration_ms", pa.int64()),
                                               pa.field("paths", pa.list_(pa.string()))])),
                   pa.field("usage", pa.struct([pa.field("model", pa.string())] + [pa.field(t, pa.int64()) for t in TOKEN_COLUMNS]
                                               + [pa.field("cost_usd", pa.float64())])),
                   pa.field("redaction", pa.struct([pa.field("status", pa.string()),
                                                    pa.field("rules_fired", pa.list_(pa.string()))]))]
        _JSON_SCHEMA = pa.schema(fields)
    return _JSON_SCHEMA


def table_from_lines(lines: list[bytes]):
    """A lake table straight from spool lines (NDJSON), parsed by Arrow's C++ JSON reader.

    The fast path of syncd (docs/design.md §12: ≥ 50,000 envelopes/s). ``envelope_json`` is each line
    verbatim. :raises ValueError: a line does not fit the schema (callers fall back to
    :func:`to_table`, which is exact and slower).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    if not lines:
        raise ValueError("refusing to encode an empty batch")
    data = b"\n".join(lines) + b"\n"
    try:
        t = pj.read_json(pa.py_buffer(data), read_options=pj.ReadOptions(block_size=1 << 20),
                         parse_options=pj.ParseOptions(explicit_schema=_json_schema(), unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"batch does not fit the lake schema: {exc}") from exc
    if t.num_rows != len(lines):
        raise ValueError("line count mismatch while parsing a batch")
    tool, usage, red = t.column("tool"), t.column("usage"), t.column("redaction")
    sch = schema()
    cols = {}
    for f in sch:
        n = f.name
        if n == "emitted_at":
            cols[n] = t.column(n).cast(f.type)
        elif n == "tool_name":
            cols[n] = pc.struct_field(tool, "name")
        elif n == "tool_input":
            cols[n] = pc.struct_field(tool, "input")
        elif n == "tool_result":
            cols[n] = pc.struct_field(tool, "result")
        elif n in ("exit_code", "duration_ms", "paths"):
            cols[n] = pc.struct_field(tool, n)
        elif n in TOKEN_COLUMNS or n in ("model", "cost_usd"):
            cols[n] = pc.struct_field(usage, n)
        elif n == "redaction_status":
            cols[n] = pc.struct_field(red, "status")
        elif n == "rules_fired":
            cols[n] = pc.fill_null(pc.struct_field(red, "rules_fired"), pa.scalar([], pa.list_(pa.string())))
        elif n == "imported":
            cols[n] = pc.fill_null(t.column(n), False)
        elif n == "envelope_json":
            cols[n] = pa.array(lines, type=pa.binary()).cast(pa.string())
        else:
            cols[n] = t.column(n)
    # the checks of lib.envelope.check, vectorized: any line failing them sends the whole batch
    # down the exact (slower) path, which drops just the bad lines and counts them
    from lib.envelope import EVENT_TYPES, SCHEMA_VERSION

    if not pc.all(pc.equal(pc.fill_null(t.column("schema_version"), -1), SCHEMA_VERSION)).as_py():
        raise ValueError("a line has an unsupported or missing schema_version")
    for name in ("event_id", "session_id", "event_type", "fleet_id", "agent_id", "runtime"):
        col = t.column(name)
        if col.null_count or not pc.all(pc.greater(pc.utf8_length(col), 0)).as_py():
            raise ValueError(f"a line lacks {name}")
    if not pc.all(pc.is_in(t.column("event_type"), value_set=pa.array(EVENT_TYPES))).as_py():
        raise ValueError("a line has an unknown event_type")
    if cols["emitted_at"].null_count:
        raise ValueError("a line lacks emitted_at")
    return pa.Table.from_arrays([cols[f.name] for f in sch], schema=sch)


SHIPPED_BY = b"ctxlake.shipped_by"
"""Parquet key-value metadata of a bronze segment: the ``host_id`` of the syncd that wrote it
(:func:`lib.envelope.host_id` of the daemon, not of the hook). An envelope's own ``host_id`` is
whatever the process that ran the hook said (its ``HOSTNAME``), so an agent can choose it; the
segment's shipper is the one host fact an agent without store credentials cannot forge, and the
promotion gate counts independence by it (docs/security.md "Trust model")."""


def encode(envs_or_table, raw: list[str] | None = None, shipped_by: str | None = None) -> bytes:
    """Parquet bytes (Zstd, one row group) for a batch of envelopes or a table; deterministic.
    ``shipped_by``: the writing syncd's host id, stored as :data:`SHIPPED_BY` metadata."""
    import pyarrow.parquet as pq

    table = envs_or_table if not isinstance(envs_or_table, list) else to_table(envs_or_table, raw)
    if shipped_by:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), SHIPPED_BY: shipped_by.encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=max(1, table.num_rows))
    return buf.getvalue()


def decode(data: bytes) -> list[dict]:
    """Envelopes from Parquet bytes (through ``envelope_json``, exact round-trip)."""
    return decode_shipped(data)[0]


def decode_shipped(data: bytes) -> tuple[list[dict], str | None]:
    """``(envelopes, shipped_by)`` of a bronze segment: :func:`decode` and the host id of the
    syncd that wrote it (:data:`SHIPPED_BY`; ``None`` for a segment written before it was kept)."""
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data), columns=["envelope_json"])
    shipper = (table.schema.metadata or {}).get(SHIPPED_BY)
    return ([json.loads(s) for s in table.column("envelope_json").to_pylist()],
            shipper.decode("utf-8", "replace") if shipper else None)


def read_table(data: bytes, columns=None):
    """A ``pyarrow.Table`` from Parquet bytes (optionally only ``columns``)."""
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data), columns=columns)


# -- the compacted lake: one Delta Lake table per fleet (docs/lake.md) -----------------------

EVENT_KEY = ("session_id", "event_id")
"""The event identity the table is keyed on (docs/lake.md): an event id is unique within its
session, so a re-shipped or re-imported event matches its row and updates it. Every piece of
code that de-duplicates events goes through :func:`event_key` / :func:`merge_predicate`."""
PARTITION_COLUMNS = ("dt",)
"""Partition columns inside a fleet's table: ``dt`` = the UTC day of ``emitted_at`` (a property
of the event, so a re-shipped event lands in the partition its row is already in)."""
APP_ID = "ctxlake-maint"
"""Delta transaction identifier (``txn.appId``) of maintenance commits; ``txn.version`` is the
maintenance lease epoch, so a retried pass that already committed sees it and stops."""
COMMIT_RETRIES = 8
"""Commits lost to a concurrent writer (or to a store outage) retried at most this often."""


class TableError(Exception):
    """The fleet's Delta table cannot be read or committed; the message says what fixes it."""


class Fenced(TableError):
    """The table carries a maintenance commit with a newer epoch than ours: we are fenced out."""


def event_key(env: dict) -> tuple:
    """``(session_id, event_id)`` of an envelope: its identity in the table (:data:`EVENT_KEY`,
    the same as :func:`lib.identity.key`)."""
    from lib import identity

    return identity.key(env)


def merge_predicate(dts=()) -> str:
    """The MERGE condition target ``t`` = source ``s`` on :data:`EVENT_KEY`, restricted to the
    ``dt`` partitions in ``dts`` so delta-rs prunes every other day (no file of an untouched
    day is read or rewritten)."""
    cond = " AND ".join(f"t.{c} = s.{c}" for c in EVENT_KEY)
    if dts:
        cond += f" AND t.dt IN ({_sql_list(dts)})"
    return cond


def table_schema():
    """The table's ``pyarrow.Schema``: :func:`schema` plus the partition column ``dt`` (string)."""
    import pyarrow as pa

    return schema().append(pa.field("dt", pa.string(), nullable=False))


def table_rows(table):
    """``table`` (lake schema, or an older subset of it) with ``dt`` added from ``emitted_at``,
    one row per :data:`EVENT_KEY` — copies of one identity resolved by the identity merge rule
    (:func:`lib.identity.pick`, docs/architecture.md "Event identity") — sorted by key."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from lib import identity

    if "dt" in table.column_names:
        table = table.drop_columns(["dt"])
    table = table.append_column("dt", pc.strftime(table.column("emitted_at"), format="%Y-%m-%d").cast(pa.string()))
    idx = pa.array(range(table.num_rows), type=pa.int64())
    groups = table.select(list(EVENT_KEY)).append_column("_i", idx).group_by(list(EVENT_KEY), use_threads=False) \
        .aggregate([("_i", "list")])
    raw = table.column("envelope_json")
    keep = []
    for rows in groups.column("_i_list").to_pylist():
        if len(rows) == 1:
            keep.append(rows[0])
            continue
        best, env = rows[0], json.loads(raw[rows[0]].as_py())
        for i in rows[1:]:
            other = json.loads(raw[i].as_py())
            if identity.pick(env, other) is other:
                best, env = i, other
        keep.append(best)
    table = table.take(pa.array(sorted(keep), type=pa.int64()))
    return table.sort_by([(c, "ascending") for c in EVENT_KEY])


def location(store, fleet: str) -> tuple[str, dict]:
    """``(table_uri, storage_options)`` of the fleet's table for delta-rs.

    ``file://`` → a local path; ``s3://`` → ``s3://bucket/prefix/compacted/<f>`` with
    :meth:`lib.store.s3.S3Store.delta_storage_options` (commits are create-only PUTs of
    ``_delta_log/<n>.json``, ``conditional_put=etag``). A routed store uses its lake half.
    :raises TableError: any other backend (``memory://`` has no Delta table).
    """
    store = getattr(store, "lake", store)
    root = table_root(fleet).rstrip("/")
    if store.url.startswith("file://"):
        import os

        return os.path.join(store.root, *root.split("/")), {}
    if store.url.startswith("s3://"):
        return f"s3://{store.bucket}/{store.prefix}{root}", store.delta_storage_options()
    raise TableError(f"the compacted lake is a Delta table and needs a file:// or s3:// store, not {store.url}")


def _delta_error(exc: Exception) -> bool:
    """True for the errors delta-rs raises about the table or the store (not our bugs)."""
    from deltalake.exceptions import DeltaError

    return isinstance(exc, (DeltaError, OSError))


_ANSI = None
_UNREACHABLE = ("error sending request", "error performing", "service unavailable", "serviceunavailable",
                "connection refused", "timed out")


def reason(exc: Exception) -> str:
    """One line of at most 300 characters for a delta-rs error: its terminal colour codes and
    line breaks removed (they would end up in JSON logs and one-line CLI errors)."""
    global _ANSI
    import re

    if _ANSI is None:
        _ANSI = re.compile(r"\x1b\[[0-9;]*m")
    return " ".join(_ANSI.sub("", str(exc)).split())[:300]


def unreachable(exc: Exception) -> bool:
    """True when a delta-rs error says the store did not answer (an outage), not that the log is
    damaged: the fix is to wait for the next pass, not to restore a file."""
    text = reason(exc).lower()
    return any(m in text for m in _UNREACHABLE)


def open_table(store, fleet: str, version: int | None = None):
    """The fleet's ``deltalake.DeltaTable`` (at ``version``, default latest), or ``None`` when
    no table exists yet. :raises TableError: the log is unreadable (a corrupt or missing commit
    file, a damaged checkpoint) or the store is unreachable; the message names the table."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    uri, opts = location(store, fleet)
    try:
        return DeltaTable(uri, version=version, storage_options=opts)
    except TableNotFoundError:
        return None
    except Exception as exc:
        if not _delta_error(exc):
            raise
        if unreachable(exc):
            raise TableError(f"cannot reach the Delta table at {uri}: {reason(exc)} — the store did not answer; "
                             "nothing was changed, the next pass retries") from exc
        raise TableError(f"cannot read the Delta table at {uri}: {reason(exc)} — {_unreadable_advice(store, fleet, exc)}"
                         ) from exc


def _unreadable_advice(store, fleet: str, exc: Exception) -> str:
    """What fixes a table delta-rs cannot read: when it says a ``_delta_log`` file is missing that
    the store does hold, nothing is damaged (delta-rs resolved another path than the store's key,
    docs/design.md §4) and restoring a backup would not help; otherwise the log itself is damaged."""
    import re

    missing = re.search(r"not found: .*?_delta_log/([0-9a-z._-]+)", str(exc), re.IGNORECASE)
    if missing:
        key = delta_log_prefix(fleet) + missing.group(1)
        try:
            present = getattr(store, "lake", store).head(key) is not None
        except Exception:
            present = False
        if present:
            return (f"the store holds {key}, so nothing is damaged: delta-rs looked for it under another path; "
                    "nothing was changed, run with --debug and report it as a ctxlake bug")
    return "restore the damaged _delta_log file from a backup or bucket versioning (nothing was changed)"


def table_config(checkpoint_every: int, log_retention_days: int, vacuum_hours: int) -> dict:
    """Delta table properties maint keeps on the table (docs/lake.md, retention)."""
    return {"delta.checkpointInterval": str(checkpoint_every),
            "delta.logRetentionDuration": f"interval {log_retention_days} days",
            "delta.deletedFileRetentionDuration": f"interval {vacuum_hours} hours"}


def commit(store, fleet: str, rows, *, epoch: int, pass_id: str, config: dict | None = None,
           log=lambda *a, **k: None, before_commit=lambda: None, refuse_forged: bool = False) -> dict:
    """One maintenance commit: MERGE ``rows`` (a ``pyarrow.Table`` from :func:`table_rows`)
    into the fleet's table on :data:`EVENT_KEY` — matched rows whose ``envelope_json`` changed
    are updated, new keys inserted, nothing deleted — or create the table with them.

    The commit carries ``txn(appId=ctxlake-maint, version=epoch)`` and ``commitInfo``
    ``ctxlake.pass_id`` / ``ctxlake.maint_epoch``. Before every attempt the table is re-read:
    a recorded txn version equal to ``epoch`` means this pass already committed (a retry after
    an outage ate the answer) and nothing is written again; a higher one raises :class:`Fenced`
    — unless ``refuse_forged`` and ``before_commit`` (the lease renewal) still succeeds: the
    caller holds the maintenance lease at ``epoch``, so no lease ever issued the higher version,
    which is logged (``lake_txn_epoch_refused``) and replaced by this commit, never obeyed.
    delta-rs refuses a commit racing one that carries the same app id, so a fenced-out pass
    cannot slip in between the check and the write either. Lost races and store errors are
    retried :data:`COMMIT_RETRIES` times. ``before_commit`` runs before each attempt (maint
    renews its lease there).

    Rows the table already holds as they are, or holds a winning copy of (:func:`_drop_unchanged`),
    are dropped first, so re-merging rewrites no file, and when nothing is left no commit is
    made at all; every matched row that remains is a winner and is updated.

    When a retry finds that an earlier attempt of this call landed (the store applied the
    commit but the answer was lost), the result is that commit's (``committed`` true): delta-rs
    is told not to retry by itself (``max_commit_retries=0``), since its retry would append the
    same actions as a second version.

    Returns ``{"version", "committed": bool, "inserted", "updated", "attempts"}``.
    :raises Fenced: a newer epoch committed. :raises TableError: the table is unreadable, or
        every attempt failed.
    """
    import time

    from deltalake import CommitProperties, Transaction, WriterProperties, write_deltalake
    from deltalake.exceptions import CommitFailedError

    uri, opts = location(store, fleet)
    # max_commit_retries=0: this loop owns every retry (see the docstring)
    props = CommitProperties(app_transactions=[Transaction(app_id=APP_ID, version=epoch)], max_commit_retries=0,
                             custom_metadata={"ctxlake.pass_id": pass_id, "ctxlake.maint_epoch": str(epoch)})
    writer = WriterProperties(compression="ZSTD")
    dts = set(rows.column("dt").to_pylist())
    last: Exception | None = None
    for attempt in range(1, COMMIT_RETRIES + 1):
        dt = open_table(store, fleet)
        done = dt.transaction_version(APP_ID) if dt is not None else None
        if done is not None and done > epoch:
            before_commit()  # raises when our lease was lost or taken: then that epoch is real and we are fenced
            if refuse_forged:  # still ours: epochs only grow by acquiring this lease, so none ever issued `done`
                log("lake_txn_epoch_refused", recorded=done, epoch=epoch, detail="no maintenance lease issued it; "
                    "committing with ours replaces it")
                done = None
            else:
                raise Fenced(f"the table at {uri} has a maintenance commit of epoch {done} > ours ({epoch})")
        if done == epoch:
            mine = _own_commit(dt, pass_id) if attempt > 1 else None
            log("lake_commit_already_done", version=dt.version(), epoch=epoch, pass_id=pass_id,
                by_this_call=mine is not None)
            if mine is not None:  # an earlier attempt landed and an outage ate its answer
                m = mine.get("operationMetrics") or {}
                return {"version": mine["version"], "committed": True, "attempts": attempt,
                        "inserted": m.get("num_target_rows_inserted", m.get("num_added_rows", 0)),
                        "updated": m.get("num_target_rows_updated", 0)}
            return {"version": dt.version(), "committed": False, "inserted": 0, "updated": 0, "attempts": attempt}
        todo = rows if dt is None else _drop_unchanged(dt, rows)
        if todo.num_rows == 0:
            return {"version": dt.version(), "committed": False, "inserted": 0, "updated": 0, "attempts": attempt}
        before_commit()
        try:
            if dt is None:
                write_deltalake(uri, todo, partition_by=list(PARTITION_COLUMNS), mode="error",
                                configuration=config or None, storage_options=opts, writer_properties=writer,
                                commit_properties=props)
                metrics = {"num_target_rows_inserted": todo.num_rows, "num_target_rows_updated": 0}
            else:
                metrics = (dt.merge(todo, predicate=merge_predicate(dts), source_alias="s", target_alias="t",
                                    merge_schema=True, writer_properties=writer, commit_properties=props)
                           .when_matched_update_all()
                           .when_not_matched_insert_all().execute())
        except Exception as exc:
            if not (_delta_error(exc) or isinstance(exc, (CommitFailedError, TableError))):
                raise
            last = exc
            log("lake_commit_retry", attempt=attempt, error=reason(exc))
            time.sleep(min(5.0, 0.2 * 2 ** (attempt - 1)))
            continue
        after = open_table(store, fleet)
        log("lake_committed", version=after.version(), epoch=epoch, pass_id=pass_id, rows=todo.num_rows,
            inserted=metrics.get("num_target_rows_inserted"), updated=metrics.get("num_target_rows_updated"))
        return {"version": after.version(), "committed": True, "inserted": metrics.get("num_target_rows_inserted", 0),
                "updated": metrics.get("num_target_rows_updated", 0), "attempts": attempt}
    raise TableError(f"could not commit to the Delta table at {uri} after {COMMIT_RETRIES} attempts: {reason(last)}")


def _own_commit(dt, pass_id: str) -> dict | None:
    """The history entry (``commitInfo`` plus ``version``) of the commit carrying ``pass_id``
    among the table's latest commits, or ``None``."""
    for entry in dt.history(limit=COMMIT_RETRIES + 1):
        if entry.get("ctxlake.pass_id") == pass_id:
            return entry
    return None


def _drop_unchanged(dt, rows):
    """``rows`` without those whose copy in the table wins or ties under the identity merge rule
    (:func:`lib.identity.pick`): an identical row (a segment merged again after a lost ledger,
    a migrated part whose rows bronze also holds) or an older copy of an event the table holds
    a later one of. Reads the table's rows of just the sessions and days in ``rows``."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    from lib import identity

    sids = set(rows.column("session_id").to_pylist())
    sql = (f"SELECT session_id, event_id, envelope_json FROM events WHERE dt IN "
           f"({_sql_list(rows.column('dt').to_pylist())}) AND session_id IN ({_sql_list(sids)})")
    have = pa.table(QueryBuilder().register("events", dt).execute(sql).read_all())
    if not have.num_rows:
        return rows
    held = dict(zip(zip(have.column("session_id").to_pylist(), have.column("event_id").to_pylist()),
                    have.column("envelope_json").to_pylist()))
    keep = []
    for s, e, j in zip(rows.column("session_id").to_pylist(), rows.column("event_id").to_pylist(),
                       rows.column("envelope_json").to_pylist()):
        old = held.get((s, e))
        if old is None:
            keep.append(True)
        elif old == j:
            keep.append(False)
        else:
            a, b = json.loads(old), json.loads(j)
            keep.append(identity.pick(a, b) is b and a != b)
    return rows if all(keep) else rows.filter(pa.array(keep, type=pa.bool_()))


def _sql_list(values) -> str:
    return ", ".join("'" + str(v).replace("'", "''") + "'" for v in sorted(set(values)))


def query(store, fleet: str, sql: str):
    """Run ``sql`` (DataFusion SQL; the table is ``events``) with delta-rs over the current
    version of the fleet's table; returns a ``pyarrow.Table`` (``None`` when there is no table).

    delta-rs resolves the live files from the log and reads them straight from the store (no
    local copy). Text columns may come back as ``string_view``. :raises TableError."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    dt = open_table(store, fleet)
    if dt is None:
        return None
    try:
        return pa.table(QueryBuilder().register("events", dt).execute(sql).read_all())
    except Exception as exc:
        if not _delta_error(exc):
            raise
        raise TableError(f"reading the Delta table of fleet {fleet}: {reason(exc)}") from exc


def session_envelopes(store, fleet: str, session_ids, dts=None) -> dict[str, list[dict]]:
    """``{session_id: [envelope, ...]}`` read back from the table (through ``envelope_json``)
    for ``session_ids``; ``dts`` (optional) limits the scan to those partitions."""
    out: dict[str, list[dict]] = {s: [] for s in session_ids}
    if not out:
        return out
    sql = f"SELECT session_id, envelope_json FROM events WHERE session_id IN ({_sql_list(out)})"
    if dts:
        sql += f" AND dt IN ({_sql_list(dts)})"
    t = query(store, fleet, sql)
    if t is None:
        return out
    for sid, raw in zip(t.column("session_id").to_pylist(), t.column("envelope_json").to_pylist()):
        out[sid].append(json.loads(raw))
    return out


# -- the layout before the Delta table (migrated by maint, docs/lake.md) ---------------------

def legacy_pointers(store, fleet: str) -> list[tuple[str, list[str]]]:
    """``[(_CURRENT key, [part keys])]`` of the ``gen=<hash>`` layout still present for
    ``fleet`` (unreadable pointers count with no parts, so they are cleaned up too)."""
    from lib.store import NotFound

    out = []
    for entry in store.list(legacy_root(fleet)):
        rest = entry.key[len(legacy_root(fleet)):]
        if rest.startswith("dt=") and rest.endswith("/_CURRENT") and rest.count("/") == 1:
            try:
                ptr = json.loads(store.get(entry.key).data)
                parts = [p for p in ptr.get("parts") or [] if isinstance(p, str)]
            except (NotFound, ValueError, AttributeError):
                parts = []
            out.append((entry.key, parts))
    return sorted(out)


def legacy_keys(store, fleet: str) -> list[str]:
    """Every object of the ``gen=<hash>`` layout (parts of all generations and ``_CURRENT``)."""
    out = []
    for entry in store.list(legacy_root(fleet)):
        rest = entry.key[len(legacy_root(fleet)):]
        parts = rest.split("/")
        if parts[0].startswith("dt=") and (rest.endswith("/_CURRENT") or (len(parts) == 3 and parts[1].startswith("gen="))):
            out.append(entry.key)
    return sorted(out)


# -- what the table already holds: pass manifests and the ledger -----------------------------

class Ledger:
    """Which bronze segments the fleet's table holds, as of table version ``version``.

    ``compacted/<f>/_ctxlake/ledger.json`` = ``{"version", "segments": {key:
    consumed_at}, "quarantined": {key: reason}}`` (``consumed_at``: epoch s of the commit that
    merged it). It is a cache of the Delta log, never the truth: :meth:`catch_up` replays every
    commit after ``version`` that names a pass manifest, so a pass killed between its commit and
    the ledger write loses nothing, and a lost ledger only costs re-merging (the MERGE is
    idempotent on :data:`EVENT_KEY`).
    """

    def __init__(self, store, fleet: str):
        self.store, self.fleet = store, fleet
        self.key = ledger_key(fleet)
        self.version = -1
        self.segments: dict[str, float] = {}
        self.quarantined: dict[str, str] = {}
        self.folded: list[str] = []

    @classmethod
    def load(cls, store, fleet: str) -> "Ledger":
        """The stored ledger (an empty one when it is missing or unreadable)."""
        from lib.store import NotFound

        led = cls(store, fleet)
        try:
            data = json.loads(store.get(led.key).data)
            led.version = int(data.get("version", -1))
            led.segments = {k: float(v) for k, v in (data.get("segments") or {}).items()}
            led.quarantined = {k: str(v) for k, v in (data.get("quarantined") or {}).items()}
        except (NotFound, ValueError, TypeError, AttributeError):
            pass
        return led

    def catch_up(self, dt) -> int:
        """Fold in the manifests of commits after :attr:`version` (``dt``: the table, or None).
        Returns how many commits were folded. A table older than the ledger (recreated) resets it."""
        from lib.store import NotFound

        if dt is None:
            self.version, self.segments = -1, {}
            return 0
        current = dt.version()
        if current < self.version:
            self.version, self.segments = -1, {}
        if current == self.version:
            return 0
        folded = 0
        for entry in dt.history(limit=current - self.version if self.version >= 0 else None):
            ver = entry.get("version")
            pid = entry.get("ctxlake.pass_id")
            if ver is None or ver <= self.version or not pid:
                continue
            mkey = manifest_key(self.fleet, pid)
            try:
                manifest = json.loads(self.store.get(mkey).data)
            except (NotFound, ValueError):
                continue
            at = (entry.get("timestamp") or 0) / 1000
            for k in manifest.get("segments") or []:
                self.segments.setdefault(k, at)
            self.folded.append(mkey)
            folded += 1
        self.version = current
        return folded

    def save(self) -> None:
        """Write the ledger, then drop the manifests it now holds (they are in the ledger)."""
        body = {"version": self.version, "segments": dict(sorted(self.segments.items())),
                "quarantined": dict(sorted(self.quarantined.items()))}
        self.store.put(self.key, json.dumps(body, sort_keys=True).encode())
        for mkey in self.folded:
            try:
                self.store.delete(mkey)
            except Exception:  # a leftover manifest is only clutter
                pass
        self.folded = []


def commit_safety(store, fleet: str) -> str | None:
    """Why Delta commits to the lake half of ``store`` would be unsafe, or ``None`` when safe.

    A Delta commit is a create-only write of ``_delta_log/<n>.json``; a store that ignores
    ``If-None-Match: *`` lets two writers both "win" version ``n`` and one commit silently
    vanishes. The verdict is :func:`lib.live.leases.require_conditional`'s on the lake store itself,
    probing ``compacted/<f>/_probe.json`` (with ``live_store`` on Redis the maintenance lease is
    safe but the lake may still not be; the leading underscore keeps Delta readers off it);
    ``memory://`` cannot hold a table. ``ctxlake doctor`` reports the same verdict.
    """
    from lib.live import leases
    from lib.store import StoreError

    base = getattr(store, "lake", store)
    if not base.url.startswith(("file://", "s3://")):
        return f"{base.url} cannot hold a Delta table (use file:// or s3://)"
    try:
        leases.require_conditional(base, table_state_prefix(fleet) + "commit")
    except leases.Unsafe as exc:
        return (f"{base.url} does not honour conditional writes ({exc}): two Delta commits could both claim one "
                "version; maint refuses to commit the lake there — use a store or gateway that honours "
                "If-None-Match (`ctxlake doctor` shows what fails)")
    except StoreError as exc:
        return f"could not probe {base.url} for conditional writes: {exc}"
    return None


def live_files(store, fleet: str, cache_dir: str | None = None) -> list[str] | None:
    """Local paths of the data files the current table version references (``None``: no table).

    ``file://``: the files in place. ``s3://``: copies under ``cache_dir`` (Delta data files are
    immutable and uniquely named, so a cached copy is never stale; a file the table no longer
    references is simply not listed). :raises TableError."""
    import os

    dt = open_table(store, fleet)
    if dt is None:
        return None
    base = getattr(store, "lake", store)
    root = table_root(fleet)
    rels = [a["path"] for a in _add_actions(dt)]
    if base.url.startswith("file://"):
        return [os.path.join(base.root, *root.split("/"), *r.split("/")) for r in rels]
    from urllib.parse import unquote

    from lib.spool import atomic_write

    if cache_dir is None:
        raise ValueError("a remote table needs a cache_dir for its files")
    out = []
    for r in rels:
        dest = os.path.join(cache_dir, *unquote(r).split("/"))
        if not os.path.exists(dest):
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            atomic_write(dest, base.get(root + unquote(r)).data, mode=0o644)
        out.append(dest)
    return out


def _add_actions(dt) -> list[dict]:
    """The table version's add actions as dicts (``path`` relative to the table root, ``size_bytes``)."""
    import pyarrow as pa

    return pa.table(dt.get_add_actions(flatten=True)).select(["path", "size_bytes"]).to_pylist()


def duckdb_connect(store, fleet: str, cache_dir: str | None = None):
    """An in-memory DuckDB connection with view ``events`` over the current version of the
    fleet's table, or ``None`` when there is no table yet.

    The view is DuckDB's own ``read_parquet`` over exactly the files the Delta log references
    (:func:`live_files`), with the ``dt`` partition read from the paths as text and columns
    unified by name (older files lack columns added later). No DuckDB extension is needed, and
    extension auto-install and auto-load are switched off: nothing is downloaded at run time.
    :raises TableError: the table is unreadable.
    """
    import duckdb

    files = live_files(store, fleet, cache_dir)
    if files is None:
        return None
    con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    if not files:
        con.execute("CREATE VIEW events AS SELECT * FROM (SELECT NULL AS event_id) WHERE false")
        return con
    listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    con.execute(f"CREATE VIEW events AS SELECT * FROM read_parquet([{listing}], hive_partitioning = true, "
                "hive_types = {'dt': VARCHAR}, union_by_name = true)")
    return con


def repair_checkpoints(store, fleet: str, log=lambda *a, **k: None) -> list[str]:
    """Delete Delta checkpoints of the fleet's table that are not valid Parquet (a partially
    written or damaged file makes delta-rs refuse the whole table), when the JSON commits they
    summarize are all still in the log — a checkpoint is derived data, so nothing is lost and
    readers replay the JSON instead; ``_last_checkpoint`` goes too when it names one of them
    (readers then find the newest checkpoint by listing). Returns the keys deleted; a damaged
    checkpoint whose commits were already cleaned up is left alone (restore it from a backup)."""
    import pyarrow.parquet as pq

    from lib.store import NotFound

    base = getattr(store, "lake", store)
    logp = delta_log_prefix(fleet)
    names = {e.key[len(logp):] for e in base.list(logp)}
    commits = {int(n[:20]) for n in names if n.endswith(".json") and n[:20].isdigit()}
    bad, good = [], []
    for n in sorted(names):
        if ".checkpoint" not in n or not n.endswith(".parquet"):
            continue
        try:
            pq.read_metadata(io.BytesIO(base.get(logp + n).data))
            good.append(int(n[:20]))
        except Exception:
            bad.append(n)
    deleted = []
    for n in bad:
        ver = int(n[:20])
        floor = max([g for g in good if g < ver], default=-1)
        if all(v in commits for v in range(floor + 1, ver + 1)):
            base.delete(logp + n)
            deleted.append(logp + n)
    if deleted:
        try:
            last = json.loads(base.get(logp + "_last_checkpoint").data)
            if any(int(k[len(logp):][:20]) == int(last.get("version", -1)) for k in deleted):
                base.delete(logp + "_last_checkpoint")
                deleted.append(logp + "_last_checkpoint")
        except (NotFound, ValueError, TypeError, AttributeError):
            pass
        log("lake_checkpoint_repaired", deleted=deleted)
    return deleted
