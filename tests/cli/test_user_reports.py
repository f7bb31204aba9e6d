"""A new user's reported bad inputs, each fed to the real ``ctxlake.py`` in its own process: one
line on stderr, the documented exit code (docs/operations.md "Exit codes"), never a traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lib.failures import CLOSED_PIPE
from tests.cli.test_errors import ROOT, assert_one_line_failure


@pytest.mark.parametrize("verb", [("status",), ("sync", "--once"), ("doctor",), ("claims",)])
def test_a_config_that_is_not_utf8_is_a_config_error(box, verb):
    os.makedirs(os.path.dirname(box.config))
    with open(box.config, "wb") as fh:
        fh.write(b'fleet_id = "team-a"\n# caf\xe9 \xff\xfe\x00\n')
    assert_one_line_failure(box.run(*verb), "config", box.config, "not UTF-8")


def test_a_reader_that_goes_away_ends_the_command_quietly(inited):
    """``ctxlake query ... | head -c 10``: the output is far larger than a pipe's buffer, so the
    writer is blocked when the reader closes; it must exit 141 with nothing on stderr."""
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "ctxlake.py"), "query", "SELECT * FROM range(200000)"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=inited.env, cwd=inited.home)
    assert len(p.stdout.read(10)) == 10
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == CLOSED_PIPE, err
    assert [ln for ln in err.splitlines() if "note:" not in ln] == [], err


def _repo(box) -> str:
    repo = os.path.join(box.tmp, "repo")
    subprocess.run(["git", "init", "-q", repo], check=True)
    subprocess.run(["git", "-C", repo, "remote", "add", "origin", "https://example.com/acme/app.git"], check=True)
    return repo


def test_lease_ttl_is_refused_outside_the_range_fleet_claim_accepts(inited):
    from lib.mcp_tools import SCHEMAS

    bounds = SCHEMAS["fleet_claim"]["properties"]["ttl_secs"]
    repo = _repo(inited)
    for bad in (bounds["minimum"] - 1, bounds["maximum"] + 1, 99999999999999):
        assert_one_line_failure(inited.run("lease", "acquire", "src/foo.py", "--ttl", str(bad), cwd=repo), "usage",
                                "--ttl", f"from {bounds['minimum']} to {bounds['maximum']}", str(bad))
    assert "0 lease(s) held" in inited.run("lease", "list", cwd=repo).stdout
    r = inited.run("lease", "acquire", "src/foo.py", "--ttl", str(bounds["maximum"]), cwd=repo)
    assert r.returncode == 0, r.stderr
    listed = inited.run("lease", "list", cwd=repo).stdout
    assert "src/foo.py" in listed and "1 lease(s) held" in listed, listed


@pytest.mark.parametrize("value", ["99999999999999999999", "0", "-3", "x", "1.5", ""])
def test_sessions_limit_out_of_range_is_a_usage_error(inited, value):
    assert_one_line_failure(inited.run("sessions", "--limit", value), "usage", "--limit", "from 1 to")


def test_numeric_flags_never_reach_a_verb_out_of_range(home):
    """Fuzz: any text after ``sessions --limit`` is either listed (an integer in range) or one
    usage line, exit 2; never an internal error."""
    import io

    from hypothesis import HealthCheck, given, settings, strategies as st

    import ctxlake

    @settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.one_of(st.integers(min_value=-2**70, max_value=2**70).map(str), st.text(max_size=30)))
    def check(text):
        out, err = io.StringIO(), io.StringIO()
        code = ctxlake.main(["sessions", "--limit", text], stdout=out, stderr=err)
        lines = [ln for ln in err.getvalue().splitlines() if "note:" not in ln]
        try:
            ok = 1 <= int(text, 10) <= ctxlake.SESSIONS_LIMIT_MAX
        except ValueError:
            ok = False
        if ok:
            assert code == 0 and lines == [], err.getvalue()
        else:
            assert code == 2 and len(lines) == 1 and "--limit" in lines[0], (text, err.getvalue())

    check()


def test_version_comes_from_the_package_metadata(box):
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        want = tomllib.load(fh)["project"]["version"]
    r = box.run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"ctxlake {want}", (r.stdout, r.stderr)


def test_help_is_user_text_and_names_the_command_the_user_typed(box):
    doctor = box.run("doctor", "--help")
    assert doctor.returncode == 0 and "usage: ctxlake doctor" in doctor.stdout
    for internal in (":func:", "``", "lib/", ".py"):
        assert internal not in doctor.stdout, (internal, doctor.stdout)
    mcp = box.run("mcp", "--help")
    assert mcp.returncode == 0 and mcp.stdout.startswith("usage: ctxlake mcp"), mcp.stdout


def test_a_wrong_flag_points_to_the_verbs_own_help(inited):
    assert_one_line_failure(inited.run("sessions", "--bogus"), "usage", "--bogus", "`ctxlake sessions --help`")


def test_claims_retire_without_reason_says_reason_is_required(inited):
    assert_one_line_failure(inited.run("claims", "--retire", "c-123"), "usage", "--retire needs --reason")


def test_maintenance_skipped_says_what_to_do_not_internal_jargon(inited):
    from lib import config
    from lib.live import leases as live
    from lib.store import open_store

    cfg = config.load({"CTXLAKE_CONFIG": inited.config, "CTXLAKE_HOME": inited.env["CTXLAKE_HOME"]})
    live.acquire(open_store(cfg.store), live.lease_key(cfg.fleet_id, live.MAINTENANCE), holder="maint@elsewhere:1",
                 reason="maintenance", ttl=600, resource=live.MAINTENANCE)
    r = inited.run("maint", "--once")
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("maintenance skipped")]
    assert r.returncode == 0 and len(line) == 1, (r.stdout, r.stderr)
    assert "maint@elsewhere:1" in line[0] and "nothing to do" in line[0] and "git" not in line[0], line


def test_a_truncated_cached_snapshot_is_named_and_the_next_sync_replaces_it(inited):
    """``truncate -s 1000 cache/<fleet>/snapshot.bin; ctxlake sessions`` on a real snapshot."""
    from tests.conftest import FIXTURES

    t = os.path.join(FIXTURES, "claude-transcripts", "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl")
    for argv in (("import", "claude-code", "--path", t), ("sync", "--once"), ("maint", "--once"), ("sync", "--once")):
        assert inited.run(*argv).returncode == 0, argv
    snap = os.path.join(inited.env["CTXLAKE_HOME"], "cache", "team-a", "snapshot.bin")
    assert "8463c716" in inited.run("sessions", "--json").stdout
    os.truncate(snap, 1000)
    assert_one_line_failure(inited.run("sessions"), "refused", snap, "corrupt", "ctxlake sync --once")
    assert_one_line_failure(inited.run("sessions", "--json"), "refused", snap, "corrupt")
    st = inited.run("status")
    assert st.returncode == 0 and "unreadable snapshot" in st.stdout, (st.stdout, st.stderr)
    assert inited.run("sync", "--once").returncode == 0
    r = inited.run("sessions", "--json")
    assert r.returncode == 0 and "8463c716" in r.stdout, r.stderr


def test_a_failed_refresh_with_no_cached_snapshot_names_no_snapshot(inited):
    """The store's blob truncated and ``cache/<fleet>/snapshot.bin`` removed: the refresh fails,
    and neither sync's summary line nor its status record names the hash the cache no longer
    holds (``ctxlake status`` says "no snapshot yet" at the same time)."""
    import glob

    from tests.conftest import FIXTURES

    t = os.path.join(FIXTURES, "claude-transcripts", "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl")
    for argv in (("import", "claude-code", "--path", t), ("sync", "--once"), ("maint", "--once"), ("sync", "--once")):
        assert inited.run(*argv).returncode == 0, argv
    blobs = glob.glob(os.path.join(inited.tmp, "**", "snapshot", "team-a", "*.sqlite"), recursive=True)
    assert len(blobs) == 1, blobs
    os.truncate(blobs[0], 5000)
    os.remove(os.path.join(inited.env["CTXLAKE_HOME"], "cache", "team-a", "snapshot.bin"))
    r = inited.run("sync", "--once")
    assert r.returncode != 0 and "snapshot" in r.stderr, (r.stdout, r.stderr)
    summary = [ln for ln in r.stdout.splitlines() if ln.startswith("sync: shipped")]
    assert len(summary) == 1 and "snapshot" not in summary[0], r.stdout  # the error line names the blob
    st = inited.run("status", "--json")
    assert st.returncode == 0 and json.loads(st.stdout)["snapshot_sha"] is None, st.stdout


def _leftovers(tmp) -> list[str]:
    return [n for n in os.listdir(tmp) if n.startswith("ctxlake-demo-")]


def test_demo_without_a_checkout_says_so_up_front_and_leaves_nothing(box, tmp_path):
    """An installed package (pipx) has the role scripts and lib/ but no tests/fixtures."""
    import shutil

    site = tmp_path / "site-packages"
    shutil.copytree(os.path.join(ROOT, "lib"), site / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    for name in os.listdir(ROOT):
        if name.endswith(".py"):
            shutil.copy(os.path.join(ROOT, name), site / name)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    box.env["TMPDIR"] = str(scratch)
    r = subprocess.run([sys.executable, str(site / "ctxlake.py"), "demo"], capture_output=True, text=True, env=box.env,
                       cwd=box.home, timeout=120)
    assert_one_line_failure(r, "usage", "run from a checkout", "--fixtures DIR")
    assert r.stdout == "" and _leftovers(scratch) == []
    assert_one_line_failure(box.run("demo", "--fixtures", str(tmp_path / "nope")), "usage", "--fixtures", "claude-hooks")


def test_a_demo_step_that_fails_stops_the_demo_and_removes_its_home(box, tmp_path):
    from tests.conftest import FIXTURES

    fixtures = tmp_path / "fixtures"
    (fixtures / "claude-transcripts").mkdir(parents=True)
    (fixtures / "claude-hooks").mkdir()
    with open(os.path.join(FIXTURES, "claude-transcripts", "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"), "rb") as src:
        (fixtures / "claude-transcripts" / "s.jsonl").write_bytes(src.read())
    (fixtures / "claude-hooks" / "broken.json").write_bytes(b"[{\"hook_event_name\": ")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    box.env["TMPDIR"] = str(scratch)
    assert_one_line_failure(box.run("demo", "--fixtures", str(fixtures)), "usage", "broken.json", "JSON")
    assert _leftovers(scratch) == []


@pytest.mark.parametrize("verb", [("doctor",), ("sync", "--once"), ("maint", "--once"), ("status",), ("sessions",)])
def test_every_command_before_init_notes_the_defaults(box, verb):
    """docs/operations.md: before `ctxlake init`, every verb but init and demo says it runs on
    the defaults (fleet default, the home's lake); once initialised, none does."""
    r = box.run(*verb)
    notes = [ln for ln in r.stderr.splitlines() if ": note: no config at " in ln]
    assert r.returncode == 0 and len(notes) == 1 and "fleet 'default'" in notes[0], (r.returncode, r.stderr)
    assert notes[0].startswith("ctxlake" + (f" {verb[0]}" if verb[0] in ("doctor", "sync", "maint") else "") + ": note:")
    box.run("init", "--store", "file://" + os.path.join(box.tmp, "lake"), "--fleet", "team-a")
    assert ": note: no config" not in box.run(*verb).stderr


def test_a_read_only_home_says_read_only_not_free_space(box, tmp_path):
    """EROFS has nothing to free: its fix is a writable mount or another CTXLAKE_HOME. On a real
    read-only tmpfs where the test may mount one (root); the classification itself always runs."""
    import errno

    from lib import failures
    from tests.conftest import FIXTURES

    f = failures.classify(OSError(errno.EROFS, os.strerror(errno.EROFS), "/ro/spool"))
    assert f.kind == "disk" and "read-only" in str(f) and "CTXLAKE_HOME" in str(f) and "free space" not in str(f)
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], capture_output=True).returncode:
        pytest.skip("cannot mount a read-only tmpfs here (not root)")
    try:
        box.env["CTXLAKE_HOME"] = str(ro)
        t = os.path.join(FIXTURES, "claude-transcripts", "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl")
        line = assert_one_line_failure(box.run("import", "claude-code", "--path", t), "disk", "EROFS", "read-only",
                                       "CTXLAKE_HOME")
        assert "free space" not in line
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True)


