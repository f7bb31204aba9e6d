"""Crash safety of the spool → lake pipeline (docs/design.md §2 invariant 2, §3, §4, §5).

``syncd.py --once`` and ``maint.py --once`` run as real subprocesses and are SIGKILLed at random
points, over and over, then restarted until a run completes. The kill points are random in two
ways: a plain random delay, or "right after the N-th new object (segment or ``_SEALED``) shows
up in the store, plus a random jitter" — the second kind makes sure many kills land mid-pass,
between a PUT and the watermark write that follows it.

What must hold:

- after every kill, every envelope that is no longer in the spool is in some segment in the
  store (a spool line is deleted only after its segment exists);
- after a completed pass, every spooled envelope is in exactly one segment row (a replay after a
  crash re-sends the same bytes under the same key, so nothing is duplicated), and sealed
  sessions' spool files are gone;
- after compaction (maint, also killed mid-pass, also right after its Delta commit landed), the
  fleet's Delta table holds every envelope exactly once — also the rows a session re-sent after
  its watermark was lost.

And the torn-line cases: half a line followed by a whole one loses only the fragment; a torn
final line without a newline is dropped, and counted, only once the session is done.

Set ``CTXLAKE_CRASH_SEED`` to replay a particular sequence of kill points.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from tests.conftest import ROOT

PYTHON = sys.executable
FLEET = "crashfleet"
AGENT = "crash-agent"
RUNTIME = "claude_code"
RUN_TIMEOUT = 180  # safety net against a hung role script; never an assertion about speed
POLL = 0.005
LEASE_TTL = 6
CRASHPOINT = os.path.join(ROOT, "tests", "pipeline", "crashpoint.py")


# -- helpers ---------------------------------------------------------------------------------

def _write_config(home: str, **sync) -> str:
    """Write a ``ctxlake.toml`` with small segments and a short maintenance lease; return its path.

    The lease TTL bounds how long a killed maint blocks the next one (the test waits it out),
    and maint gives up when one step between two renewals outlasts it, so it is short but not
    so short that a loaded machine trips it.
    """
    path = os.path.join(home, "ctxlake.toml")
    lines = ["[sync]"] + [f"{k} = {v}" for k, v in {"batch_rows": 300, **sync}.items()]
    lines += ["", "[leases]", f"ttl_secs = {LEASE_TTL}", ""]
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    return path


def _env(role_env: dict, home: str) -> dict:
    env = dict(role_env)
    env.update(CTXLAKE_HOME=home, CTXLAKE_CONFIG=_write_config(home), CTXLAKE_FLEET_ID=FLEET,
               CTXLAKE_AGENT_ID=AGENT)
    env.pop("CTXLAKE_STORE", None)
    return env


def _paths(home: str):
    from lib.paths import Paths

    return Paths.from_env({"CTXLAKE_HOME": home})


def _store(home: str):
    from lib.store.file import FileStore

    return FileStore(_paths(home).default_store_url)


def _builder(session: str):
    from lib.envelope import Builder

    return Builder(fleet_id=FLEET, agent_id=AGENT, runtime=RUNTIME, session_id=session)


def _make(builder, i: int) -> dict:
    """A realistic mix of envelope shapes (prompts, tool calls with results, assistant turns)."""
    sid = builder.session_id
    kind = i % 3
    if kind == 0:
        return builder.make("tool_call", message_id=f"toolu-{sid}-{i}",
                            tool={"name": "Bash", "input": {"command": f"pytest -q tests/test_{i}.py"},
                                  "result": f"{i} passed in 0.{i % 10}s", "exit_code": 0,
                                  "paths": [f"src/mod_{i % 17}.py"]})
    if kind == 1:
        return builder.make("prompt", role="user", content=f"step {i} of {sid}: fix the failing test")
    return builder.make("assistant", role="assistant", content=f"Done with step {i}; ünïcödé ✓ included.")


def _spool_envelopes(home: str, session: str, n: int, *, rotate_bytes: int | None = None) -> set[str]:
    """Append ``n`` envelopes of ``session`` to its spool file; return their event ids."""
    from lib import envelope, spool

    path = _paths(home).session_spool(RUNTIME, session)
    kw = {"rotate_bytes": rotate_bytes} if rotate_bytes else {}
    b = _builder(session)
    ids = set()
    for i in range(n):
        env = _make(b, i)
        spool.append(path, envelope.dumps(env), **kw)
        ids.add(env["event_id"])
    return ids


def _mark_done(home: str, session: str) -> None:
    """Write ``<session>.done`` the way the hook does on SessionEnd."""
    from lib import spool

    spool.atomic_write(_paths(home).session_done(RUNTIME, session), b'{"event":"SessionEnd"}')


def _spool_files(home: str, session: str | None = None) -> list[str]:
    directory = _paths(home).runtime_spool(RUNTIME)
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    return [os.path.join(directory, n) for n in names
            if (".ndjson" in n or n.endswith(".done")) and (session is None or n.split(".")[0] == session)]


def _spool_ids(home: str) -> set[str]:
    """Event ids of every complete line still in the spool (all sessions, rotated files too)."""
    ids = set()
    for path in _spool_files(home):
        if path.endswith(".done"):
            continue
        with open(path, "rb") as fh:
            for raw in fh.read().split(b"\n")[:-1]:
                ids.add(json.loads(raw)["event_id"])
    return ids


class SegmentIndex:
    """Event ids per segment in the store; segments are immutable, so each is decoded once."""

    def __init__(self, store):
        self.store = store
        self.ids: dict[str, list[str]] = {}

    def refresh(self) -> Counter:
        """Decode new segments; return a Counter of event ids over all segment rows."""
        from lib import lake

        for entry in self.store.list("sessions/"):
            if entry.key.endswith(".parquet") and entry.key not in self.ids:
                self.ids[entry.key] = [e["event_id"] for e in lake.decode(self.store.get(entry.key).data)]
        return Counter(i for ids in self.ids.values() for i in ids)


def _count_objects(store_root: str) -> int:
    """Segments plus ``_SEALED`` markers under ``sessions/`` (cheap: a directory walk)."""
    n = 0
    for _, _, files in os.walk(os.path.join(store_root, "sessions")):
        n += sum(1 for f in files if f.endswith(".parquet") or f == "_SEALED")
    return n


def _start(script: str, env: dict, log_path: str, crash_at: str | None = None) -> subprocess.Popen:
    """Start ``<script> --once --json``; with ``crash_at`` it SIGKILLs itself at that I/O boundary."""
    env = dict(env)
    if crash_at:
        env["CTXLAKE_CRASH_AT"] = crash_at
    with open(log_path, "ab") as log:
        return subprocess.Popen([PYTHON, CRASHPOINT, script, "--once", "--json"], env=env,
                                stdout=subprocess.PIPE, stderr=log, cwd=ROOT)


def _finish(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, f"{proc.args[2]} exited {proc.returncode}: {out!r}"
    return json.loads(out.decode().strip().splitlines()[-1])


def _killed(proc: subprocess.Popen, kill: bool) -> bool:
    """SIGKILL ``proc`` (when ``kill``) and reap it; True when it died of SIGKILL mid-pass."""
    if kill and proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    if kill or proc.poll() is not None:
        proc.communicate(timeout=RUN_TIMEOUT)
    return proc.returncode == -signal.SIGKILL


def _wait_for(cond, proc: subprocess.Popen) -> bool:
    """Poll ``cond()`` while ``proc`` runs; True when it held before the process exited."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(POLL)
    return False


