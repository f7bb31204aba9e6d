"""The snapshot: an immutable, content-addressed SQLite file every agent reads (docs/design.md §10).

maint builds it (:func:`build`) with sqlite-utils from session digests and claims, publishes
``snapshot/<f>/<sha256>.sqlite`` create-only, then swaps ``snapshot/<f>/current.json`` by CAS
(:func:`publish`), refusing to replace a pointer stamped with a higher maintenance epoch
(fencing, docs/design.md §9). syncd mirrors it byte-for-byte into ``cache/<f>/snapshot.bin``
(:func:`fetch`). The same inputs always give the same bytes: nothing time-dependent is stored in
the file (``built_at`` lives in the pointer).

Readers (the MCP server, the briefing) only need :func:`open_readonly` and the query helpers,
so the store and lake modules are imported inside the functions that publish and fetch: reading
a snapshot never pulls the store layer in.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile

SNAPSHOT_SCHEMA_VERSION = 1
CLAIM_COLUMNS = {"claim_id": str, "claim": str, "claim_type": str, "subject": str, "status": str,
                 "confidence": float, "observed_by": str, "observed_at": str, "independent_sessions": int,
                 "evidence": str, "visible_to_agents": int, "embedding": bytes, "embedder": str,
                 "updated_at": str, "reason": str}
SESSION_COLUMNS = {"session_id": str, "fleet_id": str, "agent_id": str, "runtime": str, "repo": str, "branch": str,
                   "started_at": str, "ended_at": str, "duration_ms": int, "turn_count": int, "event_count": int,
                   "commands_ok": int, "commands_failed": int, "files_touched": str, "commands": str,
                   "tests_run": str, "commits": str, "usage": str, "outcome": str, "friction": str,
                   "summary": str, "imported": int, "title": str}
HANDOFF_COLUMNS = {"record_id": str, "agent_id": str, "session_id": str, "repo": str, "branch": str, "status": str,
                   "summary": str, "next": str, "requested_at": str}
"""The ``handoffs`` table: notes left by ``fleet_handoff`` (:mod:`lib.handoffs`)."""
JSON_COLUMNS = ("files_touched", "commands", "tests_run", "commits", "usage", "friction")
"""Session columns holding JSON text (lists, ``usage`` an object)."""

_INT64 = (-(1 << 63), (1 << 63) - 1)


def typed_row(row: dict, columns: dict) -> dict:
    """``row`` with every column named in ``columns`` (:data:`CLAIM_COLUMNS` or
    :data:`SESSION_COLUMNS`: name → ``str``/``int``/``float``/``bytes``) coerced to its declared
    type, or ``None`` when the cell holds something else.

    The snapshot is untrusted input to its readers: SQLite does not enforce column types, so a
    cell may hold any value (``confidence = 'high'``, a BLOB summary, an integer beyond int64
    read back as text, ±Infinity). Numbers must be finite (ints within int64); a ``str``
    column accepts finite numbers as their decimal text; an ``int`` column accepts a finite
    float by truncation. Columns not named pass through. Never raises.
    """
    out = dict(row)
    for name, kind in columns.items():
        if name in out:
            out[name] = _coerce(out[name], kind)
    return out


def _coerce(v, kind):
    if v is None or isinstance(v, kind) and not isinstance(v, bool) and kind is not float:
        if kind is int and v is not None and not _INT64[0] <= v <= _INT64[1]:
            return None
        return v
    if isinstance(v, bool):
        v = int(v)
    if kind is float or kind is int:
        if not isinstance(v, (int, float)):
            return None
        try:
            f = float(v)
        except OverflowError:
            return None
        if f != f or f in (float("inf"), float("-inf")):
            return None
        if kind is float:
            return f
        n = int(v) if isinstance(v, int) else int(f)
        return n if _INT64[0] <= n <= _INT64[1] else None
    if kind is str and isinstance(v, (int, float)):
        return None if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))) else str(v)
    return None


INDEX_COLUMNS = {"embedder": str, "dim": int, "n": int, "ids": str, "subjects": str, "types": str, "matrix": bytes}


def vector_index_rows(claims: list[dict]) -> list[dict]:
    """The ``claim_index`` table: per embedder, every served claim's vector (agent-visible,
    promoted or contested) as one contiguous matrix of unit rows — little-endian float32,
    ``n × dim``, rows in ``claim_id`` order — with the ids, lowercased subjects and types as
    newline-joined text in the same order. The MCP server maps a whole index with one read
    instead of decoding ``n`` blobs before its first search (docs/memory.md). Claims whose blob
    is not a whole number of float32 components, or whose embedder disagrees on the size,
    are left out of the index (they are still in ``claims``). Needs numpy; without it, ``[]``."""
    try:
        import numpy as np
    except ImportError:
        return []
    from lib.memory.memory_index import SERVED_STATUSES

    groups: dict[str, list[dict]] = {}
    for c in sorted(claims, key=lambda x: x["claim_id"]):
        blob, eid = c.get("embedding"), c.get("embedder")
        if (isinstance(blob, (bytes, bytearray)) and blob and len(blob) % 4 == 0 and isinstance(eid, str)
                and c.get("visible_to_agents") == 1 and c.get("status") in SERVED_STATUSES):
            groups.setdefault(eid, []).append(c)
    out = []
    for eid in sorted(groups):
        rows = groups[eid]
        dim = len(rows[0]["embedding"]) // 4
        rows = [c for c in rows if len(c["embedding"]) == dim * 4]
        m = np.frombuffer(b"".join(bytes(c["embedding"]) for c in rows), dtype="<f4").reshape(len(rows), dim)
        norms = np.linalg.norm(m, axis=1)
        norms[norms == 0] = 1.0
        m = (m / norms[:, None]).astype("<f4")

        def text(values):
            return "\n".join(" ".join(str(v or "").split()) for v in values)
        out.append({"embedder": eid, "dim": dim, "n": len(rows), "ids": text(c["claim_id"] for c in rows),
                    "subjects": text(str(c.get("subject") or "").lower() for c in rows),
                    "types": text(c.get("claim_type") for c in rows), "matrix": m.tobytes()})
    return out


def served_summary(claims: list[dict]) -> dict:
    """``snapshot_meta`` keys a reader would otherwise count over every claim before its first
    search: ``served_embedders`` (JSON list of the embedder ids of served claims — agent-visible,
    promoted or contested — most used first, ties by id) and ``entity_subjects`` (JSON sorted list
    of their subjects that read as names, :func:`lib.memory.memory_index.is_entity`)."""
    from lib.memory.memory_index import SERVED_STATUSES, is_entity

    counts: dict[str, int] = {}
    names = set()
    for c in claims:
        if c.get("visible_to_agents") == 1 and c.get("status") in SERVED_STATUSES:
            if isinstance(c.get("embedder"), str):
                counts[c["embedder"]] = counts.get(c["embedder"], 0) + 1
            if is_entity(c.get("subject")):
                names.add(c["subject"])
    order = sorted(counts, key=lambda e: (-counts[e], e))
    return {"served_embedders": json.dumps(order), "entity_subjects": json.dumps(sorted(names), ensure_ascii=False)}


def blob_state(store, key: str, sha: str) -> str | None:
    """``None`` when the snapshot blob ``key`` is in the store and hashes to ``sha`` (its name),
    else what is wrong with it, one phrase (``"missing"``, ``"truncated or altered: 5000 bytes
    hash to 1a2b3c4d5e6f"``). One GET. :raises lib.store.StoreError: the store did not answer."""
    from lib.store import NotFound

    try:
        data = store.get(key).data
    except NotFound:
        return "missing"
    got = sha256(data)
    return None if got == sha else f"truncated or altered: {len(data)} bytes hash to {got[:12]}"


def check_current(store, fleet_id: str) -> dict:
    """``{"ok", "detail"}`` for the blob the fleet's snapshot pointer names (``ctxlake doctor``):
    ``ok`` True when it hashes to its name, False when it is missing or damaged (every host's
    sync then refuses it; ``ctxlake maint --once`` re-publishes it), None when there is no
    snapshot yet. One GET of the pointer and one of the blob. :raises lib.store.StoreError:"""
    from lib import lake

    sha = _named_pointer(store, lake.snapshot_pointer_key(fleet_id)).get("sha256")
    if not isinstance(sha, str) or len(sha) != 64:
        return {"ok": None, "detail": f"fleet {fleet_id}: no snapshot published yet (`ctxlake maint --once` builds one)"}
    key = lake.snapshot_blob_key(fleet_id, sha)
    problem = blob_state(store, key, sha)
    if problem is None:
        return {"ok": True, "detail": f"fleet {fleet_id}: {key} hashes to its name"}
    return {"ok": False, "detail": f"fleet {fleet_id}: {key} is {problem}; every sync refuses it until "
                                   "`ctxlake maint --once` re-publishes it"}


def _blob_intact(store, key: str, sha: str) -> bool:
    return blob_state(store, key, sha) is None


def _repair_blob(store, key: str, data: bytes, log) -> None:
    """Overwrite a damaged snapshot blob with ``data`` (the bytes its name is the hash of)."""
    store.put(key, data)
    log("snapshot_blob_repaired", key=key, bytes=len(data))


class StaleEpoch(Exception):
    """The published pointer carries a higher maintenance epoch than ours: we were fenced off."""


def build(fleet_id: str, digests: list[dict], claims: list[dict], meta: dict | None = None,
          handoffs: list[dict] = ()) -> bytes:
    """SQLite bytes for the snapshot.

    Tables: ``snapshot_meta(key, value)`` (with :func:`served_summary`'s keys), ``sessions`` (one row per digest; lists as JSON
    text), ``claims`` (+ ``embedding`` BLOB, ``embedder``), ``claims_fts`` (FTS5 over claims with
    ``visible_to_agents = 1`` only), ``handoffs`` (:data:`HANDOFF_COLUMNS`, one row per note).
    Rows are inserted in sorted order so bytes are deterministic.
    """
    import sqlite_utils

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "build.sqlite")
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA page_size=4096")
        db = sqlite_utils.Database(conn)
        m = {"schema_version": str(SNAPSHOT_SCHEMA_VERSION), "fleet_id": fleet_id, **served_summary(claims),
             **{k: str(v) for k, v in (meta or {}).items()}}
        db["snapshot_meta"].insert_all(({"key": k, "value": m[k]} for k in sorted(m)), pk="key")
        db["sessions"].create(SESSION_COLUMNS, pk="session_id")
        rows = []
        for d in sorted(digests, key=lambda x: (x.get("ended_at") or "", x["session_id"])):
            row = {k: d.get(k) for k in SESSION_COLUMNS}
            for k in JSON_COLUMNS:
                row[k] = json.dumps(d.get(k), sort_keys=True)
            row["imported"] = int(bool(d.get("imported")))
            rows.append(row)
        if rows:
            db["sessions"].insert_all(rows, pk="session_id", replace=True)
        db["sessions"].create_index(["ended_at"])
        db["claims"].create(CLAIM_COLUMNS, pk="claim_id")
        crow = []
        for c in sorted(claims, key=lambda x: x["claim_id"]):
            r = {k: c.get(k) for k in CLAIM_COLUMNS}
            r["evidence"] = json.dumps(c.get("evidence") or [], sort_keys=True)
            crow.append(r)
        if crow:
            db["claims"].insert_all(crow, pk="claim_id")
        db["handoffs"].create(HANDOFF_COLUMNS, pk="record_id")
        hrows = [{k: h.get(k) for k in HANDOFF_COLUMNS} for h in sorted(handoffs, key=lambda h: h["record_id"])]
        if hrows:
            db["handoffs"].insert_all(hrows, pk="record_id", replace=True)
        db["handoffs"].create_index(["requested_at"])
        index_rows = vector_index_rows(claims)
        if index_rows:
            db["claim_index"].insert_all(index_rows, pk="embedder", columns=INDEX_COLUMNS)
        conn.execute("CREATE VIRTUAL TABLE claims_fts USING fts5(claim_id UNINDEXED, claim, subject, tokenize='porter unicode61')")
        conn.execute("INSERT INTO claims_fts(claim_id, claim, subject) SELECT claim_id, claim, subject FROM claims "
                     "WHERE visible_to_agents = 1 ORDER BY claim_id")
        conn.commit()
        out = os.path.join(tmp, "out.sqlite")
        conn.execute("VACUUM INTO ?", (out,))
        conn.close()
        with open(out, "rb") as fh:
            return fh.read()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def publish(store, fleet_id: str, data: bytes, *, maint_epoch: int, built_at: str, claim_count: int,
            session_count: int, lake_stats: dict | None = None, intact=frozenset(),
            log=lambda *a, **k: None) -> dict:
    """Publish ``data``: blob first (create-only; already there is fine), then CAS the pointer.

    The pointer names the blob it replaces as ``previous`` (retention never deletes the current
    blob or that one) and carries ``lake`` (from ``lake_stats``) — the table's size and what vacuum would free
    (:func:`lib.retention.table_stats`), which syncd mirrors with the pointer so ``ctxlake
    status`` and ``/metrics`` show it without touching the store.

    The blob already in the store under this name is read back and hashed, unless its sha256 is
    in ``intact`` (the blobs this pass already read back and hashed: :func:`previous_embeddings`
    fills it, so an idle pass GETs the current blob once, not twice): a truncated or altered blob, which every host's sync
    would refuse, is overwritten with ``data`` (log ``snapshot_blob_repaired``, reason ``blob
    repaired``), since ``data`` is exactly what its name promises.

    Returns ``{"published": bool, "sha256", "reason"}``; ``published`` False with reason
    ``already current`` when the pointer already names this intact blob with the same ``lake``
    figures (when only those changed the pointer is rewritten, reason ``lake figures updated``).
    :raises StaleEpoch: the pointer carries a higher maint epoch (we lost the lease meanwhile).
    """
    from lib import lake
    from lib.store import CREATE, NotFound, PreconditionFailed, update

    sha = sha256(data)
    blob = lake.snapshot_blob_key(fleet_id, sha)
    pkey = lake.snapshot_pointer_key(fleet_id)
    named = _named_pointer(store, pkey)
    if (named.get("sha256") == sha and int(named.get("maint_epoch") or 0) <= maint_epoch
            and (not lake_stats or named.get("lake") == lake_stats)):
        # an idle pass: nothing to write unless the blob was damaged, so no create-only put "loses a race"
        if sha in intact or _blob_intact(store, blob, sha):
            return {"published": False, "sha256": sha, "reason": "already current"}
        _repair_blob(store, blob, data, log)
        return {"published": True, "sha256": sha, "reason": "blob repaired"}
    repaired = False
    try:
        store.put(blob, data, CREATE)
    except PreconditionFailed:
        if sha not in intact and not _blob_intact(store, blob, sha):
            _repair_blob(store, blob, data, log)
            repaired = True
    fresh = {"sha256": sha, "built_at": built_at, "maint_epoch": maint_epoch, "claim_count": claim_count,
             "session_count": session_count, "key": blob}
    if lake_stats:
        fresh["lake"] = lake_stats
    for _ in range(8):
        pointer = dict(fresh)
        try:
            cur = store.get(pkey)
            current = json.loads(cur.data)
            etag = cur.etag
        except NotFound:
            current, etag = None, None
        except ValueError:
            current, etag = {}, cur.etag
        if current:
            if int(current.get("maint_epoch") or 0) > maint_epoch:
                raise StaleEpoch(f"snapshot pointer has maint epoch {current.get('maint_epoch')} > ours {maint_epoch}")
            same = current.get("sha256") == sha
            if same and (current.get("lake") == lake_stats or not lake_stats):
                return {"published": repaired, "sha256": sha, "reason": "blob repaired" if repaired else "already current"}
            if same:
                pointer = dict(current, lake=lake_stats, maint_epoch=maint_epoch)
            elif isinstance(current.get("sha256"), str):
                pointer["previous"] = current["sha256"]
        else:
            same = False
        try:
            store.put(pkey, json.dumps(pointer, sort_keys=True).encode(), CREATE if etag is None else update(etag))
            if same:
                return {"published": repaired, "sha256": sha, "reason": "blob repaired" if repaired else "lake figures updated"}
            log("snapshot_published", key=blob, sha256=sha, sessions=session_count, claims=claim_count)
            return {"published": True, "sha256": sha, "reason": "published"}
        except PreconditionFailed:
            continue
    raise RuntimeError("snapshot pointer: lost 8 compare-and-swap races in a row")


