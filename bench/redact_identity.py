"""Identical-output check for redaction speed work: every text the redaction bench and tests use,
scrubbed by the current redactor and by the one of a git revision, in both modes (tool output and
prose); prints how many texts were compared and every one whose output or outcome differs.

Usage: ``python bench/redact_identity.py --baseline REV [--max-files 800] [--json] [--show 20]``

Texts (each but the package lines also as its JSON-escaped form, the way a tool result holding JSON
reaches the hook):
the fields of the fixture transcripts and their 1 MiB tool-output sample, the secrets corpus
(cases and lone secrets), the public-corpus samples in each of their eight placements, the hard
negatives and the must-stay-clean list, the real-text negatives (installed packages' sources, CA
certificates, SSH public keys, base64 of images, checksums, UUIDs, paths, LoCoMo strings) and
the tldr command lines. Exit code 0 when every output is identical, 1 otherwise. A speed change
(docs/design.md §12) must leave this at 0, or name each difference as an improvement and test it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from lib import redact  # noqa: E402
from bench.redact_corpus import load_baseline  # noqa: E402


def _strings(value):
    """Every string inside a JSON-like ``value``."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def corpus(max_files: int = 800) -> list[str]:
    """The distinct texts of the redaction bench and tests (see the module docstring)."""
    from tests.redact import negatives, public_corpus, real_text, secrets_corpus
    from tests.redact.fixture_text import iter_fields, tool_output_sample
    from tests.support import tldr_commands

    texts: list[str] = []
    texts += [f.text for f in iter_fields()]
    sample = tool_output_sample(1 << 20)
    texts.append(sample)
    texts += [sample[i:i + 65536] for i in range(0, len(sample), 65536)]
    for c in secrets_corpus.all_cases(40, 0):
        texts.append(c.text)
    texts += list(secrets_corpus.SECRETS)
    texts += [c.text for c in secrets_corpus.CONTEXT_CASES]
    rng = random.Random("identity")
    for smp in public_corpus.committed():
        texts.append(smp["text"])
        for _where, kw in public_corpus.placements(smp["text"], rng):
            texts += list(_strings(kw))
    for rows in negatives.hard_negatives().values():
        texts += rows
    texts += list(negatives.MUST_STAY_CLEAN)
    escaped = [json.dumps(t)[1:-1] for t in texts if len(t) < 65536]
    texts += real_text.package_source_lines(max_files)
    texts += real_text.ca_certificates()
    texts += real_text.ssh_public_keys()
    texts += [t for _label, t in real_text.image_base64()]
    texts += real_text.checksums_uuids_paths()
    texts += real_text.conversation_strings()
    for row in tldr_commands.samples():
        texts += list(_strings({k: v for k, v in row.items() if isinstance(v, str)}))
    texts += escaped
    return list(dict.fromkeys(t for t in texts if t))


def compare(baseline, texts: list[str]) -> list[dict]:
    """``[{"mode", "text", "current", "baseline"}]`` for every text whose scrub differs."""
    out = []
    for t in texts:
        for tool in (True, False):
            a, b = redact.scrub(t, tool), baseline.scrub(t, tool)
            if a[0] != b[0] or (a[1].status, a[1].rules) != (b[1].status, b[1].rules):
                out.append({"mode": "tool" if tool else "prose", "text": t, "current": [a[0], repr(a[1])],
                            "baseline": [b[0], repr(b[1])]})
    return out


def main(argv=None, out=sys.stdout) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, metavar="REV", help="git revision to compare against")
    ap.add_argument("--max-files", type=int, default=800, help="installed-package files read (default 800)")
    ap.add_argument("--show", type=int, default=20, help="differences printed (default 20)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    base = load_baseline(args.baseline)
    texts = corpus(args.max_files)
    diffs = compare(base, texts)
    if args.json:
        json.dump({"texts": len(texts), "scrubs": 2 * len(texts), "differ": len(diffs), "diffs": diffs[:args.show]}, out)
        out.write("\n")
    else:
        out.write(f"{len(texts)} texts, {2 * len(texts)} scrubs (tool output and prose): {len(diffs)} differ\n")
        for d in diffs[:args.show]:
            out.write(f"- {d['mode']}: {d['text'][:160]!r}\n  current:  {d['current'][1]} {d['current'][0][:160]!r}\n"
                      f"  baseline: {d['baseline'][1]} {d['baseline'][0][:160]!r}\n")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