def _crash_syncd(home, env, rng, plan, *, after_kill, log_path) -> tuple[int, dict]:
    """Run ``syncd.py --once`` once per kill in ``plan``, then once to completion.

    Plan items: ``"at:<label>:<n>"`` (the process kills itself at that boundary, see
    :mod:`tests.pipeline.crashpoint`), ``"progress"`` (SIGKILL right after 1–4 new objects
    landed, plus 0–30 ms) or ``"delay"`` (SIGKILL after a random 20–800 ms). A run that
    completes before its kill ends the loop. Returns ``(kills, summary_of_the_completed_run)``;
    ``after_kill()`` runs after every kill.
    """
    root = _store(home).root
    kills = 0
    for item in plan:
        proc = _start("syncd.py", env, log_path, crash_at=item[3:] if item.startswith("at:") else None)
        if item == "delay":
            try:
                proc.wait(timeout=rng.uniform(0.02, 0.8))
            except subprocess.TimeoutExpired:
                pass
        elif item == "progress":
            base, n = _count_objects(root), rng.randint(1, 4)
            if _wait_for(lambda: _count_objects(root) >= base + n, proc):
                time.sleep(rng.uniform(0, 0.03))
        else:
            proc.wait(timeout=RUN_TIMEOUT)
        if not _killed(proc, kill=not item.startswith("at:")):
            return kills, _finish(proc)
        kills += 1
        after_kill()
    return kills, _finish(_start("syncd.py", env, log_path))


