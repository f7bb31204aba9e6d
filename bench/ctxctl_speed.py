#!/usr/bin/env python3
"""What an agent waits for when it calls ctxctl: per language, per verb, a cold ``ctxctl.py``
process against a bare interpreter of the same venv and against Universal Ctags, in one
interleaved run, on real source files (issue #24).

For every file of the corpus (``tests/ctxctl/fixtures/real/`` — one or two real files per
language, sources in tests/fixtures/NOTICE.md — and boto3/botocore files of three sizes from the
venv for Python) and every verb (``outline``, ``symbol`` on the file's middle top-level symbol,
``deps``), each round runs, in one interleaved sequence: the ctxctl call, ``python -c pass``
(the bare interpreter, spawned the same way) and ``ctags -x`` on the same file. Wall time is
``perf_counter`` around ``subprocess.run``; CPU is the children's user+system time from
``getrusage``. Medians over the rounds are compared with the budgets:

* wall(ctxctl) / wall(bare interpreter) ≤ 3 (cold process, median);
* parse CPU per 1,000 lines ≤ Universal Ctags': ctxctl's outline parse + symbol extraction
  in-process (grammar loaded; the whole file's parse and the split printed beside), against ctags' marginal CPU per pass (a process tagging the file 21 times
  minus one tagging it once: its start-up left out, as ctxctl's grammar load is).

Bytecode is compiled first (``compileall`` over ``lib/``), as the container image does
(Dockerfile): with ``PYTHONDONTWRITEBYTECODE=1`` and no ``__pycache__`` every call would
recompile ctxctl's modules, which is not how it runs.

``--agreement`` adds, per language, the outline's agreement with ctags on the same files: the
definition names ctags finds that ctxctl misses and the reverse (ctags' import, include,
parameter and local-variable kinds left out: ctxctl lists imports under ``deps``).

``--mcp`` measures instead the per-call latency of one long-lived ``ctxctl.py mcp`` process
(the way an MCP client runs it): each file's first call (its grammar and query not yet loaded)
and the median of the following rounds, per verb.

``--baseline DIR`` adds another checkout's ``ctxctl.py`` (say ``git archive <commit> ctxctl.py lib``
unpacked in DIR) to the same interleaved sequence, so a before/after comparison shares one
machine state: its wall and CPU ratios to the bare interpreter print beside this tree's.

Usage: ``.venv/bin/python bench/ctxctl_speed.py [--rounds N] [--agreement] [--mcp] [--baseline DIR] [--json]``.
Nothing here asserts; the numbers are for docs/ctxctl.md and for regressions.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
REAL = os.path.join(ROOT, "tests", "ctxctl", "fixtures", "real")
CTXCTL = os.path.join(ROOT, "ctxctl.py")
VERBS = ("outline", "symbol", "deps")
WALL_BUDGET = 3.0
CTAGS_LANG = {"python": "Python", "rust": "Rust", "typescript": "TypeScript", "javascript": "JavaScript",
              "go": "Go", "java": "Java", "c": "C", "cpp": "C++", "csharp": "C#", "ruby": "Ruby", "lua": "Lua",
              "html": "HTML", "css": "CSS", "markdown": "Markdown"}
CTAGS_SKIP_KINDS = {"import", "include", "namespace_import", "module_import", "parameter", "local", "label",
                    "unknown", "externvar", "header", "macroparam", "alias", "using", "package", "fileName"}
"""ctags kinds left out of the comparison: imports and includes (ctxctl lists them under
``deps``), parameters, locals and labels (never outline symbols). Everything else ctags tags
— fields, enumerators, constants, anchors — counts, so a kind ctxctl's contract does not list
shows up as a miss."""


def corpus() -> list:
    """``(language, path)`` for every benchmarked file."""
    from lib.code import languages

    files = sorted(os.path.join(REAL, n) for n in os.listdir(REAL))
    out = [(languages.backend_for(f), f) for f in files if languages.backend_for(f)]
    import importlib.util

    for package, rel in (("boto3", "utils.py"), ("boto3", "session.py"), ("botocore", "utils.py")):
        spec = importlib.util.find_spec(package)
        path = os.path.join(list(spec.submodule_search_locations)[0], rel)
        if os.path.isfile(path):
            out.append(("python", path))
    return out


def middle_symbol(path: str) -> str | None:
    """Name of the top-level symbol at the middle of the file (the ``symbol`` verb's target)."""
    from lib.code import languages, lookup, symbols

    with open(path, "rb") as fh:
        data = fh.read()
    tops = lookup.top_level(symbols.extract(languages.parse(path, data, skip_bodies=True)))
    return tops[len(tops) // 2].name if tops else None


def timed(argv: list) -> tuple:
    """``(wall seconds, child CPU seconds)`` of one run of ``argv`` (output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def lines_of(path: str) -> int:
    with open(path, "rb") as fh:
        return fh.read().count(b"\n") or 1


def parse_cpu_per_kline(path: str, repeat: int = 20) -> dict:
    """ctxctl's in-process CPU, ms per 1,000 lines (grammar loaded), where it goes: the
    outline's parse (``outline``, what ``outline``/``symbol`` run: function bodies left out
    where the language allows, lib/code/skeleton.py), the whole file's parse (``full``, what
    ``deps`` runs), and the symbol extraction on the outline's tree (``extract``: the query or
    walk, names, signatures), and, where the language's header scanner answers for the file
    (lib/code/scanners), the scanner (``scan``: then ``total`` is it, as ``outline`` runs
    nothing else). They are timed in interleaved batches, the best batch of each kept (the
    machine is shared: load only adds time). ``path`` says which path ``outline`` takes."""
    from lib.code import languages, scanners, symbols

    with open(path, "rb") as fh:
        data = fh.read()
    parsed = languages.parse(path, data, skip_bodies=True)
    symbols.extract(parsed)  # load the grammar and query once
    language = languages.backend_for(path)
    scanned = scanners.outline(language, data) is not None

    work = {"outline": lambda: languages.parse(path, data, skip_bodies=True),
            "full": lambda: languages.parse(path, data), "extract": lambda: symbols.extract(parsed)}
    if scanned:  # what outline.load runs then: the scanner alone, no tree
        work["scan"] = lambda: scanners.outline(language, data)
    runs = {key: [] for key in work}
    for _ in range(7):  # interleaved batches, the best of each kept: a shared machine only adds time
        for key, fn in work.items():
            start = time.process_time()
            for _ in range(max(1, repeat // 4)):
                fn()
            runs[key].append((time.process_time() - start) / max(1, repeat // 4))
    out = {key: min(times) * 1e6 / lines_of(path) for key, times in runs.items()}
    out["tree_sitter"] = out["outline"] + out["extract"]
    out["total"] = out["scan"] if scanned else out["tree_sitter"]
    out["path"] = "scanner" if scanned else "tree-sitter"
    return out


def ctags_cpu_per_kline(ctags: str, language: str, path: str, repeat: int = 20) -> float:
    """ctags' parse CPU, ms per 1,000 lines: one process tagging ``path`` ``repeat + 1`` times
    minus one tagging it once (best of three each), so its start-up — loading every parser and
    compiling its regexes — is not counted, as ctxctl's grammar load is not."""
    def cpu(times: int) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([ctags, "-f", "-", f"--languages={CTAGS_LANG[language]}", "-L", "-"],
                       input=("\n".join([path] * times)).encode(), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    marginal = min(cpu(repeat + 1) for _ in range(3)) - min(cpu(1) for _ in range(3))
    return max(marginal, 0.0) * 1e6 / (repeat * lines_of(path))


def ctags_tags(ctags: str, language: str, path: str) -> list:
    """``(name, kind, line)`` of every definition ctags reports for ``path`` (see
    :data:`CTAGS_SKIP_KINDS`), without the names ctags invents for anonymous things
    (``AnonymousFunction…``, ``__anon…``): no source spells them, so no outline could list them."""
    r = subprocess.run([ctags, "-x", "--_xformat=%N\t%K\t%n", f"--languages={CTAGS_LANG[language]}",
                        "--language-force=" + CTAGS_LANG[language], "-o", "-", path], capture_output=True, text=True)
    out = []
    for line in r.stdout.splitlines():
        name, kind, number = (line.split("\t") + ["", ""])[:3]
        if kind not in CTAGS_SKIP_KINDS and name and not name.startswith(("AnonymousFunction", "__anon")):
            out.append((name, kind, int(number) if number.isdigit() else 0))
    return out


LOCAL_KINDS = {"variable", "constant", "let", "var"}
"""ctags kinds that are locals when they sit inside a function's body (a function, a method, or
a variable bound to an arrow function with a block body): its TypeScript and
JavaScript parsers tag every ``const`` in a function as a file-level ``constant`` with no
scope, which is no outline symbol (the bench counts them apart, as "ctags locals")."""


def ctxctl_symbols(path: str) -> list:
    """The symbols ``ctxctl outline`` lists for ``path``."""
    from lib.code import languages, scanners, symbols

    with open(path, "rb") as fh:
        data = fh.read()
    scanned = scanners.outline(languages.backend_for(path), data)
    return scanned if scanned is not None else symbols.extract(languages.parse(path, data, skip_bodies=True))


def comparable_name(name: str, language: str) -> list:
    """ctxctl's name as ctags spells it: ``A::f`` by its last component (C++), ``res.status =
    function …`` as ``status`` (JavaScript/TypeScript), a CSS rule set ``a, b`` as one tag per
    selector."""
    if language == "cpp" and "::" in name and not name.startswith("operator "):
        return [name.rpartition("::")[2]]
    if language in ("javascript", "typescript") and "." in name:
        return [name.rpartition(".")[2]]
    if language == "css":
        return [part.strip() for part in name.split(",") if part.strip()]
    return [name]


def agreement(ctags: str, files: list) -> dict:
    """Per language: symbols each side found, and the misses both ways (names, as multisets).
    ctags' variables and constants on a line inside one of ctxctl's function or method bodies are
    locals (:data:`LOCAL_KINDS`) and counted apart."""
    per = {}
    for language, path in files:
        syms = ctxctl_symbols(path)
        bodies = [(s.start_line, s.end_line) for s in syms if s.end_line > s.start_line and (
            s.kind in ("function", "method") or (s.kind == "var" and s.spec is not None and s.spec.body is not None))]
        theirs, locals_ = collections.Counter(), 0
        for name, kind, line in ctags_tags(ctags, language, path):
            if kind in LOCAL_KINDS and any(a < line <= b for a, b in bodies):
                locals_ += 1
            else:
                theirs[name] += 1
        ours = collections.Counter(n for s in syms for n in comparable_name(s.name, language))
        row = per.setdefault(language, {"files": 0, "ctags": 0, "ctags_locals": 0, "ctxctl": 0, "ctxctl_misses": 0,
                                        "ctags_misses": 0, "examples_missed_by_ctxctl": [],
                                        "examples_missed_by_ctags": []})
        row["files"] += 1
        row["ctags"] += sum(theirs.values())
        row["ctags_locals"] += locals_
        row["ctxctl"] += sum(ours.values())
        missed_by_us, missed_by_them = theirs - ours, ours - theirs
        row["ctxctl_misses"] += sum(missed_by_us.values())
        row["ctags_misses"] += sum(missed_by_them.values())
        row["examples_missed_by_ctxctl"] += sorted(missed_by_us)[:4]
        row["examples_missed_by_ctags"] += sorted(missed_by_them)[:4]
    return per


def print_agreement(per: dict) -> None:
    """The agreement table (:func:`agreement`), one row per language."""
    print("\noutline agreement with ctags (definition names as multisets; misses both ways; ctags locals apart)")
    print(f"  {'language':<10} {'files':>5} {'ctags':>6} {'locals':>6} {'ctxctl':>6} {'missed by ctxctl':>17} "
          f"{'missed by ctags':>16}")
    for language, a in sorted(per.items()):
        print(f"  {language:<10} {a['files']:>5} {a['ctags']:>6} {a['ctags_locals']:>6} {a['ctxctl']:>6} "
              f"{a['ctxctl_misses']:>17} {a['ctags_misses']:>16}   e.g. -{a['examples_missed_by_ctxctl'][:3]} "
              f"+{a['examples_missed_by_ctags'][:3]}")


def mcp_latency(files: list, rounds: int) -> list:
    """Per file and verb: ``(first call ms, median of later calls ms)`` over one MCP process."""
    proc = subprocess.Popen([sys.executable, CTXCTL, "mcp"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ids = iter(range(1, 1 << 30))

    def ask(method, params):
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params})
                          + "\n").encode())
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    ask("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "bench"}})
    time.sleep(1.0)  # the tokenizer preload finishes (it runs on a thread at start-up)
    out = []
    root = os.path.realpath(ROOT)
    try:
        for language, path in files:
            if not os.path.realpath(path).startswith(root + os.sep):
                continue  # the venv's files are outside the workspace the server is pinned to
            rel = os.path.relpath(path, ROOT)
            target = middle_symbol(path)
            for verb in VERBS:
                args = {"file": rel}
                if verb == "symbol":
                    if target is None:
                        continue
                    args["name"] = target
                times = []
                for _ in range(rounds + 1):
                    start = time.perf_counter()
                    ask("tools/call", {"name": f"ctxctl_{verb}", "arguments": args})
                    times.append((time.perf_counter() - start) * 1000)
                out.append({"language": language, "file": os.path.basename(path), "verb": verb,
                            "first_ms": round(times[0], 1), "warm_ms": round(statistics.median(times[1:]), 1)})
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--agreement", action="store_true", help="also compare outlines with ctags")
    ap.add_argument("--agreement-only", action="store_true", help="only the ctags comparison (no timing)")
    ap.add_argument("--mcp", action="store_true", help="per-call latency of one ctxctl mcp process instead")
    ap.add_argument("--baseline", metavar="DIR", help="another checkout whose ctxctl.py runs interleaved too")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    py = sys.executable
    ctags = shutil.which("ctags")
    import compileall

    compileall.compile_dir(os.path.join(ROOT, "lib"), quiet=1)
    baseline = None
    if args.baseline:
        baseline = os.path.join(os.path.abspath(args.baseline), "ctxctl.py")
        compileall.compile_dir(os.path.join(os.path.dirname(baseline), "lib"), quiet=1)
    files = corpus()
    if args.agreement_only:
        per = agreement(ctags, files)
        if args.json:
            print(json.dumps(per, indent=2))
        else:
            print_agreement(per)
        return 0
    if args.mcp:
        rows = mcp_latency(files, args.rounds)
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        for r in rows:
            print(f"  {r['language']:<10} {r['file'][:34]:<34} {r['verb']:<7} first {r['first_ms']:>6.1f} ms"
                  f"  warm {r['warm_ms']:>6.1f} ms")
        print(f"  median warm call {statistics.median(r['warm_ms'] for r in rows):.1f} ms, "
              f"median first call {statistics.median(r['first_ms'] for r in rows):.1f} ms")
        return 0
    jobs = []
    for language, path in files:
        target = middle_symbol(path)
        for verb in VERBS:
            extra = ["--name", target] if verb == "symbol" else []
            if verb == "symbol" and target is None:
                continue
            jobs.append((language, path, verb, [py, CTXCTL, verb, path] + extra))
    samples = collections.defaultdict(list)
    for _ in range(args.rounds):  # one interleaved sequence: ctxctl, bare, ctags, next job …
        for language, path, verb, cmd in jobs:
            samples[(path, verb)].append(timed(cmd))
            if args.baseline:
                samples[("baseline", path, verb)].append(timed([py, baseline] + cmd[2:]))
            samples[("bare", path, verb)].append(timed([py, "-c", "pass"]))
            if ctags and verb == "outline":
                samples[("ctags", path)].append(timed([ctags, "-x", f"--languages={CTAGS_LANG[language]}", path]))
    med = lambda xs, i: statistics.median(x[i] for x in xs) * 1000  # noqa: E731 (ms)
    rows = []
    for language, path, verb, _ in jobs:
        ours, bare = samples[(path, verb)], samples[("bare", path, verb)]
        row = {"language": language, "file": os.path.basename(path), "lines": lines_of(path), "verb": verb,
               "wall_ms": round(med(ours, 0), 1), "cpu_ms": round(med(ours, 1), 1),
               "bare_wall_ms": round(med(bare, 0), 1), "bare_cpu_ms": round(med(bare, 1), 1)}
        row["wall_vs_bare"] = round(row["wall_ms"] / row["bare_wall_ms"], 2)
        row["cpu_vs_bare"] = round(row["cpu_ms"] / max(row["bare_cpu_ms"], 0.1), 2)
        if args.baseline:
            base = samples[("baseline", path, verb)]
            row["baseline_wall_vs_bare"] = round(med(base, 0) / row["bare_wall_ms"], 2)
            row["baseline_cpu_vs_bare"] = round(med(base, 1) / max(row["bare_cpu_ms"], 0.1), 2)
        if ctags:
            ct = samples[("ctags", path)]
            row["ctags_wall_ms"], row["ctags_cpu_ms"] = round(med(ct, 0), 1), round(med(ct, 1), 1)
        rows.append(row)
    parse = []
    for language, path in files:
        cpu = parse_cpu_per_kline(path)
        entry = {"language": language, "file": os.path.basename(path), "lines": lines_of(path),
                 "ctxctl_parse_cpu_ms_per_kline": round(cpu["total"], 2),
                 "breakdown_ms_per_kline": {k: (round(v, 2) if isinstance(v, float) else v) for k, v in cpu.items()}}
        if ctags:
            entry["ctags_cpu_ms_per_kline"] = round(ctags_cpu_per_kline(ctags, language, path), 2)
            entry["ratio"] = round(entry["ctxctl_parse_cpu_ms_per_kline"] / max(entry["ctags_cpu_ms_per_kline"], 1e-3), 2)
        parse.append(entry)
    report = {"rounds": args.rounds, "budget_wall_vs_bare": WALL_BUDGET, "calls": rows, "parse": parse}
    if args.agreement and ctags:
        report["agreement"] = agreement(ctags, files)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"ctxctl cold calls, median of {args.rounds} interleaved rounds (budget: wall <= {WALL_BUDGET}x bare)")
    print("(CPU x bare: the same ratio of user+system time, which a loaded machine's waiting does not inflate)")
    print(f"{'language':<10} {'file':<34} {'lines':>5} {'verb':<7} {'wall':>7} {'bare':>6} {'x bare':>6} "
          f"{'cpu':>6} {'bare':>5} {'x bare':>6} {'ctags':>6}" + ("  baseline: wall x, cpu x" if args.baseline else ""))
    for r in rows:
        print(f"{r['language']:<10} {r['file'][:34]:<34} {r['lines']:>5} {r['verb']:<7} {r['wall_ms']:>6.1f}m "
              f"{r['bare_wall_ms']:>5.1f}m {r['wall_vs_bare']:>5.2f}{'!' if r['wall_vs_bare'] > WALL_BUDGET else ' '}"
              f" {r['cpu_ms']:>5.1f}m {r['bare_cpu_ms']:>4.1f}m {r['cpu_vs_bare']:>5.2f}"
              f"{'!' if r['cpu_vs_bare'] > WALL_BUDGET else ' '} {r.get('ctags_wall_ms', float('nan')):>5.1f}m"
              + (f"  {r['baseline_wall_vs_bare']:>5.2f} {r['baseline_cpu_vs_bare']:>5.2f}" if args.baseline else ""))
    keys = [("wall_vs_bare", "wall"), ("cpu_vs_bare", "CPU")]
    if args.baseline:
        keys += [("baseline_wall_vs_bare", "wall (baseline)"), ("baseline_cpu_vs_bare", "CPU (baseline)")]
    for key, what in keys:
        over = [r for r in rows if r[key] > WALL_BUDGET]
        print(f"  {len(rows) - len(over)}/{len(rows)} calls within {WALL_BUDGET}x the bare interpreter's {what}"
              f" (median ratio {statistics.median(r[key] for r in rows):.2f})")
    print("\nparse CPU per 1,000 lines (ctxctl outline parse+extract in-process vs ctags' marginal pass; budget <= 1x)")
    print("  (where it goes: the outline's parse, the whole file's parse for comparison, the extraction)")
    for p in parse:
        b = p["breakdown_ms_per_kline"]
        print(f"  {p['language']:<10} {p['file'][:34]:<34} {p['lines']:>5}  ctxctl {p['ctxctl_parse_cpu_ms_per_kline']:>6.2f} ms"
              + (f"  ctags {p['ctags_cpu_ms_per_kline']:>5.2f} ms  {p['ratio']:>5.2f}x" if "ratio" in p else "")
              + f"   {b['path']:<11} [tree-sitter: parse {b['outline']:.2f} (whole file {b['full']:.2f})"
              + f" + extract {b['extract']:.2f}" + (f"; scanner {b['scan']:.2f}]" if "scan" in b else "]"))
    if "agreement" in report:
        print_agreement(report["agreement"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
