"""Acceptance case 25 (docs/ctxctl.md, Tests) and the MCP error table: protocol frames over a real
``ctxctl.py mcp`` process, argument rules and workspace pinning through the adapter, and the
official ``mcp`` SDK client end to end over stdio."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from lib.code import config as _config
from lib.code import mcp as adapter_mod
from tests.ctxctl.conftest import CTXCTL, FIXTURES, PYTHON, ROOT

TOOLS = ["ctxctl_outline", "ctxctl_symbol", "ctxctl_read", "ctxctl_deps", "ctxctl_exec"]


@pytest.fixture
def workspace(tmp_path):
    """A workspace root with the Rust fixture, a text file, and a secret outside the root."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "sample.rs").write_bytes(open(os.path.join(FIXTURES, "sample.rs"), "rb").read())
    (root / "notes.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    (tmp_path / "outside.txt").write_text("TOP SECRET outside the workspace\n")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    return root


@pytest.fixture
def adapter(workspace):
    """An adapter whose exec timeout no quick command reaches even on a loaded machine."""
    return adapter_mod.Adapter(str(workspace), _config.Config(), exec_timeout=30.0)


def text(result) -> str:
    return result["content"][0]["text"]


def call(adapter, tool, **args):
    return adapter.call(tool, args)


def session(cwd, frames, env_extra=None) -> list:
    """Run ``ctxctl.py mcp`` on ``frames`` (str lines); returns the decoded answer frames."""
    env = dict(os.environ, XDG_CONFIG_HOME=str(cwd), **(env_extra or {}))
    r = subprocess.run([PYTHON, CTXCTL, "mcp"], input="".join(f + "\n" for f in frames).encode(), cwd=cwd, env=env,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.decode().splitlines()]


# -- protocol -------------------------------------------------------------------------------------

def test_protocol_frames(workspace):
    answers = session(workspace, [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": None, "method": "ping"}),
        "",
        json.dumps({"id": 9}),
        "{not json",
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "nope/never"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    ])
    assert len(answers) == 6  # the notification and the null-id message get no reply
    init = answers[0]["result"]
    assert init["protocolVersion"] == "2025-03-26"
    assert init["capabilities"] == {"tools": {"listChanged": False}}
    assert init["serverInfo"]["name"] == "ctxctl" and "instructions" not in init
    assert answers[1] == {"jsonrpc": "2.0", "id": 9,
                          "error": {"code": -32600, "message": "invalid request: missing or non-string method"}}
    assert answers[2]["id"] is None and answers[2]["error"]["code"] == -32700
    assert answers[2]["error"]["message"].startswith("parse error: ")
    assert answers[3]["error"] == {"code": -32601, "message": "method not found: nope/never"}
    assert answers[4]["result"] == {}
    tools = answers[5]["result"]["tools"]
    assert [t["name"] for t in tools] == TOOLS
    for t in tools:
        schema = t["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert tools[2]["inputSchema"]["required"] == ["file"]
    assert tools[1]["inputSchema"]["required"] == ["file", "name"]
    assert "unresolved" in tools[3]["description"]


def test_adapter_runs_on_the_shared_jsonrpc_loop(adapter, workspace):
    """docs/design.md §11: ``ctxctl mcp`` is ``lib.jsonrpc.Server`` set to ctxctl's contract."""
    import io

    from lib import jsonrpc

    warnings = []
    server = adapter_mod.server(adapter, "9.9", log=warnings.append)
    assert isinstance(server, jsonrpc.Server)
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        {"jsonrpc": "2.0", "id": None},
        {"jsonrpc": "2.0", "id": None, "result": {}},
        {"jsonrpc": "2.0", "id": 5, "result": {}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
         "params": {"name": "ctxctl_read", "arguments": {"file": "notes.txt", "lines": 2}}},
    ]
    out = io.BytesIO()
    data = b"".join(json.dumps(m).encode() + b"\n" for m in lines) + b'{"jsonrpc":"2.0","id":8,"method":"ping"}'
    assert server.serve(io.BytesIO(data), out) == 0
    got = [json.loads(line) for line in out.getvalue().decode().splitlines()]
    assert [m["id"] for m in got] == [1, 5, 6, 7, 8]  # the last line, without its newline, is answered too
    assert got[0]["result"] == {"protocolVersion": "2025-03-26", "capabilities": {"tools": {"listChanged": False}},
                                "serverInfo": {"name": "ctxctl", "version": "9.9"}}
    assert got[1]["error"] == {"code": -32600, "message": "invalid request: missing or non-string method"}
    assert got[2]["result"]["isError"] is True and text(got[2]["result"]).startswith("unknown tool `nope`")
    assert "isError" not in got[3]["result"] and "two" in text(got[3]["result"])
    assert got[4]["result"] == {} and warnings == []  # initialize is not a warning


def test_loop_diagnostics_become_ctxctl_warnings():
    warnings = []
    log = adapter_mod._loop_log(warnings.append)
    log("mcp_initialized", requested="2024-11-05", negotiated="2025-03-26")
    log("frame_too_large_dropped", bytes=5000000, limit=4194304)
    log("method_failed", method="tools/list", error="RuntimeError: x", traceback="Traceback (most recent call last):\n")
    assert warnings == ["mcp: frame_too_large_dropped: bytes=5000000 limit=4194304",
                        "mcp: method_failed: method=tools/list error=RuntimeError: x\nTraceback (most recent call last):"]
    adapter_mod._loop_log(None)("stdout_closed")  # no warn callable: nothing, and no error


def test_server_exec_timeout_reaches_the_tool(workspace):
    frame = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "ctxctl_exec", "arguments": {"cmd": "sleep 60"}}})
    [answer] = session(workspace, [frame], {"CTXCTL_EXEC_TIMEOUT_SECS": "1"})
    result = answer["result"]
    assert result["isError"] is True and "timeout" in result["content"][0]["text"]


