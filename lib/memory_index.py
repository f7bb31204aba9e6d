"""Queries over the cached snapshot for ``memory_search``, ``memory_timeline`` and
``fleet_history`` (DESIGN.md §10, §11).

Where it sits: maint builds ``snapshot/<f>/<sha>.sqlite``; syncd mirrors it byte-for-byte into
``cache/<fleet>/snapshot.bin`` (replacing it by rename); :class:`SnapshotReader` opens that file
read-only, notices a replacement by file identity and reopens. Nothing here writes.

Ranking (``memory_search``): reciprocal-rank fusion (k = 60) of

- FTS5 ``bm25`` over ``claims_fts`` (agent-visible claims only; query tokens quoted and
  OR-joined, stopwords dropped), and
- cosine between the query's embedding and every agent-visible claim embedded with the same
  ``embedder`` id. The scan is exact but sparse: a :class:`VectorIndex` keeps, per dimension,
  the claims whose component is non-zero, so a claim sharing no dimension with the query is
  never touched (its cosine is exactly 0). It is built once per snapshot file, lazily.

A hit must be relevant, not merely the least bad: a lexical (FTS5) match qualifies; a
cosine-only candidate qualifies only at ``cosine >= relevance_floor`` (``snapshot_meta`` key
``relevance_floor``, calibrated by ``bench/memory_eval.py``; :data:`DEFAULT_RELEVANCE_FLOOR`
when absent). Only claims with ``visible_to_agents = 1`` and status ``promoted``/``contested``
are ever read. Standard library only (``sqlite3``); ``lib.snapshot`` provides the connection.
"""
from __future__ import annotations

import heapq
import json
import math
import os
import sqlite3
import sys
from array import array
from itertools import compress

from lib import embed

RRF_K = 60
"""Reciprocal-rank fusion constant: score = Σ 1 / (RRF_K + rank)."""
DEFAULT_RELEVANCE_FLOOR = 0.5
"""Minimum cosine for a candidate no FTS5 term matched, when the snapshot does not carry a
calibrated ``relevance_floor``. High on purpose: with the lexical hash embedder a cosine-only
candidate shares only colliding buckets with the query, which is noise below this."""
SERVED_STATUSES = ("promoted", "contested")
_VISIBLE = "c.visible_to_agents = 1 AND c.status IN ('promoted', 'contested')"
_REQUIRED = {"claims": {"claim_id", "claim", "status", "visible_to_agents"},
             "sessions": {"session_id", "ended_at"}, "snapshot_meta": {"key", "value"}}
MAX_QUERY_TOKENS = 32


