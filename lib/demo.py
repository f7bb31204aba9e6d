"""``ctxlake demo``: the whole pipeline on the repository's real fixtures in a temporary home
(an embedded ``file://`` store), each step its own process the way the runtimes and the operator
run them (docs/operations.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


FIXTURE_DIRS = ("claude-transcripts", "claude-hooks")
"""What ``--fixtures DIR`` must hold: real Claude Code transcripts and hook payload files."""


def run_cli(args, cfg, out) -> int:
    """Import transcripts, replay hook payloads as two agents, sync, maint, sync, then print
    status, sessions, the briefing a new SessionStart gets and a DuckDB query, to ``out``;
    ``args.fixtures`` (default ``tests/fixtures`` of the checkout), ``args.keep`` keeps the home.
    Returns 0. The temporary home is removed on every exit unless ``--keep`` (a failure too).
    :raises lib.failures.Failure: ``usage`` before anything runs when the fixtures are not
    there (an installed package has no ``tests/``); a step that fails stops the demo with its
    exit code's kind and its error line."""
    import shutil
    import tempfile

    from lib.failures import Failure

    fixtures = args.fixtures or os.path.join(ROOT, "tests", "fixtures")
    missing = [d for d in FIXTURE_DIRS if not os.path.isdir(os.path.join(fixtures, d))]
    if missing:
        where = f"--fixtures {fixtures}" if args.fixtures else f"the checkout's fixtures ({fixtures})"
        raise Failure("usage", f"demo: {where} has no {' or '.join(missing)} folder; run from a checkout of ctxlake "
                               "or pass --fixtures DIR (a folder holding claude-transcripts/ and claude-hooks/)")
    home = tempfile.mkdtemp(prefix="ctxlake-demo-")
    try:
        _run(fixtures, home, out)
    finally:
        from lib.paths import Paths
        from lib.spool import wait_for_hooks

        wait_for_hooks(Paths.from_env({"CTXLAKE_HOME": home}).state_dir)  # no capture writes into a removed home
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
        else:
            out.write(f"\nkept {home}\n")
    return 0


def _run(fixtures: str, home: str, out) -> None:
    from lib.config import render_toml
    from lib.failures import EXIT_CODES, Failure
    from lib.paths import Paths

    paths = Paths.from_env({"CTXLAKE_HOME": home})
    with open(paths.home_config, "w") as fh:
        fh.write(render_toml(paths.default_store_url, "demo-fleet"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_CONFIG=paths.home_config)
    py = sys.executable
    title = ""

    def step(name):
        nonlocal title
        title = name
        out.write(f"\n== {name}\n")
        out.flush()

    def run(argv, agent="alice", stdin=None, show=True):
        e = dict(env, CTXLAKE_AGENT_ID=agent)
        r = subprocess.run(argv, input=stdin, capture_output=True, env=e, cwd=ROOT)
        if show and r.stdout:
            out.write(r.stdout.decode())
        if r.returncode != 0:
            last = ([ln for ln in r.stderr.decode(errors="replace").splitlines() if ln.strip()] or ["(no error line)"])[-1]
            kind = next((k for k, c in EXIT_CODES.items() if c == r.returncode and k != "ok"), "internal")
            raise Failure(kind, f"demo: step '{title}' failed (exit {r.returncode}): {last}")
        return r

    out.write(f"ctxlake demo in {home} (store {paths.default_store_url}, fleet demo-fleet)\n")
    step("1. import real Claude Code transcripts (agent alice)")
    run([py, "ctxlake.py", "import", "claude-code", "--path", os.path.join(fixtures, "claude-transcripts")])
    step("2. replay real hook payloads through hook.py, one process each (agents alice and bob)")
    counts = {}
    hooks_dir = os.path.join(fixtures, "claude-hooks")
    for name in sorted(os.listdir(hooks_dir)):
        agent = "bob" if name.startswith("serverless") else "alice"
        try:
            with open(os.path.join(hooks_dir, name), "rb") as fh:
                payloads = json.load(fh)
        except (OSError, ValueError) as exc:
            raise Failure("usage", f"demo: {os.path.join(hooks_dir, name)} is not a JSON list of hook payloads ({exc})") from None
        for payload in payloads if isinstance(payloads, list) else []:
            run([py, "-I", "-S", "hook.py", "claude_code"], agent=agent, stdin=json.dumps(payload).encode(), show=False)
            counts[agent] = counts.get(agent, 0) + 1
    from lib.spool import wait_for_hooks

    wait_for_hooks(paths.state_dir)
    out.write(", ".join(f"{a}: {n} payloads" for a, n in sorted(counts.items())) + "\n")
    step("3. syncd --once (spool → Parquet segments → seal → cache)")
    run([py, "syncd.py", "--once"])
    step("4. maint --once (lease, compaction, digests, snapshot)")
    run([py, "maint.py", "--once"])
    step("5. syncd --once (pull the snapshot, render the briefing)")
    run([py, "syncd.py", "--once"])
    step("ctxlake status")
    run([py, "ctxlake.py", "status"])
    step("ctxlake sessions")
    run([py, "ctxlake.py", "sessions"])
    step("the briefing a new SessionStart receives (exactly what hook.py prints)")
    start = {"session_id": "demo-new-session", "hook_event_name": "SessionStart", "source": "startup", "cwd": home}
    run([py, "-I", "-S", "hook.py", "claude_code", "SessionStart"], agent="carol", stdin=json.dumps(start).encode())
    step("DuckDB over the lake: events per type per session")
    run([py, "ctxlake.py", "query",
         "SELECT session_id, event_type, count(*) AS n FROM events GROUP BY ALL ORDER BY session_id, n DESC"])
