"""Small failures reported clearly (issue #19): the file store leaves no temp file after a write
the disk refused; a garbage snapshot pointer is named and explained, never a codec guess; an
empty ``HOME`` never puts the spool in ``/.ctxlake``."""
from __future__ import annotations

import os
import pwd
import subprocess
import sys
import textwrap

import pytest

from lib import config, lake, syncpass
from lib.memory import snapshot
from lib.paths import HomeError, Paths
from lib.store import open_store
from tests.conftest import ROOT

FULL_DISK = textwrap.dedent("""
    import os, resource, signal, sys
    sys.path.insert(0, {root!r})
    from lib.store import StoreError
    from lib.store.file import FileStore
    store = FileStore("file://" + {lake!r})
    store.put("warm/up", b"x")  # directories exist before the limit
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # any write past 4 KiB fails like a full disk
    try:
        store.put("big/object", b"y" * 65536)
    except StoreError as exc:
        print("refused:", exc)
""")


def test_a_write_the_disk_refused_leaves_no_temp_file(tmp_path):
    lake_dir = str(tmp_path / "lake")
    out = subprocess.run([sys.executable, "-c", FULL_DISK.format(root=ROOT, lake=lake_dir)], capture_output=True,
                         text=True, timeout=60, check=True)
    assert out.stdout.startswith("refused:"), out
    leftovers = [os.path.join(d, n) for d, _, names in os.walk(lake_dir) for n in names if "/locks" not in d]
    assert leftovers == [os.path.join(lake_dir, "warm", "up")], leftovers  # no temp file, no partial object
    assert not os.path.exists(os.path.join(lake_dir, "big", "object"))


@pytest.mark.parametrize("garbage, why", [(b"\xfe\xff\x00\x00garbage", "not UTF-8"), (b"\x00\x00\x00{", "not valid JSON"),
                                          (b"{not json", "not valid JSON"), (b"[1, 2]", "not an object"),
                                          (b'{"sha256": 5}', "no valid sha256")])
def test_a_garbage_snapshot_pointer_is_named_and_explained(home, monkeypatch, garbage, why):
    monkeypatch.setenv("CTXLAKE_FLEET_ID", "f")
    cfg = config.load()
    store = open_store(cfg.store)
    store.put(lake.snapshot_pointer_key("f"), garbage)
    with pytest.raises(ValueError) as exc:
        snapshot.fetch(store, "f", cfg.paths.snapshot("f"))
    text = str(exc.value)
    assert why in text and lake.snapshot_pointer_key("f") in text and "maint" in text
    assert "utf-16" not in text.lower() and "codec" not in text
    logged = []
    summary = syncpass.run_pass(cfg, store, lambda ev, **kw: logged.append((ev, kw)))
    assert why in summary["cache_error"]  # syncd logs it as a warning and keeps going
    assert [kw for ev, kw in logged if ev == "cache_refresh_failed"]


def test_an_empty_home_uses_the_password_database_never_the_root():
    entry = pwd.getpwuid(os.getuid()).pw_dir
    if not os.path.isabs(entry) or entry == "/":
        pytest.skip("this user has no home directory in the password database")
    for env in ({"HOME": ""}, {"HOME": "relative/dir"}, {"HOME": "/"}, {}):
        p = Paths.from_env(env)
        assert p.home == os.path.join(entry, ".ctxlake") and p.spool_dir == os.path.join(entry, ".ctxlake", "spool")
    assert Paths.from_env({"HOME": "", "CTXLAKE_HOME": "~/elsewhere"}).home == os.path.join(entry, "elsewhere")
    assert Paths.from_env({"HOME": "/home/dev"}).home == "/home/dev/.ctxlake"


def test_no_home_at_all_is_a_clear_error_and_the_hook_writes_nothing_at_the_root(tmp_path, monkeypatch):
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: pwd.struct_passwd(("svc", "x", uid, uid, "", "/", "/bin/false")))
    with pytest.raises(HomeError, match="set CTXLAKE_HOME"):
        Paths.from_env({"HOME": ""})
    before = os.path.exists("/.ctxlake")
    from lib import hookproc
    import io
    out = io.StringIO()
    hookproc.run(["claude_code", "SessionStart"], io.BytesIO(b'{"session_id": "s", "hook_event_name": "SessionStart"}'),
                 out, environ={"HOME": ""}, detach=False)
    assert out.getvalue().strip() == "{}"  # the agent is not failed
    assert os.path.exists("/.ctxlake") == before
