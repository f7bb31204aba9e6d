"""``ctxlake lease acquire|release|list``: a human runs the same acquire/release code directly on
the store, the repository resolved from the current directory's git origin."""
from __future__ import annotations

import io
import json

import ctxlake
from lib.live import leases
from lib.store import open_store
from tests.live.conftest import REPO_ID

F = "fleet-live"


def cli(monkeypatch, agent, *argv):
    monkeypatch.setenv("CTXLAKE_AGENT_ID", agent)
    out = io.StringIO()
    code = ctxlake.main(["lease", *argv], stdout=out, stderr=out)
    return code, out.getvalue()


def test_acquire_list_refuse_release_then_anyone_can_take_it(cfg, git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    code, out = cli(monkeypatch, "alice", "acquire", "src/app.py", "--reason", "fix the app", "--ttl", "600")
    assert code == 0 and "acquired src/app.py in github.com/Example-Org/Widget as alice" in out and "advisory" in out
    code, out = cli(monkeypatch, "bob", "claim", "src/app.py", "--reason", "mine")  # claim: the verb's old name, still accepted
    assert code == 1
    assert "src/app.py is held by alice (fix the app) until" in out and "in 10 min" in out and "advisory" in out
    code, out = cli(monkeypatch, "bob", "list", "--json")
    (lease,) = json.loads(out)
    assert (lease["holder"], lease["repo"], lease["path"], lease["epoch"]) == ("alice", REPO_ID, "src/app.py", 1)
    code, out = cli(monkeypatch, "bob", "list")
    assert "src/app.py  held by alice (fix the app)" in out and "1 lease(s)" in out
    assert cli(monkeypatch, "bob", "release", "src/app.py")[1].startswith("released 0 lease(s)")  # not bob's
    code, out = cli(monkeypatch, "alice", "release")
    assert code == 0 and out.startswith("released 1 lease(s) held by alice")
    code, out = cli(monkeypatch, "bob", "acquire", "src/app.py", "--reason", "mine")
    assert code == 0 and "(epoch 2)" in out


def test_directories_and_subdirectories(cfg, git_repo, monkeypatch):
    monkeypatch.chdir(git_repo + "/src")
    assert cli(monkeypatch, "alice", "acquire", "parser", "--reason", "restructure")[0] == 0  # existing dir → parser/
    code, out = cli(monkeypatch, "bob", "acquire", "parser/lexer.py", "--reason", "typo")
    assert code == 1 and "src/parser/ is held by alice (restructure)" in out
    rec, _ = leases.read(open_store(cfg.store), leases.lease_key(F, leases.resource_key(REPO_ID, "src/parser/")))
    assert rec["holder"] == "alice"


def test_a_garbage_lease_object_does_not_stop_an_acquire(cfg, git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    store = open_store(cfg.store)
    store.put(leases.lease_key(F, leases.resource_key(REPO_ID, "README.md")), b"<html>oops</html>")
    code, out = cli(monkeypatch, "alice", "acquire", "README.md", "--reason", "docs")
    assert code == 0 and "epoch 1" in out


def test_outside_a_repository_is_a_usage_error(cfg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out = cli(monkeypatch, "alice", "acquire", "notes.txt")
    assert code == 2 and "not inside a git repository" in out


def test_lease_has_help_text(capsys):
    try:
        ctxlake.main(["lease", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    text = capsys.readouterr().out
    assert "acquire" in text and "--reason" in text and "--ttl" in text


def test_the_cli_uses_the_live_store_when_one_is_configured(cfg, git_repo, monkeypatch, redis_url):
    """With ``live_store = redis://...`` the human CLI and syncd must see the same leases."""
    monkeypatch.setenv("CTXLAKE_LIVE_STORE", redis_url)
    monkeypatch.chdir(git_repo)
    code, _ = cli(monkeypatch, "alice", "acquire", "src/app.py", "--reason", "on redis")
    assert code == 0
    on_redis = [e.key for e in open_store(redis_url).list("live/")]
    assert any("/leases/" in k for k in on_redis)
    assert not [e for e in open_store(cfg.store).list("live/") if "/leases/" in e.key]
