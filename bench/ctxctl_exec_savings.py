#!/usr/bin/env python3
"""``ctxctl exec`` savings the way an independent reviewer would check them: per command, on
real commands of this machine, with oversized outputs kept out of the headline (issue #24).

Each command runs once through :func:`lib.code.execute.run` (exact cl100k_base counts) and
once raw; the report gives, per command, the exit code (always the child's), raw lines and
bytes, tokens before/after, saved%, and how many of the raw output's diagnostic lines (a line
naming a ``file:line`` location, or a ``FAIL``/``FAILED``/``error``/``Traceback``/``panicked``/``not ok`` line) survived. The
headline is the median per-command saved% and the token-weighted total over the commands whose
raw output is under :data:`OVERSIZED_TOKENS`; the oversized ones (a ``find`` over the venv, a
full ``git log -p``) save ~100% whatever the folding does and would flatter the headline, so
they are listed separately.

Usage: ``.venv/bin/python bench/ctxctl_exec_savings.py [--json]``. Nothing asserts.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
OVERSIZED_TOKENS = 50_000
"""Raw outputs above this many tokens are reported apart from the headline."""
DIAGNOSTIC = re.compile(r"\w\.\w{1,5}:\d+|\bFAIL(?:ED)?\b|(?i:\berror\b)|Traceback|panicked|not ok")


def workspace() -> str:
    """A scratch folder with a broken C file, a broken Rust file and a failing node test."""
    tmp = tempfile.mkdtemp(prefix="ctxctl-exec-bench-")
    with open(os.path.join(tmp, "broken.c"), "w") as fh:
        fh.write("int main(void) {\n    return missing_symbol + 1\n}\n")
    with open(os.path.join(tmp, "broken.rs"), "w") as fh:
        fh.write("fn main() {\n    let n: u8 = \"seven\";\n}\n")
    with open(os.path.join(tmp, "failing.test.js"), "w") as fh:
        fh.write("const test = require('node:test');\nconst assert = require('node:assert');\n"
                 "for (let i = 0; i < 40; i++) test(`case ${i}`, () => assert.ok(i !== 31));\n")
    return tmp


def commands(tmp: str) -> list:
    """``(label, command line, cwd)``; tools not installed are left out."""
    py = sys.executable
    out = [
        ("pytest (passing, -v)", f"{py} -m pytest -v -p no:cacheprovider tests/ctxctl/test_tokens_offline.py", ROOT),
        ("pytest --collect-only", f"{py} -m pytest --co -q tests/ctxctl", ROOT),
        ("git log --stat", "git log --stat -n 60", ROOT),
        ("pip list", f"{py} -m pip list", ROOT),
        ("python traceback", f"{py} -c \"import json; [print(i) for i in range(50)]; json.loads('{{bad')\"", ROOT),
        ("ls -lR lib", "ls -lR lib", ROOT),
        ("oversized: find site-packages", "find .venv/lib", ROOT),
        ("oversized: git log -p", "git log -p -n 400", ROOT),
    ]
    if shutil.which("gcc"):
        out.append(("gcc (broken)", "sh -c 'seq 1 30; gcc -c broken.c -o /dev/null'", tmp))
    if shutil.which("rustc"):
        out.append(("rustc (broken)", "sh -c 'seq 1 30; rustc --color never broken.rs'", tmp))
    if shutil.which("node"):
        out.append(("node --test (1 failing)", "node --test failing.test.js", tmp))
    return out


def measure(label: str, cmd: str, cwd: str) -> dict:
    from lib.code import config, execute, tokens

    res = execute.run(cmd, config.Config(), json_mode=True, cwd=cwd, timeout=120)
    doc = json.loads(res.out)
    import shlex

    raw = subprocess.run(shlex.split(cmd), cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL)
    text = raw.stdout.decode("utf-8", "replace") + raw.stderr.decode("utf-8", "replace")
    wanted = [line for line in text.splitlines() if DIAGNOSTIC.search(line)]
    kept = set(doc["compressed"].splitlines())
    return {"command": label, "exit_code": doc["exit_code"], "raw_exit_code": raw.returncode,
            "raw_lines": text.count("\n"), "raw_bytes": len(text.encode()),
            "tokens_before": doc["saved"]["tokens_before"], "tokens_after": doc["saved"]["tokens_after"],
            "saved_percent": doc["saved"]["percent"], "raw_tokens_whole": tokens.count(text),
            "diagnostics": len(wanted), "diagnostics_kept": sum(1 for w in wanted if w in kept)}


def main(argv=None) -> int:
    as_json = "--json" in (argv if argv is not None else sys.argv[1:])
    tmp = workspace()
    try:
        rows = [measure(*c) for c in commands(tmp)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    normal = [r for r in rows if r["tokens_before"] <= OVERSIZED_TOKENS]
    big = [r for r in rows if r["tokens_before"] > OVERSIZED_TOKENS]
    headline = {
        "commands": len(normal),
        "median_saved_percent": statistics.median(r["saved_percent"] for r in normal) if normal else None,
        "token_weighted_saved_percent": round(100 * (1 - sum(r["tokens_after"] for r in normal)
                                                     / max(1, sum(r["tokens_before"] for r in normal))), 1),
        "diagnostics_kept": f"{sum(r['diagnostics_kept'] for r in rows)}/{sum(r['diagnostics'] for r in rows)}",
    }
    if as_json:
        print(json.dumps({"headline": headline, "commands": rows, "oversized": [r["command"] for r in big]}, indent=2))
        return 0
    print(f"{'command':<32} {'exit':>4} {'lines':>7} {'before':>8} {'after':>7} {'saved':>6} {'diag kept':>10}")
    for r in normal + big:
        print(f"{r['command'][:32]:<32} {r['exit_code']:>4} {r['raw_lines']:>7} {r['tokens_before']:>8} "
              f"{r['tokens_after']:>7} {r['saved_percent']:>5}% {r['diagnostics_kept']:>4}/{r['diagnostics']:<5}")
    print(f"headline over {headline['commands']} commands under {OVERSIZED_TOKENS:,} tokens: median saved "
          f"{headline['median_saved_percent']}%, token-weighted {headline['token_weighted_saved_percent']}%; "
          f"oversized, shown apart: {', '.join(r['command'] for r in big) or 'none'}; "
          f"diagnostic lines kept {headline['diagnostics_kept']}; exit codes always the child's: "
          f"{all(r['exit_code'] == r['raw_exit_code'] for r in rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