class Unavailable(Exception):
    """No usable snapshot: ``reason`` is ``missing`` or ``unreadable``; the message says why."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class VectorIndex:
    """Sparse per-dimension postings of one snapshot's agent-visible claim embeddings.

    ``ids[i]``, ``subjects[i]`` (lowercased), ``types[i]`` describe row ``i``; ``post_idx[d]``
    (``array('i')``) and ``post_val[d]`` (``array('f')``) list the rows whose component ``d`` is
    non-zero; ``norms[i]`` is row ``i``'s L2 norm. Memory is proportional to non-zero
    components (about 8 bytes each), not to 256 × rows.
    """

    def __init__(self, embedder_id: str):
        self.embedder_id = embedder_id
        self.ids: list[str] = []
        self.subjects: list[str] = []
        self.types: list[str] = []
        self.post_idx = [array("i") for _ in range(embed.DIM)]
        self.post_val = [array("f") for _ in range(embed.DIM)]
        self.norms: list[float] = []

    @classmethod
    def build(cls, conn: sqlite3.Connection, embedder_id: str, chunk: int = 8192) -> "VectorIndex":
        """Load every agent-visible claim embedded by ``embedder_id`` (blobs of exactly 1,024
        bytes; others are skipped), ``chunk`` rows at a time so peak memory stays small."""
        idx = cls(embedder_id)
        cur = conn.execute(
            "SELECT c.claim_id, lower(coalesce(c.subject, '')), coalesce(c.claim_type, ''), c.embedding FROM claims c "
            f"WHERE {_VISIBLE} AND c.embedder = ? AND length(c.embedding) = ? ORDER BY c.claim_id",
            (embedder_id, embed.BLOB_BYTES))
        base = 0
        while True:
            rows = cur.fetchmany(chunk)
            if not rows:
                break
            n = len(rows)
            arr = array("f")
            arr.frombytes(b"".join(r[3] for r in rows))
            if sys.byteorder == "big":
                arr.byteswap()
            rng = range(base, base + n)
            for d in range(embed.DIM):
                col = arr[d::embed.DIM]
                idx.post_idx[d].extend(compress(rng, col))
                idx.post_val[d].extend(compress(col, col))
            for r in rows:
                idx.ids.append(r[0])
                idx.subjects.append(r[1])
                idx.types.append(r[2])
            base += n
        norms = [0.0] * base
        for d in range(embed.DIM):
            for i, v in zip(idx.post_idx[d], idx.post_val[d]):
                norms[i] += v * v
        idx.norms = [math.sqrt(x) for x in norms]
        return idx

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, qvec, limit: int, subject: str | None = None, claim_type: str | None = None) -> list[tuple[str, float]]:
        """Top ``limit`` ``(claim_id, cosine)`` by cosine, best first (ties by claim_id), over
        rows passing the filters (``subject`` compared lowercased). Rows sharing no non-zero
        dimension with ``qvec`` have cosine 0 and are not returned."""
        qn = math.sqrt(sum(v * v for v in qvec))
        if not qn or not self.ids:
            return []
        dots: dict[int, float] = {}
        get = dots.get
        for d, qv in enumerate(qvec):
            if qv:
                for i, v in zip(self.post_idx[d], self.post_val[d]):
                    dots[i] = get(i, 0.0) + qv * v
        subj = subject.lower() if subject else None
        scored = []
        for i, dot in dots.items():
            if dot <= 0 or not self.norms[i]:
                continue
            if subj is not None and self.subjects[i] != subj:
                continue
            if claim_type is not None and self.types[i] != claim_type:
                continue
            scored.append((-dot / (qn * self.norms[i]), self.ids[i]))
        return [(cid, -neg) for neg, cid in heapq.nsmallest(limit, scored)]


def fts_query(text: str) -> str | None:
    """FTS5 MATCH expression for free text: distinct non-stopword tokens, quoted, OR-joined;
    ``None`` when nothing is left to match."""
    seen: list[str] = []
    for tok in embed.tokens(text):
        if tok not in seen:
            seen.append(tok)
        if len(seen) >= MAX_QUERY_TOKENS:
            break
    if not seen:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in seen)


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class SnapshotReader:
    """The cached snapshot of one fleet, opened read-only on demand.

    :meth:`conn` (re)opens ``path`` when its identity (device, inode, size, mtime) changed —
    syncd replaces the file by rename — and drops the per-snapshot vector index with the old
    connection. :raises Unavailable: the file is missing, not SQLite, or lacks the tables and
    columns read here.
    """

    def __init__(self, path: str):
        self.path = path
        self._ident = None
        self._conn: sqlite3.Connection | None = None
        self.meta: dict[str, str] = {}
        self.columns: dict[str, set] = {}
        self._index: VectorIndex | None = None
        self._index_for: str | None = None

    def conn(self) -> sqlite3.Connection:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.close()
            raise Unavailable("missing", "no snapshot in the local cache") from None
        except OSError as exc:
            raise Unavailable("unreadable", f"cannot stat the cached snapshot: {exc.strerror or exc}") from None
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if ident == self._ident and self._conn is not None:
            return self._conn
        self.close()
        from lib import snapshot

        try:
            conn = snapshot.open_readonly(self.path)
            columns = {}
            for table in ("claims", "sessions", "snapshot_meta", "claims_fts"):
                columns[table] = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM snapshot_meta")}
        except sqlite3.Error as exc:
            raise Unavailable("unreadable", f"the cached snapshot is not readable SQLite ({exc})") from None
        for table, need in _REQUIRED.items():
            if not need <= columns.get(table, set()):
                conn.close()
                raise Unavailable("unreadable", f"the cached snapshot's {table} table lacks {sorted(need - columns.get(table, set()))}")
        self._conn, self._ident, self.meta, self.columns = conn, ident, meta, columns
        return conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn, self._ident, self._index, self._index_for = None, None, None, None

    # -- claims ----------------------------------------------------------------------------
    def claim_embedders(self) -> list[str]:
        """Embedder ids of agent-visible claims, most used first."""
        if "embedder" not in self.columns.get("claims", ()):
            return []
        rows = self.conn().execute(
            f"SELECT c.embedder, count(*) AS n FROM claims c WHERE {_VISIBLE} AND c.embedder IS NOT NULL "
            "GROUP BY c.embedder ORDER BY n DESC, c.embedder").fetchall()
        return [r[0] for r in rows if isinstance(r[0], str)]

    def vector_index(self, embedder_id: str) -> VectorIndex:
        """The :class:`VectorIndex` for ``embedder_id`` on the current snapshot (built on first use)."""
        conn = self.conn()
        if self._index is None or self._index_for != embedder_id:
            self._index = VectorIndex.build(conn, embedder_id)
            self._index_for = embedder_id
        return self._index

    def relevance_floor(self) -> float:
        """``snapshot_meta.relevance_floor`` as a float in [0, 1], else :data:`DEFAULT_RELEVANCE_FLOOR`."""
        try:
            v = float(self.meta.get("relevance_floor", DEFAULT_RELEVANCE_FLOOR))
        except ValueError:
            return DEFAULT_RELEVANCE_FLOOR
        return v if 0.0 <= v <= 1.0 else DEFAULT_RELEVANCE_FLOOR

    def fts(self, match: str, limit: int, subject: str | None, claim_type: str | None) -> list[str]:
        """Claim ids matching the FTS5 expression, best bm25 first, at most ``limit``."""
        if "claim_id" not in self.columns.get("claims_fts", ()):
            return []
        where, args = [_VISIBLE], [match]
        if subject:
            where.append("lower(c.subject) = lower(?)")
            args.append(subject)
        if claim_type:
            where.append("c.claim_type = ?")
            args.append(claim_type)
        args.append(limit)
        q = ("SELECT c.claim_id FROM claims_fts JOIN claims c ON c.claim_id = claims_fts.claim_id "
             f"WHERE claims_fts MATCH ? AND {' AND '.join(where)} ORDER BY bm25(claims_fts), c.claim_id LIMIT ?")
        try:
            return [r[0] for r in self.conn().execute(q, args)]
        except sqlite3.OperationalError:
            return []

    def claims_by_id(self, ids: list[str]) -> dict[str, dict]:
        """``{claim_id: row}`` for agent-visible claims among ``ids``."""
        if not ids:
            return {}
        cols = self._claim_cols()
        out = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            q = f"SELECT {cols} FROM claims c WHERE {_VISIBLE} AND c.claim_id IN ({','.join('?' * len(part))})"
            for r in self.conn().execute(q, part):
                out[r["claim_id"]] = dict(r)
        return out

    def _claim_cols(self) -> str:
        have = self.columns.get("claims", set())
        want = ("claim_id", "claim", "claim_type", "subject", "status", "confidence", "observed_by", "observed_at",
                "independent_sessions", "updated_at")
        return ", ".join(f"c.{c}" if c in have else f"NULL AS {c}" for c in want)

    def list_claims(self, limit: int, subject: str | None, claim_type: str | None) -> list[dict]:
        """Agent-visible claims, highest confidence first (a blank query), at most ``limit``."""
        where, args = [_VISIBLE], []
        if subject:
            where.append("lower(c.subject) = lower(?)")
            args.append(subject)
        if claim_type:
            where.append("c.claim_type = ?")
            args.append(claim_type)
        q = (f"SELECT {self._claim_cols()} FROM claims c WHERE {' AND '.join(where)} "
             "ORDER BY c.confidence DESC, c.observed_at DESC, c.claim_id LIMIT ?")
        return [dict(r) for r in self.conn().execute(q, args + [limit])]

    def claims_about(self, subject: str, since: str | None, limit: int) -> list[dict]:
        """Agent-visible claims whose subject is ``subject`` or whose text mentions it, newest
        first by ``observed_at``, at most ``limit``."""
        where = [_VISIBLE, "(lower(c.subject) = lower(?) OR c.claim LIKE ? ESCAPE '\\' OR c.subject LIKE ? ESCAPE '\\')"]
        args: list = [subject, _like(subject), _like(subject)]
        if since:
            where.append("c.observed_at >= ?")
            args.append(since)
        q = (f"SELECT {self._claim_cols()} FROM claims c WHERE {' AND '.join(where)} "
             "ORDER BY c.observed_at DESC, c.claim_id LIMIT ?")
        return [dict(r) for r in self.conn().execute(q, args + [limit])]

    # -- sessions --------------------------------------------------------------------------
    def sessions(self, limit: int, repo: str | None = None, since: str | None = None,
                 about: str | None = None) -> list[dict]:
        """Session digests, newest ``ended_at`` first, at most ``limit``; list fields decoded.

        ``repo``: exact match; ``since``: ``ended_at >= since`` (ISO strings compare in time
        order); ``about``: substring of the summary, files, commands or repo.
        """
        have = self.columns.get("sessions", set())
        where, args = ["1 = 1"], []
        if repo:
            where.append("repo = ?")
            args.append(repo)
        if since:
            where.append("ended_at >= ?")
            args.append(since)
        if about:
            parts = [f"{c} LIKE ? ESCAPE '\\'" for c in ("summary", "files_touched", "commands", "repo") if c in have]
            if parts:
                where.append("(" + " OR ".join(parts) + ")")
                args.extend([_like(about)] * len(parts))
        q = f"SELECT * FROM sessions WHERE {' AND '.join(where)} ORDER BY ended_at DESC, session_id LIMIT ?"
        out = []
        for r in self.conn().execute(q, args + [limit]):
            d = dict(r)
            for k in ("files_touched", "commands", "tests_run", "commits", "usage", "friction"):
                if isinstance(d.get(k), str):
                    try:
                        d[k] = json.loads(d[k])
                    except ValueError:
                        d[k] = None
            out.append(d)
        return out
