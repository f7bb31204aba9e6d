#!/usr/bin/env python3
"""What embedding costs a maintenance pass, with and without the cache across snapshots
(docs/memory.md "Embeddings are computed once per claim").

On a ``file://`` store it writes ``--claims`` proposed claims (the text of LoCoMo observations when
the dataset is present, else the fixture commands of ``bench/memory_eval.py``), then runs, the way
``maint.py`` runs them, the gate with the default embedder (:func:`lib.memory.gate.run`), the snapshot
build and the publish:

1. a first pass with nothing published yet: every claim is embedded;
2. ``--new`` more claims are proposed, then two second passes interleaved in one run: with the
   published snapshot's embeddings (:func:`lib.memory.snapshot.previous_embeddings`, what maint does)
   and without them (every claim embedded again, what maint did before the cache).

Prints seconds (wall and CPU) per pass, claims embedded, and the cost per 1,000 claims.

    python bench/maint_embedding.py [--claims 1000] [--new 50]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

FLEET = "bench"


def texts(n: int) -> list[str]:
    """``n`` distinct real claim texts: LoCoMo observations, else fixture commands (repeated with a suffix)."""
    import memory_eval

    if os.path.exists(memory_eval.LOCOMO):
        obs, _ = memory_eval.locomo_set()
        pool = list(dict.fromkeys(o[1] for o in obs))
    else:
        pool = [t for t, _, _ in memory_eval.distractors()]
    return [pool[i % len(pool)] + ("" if i < len(pool) else f" (#{i // len(pool)})") for i in range(n)]


def propose(store, claim_texts: list[str]) -> None:
    from lib.memory import claims

    for i, text in enumerate(claim_texts):
        claims.write_event(store, FLEET, "bench", {
            "kind": "proposed", "claim_id": claims.claim_id("environment", text), "claim": text,
            "claim_type": "environment", "subject": "bench", "observed_by": "bench",
            "observed_at": "2026-11-29T12:00:00.000Z", "evidence": [{"session_id": f"s{i}", "message_id": f"m{i}"}]})


def one_pass(store, emb, use_cache: bool, publish: bool) -> dict:
    """Gate + snapshot build (+ publish), as maint runs them; returns timings and counts."""
    from lib.memory import gate, snapshot

    t, c = time.perf_counter(), time.process_time()
    cached = snapshot.previous_embeddings(store, FLEET, emb[0]) if use_cache else {}
    result = gate.run(store, FLEET, [], embedder=emb, cached=cached)
    data = snapshot.build(FLEET, [], result["claims"], meta={"embedder": emb[0]})
    if publish:
        epoch = snapshot.pointer_epoch(store, FLEET) + 1
        snapshot.publish(store, FLEET, data, maint_epoch=epoch, built_at="2026-11-29T12:00:00Z",
                         claim_count=len(result["claims"]), session_count=0)
    return {"wall": time.perf_counter() - t, "cpu": time.process_time() - c, "claims": len(result["claims"]),
            "embedded": result["embedded"], "reused": result["embeddings_reused"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/maint_embedding.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--claims", type=int, default=1000, help="claims before the second pass (default 1000)")
    p.add_argument("--new", type=int, default=50, help="claims proposed between the passes (default 50)")
    args = p.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from lib.memory import embed
    from lib.store import open_store

    emb = embed.default_embedder()
    all_texts = texts(args.claims + args.new)
    root = tempfile.mkdtemp(prefix="ctxlake-bench-embed-")
    try:
        store = open_store("file://" + root)
        propose(store, all_texts[:args.claims])
        first = one_pass(store, emb, use_cache=True, publish=True)
        propose(store, all_texts[args.claims:])
        cached = one_pass(store, emb, use_cache=True, publish=False)
        uncached = one_pass(store, emb, use_cache=False, publish=False)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench/maint_embedding.py — embedder {emb[0]}, {os.cpu_count()} CPUs, load average {load:.1f}")
    print(f"  {'pass':<44} {'claims':>7} {'embedded':>9} {'reused':>7} {'wall s':>7} {'CPU s':>7} {'CPU s / 1,000 claims':>21}")
    for name, r in (("first pass (nothing published)", first), (f"second pass, +{args.new} claims, cache", cached),
                    (f"second pass, +{args.new} claims, no cache", uncached)):
        print(f"  {name:<44} {r['claims']:>7} {r['embedded']:>9} {r['reused']:>7} {r['wall']:>7.1f} {r['cpu']:>7.1f} "
              f"{r['cpu'] / r['claims'] * 1000:>21.1f}")
    print(f"  the cache makes the second pass {uncached['cpu'] / max(cached['cpu'], 1e-9):.1f}× cheaper in CPU "
          f"({uncached['cpu'] - cached['cpu']:.1f} s saved)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
