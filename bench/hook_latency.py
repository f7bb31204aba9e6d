#!/usr/bin/env python3
"""What the agent waits for at each hook, as installed (docs/design.md §12; a report, not a test:
always exits 0).

Usage::

    python bench/hook_latency.py [--runs 240] [--pause 0.01] [--no-shell]
    python bench/hook_latency.py --flood 10000 [--parallel 4]

The hooks measured are exactly what ``ctxlake install claude_code`` writes into a temporary home
(``lib.install.plan`` + ``apply``, read back from ``settings.json``), spawned the way Claude Code
spawns them: exec form (``command`` + ``args``) as an argv, no shell; the shell form older
installs wrote (``env CTXLAKE_…=… <python> -I -S hook.py …``, measured as "before") through
``/bin/sh -c``. Each hook run is paired with a bare interpreter (``<python> -I -S -c pass``)
spawned the same way (argv, or ``/bin/sh -c``), interleaved, alternating which goes first, with a
real recorded payload on stdin (``tests/fixtures/claude-hooks``, and for the events those lack,
Claude Code 2.1.332's own from ``tests/fixtures/captured``; a PreToolUse payload only goes to
the group whose ``matcher`` admits its tool, as Claude Code routes it).

Per event class (event × synchronous/async) it reports:

- **agent waits**: spawn to exit for a synchronous hook (Claude Code reads its answer); 0 for an
  ``"async": true`` hook (the runtime does not wait for it, Claude Code hooks reference);
- **hook wall / CPU**: the process's own spawn-to-exit time and user+system CPU (``wait4``; a
  synchronous hook's detached capture child is not in it, the async hook's capture is);
- **peak RSS**: in extra runs under GNU ``time -f %M`` (see :func:`peak_rss_kib`).

Budgets: synchronous hooks median ≤ 1.3× and p99 ≤ 2× the bare interpreter spawned the same way;
async hooks add 0 ms to the agent's wait; no hook process is left once the captures are done
(every process whose command line carries this run's unique fleet id is counted, right after the
last event and again after :func:`lib.spool.wait_for_hooks`).

SessionEnd is measured once more to its end (:func:`session_end_capture`): Claude Code gives all
SessionEnd hooks 1.5 s together, so what counts there is when the capture is on disk (the
``<sid>.done`` marker, written last), not only when the agent stops waiting.

``--flood N`` checks that last budget at volume: N events through the installed exec-form hooks
(every event class in turn, real payloads), ``--parallel`` at a time as a runtime firing async
hooks does, nothing awaited but the hook process itself; it counts this run's processes every
100 events (the most seen at once), right after the last event, and after the captures
finished, and the spool lines written (one per captured envelope) against hook-errors.log.
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
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "claude-hooks")
CAPTURED = os.path.join(ROOT, "tests", "fixtures", "captured", "claude-code-2.1.332", "hooks-newer-events.json")
"""Claude Code 2.1.332's own PostModelSwitch (and newer) payloads, for the events the older
recordings lack."""
GNU_TIME = "/usr/bin/time"
SH = "/bin/sh"
BEFORE_EVENTS = ("SessionStart", "PreToolUse", "PostToolUse")
"""Events also measured in the pre-#22 shell form (before/after on the same payloads)."""


def load_payloads() -> dict[str, list[bytes]]:
    """``{event: [stdin bytes]}`` from every recorded Claude Code payload; PreToolUse is split
    into ``PreToolUse:write`` / ``PreToolUse:other`` by the adapter's write tools."""
    from lib.adapters import claude_code

    out: dict[str, list[bytes]] = {}
    files = [os.path.join(FIXTURES, n) for n in sorted(os.listdir(FIXTURES)) if n.endswith(".json")] + [CAPTURED]
    recorded: set = set()
    for path in files:
        with open(path, encoding="utf-8") as fh:
            for p in json.load(fh):
                event = p.get("hook_event_name")
                if event == "PreToolUse":
                    event += ":write" if p.get("tool_name") in claude_code.WRITE_TOOLS else ":other"
                if path == CAPTURED and event in recorded:
                    continue  # only the events the recordings lack
                out.setdefault(event, []).append(json.dumps(p).encode())
        recorded = set(out) if path != CAPTURED else recorded
    return out


