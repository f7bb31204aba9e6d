"""The JSON-RPC layer on its own: the seed's error table, framing, negotiation and the
hand-written schema checker, driven through byte buffers (no subprocess)."""
from __future__ import annotations

import io
import json

import pytest

from lib import jsonrpc
from lib.jsonrpc import SchemaError, Server, Tool, ToolError, validate
from tests.mcp.conftest import frames, run_session

ECHO_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["text"],
               "properties": {"text": {"type": "string", "minLength": 1}, "n": {"type": "integer", "minimum": 0, "maximum": 5}}}


def _refuse(args):
    raise ToolError("refused on my own terms")


def _boom(args):
    raise RuntimeError("bug inside a tool")


def make_server(**kw) -> Server:
    tools = [
        Tool("echo", "echo text", ECHO_SCHEMA, lambda a: {"echo": a["text"], "n": a.get("n")}, title="Echo",
             annotations={"readOnlyHint": True}),
        Tool("plain", "plain text", {"type": "object", "properties": {}}, lambda a: "just text"),
        Tool("refuse", "always refuses", {"type": "object", "properties": {}}, _refuse),
        Tool("boom", "always raises", {"type": "object", "properties": {}}, _boom),
    ]
    return Server("t", "1", tools, log=lambda *a, **k: None, **kw)


def answer(server, raw: bytes):
    out = server.handle(raw)
    return None if out is None else json.loads(out)


def req(method, params=None, rid=1, **extra):
    msg = {"jsonrpc": "2.0", "id": rid, "method": method, **extra}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


# -- the error table ---------------------------------------------------------------------------

@pytest.mark.parametrize("raw, code, rid", [
    (b"{not json", -32700, None),
    (b"\xff\xfe{}", -32700, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', -32700, None),
    (b"[]", -32600, None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, None),
    (b"42", -32600, None),
    (b'"ping"', -32600, None),
    (b'{"jsonrpc":"2.0","id":7}', -32600, 7),
    (b'{"jsonrpc":"2.0","id":7,"method":5}', -32600, 7),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, None),
    (b'{"id":3,"method":"ping"}', -32600, 3),
    (b'{"jsonrpc":"1.0","id":3,"method":"ping"}', -32600, 3),
    (b'{"jsonrpc":"2.0","id":3,"method":"ping","params":"x"}', -32600, 3),
    (b'{"jsonrpc":"2.0","id":3,"method":"ping","params":[1]}', -32602, 3),
    (b'{"jsonrpc":"2.0","id":"abc","method":"resources/list"}', -32601, "abc"),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}', -32602, 4),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}', -32602, 4),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}}', -32602, 4),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":[1]}}', -32602, 4),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":3}}}', -32602, 4),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","x":1}}}', -32602, 4),
    (b'{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":2024}}', -32602, 5),
])
def test_error_table_answers_with_the_seed_code_and_id(raw, code, rid):
    resp = answer(make_server(), raw)
    assert resp["jsonrpc"] == "2.0"
    assert resp["error"]["code"] == code
    assert resp["id"] == rid
    assert "result" not in resp


@pytest.mark.parametrize("raw", [
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    b'{"jsonrpc":"2.0","method":"no/such/method"}',
    b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"boom"}}',
    b'{"jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","id":9,"result":{}}',
    b'{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"x"}}',
    b'{"jsonrpc":"2.0","result":{}}',
    b'{"method":42}',
])
def test_notifications_and_stray_responses_are_never_answered(raw):
    assert answer(make_server(), raw) is None


def test_null_id_is_a_notification_when_the_server_says_so():
    assert answer(make_server(null_id="notification"), b'{"jsonrpc":"2.0","id":null,"method":"ping"}') is None


@pytest.mark.parametrize("raw", [b'{"jsonrpc":"2.0","id":null}', b'{"jsonrpc":"2.0","id":null,"result":{}}'])
def test_a_null_id_notification_without_a_method_is_not_answered_either(raw):
    assert answer(make_server(null_id="notification"), raw) is None
    assert answer(make_server(), raw) in (None, {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "invalid request: missing or non-string method"}})


