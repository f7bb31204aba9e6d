"""Claim/evidence pairs from real agent transcripts, for measuring ``lib.memory.claims.support``
(``bench/claim_support.py`` prints the table; ``test_support_threshold.py`` checks it).

Pairs come from ``tests/fixtures/claude-transcripts`` (real Claude Code sessions, see
``tests/fixtures/NOTICE.md``): for every tool call with a result, the claim is the first sentence
(4+ content words, ≤ 240 characters) of the assistant text that follows the result in the same
session, and the evidence is that tool call (name, input, result) as the lake stores it.
*Related*: the claim against its own call (a lower bound: the next sentence is not always about
the call just made). *Unrelated*: the same claim against a call drawn (seeded) from another
session — the forged citation the gate must refuse.
"""
from __future__ import annotations

import glob
import json
import os
import random
import re

from lib.memory import claims

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    """``{"n": pairs, "files": n, "related": [scores], "unrelated": [scores], "related_values": [bool],
    "unrelated_values": [bool]}``; a ``*_values`` entry says whether the evidence holds every value
    of the claim (:func:`lib.memory.claims.unsupported_values` empty), the gate's second test."""
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "claude-transcripts", "*.jsonl")))
    per_file = {f: pairs(f) for f in files}
    rng = random.Random(f"support:{seed}")
    related, unrelated, rel_values, unr_values = [], [], [], []
    for f, rows in per_file.items():
        others = [env for g, rs in per_file.items() if g != f for _, env in rs]
        for claim, env in rows:
            related.append(claims.support(claim, env))
            rel_values.append(not claims.unsupported_values(claim, env))
            if others:
                other = rng.choice(others)
                unrelated.append(claims.support(claim, other))
                unr_values.append(not claims.unsupported_values(claim, other))
    return {"n": len(related), "files": len(files), "related": related, "unrelated": unrelated,
            "related_values": rel_values, "unrelated_values": unr_values}