def installed_hooks(home: str, ident) -> list[tuple[str, str | None, dict]]:
    """``[(event, matcher, hook object)]`` of ours, read back from the settings.json that
    ``install`` wrote under ``home``."""
    from lib import install

    for change in install.plan("install", ["claude_code"], ident, home):
        install.apply(change)
    with open(os.path.join(home, ".claude", "settings.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    return [(event, g.get("matcher"), h) for event, groups in doc["hooks"].items() for g in groups
            for h in g["hooks"] if install.is_our_hook(h, ident, "claude_code")]


def runtime_argv(hook: dict) -> list[str]:
    """The argv Claude Code spawns for ``hook``: exec form directly, shell form via ``sh -c``."""
    if "args" in hook:
        return [hook["command"], *hook["args"]]
    return [SH, "-c", hook["command"]]


def direct_hooks(hooks) -> list[tuple[str, str | None, dict]]:
    """The synchronous installed hooks without the ``-c`` launcher (``<python> -I -S hook.py …``,
    what install wrote before it, docs/runtimes.md "When the hook is gone"): the baseline of the
    launcher's cost, spawned and measured in the same rotation."""
    from lib import install

    n = len(install.LAUNCH_ARGS)
    return [(e, m, dict(h, args=["-I", "-S", *h["args"][n:]])) for e, m, h in hooks if not h.get("async")]


def cases(hooks, shell_hooks, payloads, py: str, direct=()) -> list[dict]:
    """The rotation: one case per (installed hook, payload class it receives), each with the bare
    interpreter spawned the same way; ``direct`` (:func:`direct_hooks`) adds the form without the
    launcher, as ``direct``."""
    bare_exec = [py, "-I", "-S", "-c", "pass"]
    bare_shell = [SH, "-c", f"{py} -I -S -c pass"]
    out = []
    for form, items in (("exec", hooks), ("direct", direct), ("shell", shell_hooks)):
        for event, matcher, hook in items:
            if event == "PreToolUse":
                keys = ["PreToolUse:write"] if matcher else ["PreToolUse:other", "PreToolUse:write"]
            else:
                keys = [event]
            for key in keys:
                if not payloads.get(key):
                    continue
                run_async = hook.get("async") is True
                label = f"{key} ({'async' if run_async else 'sync'}, {form})"
                out.append({"label": label, "argv": runtime_argv(hook), "bare": bare_shell if form == "shell" else bare_exec,
                            "payloads": payloads[key], "async": run_async, "form": form})
    return out


def spawn(argv: list[str], stdin: bytes, env: dict) -> tuple[float, float, int, bytes]:
    """Run ``argv`` with ``stdin``; ``(wall s, user+sys CPU s, exit code, stdout)`` from ``wait4``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:  # the bare interpreter may exit before reading its stdin: that is not an error here
        proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode, out


def peak_rss_kib(argv: list[str], stdin: bytes, env: dict, scratch: str) -> int:
    """Peak RSS (KiB) of one run of ``argv`` under GNU time (``%M``), or -1 without it.

    A child's ``ru_maxrss`` includes the memory of the process that forked it (Linux records the
    pre-``exec`` high-water mark), so a Python parent inflates it; GNU time is a small C parent.
    """
    if not os.access(GNU_TIME, os.X_OK):
        return -1
    out = os.path.join(scratch, "rss.txt")
    subprocess.run([GNU_TIME, "-f", "%M", "-o", out, *argv], input=stdin, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env)
    with open(out, encoding="ascii") as fh:
        return int(fh.read().split()[-1])


def count_processes(token: str) -> int:
    """Processes (not this one) whose command line holds ``token`` (this run's fleet id)."""
    n, needle = 0, token.encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                n += needle in fh.read()
        except OSError:
            continue
    return n


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100 * len(s) + 0.5)) - 1))
    return s[k]


