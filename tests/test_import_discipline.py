"""Import discipline (docs/design.md §1): the hook is standard library only and its answer path does
not even import ``json``/``re`` (latency budget, §12); store clients stay out of it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import FIXTURES, ROOT

FORBIDDEN = ("boto3", "botocore", "pyarrow", "numpy", "jsonschema", "duckdb", "sqlite_utils", "urllib3", "requests")


def _modules_after(code: str, home: str) -> set:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_FLEET_ID="f", CTXLAKE_AGENT_ID="a", CTXLAKE_CONFIG=os.path.join(home, "x.toml"))
    r = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=ROOT, env=env, capture_output=True, check=True)
    return set(json.loads(r.stdout.decode().strip().splitlines()[-1]))


def test_hook_capture_imports_only_the_standard_library(tmp_path):
    payload = json.load(open(os.path.join(FIXTURES, "claude-hooks", "serverless-plugins__03355ac2.post_tool_use.json")))[0]
    code = (f"import sys, io, json; sys.path.insert(0, {ROOT!r}); from lib.hookproc import run; "
            f"run(['claude_code'], io.BytesIO({json.dumps(payload).encode()!r}), io.StringIO(), detach=False); "
            "print(json.dumps(sorted(sys.modules)))")
    mods = _modules_after(code, str(tmp_path))
    assert not [m for m in mods if m.split(".")[0] in FORBIDDEN]
    stdlib = set(sys.stdlib_module_names)
    third_party = {m.split(".")[0] for m in mods} - stdlib - {"lib", "__main__"}
    assert not third_party, third_party


def test_hook_answer_path_does_not_import_json_or_re(tmp_path):
    payload = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "/x"}}
    code = (f"import sys, io; sys.path.insert(0, {ROOT!r}); from lib import hookproc; "
            "hookproc.capture = lambda *a, **k: None; "
            f"hookproc.run(['claude_code'], io.BytesIO({repr(str(payload).replace(chr(39), chr(34)).encode())}), io.StringIO(), detach=False); "
            "mods = sorted(sys.modules); import json; print(json.dumps(mods))")
    mods = _modules_after(code, str(tmp_path))
    assert "re" not in mods and "json" not in mods and "dataclasses" not in mods


def test_hook_write_tool_answer_with_a_collision_stays_light(tmp_path):
    """A write tool on a leased path that another agent also edited: the lease and roster
    checks and their warning are answered without json/re/dataclasses (lib.jsonfast parses)."""
    import time

    from tests.live.conftest import REPO_ID, make_repo

    repo = make_repo(tmp_path / "repo")
    cache = tmp_path / "home" / "cache" / "f"
    cache.mkdir(parents=True)
    now = time.time()
    (cache / "leases.json").write_text(json.dumps({"store_time": now, "refreshed_at": now, "policy": "warn", "leases": [
        {"repo": REPO_ID, "path": "src/", "holder": "bob", "reason": "restructure", "expires_at": now + 300,
         "epoch": 3}]}))
    (cache / "roster.json").write_text(json.dumps({"store_time": now, "refreshed_at": now, "presence_ttl_secs": 300,
                                                   "agents": [{"agent_id": "carol", "updated_at": now, "touched": [
                                                       {"repo": REPO_ID, "path": "src/app.py", "at": now - 60,
                                                        "write": True}]}]}))
    payload = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Edit", "cwd": repo,
               "tool_input": {"file_path": os.path.join(repo, "src", "app.py"), "old_string": "a", "new_string": "b"}}
    code = (f"import sys, io; sys.path.insert(0, {ROOT!r}); from lib import hookproc; "
            "hookproc.capture = lambda *a, **k: None; out = io.StringIO(); "
            f"hookproc.run(['claude_code'], io.BytesIO({json.dumps(payload).encode()!r}), out, detach=False); "
            "mods = sorted(sys.modules); import json; print(out.getvalue().strip()); print(json.dumps(mods))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    home = str(tmp_path / "home")
    env.update(CTXLAKE_HOME=home, CTXLAKE_FLEET_ID="f", CTXLAKE_AGENT_ID="a", CTXLAKE_CONFIG=os.path.join(home, "x.toml"))
    r = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=ROOT, env=env, capture_output=True, check=True)
    answer_line, mods_line = r.stdout.decode().strip().splitlines()[-2:]
    text = json.loads(answer_line)["hookSpecificOutput"]["additionalContext"]
    assert "held by bob (restructure)" in text and "carol edited src/app.py 1 min ago" in text
    mods = set(json.loads(mods_line))
    assert "re" not in mods and "json" not in mods and "dataclasses" not in mods