def pointer_epoch(store, fleet_id: str) -> int:
    """The ``maint_epoch`` stamped on the current snapshot pointer (0 when there is none or it
    is unreadable). maint acquires its lease above it, so fencing survives a lost lease object."""
    from lib import lake
    from lib.store import NotFound

    try:
        data = json.loads(store.get(lake.snapshot_pointer_key(fleet_id)).data)
        epoch = data.get("maint_epoch") if isinstance(data, dict) else 0
        return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0
    except (NotFound, ValueError, TypeError):
        return 0


def fetch(store, fleet_id: str, cache_path: str) -> dict:
    """Mirror the current snapshot into ``cache_path`` if it changed.

    Cheap when nothing changed: the pointer is read with a conditional GET (``If-None-Match`` on
    the ETag remembered in ``<cache_path>.pointer.json``, docs/design.md §8), and the cached copy is
    trusted without re-hashing while its size, mtime and inode are those recorded when it was
    verified. A copy that changed behind our back (corruption, a hand edit) is re-hashed and,
    if it no longer matches, downloaded again.

    Returns ``{"changed": bool, "sha256": str|None, "pointer": dict|None}`` and, once a snapshot
    is cached, ``vectors`` (and ``vectors_error``) from :func:`cache_vectors`. The blob's sha256 is
    verified before the atomic replace; a mismatch raises ``ValueError`` and keeps the old copy.
    """
    import os

    from lib import cache_view, lake
    from lib.paths import snapshot_pointer_path
    from lib.store import NotFound

    side_path = snapshot_pointer_path(cache_path)
    side = cache_view.read_pointer_side(side_path)
    try:
        st = os.stat(cache_path)
        trusted = bool(side) and side.get("file") == [st.st_size, st.st_mtime_ns, st.st_ino] and isinstance(
            side.get("pointer"), dict)
    except OSError:  # missing: verify from scratch
        trusted = False
    if not trusted:
        side = {}
    key = lake.snapshot_pointer_key(fleet_id)
    try:
        obj = store.get(key, if_none_match=side.get("etag") if trusted else None)
    except NotFound:
        return {"changed": False, "sha256": None, "pointer": None}
    if not obj.modified:
        have = side["pointer"].get("sha256")
        return {"changed": False, "sha256": have, "pointer": side["pointer"],
                **(cache_vectors(cache_path, have) if isinstance(have, str) else {})}
    pointer = _pointer(obj.data, key)
    sha = pointer.get("sha256")
    if not isinstance(sha, str) or len(sha) != 64:
        raise ValueError(f"snapshot pointer {key} has no valid sha256; the next `ctxlake maint --once` publishes a new one")

    def remember():
        st = os.stat(cache_path)
        cache_view.write_pointer_side(side_path, {"etag": obj.etag, "pointer": pointer,
                                                  "file": [st.st_size, st.st_mtime_ns, st.st_ino]})

    current = side.get("pointer", {}).get("sha256") if trusted else None
    if current is None:
        blob = cache_view.read_blob(cache_path)
        current = sha256(blob) if blob is not None else None
    if current == sha:
        remember()
        return {"changed": False, "sha256": sha, "pointer": pointer, **cache_vectors(cache_path, sha)}
    blob = lake.snapshot_blob_key(fleet_id, sha)
    data = store.get(blob).data
    if sha256(data) != sha:
        raise ValueError(f"snapshot blob {blob} in the store does not match its name ({len(data)} bytes hash to "
                         f"{sha256(data)[:12]}: truncated or altered); nothing was cached, `ctxlake maint --once` "
                         "re-publishes it")
    cache_view.write_blob(cache_path, data)
    del data
    remember()
    return {"changed": True, "sha256": sha, "pointer": pointer, **cache_vectors(cache_path, sha)}


