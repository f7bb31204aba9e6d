"""How well ``lib.memory.claims.support`` separates evidence that relates to a claim from evidence that
does not, on real agent transcripts: the measurement behind ``lib.memory.claims.SUPPORT_MIN``.

Usage: ``python bench/claim_support.py [--seed 0] [--json]``

Pairs from ``tests/fixtures/claude-transcripts`` (real Claude Code sessions, see
``tests/fixtures/NOTICE.md``): for every tool call with a result, the
claim is the first sentence (4+ content words, ≤ 240 characters) of the assistant text that
follows the result in the same session — what an agent would propose having just observed it —
and the evidence is that tool call (name, input, result) as the lake stores it.

* **related**: the claim against its own tool call. A lower bound on how often real support
  scores high: the next sentence is not always about the call just made.
* **unrelated**: the same claim against a tool call drawn (seeded) from another session, the
  forgery the gate must refuse (an agent citing any captured event for an unrelated claim).

Prints, per threshold, the share of related pairs accepted (support ≥ threshold) and the share of
unrelated pairs accepted, alone and with the gate's second test (the evidence holds every value of
the claim, ``lib.memory.claims.unsupported_values``); the chosen threshold should accept few unrelated pairs while keeping
most related ones. No budget: it informs the constant, it is not a gate.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from lib.memory import claims  # noqa: E402
from tests.memory.support_pairs import THRESHOLDS, measure  # noqa: E402


def main(argv=None, out=sys.stdout) -> int:
    """Print the accept rates per threshold (or JSON with ``--json``). Returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    m = measure(args.seed)
    rows = []
    for t in THRESHOLDS:
        rel = sum(s >= t for s in m["related"]) / max(1, len(m["related"]))
        unr = sum(s >= t for s in m["unrelated"]) / max(1, len(m["unrelated"]))
        rel_v = sum(s >= t and v for s, v in zip(m["related"], m["related_values"])) / max(1, len(m["related"]))
        unr_v = sum(s >= t and v for s, v in zip(m["unrelated"], m["unrelated_values"])) / max(1, len(m["unrelated"]))
        rows.append({"threshold": t, "related_accepted": rel, "unrelated_accepted": unr,
                     "related_accepted_with_values": rel_v, "unrelated_accepted_with_values": unr_v})
    if args.json:
        json.dump({"pairs": m["n"], "files": m["files"], "support_min": claims.SUPPORT_MIN, "rows": rows}, out, indent=2)
        out.write("\n")
        return 0
    out.write(f"{m['n']} claim/evidence pairs from {m['files']} real transcripts "
              f"(lib.memory.claims.SUPPORT_MIN = {claims.SUPPORT_MIN})\n")
    out.write("  threshold  related accepted  unrelated accepted  | and every value held: related  unrelated\n")
    for r in rows:
        mark = "  <- SUPPORT_MIN" if abs(r["threshold"] - claims.SUPPORT_MIN) < 1e-9 else ""
        out.write(f"  {r['threshold']:9.2f}  {r['related_accepted']:16.1%}  {r['unrelated_accepted']:18.1%}  |"
                  f"  {r['related_accepted_with_values']:28.1%}  {r['unrelated_accepted_with_values']:9.1%}{mark}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
