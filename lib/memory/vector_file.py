"""The snapshot's vector index as a file the MCP server maps instead of reading
(``cache/<fleet>/snapshot.bin.vectors``, docs/memory.md "The index ships in the snapshot").

Where it sits: maint ships each embedder's served vectors in the snapshot's ``claim_index`` table
(:func:`lib.memory.snapshot.vector_index_rows`); SQLite keeps a BLOB in a chain of overflow pages, so
the table can be read but not mapped. syncd, after it mirrors a snapshot, writes the most-used
embedder's index beside it in the layout below (:func:`write`, atomically through
:func:`lib.cache_view.write_chunks`), and rewrites it on a later pass when it is missing or not
this snapshot's (:func:`current`). A new MCP server maps it (:func:`load`): no per-claim Python
object is built, the matrix pages come from the page cache as the first matrix-vector product
touches them, and claim ids are decoded only for the rows a search returns.

Layout (little-endian)::

    0   b"CTXLVEC1"
    8   uint32  header length h
    12  header: UTF-8 JSON, h bytes — {"snapshot_sha256", "snapshot_file": [size, mtime_ns, inode],
        "embedder", "dim", "n", "id_width", "matrix": [offset, bytes], "ids": [offset, bytes],
        "subject_codes": [offset, bytes], "type_codes": [offset, bytes],
        "subjects": [distinct lowercased subjects], "types": [distinct types]}
    ... sections at 64-byte aligned offsets:
        matrix         n × dim float32, unit rows in claim_id order
        ids            n × id_width bytes, each claim id UTF-8, NUL-padded
        subject_codes  n int32: row i's subject is subjects[code]
        type_codes     n int32: row i's type is types[code]
        rotation       dim × dim float32 (only with "lead" in the header, see below)

With ``"lead": d`` and a ``rotation`` section in the header (what :func:`write` cuts), the rows
are stored rotated onto their principal axes — row · R, R orthonormal, its columns in falling
variance, so every cosine is unchanged for a query rotated the same way — and the matrix section
holds the n × d block of the leading components, then the n × (dim − d) block of the rest. A
search reads the lead block whole and the rest only for the rows it rescores
(:meth:`lib.memory.memory_index.DenseIndex.search`). A header without them is the plain layout.

``snapshot_file`` is the identity of the ``snapshot.bin`` the file was cut from (what
:mod:`lib.cache_view` records in the pointer side file): a reader that finds another identity
knows the file belongs to an older or newer snapshot. What :func:`load` checks: the magic, the
header, every section inside the file and of the size ``n`` and ``dim`` imply, every code inside
its table, and that sampled rows (:data:`NORM_SAMPLES`) have unit length — a file cut short or
overwritten is caught; a flipped bit inside one row is not (the file is written atomically from
a hash-verified snapshot). numpy is imported by :func:`load` and :func:`write` only.
"""
from __future__ import annotations

import json
import os
import sqlite3
import struct

MAGIC = b"CTXLVEC1"
ALIGN = 64
"""Section alignment in bytes (a float32 matrix on a cache-line boundary)."""
CHUNK = 8 << 20
"""Bytes of the snapshot's matrix BLOB read at a time while writing."""
NORM_SAMPLES = 256
"""Rows whose length :func:`load` checks (evenly spread): each must be 1 (± 1e-3) or 0."""
PCA_SAMPLE = 20_000
"""Rows (evenly spread) whose covariance gives the principal axes :func:`write` rotates onto."""