def cache_vectors(cache_path: str, sha: str) -> dict:
    """Make ``<cache_path>.vectors`` (:mod:`lib.memory.vector_file`) the cached snapshot's, unless it
    already is: ``{"vectors": "current" | "written" | reason}``. A failure to write it is
    returned, not raised (``"vectors_error"``): the snapshot itself is in place, and the MCP
    server reads the index from the snapshot meanwhile."""
    from lib.memory import vector_file
    from lib.paths import snapshot_vectors_path

    side = snapshot_vectors_path(cache_path)
    if vector_file.current(side, cache_path, sha):
        return {"vectors": "current"}
    try:
        return {"vectors": vector_file.write(cache_path, sha, side)["reason"]}
    except (OSError, sqlite3.Error) as exc:
        return {"vectors": "failed", "vectors_error": f"{type(exc).__name__}: {exc}"[:300]}


LAKE_FIGURES = ("version", "files", "bytes", "unreferenced_files", "unreferenced_bytes", "vacuum_due_files",
                "vacuum_due_bytes", "state_bytes")
"""The table figures maint stamps on the pointer (:func:`lib.retention.table_stats`)."""


def cached_lake_figures(cache_path: str) -> dict:
    """The Delta table's size and what vacuum would free, as of the last maintenance pass, from
    the pointer syncd mirrored beside the cached snapshot (``<cache_path>.pointer.json``) —
    ``{name: int}`` for the :data:`LAKE_FIGURES` present (non-integers dropped: this is cache
    content), plus ``built_at``; ``{}`` when nothing is cached. Never touches the store."""
    from lib import cache_view
    from lib.paths import snapshot_pointer_path

    pointer = cache_view.read_pointer_side(snapshot_pointer_path(cache_path)).get("pointer") or {}
    if not isinstance(pointer, dict):
        return {}
    lake = pointer.get("lake") or {}
    if not isinstance(lake, dict):
        return {}
    out = {k: lake[k] for k in LAKE_FIGURES if isinstance(lake.get(k), int) and not isinstance(lake.get(k), bool)}
    if out and isinstance(pointer.get("built_at"), str):
        out["built_at"] = pointer["built_at"]
    return out