def test_stray_responses_invalid_answers_an_id_without_a_method():
    server = make_server(stray_responses="invalid")
    for raw in (b'{"jsonrpc":"2.0","id":9,"result":{}}', b'{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"x"}}'):
        assert answer(server, raw) == {"jsonrpc": "2.0", "id": 9, "error": {
            "code": -32600, "message": "invalid request: missing or non-string method"}}
    assert answer(server, b'{"jsonrpc":"2.0","result":{}}') is None  # no id: still nothing


@pytest.mark.parametrize("kw", [{"null_id": "ignore"}, {"stray_responses": "answer"}, {"final_line": "keep"}])
def test_unknown_policy_values_are_refused(kw):
    with pytest.raises(ValueError):
        make_server(**kw)


def test_tool_refusal_is_a_result_with_is_error_not_a_protocol_error():
    resp = answer(make_server(), req("tools/call", {"name": "refuse"}))
    assert resp["result"] == {"content": [{"type": "text", "text": "refused on my own terms"}], "isError": True}


def test_a_tool_that_raises_answers_is_error_and_the_session_goes_on():
    server = make_server()
    resp = answer(server, req("tools/call", {"name": "boom"}))
    assert resp["result"]["isError"] is True
    assert "RuntimeError" in resp["result"]["content"][0]["text"]
    assert answer(server, req("ping", rid=2)) == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_invalid_params_message_names_the_argument():
    resp = answer(make_server(), req("tools/call", {"name": "echo", "arguments": {"text": "a", "n": 9}}))
    assert resp["error"]["code"] == -32602
    assert "`n`" in resp["error"]["message"] and "at most 5" in resp["error"]["message"]
    assert resp["error"]["data"] == {"tool": "echo", "argument": "n"}


def test_unknown_tool_message_lists_the_tools():
    resp = answer(make_server(), req("tools/call", {"name": "nope"}))
    assert resp["error"]["message"] == "unknown tool `nope`; available: boom, echo, plain, refuse"


def test_null_optional_argument_counts_as_absent():
    resp = answer(make_server(), req("tools/call", {"name": "echo", "arguments": {"text": "a", "n": None}}))
    assert json.loads(resp["result"]["content"][0]["text"]) == {"echo": "a", "n": None}


def test_string_results_are_plain_text_and_dicts_one_line_json():
    server = make_server()
    assert answer(server, req("tools/call", {"name": "plain"}))["result"]["content"][0]["text"] == "just text"
    text = answer(server, req("tools/call", {"name": "echo", "arguments": {"text": "é"}}))["result"]["content"][0]["text"]
    assert text == '{"echo": "é", "n": null}'


# -- negotiation -------------------------------------------------------------------------------

@pytest.mark.parametrize("offered, negotiated", [
    (None, "2024-11-05"), ("2024-11-05", "2024-11-05"), ("2025-03-26", "2025-03-26"),
    ("2025-06-18", "2025-06-18"), ("2025-11-25", "2024-11-05"), ("1999-01-01", "2024-11-05"),
])
def test_initialize_echoes_a_supported_revision_else_answers_the_default(offered, negotiated):
    server = make_server()
    params = {"capabilities": {}, "clientInfo": {"name": "c", "version": "0"}}
    if offered:
        params["protocolVersion"] = offered
    result = answer(server, req("initialize", params))["result"]
    assert result["protocolVersion"] == negotiated
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"] == {"name": "t", "version": "1"}
    assert server.protocol_version == negotiated


def test_a_pinned_server_answers_its_one_revision_whatever_is_offered():
    server = make_server(protocol_versions=("2025-03-26",), default_protocol="2025-03-26")
    assert answer(server, req("initialize", {"protocolVersion": "2024-11-05"}))["result"]["protocolVersion"] == "2025-03-26"


def test_tool_listing_follows_the_negotiated_revision():
    listings = {}
    for version in jsonrpc.PROTOCOL_VERSIONS:
        server = make_server()
        answer(server, req("initialize", {"protocolVersion": version}))
        listings[version] = answer(server, req("tools/list", rid=2))["result"]["tools"][0]
    assert set(listings["2024-11-05"]) == {"name", "description", "inputSchema"}
    assert set(listings["2025-03-26"]) == {"name", "description", "inputSchema", "annotations"}
    assert set(listings["2025-06-18"]) == {"name", "description", "inputSchema", "annotations", "title"}
    assert listings["2024-11-05"]["inputSchema"] is ECHO_SCHEMA or listings["2024-11-05"]["inputSchema"] == ECHO_SCHEMA


