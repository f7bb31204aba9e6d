"""``ctxlake demo``: the whole pipeline on the repository's real fixtures in a temporary home
(an embedded ``file://`` store), each step its own process the way the runtimes and the operator
run them (docs/operations.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(args, cfg, out) -> int:
    """Import transcripts, replay hook payloads as two agents, sync, maint, sync, then print
    status, sessions, the briefing a new SessionStart gets and a DuckDB query, to ``out``;
    ``args.fixtures`` (default ``tests/fixtures``), ``args.keep`` keeps the home. Returns 0."""
    import shutil
    import tempfile

    from lib.paths import Paths

    fixtures = args.fixtures or os.path.join(ROOT, "tests", "fixtures")
    home = tempfile.mkdtemp(prefix="ctxlake-demo-")
    paths = Paths.from_env({"CTXLAKE_HOME": home})
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_CONFIG=paths.home_config, CTXLAKE_FLEET_ID="demo-fleet")
    py = sys.executable

    def step(title):
        out.write(f"\n== {title}\n")
        out.flush()

    def run(argv, agent="alice", stdin=None, show=True):
        e = dict(env, CTXLAKE_AGENT_ID=agent)
        r = subprocess.run(argv, input=stdin, capture_output=True, env=e, cwd=ROOT)
        if show and r.stdout:
            out.write(r.stdout.decode())
        if r.returncode not in (0,):
            out.write(r.stderr.decode()[-2000:])
        return r

    out.write(f"ctxlake demo in {home} (store file://{home}/lake, fleet demo-fleet)\n")
    step("1. import real Claude Code transcripts (agent alice)")
    run([py, "ctxlake.py", "import", "claude-code", "--path", os.path.join(fixtures, "claude-transcripts")])
    step("2. replay real hook payloads through hook.py, one process each (agents alice and bob)")
    counts = {}
    for name in sorted(os.listdir(os.path.join(fixtures, "claude-hooks"))):
        agent = "bob" if name.startswith("serverless") else "alice"
        with open(os.path.join(fixtures, "claude-hooks", name), "rb") as fh:
            payloads = json.load(fh)
        for payload in payloads:
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
    wait_for_hooks(paths.state_dir)
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    else:
        out.write(f"\nkept {home}\n")
    return 0
