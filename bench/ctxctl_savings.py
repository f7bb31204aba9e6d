#!/usr/bin/env python3
"""ctxctl on real code: tokens saved by outline / symbol / deps, and outline speed next to
Universal Ctags, over the Python sources of packages installed in this venv.

For every ``.py`` file of the chosen packages (default: pyarrow, boto3, botocore, jsonschema):

* ``outline`` — saved% of the text outline against the whole file;
* ``symbol`` — saved% of one symbol's slice: the top-level symbol at the middle of the file's
  top-level list (deterministic, and a fair stand-in for "the function I need");
* ``deps`` — saved% of the import list.

It prints the median saved% per command (files with no symbol or no import are left out of
that command's median), outline time per 1,000 source lines (parse + extract + render, with
and without the token counting that the metric needs), and Universal Ctags' time per 1,000
lines on the same files in the same run (one ``ctags`` process for all files, tags to stdout).
Both wall and CPU time are reported; the comparison uses CPU time, which other processes on a
shared machine do not inflate.

Usage: ``.venv/bin/python bench/ctxctl_savings.py [package ...] [--json]``. Nothing here is a
test and nothing asserts a budget; the numbers are for docs/ctxctl.md and for regressions.
"""
from __future__ import annotations

import argparse
import importlib.util
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

from lib.code import config as _config  # noqa: E402
from lib.code import deps, lookup, outline, tokens  # noqa: E402

DEFAULT_PACKAGES = ("pyarrow", "boto3", "botocore", "jsonschema")


def package_files(name: str) -> list:
    """Sorted ``.py`` files of an installed package (empty when it is not installed)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return []
    out = []
    for folder in spec.submodule_search_locations:
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames.sort()
            out.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    return out


def measure(files: list, cfg) -> dict:
    """Per-command saved% lists and outline timings over ``files``."""
    saved = {"outline": [], "symbol": [], "deps": []}
    lines = 0
    t_plain = t_metric = cpu_plain = 0.0
    symbols_seen = 0
    for path in files:
        with open(path, "rb") as fh:
            lines += fh.read().count(b"\n")
        start, cpu = time.perf_counter(), time.process_time()
        outline.run(path, cfg, show_saved=False)
        t_plain += time.perf_counter() - start
        cpu_plain += time.process_time() - cpu
        start = time.perf_counter()
        r = outline.run(path, cfg, show_saved=True)
        t_metric += time.perf_counter() - start
        src, parsed, syms = outline.load(path, cfg)
        symbols_seen += len(syms)
        before = tokens.count(src.text)
        if syms and before:
            body = "".join(row + "\n" for row in outline.rows(syms, True, cfg.outline.fold_threshold))
            saved["outline"].append(tokens.percent(before, tokens.count(body)))
            tops = lookup.top_level(syms)
            pick = tops[len(tops) // 2]
            text = lookup.payload(parsed, pick)
            saved["symbol"].append(tokens.percent(before, tokens.count(text)))
        imports = deps.collect(parsed, path, cfg)
        if imports and before:
            saved["deps"].append(tokens.percent(before, tokens.count_many(i["target"] for i in imports)))
        assert r.code in (0, 3)
    return {"saved": saved, "lines": lines, "outline_secs": t_plain, "outline_metric_secs": t_metric,
            "outline_cpu_secs": cpu_plain,
            "symbols": symbols_seen}


def ctags_time(files: list) -> dict | None:
    """Universal Ctags over the same files in one process: seconds and tag count (None if absent)."""
    exe = shutil.which("ctags")
    if exe is None:
        return None
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    if "Universal Ctags" not in version:
        return None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    r = subprocess.run([exe, "-f", "-", "--languages=Python", "--fields=+n", "-L", "-"],
                       input="\n".join(files), capture_output=True, text=True)
    secs = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tags = sum(1 for line in r.stdout.splitlines() if line and not line.startswith("!_"))
    return {"version": version, "secs": secs, "cpu_secs": cpu, "tags": tags}


def main(argv=None) -> int:
    """Run the benchmark and print a report (or JSON with ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("packages", nargs="*", default=list(DEFAULT_PACKAGES))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    cfg = _config.Config()
    files = []
    for name in args.packages:
        found = package_files(name)
        if not found:
            print(f"skip {name}: not installed", file=sys.stderr)
        files.extend(found)
    if not files:
        print("no files to measure", file=sys.stderr)
        return 1
    tokens.count("warm up")  # load the vocabulary outside the timed region
    m = measure(files, cfg)
    ct = ctags_time(files)
    per_k = lambda secs: secs * 1000 * 1000 / max(m["lines"], 1)  # noqa: E731 (ms per 1,000 lines)
    report = {
        "packages": args.packages, "files": len(files), "lines": m["lines"], "symbols": m["symbols"],
        "median_saved_percent": {k: (statistics.median(v) if v else None) for k, v in m["saved"].items()},
        "files_measured": {k: len(v) for k, v in m["saved"].items()},
        "outline_ms_per_1000_lines": round(per_k(m["outline_secs"]), 2),
        "outline_with_metrics_ms_per_1000_lines": round(per_k(m["outline_metric_secs"]), 2),
        "outline_cpu_ms_per_1000_lines": round(per_k(m["outline_cpu_secs"]), 2),
        "ctags": None if ct is None else {"version": ct["version"].split(",")[0], "tags": ct["tags"],
                                          "ms_per_1000_lines": round(per_k(ct["secs"]), 2),
                                          "cpu_ms_per_1000_lines": round(per_k(ct["cpu_secs"]), 2)},
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"ctxctl savings over {report['files']} files, {report['lines']:,} lines "
          f"({', '.join(args.packages)}); {report['symbols']:,} symbols")
    for cmd, med in report["median_saved_percent"].items():
        print(f"  {cmd:<8} median saved {med}%  ({report['files_measured'][cmd]} files)")
    print(f"  outline  {report['outline_ms_per_1000_lines']} ms / 1,000 lines wall, "
          f"{report['outline_cpu_ms_per_1000_lines']} ms CPU "
          f"({report['outline_with_metrics_ms_per_1000_lines']} ms wall with cl100k metrics)")
    if report["ctags"]:
        c = report["ctags"]
        ratio = report["outline_cpu_ms_per_1000_lines"] / max(c["cpu_ms_per_1000_lines"], 1e-9)
        print(f"  ctags    {c['ms_per_1000_lines']} ms / 1,000 lines wall, {c['cpu_ms_per_1000_lines']} ms CPU "
              f"({c['tags']:,} tags; {c['version']}); ctxctl outline takes {ratio:.1f}x ctags' CPU time")
    else:
        print("  ctags    not installed (apt-get install universal-ctags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
