"""Every CLI verb with each documented bad input: one line on stderr, the documented exit code
(docs/operations.md "Exit codes"), never a traceback; ``--debug`` adds the traceback (issue 18).

Each case runs the real ``ctxlake.py`` in its own process with an empty HOME and its own
CTXLAKE_HOME, the way a new user types it.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from lib.failures import EXIT_CODES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


NOTE = re.compile(r"^[a-z.]+( [a-z]+)?: note: ")
"""A note line (``ctxlake: note: ...``, ``ctxlake sync: note: ...``): not an error."""


class Box:
    """A user: empty HOME, CTXLAKE_HOME and config path under ``tmp``; :meth:`run` is one command."""

    def __init__(self, tmp, extra_env=None):
        self.tmp = str(tmp)
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home, exist_ok=True)
        self.config = os.path.join(self.home, ".config", "ctxlake", "ctxlake.toml")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAKE_", "AWS_"))}
        self.env.update(HOME=self.home, CTXLAKE_HOME=os.path.join(self.home, ".ctxlake"), **(extra_env or {}))
        self.env.pop("XDG_CONFIG_HOME", None)

    def write_config(self, text: str) -> None:
        os.makedirs(os.path.dirname(self.config), exist_ok=True)
        with open(self.config, "w") as fh:
            fh.write(text)

    def run(self, *argv, cwd=None, stdin=None):
        return subprocess.run([sys.executable, os.path.join(ROOT, "ctxlake.py"), *argv], capture_output=True, text=True,
                              env=self.env, cwd=cwd or self.home, timeout=120, input=stdin)


def assert_one_line_failure(r, kind: str, *needles: str) -> str:
    """The process failed with ``kind``'s exit code and one error line naming ``needles`` (besides
    notes and, for the daemons, their JSON log lines)."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("{") and not NOTE.match(ln)]
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == EXIT_CODES[kind], (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


USAGE = [
    ((), "required: verb"),
    (("bogus",), "invalid choice: 'bogus'"),
    (("init",), "required: --store, --fleet"),
    (("init", "--store", "/tmp/lake", "--fleet", "t"), "write --store file:///tmp/lake"),
    (("init", "--store", "ftp://host/x", "--fleet", "t"), "unsupported scheme"),
    (("init", "--store", "s3://", "--fleet", "t"), "bucket"),
    (("init", "--store", "file:///tmp/x", "--fleet", " "), "--fleet is empty"),
    (("sync", "--onse"), "ctxlake sync: unrecognized arguments: --onse"),
    (("maint", "--bogus"), "ctxlake maint: unrecognized arguments"),
    (("doctor", "--store", "ftp://nowhere"), "unsupported store URL"),
    (("sessions", "--limit", "0"), "--limit: must be a whole number from 1"),
    (("sessions", "--limit", "x"), "--limit: must be a whole number from 1"),
    (("import", "cursor"), "cursor keeps no history"),
    (("import", "nope"), "no importer for 'nope'"),
    (("import", "claude-code"), "no Claude Code history at"),
    (("import", "claude-code", "--path", "/no/such/dir"), "/no/such/dir"),
    (("import", "hermes", "--path", "/no/such/state.db"), "/no/such/state.db"),
    (("install",), "name a runtime"),
    (("install", "cursor", "--all"), "not both"),
    (("install", "vim"), "invalid choice: 'vim'"),
    (("query", "SELEC 1"), "DuckDB refused the SQL"),
    (("query", "SELECT nope FROM events"), "DuckDB refused the SQL"),
    (("lease", "acquire"), "name at least one path"),
    (("lease", "acquire", "x.py", "--ttl", "0"), "--ttl: must be a whole number of seconds from 30"),
    (("lease", "grab"), "invalid choice: 'grab'"),
    (("claims", "--retire", "c-123"), "--retire needs --reason"),
    (("claims", "--retire", "c-123", "--reason", "stale"), "matches 0 claims"),
    (("claims", "--status", "bogus"), "invalid choice"),
]


@pytest.mark.parametrize("argv,needle", USAGE, ids=[" ".join(a) or "(nothing)" for a, _ in USAGE])
def test_bad_command_lines_are_one_line_usage_errors(inited, argv, needle):
    assert_one_line_failure(inited.run(*argv), "usage", needle)


def test_sync_accepts_the_documented_foreground_spelling(inited):
    r = inited.run("sync", "--foreground", "--once")
    assert r.returncode == 0 and "sync: shipped" in r.stdout, r.stderr


def test_lease_outside_a_git_repository_is_a_usage_error(inited):
    os.makedirs(os.path.join(inited.tmp, "plain"))
    assert_one_line_failure(inited.run("lease", "acquire", "a.py", cwd=os.path.join(inited.tmp, "plain")), "usage",
                            "not inside a git repository")


def test_debug_adds_the_traceback(inited):
    r = inited.run("--debug", "init", "--store", "/tmp/lake", "--fleet", "t")
    assert r.returncode == EXIT_CODES["usage"] and "Traceback" in r.stderr and "file:///tmp/lake" in r.stderr
    inited.write_config('fleet_id = "team-a"\n[sync]\npoll_sec = 2\n')
    r = inited.run("--debug", "maint", "--once")  # reaches the daemons ctxlake dispatches to
    assert r.returncode == EXIT_CODES["config"] and "Traceback" in r.stderr and "poll_secs" in r.stderr


@pytest.mark.parametrize("toml,needle", [
    ('[sync]\npoll_sec = 2\n', "did you mean 'poll_secs'"),
    ('[sync]\npoll_secs = "fast"\n', "poll_secs must be float"),
    ('stor = "file:///x"\n', "did you mean 'store'"),
    ('store = "file://relative/lake"\n', "is relative"),
    ('[leases]\npolicy = "deny"\n', "policy must be warn|block"),
    ('fleet_id = [1\n', "cannot read config"),
])
@pytest.mark.parametrize("verb", [("status",), ("sync", "--once"), ("maint", "--once"), ("sessions",), ("doctor",),
                                  ("lease", "list"), ("install", "claude_code")])
def test_a_bad_config_is_one_line_for_every_verb_and_daemon(box, toml, needle, verb):
    box.write_config('fleet_id = "team-a"\n' + toml if "fleet_id" not in toml else toml)
    assert_one_line_failure(box.run(*verb), "config", box.config, needle)


def test_install_before_init_refuses_to_bake_in_the_default_fleet(box):
    os.makedirs(os.path.join(box.home, ".claude"))
    assert_one_line_failure(box.run("install", "claude_code"), "config", "ctxlake init")
    assert not os.path.exists(os.path.join(box.home, ".claude", "settings.json"))


def test_every_verb_before_init_says_it_runs_on_defaults(box):
    r = box.run("status")
    assert r.returncode == 0 and "no config at" in r.stderr and "fleet 'default'" in r.stderr
    assert "next       ctxlake init" in r.stdout


def test_install_refuses_a_malformed_runtime_file(inited):
    path = os.path.join(inited.home, ".cursor", "hooks.json")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as fh:
        fh.write("{oops")
    assert_one_line_failure(inited.run("install", "cursor"), "refused", path, "not valid JSON")
    assert_one_line_failure(inited.run("install", "hermes", "--project"), "refused", "without --project")


def test_init_never_overwrites_another_fleet_silently(inited):
    before = open(inited.config).read()
    line = assert_one_line_failure(inited.run("init", "--store", "file:///elsewhere", "--fleet", "team-b"), "refused",
                                   "already exists", "--force")
    assert "rm " not in line and open(inited.config).read() == before  # no destructive command to copy
    r = inited.run("init", "--store", "file://" + os.path.join(inited.tmp, "lake"), "--fleet", "team-a", "--agent-id", "alice")
    assert r.returncode == 0, r.stderr  # the same settings again: idempotent
    r = inited.run("init", "--store", "file://" + os.path.join(inited.tmp, "lake2"), "--fleet", "team-b", "--force")
    assert r.returncode == 0 and 'fleet_id = "team-b"' in open(inited.config).read()


def test_init_saves_a_relative_file_url_as_an_absolute_one(box):
    work = os.path.join(box.tmp, "work")
    os.makedirs(work)
    r = box.run("init", "--store", "file://relative/lake", "--fleet", "t", cwd=work)
    assert r.returncode == 0, r.stderr
    assert f'store = "file://{work}/relative/lake"' in open(box.config).read()
    r = box.run("init", "--store", "file://~/lake", "--fleet", "t", "--force")
    assert f'store = "file://{box.home}/lake"' in open(box.config).read()


def test_query_over_an_empty_lake_answers_and_says_why_events_is_empty(inited):
    r = inited.run("query", "SELECT 1 AS one")
    assert r.returncode == 0 and r.stdout.split() == ["one", "1"], r.stderr
    r = inited.run("query", "SELECT count(*) AS n FROM events")
    assert r.returncode == 0 and r.stdout.split() == ["n", "0"] and "no compacted data yet" in r.stderr


def test_lease_held_by_another_agent_is_refused(inited):
    repo = os.path.join(inited.tmp, "repo")
    subprocess.run(["git", "init", "-q", repo], check=True)
    subprocess.run(["git", "-C", repo, "remote", "add", "origin", "https://example.com/acme/app.git"], check=True)
    assert inited.run("lease", "acquire", "a.py", "--holder", "bob", cwd=repo).returncode == 0
    assert_one_line_failure(inited.run("lease", "claim", "a.py", cwd=repo), "refused", "bob")  # claim: the old name


def test_s3_missing_bucket_and_bad_credentials_are_store_errors(seaweed, tmp_path):
    env = seaweed.env()
    box = Box(tmp_path, env)
    line = assert_one_line_failure(box.run("init", "--store", "s3://no-such-bucket-ctxlake/x", "--fleet", "t"), "store",
                                   "no-such-bucket-ctxlake", "NoSuchBucket")
    assert not os.path.exists(box.config), line
    bad = Box(tmp_path / "bad", dict(env, AWS_SECRET_ACCESS_KEY="wrong-" + env["AWS_SECRET_ACCESS_KEY"]))
    line = assert_one_line_failure(bad.run("init", "--store", seaweed.url(), "--fleet", "t"), "store",
                                   "refused by the store", "credentials")
    assert "403 403" not in line
    ok = box.run("init", "--store", seaweed.url(), "--fleet", "t")
    assert ok.returncode == 0, ok.stderr
    bad.write_config(open(box.config).read())
    assert_one_line_failure(bad.run("sync", "--once"), "store", "refused by the store")
    st = json.loads(bad.run("status", "--json").stdout)
    assert "refused by the store" in st["last_error"]


def test_status_after_a_failed_pass_shows_the_cache_it_kept_and_the_cause(seaweed, tmp_path):
    env = seaweed.env()
    box = Box(tmp_path, env)
    assert box.run("init", "--store", seaweed.url(), "--fleet", "t", "--agent-id", "alice").returncode == 0
    transcripts = os.path.join(ROOT, "tests", "fixtures", "claude-transcripts")
    for argv in (("import", "claude-code", "--path", transcripts), ("sync", "--once"), ("maint", "--once"), ("sync", "--once")):
        r = box.run(*argv)
        assert r.returncode == 0, (argv, r.stderr[-2000:])
    good = box.run("status").stdout
    assert "cache      snapshot " in good and "last sync" in good and ", ok" in good
    box.env["AWS_SECRET_ACCESS_KEY"] = "wrong"
    assert_one_line_failure(box.run("sync", "--once"), "store", "refused by the store")
    text = box.run("status").stdout
    cache = next(ln for ln in text.splitlines() if ln.startswith("cache"))
    assert "snapshot" in cache and "sessions" in cache and "none" not in cache, text  # the cache is intact
    failed = next(ln for ln in text.splitlines() if ln.startswith("last sync"))
    assert "FAILED" in failed and "refused by the store" in failed and "credentials" in failed, text
    nxt = next(ln for ln in text.splitlines() if ln.startswith("next"))
    assert "fix the last error" in nxt and "maint" not in nxt


def test_status_compares_the_installed_hooks_with_the_config(inited):
    os.makedirs(os.path.join(inited.home, ".claude"))
    assert inited.run("install", "claude_code").returncode == 0
    text = inited.run("status").stdout
    assert f"hooks      {inited.home}/.claude/settings.json: fleet team-a, agent alice\n" in text
    r = inited.run("init", "--store", "file://" + os.path.join(inited.tmp, "lake"), "--fleet", "team-b", "--force")
    assert r.returncode == 0 and "installed hooks still speak fleet team-a" in r.stdout
    text = inited.run("status").stdout
    assert "MISMATCH: the config says fleet team-b" in text and "next       ctxlake install --all" in text
    assert inited.run("install", "claude_code").returncode == 0
    assert "MISMATCH" not in inited.run("status").stdout


def test_status_tells_uncaptured_event_kinds_from_hook_errors(inited):
    log = os.path.join(inited.home, ".ctxlake", "hook-errors.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w") as fh:
        for _ in range(3):
            fh.write(json.dumps({"runtime": "claude_code", "event": "Notification", "step": "map",
                                 "error": "event not captured by ctxlake (answered with the default)"}) + "\n")
    line = next(ln for ln in inited.run("status").stdout.splitlines() if ln.startswith("hook errors"))
    assert line.startswith("hook errors 0") and "3 event(s) of kinds ctxlake does not capture" in line
    with open(log, "a") as fh:
        fh.write(json.dumps({"step": "spool", "error": "dropped 1 event (tool_call): disk full"}) + "\n")
    line = next(ln for ln in inited.run("status").stdout.splitlines() if ln.startswith("hook errors"))
    assert line.startswith("hook errors 1, last: dropped 1 event (tool_call): disk full")


def test_help_lists_every_verb_in_one_plain_sentence(box):
    import ctxlake

    text = box.run("--help").stdout
    assert "``" not in text and "usage: ctxlake" in text
    for fn in (ctxlake.cmd_init, ctxlake.cmd_status, ctxlake.cmd_sessions, ctxlake.cmd_demo, ctxlake.cmd_query):
        first = " ".join(fn.__doc__.split("\n\n")[0].split()).replace("``", "")
        assert first.startswith(ctxlake._help(fn)) and first[len(ctxlake._help(fn))] == "."  # a whole sentence


def test_sessions_has_a_header_and_the_start_time(inited):
    transcript = os.path.join(ROOT, "tests", "fixtures", "claude-transcripts", "spotter__short.jsonl")
    for argv in (("import", "claude-code", "--path", transcript), ("sync", "--once"), ("maint", "--once"), ("sync", "--once")):
        assert inited.run(*argv).returncode == 0
    header, row = inited.run("sessions").stdout.splitlines()[:2]
    assert header.split()[:4] == ["STARTED", "DURATION", "AGENT", "REPO"]
    assert row.startswith("2026-02-10 21:11")  # the session's first event, not its end


def test_status_after_moving_the_fleet_to_another_store_does_not_show_the_old_cache_as_current(inited):
    transcript = os.path.join(ROOT, "tests", "fixtures", "claude-transcripts", "spotter__short.jsonl")
    for argv in (("import", "claude-code", "--path", transcript), ("sync", "--once"), ("maint", "--once"), ("sync", "--once")):
        assert inited.run(*argv).returncode == 0
    old = "file://" + os.path.join(inited.tmp, "lake")
    assert inited.run("init", "--store", "file://" + os.path.join(inited.tmp, "lake2"), "--fleet", "team-a",
                      "--force").returncode == 0
    text = inited.run("status").stdout
    assert "last sync  never against this store; the last pass" in text and old in text
    assert "next       ctxlake sync --once" in text
    r = inited.run("sync", "--once")
    assert r.returncode == 0 and "snapshot" not in r.stdout  # nothing carried over from the old store
    assert "never against this store" not in inited.run("status").stdout


def test_a_held_lease_is_named_once(inited):
    repo = os.path.join(inited.tmp, "repo2")
    subprocess.run(["git", "init", "-q", repo], check=True)
    subprocess.run(["git", "-C", repo, "remote", "add", "origin", "https://example.com/acme/app.git"], check=True)
    assert inited.run("lease", "acquire", "src/", "--holder", "bob", cwd=repo).returncode == 0
    line = assert_one_line_failure(inited.run("lease", "acquire", "src/", cwd=repo), "refused", "held by bob")
    assert line.count("ctxlake") == 2 and line.startswith("ctxlake: lease acquire: src/")  # prefix + the advisory note


def test_a_refused_local_write_is_the_disk_kind_with_its_cause():
    """ENOSPC/EFBIG from the OS and SQLite's FULL (a real database capped by max_page_count)
    and IOERR reach the user as exit 6 with one line naming the cause (lib/failures.py)."""
    import errno
    import sqlite3

    from lib import failures

    f = failures.classify(OSError(errno.ENOSPC, "No space left on device", "/x/spool/a.ndjson"))
    assert (f.kind, f.code) == ("disk", 6)
    assert "No space left on device (ENOSPC) at /x/spool/a.ndjson" in str(f) and "free space" in str(f)

    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA max_page_count = 2")
    conn.execute("CREATE TABLE t (v TEXT)")
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 4000,)] * 50)
    f = failures.classify(caught.value)
    assert f.code == 6 and "database or disk is full" in str(f)

    try:  # raised from the disk error: the cause is found through __cause__
        try:
            raise OSError(errno.EFBIG, "File too large")
        except OSError as exc:
            raise RuntimeError("snapshot build failed") from exc
    except RuntimeError as exc:
        assert failures.classify(exc).kind == "disk"
    assert failures.classify(OSError(errno.ENOENT, "gone")).kind == "internal"


@pytest.mark.parametrize("flag,value,code", [("--agent-id", "mal\x1b]0;PWNED\x07", "U+001B, U+0007"),
                                             ("--fleet", "team\u200b", "U+200B"),
                                             ("--agent-id", "a\u202eb", "U+202E")])
def test_init_refuses_ids_with_control_or_invisible_characters(tmp_path, flag, value, code):
    box = Box(tmp_path)
    argv = ["init", "--store", f"file://{tmp_path}/lake", "--fleet", "team", "--agent-id", "a1"]
    argv[argv.index(flag) + 1] = value
    line = assert_one_line_failure(box.run(*argv), "usage", flag, code)
    assert "\x1b" not in line and not os.path.exists(box.config)
    assert box.run("init", "--store", f"file://{tmp_path}/lake", "--fleet", "team", "--agent-id", "ünï-a1").returncode == 0