def setup_home(base: str, fleet: str) -> dict:
    """A temporary CTXLAKE_HOME with a cached briefing; the hooks' environment (no CTXLAKE_FLEET_ID
    or CTXLAKE_AGENT_ID: the installed arguments carry the identity)."""
    cache = os.path.join(base, "cache", fleet)
    os.makedirs(cache)
    with open(os.path.join(cache, "briefing.json"), "w", encoding="utf-8") as fh:
        json.dump({"text": "## Recent sessions\n" + "\n".join(
            f"- [github.com/acme/app, 2026-01-0{i}] session {i}: fixed the flaky test in module {i}" for i in range(1, 6)),
            "claim_ids": ["c-1", "c-2", "c-3"], "rendered_at": "2026-01-01T00:00:00.000Z"}, fh)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=base, CTXLAKE_CONFIG=os.path.join(base, "absent.toml"))
    return env


def ratio_line(label: str, hook: float, bare: float, budget: float) -> str:
    """``hook`` vs ``bare`` (ms), their ratio, the budget and PASS/OVER."""
    r = hook / bare if bare else float("inf")
    return f"{label} {hook:7.2f} ms vs bare {bare:6.2f} ms = {r:4.2f}x (<= {budget}x {'PASS' if r <= budget else 'OVER'})"


