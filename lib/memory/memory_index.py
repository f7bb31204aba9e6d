"""Queries over the cached snapshot for ``memory_search``, ``memory_timeline`` and
``fleet_history`` (docs/design.md §10, §11).

Where it sits: maint builds ``snapshot/<f>/<sha>.sqlite``; syncd mirrors it byte-for-byte into
``cache/<fleet>/snapshot.bin`` (replacing it by rename); :class:`SnapshotReader` opens that file
read-only, notices a replacement by file identity and reopens. Nothing here writes.

Ranking (``memory_search``): with a semantic embedder, a weighted score fusion — α · cosine +
(1 − α) · bm25 / the query's best bm25 (α per embedder, :data:`FUSION_ALPHAS`; the result's
``ranking`` string names both weights); with the lexical ``hash256-v1``, reciprocal-rank fusion
(k = 60) — of

- FTS5 ``bm25`` over ``claims_fts`` (agent-visible claims only; query tokens quoted and
  OR-joined, stopwords dropped), and
- cosine between the query's embedding and every agent-visible claim embedded with the same
  ``embedder`` id, from an index built once per snapshot file on first use:

  - a lexical embedder (``hash256-v1``: sparse vectors) gets a :class:`VectorIndex` — per
    dimension, the claims whose component is non-zero, so a claim sharing no dimension with the
    query is never touched (its cosine is exactly 0). Exact up to :data:`COSINE_SCAN_CAP`
    postings per query; past it, most-contributing postings first and exact rescoring;
  - a semantic embedder (MiniLM, WordLlama: dense vectors) gets a :class:`DenseIndex` — one
    numpy matrix, one matrix-vector product per query, always exact; mapped from the vector
    file beside the snapshot (:mod:`lib.memory.vector_file`) when it is this snapshot's, else read
    from the snapshot's ``claim_index`` table.

A hit must be relevant, not merely the least bad (a claim found for "configure kafka" because
it says "configure" is worse than no answer). A candidate from either ranking qualifies when it
shares at least two (stemmed) words with the query — one for a one-word query — or, with a
semantic embedder, when its cosine reaches ``relevance_floor`` or it shares one word and its
cosine reaches ``relevance_floor_mixed`` (both ``snapshot_meta`` keys stamped by maint from
:data:`lib.memory.embed.RELEVANCE_FLOORS`, calibrated on negative queries by ``bench/memory_eval.py``).
With a lexical embedder (:data:`lib.memory.embed.LEXICAL`) a cosine without a shared word is a hash
collision and never qualifies. Only claims with
``visible_to_agents = 1`` and status ``promoted``/``contested`` are ever read. Standard library
(``sqlite3``) except the dense index, which imports numpy when first built.
"""
from __future__ import annotations

import calendar
import datetime
import functools
import json
import math
import os
import re
import sqlite3
import sys
from array import array
from itertools import compress

from lib.memory import embed

RRF_K = 60
"""Reciprocal-rank fusion constant: score = Σ 1 / (RRF_K + rank) (lexical embedders only)."""
FUSION_ALPHA = 0.7
"""With a semantic embedder, score = α · cosine + (1 − α) · bm25 / the query's best bm25, α from
:data:`FUSION_ALPHAS` or this default. Measured on pooled LoCoMo (``bench/memory_eval.py``): with
WordLlama, hit@5 0.697 → 0.704 and MRR@10 0.566 → 0.578 over RRF, because RRF throws away how far
apart two candidates' scores are."""
FUSION_ALPHAS = {embed.WORDLLAMA_ID: 0.5, embed.MINILM_ID: 0.7}
"""Per semantic embedder, the fusion weight α: tuned by ``bench/memory_eval.py`` on the questions of
five LoCoMo conversations and reported on the other five (docs/memory.md)."""


def fusion_alpha(embedder_id: str) -> float:
    """α of :data:`FUSION_ALPHAS` for ``embedder_id``, else :data:`FUSION_ALPHA`."""
    return FUSION_ALPHAS.get(embedder_id, FUSION_ALPHA)


def _unit_scores(scored: list[tuple[str, float]]) -> dict[str, float]:
    """``{claim_id: score / best score}`` (0..1) for one query's bm25 list; empty for no hits."""
    best = max((v for _, v in scored), default=0.0)
    return {cid: v / best for cid, v in scored} if best > 0 else {}
DEFAULT_RELEVANCE_FLOOR = 0.5
"""Minimum cosine for a candidate only a semantic embedder found, when the snapshot carries no
calibrated ``relevance_floor``: deliberately strict until ``bench/memory_eval.py`` calibrates one."""
DEFAULT_RELEVANCE_FLOOR_MIXED = 0.35
"""Minimum cosine for a candidate sharing exactly one word with a multi-word query, when the
snapshot carries no calibrated ``relevance_floor_mixed``."""
SERVED_STATUSES = ("promoted", "contested")


def _filters(subject: str | None, claim_type: str | None, args: list) -> tuple[list[str], list]:
    """SQL conditions (agent-visible, optional subject and type) and their arguments after ``args``."""
    where = [_VISIBLE]
    if subject:
        where.append("lower(c.subject) = lower(?)")
        args.append(subject)
    if claim_type:
        where.append("c.claim_type = ?")
        args.append(claim_type)
    return where, args


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Crude suffix stripping (``configuration``/``configure``/``config`` meet) for the word-overlap
    rule; FTS5's porter stemmer does the ranking, this only decides relevance."""
    for suf in ("ations", "ation", "ings", "ing", "ions", "ion", "ers", "er", "ies", "es", "ed", "s", "e"):
        if len(word) > len(suf) + 3 and word.endswith(suf):
            return word[: -len(suf)]
    return word
_VISIBLE = "c.visible_to_agents = 1 AND c.status IN ('promoted', 'contested')"
_REQUIRED = {"claims": {"claim_id", "claim", "status", "visible_to_agents"},
             "sessions": {"session_id", "ended_at"}, "snapshot_meta": {"key", "value"}}
