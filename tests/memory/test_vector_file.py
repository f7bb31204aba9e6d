"""The snapshot's vector index as a mapped file beside the cached snapshot (lib/memory/vector_file.py,
docs/memory.md "The index ships in the snapshot"): syncd's fetch writes it and repairs it, the
MCP server maps it and ranks exactly as the index read from the snapshot does, and a missing,
stale or corrupt file degrades — to the snapshot's own index, or to FTS5 with a note."""
from __future__ import annotations

import os
import random
import shutil
import struct
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

np = pytest.importorskip("numpy")

from lib import lake  # noqa: E402
from lib.memory import claims, embed, memory_index, snapshot, vector_file  # noqa: E402
from lib.memory.memory_index import DenseIndex, SnapshotReader  # noqa: E402
from lib.paths import snapshot_vectors_path  # noqa: E402
from lib.store.file import FileStore  # noqa: E402

EID = "dense-vf-test"
DIM = 64


def _rows(n=240, seed=7):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = f"claim {i} about {rng.choice(['ci', 'docker', 'pytest', 'postgres'])} {rng.choice(['fails', 'works'])}"
        out.append({"claim_id": claims.claim_id("environment", text), "claim": text,
                    "claim_type": rng.choice(["environment", "outcome"]), "subject": rng.choice(["Alice", "ci", "Bob"]),
                    "status": rng.choice(["promoted", "contested", "candidate"]), "confidence": 0.7, "observed_by": "a",
                    "observed_at": "2026-11-29", "independent_sessions": 1, "visible_to_agents": rng.choice([1, 1, 0]),
                    "embedding": embed.to_blob([rng.uniform(-1, 1) for _ in range(DIM)], DIM), "embedder": EID})
    return out


@pytest.fixture
def dense(monkeypatch):
    """A 64-d test embedder (deterministic per text) registered for the test's duration."""
    def fn(text):
        r = random.Random(text)
        return [r.uniform(-1, 1) for _ in range(DIM)]
    monkeypatch.setitem(embed.EMBEDDERS, EID, fn)
    monkeypatch.setitem(embed.DIMS, EID, DIM)
    return fn


def _cached(tmp_path, rows=None, sha="a" * 64):
    """A snapshot placed as a cache file, with its vector file cut beside it."""
    path = os.path.join(tmp_path, "snapshot.bin")
    with open(path, "wb") as fh:
        fh.write(snapshot.build("f", [], rows or _rows()))
    res = vector_file.write(path, sha, snapshot_vectors_path(path))
    assert res["written"] and res["embedder"] == EID
    return path


@pytest.mark.parametrize("layout", ["rotated", "plain"])
def test_the_mapped_file_ranks_exactly_as_the_snapshots_own_index(tmp_path, dense, monkeypatch, layout):
    if layout == "plain":  # the layout of a file cut before the rotated one, still read as it is
        monkeypatch.setattr(vector_file, "lead_dims", lambda dim: 0)
    path = _cached(tmp_path)
    st_ = os.stat(path)
    m = vector_file.load(snapshot_vectors_path(path), [st_.st_size, st_.st_mtime_ns, st_.st_ino], EID)
    assert (m.matrix is None) == (layout == "rotated") and ("lead" in m.header) == (layout == "rotated")
    mapped = DenseIndex.from_mapped(m)
    built = DenseIndex.build(snapshot.open_readonly(path), EID)
    assert [mapped.ids[i] for i in range(len(mapped))] == built.ids
    for q in ("docker fails", "pytest", "ci works"):
        for filters in ({}, {"subject": "alice"}, {"claim_type": "outcome"}, {"subject": "nobody"}):
            a, _ = mapped.search(dense(q), 15, **filters, prefer={"bob"})
            b, _ = built.search(dense(q), 15, **filters, prefer={"bob"})
            assert [i for i, _ in a] == [i for i, _ in b]
            assert np.allclose([c for _, c in a], [c for _, c in b], atol=1e-6)