@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_an_empty_file_url_is_a_config_error_and_writes_nothing(box, how):
    work = os.path.join(box.tmp, "work")
    os.makedirs(work)
    if how == "env":
        box.env["CTXLAKE_STORE"] = "file://"
    elif how == "config":
        box.write_config('store = "file://"\nfleet_id = "team-a"\n')
    r = box.run("doctor", *(("--store", "file://") if how == "flag" else ()), cwd=work)
    assert_one_line_failure(r, "config", "'file://'", "file:///")
    assert os.listdir(work) == []


def test_doctor_on_a_file_store_leaves_no_scratch_and_no_lock_files(box):
    lake = os.path.join(box.tmp, "lake")
    for _ in range(2):
        r = box.run("doctor", "--store", "file://" + lake)
        assert r.returncode == 0 and "scratch" in r.stdout and "(cleaned)" in r.stdout, (r.stdout, r.stderr)
    left = [os.path.relpath(os.path.join(d, f), lake) for d, _, files in os.walk(lake) for f in files]
    assert left == [], left


def test_sync_once_names_the_first_error_of_the_pass(inited):
    """A lake where ``sessions/`` and ``live/`` are files, not folders: the segment put fails
    first (shipping runs first), then the live plane's heartbeat write; the error line and
    ``ctxlake status`` name the segment put."""
    from tests.conftest import FIXTURES

    t = os.path.join(FIXTURES, "claude-transcripts", "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl")
    assert inited.run("import", "claude-code", "--path", t).returncode == 0
    lake = os.path.join(inited.tmp, "lake")
    for name in ("sessions", "live"):
        with open(os.path.join(lake, name), "w") as fh:
            fh.write("not a folder\n")
    r = inited.run("sync", "--once")
    assert_one_line_failure(r, "store", "2 error(s), first: import/8463c716", "sessions/")
    assert "ship_failed" in r.stderr and "live" in r.stderr, r.stderr
    assert "error(s)): import/8463c716" in inited.run("status").stdout