# -- tools: results and the error table -----------------------------------------------------------

def test_read_coerces_numeric_lines(adapter):
    r = call(adapter, "ctxctl_read", file="notes.txt", lines=4)
    assert "isError" not in r and text(r).startswith("# notes.txt:4-4\nfour\n")


def test_read_absolute_in_workspace_path_without_lines_is_the_whole_file(adapter, workspace):
    path = str(workspace / "notes.txt")
    r = call(adapter, "ctxctl_read", file=path)
    assert "isError" not in r and "one\ntwo\nthree\nfour\nfive\n" in text(r)
    assert text(call(adapter, "ctxctl_read", file="notes.txt", lines="")) == text(call(adapter, "ctxctl_read", file="notes.txt"))


def test_read_invalid_range_names_the_formats(adapter):
    r = call(adapter, "ctxctl_read", file="notes.txt", lines="1x2")
    assert r["isError"] is True and text(r) == "invalid range `1x2`: expected N, N-M, or N-"


@pytest.mark.parametrize("raw,message", [
    ("../outside.txt", "invalid argument `file`: ../outside.txt: path escapes workspace root"),
    ("/etc/passwd", "invalid argument `file`: /etc/passwd: path escapes workspace root"),
    ("link.txt", "invalid argument `file`: link.txt: resolved symlink target is outside the workspace; "
                 "path escapes workspace root"),
    ("sub/../../outside.txt", "invalid argument `file`: sub/../../outside.txt: path escapes workspace root"),
])
def test_workspace_escapes_are_rejected_without_leaking(adapter, raw, message):
    r = call(adapter, "ctxctl_read", file=raw)
    assert r["isError"] is True and text(r) == message
    assert "TOP SECRET" not in json.dumps(r)


def test_absolute_symlink_escape_is_rejected(adapter, workspace):
    r = call(adapter, "ctxctl_read", file=str(workspace / "link.txt"))
    assert r["isError"] is True and "resolved symlink target is outside the workspace" in text(r)


def test_absolute_path_through_a_symlinked_alias_of_the_root_is_accepted(adapter, workspace, tmp_path):
    alias = tmp_path / "alias"
    os.symlink(workspace, alias)
    r = call(adapter, "ctxctl_read", file=str(alias / "notes.txt"), lines="2")
    assert "isError" not in r and text(r).startswith(f"# {alias / 'notes.txt'}:2-2\ntwo\n")
    r = call(adapter, "ctxctl_outline", file=str(alias / "sample.rs"))
    assert "isError" not in r and "fn      add" in text(r)
    # the alias does not open a way out: its link.txt still resolves outside the workspace
    r = call(adapter, "ctxctl_read", file=str(alias / "link.txt"))
    assert r["isError"] is True and "TOP SECRET" not in json.dumps(r)
    r = call(adapter, "ctxctl_read", file=str(alias / ".." / "outside.txt"))
    assert r["isError"] is True and "TOP SECRET" not in json.dumps(r)


