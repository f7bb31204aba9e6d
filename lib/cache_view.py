"""The local cache files, ``cache/<fleet>/*``: their one writer and every reader (docs/design.md §3, invariants 9, 12).

Where it sits: syncd writes ``cache/<fleet>/{roster,leases,briefing,sync}.json``, ``snapshot.bin``
and its ``.pointer.json`` (store → cache leg) through :func:`write`, :func:`write_blob` and
:func:`write_pointer_side` — atomic (temp, fsync, rename). Readers come in three kinds:

- the hook's, :func:`read_for_hook`: standard library C codec only (no ``json``/``re``), fail
  open, ``{}`` for anything but an object (the hook, ``lib.live.presence``, ``lib.live.leases``, ``lib.briefing``);
- the strict one, :func:`read_json`: size-capped, sanitized, a status instead of an
  exception (``mcp_server.py``, ``/metrics``, the briefing's roster); :func:`read_raw` for
  syncd amending its own views and ``ctxlake status``;
- the status views (:func:`roster`, :func:`leases`, :func:`sync_status`, :func:`file_age`).

``snapshot.bin`` is a SQLite file: :func:`write_blob` puts it there, ``lib.memory.snapshot`` and
``lib.memory.memory_index`` open it as a database, read-only. ``snapshot.bin.vectors`` (its vector
index, :mod:`lib.memory.vector_file`) is written by :func:`write_chunks` and mapped by :func:`map_readonly`. ``mcp_server.py`` reads the cache through
this module and never touches the store. Every file is
untrusted input written by other agents' sessions via a daemon: it is size-capped, parsed
strictly (no NaN), shape-checked by hand for the fields used, depth-limited, and every string
in it — keys and values at any depth — goes through :func:`lib.sanitize.clean_deep` before
anything else sees it. A missing or broken file is a status, never an exception: the caller
answers ``enabled: false`` with the note this module gives (fail open, invariant 12).

File shapes read (all fields optional unless stated; unknown fields pass through, cleaned)::

    roster.json  {"agents": [{agent_id, runtime, host_id, session_id, repo, branch, task,
                  paths[], updated_at}], "store_time", "refreshed_at"}  (or a bare list)
    leases.json  {"store_time", "refreshed_at", "leases": [{resource, repo, path, holder,
                  session_id, reason, acquired_at, expires_at, epoch}],
                  "requests": {<record_id>: {...outcome}} or [{record_id, ...}]}
    sync.json    {"last_run_at": "YYYY-MM-DDTHH:MM:SS.mmmZ", ...}

Times: ``store_time``/``refreshed_at``/``expires_at``/``updated_at`` may be epoch seconds
(numbers) or ISO-8601 strings. ``store_time - refreshed_at`` is the store clock's offset from
this host's clock at refresh time, so lease expiry is judged by the store clock (invariant 6).
Standard library only.
"""
from __future__ import annotations

import os

from lib.clock import format_time, parse_time, view_offset
from lib.sanitize import clean_deep

MAX_CACHE_BYTES = 16 << 20
"""A cache JSON file larger than 16 MiB is treated as unreadable rather than loaded."""
MAX_DEPTH = 32
"""Deeper nesting than this in a cache file is treated as unreadable."""
SPOOL_TAIL_BYTES = 4 << 20
"""How much of the end of this fleet's MCP spool file is scanned for our own pending requests."""

MISSING, UNREADABLE, OK = "missing", "unreadable", "ok"


def write(path: str, data: dict) -> None:
    """Replace the cache file ``path`` with ``data`` as JSON (sorted keys, UTF-8), atomically
    (temp file, fsync, rename; mode 0644: the hook and the MCP server may run as other users).
    :raises OSError: the file could not be written (the old one stays)."""
    import json

    from lib.spool import atomic_write

    atomic_write(path, json.dumps(data, sort_keys=True, ensure_ascii=False).encode(), mode=0o644)


def write_blob(path: str, data: bytes) -> None:
    """Replace the cached snapshot ``path`` with ``data``, atomically (as :func:`write`)."""
    from lib.spool import atomic_write

    atomic_write(path, data, mode=0o644)