def _wait_maintenance_lease(store) -> None:
    """Wait until a killed maint's lease has expired (by the store clock, as maint judges it)."""
    from lib.live import leases
    from lib.store import NotFound

    key = leases.lease_key(FLEET, leases.MAINTENANCE)
    while True:
        try:
            obj = store.get(key)
        except NotFound:
            return
        rec = json.loads(obj.data)
        left = float(rec.get("expires_at") or 0) - store.clock()
        if not rec.get("holder") or left <= 0:
            return
        time.sleep(left + 0.05)


def _crash_maint(home, env, rng, plan, *, log_path) -> tuple[int, dict]:
    """Run ``maint.py --once`` once per kill in ``plan``, then until a run completes.

    Plan items: ``"at:<label>:<n>"`` (self-kill at that boundary) or ``"lease"`` (SIGKILL a
    random 0–400 ms after the run took the maintenance lease, i.e. while it works). Returns
    ``(kills, summary_of_the_completed_run)``.
    """
    from lib.live import leases

    store = _store(home)
    lease_path = os.path.join(store.root, *leases.lease_key(FLEET, leases.MAINTENANCE).split("/"))
    kills = 0
    for item in plan:
        _wait_maintenance_lease(store)
        proc = _start("maint.py", env, log_path, crash_at=item[3:] if item.startswith("at:") else None)
        if item == "lease":
            def working():
                try:
                    with open(lease_path, "rb") as fh:
                        return (json.loads(fh.read()).get("holder") or "").endswith(f":{proc.pid}")
                except (OSError, ValueError):
                    return False

            if _wait_for(working, proc):
                time.sleep(rng.uniform(0, 0.4))
        else:
            proc.wait(timeout=RUN_TIMEOUT)
        if _killed(proc, kill=item == "lease"):
            kills += 1
        else:
            summary = _finish(proc)
            assert summary.get("ran"), summary
    while True:  # a killed run's lease may still be held a moment longer: wait it out, rerun
        _wait_maintenance_lease(store)
        summary = _finish(_start("maint.py", env, log_path))
        if summary.get("ran"):
            return kills, summary


# -- the crash test --------------------------------------------------------------------------