def test_import_claude_code_reads_the_runtimes_own_history_folder(inited):
    import shutil

    from tests.conftest import FIXTURES

    inited.env.pop("CLAUDE_CONFIG_DIR", None)
    projects = os.path.join(inited.home, ".claude", "projects")
    assert_one_line_failure(inited.run("import", "claude-code"), "usage", projects, "--path")
    os.makedirs(os.path.join(projects, "-home-dev-spotter"))
    name = "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
    shutil.copy(os.path.join(FIXTURES, "claude-transcripts", name), os.path.join(projects, "-home-dev-spotter", name))
    r = inited.run("import", "claude-code")
    assert r.returncode == 0 and f"reading Claude Code's history at {projects}" in r.stdout, (r.stdout, r.stderr)
    assert "1 file(s) imported" in r.stdout
    elsewhere = os.path.join(inited.tmp, "claude-config")
    shutil.copytree(os.path.join(inited.home, ".claude"), elsewhere)
    inited.env["CLAUDE_CONFIG_DIR"] = elsewhere
    r = inited.run("import", "claude-code")
    assert r.returncode == 0 and os.path.join(elsewhere, "projects") in r.stdout, (r.stdout, r.stderr)


@pytest.fixture
def redis_with_password(redis_server):
    """A private redis-server requiring ``Hunter2RedisPass`` (the session's server stays open)."""
    import shutil
    import socket

    from tests.support.redisserver import start_redis

    server = start_redis()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"CONFIG SET requirepass Hunter2RedisPass\r\n")
        assert s.recv(16).startswith(b"+OK")
    try:
        yield f"redis://:Hunter2RedisPass@127.0.0.1:{server.port}/0?ns=pw:"
    finally:
        server.stop()
        shutil.rmtree(server.workdir, ignore_errors=True)


