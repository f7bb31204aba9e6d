#!/usr/bin/env python3
"""Hook latency and memory against docs/design.md §12 (a report, not a test: always exits 0).

Usage::

    python bench/hook_latency.py [--runs 200] [--pause 0.02]

Each run starts ``python -I -S hook.py claude_code <event>`` exactly as a runtime does, with a
real recorded payload on stdin (a mix of PreToolUse, PostToolUse, UserPromptSubmit and
SessionStart, the latter with a cached briefing to inject), and — interleaved in the same run,
alternating which goes first — a bare ``python -I -S -c pass``. Wall time is measured from
spawn to exit (what the agent waits for). Peak RSS is measured every 4th run in extra runs of
each under GNU ``time -f %M`` (see :func:`peak_rss_kib` for why not ``getrusage``).
Between runs the bench waits for the detached capture child (:func:`lib.spool.wait_for_hooks`)
and pauses, so one run's background work does not slow the next measurement.

Budgets: hook median ≤ 1.5× bare, p99 ≤ 2× bare, peak RSS ≤ 1.5× bare.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

HOOK = os.path.join(ROOT, "hook.py")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "claude-hooks")
MIX = {  # fixture file → how many of its payloads enter the rotation
    "attio-mcp-server__pre_tool_use.json": 12,
    "attio-mcp-server__post_tool_use.json": 12,
    "serverless-plugins__user_prompt_submit.json": 6,
    "attio-mcp-server__session_start.json": 6,
}


def load_payloads() -> list[tuple[str, bytes]]:
    """``(event, stdin bytes)`` for the payload mix, interleaved by event."""
    by_file = []
    for name, n in MIX.items():
        with open(os.path.join(FIXTURES, name), encoding="utf-8") as fh:
            items = json.load(fh)[:n]
        by_file.append([(p["hook_event_name"], json.dumps(p).encode()) for p in items])
    out = []
    for i in range(max(len(x) for x in by_file)):
        out.extend(x[i] for x in by_file if i < len(x))
    return out


def spawn(argv: list[str], stdin: bytes, env: dict) -> tuple[float, int, bytes]:
    """Run ``argv`` with ``stdin``; return ``(wall seconds, exit code, stdout)``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env)
    try:  # the bare interpreter may exit before reading its stdin: that is not an error here
        proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    out = proc.stdout.read()
    code = proc.wait()
    wall = time.perf_counter() - t0
    proc.stdout.close()
    return wall, code, out


GNU_TIME = "/usr/bin/time"


def peak_rss_kib(argv: list[str], stdin: bytes, env: dict, scratch: str) -> tuple[int, str]:
    """Peak RSS (KiB) of one run of ``argv`` and how it was measured.

    A child's ``ru_maxrss`` includes the memory of the process that forked it (Linux records
    the pre-``exec`` high-water mark), so a Python parent inflates it. GNU time is a small C
    parent: its ``%M`` is the command's own peak. Without it, fall back to ``wait4`` and say so.
    """
    if os.access(GNU_TIME, os.X_OK):
        out = os.path.join(scratch, "rss.txt")
        subprocess.run([GNU_TIME, "-f", "%M", "-o", out, *argv], input=stdin, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)
        with open(out, encoding="ascii") as fh:
            return int(fh.read().split()[-1]), "GNU time %M"
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        proc.stdin.write(stdin)
    except BrokenPipeError:
        pass
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss, "wait4 ru_maxrss (includes this bench's pre-exec footprint: install GNU time)"


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100 * len(s) + 0.5)) - 1))
    return s[k]


def setup_home(base: str) -> dict:
    """A temporary CTXLAKE_HOME with a cached briefing; returns the hook's environment."""
    fleet = "benchfleet"
    cache = os.path.join(base, "cache", fleet)
    os.makedirs(cache)
    with open(os.path.join(cache, "briefing.json"), "w", encoding="utf-8") as fh:
        json.dump({"text": "## Recent sessions\n" + "\n".join(
            f"- [github.com/acme/app, 2026-01-0{i}] session {i}: fixed the flaky test in module {i}" for i in range(1, 6)),
            "claim_ids": ["c-1", "c-2", "c-3"], "rendered_at": "2026-01-01T00:00:00.000Z"}, fh)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=base, CTXLAKE_CONFIG=os.path.join(base, "absent.toml"), CTXLAKE_FLEET_ID=fleet,
               CTXLAKE_AGENT_ID="bench-agent")
    return env