def write_chunks(path: str, chunks) -> None:
    """Replace the cache file ``path`` with the concatenated bytes ``chunks`` (an iterable),
    atomically (as :func:`write`), without holding them all in memory: the snapshot's vector
    index file (:mod:`lib.memory.vector_file`)."""
    from lib.spool import atomic_write

    atomic_write(path, chunks, mode=0o644)


def map_readonly(path: str):
    """``path`` mapped read-only (:class:`mmap.mmap`, pages read from the page cache as they are
    touched), or ``None`` when it is missing. :raises OSError: it exists but cannot be mapped
    (an empty file, no permission)."""
    import mmap

    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return None
    with fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def read_blob(path: str) -> bytes | None:
    """The bytes of the cached snapshot ``path``; ``None`` when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def read_for_hook(path: str, max_bytes: int = 8 << 20) -> dict:
    """The JSON object in the cache file ``path`` on the hook's terms: CPython's C codec only
    (:func:`lib.jsonfast.read_object`, no ``json``/``re``), at most ``max_bytes`` read, and ``{}``
    when it is missing, unreadable, not JSON or not an object (fail open, invariant 12).
    Not sanitized: callers check the fields they use by hand."""
    from lib import jsonfast

    return jsonfast.read_object(path, max_bytes)


def read_raw(path: str) -> dict | None:
    """The object in a cache file as written, not sanitized: for syncd amending a view it wrote
    itself (marking it stale, carrying a figure over) and for ``ctxlake status``, which shows
    figures, not text. ``None`` when missing or not a JSON object."""
    import json

    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def read_pointer_side(path: str) -> dict:
    """The pointer record syncd keeps beside the cached snapshot (``<snapshot>.pointer.json``:
    ``{"etag", "pointer", "file": [size, mtime_ns, inode]}``); ``{}`` when missing or garbage."""
    import json

    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def write_pointer_side(path: str, side: dict) -> None:
    """Replace ``<snapshot>.pointer.json`` with ``side``, atomically (:func:`write`)."""
    write(path, side)


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def _too_deep(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > limit:
                return True
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def read_json(path: str, max_bytes: int = MAX_CACHE_BYTES) -> tuple[object, str, str | None]:
    """Load one cache file, sanitized.

    Returns ``(data, status, detail)``: ``status`` is ``"ok"`` (``data`` = the cleaned JSON
    value), ``"missing"`` or ``"unreadable"`` (``data`` None, ``detail`` says why: too large,
    not UTF-8, not JSON, NaN, nested deeper than :data:`MAX_DEPTH`). Never raises.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        return None, MISSING, None
    except OSError as exc:
        return None, UNREADABLE, f"cannot read: {exc.strerror or exc}"
    if len(raw) > max_bytes:
        return None, UNREADABLE, f"larger than {max_bytes} bytes"
    try:
        import json  # here, not at the top: the hook imports this module for its time rules only

        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        return None, UNREADABLE, "not UTF-8"
    except RecursionError:
        return None, UNREADABLE, "nested too deep"
    except ValueError as exc:
        return None, UNREADABLE, f"not valid JSON ({str(exc)[:120]})"
    if _too_deep(data, MAX_DEPTH):
        return None, UNREADABLE, f"nested deeper than {MAX_DEPTH} levels"
    return clean_deep(data), OK, None


def file_age(path: str, data, now: float) -> dict:
    """``{"refreshed_at": iso|None, "age_secs": int|None}`` of a cache file: from its
    ``refreshed_at`` field when present and parseable, else from the file's mtime."""
    stamp = parse_time(data.get("refreshed_at")) if isinstance(data, dict) else None
    if stamp is None:
        try:
            stamp = os.stat(path).st_mtime
        except OSError:
            return {"refreshed_at": None, "age_secs": None}
    return {"refreshed_at": format_time(stamp), "age_secs": max(0, int(now - stamp))}


def sync_status(path: str, now: float) -> dict:
    """When syncd last ran on this host: ``{"last_run_at": iso|None, "age_secs": int|None,
    "status": ok|missing|unreadable}`` from ``sync.json``'s ``last_run_at``."""
    data, status, detail = read_json(path, 1 << 20)
    out = {"last_run_at": None, "age_secs": None, "status": status}
    if status == OK and isinstance(data, dict):
        t = parse_time(data.get("last_run_at"))
        if t is not None:
            out.update(last_run_at=format_time(t), age_secs=max(0, int(now - t)))
    elif detail:
        out["detail"] = detail
    return out