def test_past_4x_rescore_rows_the_leading_components_choose_and_the_cosines_stay_exact(tmp_path, dense, monkeypatch):
    # rows with the structure of sentence embeddings: a few directions carry most of the variance
    rng = np.random.default_rng(3)
    basis = rng.normal(size=(8, DIM))
    rows = _rows()
    for r in rows:
        v = rng.normal(size=8) @ basis + rng.normal(scale=0.05, size=DIM)
        r["embedding"] = embed.to_blob(v.tolist(), DIM)
    path = _cached(tmp_path, rows)
    st_ = os.stat(path)
    m = vector_file.load(snapshot_vectors_path(path), [st_.st_size, st_.st_mtime_ns, st_.st_ino], EID)
    assert m.matrix is None and m.lead.shape[1] == vector_file.lead_dims(DIM) == 16 and m.rotation.shape == (DIM, DIM)
    mapped, built = DenseIndex.from_mapped(m), DenseIndex.build(snapshot.open_readonly(path), EID)
    monkeypatch.setattr(memory_index, "RESCORE_ROWS", 25)  # 4 × 25 < the rows served: two stages
    assert len(mapped) > 4 * memory_index.RESCORE_ROWS
    for seed in range(6):
        q = (rng.normal(size=8) @ basis).tolist()
        for filters in ({}, {"subject": "alice"}, {"claim_type": "outcome"}):
            a, _ = mapped.search(q, 10, **filters, prefer={"bob"})
            b, _ = built.search(q, 10, **filters, prefer={"bob"})
            assert [i for i, _ in a] == [i for i, _ in b], (seed, filters)
            assert np.allclose([c for _, c in a], [c for _, c in b], atol=1e-5)


def test_search_maps_the_file_and_says_nothing_about_it(tmp_path, dense, monkeypatch):
    path = _cached(tmp_path)
    monkeypatch.setattr(DenseIndex, "build", classmethod(lambda *a, **k: pytest.fail("read the snapshot, not the file")))
    out = SnapshotReader(path).search("docker fails", 5)
    assert out["ranking"] == f"fusion(fts5 bm25 0.30, cosine {EID} 0.70)" and out["hits"]
    assert not out["notes"]


def test_a_missing_file_reads_the_snapshots_index_with_a_note(tmp_path, dense):
    path = _cached(tmp_path)
    os.unlink(snapshot_vectors_path(path))
    reader = SnapshotReader(path)
    out = reader.search("docker fails", 5)
    assert "cosine" in out["ranking"] and out["hits"]
    assert any("No vector file beside the cached snapshot" in n for n in out["notes"])
    assert not reader.search("pytest works", 5)["notes"]  # said once, by the search that read it


def test_a_file_cut_from_another_snapshot_is_not_used(tmp_path, dense):
    path = _cached(tmp_path)
    other = os.path.join(tmp_path, "other")
    os.makedirs(other)
    other_path = _cached(other, _rows(seed=99))
    shutil.copyfile(snapshot_vectors_path(other_path), snapshot_vectors_path(path))
    st_ = os.stat(path)
    with pytest.raises(vector_file.Stale):
        vector_file.load(snapshot_vectors_path(path), [st_.st_size, st_.st_mtime_ns, st_.st_ino], EID)
    out = SnapshotReader(path).search("docker fails", 5)
    built = DenseIndex.build(snapshot.open_readonly(path), EID)
    assert {h["claim_id"] for h in out["hits"]} <= set(built.ids) and out["hits"]
    assert not out["notes"]


def _corrupt(side: str, how: str) -> None:
    data = bytearray(open(side, "rb").read())
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "empty":
        data = bytearray()
    elif how == "magic":
        data[:8] = b"GARBAGE!"
    elif how == "header":
        data[12:20] = b"\xff\xfe{[{[{["
    elif how == "matrix":
        header = vector_file.read_header(bytes(data))
        off, size = header["matrix"]
        data[off:off + size] = b"\x7f" * size
    elif how == "rotation":  # a rotation that is no longer orthonormal: cosines would be wrong
        off, size = vector_file.read_header(bytes(data))["rotation"]
        data[off:off + 4 * 8] = struct.pack("<8f", *[3.0] * 8)
    with open(side, "wb") as fh:
        fh.write(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "empty", "magic", "header", "matrix", "rotation"])