def line(label: str, hook: float, bare: float, budget: float, unit: str, fmt: str) -> str:
    """One report line: both values, their ratio, the budget and PASS/OVER."""
    ratio = hook / bare if bare else float("inf")
    verdict = "PASS" if ratio <= budget else "OVER"
    return (f"  {label:<12} hook {format(hook, fmt)}{unit}  bare {format(bare, fmt)}{unit}  "
            f"ratio {ratio:.2f}x  budget <= {budget}x  {verdict}")


def main(argv=None) -> int:
    """Run the benchmark and print the report; always returns 0."""
    from lib.spool import wait_for_hooks

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=200, help="hook runs (and as many bare runs)")
    p.add_argument("--pause", type=float, default=0.02, help="seconds to sleep between runs")
    args = p.parse_args(argv)

    payloads = load_payloads()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="ctxlake-bench-hook-") as base:
        env = setup_home(base)
        state_dir = os.path.join(base, "spool", ".state")
        hook_wall, bare_wall, hook_rss, bare_rss = [], [], [], []
        by_event: dict[str, list[float]] = {}
        failures = rss_runs = 0
        rss_method = ""
        # warm-up: byte-compile lib/ and fill the page cache, unmeasured
        for event, data in payloads[:4]:
            spawn([py, "-I", "-S", HOOK, "claude_code", event], data, env)
        wait_for_hooks(state_dir, timeout=30)
        for i in range(args.runs):
            event, data = payloads[i % len(payloads)]
            hook_argv = [py, "-I", "-S", HOOK, "claude_code", event]
            bare_argv = [py, "-I", "-S", "-c", "pass"]
            order = ("hook", "bare") if i % 2 == 0 else ("bare", "hook")
            for which in order:
                if which == "hook":
                    wall, code, out = spawn(hook_argv, data, env)
                    try:
                        ok = code == 0 and isinstance(json.loads(out), dict)
                    except ValueError:
                        ok = False
                    failures += not ok
                    hook_wall.append(wall)
                    by_event.setdefault(event, []).append(wall)
                else:
                    bare_wall.append(spawn(bare_argv, data, env)[0])
            wait_for_hooks(state_dir, timeout=30)
            if i % 4 == 0:  # memory, measured in runs of their own (GNU time would skew the walls)
                rss, rss_method = peak_rss_kib(hook_argv, data, env, base)
                hook_rss.append(rss)
                bare_rss.append(peak_rss_kib(bare_argv, data, env, base)[0])
                wait_for_hooks(state_dir, timeout=30)
                rss_runs += 1
            time.sleep(args.pause)
        captured = 0
        spool = os.path.join(base, "spool", "claude_code")
        for name in os.listdir(spool) if os.path.isdir(spool) else []:
            with open(os.path.join(spool, name), "rb") as fh:
                captured += fh.read().count(b"\n")

    ms = 1000.0
    print(f"hook latency: {args.runs} hook runs interleaved with {args.runs} bare runs "
          f"(python {platform.python_version()}, {os.cpu_count()} cpu, load {os.getloadavg()[0]:.2f})")
    print(f"  answers: {args.runs - failures} valid / {args.runs}; captured lines: {captured} "
          f"({args.runs} measured + {rss_runs} memory runs + 4 warm-up)")
    h_med, b_med = statistics.median(hook_wall) * ms, statistics.median(bare_wall) * ms
    h_p99, b_p99 = percentile(hook_wall, 99) * ms, percentile(bare_wall, 99) * ms
    h_rss, b_rss = max(hook_rss) / 1024, max(bare_rss) / 1024
    print(line("median wall", h_med, b_med, 1.5, " ms", ".2f"))
    print(line("p99 wall", h_p99, b_p99, 2.0, " ms", ".2f"))
    print(line("peak RSS", h_rss, b_rss, 1.5, " MiB", ".1f"))
    print(f"  (RSS over {rss_runs} runs each, by {rss_method}; median hook {statistics.median(hook_rss) / 1024:.1f} MiB, "
          f"bare {statistics.median(bare_rss) / 1024:.1f} MiB)")
    for event, walls in sorted(by_event.items()):
        print(f"  {event:<17} n={len(walls):<4} median {statistics.median(walls) * ms:.2f} ms  "
              f"p99 {percentile(walls, 99) * ms:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