def roster(path: str, now: float, presence_ttl: float) -> dict:
    """Live agents from ``roster.json``.

    Returns ``{"status", "detail"?, "agents": [entry + "age_secs"], "dropped_stale": n,
    "cache": file_age}``. Entries that are not objects or lack a string ``agent_id`` are
    skipped; entries that are not live by the one rule (:func:`lib.live.presence.is_fresh`:
    ``updated_at`` older than ``presence_ttl`` seconds by the store clock, or ended) are dropped
    (docs/design.md §9); an entry without a parseable ``updated_at`` is kept with
    ``age_secs: null`` rather than guessed about.
    """
    from lib.live import presence

    data, status, detail = read_json(path)
    out = {"status": status, "agents": [], "dropped_stale": 0}
    if detail:
        out["detail"] = detail
    if status != OK:
        return out
    entries = data.get("agents") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        out.update(status=UNREADABLE, detail="no agents list")
        return out
    view = data if isinstance(data, dict) else {}
    store_now = now + view_offset(view)
    for a in entries:
        if not isinstance(a, dict) or not isinstance(a.get("agent_id"), str) or not a["agent_id"]:
            continue
        t = parse_time(a.get("updated_at"))
        if t is not None and not presence.is_fresh(dict(a, updated_at=t), store_now, presence_ttl):
            out["dropped_stale"] += 1
            continue
        out["agents"].append(dict(a, age_secs=None if t is None else max(0, int(store_now - t))))
    out["cache"] = file_age(path, data, now)
    return out


def leases(path: str, now: float) -> dict:
    """Unexpired leases and request outcomes from ``leases.json``.

    Returns ``{"status", "detail"?, "view": the cleaned dict, "leases": [lease +
    "expires_in_secs"], "requests": [{record_id, ...}], "cache": file_age}``. Expiry is judged
    by :func:`lib.live.leases.view_leases` (store clock through the ``store_time``/``refreshed_at``
    offset, the one rule every lease reader uses); free, expired or malformed leases are
    skipped. ``requests`` accepts a ``{record_id: outcome}`` object or a list of outcomes
    carrying ``record_id``.
    """
    data, status, detail = read_json(path)
    out = {"status": status, "view": {}, "leases": [], "requests": []}
    if detail:
        out["detail"] = detail
    if status != OK:
        return out
    if not isinstance(data, dict) or not isinstance(data.get("leases", []), list):
        out.update(status=UNREADABLE, detail="not an object with a leases list")
        return out
    from lib.live import leases

    out["view"] = data
    out["leases"] = leases.view_leases(data, now)
    reqs = data.get("requests")
    if isinstance(reqs, dict):
        out["requests"] = [dict(v, record_id=k) for k, v in reqs.items() if isinstance(v, dict)]
    elif isinstance(reqs, list):
        out["requests"] = [r for r in reqs if isinstance(r, dict) and isinstance(r.get("record_id"), str)]
    out["cache"] = file_age(path, data, now)
    return out


def spooled_records(path: str, agent_id: str, kinds: tuple, max_bytes: int = SPOOL_TAIL_BYTES) -> list[dict]:
    """This agent's own records of ``kinds`` still waiting in the MCP spool file ``path``.

    Scans the last ``max_bytes`` of the live file (syncd deletes a file once it shipped it, so
    what is here has not reached the store yet). Lines that are partial, not JSON or another
    agent's are skipped. Oldest first; cleaned like every other cache read.
    """
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            start = max(0, size - max_bytes)
            fh.seek(start)
            raw = fh.read(size - start)
    except OSError:
        return []
    lines = raw.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line is probably cut
    from lib import mcp_records

    records = [mcp_records.decode(line) for line in lines if line.strip()]
    return [clean_deep(rec) for rec in mcp_records.select(records, kinds)
            if rec.get("agent_id") == agent_id and not _too_deep(rec, MAX_DEPTH)]