def _named_pointer(store, pkey: str) -> dict:
    """The snapshot pointer at ``pkey`` (:func:`_pointer`), or ``{}`` when absent or unreadable."""
    from lib.store import NotFound

    try:
        return _pointer(store.get(pkey).data, pkey)
    except (NotFound, ValueError):
        return {}


def _pointer(data: bytes, key: str) -> dict:
    """The pointer object in ``data``. :raises ValueError: naming ``key`` and why (not UTF-8,
    not JSON, not an object) — never a codec guess such as a ``utf-16-be`` error."""
    why = None
    try:
        pointer = json.loads(data.decode("utf-8"))
        if not isinstance(pointer, dict):
            why = f"a JSON {type(pointer).__name__}, not an object"
    except UnicodeDecodeError:
        why = "not UTF-8 text"
    except (ValueError, RecursionError) as exc:
        why = f"not valid JSON ({str(exc)[:80]})"
    if why:
        raise ValueError(f"snapshot pointer {key} is unreadable: {why} ({len(data)} bytes); "
                         "the next `ctxlake maint --once` publishes a new one")
    return pointer


def previous_embeddings(store, fleet_id: str, embedder_id: str, log=lambda *a, **k: None,
                        intact: set | None = None) -> dict[str, bytes]:
    """``{claim_id: embedding blob}`` of every claim the currently published snapshot embedded
    with ``embedder_id``: the embedding cache across snapshots (claim ids hash the claim's
    content, so a claim's vector never changes under one embedder). ``{}`` when there is no
    snapshot yet, its blob is missing or does not match its sha256, or it is not readable SQLite
    (logged as ``embedding_cache_unavailable``; the pass then embeds every claim). The blob's
    sha256 is added to ``intact`` once its bytes matched it (handed on to :func:`publish`)."""
    from lib import lake
    from lib.store import NotFound

    pointer = _named_pointer(store, lake.snapshot_pointer_key(fleet_id))
    sha = pointer.get("sha256")
    if not isinstance(sha, str) or len(sha) != 64:
        return {}
    try:
        data = store.get(lake.snapshot_blob_key(fleet_id, sha)).data
        if sha256(data) != sha:
            raise ValueError(f"snapshot blob {sha} does not match its name")
        if intact is not None:
            intact.add(sha)
        conn = sqlite3.connect(":memory:")
        try:
            conn.deserialize(data)
            rows = conn.execute("SELECT claim_id, embedding FROM claims WHERE embedder = ? AND embedding IS NOT NULL",
                                (embedder_id,)).fetchall()
        finally:
            conn.close()
    except (NotFound, ValueError, sqlite3.Error) as exc:
        log("embedding_cache_unavailable", sha256=sha, error=str(exc)[:200])
        return {}
    return {cid: bytes(blob) for cid, blob in rows if isinstance(cid, str) and isinstance(blob, bytes)}


