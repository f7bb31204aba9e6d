"""The Parquet lake: typed schema, segment encoding, and every lake key (DESIGN.md §4, §5).

One row per envelope, typed columns so any engine (DuckDB, Spark, Trino, Athena) can query
without parsing JSON, plus ``envelope_json`` — the whole envelope, for forward compatibility and
exact round-trip. Segments are Zstd, one row group, deterministic bytes for the same rows (so a
re-sent segment after a crash is byte-identical). Imports pyarrow lazily; never used by the hook
or the MCP server.
"""
from __future__ import annotations

import io
import json

from lib.paths import safe_segment

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
    """The lake's ``pyarrow.Schema`` (DESIGN.md §5). ``emitted_at`` is timestamp[ms, UTC]."""
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
    """Explicit schema for Arrow's NDJSON reader: the envelope's nested shape (DESIGN.md §5)."""
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

    The fast path of syncd (DESIGN.md §12: ≥ 50,000 envelopes/s). ``envelope_json`` is each line
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


def encode(envs_or_table, raw: list[str] | None = None) -> bytes:
    """Parquet bytes (Zstd, one row group) for a batch of envelopes or a table; deterministic."""
    import pyarrow.parquet as pq

    table = envs_or_table if not isinstance(envs_or_table, list) else to_table(envs_or_table, raw)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=max(1, table.num_rows))
    return buf.getvalue()


def decode(data: bytes) -> list[dict]:
    """Envelopes from Parquet bytes (through ``envelope_json``, exact round-trip)."""
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data), columns=["envelope_json"])
    return [json.loads(s) for s in table.column("envelope_json").to_pylist()]


def read_table(data: bytes, columns=None):
    """A ``pyarrow.Table`` from Parquet bytes (optionally only ``columns``)."""
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data), columns=columns)


# -- keys (DESIGN.md §4) ---------------------------------------------------------------------

def session_prefix(fleet: str, dt: str, runtime: str, agent: str, session: str) -> str:
    """``sessions/fleet=<f>/dt=<d>/runtime=<rt>/agent=<a>/session=<sid>/``."""
    s = safe_segment
    return f"sessions/fleet={s(fleet)}/dt={s(dt)}/runtime={s(runtime)}/agent={s(agent)}/session={s(session)}/"


def segment_key(prefix: str, n: int) -> str:
    """``<session prefix>seg-<NNNNNN>.parquet``."""
    return f"{prefix}seg-{n:06d}.parquet"


def sealed_key(prefix: str) -> str:
    return prefix + "_SEALED"


def digest_key(prefix: str) -> str:
    return prefix + "digest.json"


def fleet_sessions_prefix(fleet: str, dt: str | None = None) -> str:
    """``sessions/fleet=<f>/`` or ``sessions/fleet=<f>/dt=<d>/``."""
    base = f"sessions/fleet={safe_segment(fleet)}/"
    return base + (f"dt={safe_segment(dt)}/" if dt else "")


def compacted_prefix(fleet: str, dt: str) -> str:
    return f"compacted/fleet={safe_segment(fleet)}/dt={safe_segment(dt)}/"


def parse_session_prefix(key: str) -> dict:
    """``{fleet, dt, runtime, agent, session, prefix}`` from any key under a session folder."""
    from urllib.parse import unquote

    parts = key.split("/")
    out = {}
    for p in parts[1:6]:
        name, _, value = p.partition("=")
        out[name] = unquote(value)
    out["prefix"] = "/".join(parts[:6]) + "/"
    return out


def quarantine_key(fleet: str, agent: str, dt: str, ulid: str) -> str:
    s = safe_segment
    return f"quarantine/fleet={s(fleet)}/agent={s(agent)}/dt={s(dt)}/{s(ulid)}.json"


def snapshot_blob_key(fleet: str, sha: str) -> str:
    return f"snapshot/{safe_segment(fleet)}/{sha}.sqlite"


def snapshot_pointer_key(fleet: str) -> str:
    return f"snapshot/{safe_segment(fleet)}/current.json"


# -- compaction (DESIGN.md §4: compacted/fleet=<f>/dt=<d>/gen=<hash>/part-<NNNNNN>.parquet) ---

PART_ROWS = 250_000
"""Rows per compacted part at most (bounds maint memory: one part is held while it is written)."""


def generation(sessions: dict[str, list[str]]) -> str:
    """Generation id for a date partition: sha256 over every sealed session prefix and its
    segment keys, sorted. Same inputs → same id → compaction is skipped (no reads)."""
    import hashlib

    h = hashlib.sha256()
    for prefix in sorted(sessions):
        h.update(prefix.encode() + b"\0" + "\0".join(sorted(sessions[prefix])).encode() + b"\n")
    return h.hexdigest()[:32]


def current_key(fleet: str, dt: str) -> str:
    return compacted_prefix(fleet, dt) + "_CURRENT"


class PartWriter:
    """Collects de-duplicated rows of one date partition and writes immutable parts.

    ``add(envs)`` takes a session's envelopes (already de-duplicated by ``event_id`` and sorted);
    parts are flushed at :data:`PART_ROWS` rows, create-only, under ``gen=<gen>/``.
    """

    def __init__(self, store, fleet: str, dt: str, gen: str):
        self.store, self.fleet, self.dt, self.gen = store, fleet, dt, gen
        self.pending: list = []
        self.rows = 0
        self.parts: list[str] = []

    def add(self, envs: list[dict]) -> None:
        if not envs:
            return
        self.pending.extend(envs)
        if len(self.pending) >= PART_ROWS:
            self._flush()

    def _flush(self) -> None:
        from lib.store import CREATE, PreconditionFailed

        if not self.pending:
            return
        key = f"{compacted_prefix(self.fleet, self.dt)}gen={self.gen}/part-{len(self.parts):06d}.parquet"
        data = encode(to_table(self.pending))
        try:
            self.store.put(key, data, CREATE)
        except PreconditionFailed:
            pass  # same generation written before a crash: same rows, same bytes
        self.rows += len(self.pending)
        self.parts.append(key)
        self.pending = []

    def close(self) -> list[str]:
        """Flush the rest; return the part keys written."""
        self._flush()
        return self.parts


def current_parts(store, fleet: str) -> list[str]:
    """Keys of every current compacted part of ``fleet`` (following each ``_CURRENT``)."""
    from lib.store import NotFound

    keys = []
    for entry in store.list(f"compacted/fleet={safe_segment(fleet)}/"):
        if entry.key.endswith("/_CURRENT"):
            try:
                ptr = json.loads(store.get(entry.key).data)
            except (NotFound, ValueError):
                continue
            keys.extend(ptr.get("parts") or [])
    return sorted(keys)
