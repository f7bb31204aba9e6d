"""Import discipline (DESIGN.md §1): the hook is standard library only and its answer path does
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