@pytest.mark.slow
def test_sigkill_anywhere_loses_nothing_and_duplicates_nothing(home, role_env, tmp_path):
    """10,000 envelopes survive repeated SIGKILLs of syncd and maint: exactly once in the lake."""
    from lib import lake

    seed = int(os.environ.get("CTXLAKE_CRASH_SEED") or random.SystemRandom().randrange(1 << 30))
    rng = random.Random(seed)
    print(f"CTXLAKE_CRASH_SEED={seed}")
    env = _env(role_env, home)
    log_path = str(tmp_path / "roles.log")
    store = _store(home)
    index = SegmentIndex(store)

    # 10,000 envelopes over five sessions; two rotate their spool file many times
    plan = {"s-alpha": (2500, None), "s-bravo": (2000, 150_000), "s-charlie": (1500, None),
            "s-delta": (2000, 120_000), "s-echo": (2000, None)}
    ids: dict[str, set] = {sid: _spool_envelopes(home, sid, n, rotate_bytes=rot) for sid, (n, rot) in plan.items()}
    assert sum(len(v) for v in ids.values()) == 10_000
    assert len(_spool_files(home, "s-bravo")) > 3  # rotated segments exist
    ended_first = ("s-alpha", "s-bravo", "s-charlie")
    for sid in ended_first:
        _mark_done(home, sid)

    def all_ids() -> set:
        return set().union(*ids.values())

    def check_after_kill():
        """Invariant 2 at an arbitrary crash point: nothing left the spool before its segment existed."""
        gone = all_ids() - _spool_ids(home)
        in_segments = set(index.refresh())
        missing = gone - in_segments
        assert not missing, f"{len(missing)} envelope(s) deleted from the spool with no segment (seed {seed})"

    appended = {"n": 0}

    def after_kill_phase1():
        check_after_kill()
        # the agent keeps working while syncd is down: the open session grows
        ids["s-echo"] |= _spool_envelopes(home, "s-echo", 20)
        appended["n"] += 20

    # phase 1: ship with kills; three sessions are sealed, two stay open
    # deterministic crash points first (the narrow windows), then random ones
    plan1 = ["at:save_pending:1",      # write-ahead batch recorded, PUT not done
             "at:put_seg:2",           # segment stored, watermark not advanced
             "at:before_seg:3",
             "at:put_sealed:1",        # _SEALED stored, spool not cleaned up
             "at:unlink_spool:1",      # cleanup half done
             "at:unlink_spool:3"]
    plan1 += rng.sample([f"at:any:{rng.randint(1, 40)}", "progress", "progress", "delay", "delay"], 5)
    kills1, summary = _crash_syncd(home, env, rng, plan1, after_kill=after_kill_phase1, log_path=log_path)
    assert kills1 >= 6, f"only {kills1} kill(s) landed mid-pass (seed {seed})"
    assert summary["errors"] == 0, summary
    counts = index.refresh()
    dupes = {i: c for i, c in counts.items() if c > 1}
    assert not dupes, f"{len(dupes)} envelope(s) in more than one segment row (seed {seed})"
    assert set(counts) == all_ids(), f"missing from segments: {len(all_ids() - set(counts))} (seed {seed})"
    for sid in ended_first:
        assert _spool_files(home, sid) == [], f"sealed session {sid} left spool files"
    sealed = {e.key for e in store.list("sessions/") if e.key.endswith("/_SEALED")}
    assert len(sealed) == 3
    for sid in ("s-delta", "s-echo"):
        assert _spool_files(home, sid), f"open session {sid} lost its spool before it ended"

    # maint killed mid-pass on the first three sealed sessions, then completed
    mkills1, msum = _crash_maint(home, env, rng, ["lease"], log_path=log_path)
    assert msum["ran"] and msum["partitions"] >= 1

    # phase 2: s-echo's watermark is lost (say the state folder was wiped): syncd re-sends the
    # session from byte 0 in different batches, so the segments hold some rows twice and
    # compaction has to de-duplicate them. Then both open sessions end and are sealed, with kills
    # (batches are smaller now too, so the re-sent segments cannot match the old ones byte for byte).
    os.unlink(os.path.join(_paths(home).state_dir, RUNTIME, "s-echo.json"))
    _write_config(home, batch_rows=250)
    for sid in ("s-delta", "s-echo"):
        _mark_done(home, sid)
    plan2 = ["progress", "at:put_sealed:1", "at:unlink_spool:2", rng.choice(["delay", "progress"])]
    kills2, summary = _crash_syncd(home, env, rng, plan2, after_kill=check_after_kill, log_path=log_path)
    assert summary["errors"] == 0, summary
    assert _spool_files(home) == [], "every session ended and was shipped: the spool must be empty"
    counts = index.refresh()
    assert set(counts) == all_ids()
    twice = {i for i, c in counts.items() if c > 1}
    assert twice, "the re-sent session should have put some rows in the segments twice"
    assert twice <= ids["s-echo"], "only the session whose watermark was lost is re-sent"

    # compaction again, killed at two exact crash points (each kill costs a lease TTL of waiting),
    # then completed
    mkills2, msum = _crash_maint(home, env, rng, ["at:put_manifest:1", "at:delta_commit:1"], log_path=log_path)
    assert mkills1 + mkills2 >= 2, (mkills1, mkills2)
    assert mkills2 == 2, "both exact crash points are on the way of a compaction that has work to do"

    # every envelope exactly once in the current version of the Delta table
    table = lake.query(store, FLEET, "SELECT event_id, session_id, fleet_id, envelope_json FROM events")
    compacted = Counter(table.column("event_id").to_pylist())
    dupes = {i: c for i, c in compacted.items() if c > 1}
    assert not dupes, f"{len(dupes)} duplicate(s) after compaction (seed {seed})"
    assert set(compacted) == all_ids(), (f"{len(all_ids() - set(compacted))} missing, "
                                         f"{len(set(compacted) - all_ids())} unexpected (seed {seed})")
    assert table.num_rows == 10_000 + appended["n"]
    # the typed columns agree with the envelopes
    assert set(table.column("fleet_id").to_pylist()) == {FLEET}
    assert set(table.column("session_id").to_pylist()) == set(plan)
    assert all(json.loads(raw)["event_id"] == eid for eid, raw in
               zip(table.column("event_id").to_pylist(), table.column("envelope_json").to_pylist()))
    # the ledger knows every bronze segment is in the table, so the next pass has nothing to do
    ledger = lake.Ledger.load(store, FLEET)
    segments = {e.key for e in store.list("sessions/") if "/seg-" in e.key}
    assert set(ledger.segments) == segments
    again = _finish(_start("maint.py", env, log_path))
    assert again["ran"] and again["compacted"] == 0 and again["rows_out"] == 0, again


