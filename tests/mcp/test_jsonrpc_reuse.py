"""lib/jsonrpc.py hosts ctxctl's MCP adapter unchanged (docs/design.md §11: the loop is shared): a
server pinned to 2025-03-26, ``"id": null`` as a notification, and ctxctl's own ``tools/list``
and ``tools/call`` (whose argument errors are in-band results, not -32602) registered on it."""
from __future__ import annotations

import io
import json

from lib import jsonrpc
from lib.code import config as code_config
from lib.code import mcp as ctxctl_mcp
from tests.mcp.conftest import frames


def test_ctxctl_methods_run_on_the_shared_loop(tmp_path):
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
    adapter = ctxctl_mcp.Adapter(str(tmp_path), code_config.Config(), exec_timeout=1.0)
    server = jsonrpc.Server("ctxctl", "test", [], protocol_versions=("2025-03-26",), default_protocol="2025-03-26",
                            null_id="notification")
    for method, fn in ctxctl_mcp.methods(adapter, "test").items():
        if method != "initialize":
            server.register(method, fn)
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": 9},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ctxctl_read",
                                                                       "arguments": {"file": "notes.txt", "lines": 2}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "nope"}},
    ]
    out = io.BytesIO()
    server.serve(io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in lines)), out)
    got = frames(out.getvalue())
    assert [m["id"] for m in got] == [1, 9, 2, 3, 4]
    assert got[0]["result"]["protocolVersion"] == "2025-03-26"
    assert got[1]["error"]["code"] == -32600
    assert [t["name"] for t in got[2]["result"]["tools"]] == ["ctxctl_outline", "ctxctl_symbol", "ctxctl_read",
                                                             "ctxctl_deps", "ctxctl_exec"]
    assert "two" in got[3]["result"]["content"][0]["text"], got[3]
    assert got[4]["result"]["isError"] is True and "available" in got[4]["result"]["content"][0]["text"]