def test_a_password_in_a_store_url_is_never_printed(inited, redis_with_password):
    url = redis_with_password
    inited.env["CTXLAKE_LIVE_STORE"] = url
    r = inited.run("doctor")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "Hunter2RedisPass" not in r.stdout + r.stderr and "redis://:***@127.0.0.1" in r.stdout, r.stdout
    assert "warning" not in r.stderr  # the environment is not the config file
    r = inited.run("doctor", "--json")
    assert r.returncode == 0 and "Hunter2RedisPass" not in r.stdout + r.stderr
    for argv in (("sync", "--once"), ("status",), ("lease", "list")):
        r = inited.run(*argv)
        assert r.returncode == 0 and "Hunter2RedisPass" not in r.stdout + r.stderr, (argv, r.stdout, r.stderr)


def test_a_config_file_holding_a_url_password_gets_one_warning_line(inited, redis_with_password):
    text = open(inited.config).read()
    inited.write_config(f'live_store = "{redis_with_password}"\n' + text)  # top-level keys before any table
    for argv in (("status",), ("doctor",), ("sync", "--once")):
        r = inited.run(*argv)
        warn = [ln for ln in r.stderr.splitlines() if ": warning: " in ln]
        assert r.returncode == 0 and len(warn) == 1, (argv, r.stderr)
        assert "live_store holds a password" in warn[0] and "REDIS_PASSWORD" in warn[0] and inited.config in warn[0]
        assert "Hunter2RedisPass" not in r.stdout + r.stderr


@pytest.mark.parametrize("verb", [("status",), ("sessions",), ("doctor",), ("claims",)])
def test_an_explicit_config_path_that_does_not_exist_is_a_config_error(box, verb):
    missing = os.path.join(box.tmp, "nonexistent.toml")
    box.env["CTXLAKE_CONFIG"] = missing
    assert_one_line_failure(box.run(*verb), "config", missing, "does not exist", "ctxlake init")


def test_init_writes_the_explicit_config_path_it_is_given(box):
    box.env["CTXLAKE_CONFIG"] = os.path.join(box.tmp, "team.toml")
    r = box.run("init", "--store", "file://" + os.path.join(box.tmp, "lake"), "--fleet", "team-a")
    assert r.returncode == 0 and os.path.exists(box.env["CTXLAKE_CONFIG"]), r.stderr
    assert box.run("status").returncode == 0
