"""Redaction benchmark: recall and false-positive rate per rule family, and the 1 MiB budget.

Usage: ``python bench/redact_corpus.py [--n 300] [--seed 0] [--runs 15] [--json]``

Corpus (no network, nothing downloaded; no suitable labelled corpus ships on PyPI — the
``detect-secrets`` and ``whispers`` wheels carry rules but no test data):

* **positives** — ``tests/redact/secrets_corpus.py``: realistic fake tokens generated with a
  seeded RNG in each provider's documented format (prefix, alphabet, length, checksum), placed
  in realistic carriers (env lines, JSON, headers, URLs, JSON-escaped files). A case counts as
  recalled when its secret part does not survive ``scrub``.
* **negatives** — every line of real tool input/output in ``tests/fixtures/claude-transcripts``,
  every prose field of those transcripts, reference spec §6's must-stay-clean list, and the
  hard negatives of ``tests/redact/negatives.py`` (lock-file hashes, image payloads, minified
  JS, ids, long paths, test names, placeholder assignments). A negative is a false positive when
  ``scrub`` changes it. Fields already judged by eye (``JUDGED_HITS``) are reported separately.

Timing: ``scrub`` over 1 MiB of real tool output from the fixtures, median of ``--runs`` runs
(wall and CPU time), against the DESIGN.md §12 budget (≤ 20 ms wall). Exit code 0 when within
budget, 1 otherwise. On a loaded machine the wall median inflates; the CPU median and the
printed load average tell how much.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from lib import redact  # noqa: E402
from tests.redact import secrets_corpus  # noqa: E402
from tests.redact.fixture_text import JUDGED_HITS, iter_fields, tool_output_sample  # noqa: E402
from tests.redact.negatives import MUST_STAY_CLEAN, hard_negatives  # noqa: E402

BUDGET_MS = 20.0


def recall(n: int, seed: int) -> dict:
    """Family → {n, recalled, recall, statuses, misses (first 3 texts)}."""
    out: dict = {}
    for family in secrets_corpus.FAMILIES:
        rows = secrets_corpus.cases(family, n, seed)
        hit = 0
        statuses: collections.Counter = collections.Counter()
        misses = []
        for case in rows:
            text, oc = redact.scrub(case.text, is_tool_output=case.field == "tool")
            statuses[oc.status] += 1
            if case.secret not in text:
                hit += 1
            elif len(misses) < 3:
                misses.append(case.text[:160])
        out[family] = {"n": len(rows), "recalled": hit, "recall": hit / len(rows),
                       "statuses": dict(statuses), "misses": misses}
    return out


def known_limits(n: int, seed: int) -> dict:
    """Secrets the rules miss by design, measured so the trade stays visible (not in tests).

    * ``hex_key_no_context`` — 32-hex keys (Datadog-style) with a name the rules do not know:
      pure hex is never an entropy hit (git SHAs and digests are hex);
    * ``lower_alnum_32_tool`` — 32-char ``[a-z0-9]`` tokens in tool output (entropy ~4.3 and
      often judged "wordy");
    * ``letters_only_password`` — ``password: <letters>``: letters-only values are treated as
      placeholders (``changeme``, ``your_password_here``);
    * ``random_token_in_prose`` — a bare random token in a prompt: entropy applies to tool
      fields only.
    """
    import random
    import string
    rng = random.Random(f"limits:{seed}")
    alnum = string.ascii_letters + string.digits
    gens = {
        "hex_key_no_context": (lambda: "".join(rng.choice("0123456789abcdef") for _ in range(32)),
                               lambda s: f"DD_API_KEY={s}", True),
        "lower_alnum_32_tool": (lambda: "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(32)),
                                lambda s: f'{{"token": "{s}"}}', True),
        "letters_only_password": (lambda: "".join(rng.choice(string.ascii_letters) for _ in range(14)),
                                  lambda s: f"password: {s}", False),
        "random_token_in_prose": (lambda: "".join(rng.choice(alnum) for _ in range(40)),
                                  lambda s: f"use this key: {s} thanks", False),
    }
    out = {}
    for name, (secret, carrier, tool) in gens.items():
        hit = 0
        for _ in range(n):
            sec = secret()
            if sec not in redact.scrub(carrier(sec), is_tool_output=tool)[0]:
                hit += 1
        out[name] = {"n": n, "recalled": hit, "recall": hit / n}
    return out


def false_positives(seed: int, n: int) -> dict:
    """Negative category → {n, fp, rate, rules (Counter of rules fired), examples}."""
    cats: dict = collections.defaultdict(lambda: {"n": 0, "fp": 0, "rules": collections.Counter(), "examples": []})

    def check(cat, text, tool):
        row = cats[cat]
        row["n"] += 1
        out, oc = redact.scrub(text, is_tool_output=tool)
        if oc.status != "clean":
            row["fp"] += 1
            row["rules"].update(oc.rules)
            if len(row["examples"]) < 3:
                row["examples"].append(text[:160])

    for f in iter_fields():
        judged = (f.file, f.line, f.field) in JUDGED_HITS
        if f.is_tool:
            for line in f.text.split("\\n" if f.field == "tool.input" else "\n"):
                if len(line) >= 8:
                    check("fixture_tool_lines_judged" if judged else "fixture_tool_lines", line, True)
        else:
            check("fixture_prose_fields", f.text, False)
    for text in MUST_STAY_CLEAN:
        check("must_stay_clean", text, True)
    for cat, items in hard_negatives(seed, n).items():
        for text in items:
            check("hard:" + cat, text, True)
    for row in cats.values():
        row["rate"] = row["fp"] / row["n"] if row["n"] else 0.0
        row["rules"] = dict(row["rules"])
    return dict(cats)


def timing(runs: int) -> dict:
    """Median / min / max ms of scrub over 1 MiB of fixture tool output (tool and prose mode)."""
    sample = tool_output_sample(1 << 20)
    res = {"bytes": len(sample.encode("utf-8")), "runs": runs}
    for label, tool in (("tool_output", True), ("prose", False)):
        redact.scrub(sample, tool)  # warm up
        ts, cpu = [], []
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            redact.scrub(sample, tool)
            ts.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        res[label] = {"median_ms": statistics.median(ts), "min_ms": min(ts), "max_ms": max(ts),
                      "cpu_median_ms": statistics.median(cpu)}
    res["budget_ms"] = BUDGET_MS
    res["within_budget"] = res["tool_output"]["median_ms"] <= BUDGET_MS
    return res


def main(argv=None, out=sys.stdout) -> int:
    """Run the benchmark; print a table (or JSON with ``--json``). Returns 0 within budget."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="positive cases per family (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=15, help="timing runs (default 15)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rec = recall(args.n, args.seed)
    lim = known_limits(args.n, args.seed)
    fps = false_positives(args.seed, max(50, args.n // 3))
    tim = timing(args.runs)
    if args.json:
        json.dump({"recall": rec, "known_limits": lim, "false_positives": fps, "timing": tim}, out, indent=2)
        out.write("\n")
        return 0 if tim["within_budget"] else 1
    w = out.write
    w("recall per rule family (secret part absent from the output)\n")
    tot_n = tot_hit = 0
    for fam, row in rec.items():
        tot_n += row["n"]
        tot_hit += row["recalled"]
        w(f"  {fam:24s} {row['recalled']:5d}/{row['n']:<5d} {row['recall']:7.2%}  {row['statuses']}\n")
        for m in row["misses"]:
            w(f"      miss: {m!r}\n")
    w(f"  {'ALL':24s} {tot_hit:5d}/{tot_n:<5d} {tot_hit / tot_n:7.2%}\n")
    w("  (the corpus was written together with the rules: read 100 % as 'every documented\n"
      "   format is covered', not as field recall; the known limits below are misses by design)\n\n")
    w("known limits (by design; see known_limits())\n")
    for name, row in lim.items():
        w(f"  {name:24s} {row['recalled']:5d}/{row['n']:<5d} {row['recall']:7.2%}\n")
    w("\n")
    w("false positives per negative category (text changed by scrub)\n")
    for cat, row in sorted(fps.items()):
        w(f"  {cat:28s} {row['fp']:5d}/{row['n']:<6d} {row['rate']:7.2%}  {row['rules'] or ''}\n")
        for ex in row["examples"]:
            w(f"      e.g. {ex!r}\n")
    neg_n = sum(r["n"] for c, r in fps.items() if not c.endswith("_judged"))
    neg_fp = sum(r["fp"] for c, r in fps.items() if not c.endswith("_judged"))
    w(f"  {'ALL (excluding judged)':28s} {neg_fp:5d}/{neg_n:<6d} {neg_fp / neg_n:7.3%}\n\n")
    t = tim
    w(f"scrub over {t['bytes']} bytes of fixture tool output, {t['runs']} runs\n")
    for label in ("tool_output", "prose"):
        r = t[label]
        w(f"  {label:12s} median {r['median_ms']:6.2f} ms  (min {r['min_ms']:.2f}, max {r['max_ms']:.2f}; "
          f"CPU median {r['cpu_median_ms']:.2f} ms)\n")
    if os.getloadavg()[0] > (os.cpu_count() or 1) * 0.5:
        w(f"  note: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs — wall times are inflated\n")
    w(f"  budget {t['budget_ms']:.0f} ms: {'OK' if t['within_budget'] else 'OVER'}\n")
    return 0 if t["within_budget"] else 1


if __name__ == "__main__":
    sys.exit(main())
