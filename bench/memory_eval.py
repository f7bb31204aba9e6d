#!/usr/bin/env python3
"""Retrieval quality of ``memory_search``, measured (docs/design.md §10, issue #7).

Builds a labelled set from the fixture sessions — hand-written facts about them with
paraphrased queries (``bench/data/memory_eval_set.py``) plus distractor claims generated from
every shell command the fixture transcripts ran — and negative queries with no right answer.
For three rankings (FTS5 only; hash256-v1 + FTS5; WordLlama + FTS5) it builds a real snapshot
(:func:`lib.memory.snapshot.build`) and queries it through :class:`lib.memory.memory_index.SnapshotReader`,
printing Recall@5, MRR@10 and the false-positive rate on negative queries. It then calibrates
the semantic relevance floor: the smallest cosine above every negative query's best cosine,
and compares it with the floor maint stamps into ``snapshot_meta`` (``lib.memory.embed.RELEVANCE_FLOORS``).

    python bench/memory_eval.py            # both sets
    python bench/memory_eval.py --locomo   # LoCoMo only
"""
from __future__ import annotations

import glob
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench", "data"))

from lib.memory import claims as claimsmod  # noqa: E402
from lib.memory import embed, snapshot  # noqa: E402
from lib.memory.memory_index import SnapshotReader  # noqa: E402
import memory_eval_set as dataset  # noqa: E402


def distractors() -> list[tuple[str, str, str]]:
    """(claim, type, subject) for every distinct shell command in the fixture transcripts."""
    from lib.memory.digest import digest
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
    """A real snapshot (:func:`lib.memory.snapshot.build`) of ``rows_spec``: ``(claim, type, subject)`` or
    ``(claim, type, subject, observed_at)`` each, as promoted agent-visible claims; its path."""
    rows = []
    for text, ctype, subject, *when in rows_spec:
        cid = claimsmod.claim_id(ctype, text)
        row = {"claim_id": cid, "claim": text, "claim_type": ctype, "subject": subject, "status": "promoted",
               "confidence": 0.8, "observed_by": "eval", "observed_at": when[0] if when else "2026-11-29",
               "independent_sessions": 2,
               "evidence": [], "visible_to_agents": 1}
        rows.append(row)
    if embedder:  # batched like maint (lib.memory.gate.embed_claims)
        eid, _fn = embedder
        for row, vec in zip(rows, embed.embed_many(eid, [r["claim"] for r in rows])):
            row["embedding"] = embed.to_blob(vec, len(vec))
            row["embedder"] = eid
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

    neg = sorted(max(cos(qv, v) for v in vecs) for qv in map(fn, dataset.NEGATIVES))  # each query embedded once
    pos = []
    for text, ctype, _s, queries in dataset.TARGETS:
        tv = fn(text)
        pos += [cos(fn(q), tv) for q in queries]
    return {"neg_max": neg[-1], "neg_p95": neg[int(0.95 * (len(neg) - 1))],
            "pos_above_neg_max": sum(1 for p in pos if p > neg[-1]) / len(pos)}


LOCOMO = os.environ.get("CTXLAKE_LOCOMO") or os.path.join(os.path.dirname(ROOT), "shared", "datasets", "locomo",
                                                           "locomo10.json")
"""LoCoMo (Maharana et al., ACL 2024, CC BY-NC 4.0: evaluation only, read from the shared datasets
folder, never copied into this repository)."""


def locomo_set(path: str = LOCOMO) -> tuple[list, list]:
    """Pooled LoCoMo: ``(observations, questions)``. Each observation is one claim
    ``(claim_id, text, speaker, observed_at)`` (speaker = subject; observed_at = the ISO time of
    the conversation session it was observed in, as a claim's is the time of the session that
    observed it); each question is ``(text, category, {claim_id of every observation its
    evidence dialog ids point at}, conversation index)``. Category 5 questions are adversarial:
    built on the wrong person, with no right answer in the conversation."""
    import datetime
    import json

    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    obs, qs = [], []
    for ci, conv in enumerate(data):
        by_dialog: dict = {}
        for key, per in conv["observation"].items():
            session = key.removesuffix("_observation")  # session_3_observation → session_3_date_time
            when = datetime.datetime.strptime(conv["conversation"][f"{session}_date_time"], "%I:%M %p on %d %B, %Y")
            for speaker, items in per.items():
                for text, dia in items:
                    cid = claimsmod.claim_id("environment", text)
                    obs.append((cid, text, speaker, when.isoformat()))
                    for d in (dia if isinstance(dia, list) else [dia]):
                        by_dialog.setdefault((ci, d), []).append(cid)
        for q in conv["qa"]:
            ev = {c for d in q.get("evidence", []) for c in by_dialog.get((ci, d), [])}
            qs.append((q["question"], q["category"], ev, ci))
    return obs, qs