def lead_dims(dim: int) -> int:
    """Leading principal components a search reads for every row: a third of ``dim``, a multiple
    of 16 (128 of MiniLM's 384; 80 of 256). On LoCoMo's MiniLM vectors the first 128 hold 92 % of
    the variance, and the best 40 rows by all 384 are among the best 5 % by these 128 in 99.98 %
    of cases (docs/memory.md)."""
    return max(16, dim // 3 // 16 * 16)


class Missing(Exception):
    """No vector file beside the snapshot."""


class Stale(Exception):
    """The vector file was cut from another snapshot (or another embedder): the message says which."""


class Corrupt(Exception):
    """The vector file is not in the layout above: the message says what is wrong."""


def _pad(n: int) -> int:
    return -n % ALIGN


def _index_row(conn: sqlite3.Connection):
    """``(rowid, embedder, dim, n, ids, subjects, types)`` of the ``claim_index`` row with the most
    vectors, or ``None`` when the snapshot has none that adds up."""
    try:
        rows = conn.execute("SELECT rowid, embedder, dim, n, ids, subjects, types, length(matrix), typeof(matrix) "
                            "FROM claim_index ORDER BY n DESC, embedder LIMIT 1").fetchall()
    except sqlite3.Error:
        return None
    if not rows:
        return None
    rowid, eid, dim, n, ids, subjects, types, size, kind = tuple(rows[0])
    ok = (isinstance(dim, int) and isinstance(n, int) and dim > 0 and n > 0 and kind == "blob" and size == n * dim * 4
          and isinstance(eid, str) and all(isinstance(t, str) for t in (ids, subjects, types)))
    return (rowid, eid, dim, n, ids, subjects, types) if ok else None


def write(snapshot_path: str, sha256: str, side_path: str) -> dict:
    """Cut the vector file for the cached snapshot ``snapshot_path`` (whose content hash is
    ``sha256``) and put it at ``side_path`` atomically. Returns ``{"written": bool, "embedder",
    "n", "reason"}``; ``written`` is False (reason ``no vector index``) when the snapshot carries
    no usable ``claim_index`` row or numpy is missing, and then no file is written.
    :raises OSError: the file could not be written (a full disk; the old one stays).
    :raises sqlite3.Error: the snapshot cannot be read."""
    try:
        import numpy as np
    except ImportError:
        return {"written": False, "reason": "no numpy"}
    from lib import cache_view
    from lib.memory import snapshot

    st = os.stat(snapshot_path)
    conn = snapshot.open_readonly(snapshot_path)
    try:
        row = _index_row(conn)
        if row is None:
            return {"written": False, "reason": "no vector index"}
        rowid, eid, dim, n, ids, subjects, types = row
        id_list, subj_list, type_list = ids.split("\n"), subjects.split("\n"), types.split("\n")
        if not len(id_list) == len(subj_list) == len(type_list) == n:
            return {"written": False, "reason": "no vector index"}
        raw_ids = [i.encode("utf-8") for i in id_list]
        width = max(1, max(len(b) for b in raw_ids))
        id_bytes = np.array(raw_ids, dtype=f"S{width}").tobytes()
        tables = {}
        codes = {}
        for name, values in (("subjects", subj_list), ("types", type_list)):
            table: dict[str, int] = {}
            codes[name] = np.fromiter((table.setdefault(v, len(table)) for v in values), dtype="<i4", count=n).tobytes()
            tables[name] = list(table)
        lead = lead_dims(dim) if dim >= 32 else 0  # under 32 components: nothing worth splitting
        rotation = _principal_axes(conn, rowid, n, dim) if lead else None
        sizes = {"matrix": n * dim * 4, "ids": len(id_bytes), "subject_codes": 4 * n, "type_codes": 4 * n}
        sections = ["matrix", "ids", "subject_codes", "type_codes"]
        header = {"snapshot_sha256": sha256, "snapshot_file": [st.st_size, st.st_mtime_ns, st.st_ino], "embedder": eid,
                  "dim": dim, "n": n, "id_width": width, "subjects": tables["subjects"], "types": tables["types"]}
        if rotation is not None:
            header["lead"] = lead
            sizes["rotation"] = dim * dim * 4
            sections.append("rotation")
        # offsets depend on the header's length, which depends on the offsets' digits: fix the point
        start = 0
        for _ in range(4):
            off = start
            for name in sections:
                header[name] = [off, sizes[name]]
                off += sizes[name] + _pad(sizes[name])
            text = json.dumps(header, sort_keys=True, ensure_ascii=False).encode("utf-8")
            head = MAGIC + struct.pack("<I", len(text)) + text
            if len(head) + _pad(len(head)) == start:
                break
            start = len(head) + _pad(len(head))

        def chunks():
            yield head + b"\0" * _pad(len(head))
            if rotation is None:
                for block in _blocks(conn, rowid, n, dim):
                    yield block.tobytes()
            else:  # one pass per column block: peak memory is one chunk of rows, not the matrix
                for cols in (rotation[:, :lead], rotation[:, lead:]):
                    for block in _blocks(conn, rowid, n, dim):
                        yield np.ascontiguousarray(block @ cols, dtype="<f4").tobytes()
            yield b"\0" * _pad(sizes["matrix"])
            for name, data in (("ids", id_bytes), ("subject_codes", codes["subjects"]), ("type_codes", codes["types"])):
                yield data + b"\0" * _pad(sizes[name])
            if rotation is not None:
                yield rotation.astype("<f4").tobytes() + b"\0" * _pad(sizes["rotation"])
        cache_view.write_chunks(side_path, chunks())
    finally:
        conn.close()
    return {"written": True, "embedder": eid, "n": n, "reason": "written"}


def _blocks(conn: sqlite3.Connection, rowid: int, n: int, dim: int):
    """The ``claim_index`` matrix of ``rowid`` as float32 arrays of whole rows, :data:`CHUNK`
    bytes (rounded down to whole rows) at a time."""
    import numpy as np

    step = max(1, CHUNK // (4 * dim)) * 4 * dim
    with conn.blobopen("claim_index", "matrix", rowid, readonly=True) as blob:
        for _ in range(0, n * dim * 4, step):
            data = blob.read(step)
            yield np.frombuffer(data, dtype="<f4").reshape(-1, dim)


def _principal_axes(conn: sqlite3.Connection, rowid: int, n: int, dim: int):
    """Orthonormal ``dim × dim`` float32 matrix whose columns are the principal axes of the rows'
    second moment (uncentred: a rotation keeps every dot product), largest variance first,
    estimated on at most :data:`PCA_SAMPLE` evenly spread rows."""
    import numpy as np

    every = max(1, n // PCA_SAMPLE)
    moment = np.zeros((dim, dim))
    seen = 0
    for block in _blocks(conn, rowid, n, dim):
        part = block[(-seen) % every::every].astype(np.float64)
        seen += len(block)
        moment += part.T @ part
    _, axes = np.linalg.eigh(moment)  # ascending eigenvalues, orthonormal eigenvectors
    return np.ascontiguousarray(axes[:, ::-1], dtype=np.float32)


def read_header(mm) -> dict:
    """The header of a mapped vector file. :raises Corrupt: no magic, or a header that is not a
    JSON object."""
    if len(mm) < 12 or mm[:8] != MAGIC:
        raise Corrupt("it does not start with the vector file's magic bytes")
    (hlen,) = struct.unpack("<I", mm[8:12])
    if 12 + hlen > len(mm):
        raise Corrupt(f"its header claims {hlen} bytes, past the end of the file")
    try:
        header = json.loads(bytes(mm[12:12 + hlen]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Corrupt(f"its header is not JSON ({str(exc)[:80]})") from None
    if not isinstance(header, dict):
        raise Corrupt("its header is not a JSON object")
    return header


def current(side_path: str, snapshot_path: str, sha256: str) -> bool:
    """True when ``side_path`` holds a readable header cut from ``snapshot_path`` as it is now
    (same content hash and file identity): syncd then leaves it alone."""
    from lib import cache_view

    try:
        mm = cache_view.map_readonly(side_path)
        st = os.stat(snapshot_path)
    except (OSError, ValueError):
        return False
    if mm is None:
        return False
    try:
        header = read_header(mm)
    except Corrupt:
        return False
    finally:
        mm.close()
    return header.get("snapshot_sha256") == sha256 and header.get("snapshot_file") == [st.st_size, st.st_mtime_ns, st.st_ino]


class IdColumn:
    """Claim ids of a mapped file, row by row: ``col[i]`` decodes row ``i`` (NUL padding
    stripped) when asked, ``len(col)`` is ``n``. Nothing is decoded up front."""

    def __init__(self, ids):
        self._ids = ids

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, i: int) -> str:
        return self._ids[i].decode("utf-8")


class Mapped:
    """One mapped vector file: ``embedder``, ``matrix`` (``n × dim`` float32, read-only view of
    the mapping; ``None`` in the rotated layout), ``ids`` (:class:`IdColumn`),
    ``subject_codes``/``type_codes`` (int32 arrays) indexing ``subjects``/``types`` (lists of
    str). The rotated layout (module docstring) sets ``lead`` (``n × d``), ``rest``
    (``n × (dim − d)``) and ``rotation`` (``dim × dim``) instead of ``matrix``."""

    def __init__(self, mm, header: dict, matrix, ids, subject_codes, type_codes, rotated=None):
        self.mm, self.header = mm, header
        self.embedder, self.matrix, self.ids = header["embedder"], matrix, ids
        self.subject_codes, self.type_codes = subject_codes, type_codes
        self.subjects, self.types = header["subjects"], header["types"]
        self.lead, self.rest, self.rotation = rotated or (None, None, None)


def load(side_path: str, snapshot_file: list, embedder_id: str) -> Mapped:
    """Map ``side_path`` for the snapshot whose identity is ``snapshot_file`` (``[size,
    mtime_ns, inode]``) and whose claims ``embedder_id`` embedded.

    :raises Missing: no file. :raises Stale: cut from another snapshot, or for another embedder.
    :raises Corrupt: not in the layout (see the module docstring for what is checked).
    :raises ImportError: numpy is not installed."""
    import numpy as np

    from lib import cache_view

    try:
        mm = cache_view.map_readonly(side_path)
    except (OSError, ValueError) as exc:  # empty (mmap refuses a 0-byte file) or unreadable
        raise Corrupt(f"it cannot be mapped ({exc})") from None
    if mm is None:
        raise Missing("no vector file beside the snapshot")
    header = read_header(mm)
    if header.get("snapshot_file") != list(snapshot_file):
        raise Stale(f"it was cut from snapshot {str(header.get('snapshot_sha256'))[:12]}, not the cached one")
    if header.get("embedder") != embedder_id:
        raise Stale(f"it holds {header.get('embedder')!r} vectors, not {embedder_id!r}")
    try:
        n, dim, width = (int(header[k]) for k in ("n", "dim", "id_width"))
        subjects, types = header["subjects"], header["types"]
        names = ("matrix", "ids", "subject_codes", "type_codes") + (("rotation",) if "lead" in header else ())
        spans = {k: tuple(int(x) for x in header[k]) for k in names}
        lead = int(header["lead"]) if "lead" in header else None
    except (KeyError, TypeError, ValueError) as exc:
        raise Corrupt(f"its header lacks a field or has one of the wrong type ({exc})") from None
    want = {"matrix": n * dim * 4, "ids": n * width, "subject_codes": 4 * n, "type_codes": 4 * n, "rotation": dim * dim * 4}
    if n <= 0 or dim <= 0 or width <= 0 or not isinstance(subjects, list) or not isinstance(types, list):
        raise Corrupt("its header has no rows, no dimensions or no tables")
    if lead is not None and not 0 < lead < dim:
        raise Corrupt(f"its lead of {lead} components is not between 0 and its {dim} dimensions")
    for name, (off, size) in spans.items():
        if size != want[name] or off < 12 or off % ALIGN or off + size > len(mm):
            raise Corrupt(f"its {name} section ({size} bytes at {off}) does not fit the file "
                          f"({len(mm)} bytes, {n} rows × {dim})")
    off = spans["matrix"][0]
    if lead is None:
        matrix, rotated = np.frombuffer(mm, dtype="<f4", count=n * dim, offset=off).reshape(n, dim), None
    else:
        head = np.frombuffer(mm, dtype="<f4", count=n * lead, offset=off).reshape(n, lead)
        rest = np.frombuffer(mm, dtype="<f4", count=n * (dim - lead), offset=off + 4 * n * lead).reshape(n, dim - lead)
        rotation = np.frombuffer(mm, dtype="<f4", count=dim * dim, offset=spans["rotation"][0]).reshape(dim, dim)
        matrix, rotated = None, (head, rest, rotation)
        if not np.allclose(rotation.T @ rotation, np.eye(dim, dtype=np.float32), atol=1e-3):
            raise Corrupt("its rotation is not orthonormal: the file was overwritten")
    ids = np.frombuffer(mm, dtype=f"S{width}", count=n, offset=spans["ids"][0])
    scodes = np.frombuffer(mm, dtype="<i4", count=n, offset=spans["subject_codes"][0])
    tcodes = np.frombuffer(mm, dtype="<i4", count=n, offset=spans["type_codes"][0])
    for codes, table, name in ((scodes, subjects, "subject"), (tcodes, types, "type")):
        if int(codes.min()) < 0 or int(codes.max()) >= len(table):
            raise Corrupt(f"a {name} code points outside its table of {len(table)}")
    step = max(1, n // NORM_SAMPLES)
    parts = [matrix[::step]] if rotated is None else [rotated[0][::step], rotated[1][::step]]
    norms = np.sqrt(sum(np.einsum("ij,ij->i", p, p) for p in parts))
    if not bool(np.all((np.abs(norms - 1.0) <= 1e-3) | (norms == 0.0))):
        raise Corrupt("sampled rows are not unit vectors: the matrix was overwritten")
    return Mapped(mm, header, matrix, IdColumn(ids), scodes, tcodes, rotated)