def test_exec_timeout_is_an_error_result(workspace):
    adapter = adapter_mod.Adapter(str(workspace), _config.Config(), exec_timeout=1.0)
    r = call(adapter, "ctxctl_exec", cmd="sleep 60")
    assert r["isError"] is True and "timeout" in text(r)


def test_outline_parse_failure_carries_exit_code_and_output(adapter, workspace):
    (workspace / "broken.rs").write_text("fn broken( {\n")
    r = call(adapter, "ctxctl_outline", file="broken.rs")
    assert r["isError"] is True
    assert text(r).startswith("tool ctxctl_outline failed with exit code 3: tree-sitter reported ")
    assert "syntax error" in text(r) and "# broken.rs  [" in text(r)


def test_exec_nonzero_exit_is_an_error_with_output(adapter):
    r = call(adapter, "ctxctl_exec", cmd="false")
    assert r["isError"] is True and text(r).startswith("tool ctxctl_exec failed with exit code 1\n$ false")


def test_exec_runs_in_the_workspace_root(adapter, workspace):
    r = call(adapter, "ctxctl_exec", cmd="pwd")
    assert os.path.realpath(str(workspace)) in text(r)


@pytest.mark.parametrize("tool,args,message", [
    ("ctxctl_exec", {"cmd": "echo", "head": "3"}, "argument `head` must be an integer, got string"),
    ("ctxctl_exec", {"cmd": "echo", "keep": ["error", 5]},
     "argument `keep` must be an array of strings, got array with number at index 1"),
    ("ctxctl_outline", {"file": "sample.rs", "no_doc": "yes"}, "argument `no_doc` must be a boolean, got string"),
    ("ctxctl_read", {"file": "notes.txt", "line": "1"}, "unknown argument `line`; valid arguments: file, lines"),
    ("ctxctl_symbol", {"file": "sample.rs", "name": "add", "kind": "fn"},
     "unknown kind `fn` (expected class|struct|enum|interface|function|method|module|const|var|trait|type|heading|rule|element)"),
    ("ctxctl_nope", {}, "unknown tool `ctxctl_nope`; available: ctxctl_deps, ctxctl_exec, ctxctl_outline, "
                        "ctxctl_read, ctxctl_symbol"),
])
def test_argument_errors_teach_the_fix(adapter, tool, args, message):
    r = adapter.call(tool, args)
    assert r["isError"] is True and text(r) == message


def test_missing_argument_appends_a_usage_example(adapter):
    r = adapter.call("ctxctl_outline", {})
    assert text(r) == ('missing or empty argument: file\nexpected: {"file": "<workspace-relative or absolute path '
                       'under workspace>", "no_doc": <boolean>, "no_lines": <boolean>}')
    r = adapter.call("ctxctl_symbol", {"file": "sample.rs", "name": ""})
    assert text(r).startswith("missing or empty argument: name\nexpected: {") and '"<exact symbol name>"' in text(r)
    r = adapter.call("ctxctl_exec", {"cmd": None})
    assert '"cmd": "<command line>"' in text(r) and '"keep": ["<string>"]' in text(r) and '"head": <integer>' in text(r)


def test_arguments_must_be_an_object_and_null_is_absent(adapter):
    assert text(adapter.call("ctxctl_read", ["notes.txt"])) == "arguments must be an object"
    r = adapter.call("ctxctl_read", {"file": "notes.txt", "lines": None})
    assert "isError" not in r and "five" in text(r)


def test_missing_file_is_a_plain_error(adapter):
    r = call(adapter, "ctxctl_outline", file="absent.rs")
    assert r["isError"] is True and text(r).startswith("failed to read absent.rs")


def test_symbol_success_matches_the_cli(adapter):
    r = call(adapter, "ctxctl_symbol", file="sample.rs", name="add")
    assert "isError" not in r and text(r).startswith("# add  sample.rs:4-6  (") and "a + b" in text(r)


# -- self-healing lookups ---------------------------------------------------------------------------