def locomo_build(obs, embedder) -> str:
    """A real snapshot of the pooled observations as promoted claims (subject = speaker)."""
    seen, spec = set(), []
    for cid, text, speaker, when in obs:
        if cid not in seen:
            seen.add(cid)
            spec.append((text, "environment", speaker, when))
    return build(spec, embedder)


def locomo_fts_baseline(obs, qs) -> dict:
    """The plain baseline: SQLite FTS5 bm25 (``porter unicode61``) over claim text and subject,
    query terms OR-joined, top 10, no floor — what a team would get from FTS5 alone."""
    import sqlite3

    from lib.memory.memory_index import match_expr, query_terms

    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(cid UNINDEXED, claim, subject, tokenize='porter unicode61')")
    db.executemany("INSERT INTO f VALUES (?, ?, ?)", [o[:3] for o in obs])
    subject = {o[0]: o[2].lower() for o in obs}

    def search(q):
        m = match_expr(query_terms(q))
        return [r[0] for r in db.execute("SELECT cid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 10", (m,))] if m else []
    return locomo_score(search, qs, lambda q, hits: any(subject.get(h) not in _names(q, subject) for h in hits))


def _names(q: str, subject: dict) -> set:
    people = set(subject.values())
    return {w for w in embed.word_tokens(q) if w in people}