# -- torn lines ------------------------------------------------------------------------------

def _run_syncd(env: dict) -> dict:
    proc = subprocess.run([PYTHON, os.path.join(ROOT, "syncd.py"), "--once", "--json"], env=env, cwd=ROOT,
                          capture_output=True, timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def _lake_ids(store) -> Counter:
    from lib import lake

    return Counter(e["event_id"] for entry in store.list("sessions/") if entry.key.endswith(".parquet")
                   for e in lake.decode(store.get(entry.key).data))


def _sealed_marker(store) -> dict:
    markers = [e.key for e in store.list("sessions/") if e.key.endswith("/_SEALED")]
    assert len(markers) == 1, markers
    return json.loads(store.get(markers[0]).data)


def test_line_cut_in_half_by_a_crash_loses_only_the_fragment(home, role_env):
    """Half a line (a writer killed mid-write), then whole lines appended after it: only the
    torn envelope is lost, and it is counted; everything before and after ships."""
    from lib import envelope, spool

    env = _env(role_env, home)
    store = _store(home)
    path = _paths(home).session_spool(RUNTIME, "s-torn")
    b = _builder("s-torn")
    e1, e2, torn, e4, e5 = (_make(b, i) for i in range(5))
    for e in (e1, e2):
        spool.append(path, envelope.dumps(e))
    line = envelope.dumps(torn).encode()
    with open(path, "ab") as fh:  # the crash: half a line, no newline
        fh.write(line[: len(line) // 2])

    first = _run_syncd(env)  # ships what is complete; the fragment might still be completing
    assert first["shipped"] == 2 and first["dropped_lines"] == 0
    assert set(_lake_ids(store)) == {e1["event_id"], e2["event_id"]}

    for e in (e4, e5):  # the next hook appends after the fragment
        spool.append(path, envelope.dumps(e))
    second = _run_syncd(env)
    assert second["shipped"] == 2
    assert second["dropped_lines"] == 1
    ids = _lake_ids(store)
    assert set(ids) == {e1["event_id"], e2["event_id"], e4["event_id"], e5["event_id"]}
    assert max(ids.values()) == 1
    # the recovered envelope is intact, not a splice of two
    from lib import lake

    shipped = {e["event_id"]: e for entry in store.list("sessions/") if entry.key.endswith(".parquet")
               for e in lake.decode(store.get(entry.key).data)}
    assert shipped[e4["event_id"]] == e4

    _mark_done(home, "s-torn")
    third = _run_syncd(env)
    assert third["sealed"] == 1 and third["dropped_lines"] == 0
    assert _sealed_marker(store)["dropped_lines"] == 1
    assert _spool_files(home, "s-torn") == []


def test_torn_final_line_is_dropped_with_a_count_once_the_session_is_done(home, role_env):
    """A final line with no newline is left alone while the session is open (a writer may be
    mid-write); once the session is done and the file has settled, it is dropped, counted in
    the pass summary and the ``_SEALED`` marker, and the spool is cleaned up."""
    from lib import envelope, spool

    env = _env(role_env, home)
    store = _store(home)
    path = _paths(home).session_spool(RUNTIME, "s-tail")
    b = _builder("s-tail")
    whole = [_make(b, i) for i in range(3)]
    for e in whole:
        spool.append(path, envelope.dumps(e))
    line = envelope.dumps(_make(b, 3)).encode()
    with open(path, "ab") as fh:
        fh.write(line[: len(line) // 3])

    first = _run_syncd(env)  # session open: the tail is not touched, nothing dropped
    assert first["shipped"] == 3 and first["dropped_lines"] == 0 and first["sealed"] == 0
    size = os.path.getsize(path)

    _mark_done(home, "s-tail")
    future = time.time() + 3600  # "just written": a writer could still be finishing the line
    os.utime(path, (future, future))
    second = _run_syncd(env)
    assert second["sealed"] == 0 and second["dropped_lines"] == 0
    assert os.path.getsize(path) == size, "the spool must stay intact until the tail is settled"

    past = time.time() - 3600  # long settled: the line will never complete
    os.utime(path, (past, past))
    third = _run_syncd(env)
    assert third["sealed"] == 1 and third["dropped_lines"] == 1 and third["shipped"] == 0
    assert _spool_files(home, "s-tail") == []
    assert _sealed_marker(store)["dropped_lines"] == 1
    ids = _lake_ids(store)
    assert set(ids) == {e["event_id"] for e in whole} and max(ids.values()) == 1