def session_end_capture(hooks, payloads, env: dict, base: str, runs: int) -> dict:
    """Spawn the installed SessionEnd hook ``runs`` times (each payload under a fresh session id)
    and time, from the spawn: the agent's wait (the hook process exits) and the capture's end
    (``<sid>.done`` exists; polled every 0.5 ms). Returns ``{"wait": [s], "done": [s]}``."""
    from lib.paths import Paths

    (hook,) = [h for e, _, h in hooks if e == "SessionEnd"]
    paths = Paths.from_env(env)
    out = {"wait": [], "done": []}
    for i in range(runs):
        p = json.loads(payloads["SessionEnd"][i % len(payloads["SessionEnd"])])
        p["session_id"] = f"bench-end-{uuid.uuid4().hex}"
        done = paths.session_done("claude_code", p["session_id"])
        t0 = time.perf_counter()
        proc = subprocess.Popen(runtime_argv(hook), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
        proc.communicate(json.dumps(p).encode())
        out["wait"].append(time.perf_counter() - t0)
        while not os.path.exists(done) and time.perf_counter() - t0 < 10:
            time.sleep(0.0005)
        out["done"].append(time.perf_counter() - t0)
    return out


def spool_lines(base: str) -> int:
    """Complete lines in every session spool file under ``base/spool`` (the captured envelopes)."""
    n = 0
    for root, dirs, names in os.walk(os.path.join(base, "spool")):
        dirs[:] = [d for d in dirs if d != ".state"]
        for name in names:
            if ".ndjson" in name:
                with open(os.path.join(root, name), "rb") as fh:
                    n += fh.read().count(b"\n")
    return n


def flood(rotation: list[dict], n: int, parallel: int, env: dict, base: str, token: str) -> dict:
    """Spawn ``n`` hook events (exec-form cases of ``rotation`` in turn), ``parallel`` at a time;
    return ``{"events", "secs", "max_seen", "in_flight", "left", "bad", "spool_lines",
    "error_lines"}`` (process counts by :func:`count_processes` of ``token``)."""
    from lib.spool import wait_for_hooks

    cases_ = [c for c in rotation if c["form"] == "exec"]
    running: list = []
    bad = max_seen = 0
    t0 = time.perf_counter()

    def reap(proc) -> int:
        out = proc.stdout.read()
        code = proc.wait()
        proc.stdout.close()
        try:
            return int(code != 0 or not isinstance(json.loads(out), dict))
        except ValueError:
            return 1

    for i in range(n):
        c = cases_[i % len(cases_)]
        data = c["payloads"][(i // len(cases_)) % len(c["payloads"])]
        if len(running) >= parallel:
            bad += reap(running.pop(0))
        proc = subprocess.Popen(c["argv"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        running.append(proc)
        if i % 100 == 0:
            max_seen = max(max_seen, count_processes(token))
        if i and i % 1000 == 0:
            print(f"  ... {i} events in {time.perf_counter() - t0:.0f} s, at most {max_seen} processes at once so far",
                  flush=True)
    for proc in running:
        bad += reap(proc)
    secs = time.perf_counter() - t0
    in_flight = count_processes(token)
    wait_for_hooks(os.path.join(base, "spool", ".state"), timeout=120)
    time.sleep(0.5)
    left = count_processes(token)
    errors = os.path.join(base, "hook-errors.log")
    error_lines = len(open(errors, encoding="utf-8").read().splitlines()) if os.path.exists(errors) else 0
    return {"events": n, "secs": secs, "max_seen": max(max_seen, in_flight), "in_flight": in_flight, "left": left,
            "bad": bad, "spool_lines": spool_lines(base), "error_lines": error_lines}


def main(argv=None) -> int:
    """Run the benchmark and print the report; always returns 0."""
    from lib import install
    from lib.spool import wait_for_hooks

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=240, help="hook runs over all cases (and as many bare runs)")
    p.add_argument("--pause", type=float, default=0.01, help="seconds to sleep between runs")
    p.add_argument("--no-shell", action="store_true", help="skip the pre-#22 shell-form install ('before')")
    p.add_argument("--no-direct", action="store_true",
                   help="skip the synchronous hooks without the -c launcher (the launcher's baseline)")
    p.add_argument("--flood", type=int, default=0, metavar="N",
                   help="instead: N events through the installed hooks, then count the processes left")
    p.add_argument("--parallel", type=int, default=4, help="with --flood: hook processes at a time")
    args = p.parse_args(argv)

    py = install.resolve_interpreter()
    fleet = f"benchfleet-{uuid.uuid4().hex[:12]}"  # unique: the leftover-process count looks for it
    ident = install.Identity(fleet, "bench-agent", py, py)
    payloads = load_payloads()
    with tempfile.TemporaryDirectory(prefix="ctxlake-bench-hook-") as base:
        env = setup_home(base, fleet)
        hooks = installed_hooks(os.path.join(base, "home"), ident)
        shell = [] if args.no_shell else [(e, None, {"command": install.legacy_hook_command(ident, "claude_code", e)})
                                          for e in BEFORE_EVENTS]  # pre-#22: every event synchronous
        rotation = cases(hooks, shell, payloads, py, [] if args.no_direct else direct_hooks(hooks))
        if args.flood:
            r = flood(rotation, args.flood, args.parallel, env, base, fleet)
            print(f"flood: {r['events']} hook events through the installed exec-form hooks, {args.parallel} at a time, "
                  f"in {r['secs']:.0f} s ({r['events'] / r['secs']:.0f}/s; load {os.getloadavg()[0]:.2f}); bad answers {r['bad']}")
            print(f"  processes of this run: at most {r['max_seen']} at once, {r['in_flight']} right after the last event, "
                  f"{r['left']} after the captures finished ({'PASS' if r['left'] == 0 else 'OVER'}: none may be left)")
            print(f"  spool lines written {r['spool_lines']}; hook-errors.log lines {r['error_lines']}")
            return 0
        state_dir = os.path.join(base, "spool", ".state")
        stats = {c["label"]: {"wall": [], "cpu": [], "bare": [], "bare_cpu": [], "rss": [], "bare_rss": [], "bad": 0}
                 for c in rotation}
        for c in rotation:  # warm-up: byte-compile lib/ and fill the page cache, unmeasured
            spawn(c["argv"], c["payloads"][0], env)
        wait_for_hooks(state_dir, timeout=30)
        t_start = time.perf_counter()
        for i in range(args.runs):
            c = rotation[i % len(rotation)]
            data = c["payloads"][(i // len(rotation)) % len(c["payloads"])]
            s = stats[c["label"]]
            for which in (("hook", "bare") if (i // len(rotation)) % 2 == 0 else ("bare", "hook")):
                if which == "hook":
                    wall, cpu, code, out = spawn(c["argv"], data, env)
                    try:
                        ok = code == 0 and isinstance(json.loads(out), dict)
                    except ValueError:
                        ok = False
                    s["bad"] += not ok
                    s["wall"].append(wall)
                    s["cpu"].append(cpu)
                else:
                    wall, cpu, _, _ = spawn(c["bare"], data, env)
                    s["bare"].append(wall)
                    s["bare_cpu"].append(cpu)
            wait_for_hooks(state_dir, timeout=30)
            if i % 8 == 0:  # memory in runs of their own (GNU time would skew the walls)
                s["rss"].append(peak_rss_kib(c["argv"], data, env, base))
                s["bare_rss"].append(peak_rss_kib(c["bare"], data, env, base))
                wait_for_hooks(state_dir, timeout=30)
            time.sleep(args.pause)
        elapsed = time.perf_counter() - t_start
        ends = session_end_capture(hooks, payloads, env, base, max(10, args.runs // 12)) if payloads.get("SessionEnd") else None
        in_flight = count_processes(fleet)
        wait_for_hooks(state_dir, timeout=30)
        time.sleep(0.5)
        left = count_processes(fleet)
        errors = os.path.join(base, "hook-errors.log")
        error_lines = open(errors, encoding="utf-8").read().splitlines() if os.path.exists(errors) else []

    ms = 1000.0
    print(f"hook latency as installed: {args.runs} hook runs + {args.runs} bare runs interleaved in {elapsed:.0f} s "
          f"(python {platform.python_version()}, {os.cpu_count()} cpu, load {os.getloadavg()[0]:.2f}; "
          "a shared machine: absolute times are noisy, the ratios are the result)")
    print(f"  processes of this run right after the last event: {in_flight}; after the captures finished: {left} "
          f"({'PASS' if left == 0 else 'OVER'}: none may be left); hook-errors.log lines: {len(error_lines)}")
    if ends:
        w, d = ends["wait"], ends["done"]
        print(f"  SessionEnd to its end (n={len(d)}): agent waits median {statistics.median(w) * ms:.1f} ms; capture on disk "
              f"(.done written) median {statistics.median(d) * ms:.1f} ms, p99 {percentile(d, 99) * ms:.1f} ms, "
              f"max {max(d) * ms:.1f} ms = {max(d) / 1.5:.2f}x Claude Code's 1.5 s SessionEnd budget "
              f"({'PASS' if max(d) <= 0.75 else 'OVER'}: half of it at most, the margin)")
    classes: dict[str, dict] = {}
    print("  per event (hook wall median/p99 and CPU median in ms; peak RSS MiB hook/bare):")
    for label, s in stats.items():
        if not s["wall"]:
            continue
        form, kind = label.rsplit("(", 1)[1].rstrip(")").split(", ")[::-1]
        agg = classes.setdefault(f"{kind} hooks, {form} form", {"wall": [], "cpu": [], "bare": [], "bare_cpu": [], "rss": [],
                                                             "bare_rss": [], "bad": 0, "async": kind == "async"})
        for k in ("wall", "cpu", "bare", "bare_cpu", "rss", "bare_rss"):
            agg[k] += [x for x in s[k] if k not in ("rss", "bare_rss") or x > 0]
        agg["bad"] += s["bad"]
        rss = [x for x in s["rss"] if x > 0]
        print(f"    {label:<36} n={len(s['wall']):<3} wall {statistics.median(s['wall']) * ms:6.2f}/"
              f"{percentile(s['wall'], 99) * ms:6.2f}  cpu {statistics.median(s['cpu']) * ms:6.2f}  "
              f"rss {max(rss) / 1024 if rss else float('nan'):4.1f}  bad answers {s['bad']}")
    print("  per event class (the budgets):")
    for name, c in classes.items():
        med, p99 = statistics.median(c["wall"]) * ms, percentile(c["wall"], 99) * ms
        b_med, b_p99 = statistics.median(c["bare"]) * ms, percentile(c["bare"], 99) * ms
        mem = (f"peak RSS {max(c['rss']) / 1024:.1f} MiB vs bare {max(c['bare_rss']) / 1024:.1f} MiB"
               if c["rss"] and c["bare_rss"] else "peak RSS n/a (no GNU time)")
        print(f"    {name}: n={len(c['wall'])}, bad answers {c['bad']}; hook wall median {med:.2f} ms p99 {p99:.2f} ms, "
              f"CPU median {statistics.median(c['cpu']) * ms:.2f} ms vs bare {statistics.median(c['bare_cpu']) * ms:.2f} ms "
              f"({statistics.median(c['cpu']) / statistics.median(c['bare_cpu']):.2f}x: less load-bound than wall); {mem}")
        if c["async"]:
            print(f"      agent waits 0 ms (async: the runtime does not wait) PASS; the hook's own wall is "
                  f"{med / b_med:.2f}x bare, spent beside the agent")
        else:
            print("      agent waits: " + ratio_line("median", med, b_med, 1.3) + "; " + ratio_line("p99", p99, b_p99, 2.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