def locomo_score(search, qs, wrong_person) -> dict:
    """hit@5, MRR@10, R@10 per category over the questions with evidence, and for the
    adversarial ones the share answered at all and the share answered with another person's
    claim (``wrong_person(question, hits)``); p50/p95 latency in ms."""
    import time

    hit5 = rr = r10 = n = 0
    per_cat: dict = {}
    adv = adv_any = adv_wrong = 0
    lat = []
    for q, cat, ev, *_ in qs:
        t = time.perf_counter()
        hits = search(q)
        lat.append((time.perf_counter() - t) * 1000)
        if cat == 5:
            adv += 1
            adv_any += bool(hits)
            adv_wrong += bool(hits) and wrong_person(q, hits)
            continue
        if not ev:
            continue
        n += 1
        ranks = [i for i, h in enumerate(hits[:10]) if h in ev]
        c = per_cat.setdefault(cat, [0, 0])
        c[1] += 1
        if ranks and ranks[0] < 5:
            hit5 += 1
            c[0] += 1
        if ranks:
            rr += 1 / (ranks[0] + 1)
            r10 += 1
    lat.sort()
    return {"questions": n, "hit@5": hit5 / n, "mrr@10": rr / n, "r@10": r10 / n,
            "per_category": {k: v[0] / v[1] for k, v in sorted(per_cat.items())},
            "adversarial": adv, "adv_any": adv_any / adv, "adv_wrong_person": adv_wrong / adv,
            "p50_ms": lat[len(lat) // 2], "p95_ms": lat[int(0.95 * (len(lat) - 1))]}


TUNE_CONVERSATIONS = range(0, 5)
"""LoCoMo conversations whose questions tune the fusion weight; the other five are held out and
reported. The index always pools all ten conversations' observations."""
ALPHAS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
ALPHA_TOLERANCE = 0.005
"""hit@5 + MRR@10 the best α of the sweep must beat the shipped α by before the eval says to change it."""


def _memoized(eid: str):
    """The embedder ``eid`` with its query vectors memoized (the α sweep asks each question once
    per α; the reported rows use the real, unmemoized embedder)."""
    import functools

    return functools.lru_cache(maxsize=None)(embed.EMBEDDERS[eid])


def tune_alpha(reader, qs, subject, eid) -> tuple[float, list]:
    """``(best α, [(α, hit@5, MRR@10), ...])`` over :data:`ALPHAS` on ``qs`` (the tuning split),
    best by hit@5 + MRR@10, ties to the smaller α; the shipped α when it is within
    :data:`ALPHA_TOLERANCE` of the best."""
    from lib.memory import memory_index

    real = embed.EMBEDDERS[eid]
    saved = memory_index.FUSION_ALPHAS.get(eid)
    embed.EMBEDDERS[eid] = _memoized(eid)
    curve = []
    try:
        for a in ALPHAS:
            memory_index.FUSION_ALPHAS[eid] = a
            r = locomo_score(lambda q: [h["claim_id"] for h in reader.search(q, 10)["hits"]], qs,
                             lambda q, hits: any(subject.get(h) not in reader.named_in(q) for h in hits))
            curve.append((a, r["hit@5"], r["mrr@10"]))
    finally:
        embed.EMBEDDERS[eid] = real
        if saved is None:
            memory_index.FUSION_ALPHAS.pop(eid, None)
        else:
            memory_index.FUSION_ALPHAS[eid] = saved
    best = max(curve, key=lambda c: (round(c[1] + c[2], 6), -c[0]))
    mine = [c for c in curve if saved is not None and abs(c[0] - saved) < 1e-9]
    if mine and best[1] + best[2] - (mine[0][1] + mine[0][2]) <= ALPHA_TOLERANCE:
        return saved, curve  # a flat curve: no reason to move the shipped α
    return best[0], curve


SCORE_FLOORS = (0.0, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60)
"""Fused-score floors of the adversarial trade-off curve (:func:`floor_curve`)."""


def _curve_point(answers) -> tuple[float, float, float]:
    """``(hit@5, MRR@10, adversarial answered at all)`` of ``answers``: ``(category, evidence,
    [claim_id, ...])`` per question, as :func:`locomo_score` counts them."""
    n = h5 = rr = adv = adv_any = 0
    for cat, ev, hits in answers:
        if cat == 5:
            adv += 1
            adv_any += bool(hits)
            continue
        if not ev:
            continue
        n += 1
        ranks = [i for i, h in enumerate(hits) if h in ev]
        h5 += bool(ranks) and ranks[0] < 5
        rr += 1 / (ranks[0] + 1) if ranks else 0.0
    return h5 / n, rr / n, adv_any / adv


def floor_curve(reader, questions) -> list[tuple[float, float, float, float]]:
    """The adversarial trade-off of a score-calibrated relevance floor: for each floor of
    :data:`SCORE_FLOORS`, ``(floor, hit@5, MRR@10, adversarial answered at all)`` when hits whose
    ``score`` is below it are dropped. A floor only removes hits, never reorders them, so one
    search per question gives the whole curve."""
    res = [(cat, ev, [(h["claim_id"], h["score"]) for h in reader.search(q, 10)["hits"]]) for q, cat, ev, *_ in questions]
    return [(f, *_curve_point((cat, ev, [c for c, s in scored if s >= f]) for cat, ev, scored in res)) for f in SCORE_FLOORS]


WRONG_PERSON_MARGINS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
"""Margins of the wrong-person trade-off curve (:func:`margin_curve`)."""


def margin_curve(reader, questions) -> list[tuple[float, float, float, float]]:
    """The adversarial trade-off of :func:`lib.memory.memory_index.wrong_person_margin`: for no margin
    (``inf``) and each of :data:`WRONG_PERSON_MARGINS`, ``(margin, hit@5, MRR@10, adversarial
    answered at all)``. One search per question with the margin off gives the whole curve: a
    margin only empties the answers whose ``wrong_person_margin`` exceeds it."""
    from lib.memory import memory_index

    saved = memory_index.WRONG_PERSON_MARGIN, dict(memory_index.WRONG_PERSON_MARGINS)
    memory_index.WRONG_PERSON_MARGIN = float("inf")
    memory_index.WRONG_PERSON_MARGINS.clear()
    try:
        res = []
        for q, cat, ev, *_ in questions:
            out = reader.search(q, 10)
            res.append((cat, ev, out.get("wrong_person_margin"), [h["claim_id"] for h in out["hits"]]))
    finally:
        memory_index.WRONG_PERSON_MARGIN = saved[0]
        memory_index.WRONG_PERSON_MARGINS.update(saved[1])
    return [(m, *_curve_point((cat, ev, [] if margin is not None and margin > m else found)
                              for cat, ev, margin, found in res)) for m in (float("inf"),) + WRONG_PERSON_MARGINS]


def lossless_margin(curve) -> float:
    """The smallest margin of :func:`margin_curve`'s ``curve`` whose hit@5 and MRR@10 equal the
    curve's without a margin (its first point): the point chosen on the tuning split."""
    _, h0, r0, _ = curve[0]
    return min((m for m, h, r, _ in curve if h >= h0 - 1e-9 and r >= r0 - 1e-9), default=curve[0][0])


def locomo(modes) -> None:
    """Print the LoCoMo table: the FTS5 baseline, then each product ranking through
    :class:`lib.memory.memory_index.SnapshotReader` (the code ``memory_search`` runs) — on all
    questions, and for semantic embedders α tuned on :data:`TUNE_CONVERSATIONS` and reported on
    the held-out conversations, each beside the baseline on the same questions."""
    from lib.memory import memory_index

    if not os.path.exists(LOCOMO):
        print(f"LoCoMo not found at {LOCOMO} (set CTXLAKE_LOCOMO): its table is skipped")
        return
    obs, qs = locomo_set()
    tune = [q for q in qs if q[3] in TUNE_CONVERSATIONS]
    held = [q for q in qs if q[3] not in TUNE_CONVERSATIONS]
    print(f"\nLoCoMo pooled: {len(set(o[0] for o in obs))} observations as claims, "
          f"{sum(1 for q in qs if q[1] != 5 and q[2])} questions with evidence, {sum(1 for q in qs if q[1] == 5)} adversarial; "
          f"tuning split: conversations {TUNE_CONVERSATIONS.start}-{TUNE_CONVERSATIONS.stop - 1} "
          f"({sum(1 for q in tune if q[1] != 5 and q[2])} questions), held out: the other "
          f"{len(set(q[3] for q in held))} ({sum(1 for q in held if q[1] != 5 and q[2])} questions)")
    head = f"{'ranking':<44} {'hit@5':>6} {'MRR@10':>7} {'R@10':>6} {'adv any':>8} {'adv wrong':>10} {'p95 ms':>7}  per category (hit@5)"
    print(head)

    def row(name, r):
        cats = " ".join(f"{k}:{v:.2f}" for k, v in r["per_category"].items())
        print(f"{name:<44} {r['hit@5']:>6.3f} {r['mrr@10']:>7.3f} {r['r@10']:>6.3f} {r['adv_any']:>8.3f} "
              f"{r['adv_wrong_person']:>10.3f} {r['p95_ms']:>7.1f}  {cats}")
    row("FTS5 porter, OR-joined (baseline), all", locomo_fts_baseline(obs, qs))
    row("FTS5 porter, OR-joined (baseline), held out", locomo_fts_baseline(obs, held))
    subject = {o[0]: o[2].lower() for o in obs}
    for name, emb in modes:
        t = time.perf_counter()
        path = locomo_build(obs, emb)
        build_s = time.perf_counter() - t
        reader = SnapshotReader(path)

        def score(questions):
            return locomo_score(lambda q: [h["claim_id"] for h in reader.search(q, 10)["hits"]], questions,
                                lambda q, hits: any(subject.get(h) not in reader.named_in(q) for h in hits))
        try:
            row("ctxlake: " + name + ", all", score(qs))
            if emb and emb[0] not in embed.LEXICAL:
                eid = emb[0]
                shipped = memory_index.fusion_alpha(eid)
                best, curve = tune_alpha(reader, tune, subject, eid)
                print("  α sweep on the tuning split (hit@5/MRR@10): "
                      + "  ".join(f"{a:.1f}: {h:.3f}/{m:.3f}" for a, h, m in curve) + f" → best α {best:.1f}")
                row(f"ctxlake: {name}, held out, shipped α {shipped:.1f}", score(held))
                for split, questions in (("tuning", tune), ("held-out", held)):
                    print(f"  score floor on the {split} split (floor: hit@5/MRR@10/adversarial answered): "
                          + "  ".join(f"{f:.2f}: {h:.3f}/{m:.3f}/{a:.3f}" for f, h, m, a in floor_curve(reader, questions)))
                for split, questions in (("tuning", tune), ("held-out", held)):
                    curve = margin_curve(reader, questions)
                    print(f"  wrong-person margin on the {split} split (margin: hit@5/MRR@10/adversarial answered): "
                          + "  ".join(f"{m:.2f}: {h:.3f}/{r:.3f}/{a:.3f}" for m, h, r, a in curve))
                    if split == "tuning":
                        print(f"  smallest margin losing no positive on the tuning split: {lossless_margin(curve):.2f}; "
                              f"shipped lib.memory.memory_index.wrong_person_margin({eid!r}) = {memory_index.wrong_person_margin(eid):.2f}")
                if best != shipped:
                    saved = memory_index.FUSION_ALPHAS.get(eid)
                    memory_index.FUSION_ALPHAS[eid] = best
                    try:
                        row(f"ctxlake: {name}, held out, tuned α {best:.1f}", score(held))
                    finally:
                        if saved is None:
                            memory_index.FUSION_ALPHAS.pop(eid, None)
                        else:
                            memory_index.FUSION_ALPHAS[eid] = saved
                    print(f"  tuned α {best:.1f} differs from lib.memory.memory_index.FUSION_ALPHAS[{eid!r}] = {shipped:.1f}: update it")
            print(f"  snapshot build with embedding: {build_s:.1f} s for {len(set(o[0] for o in obs))} claims "
                  f"({build_s / len(set(o[0] for o in obs)) * 1000:.1f} s per 1,000)")
        finally:
            reader.close()
            os.unlink(path)
    print("adv any = adversarial questions answered at all; adv wrong = answered with a claim about someone "
          "the question does not name")


def main() -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as mcp_server.py runs it
    if "--locomo" in sys.argv[1:]:
        locomo([(n, (eid, embed.EMBEDDERS[eid])) for eid, n in ((embed.WORDLLAMA_ID, "WordLlama + FTS5"),
                                                             (embed.MINILM_ID, "MiniLM-L6 + FTS5"))
                if eid in embed.EMBEDDERS])
        return 0
    spec = [(t, c, s) for t, c, s, _ in dataset.TARGETS] + distractors()
    print(f"claims: {len(spec)} ({len(dataset.TARGETS)} targets + {len(spec) - len(dataset.TARGETS)} distractors "
          f"from fixture commands); positive queries: {sum(len(t[3]) for t in dataset.TARGETS)}; "
          f"negative queries: {len(dataset.NEGATIVES)}")
    modes = [("FTS5 only", None), ("hash256-v1 + FTS5", (embed.HASH_EMBEDDER_ID, embed.hash_embed))]
    for eid, label in ((embed.WORDLLAMA_ID, "WordLlama"), (embed.MINILM_ID, "MiniLM-L6")):
        if eid in embed.EMBEDDERS:
            modes.append((f"{label} + FTS5", (eid, embed.EMBEDDERS[eid])))
        else:
            print(f"{label} not installed: its row is skipped")
    print(f"{'ranking':<20} {'Recall@5':>9} {'MRR@10':>8} {'neg FP':>7}")
    for name, emb in modes:
        path = build(spec, emb)
        try:
            r = evaluate(path)
        finally:
            os.unlink(path)
        print(f"{name:<20} {r['recall@5']:>9.3f} {r['mrr@10']:>8.3f} {r['neg_fp_rate']:>7.3f}")
    for _name, emb in modes:
        if not emb or emb[0] in embed.LEXICAL:
            continue
        cal = calibrate(spec, emb[1])
        suggested = round(cal["neg_max"] + 0.01, 2)
        stored = embed.RELEVANCE_FLOORS.get(emb[0])
        print(f"{emb[0]} cosine: negatives' best match max {cal['neg_max']:.3f} (p95 {cal['neg_p95']:.3f}); "
              f"{cal['pos_above_neg_max']:.0%} of positive queries score above it with their target")
        print(f"calibrated relevance floor {suggested:.2f}; stored in lib.memory.embed.RELEVANCE_FLOORS: {stored}"
              f" — {'in step' if stored is not None and abs(stored - suggested) <= 0.02 else 'update it'}")
    locomo([(name, emb) for name, emb in modes if not emb or emb[0] not in embed.LEXICAL])
    return 0


if __name__ == "__main__":
    sys.exit(main())
