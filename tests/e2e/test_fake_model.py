"""The scripted fake model on its own (no agent CLI needed, so this runs in ``make test`` too):
both wire formats, streaming and not, turn selection from the request alone, routes, recording.
The streamed replies are parsed back with the official SDK's own event accumulation rules
reproduced here: text deltas joined, ``input_json_delta`` / tool-call argument chunks parsed."""
from __future__ import annotations

import json
import urllib.request

import pytest

from tests.e2e.fake_model import FakeModel, text, tool


def _post(url: str, body: dict, headers=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.headers.get("Content-Type"), resp.read().decode()


def _sse(raw: str) -> list[tuple[str | None, str]]:
    out = []
    for frame in raw.split("\n\n"):
        if not frame.strip():
            continue
        event, data = None, None
        for line in frame.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        out.append((event, data))
    return out


SCRIPT = [[tool("Bash", {"command": "ls"})], [text("thinking"), tool("Read", {"file_path": "a.py"})], [text("finished")]]
ANTHROPIC_TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "terminal", "parameters": {"type": "object"}}}]


@pytest.fixture
def fm():
    with FakeModel() as m:
        m.script("a", SCRIPT)
        yield m


def test_binds_loopback_only_on_a_free_port(fm):
    assert fm.url.startswith("http://127.0.0.1:") and int(fm.url.rsplit(":", 1)[1]) > 0
    assert fm.base_url("a", "/v1") == fm.url + "/a/v1"


def test_anthropic_non_streaming_replays_turns_by_assistant_count(fm):
    msgs = [{"role": "user", "content": "go"}]
    _, raw = _post(fm.base_url("a") + "/v1/messages", {"model": "m", "messages": msgs, "tools": ANTHROPIC_TOOLS})
    first = json.loads(raw)
    assert first["stop_reason"] == "tool_use"
    (block,) = first["content"]
    assert block == {"type": "tool_use", "id": "toolu_e2e_a_t0_0", "name": "Bash", "input": {"command": "ls"}}
    msgs += [{"role": "assistant", "content": first["content"]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block["id"], "content": "x"}]}]
    second = json.loads(_post(fm.base_url("a") + "/v1/messages", {"model": "m", "messages": msgs, "tools": ANTHROPIC_TOOLS})[1])
    assert [b["type"] for b in second["content"]] == ["text", "tool_use"] and second["content"][1]["id"] == "toolu_e2e_a_t1_0"
    again = json.loads(_post(fm.base_url("a") + "/v1/messages", {"model": "m", "messages": msgs, "tools": ANTHROPIC_TOOLS})[1])
    assert again["content"] == second["content"], "a retried request gets the same turn"
    assert [b["turn"] for b in fm.requests] == [0, 1, 1]
    assert fm.bodies("a")[0]["messages"][0]["content"] == "go"


def test_anthropic_streaming_events_rebuild_the_same_message(fm):
    ctype, raw = _post(fm.base_url("a") + "/v1/messages?beta=true",
                       {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}], "tools": ANTHROPIC_TOOLS})
    assert ctype == "text/event-stream"
    events = _sse(raw)
    names = [e for e, _ in events]
    assert names == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                     "message_delta", "message_stop"]
    data = [json.loads(d) for _, d in events]
    assert all(d["type"] == n for d, n in zip(data, names))
    assert data[1]["content_block"]["input"] == {} and json.loads(data[2]["delta"]["partial_json"]) == {"command": "ls"}
    assert data[4]["delta"]["stop_reason"] == "tool_use"


def test_openai_streaming_and_not(fm):
    body = {"model": "fake-model", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}],
            "tools": OPENAI_TOOLS}
    plain = json.loads(_post(fm.base_url("a", "/v1") + "/chat/completions", body)[1])
    (call,) = plain["choices"][0]["message"]["tool_calls"]
    assert call["id"] == "call_e2e_a_t0_0" and json.loads(call["function"]["arguments"]) == {"command": "ls"}
    assert plain["choices"][0]["finish_reason"] == "tool_calls"
    ctype, raw = _post(fm.base_url("a", "/v1") + "/chat/completions", dict(body, stream=True, stream_options={"include_usage": True}))
    assert ctype == "text/event-stream"
    frames = [d for _, d in _sse(raw)]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(d) for d in frames[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    args = "".join(tc["function"].get("arguments", "") for c in chunks for ch in c["choices"]
                   for tc in ch["delta"].get("tool_calls", []))
    assert json.loads(args) == {"command": "ls"}
    assert [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]] == ["tool_calls"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


def test_past_the_script_and_side_calls_get_text_without_advancing(fm):
    msgs = [{"role": "user", "content": "go"}] + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}] * 5
    done = json.loads(_post(fm.base_url("a") + "/v1/messages", {"model": "m", "messages": msgs, "tools": ANTHROPIC_TOOLS})[1])
    assert done["content"] == [{"type": "text", "text": "done"}] and done["stop_reason"] == "end_turn"
    side = json.loads(_post(fm.base_url("a") + "/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "title?"}]})[1])
    assert side["content"] == [{"type": "text", "text": "ok"}]
    assert fm.bodies("a") == [fm.requests[0]["body"]], "side calls are recorded but are not model turns"


def test_a_callable_turn_sees_headers_and_body_and_secrets_are_not_recorded(fm):
    seen = {}

    def turn(request):
        seen.update(request)
        return [text("sid " + request["headers"]["x-session"])]

    fm.script("b", [turn])
    out = json.loads(_post(fm.base_url("b") + "/v1/messages",
                           {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": ANTHROPIC_TOOLS},
                           headers={"x-session": "S1", "x-api-key": "sk-secret", "Authorization": "Bearer sk-secret"})[1])
    assert out["content"][0]["text"] == "sid S1" and seen["route"] == "b"
    assert "sk-secret" not in json.dumps(fm.requests)


def test_probe_endpoints_answer(fm):
    with urllib.request.urlopen(fm.base_url("a", "/v1") + "/models", timeout=30) as resp:
        assert json.loads(resp.read())["data"][0]["id"] == "fake-model"
    with urllib.request.urlopen(fm.base_url("a", "/v1") + "/models/fake-model", timeout=30) as resp:
        assert json.loads(resp.read())["id"] == "fake-model"
    req = urllib.request.Request(fm.url + "/", method="HEAD")
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200


def test_tool_results_are_found_by_id_in_either_format():
    from tests.e2e.fake_model import after, result_text, tool_result

    anthropic = {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                             "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}]}
    openai = {"messages": [{"role": "tool", "tool_call_id": "call_1", "content": "out"}]}
    bodies = [{"messages": []}, anthropic, openai]
    assert result_text(tool_result(bodies, "toolu_1")) == "a\nb" and after(bodies, "toolu_1") is anthropic
    assert result_text(tool_result(bodies, "call_1")) == "out" and after(bodies, "call_1") is openai
    with pytest.raises(KeyError):
        tool_result(bodies, "toolu_2")
