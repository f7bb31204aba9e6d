"""How well ``lib.claims.support`` separates evidence that relates to a claim from evidence that
does not, on real agent transcripts: the measurement behind ``lib.claims.SUPPORT_MIN``.

Usage: ``python bench/claim_support.py [--seed 0] [--json]``

Pairs from ``tests/fixtures/claude-transcripts`` (real Claude Code sessions, see
``tests/fixtures/NOTICE.md``) and ``/work``-independent: for every tool call with a result, the
claim is the first sentence (4+ content words, ≤ 240 characters) of the assistant text that
follows the result in the same session — what an agent would propose having just observed it —
and the evidence is that tool call (name, input, result) as the lake stores it.

* **related**: the claim against its own tool call. A lower bound on how often real support
  scores high: the next sentence is not always about the call just made.
* **unrelated**: the same claim against a tool call drawn (seeded) from another session, the
  forgery the gate must refuse (an agent citing any captured event for an unrelated claim).

Prints, per threshold, the share of related pairs accepted (support ≥ threshold) and the share of
unrelated pairs accepted; the chosen threshold should accept few unrelated pairs while keeping
most related ones. No budget: it informs the constant, it is not a gate.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from lib import claims  # noqa: E402

THRESHOLDS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40)
_SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n+")


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(c.get("text", "") if isinstance(c, dict) else c) for c in content)
    return "" if content is None else str(content)


def first_claim(text: str) -> str | None:
    """The first sentence of ``text`` with 4+ content words and ≤ 240 characters, or ``None``."""
    for sent in _SENTENCE.split(text.strip()):
        sent = sent.strip()
        if len(sent) <= 240 and len(claims.terms(sent)) >= 4:
            return sent
    return None


def pairs(path: str) -> list[tuple[str, dict]]:
    """``[(claim, envelope)]`` of one transcript: each tool call with a result and the claim
    taken from the assistant text that follows the result."""
    calls: dict = {}
    order: list = []
    out = []
    pending: list = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            msg = rec.get("message") if isinstance(rec, dict) else None
            if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
                continue
            for block in msg["content"]:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "tool_use":
                    calls[block.get("id")] = {"tool": {"name": block.get("name"), "input": block.get("input")}}
                    order.append(block.get("id"))
                elif kind == "tool_result" and block.get("tool_use_id") in calls:
                    env = calls[block["tool_use_id"]]
                    env["tool"]["result"] = _text(block.get("content"))
                    pending.append(env)
                elif kind == "text" and msg.get("role") == "assistant" and pending:
                    claim = first_claim(block.get("text") or "")
                    if claim:
                        out.append((claim, pending[-1]))
                        pending = []
    return out


def measure(seed: int) -> dict:
    """``{"n": pairs, "files": n, "related": [scores], "unrelated": [scores]}``."""
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "claude-transcripts", "*.jsonl")))
    per_file = {f: pairs(f) for f in files}
    rng = random.Random(f"support:{seed}")
    related, unrelated = [], []
    for f, rows in per_file.items():
        others = [env for g, rs in per_file.items() if g != f for _, env in rs]
        for claim, env in rows:
            related.append(claims.support(claim, env))
            if others:
                unrelated.append(claims.support(claim, rng.choice(others)))
    return {"n": len(related), "files": len(files), "related": related, "unrelated": unrelated}


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
        rows.append({"threshold": t, "related_accepted": rel, "unrelated_accepted": unr})
    if args.json:
        json.dump({"pairs": m["n"], "files": m["files"], "support_min": claims.SUPPORT_MIN, "rows": rows}, out, indent=2)
        out.write("\n")
        return 0
    out.write(f"{m['n']} claim/evidence pairs from {m['files']} real transcripts "
              f"(lib.claims.SUPPORT_MIN = {claims.SUPPORT_MIN})\n")
    out.write("  threshold  related accepted  unrelated accepted\n")
    for r in rows:
        mark = "  <- SUPPORT_MIN" if abs(r["threshold"] - claims.SUPPORT_MIN) < 1e-9 else ""
        out.write(f"  {r['threshold']:9.2f}  {r['related_accepted']:16.1%}  {r['unrelated_accepted']:18.1%}{mark}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