MAX_QUERY_TOKENS = 32
MAX_ENTITY_WORDS = 3
"""Longest subject (in words) that :meth:`SnapshotReader.entities` treats as a name."""
RANK_DF_BUDGET = 2000
"""Most FTS5 matches one query ranks by bm25 (see :meth:`SnapshotReader.search`)."""
_BLOB_CHUNK = 8 << 20
"""Bytes read at a time from the shipped ``claim_index`` matrix (:meth:`DenseIndex._from_shipped`)."""
COSINE_SCAN_CAP = 10_000
"""Most embedding postings one query reads (see :meth:`VectorIndex.search`)."""
RESCORE_ROWS = 2000
"""Over a rotated vector file (:mod:`lib.memory.vector_file`) of more than 4 × this many rows, the rows
whose exact cosine a search computes: the best this many by the leading principal components
(plus as many of each preferred subject's). At 100,000 MiniLM claims the search reads 51 MB of the
matrix instead of 154 MB (docs/mcp.md "Performance")."""
DATE_BOOST = 0.3
"""Added to the fused score of a claim observed inside the dates a query names (:func:`dates_named`),
with a semantic embedder; with a lexical one the window counts as a third reciprocal-rank list
(1 / (RRF_K + 1)). Measured on pooled LoCoMo's tuning conversations (``bench/memory_eval.py``,
docs/memory.md): hit@5 0.773 → 0.791, MRR@10 0.644 → 0.664 at 0.3 (0.1: 0.781, 1.0: 0.792)."""
DAYS_AROUND = (3, 1)
"""A day a query names stands for the days from 3 before to 1 after it (an agent says "on the 3rd"
of a fact it was told in the days before; on LoCoMo ±0 and (7, 1) both measured 0.003 lower)."""
WRONG_PERSON_MARGIN = 0.25
"""With a semantic embedder, a query naming someone is answered with nothing when another person's
best claim outscores the named people's best by more than this (α · cosine + (1 − α) · bm25 over
everyone's best bm25): LoCoMo's adversarial questions ask about one person what the other said.
The trade-off curve is ``bench/memory_eval.py``'s; the chosen point is in docs/memory.md."""
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTH = "(" + "|".join(_MONTHS) + ")"
_DATE_PATTERNS = (  # (pattern, (year, month, day) group numbers; day 0 = a whole month), first match wins
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), (1, 2, 3)),
    (re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+(\d{4})\b", re.I), (3, 2, 1)),
    (re.compile(r"\b" + _MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", re.I), (3, 1, 2)),
    (re.compile(r"\b(\d{4})-(\d{2})\b(?!-)"), (1, 2, 0)),
    (re.compile(r"\b" + _MONTH + r",?\s+(\d{4})\b", re.I), (2, 1, 0)),
)


def dates_named(query: str) -> tuple[str, str] | None:
    """The observation window a query names, as ISO dates ``(first day, day after the last)``
    compared with ``claims.observed_at`` as strings; ``None`` when it names no full date.

    Recognised: ``2023-02-01``, ``1 February, 2023``, ``February 1, 2023`` (a day:
    :data:`DAYS_AROUND`), ``2023-02``, ``February 2023`` (the whole month). A month without a
    year ("in May") names no window; an impossible day (``30 February, 2023``) leaves its month."""
    for pattern, (yi, mi, di) in _DATE_PATTERNS:
        for m in pattern.finditer(query):
            month = m[mi]
            try:
                year, mon = int(m[yi]), (_MONTHS[month.lower()] if not month.isdigit() else int(month))
                if di:
                    day = datetime.date(year, mon, int(m[di]))
                    before, after = DAYS_AROUND
                    lo, hi = day - datetime.timedelta(days=before), day + datetime.timedelta(days=after + 1)
                else:
                    lo = datetime.date(year, mon, 1)
                    hi = datetime.date(year + mon // 12, mon % 12 + 1, 1)
            except (ValueError, OverflowError):
                continue
            return lo.isoformat(), hi.isoformat()
    return None


def is_entity(subject) -> bool:
    """True when ``subject`` reads as a name: one to :data:`MAX_ENTITY_WORDS` words, each starting
    with an uppercase letter (``Caroline``, ``Acme Billing``; not ``spotter dev server``)."""
    words = subject.split() if isinstance(subject, str) else []
    return 0 < len(words) <= MAX_ENTITY_WORDS and all(w[:1].isupper() and w[:1].isalpha() for w in words)


def _json_list(text) -> list | None:
    """``text`` decoded when it is a JSON list (a ``snapshot_meta`` value), else ``None``."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) else None


class Unavailable(Exception):
    """No usable snapshot: ``reason`` is ``missing`` or ``unreadable``; the message says why."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class VectorIndex:
    """Impact-ordered sparse postings of one snapshot's agent-visible claim embeddings.

    ``ids[i]``, ``subjects[i]`` (lowercased), ``types[i]`` describe row ``i``; for each
    dimension ``d``, ``post_idx[d]`` (``array('i')``) and ``post_val[d]`` (``array('f')``, the
    component divided by the row's L2 norm) list the rows whose component ``d`` is non-zero, so
    the dot product with a unit query is the cosine. A dimension a capped scan reads is sorted
    by value on first use, so it can be read most-contributing first from either end. Memory is about 8 bytes per non-zero component.
    """

    def __init__(self, embedder_id: str):
        self.embedder_id = embedder_id
        self.ids: list[str] = []
        self.subjects: list[str] = []
        self.types: list[str] = []
        self.post_idx = [array("i") for _ in range(embed.DIM)]
        self.post_val = [array("f") for _ in range(embed.DIM)]
        self.norms = array("f")
        self._sorted = [False] * embed.DIM

    @classmethod
    def build(cls, conn: sqlite3.Connection, embedder_id: str, chunk: int = 8192) -> "VectorIndex":
        """Load every agent-visible claim embedded by ``embedder_id`` (blobs of exactly 1,024
        bytes; others are skipped), ``chunk`` rows at a time so peak memory stays small.

        The zero test runs on the blob's bytes read as ``uint32`` (a zero component is four zero
        bytes, and the interpreter's cached ``0`` costs no allocation), so only non-zero
        components ever become Python objects.
        """
        idx = cls(embedder_id)
        cur = conn.execute(
            "SELECT c.claim_id, lower(coalesce(c.subject, '')), coalesce(c.claim_type, ''), c.embedding FROM claims c "
            f"WHERE {_VISIBLE} AND c.embedder = ? AND length(c.embedding) = ? ORDER BY c.claim_id",
            (embedder_id, embed.BLOB_BYTES))
        local = tuple(range(chunk))
        base = 0
        dim = embed.DIM
        while True:
            rows = cur.fetchmany(chunk)
            if not rows:
                break
            raw = b"".join(r[3] for r in rows)
            words, floats = array("I"), array("f")
            words.frombytes(raw)
            floats.frombytes(raw)
            if sys.byteorder == "big":
                words.byteswap()
                floats.byteswap()
            for d in range(dim):
                where = array("i", compress(local, words[d::dim]))
                if where:
                    idx.post_val[d].extend(map(floats[d::dim].__getitem__, where))
                    idx.post_idx[d].extend(map(base.__add__, where))
            for r in rows:
                idx.ids.append(r[0])
                idx.subjects.append(r[1])
                idx.types.append(r[2])
            base += len(rows)
        sq = [0.0] * base
        for d in range(dim):
            for i, v in zip(idx.post_idx[d], idx.post_val[d]):
                sq[i] += v * v
        idx.norms = array("f", map(math.sqrt, sq))
        unit = all(abs(x - 1.0) <= 1e-4 for x in idx.norms if x)
        if not unit:
            for d in range(dim):
                pi, pv = idx.post_idx[d], idx.post_val[d]
                idx.post_val[d] = array("f", [v / idx.norms[i] for i, v in zip(pi, pv)])
        return idx

    def _impact_ordered(self, d: int) -> None:
        """Sort dimension ``d``'s postings by value, once, the first time a capped scan needs it
        (most dimensions of most snapshots never do, so the build does not pay for it)."""
        if not self._sorted[d]:
            pi, pv = self.post_idx[d], self.post_val[d]
            order = sorted(range(len(pv)), key=pv.__getitem__)
            self.post_idx[d] = array("i", map(pi.__getitem__, order))
            self.post_val[d] = array("f", map(pv.__getitem__, order))
            self._sorted[d] = True

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, qvec, limit: int, subject: str | None = None, claim_type: str | None = None,
               scan_cap: int | None = None, exact_rows=None, prefer=None) -> tuple[list[tuple[str, float]], bool]:
        """Top ``limit`` ``(claim_id, cosine)`` by cosine, best first, over rows passing the
        filters (``subject`` compared lowercased); rows with cosine ≤ 0 are left out.
        ``prefer`` is accepted for the :class:`DenseIndex` interface and ignored: a lexical
        embedder already ranks a named subject's claims by the name itself.

        Returns ``(hits, exact)``. When the query's dimensions hold at most ``scan_cap``
        postings in all (default :data:`COSINE_SCAN_CAP`) every one is read and ``exact`` is
        True. Otherwise each dimension is read most-contributing first up to a fair share of the
        cap (short dimensions whole, the rest split evenly), ``exact`` is False, and the best
        ``limit`` candidates are rescored exactly by ``exact_rows(ids) -> {id: blob}`` when given.
        """
        cap = COSINE_SCAN_CAP if scan_cap is None else scan_cap
        qn = math.sqrt(sum(v * v for v in qvec))
        if not qn or not self.ids:
            return [], True
        dims = [(d, qv / qn) for d, qv in enumerate(qvec) if qv]
        sizes = sorted((len(self.post_idx[d]), d) for d, _ in dims)
        share, left, budget = {}, len(sizes), cap
        for n, d in sizes:
            share[d] = min(n, budget // left)
            budget -= share[d]
            left -= 1
        exact = all(share[d] == len(self.post_idx[d]) for d, _ in dims)
        acc: dict[int, float] = {}
        for d, w in dims:
            m = share[d]
            if m < len(self.post_idx[d]):
                self._impact_ordered(d)
            pi, pv = self.post_idx[d], self.post_val[d]
            if m < len(pi):  # most-contributing first: the largest values for w > 0, the smallest for w < 0
                pi, pv = (pi[len(pi) - m:], pv[len(pv) - m:]) if w > 0 else (pi[:m], pv[:m])
            part = dict(zip(pi, map(w.__mul__, pv)))  # C-level; Python only touches rows in both
            if acc:
                for i in acc.keys() & part.keys():
                    part[i] += acc[i]
                acc.update(part)
            else:
                acc = part
        if subject is not None or claim_type is not None:
            subj = subject.lower() if subject else None
            acc = {i: x for i, x in acc.items() if (subj is None or self.subjects[i] == subj)
                   and (claim_type is None or self.types[i] == claim_type)}
        if len(acc) > limit:  # the limit-th best score by a C-level float sort, then a C-level filter
            floor = sorted(acc.values())[-limit]
            best = list(compress(acc, map(floor.__le__, acc.values())))
        else:
            best = list(acc)
        best.sort(key=lambda i: (-acc[i], i))
        best = best[:limit]
        if not exact and exact_rows is not None and best:
            blobs = exact_rows([self.ids[i] for i in best])
            for i in best:
                blob = blobs.get(self.ids[i])
                if blob is not None and self.norms[i]:
                    vec = embed.from_blob(blob, embed.DIM)
                    acc[i] = sum(w * vec[d] for d, w in dims) / self.norms[i]
            best.sort(key=lambda i: (-acc[i], i))
        return [(self.ids[i], min(1.0, acc[i])) for i in best if acc[i] > 0], exact


class DenseIndex:
    """One snapshot's agent-visible claim embeddings from a dense (semantic) embedder, as a
    numpy ``float32`` matrix of unit rows: a query is one matrix-vector product.

    Used for embedders outside :data:`lib.memory.embed.LEXICAL` (WordLlama): their vectors have all 256
    components non-zero, where postings would cost more than the matrix. The matrix is
    allocated once at its final size and filled ``chunk`` rows at a time (peak memory = the
    matrix, about 1 KiB per claim, plus one chunk). numpy is imported here, on first use — the
    embedder computing the query needs it anyway. Subjects and types are kept as integer codes
    so filters are vectorised masks.
    """

    def __init__(self, embedder_id: str):
        self.embedder_id = embedder_id
        self.ids: list[str] = []
        self.matrix = None
        self.lead = self.rest = self.rotation = None
        """The rotated layout of a mapped vector file (:mod:`lib.memory.vector_file`): leading principal
        components ``n × d``, the rest ``n × (dim − d)``, the rotation ``dim × dim``; else ``None``."""
        self.subject_code: dict[str, int] = {}
        self.type_code: dict[str, int] = {}
        self.subjects = None
        self.types = None

    @classmethod
    def build(cls, conn: sqlite3.Connection, embedder_id: str, chunk: int = 8192) -> "DenseIndex":
        """Load every agent-visible claim embedded by ``embedder_id`` (1,024-byte blobs only).
        :raises ImportError: numpy is not installed (the caller falls back to FTS5 only)."""
        import numpy as np

        shipped = cls._from_shipped(conn, embedder_id)
        if shipped is not None:
            return shipped
        dim = embed.DIMS.get(embedder_id) or stored_dim(conn, embedder_id)
        where = f"WHERE {_VISIBLE} AND c.embedder = ? AND length(c.embedding) = ?"
        args = (embedder_id, 4 * dim)
        n = conn.execute(f"SELECT count(*) FROM claims c {where}", args).fetchone()[0]
        idx = cls(embedder_id)
        idx.matrix = np.zeros((n, dim), dtype=np.float32)
        subjects, types = np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32)
        cur = conn.execute("SELECT c.claim_id, lower(coalesce(c.subject, '')), coalesce(c.claim_type, ''), c.embedding "
                           f"FROM claims c {where} ORDER BY c.claim_id", args)
        row = 0
        while row < n:
            rows = cur.fetchmany(chunk)[: n - row]
            if not rows:
                break
            block = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(len(rows), dim)
            norms = np.sqrt(np.einsum("ij,ij->i", block, block))  # no full-size temporaries
            norms[norms == 0] = 1.0
            idx.matrix[row:row + len(rows)] = block / norms[:, None]
            for j, r in enumerate(rows, row):
                idx.ids.append(r[0])
                subjects[j] = idx.subject_code.setdefault(r[1], len(idx.subject_code))
                types[j] = idx.type_code.setdefault(r[2], len(idx.type_code))
            row += len(rows)
        idx.matrix = idx.matrix[:row]
        idx.subjects, idx.types = subjects[:row], types[:row]
        return idx

    @classmethod
    def _from_shipped(cls, conn: sqlite3.Connection, embedder_id: str) -> "DenseIndex | None":
        """The index maint shipped in the snapshot's ``claim_index`` table
        (:func:`lib.memory.snapshot.vector_index_rows`): one blob streamed into the final matrix
        (8 MiB at a time) instead of decoding a blob per claim. ``None`` when the table is absent or its row for
        ``embedder_id`` is inconsistent (sizes that do not add up): the caller builds from
        ``claims`` instead."""
        import numpy as np

        try:
            row = conn.execute("SELECT rowid, dim, n, ids, subjects, types, length(matrix), typeof(matrix) "
                               "FROM claim_index WHERE embedder = ?", (embedder_id,)).fetchone()
        except sqlite3.Error:
            return None
        if row is None:
            return None
        rowid, dim, n, ids, subjects, types, size, kind = (row[i] for i in range(8))
        if not (isinstance(dim, int) and isinstance(n, int) and dim > 0 and n > 0 and kind == "blob"
                and size == n * dim * 4 and all(isinstance(t, str) for t in (ids, subjects, types))):
            return None
        id_list, subj_list, type_list = ids.split("\n"), subjects.split("\n"), types.split("\n")
        if not len(id_list) == len(subj_list) == len(type_list) == n:
            return None
        matrix = np.empty((n, dim), dtype="<f4")
        flat = matrix.reshape(-1).view(np.uint8)
        try:  # streamed into the final array: peak memory is the matrix plus one chunk, not twice it
            with conn.blobopen("claim_index", "matrix", rowid, readonly=True) as blob:
                for start in range(0, size, _BLOB_CHUNK):
                    chunk = blob.read(_BLOB_CHUNK)
                    flat[start:start + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
        except sqlite3.Error:
            return None
        idx = cls(embedder_id)
        idx.ids = id_list
        idx.matrix = matrix
        for values, codes_attr, table in ((subj_list, "subjects", idx.subject_code), (type_list, "types", idx.type_code)):
            codes = [table.setdefault(v, len(table)) for v in values]  # a dict pass: no object-array sort
            setattr(idx, codes_attr, np.fromiter(codes, dtype=np.int32, count=n))
        return idx

    @classmethod
    def from_mapped(cls, mapped) -> "DenseIndex":
        """The index over a mapped vector file (:class:`lib.memory.vector_file.Mapped`): the matrix and
        the code arrays are views of the mapping, ids decode per returned row; nothing is copied."""
        idx = cls(mapped.embedder)
        idx.ids, idx.matrix = mapped.ids, mapped.matrix
        idx.lead, idx.rest, idx.rotation = mapped.lead, mapped.rest, mapped.rotation
        idx.subjects, idx.types = mapped.subject_codes, mapped.type_codes
        idx.subject_code = {s: i for i, s in enumerate(mapped.subjects)}
        idx.type_code = {t: i for i, t in enumerate(mapped.types)}
        return idx

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, qvec, limit: int, subject: str | None = None, claim_type: str | None = None,
               scan_cap: int | None = None, exact_rows=None, prefer=None) -> tuple[list[tuple[str, float]], bool]:
        """Top ``limit`` ``(claim_id, cosine)`` over every row, best first (ties by claim_id);
        rows with cosine ≤ 0 are left out. ``prefer``: lowercased subjects whose own top
        ``limit`` rows are added to the result (a query naming someone must see their claims even
        when other people's claims score higher). The cosines returned are exact, so it returns
        ``(hits, True)``: over a rotated vector file of more than 4 × :data:`RESCORE_ROWS` rows
        they are computed for the best :data:`RESCORE_ROWS` rows by the leading principal
        components (and as many of the preferred subjects'), the rest ranked out."""
        import numpy as np

        q = np.asarray(qvec, dtype=np.float32)
        qn = float(np.linalg.norm(q))
        if not qn or not self.ids:
            return [], True
        q = q / qn
        rest_q = None  # set when only the rows worth it get their exact cosine
        if self.matrix is not None:
            scores = self.matrix @ q
        else:  # rotated: the leading components of every row, the rest only for the rows worth rescoring
            q = q @ self.rotation
            d = self.lead.shape[1]
            scores = self.lead @ q[:d]
            if len(scores) <= 4 * RESCORE_ROWS:
                scores += self.rest @ q[d:]
            else:
                rest_q = q[d:]
        if subject is not None:
            code = self.subject_code.get(subject.lower())
            scores = np.where(self.subjects == code, scores, -np.inf) if code is not None else np.full_like(scores, -np.inf)
        if claim_type is not None:
            code = self.type_code.get(claim_type)
            scores = np.where(self.types == code, scores, -np.inf) if code is not None else np.full_like(scores, -np.inf)
        k = min(limit, len(scores))
        codes = [self.subject_code[s] for s in (prefer or ()) if s in self.subject_code]
        mine = np.where(np.isin(self.subjects, codes), scores, -np.inf) if codes else None
        if rest_q is not None:  # the best RESCORE_ROWS by the leading components, then their exact cosines
            parts = [np.argpartition(-scores, RESCORE_ROWS - 1)[:RESCORE_ROWS]]
            if mine is not None:
                parts.append(np.argpartition(-mine, RESCORE_ROWS - 1)[:RESCORE_ROWS])
            rows = np.unique(np.concatenate(parts))
            rows = rows[np.isfinite(scores[rows])]
            full = np.full_like(scores, -np.inf)
            full[rows] = scores[rows] + self.rest[rows] @ rest_q
            scores = full
            if mine is not None:
                mine = np.where(np.isin(self.subjects, codes), scores, -np.inf)
        top = set(np.argpartition(-scores, k - 1)[:k].tolist())
        if mine is not None:  # the preferred subjects' own best rows too, however far down the whole ranking they sit
            top.update(i for i in np.argpartition(-mine, k - 1)[:k].tolist() if mine[i] > -np.inf)
        best = sorted(top, key=lambda i: (-float(scores[i]), i))
        return [(self.ids[i], min(1.0, float(scores[i]))) for i in best if scores[i] > 0], True


def stored_dim(conn: sqlite3.Connection, embedder_id: str) -> int:
    """Components of the first agent-visible ``embedder_id`` blob (an embedder this module does
    not know the size of); :data:`lib.memory.embed.DIM` when there is none or it is not whole float32s."""
    row = conn.execute(f"SELECT length(c.embedding) FROM claims c WHERE {_VISIBLE} AND c.embedder = ? "
                       "AND c.embedding IS NOT NULL ORDER BY c.claim_id LIMIT 1", (embedder_id,)).fetchone()
    n = row[0] if row else None
    return n // 4 if isinstance(n, int) and n > 0 and n % 4 == 0 else embed.DIM


def query_terms(text: str) -> list[str]:
    """Distinct non-stopword tokens of ``text`` in order, at most :data:`MAX_QUERY_TOKENS`."""
    seen: list[str] = []
    for tok in embed.tokens(text):
        if tok not in seen:
            seen.append(tok)
        if len(seen) >= MAX_QUERY_TOKENS:
            break
    return seen


def match_expr(terms: list[str]) -> str | None:
    """FTS5 MATCH expression: each term quoted, OR-joined; ``None`` for no terms."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) if terms else None


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class IndexCorrupt(Exception):
    """The vector file beside the snapshot is corrupt: the message is the note ``memory_search`` gives."""


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
        self._embedders: list[str] | None = None
        self._entities: frozenset | None = None
        self.index_note: str | None = None
        """Why the vector index was not mapped (:meth:`vector_index`), for the search that read it."""
        self.index_source = "built from the claims"
        """Where the current dense index came from, for :meth:`warm_up`'s log line."""

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
        from lib.memory import snapshot

        try:
            conn = snapshot.open_readonly(self.path, check_same_thread=False)  # see warm_up
            columns = {}
            for table in ("claims", "sessions", "snapshot_meta", "claims_fts", "claim_index"):
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

    def warm_up(self) -> dict:
        """Prepare this reader for its first ``memory_search`` (the MCP server runs it on a thread
        once the client has initialized the session, docs/mcp.md "Performance"): open the
        snapshot, map or read its vector index, load the query embedder and run one search, so
        the files' pages and the model are in memory. The caller must keep other calls on this
        reader out meanwhile (the connection is shared across threads, never used by two at
        once). Returns ``{"warmed": bool, "reason"}``. :raises Unavailable: no usable snapshot."""
        self.conn()
        usable = [e for e in self.claim_embedders() if embed.get(e)]
        out = self.search("warm up", 1)
        if not usable or "cosine" not in out["ranking"]:
            return {"warmed": False, "reason": " ".join(out["notes"]) or "no usable embedder"}
        return {"warmed": True, "reason": f"{len(self._index)} vectors of {usable[0]}, {self.index_source}"}

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn, self._ident, self._index, self._index_for, self._embedders = None, None, None, None, None
        self._entities = None

    # -- claims ----------------------------------------------------------------------------
    def claim_embedders(self) -> list[str]:
        """Embedder ids of agent-visible claims, most used first: ``snapshot_meta.served_embedders``
        when maint stamped it (:func:`lib.memory.snapshot.build`), else counted once per snapshot."""
        conn = self.conn()
        if self._embedders is None:
            stamped = _json_list(self.meta.get("served_embedders"))
            if stamped is not None:
                self._embedders = [e for e in stamped if isinstance(e, str)]
                return self._embedders
            rows = []
            if "embedder" in self.columns.get("claims", ()):
                rows = conn.execute(
                    f"SELECT c.embedder, count(*) AS n FROM claims c WHERE {_VISIBLE} AND c.embedder IS NOT NULL "
                    "GROUP BY c.embedder ORDER BY n DESC, c.embedder").fetchall()
            self._embedders = [r[0] for r in rows if isinstance(r[0], str)]
        return self._embedders

    def vector_index(self, embedder_id: str):
        """The cosine index for ``embedder_id`` on the current snapshot, built on first use: a
        sparse :class:`VectorIndex` for a lexical embedder, a :class:`DenseIndex` otherwise.
        :raises ImportError: a dense index without numpy."""
        conn = self.conn()
        if self._index is None or self._index_for != embedder_id:
            self._index = None
            self.index_note = None
            if embedder_id in embed.LEXICAL:
                self._index = VectorIndex.build(conn, embedder_id)
            else:
                self._index = self._dense_index(conn, embedder_id)
            self._index_for = embedder_id
        return self._index

    def _dense_index(self, conn, embedder_id: str) -> DenseIndex:
        """The mapped vector file when it is this snapshot's; else the index read from the
        snapshot (:meth:`DenseIndex.build`), with :attr:`index_note` saying so when the file is
        missing. :raises IndexCorrupt: the file is there but corrupt (the caller ranks by FTS5)."""
        from lib.memory import vector_file
        from lib.paths import snapshot_vectors_path

        side = snapshot_vectors_path(self.path)
        ident = [self._ident[2], self._ident[3], self._ident[1]]
        try:
            idx = DenseIndex.from_mapped(vector_file.load(side, ident, embedder_id))
            self.index_source = "mapped from the vector file"
            return idx
        except vector_file.Missing:
            if self.columns.get("claim_index"):
                self.index_note = ("No vector file beside the cached snapshot (ctxlake sync writes it): this server "
                                   "read the index from the snapshot instead, a slower first search.")
        except vector_file.Stale:
            pass  # syncd replaced one of the two and is about to replace the other
        except vector_file.Corrupt as exc:
            raise IndexCorrupt(f"The vector file beside the cached snapshot is corrupt ({exc}): ranked by FTS5 only; "
                               "the next ctxlake sync rewrites it.") from None
        self.index_source = "read from the snapshot"
        return DenseIndex.build(conn, embedder_id)

    def relevance_floor(self) -> float:
        """``snapshot_meta.relevance_floor`` as a float in [0, 1], else :data:`DEFAULT_RELEVANCE_FLOOR`."""
        try:
            v = float(self.meta.get("relevance_floor", DEFAULT_RELEVANCE_FLOOR))
        except ValueError:
            return DEFAULT_RELEVANCE_FLOOR
        return v if 0.0 <= v <= 1.0 else DEFAULT_RELEVANCE_FLOOR

    def doc_count(self, term: str, cap: int) -> int:
        """Agent-visible claims whose text or subject holds ``term`` (FTS5 tokenization), counted
        up to ``cap`` (matching is cheap; it is bm25 ranking that costs per match)."""
        try:
            return self.conn().execute("SELECT count(*) FROM (SELECT 1 FROM claims_fts WHERE claims_fts MATCH ? LIMIT ?)",
                                       (match_expr([term]), cap)).fetchone()[0]
        except sqlite3.OperationalError:
            return 0

    def fts_scored(self, match: str, limit: int, subject: str | None, claim_type: str | None,
                   subjects: list[str] | None = None, observed: tuple[str, str] | None = None) -> list[tuple[str, float]]:
        """:meth:`fts_ranked` with each claim's bm25 score, sign flipped (higher is better, > 0)."""
        return self.fts_ranked(match, limit, subject, claim_type, subjects, scores=True, observed=observed)

    def fts_ranked(self, match: str, limit: int, subject: str | None, claim_type: str | None,
                   subjects: list[str] | None = None, scores: bool = False,
                   observed: tuple[str, str] | None = None) -> list:
        """Claim ids matching the FTS5 expression, best bm25 first, at most ``limit``.

        ``claims_fts`` holds agent-visible claims only, so without filters the claims table is
        not joined (the caller re-checks visibility and status on the rows it keeps); with a
        filter it is. ``subjects``: only claims whose lowercased subject is one of these (the
        names a query mentions); ``observed``: only claims with ``lo <= observed_at < hi``
        (ISO strings, :func:`dates_named`). An FTS5 error (a malformed index) is no match.
        """
        if "claim_id" not in self.columns.get("claims_fts", ()):
            return []
        if not (subject or claim_type or subjects or observed):
            q, args = "SELECT claim_id, -rank FROM claims_fts WHERE claims_fts MATCH ? ORDER BY rank LIMIT ?", [match, limit]
        else:
            where, args = _filters(subject, claim_type, [match])
            if subjects:
                where.append(f"lower(c.subject) IN ({','.join('?' * len(subjects))})")
                args.extend(subjects)
            if observed:
                where.append("c.observed_at >= ? AND c.observed_at < ?")
                args.extend(observed)
            args.append(limit)
            q = ("SELECT c.claim_id, -claims_fts.rank FROM claims_fts JOIN claims c ON c.claim_id = claims_fts.claim_id "
                 f"WHERE claims_fts MATCH ? AND {' AND '.join(where)} ORDER BY claims_fts.rank LIMIT ?")
        try:
            return [(r[0], float(r[1])) if scores else r[0] for r in self.conn().execute(q, args)]
        except sqlite3.OperationalError:
            return []

    def search(self, query: str, k: int, subject: str | None = None, claim_type: str | None = None) -> dict:
        """Rank agent-visible claims for ``query`` (see the module docstring).

        Returns ``{"hits": [{"claim_id", "matched_by": ["fts5"?, "cosine"?, "observed_at"?],
        "cosine"?, "score"}], "truncated": bool, "ranking": str, "relevance_floor": float,
        "notes": [str], "wrong_person_margin": float | None}`` with at most ``k`` hits, best first
        (ties by claim_id). ``truncated`` is true when more claims qualified than were returned.
        ``score`` is what ranked the hit: with a semantic embedder α · cosine + (1 − α) · bm25 /
        the query's best bm25 (0..1), plus :data:`DATE_BOOST` when the claim was observed inside
        the dates the query names (:func:`dates_named`; ``matched_by`` then says
        ``observed_at``), else the reciprocal-rank sum.

        A query that names an entity (:meth:`named_in`) is ranked by its other words: the name
        matches every claim about that person, so letting it into bm25 ranks their claims by how
        often they say the name (on LoCoMo's tuning conversations, hit@5 0.756 → 0.773). With a
        semantic embedder, ``wrong_person_margin`` is how much better the best claim about someone
        else (one that does not name them too) fits than the named people's best, by the fused
        score without the date; above :data:`WRONG_PERSON_MARGIN` the hits are withheld with a
        note (``None``: the query names nobody, or no one else's claim was a candidate).

        Lexical side: terms found in more than :data:`RANK_DF_BUDGET` claims are left out of the
        bm25 query when rarer terms exist (their IDF is low, so they barely move bm25, while
        ranking every match costs microseconds each); a cosine candidate still counts as a
        lexical match when its own words contain a query word. With no usable embedding, every
        term is ranked by bm25.
        """
        terms = query_terms(query)
        pool = max(4 * k, 40)
        named = set() if subject else self.named_in(query)
        notes: list[str] = []
        embedders = self.claim_embedders()
        usable = [e for e in embedders if embed.get(e)]
        cos: list[tuple[str, float]] = []
        ranking = "fts5 bm25 only"
        qvec = None
        if usable:
            eid = usable[0]
            try:
                qvec = embed.get(eid)(query)  # once per search: a MiniLM query costs ~20 ms of CPU
                loaded = self._index is not None and self._index_for == eid
                cos, exact = self.vector_index(eid).search(qvec, pool, subject, claim_type,
                                                           exact_rows=self.embeddings_by_id, prefer=named)
                if self.index_note and not loaded:
                    notes.append(self.index_note)
                ranking = f"rrf(fts5 bm25, cosine {eid})" if exact else \
                    f"rrf(fts5 bm25, cosine {eid} over the {COSINE_SCAN_CAP} most-contributing postings)"
            except IndexCorrupt as exc:
                usable = []
                notes.append(str(exc))
            except Exception as exc:  # the embedder or numpy failed on this host: lexical ranking still works
                usable = []
                notes.append(f"The {eid} embedder failed here ({type(exc).__name__}: {str(exc)[:120]}): ranked by FTS5 only.")
            others = [e for e in embedders if e != eid]
            if others:
                notes.append(f"Claims embedded with {', '.join(others)} are matched by FTS5 only.")
        elif embedders:
            notes.append(f"Claims here are embedded with {', '.join(embedders)}, which this host cannot compute: ranked by FTS5 only.")
        else:
            notes.append("No claim in this snapshot carries an embedding: ranked by FTS5 only.")
        ranked_terms = terms
        if usable and terms:  # cosine candidates get a lexical check, so very common words can leave bm25
            dfs = {t: self.doc_count(t, RANK_DF_BUDGET + 1) for t in terms}
            ranked_terms, budget = [], RANK_DF_BUDGET
            for t in sorted(terms, key=lambda t: dfs[t]):
                if 0 < dfs[t] <= budget:
                    ranked_terms.append(t)
                    budget -= dfs[t]
        name_stems = {stem(t) for n in named for t in embed.tokens(n)}
        if named:  # ranked by what the query asks about them, not by the name every claim of theirs matches
            ranked_terms = [t for t in ranked_terms if stem(t) not in name_stems] or ranked_terms
        scored = self.fts_scored(match_expr(ranked_terms), pool, subject, claim_type) if ranked_terms else []
        bm25 = _unit_scores(scored)
        bm25_all = dict(bm25)  # scaled by the best claim of anyone's, for the wrong-person margin
        about = [t for t in terms if stem(t) not in name_stems] or terms
        if named:  # the named subjects' own claims, however common the words they share with others
            mine = self.fts_scored(match_expr(about), pool, None, claim_type, subjects=sorted(named))
            for cid, v in _unit_scores(mine).items():
                bm25[cid] = max(v, bm25.get(cid, 0.0))
            scored = mine + scored
        window = dates_named(query)
        if window and about:  # the claims observed then, scaled like the list they would have been in
            best = max((v for _, v in (mine if named else scored)), default=0.0)
            near = self.fts_scored(match_expr(about if named else ranked_terms or about), pool, subject, claim_type,
                                   subjects=sorted(named) or None, observed=window)
            best = best or max((v for _, v in near), default=0.0)
            for cid, v in near:
                bm25[cid] = max(min(1.0, v / best), bm25.get(cid, 0.0))
            scored = scored + near
        fts_ids = list(dict.fromkeys(cid for cid, _ in scored))
        semantic = bool(usable) and usable[0] not in embed.LEXICAL
        alpha = fusion_alpha(usable[0]) if semantic else 0.0
        if semantic:  # a weighted sum of scores, not reciprocal ranks: the string names what ranked
            ranking = f"fusion(fts5 bm25 {1.0 - alpha:.2f}, cosine {usable[0]} {alpha:.2f})"
        floor = self.relevance_floor()
        mixed = self.relevance_floor_mixed() if semantic else None
        cos_of = dict(cos)
        candidates = list(dict.fromkeys(fts_ids + [cid for cid, _ in cos]))
        rows = self.claims_by_id(candidates) if candidates else {}
        if semantic:  # FTS-only candidates get their cosine too, for the mixed rule
            missing = [cid for cid in fts_ids if cid not in cos_of and cid in rows]
            if missing:
                import numpy as np  # a semantic embedder's dense index has loaded it already

                q = np.asarray(qvec, dtype="<f4")
                q = q / (float(np.linalg.norm(q)) or 1.0)
                for cid, blob in self.embeddings_by_id(missing).items():
                    if len(blob) == 4 * len(q):  # a blob of another size is not this embedder's
                        v = np.frombuffer(blob, dtype="<f4")
                        cos_of[cid] = float(v @ q) / (float(np.linalg.norm(v)) or 1.0)
        qstems = {stem(t) for t in terms}
        content = (qstems - name_stems) or qstems  # a name is not evidence of relevance, unless it is all there is
        need = 1 if named or len(content) < 2 else 2  # the name already vouches for whom; one more word for what
        entities = self.entities()
        qualified, shared = set(), {}
        best_own = best_other = None  # the named people's best claim and anyone else's, by the same score
        for cid in candidates:
            row = rows.get(cid)
            if row is None:
                continue  # FTS5 indexes every agent-visible claim; only promoted and contested ones are served
            words = {stem(t) for t in embed.tokens(f"{row.get('claim') or ''} {row.get('subject') or ''}")}
            subj = str(row.get("subject") or "").lower()
            if named and semantic:
                v = alpha * cos_of.get(cid, 0.0) + (1.0 - alpha) * bm25_all.get(cid, 0.0)
                if subj in entities and subj not in named:
                    if not named & self.named_in(str(row.get("claim") or "")):  # "John asked James about…" is about James too
                        best_other = v if best_other is None else max(best_other, v)
                else:
                    best_own = v if best_own is None else max(best_own, v)
            if named and subj in entities and subj not in named:
                continue  # about someone else, and never mentions whom the query names
            m = len(content & words)
            shared[cid] = m
            c = cos_of.get(cid, 0.0)
            if m >= need or (semantic and (c >= floor or (m >= 1 and c >= mixed))):
                qualified.add(cid)
        fused: dict[str, float] = {}
        hits: dict[str, dict] = {}
        for rank, cid in enumerate(fts_ids, 1):
            if cid in qualified:
                fused[cid] = (1.0 - alpha) * bm25.get(cid, 0.0) if semantic else 1.0 / (RRF_K + rank)
                hits[cid] = {"claim_id": cid, "matched_by": ["fts5"]}
        in_cos = {cid for cid, _ in cos}
        for rank, (cid, c) in enumerate(cos, 1):
            if cid in qualified and (shared.get(cid) or semantic):
                fused[cid] = fused.get(cid, 0.0) + (alpha * c if semantic else 1.0 / (RRF_K + rank))
                hit = hits.setdefault(cid, {"claim_id": cid, "matched_by": []})
                hit["matched_by"].append("cosine")
                hit["cosine"] = round(c, 3)
        if semantic:  # a lexical candidate outside the cosine pool still has its cosine
            for cid in fused:
                if cid not in in_cos and cid in cos_of:
                    fused[cid] += alpha * cos_of[cid]
        if window:  # observed inside the dates the query names: a third ranking, by time
            for cid in fused:
                if window[0] <= str(rows[cid].get("observed_at") or "") < window[1]:
                    fused[cid] += DATE_BOOST if semantic else 1.0 / (RRF_K + 1)
                    hits[cid]["matched_by"].append("observed_at")
        for cid, v in fused.items():
            hits[cid]["score"] = round(v, 4)
        margin = None if best_other is None else best_other - (best_own if best_own is not None else 0.0)
        if margin is not None and margin > WRONG_PERSON_MARGIN and fused:
            fused = {}
            notes.append(f"A claim about someone else matches this question better than any about {', '.join(sorted(named))} "
                         f"(by {margin:.2f}): the question may name the wrong person, so nothing is returned.")
        elif candidates and not fused:
            notes.append("Candidates were found but none passed the relevance floor: nothing is better than an unrelated claim.")
        order = sorted(fused, key=lambda c: (-fused[c], c))
        return {"hits": [hits[c] for c in order[:k]], "truncated": len(order) > k, "ranking": ranking,
                "relevance_floor": floor, "notes": notes, "wrong_person_margin": margin}

    def entities(self) -> frozenset:
        """Lowercased subjects of agent-visible claims that read as names (:func:`is_entity`:
        ``Caroline``, ``Jolene``, ``Acme Billing``) — ``snapshot_meta.entity_subjects`` when maint
        stamped it, else computed once per snapshot. Subjects written in lowercase
        (``spotter dev server``, ``pytest``) are topics, not names, and never restrict a search."""
        if self._entities is None:
            self.conn()
            stamped = _json_list(self.meta.get("entity_subjects"))
            if stamped is not None:
                self._entities = frozenset(s.lower() for s in stamped if isinstance(s, str) and is_entity(s))
                return self._entities
            try:
                rows = self.conn().execute(f"SELECT DISTINCT c.subject FROM claims c WHERE {_VISIBLE}").fetchall()
            except sqlite3.Error:
                rows = []
            self._entities = frozenset(subj.lower() for (subj,) in rows if is_entity(subj))
        return self._entities

    def named_in(self, query: str) -> set:
        """The :meth:`entities` that ``query`` names as whole words (case-insensitive), e.g.
        ``{"jolene"}`` for "When was Jolene in Bogota?"."""
        ents = self.entities()
        if not ents:
            return set()
        words = [w for w in embed.word_tokens(query)]
        found = set()
        for n in range(1, MAX_ENTITY_WORDS + 1):
            for i in range(len(words) - n + 1):
                cand = " ".join(words[i:i + n])
                if cand in ents:
                    found.add(cand)
        return found

    def relevance_floor_mixed(self) -> float:
        """``snapshot_meta.relevance_floor_mixed``: the cosine a claim sharing exactly one query
        word needs (semantic embedders only); :data:`DEFAULT_RELEVANCE_FLOOR_MIXED` when absent."""
        try:
            v = float(self.meta.get("relevance_floor_mixed", DEFAULT_RELEVANCE_FLOOR_MIXED))
        except ValueError:
            return DEFAULT_RELEVANCE_FLOOR_MIXED
        return v if 0.0 <= v <= 1.0 else DEFAULT_RELEVANCE_FLOOR_MIXED

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

    def embeddings_by_id(self, ids: list[str]) -> dict[str, bytes]:
        """``{claim_id: embedding blob}`` for ``ids`` (primary-key lookups)."""
        out = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            q = f"SELECT claim_id, embedding FROM claims WHERE claim_id IN ({','.join('?' * len(part))})"
            for cid, blob in self.conn().execute(q, part):
                if isinstance(blob, bytes) and blob and len(blob) % 4 == 0:
                    out[cid] = blob
        return out

    def _claim_cols(self) -> str:
        have = self.columns.get("claims", set())
        want = ("claim_id", "claim", "claim_type", "subject", "status", "confidence", "observed_by", "observed_at",
                "independent_sessions", "updated_at")
        return ", ".join(f"c.{c}" if c in have else f"NULL AS {c}" for c in want)

    def list_claims(self, limit: int, subject: str | None, claim_type: str | None) -> list[dict]:
        """Agent-visible claims, highest confidence first (a blank query), at most ``limit``."""
        where, args = _filters(subject, claim_type, [])
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
                    except (ValueError, RecursionError):  # not JSON, or nested too deep to decode
                        d[k] = None
            out.append(d)
        return out
