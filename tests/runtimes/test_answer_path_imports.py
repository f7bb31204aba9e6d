"""The Cursor and Hermes answer paths import neither ``json``, ``re`` nor ``dataclasses`` (hook
latency budget, docs/design.md §12), and their capture imports only the standard library."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.runtimes.conftest import load_payloads

CASES = [("cursor", "agent__pre_tool_use.json"), ("cursor", "agent__before_submit_prompt.json"),
         ("cursor", "agent__session_start.json"), ("hermes", "capture-0.19.0__pre_llm_call.json"),
         ("hermes", "capture-0.19.0__pre_tool_call.json"), ("hermes", "capture-0.19.0__post_tool_call.json")]


def _modules(code: str, home: str) -> set:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_FLEET_ID="f", CTXLAKE_AGENT_ID="a", CTXLAKE_CONFIG=os.path.join(home, "x.toml"))
    r = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=ROOT, env=env, capture_output=True, check=True)
    return set(json.loads(r.stdout.decode().strip().splitlines()[-1]))


@pytest.mark.parametrize("runtime,name", CASES)
def test_answer_path_does_not_import_json_re_or_dataclasses(runtime, name, tmp_path):
    payload = dict(load_payloads(f"{runtime}-hooks"))[name]
    code = (f"import sys, io; sys.path.insert(0, {ROOT!r}); from lib import hookproc; "
            "hookproc.capture = lambda *a, **k: None; "
            f"hookproc.run([{runtime!r}, {payload['hook_event_name']!r}], io.BytesIO({json.dumps(payload).encode()!r}), "
            "io.StringIO(), detach=False); mods = sorted(sys.modules); import json; print(json.dumps(mods))")
    mods = _modules(code, str(tmp_path))
    assert not {"json", "re", "dataclasses"} & mods


@pytest.mark.parametrize("runtime,name", CASES)
def test_capture_imports_only_the_standard_library(runtime, name, tmp_path):
    payload = dict(load_payloads(f"{runtime}-hooks"))[name]
    code = (f"import sys, io, json; sys.path.insert(0, {ROOT!r}); from lib.hookproc import run; "
            f"run([{runtime!r}], io.BytesIO({json.dumps(payload).encode()!r}), io.StringIO(), detach=False); "
            "print(json.dumps(sorted(sys.modules)))")
    mods = _modules(code, str(tmp_path))
    third_party = {m.split(".")[0] for m in mods} - set(sys.stdlib_module_names) - {"lib", "__main__"}
    assert not third_party, third_party