def test_a_corrupt_file_ranks_by_fts5_with_a_note(tmp_path, dense, how):
    path = _cached(tmp_path)
    _corrupt(snapshot_vectors_path(path), how)
    out = SnapshotReader(path).search("docker fails", 5)
    assert out["ranking"] == "fts5 bm25 only"
    assert out["hits"], "FTS5 still answers"
    assert any("vector file beside the cached snapshot is corrupt" in n and "ctxlake sync rewrites it" in n
               for n in out["notes"])


def _published(tmp_path):
    """A file:// store with one published snapshot, and the cache path to mirror it to."""
    store = FileStore(f"file://{tmp_path}/lake")
    data = snapshot.build("f", [], _rows())
    sha = snapshot.sha256(data)
    store.put(lake.snapshot_blob_key("f", sha), data)
    store.put(lake.snapshot_pointer_key("f"), ('{"sha256": "%s"}' % sha).encode())
    return store, os.path.join(tmp_path, "cache", "snapshot.bin")


def test_fetch_writes_the_file_and_repairs_it(tmp_path, dense):
    store, cache = _published(tmp_path)
    side = snapshot_vectors_path(cache)
    first = snapshot.fetch(store, "f", cache)
    assert first["changed"] and first["vectors"] == "written" and os.path.exists(side)
    assert snapshot.fetch(store, "f", cache)["vectors"] == "current"
    _corrupt(side, "magic")
    assert snapshot.fetch(store, "f", cache)["vectors"] == "written"
    os.unlink(side)
    assert snapshot.fetch(store, "f", cache)["vectors"] == "written"
    assert not SnapshotReader(cache).search("docker fails", 5)["notes"]


def test_fetch_reports_a_file_it_cannot_write(tmp_path, dense, monkeypatch):
    store, cache = _published(tmp_path)

    def full(path, chunks):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("lib.cache_view.write_chunks", full)
    res = snapshot.fetch(store, "f", cache)
    assert res["changed"] and res["vectors"] == "failed" and "No space left" in res["vectors_error"]
    assert os.path.exists(cache)  # the snapshot itself is in place


def test_warm_up_on_another_thread_leaves_the_reader_to_the_serving_thread(tmp_path, dense, monkeypatch):
    path = _cached(tmp_path)
    cold = SnapshotReader(path).search("docker fails", 5)
    reader = SnapshotReader(path)
    out = {}
    worker = threading.Thread(target=lambda: out.update(reader.warm_up()))
    worker.start()
    worker.join(120)
    assert out["warmed"] is True and "mapped from the vector file" in out["reason"]
    monkeypatch.setattr(vector_file, "load", lambda *a, **k: pytest.fail("mapped twice"))
    assert reader.search("docker fails", 5) == cold  # same connection, same index, now on this thread


def test_warm_up_without_a_vector_file_reads_the_snapshot(tmp_path, dense):
    path = _cached(tmp_path)
    os.unlink(snapshot_vectors_path(path))
    out = SnapshotReader(path).warm_up()
    assert out["warmed"] is True and "read from the snapshot" in out["reason"]


def test_warm_up_of_nothing_raises_unavailable(tmp_path):
    with pytest.raises(memory_index.Unavailable):
        SnapshotReader(os.path.join(tmp_path, "absent.bin")).warm_up()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000), flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                                                    max_size=8))
def test_a_damaged_file_is_mapped_or_refused_never_a_crash(tmp_path_factory, cut, flips):
    base = tmp_path_factory.mktemp("fuzz")
    path = os.path.join(base, "snapshot.bin")
    with open(path, "wb") as fh:
        fh.write(snapshot.build("f", [], _rows(40)))
    side = snapshot_vectors_path(path)
    vector_file.write(path, "b" * 64, side)
    data = bytearray(open(side, "rb").read())
    for pos, byte in flips:
        data[pos % len(data)] = byte
    data = data[: len(data) - cut % len(data)]
    with open(side, "wb") as fh:
        fh.write(bytes(data))
    st_ = os.stat(path)
    try:
        m = vector_file.load(side, [st_.st_size, st_.st_mtime_ns, st_.st_ino], EID)
    except (vector_file.Corrupt, vector_file.Stale):
        return
    assert (m.matrix if m.matrix is not None else m.lead).shape[0] == len(m.ids) == len(m.subject_codes)