def open_readonly(path: str, check_same_thread: bool = True) -> sqlite3.Connection:
    """Open a snapshot read-only (``mode=ro``); ``check_same_thread=False`` for a connection one
    thread prepares and another then uses (the caller serializes them). :raises sqlite3.Error:
    missing or corrupt. ``path`` is quoted into the URI: SQLite decodes ``%XX`` in it, and a fleet's
    cache folder holds one for an id outside ``[A-Za-z0-9._-]`` (docs/design.md §4)."""
    from urllib.parse import quote

    conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, check_same_thread=check_same_thread)
    conn.row_factory = sqlite3.Row
    conn.execute("SELECT 1 FROM snapshot_meta LIMIT 1")
    return conn


def recent_sessions(conn, limit: int = 5, repo: str | None = None) -> list[dict]:
    """Newest session digests (by ``ended_at``) as dicts with list fields decoded."""
    q = "SELECT * FROM sessions" + (" WHERE repo = ?" if repo else "") + " ORDER BY ended_at DESC, session_id LIMIT ?"
    rows = conn.execute(q, ((repo, limit) if repo else (limit,))).fetchall()
    out = []
    for r in rows:
        d = typed_row(dict(r), {k: t for k, t in SESSION_COLUMNS.items() if k not in JSON_COLUMNS})
        for k in JSON_COLUMNS:
            try:
                d[k] = json.loads(d[k]) if isinstance(d.get(k), str) and d[k] else None
            except (ValueError, RecursionError):  # not JSON, or nested too deep to decode
                d[k] = None
        out.append(d)
    return out