def test_structured_content_only_from_2025_06_18():
    for version, expect in (("2025-03-26", False), ("2025-06-18", True)):
        server = make_server()
        answer(server, req("initialize", {"protocolVersion": version}))
        result = answer(server, req("tools/call", {"name": "echo", "arguments": {"text": "x"}}, rid=2))["result"]
        assert ("structuredContent" in result) is expect
        if expect:
            assert result["structuredContent"] == {"echo": "x", "n": None}


# -- framing and the loop ----------------------------------------------------------------------

def test_mixed_session_gets_exactly_one_frame_per_request_in_order():
    server = make_server()
    lines = [
        req("initialize", {"protocolVersion": "2024-11-05"}, rid=1),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b"garbage",
        req("tools/list", rid=2),
        b'{"jsonrpc":"2.0","method":"unknown/notification","params":{}}',
        b"",
        b"   ",
        req("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, rid=3),
        b'{"jsonrpc":"2.0","id":99,"result":{}}',
        req("tools/call", {"name": "echo", "arguments": {"text": 5}}, rid=4),
        b"[1,2]",
        req("tools/call", {"name": "refuse"}, rid="five"),
        req("no/such", rid=6),
        b'{"jsonrpc":"2.0","id":7}',
        req("ping", rid=8),
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"notify"}}}',
    ]
    got = run_session(server, lines)
    assert [m["id"] for m in got] == [1, None, 2, 3, 4, None, "five", 6, 7, 8]
    assert [m.get("error", {}).get("code") for m in got] == [None, -32700, None, None, -32602, -32600, None, -32601, -32600, None]
    assert got[6]["result"]["isError"] is True


class ChunkedRaw(io.RawIOBase):
    """A pipe that hands out at most ``size`` bytes per read: frames arrive split."""

    def __init__(self, data: bytes, size: int):
        self.data, self.size, self.pos = data, size, 0

    def readable(self):
        return True

    def readinto(self, b):
        chunk = self.data[self.pos:self.pos + min(self.size, len(b))]
        b[:len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)


def test_a_frame_split_across_reads_is_answered_once():
    data = req("ping", rid=1) + b"\n" + req("tools/call", {"name": "echo", "arguments": {"text": "x" * 500}}, rid=2) + b"\n"
    out = io.BytesIO()
    make_server().serve(io.BufferedReader(ChunkedRaw(data, 3), buffer_size=7), out)
    assert [m["id"] for m in frames(out.getvalue())] == [1, 2]


def test_oversized_frame_is_skipped_in_bounded_reads_and_answered_once():
    server = make_server(max_frame_bytes=1024)
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 5000}}).encode()
    got = run_session(server, [big, req("ping", rid=2)])
    assert [(m["id"], m.get("error", {}).get("code")) for m in got] == [(None, -32600), (2, None)]
    assert "larger than 1024 bytes" in got[0]["error"]["message"]


def test_eof_mid_frame_drops_the_fragment_and_returns_zero():
    out = io.BytesIO()
    code = make_server().serve(io.BytesIO(req("ping", rid=1) + b"\n" + b'{"jsonrpc":"2.0","id":2,"meth'), out)
    assert code == 0
    assert [m["id"] for m in frames(out.getvalue())] == [1]


def test_final_line_frame_answers_a_last_line_without_its_newline():
    out = io.BytesIO()
    data = req("ping", rid=1) + b"\n" + req("ping", rid=2)
    assert make_server(final_line="frame").serve(io.BytesIO(data), out) == 0
    assert [m["id"] for m in frames(out.getvalue())] == [1, 2]
    out = io.BytesIO()
    make_server(final_line="frame").serve(io.BytesIO(req("ping", rid=1) + b"\n" + b'{"jsonrpc":"2.0","id":2,"meth'), out)
    assert [(m["id"], m.get("error", {}).get("code")) for m in frames(out.getvalue())] == [(1, None), (None, -32700)]