def test_symbol_miss_suggests_ranked_names_and_a_mini_outline(adapter, workspace):
    (workspace / "nodes.rs").write_text(
        "struct NodeState {}\nstruct MyNodeState {}\nstruct NodeHandle {}\nfn unrelated() {}\n")
    r = call(adapter, "ctxctl_symbol", file="nodes.rs", name="nodestate")
    assert r["isError"] is True
    assert text(r) == ("symbol not found: nodestate\nsuggestions: NodeState, MyNodeState\n\n"
                       "struct NodeState\nstruct MyNodeState\nstruct NodeHandle\nfunction unrelated")


def test_symbol_miss_with_edit_distance_and_no_match(adapter, workspace):
    r = call(adapter, "ctxctl_symbol", file="sample.rs", name="ad")
    assert text(r).startswith("symbol not found: ad\nsuggestions: add\n\n")
    r = call(adapter, "ctxctl_symbol", file="sample.rs", name="Pointt")
    assert "suggestions: Point" in text(r)
    r = call(adapter, "ctxctl_symbol", file="sample.rs", name="zzzzzz")
    assert text(r) == "symbol not found: zzzzzz"


def test_mini_outline_caps_at_20_and_hides_nested_symbols(adapter, workspace):
    src = "fn outer() {\n    fn inner_method() {}\n}\n" + "".join(f"struct Top{i:02d} {{}}\n" for i in range(25))
    (workspace / "many.rs").write_text(src)
    r = call(adapter, "ctxctl_symbol", file="many.rs", name="Top")
    lines = text(r).split("\n")
    assert lines[0] == "symbol not found: Top"
    assert lines[1] == "suggestions: Top00, Top01, Top02, Top03, Top04"
    outline_lines = lines[3:]
    assert outline_lines[0] == "function outer" and outline_lines[1] == "struct Top00"
    assert len(outline_lines) == 21 and outline_lines[-1] == "... and 6 more"
    assert "inner_method" not in text(r)


# -- the official SDK client ------------------------------------------------------------------------

def test_official_sdk_client_over_stdio(workspace):
    pytest.importorskip("mcp", reason="the official MCP SDK is pinned in requirements-dev.txt")
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = dict(os.environ, XDG_CONFIG_HOME=str(workspace), PYTHONPATH=ROOT)

    async def drive():
        params = StdioServerParameters(command=PYTHON, args=[CTXCTL, "mcp"], env=env, cwd=str(workspace))
        async with Client(params) as client:
            out = {"protocol": client.protocol_version, "server": client.server_info.name,
                   "tools": [t.name for t in (await client.list_tools()).tools]}
            for key, name, args in (
                    ("outline", "ctxctl_outline", {"file": "sample.rs"}),
                    ("read", "ctxctl_read", {"file": "notes.txt", "lines": "2-3"}),
                    ("deps", "ctxctl_deps", {"file": "sample.rs"}),
                    ("exec", "ctxctl_exec", {"cmd": "echo hello"}),
                    ("miss", "ctxctl_symbol", {"file": "sample.rs", "name": "ad"}),
                    ("escape", "ctxctl_read", {"file": "../outside.txt"})):
                result = await client.call_tool(name, args)
                out[key] = (result.is_error, result.content[0].text)
            return out

    got = anyio.run(drive)
    assert got["protocol"] == "2025-03-26" and got["server"] == "ctxctl"
    assert got["tools"] == TOOLS
    assert got["outline"][0] is False and "4 symbols" in got["outline"][1]
    assert got["read"] == (False, "# notes.txt:2-3\ntwo\nthree\n\n" + got["read"][1].split("\n\n", 1)[1])
    assert got["deps"][0] is False
    assert got["exec"][0] is False and got["exec"][1].startswith("$ echo hello\nhello\n")
    assert got["miss"][0] is True and "suggestions: add" in got["miss"][1]
    assert got["escape"] == (True, "invalid argument `file`: ../outside.txt: path escapes workspace root")


def test_an_internal_bug_comes_back_as_a_tool_result_not_a_protocol_error(tmp_path, monkeypatch):
    a = adapter_mod.Adapter(str(tmp_path), _config.Config(), exec_timeout=1.0)

    def boom(tool, args):
        raise KeyError("surprise")

    monkeypatch.setattr(a, "_run", boom)
    out = a.call("ctxctl_outline", {"file": "x.py"})
    assert out["isError"] is True and "internal error in ctxctl_outline" in out["content"][0]["text"]