def visible_claims(conn, limit: int = 5) -> list[dict]:
    """Agent-visible promoted or contested claims, highest confidence first."""
    rows = conn.execute("SELECT claim_id, claim, claim_type, subject, status, confidence, observed_by, observed_at, "
                        "independent_sessions FROM claims WHERE visible_to_agents = 1 AND status IN ('promoted','contested') "
                        "ORDER BY confidence DESC, observed_at DESC, claim_id LIMIT ?", (limit,)).fetchall()
    return [typed_row(dict(r), CLAIM_COLUMNS) for r in rows]


def recent_handoffs(conn, limit: int = 5, repo: str | None = None, since: str | None = None) -> list[dict]:
    """Handoff notes, newest ``requested_at`` first, at most ``limit``; ``repo`` exact,
    ``since`` an ISO time. Cells of the wrong type read as ``None`` (:func:`typed_row`); a
    snapshot from before the table existed has none (``[]``)."""
    terms = [(sql, v) for sql, v in (("repo = ?", repo), ("requested_at >= ?", since)) if v]
    where = " AND ".join(sql for sql, _ in terms) or "1 = 1"
    q = f"SELECT * FROM handoffs WHERE {where} ORDER BY requested_at DESC, record_id LIMIT ?"
    try:
        rows = conn.execute(q, [v for _, v in terms] + [limit]).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    return [typed_row(dict(r), HANDOFF_COLUMNS) for r in rows]
