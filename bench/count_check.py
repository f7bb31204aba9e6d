#!/usr/bin/env python3
"""An independent count of Claude Code transcripts, checked against the compacted lake (a report,
not a test: exits 1 when a figure disagrees).

Usage::

    python bench/count_check.py <transcript.jsonl> [...]

For each file, this script counts by itself — its own parse of the JSON lines, none of the
importer's code — prompts (the "User records" rules of docs/architecture.md: a ``user`` record
nobody but a person wrote), tool calls by name (``tool_use`` ids), finished calls and failed ones
(``tool_result`` ``is_error``), tokens per kind (each API message id once, at its last record: the
final streamed usage), and sessions. Then it imports the file into a fresh ``CTXLAKE_HOME`` the
real way (``lib.importers.claude_code.import_path`` → syncd's shipping → ``lib.maintenance.run_once`` on a
``file://`` store) and reads the Delta table back: each figure must agree exactly, and each
session must have exactly one ``session_start`` and one ``session_end``.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

NOT_TYPED = ("[Request interrupted by user", "<command-name>", "<command-message>", "<local-command-stdout>",
             "<local-command-stderr>", "<local-command-caveat>", "<bash-input>", "<bash-stdout>", "<bash-stderr>",
             "<task-notification>", "<system-reminder>", "Stop hook feedback:", "<user-prompt-submit-hook>")
"""Openings of user text nobody typed (docs/architecture.md "User records")."""


def independent(path: str) -> dict:
    """The figures of one transcript, from its bytes alone."""
    prompts, calls, finished, failed = set(), {}, set(), set()
    usage: dict = {}
    sessions = set()
    with open(path, "rb") as fh:
        for raw in fh:
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            if rec.get("type") in ("user", "assistant") and rec.get("sessionId"):
                sessions.add(rec["sessionId"])
            msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
            content = msg.get("content")
            if rec.get("type") == "user":
                blocks = content if isinstance(content, list) else []
                for b in blocks:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        finished.add(b.get("tool_use_id"))
                        if b.get("is_error") is True:
                            failed.add(b.get("tool_use_id"))
                has_result = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
                if isinstance(content, str):
                    text = content
                else:
                    text = "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
                if (text.strip() and not has_result and not rec.get("isCompactSummary") and not rec.get("isMeta")
                        and not rec.get("isSidechain") and not text.lstrip().startswith(NOT_TYPED)):
                    prompts.add(rec.get("uuid"))
            elif rec.get("type") == "assistant":
                for b in content if isinstance(content, list) else []:
                    if isinstance(b, dict) and b.get("type") == "tool_use":
                        calls[b.get("id")] = b.get("name")
                mid = msg.get("id") or rec.get("requestId")
                if mid and isinstance(msg.get("usage"), dict):
                    usage[mid] = msg["usage"]  # the last record of a streamed message holds its final figures
    tokens = Counter()
    for u in usage.values():
        for ours, theirs in (("input", "input_tokens"), ("output", "output_tokens"),
                             ("cache_read", "cache_read_input_tokens"), ("cache_write", "cache_creation_input_tokens")):
            v = u.get(theirs)
            tokens[ours] += v if isinstance(v, int) else 0
    called = {t for t in calls}
    return {"sessions": len(sessions), "prompts": len(prompts), "calls": dict(Counter(calls.values())),
            "finished": len(finished & called), "failed": len(failed & called), "tokens": dict(tokens)}


def from_lake(path: str) -> tuple[dict, list[str]]:
    """The same figures from the lake after a real import of ``path``; plus start/end problems."""
    from lib import config, lake, maintenance, ship
    from lib.importers.claude_code import import_path
    from lib.paths import Paths
    from lib.store.file import FileStore

    home = tempfile.mkdtemp(prefix="ctxlake-count-")
    env = {"CTXLAKE_HOME": home, "CTXLAKE_FLEET_ID": "count", "CTXLAKE_AGENT_ID": "count"}
    cfg = config.load(env, path=os.path.join(home, "none.toml"))
    paths = Paths.from_env(env)
    store = FileStore(cfg.store)
    import_path(path, paths, fleet_id="count", agent_id="count")
    ship.ship_all(store, paths)
    maintenance.run_once(cfg, store, lambda *a, **k: None)
    t = lake.query(store, "count", "SELECT envelope_json FROM events")
    rows = [] if t is None else [json.loads(r) for r in t.column("envelope_json").to_pylist()]
    calls = [e for e in rows if e["event_type"] == "tool_call" and not e.get("orphan_result")]
    tokens = Counter()
    for e in rows:
        if e["event_type"] == "assistant" and isinstance(e.get("usage"), dict):
            for ours in ("input", "output", "cache_read", "cache_write"):
                tokens[ours] += int(e["usage"].get(f"{ours}_tokens") or 0)
    problems = []
    by_session = Counter((e["session_id"], e["event_type"]) for e in rows)
    sids = {e["session_id"] for e in rows}
    for sid in sids:
        for kind in ("session_start", "session_end"):
            if by_session[(sid, kind)] != 1:
                problems.append(f"session {sid}: {by_session[(sid, kind)]} {kind}")
    return {"sessions": len(sids), "prompts": sum(e["event_type"] == "prompt" for e in rows),
            "calls": dict(Counter(e["tool"]["name"] for e in calls)),
            "finished": sum("exit_code" in e["tool"] for e in calls),
            "failed": sum("exit_code" in e["tool"] and e["tool"]["exit_code"] not in (0, None) for e in calls),
            "tokens": {k: v for k, v in tokens.items()}}, problems


def main(argv=None) -> int:
    files = (argv if argv is not None else sys.argv[1:])
    if not files:
        print(__doc__.split("\n\n")[1].strip())
        return 2
    agree = total = 0
    for path in files:
        mine, (lake_figs, problems) = independent(path), from_lake(path)
        for name in ("sessions", "prompts", "calls", "finished", "failed", "tokens"):
            a, b = mine[name], lake_figs[name]
            if name == "tokens":
                a = {k: v for k, v in a.items() if v}
                b = {k: v for k, v in b.items() if v}
            total += 1
            ok = a == b
            agree += ok
            if not ok:
                print(f"  DIFF {os.path.basename(path)} {name}: independent {a} lake {b}")
        n_calls = sum(mine["calls"].values())
        print(f"{os.path.basename(path)}: {mine['prompts']} prompts, {n_calls} calls ({mine['failed']} failed), "
              f"output tokens {mine['tokens'].get('output', 0)}; start/end {'ok' if not problems else problems}")
        total += 1
        agree += not problems
    print(f"{agree} of {total} figures agree")
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
