#!/usr/bin/env python3
"""Retrieval quality of ``memory_search``, measured (DESIGN.md §10, issue #7).

Builds a labelled set from the fixture sessions — hand-written facts about them with
paraphrased queries (``bench/data/memory_eval_set.py``) plus distractor claims generated from
every shell command the fixture transcripts ran — and negative queries with no right answer.
For three rankings (FTS5 only; hash256-v1 + FTS5; WordLlama + FTS5) it builds a real snapshot
(:func:`lib.snapshot.build`) and queries it through :class:`lib.memory_index.SnapshotReader`,
printing Recall@5, MRR@10 and the false-positive rate on negative queries. It then calibrates
the semantic relevance floor: the smallest cosine above every negative query's best cosine,
and compares it with the floor maint stamps into ``snapshot_meta`` (``lib.embed.RELEVANCE_FLOORS``).

    python bench/memory_eval.py
"""
from __future__ import annotations

import glob
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench", "data"))

from lib import claims as claimsmod  # noqa: E402
from lib import embed, snapshot  # noqa: E402
from lib.memory_index import SnapshotReader  # noqa: E402
import memory_eval_set as dataset  # noqa: E402


def distractors() -> list[tuple[str, str, str]]:
    """(claim, type, subject) for every distinct shell command in the fixture transcripts."""
    from lib.digest import digest
    from lib.importers.claude_code import parse_file

    out, seen = [], set()
    for f in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "claude-transcripts", "*.jsonl"))):
        by_session, _, _ = parse_file(f, fleet_id="eval", agent_id="eval")
        for envs in by_session.values():
            d = digest(envs)
            for c in d["commands"]:
                cmd = " ".join(c["command"].split())[:160]
                if c["tool"] in ("Bash", "Shell", "terminal") and cmd not in seen:
                    seen.add(cmd)
                    verb = "failed" if c["exit_code"] else "succeeded"
                    out.append((f"In {d['repo']}, `{cmd}` {verb}", "outcome", f"{d['repo']} commands"))
    return out


def build(rows_spec, embedder) -> str:
    rows = []
    for text, ctype, subject in rows_spec:
        cid = claimsmod.claim_id(ctype, text)
        row = {"claim_id": cid, "claim": text, "claim_type": ctype, "subject": subject, "status": "promoted",
               "confidence": 0.8, "observed_by": "eval", "observed_at": "2026-11-29", "independent_sessions": 2,
               "evidence": [], "visible_to_agents": 1}
        if embedder:
            eid, fn = embedder
            row["embedding"] = embed.to_blob(fn(text))
            row["embedder"] = eid
        rows.append(row)
    meta = {"embedder": embedder[0] if embedder else "none"}
    if embedder and embedder[0] in embed.RELEVANCE_FLOORS:
        meta["relevance_floor"] = embed.RELEVANCE_FLOORS[embedder[0]]
        meta["relevance_floor_mixed"] = embed.RELEVANCE_FLOORS_MIXED[embedder[0]]
    data = snapshot.build("eval", [], rows, meta=meta)
    fd, path = tempfile.mkstemp(suffix=".sqlite")
    os.write(fd, data)
    os.close(fd)
    return path


def evaluate(path: str, k: int = 5) -> dict:
    reader = SnapshotReader(path)
    recall = rr = 0.0
    n = 0
    for text, ctype, _subject, queries in dataset.TARGETS:
        want = claimsmod.claim_id(ctype, text)
        for q in queries:
            n += 1
            hits = [h["claim_id"] for h in reader.search(q, 10)["hits"]]
            if want in hits[:k]:
                recall += 1
            if want in hits:
                rr += 1.0 / (hits.index(want) + 1)
    fp = sum(1 for q in dataset.NEGATIVES if reader.search(q, k)["hits"])
    reader.close()
    return {"recall@5": recall / n, "mrr@10": rr / n, "neg_fp_rate": fp / len(dataset.NEGATIVES), "queries": n}


def calibrate(spec, fn) -> dict:
    """Best cosine of each negative query over all claims, and each positive query's cosine to its target."""
    vecs = [fn(t) for t, _, _ in spec]

    def cos(a, b):
        return sum(x * y for x, y in zip(a, b))

    neg = sorted(max(cos(fn(q), v) for v in vecs) for q in dataset.NEGATIVES)
    pos = []
    for text, ctype, _s, queries in dataset.TARGETS:
        tv = fn(text)
        pos += [cos(fn(q), tv) for q in queries]
    return {"neg_max": neg[-1], "neg_p95": neg[int(0.95 * (len(neg) - 1))],
            "pos_above_neg_max": sum(1 for p in pos if p > neg[-1]) / len(pos)}


def main() -> int:
    spec = [(t, c, s) for t, c, s, _ in dataset.TARGETS] + distractors()
    print(f"claims: {len(spec)} ({len(dataset.TARGETS)} targets + {len(spec) - len(dataset.TARGETS)} distractors "
          f"from fixture commands); positive queries: {sum(len(t[3]) for t in dataset.TARGETS)}; "
          f"negative queries: {len(dataset.NEGATIVES)}")
    modes = [("FTS5 only", None), ("hash256-v1 + FTS5", (embed.HASH_EMBEDDER_ID, embed.hash_embed))]
    if embed.WORDLLAMA_ID in embed.EMBEDDERS:
        modes.append(("WordLlama + FTS5", (embed.WORDLLAMA_ID, embed.wordllama_embed)))
    else:
        print("WordLlama not installed: its row is skipped")
    print(f"{'ranking':<20} {'Recall@5':>9} {'MRR@10':>8} {'neg FP':>7}")
    for name, emb in modes:
        path = build(spec, emb)
        try:
            r = evaluate(path)
        finally:
            os.unlink(path)
        print(f"{name:<20} {r['recall@5']:>9.3f} {r['mrr@10']:>8.3f} {r['neg_fp_rate']:>7.3f}")
    if embed.WORDLLAMA_ID in embed.EMBEDDERS:
        cal = calibrate(spec, embed.wordllama_embed)
        suggested = round(cal["neg_max"] + 0.01, 2)
        stored = embed.RELEVANCE_FLOORS.get(embed.WORDLLAMA_ID)
        print(f"WordLlama cosine: negatives' best match max {cal['neg_max']:.3f} (p95 {cal['neg_p95']:.3f}); "
              f"{cal['pos_above_neg_max']:.0%} of positive queries score above it with their target")
        print(f"calibrated relevance floor {suggested:.2f}; stored in lib.embed.RELEVANCE_FLOORS: {stored}"
              f" — {'in step' if stored is not None and abs(stored - suggested) <= 0.02 else 'update it'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