def test_crlf_line_endings_are_accepted():
    out = io.BytesIO()
    make_server().serve(io.BytesIO(req("ping", rid=1) + b"\r\n"), out)
    assert frames(out.getvalue())[0]["result"] == {}


def test_closed_stdout_ends_the_loop_quietly():
    class Closed(io.BytesIO):
        def write(self, b):
            raise BrokenPipeError

    assert make_server().serve(io.BytesIO(req("ping") + b"\n" + req("ping", rid=2) + b"\n"), Closed()) == 0


def test_deep_nesting_is_refused_without_recursion_trouble():
    server = make_server()
    deep = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"[" * 200 + b"]" * 200 + b"}}"
    resp = answer(server, deep)
    assert resp["error"]["code"] == -32600 and resp["id"] == 1
    very_deep = b"[" * 200_000 + b"]" * 200_000
    assert answer(server, very_deep)["error"]["code"] in (-32700, -32600)


def test_every_answer_is_ascii_and_one_line():
    server = make_server()
    out = server.handle(req("tools/call", {"name": "echo", "arguments": {"text": "line1\nline2\u2028é\ud800"}}))
    assert b"\n" not in out
    out.decode("ascii")


# -- the schema subset ---------------------------------------------------------------------------

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["a"],
          "properties": {"a": {"type": "string", "maxLength": 3},
                         "b": {"type": "array", "maxItems": 2, "minItems": 1,
                               "items": {"type": "object", "properties": {"s": {"type": "string"}}}},
                         "c": {"type": "integer", "minimum": 1},
                         "d": {"type": "string", "enum": ["x", "y"]},
                         "e": {"type": ["string", "null"]},
                         "f": {"type": "number"}, "g": {"type": "boolean"}}}


@pytest.mark.parametrize("value, path, fragment", [
    ({}, "a", "missing required argument `a`"),
    ({"a": 1}, "a", "must be a string, got integer"),
    ({"a": "abcd"}, "a", "at most 3 characters"),
    ({"a": "x", "z": 1}, "z", "unknown argument `z`; valid arguments: a, b, c, d, e, f, g"),
    ({"a": "x", "b": []}, "b", "at least 1 item"),
    ({"a": "x", "b": [{}, {}, {}]}, "b", "at most 2 item"),
    ({"a": "x", "b": ["s"]}, "b[0]", "must be an object, got string"),
    ({"a": "x", "b": [{"s": 1}]}, "b[0].s", "argument `b[0].s` must be a string"),
    ({"a": "x", "c": 0}, "c", "at least 1"),
    ({"a": "x", "c": True}, "c", "must be an integer, got boolean"),
    ({"a": "x", "c": 1.5}, "c", "must be an integer, got number"),
    ({"a": "x", "d": "z"}, "d", 'must be one of "x", "y"'),
    ({"a": "x", "e": 3}, "e", "must be a string or null"),
    ({"a": "x", "f": "1"}, "f", "must be a number, got string"),
    ({"a": "x", "g": 1}, "g", "must be a boolean, got integer"),
])
def test_validate_rejects_with_a_readable_message(value, path, fragment):
    with pytest.raises(SchemaError) as exc:
        validate(SCHEMA, value)
    assert exc.value.path == path
    assert fragment in str(exc.value)


@pytest.mark.parametrize("value", [
    {"a": "x"}, {"a": "", "b": [{"s": "t", "extra": 1}], "c": 3, "d": "y", "e": None, "f": 2, "g": False},
    {"a": "x", "c": 3.0}, {"a": "x", "f": 1.25},
])
def test_validate_accepts_conforming_values(value):
    validate(SCHEMA, value)


def test_check_schema_refuses_keywords_it_cannot_enforce():
    with pytest.raises(ValueError, match="pattern"):
        Server("t", "1", [Tool("x", "x", {"type": "object", "properties": {"p": {"type": "string", "pattern": "^a"}}},
                               lambda a: {})])
    with pytest.raises(ValueError, match="duplicate"):
        Server("t", "1", [Tool("x", "x", {"type": "object"}, dict), Tool("x", "x", {"type": "object"}, dict)])


def test_too_deep_is_iterative():
    v = []
    for _ in range(50_000):
        v = [v]
    assert jsonrpc.too_deep(v, 64)
    assert not jsonrpc.too_deep({"a": [[1]]}, 3)
