"""A scripted fake model on 127.0.0.1: the Anthropic Messages API and OpenAI chat completions,
streaming (SSE) and not, replaying a per-test script of turns and recording every request.

Real agent CLIs (Claude Code, Hermes) run against it offline, so their hooks and MCP clients are
the real ones while the "model" is a list of turns a test wrote down. Standard library only; a
threaded ``http.server`` bound to a free port on 127.0.0.1 (never another interface).

**Routes.** A script is chosen by the first path segment: ``ANTHROPIC_BASE_URL=<url>/agent-a``
makes Claude Code post to ``/agent-a/v1/messages``, and Hermes' ``base_url: <url>/hermes/v1``
posts to ``/hermes/v1/chat/completions``. So one server serves several agents, each with its own
script (``FakeModel.script(route, turns)``).

**Turns.** The turn a request gets is decided by the request alone: the number of assistant
messages already in ``messages`` (0 for the first call, 1 after the first tool round, …). A
retried request gets the same answer, and nothing depends on the order requests arrive in. A
turn is a list of :func:`tool` and :func:`text` items, or a callable ``(request) -> list`` given
``{"route", "headers", "body"}`` (a script that needs, say, the session id the runtime sends).
Past the end of the script the model answers ``done``. A request that offers no tools (a
runtime's side call: titles, summaries) is answered with a short text and never advances a
script.

**Recording.** Every request is kept as ``{"route", "method", "path", "headers", "body",
"turn"}`` (headers lower-cased, ``x-api-key``/``authorization`` dropped) in ``requests``;
:meth:`FakeModel.bodies` lists the model calls of one route.

Wire formats (the ones the runtimes accept, see the runtime probe notes in docs/runtimes.md):
Anthropic SSE = ``event: <type>\\ndata: <json>\\n\\n`` for message_start, then per block
content_block_start / content_block_delta (``text_delta`` or ``input_json_delta`` with the whole
input) / content_block_stop, then message_delta (``stop_reason`` ``tool_use`` | ``end_turn``) and
message_stop; OpenAI SSE = ``data: <chat.completion.chunk>\\n\\n`` chunks (role, tool call
header, tool call arguments or content, finish_reason, a usage chunk) then ``data: [DONE]``.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

DEFAULT_ROUTE = ""
FINAL_TEXT = "done"
SIDE_CALL_TEXT = "ok"
MODEL_ID = "fake-model"


def tool(name: str, input: dict, id: str | None = None) -> dict:
    """A tool call the model makes: ``name`` as the runtime spells it (``Bash``,
    ``mcp__ctxlake__fleet_status``, ``terminal``, …) and its ``input`` object. ``id`` defaults to
    a deterministic one from the route, turn and the call's position among the turn's tool
    calls: ``toolu_e2e_<route>_t<turn>_<n>`` (Anthropic) or ``call_e2e_<route>_t<turn>_<n>``."""
    return {"type": "tool", "name": name, "input": input, "id": id}


def text(value: str) -> dict:
    """Assistant text; a turn made only of text ends the conversation (``end_turn``/``stop``)."""
    return {"type": "text", "text": value}


Turn = list[dict] | Callable[[dict], list[dict]]


def tool_result(bodies: list[dict], tool_id: str):
    """The result of tool call ``tool_id`` as the model first received it: the ``tool_result``
    block (Anthropic) or ``tool`` message (OpenAI) in the first of ``bodies`` that carries it.
    Found by id, not by position, so a retried request cannot shift it.

    :raises KeyError: no request carries it."""
    for body in bodies:
        for m in body.get("messages") or []:
            if m.get("role") == "tool" and m.get("tool_call_id") == tool_id:
                return m
            for block in m.get("content") if isinstance(m.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") == tool_id:
                    return block
    raise KeyError(f"no request carries the result of {tool_id}")


def result_text(result: dict) -> str:
    """Text of a :func:`tool_result` (content blocks joined)."""
    c = result.get("content")
    if isinstance(c, list):
        return "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
    return "" if c is None else str(c)


def after(bodies: list[dict], tool_id: str) -> dict:
    """The first of ``bodies`` that carries the result of ``tool_id`` (what the model read next)."""
    for body in bodies:
        try:
            tool_result([body], tool_id)
            return body
        except KeyError:
            continue
    raise KeyError(f"no request carries the result of {tool_id}")


def _count_assistant(messages) -> int:
    return sum(1 for m in messages or [] if isinstance(m, dict) and m.get("role") == "assistant")


def _drop_secret_headers(headers) -> dict:
    return {k.lower(): v for k, v in headers.items() if k.lower() not in ("x-api-key", "authorization")}


class FakeModel:
    """The server. Use as a context manager or call :meth:`start` / :meth:`stop`.

    ``url`` is ``http://127.0.0.1:<port>``; :meth:`base_url` adds a route segment.
    """

    def __init__(self):
        self.requests: list[dict] = []
        self._scripts: dict[str, list[Turn]] = {}
        self._tags: dict[str, str] = {}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> "FakeModel":
        handler = type("Handler", (_Handler,), {"model": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeModel":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def base_url(self, route: str = DEFAULT_ROUTE, suffix: str = "") -> str:
        """``<url>/<route><suffix>``: what a runtime's base-URL setting gets (``suffix="/v1"``
        for an OpenAI-style client)."""
        return self.url + (f"/{route}" if route else "") + suffix

    # -- scripts and records -------------------------------------------------------------
    def script(self, route: str, turns: list[Turn], tag: str | None = None) -> None:
        """Set the turns ``route`` replays (replacing any earlier script for it). ``tag``
        (default: the route) names the default tool call ids, so a second session on one route
        gets ids of its own."""
        with self._lock:
            self._scripts[route] = list(turns)
            self._tags[route] = tag or route

    def bodies(self, route: str = DEFAULT_ROUTE) -> list[dict]:
        """Request bodies of the model calls (tools offered) made on ``route``, in arrival order."""
        with self._lock:
            return [r["body"] for r in self.requests if r["route"] == route and r.get("turn") is not None]

    def _record(self, entry: dict) -> None:
        with self._lock:
            self.requests.append(entry)

    def turn_for(self, route: str, body: dict, headers: dict | None = None) -> tuple[int | None, list[dict]]:
        """``(turn index, items)`` the model answers ``body`` with on ``route``."""
        if not body.get("tools"):
            return None, [text(SIDE_CALL_TEXT)]
        idx = _count_assistant(body.get("messages"))
        with self._lock:
            turns = self._scripts.get(route, [])
            tag = self._tags.get(route) or route or "main"
            turn = turns[idx] if idx < len(turns) else [text(FINAL_TEXT)]
        items = turn({"route": route, "headers": headers or {}, "body": body}) if callable(turn) else turn
        out, pos = [], 0
        for item in items:
            if item["type"] == "tool":
                if not item.get("id"):
                    item = dict(item, id=f"{tag}-t{idx}-{pos}")
                pos += 1
            out.append(item)
        return idx, out


# -- wire formats -------------------------------------------------------------------------

_MESSAGE_IDS = itertools.count(1)


def _anthropic_tool_id(raw: str) -> str:
    return "toolu_e2e_" + "".join(c if c.isalnum() else "_" for c in raw)


def _openai_tool_id(raw: str) -> str:
    return "call_e2e_" + "".join(c if c.isalnum() else "_" for c in raw)


def anthropic_message(items: list[dict], model: str) -> dict:
    """A non-streaming Messages API response for ``items``."""
    content = []
    for it in items:
        if it["type"] == "text":
            content.append({"type": "text", "text": it["text"]})
        else:
            content.append({"type": "tool_use", "id": _anthropic_tool_id(it["id"]), "name": it["name"], "input": it["input"]})
    stop = "tool_use" if any(it["type"] == "tool" for it in items) else "end_turn"
    return {"id": f"msg_e2e_{next(_MESSAGE_IDS):06d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}


def anthropic_events(items: list[dict], model: str) -> list[tuple[str, dict]]:
    """The SSE events of a streamed Messages API response for ``items``."""
    msg = anthropic_message(items, model)
    start = dict(msg, content=[], stop_reason=None, usage=dict(msg["usage"], output_tokens=1))
    events = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": dict(block, input={})}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(block["input"])}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": msg["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def openai_completion(items: list[dict], model: str) -> dict:
    """A non-streaming chat completion for ``items``."""
    calls = [{"id": _openai_tool_id(it["id"]), "type": "function",
              "function": {"name": it["name"], "arguments": json.dumps(it["input"])}} for it in items if it["type"] == "tool"]
    content = "".join(it["text"] for it in items if it["type"] == "text") or None
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {"id": f"chatcmpl-e2e-{next(_MESSAGE_IDS):06d}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def openai_chunks(items: list[dict], model: str) -> list[dict]:
    """The ``chat.completion.chunk`` objects of a streamed completion for ``items``."""
    full = openai_completion(items, model)
    base = {"id": full["id"], "object": "chat.completion.chunk", "created": full["created"], "model": model}

    def chunk(delta, finish=None):
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    msg = full["choices"][0]["message"]
    out = [chunk({"role": "assistant", "content": ""})]
    if msg.get("content"):
        out.append(chunk({"content": msg["content"]}))
    for i, call in enumerate(msg.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}))
    out.append(chunk({}, full["choices"][0]["finish_reason"]))
    out.append(dict(base, choices=[], usage=full["usage"]))
    return out


class _Handler(BaseHTTPRequestHandler):
    model: FakeModel
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the recorded requests are the log
        pass

    def _route_and_rest(self) -> tuple[str, str]:
        path = self.path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        if parts and parts[0] not in ("v1", "api", "models", "chat"):
            return parts[0], "/" + "/".join(parts[1:])
        return DEFAULT_ROUTE, "/" + "/".join(parts)

    def _send_json(self, code: int, obj) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, frames: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for f in frames:
                self.wfile.write(f)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return  # the client went away (a CLI killed mid-request): nobody to answer

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        route, rest = self._route_and_rest()
        self.model._record({"route": route, "method": "GET", "path": self.path,
                            "headers": _drop_secret_headers(self.headers), "body": None, "turn": None})
        if rest.rstrip("/").endswith("/models") or rest.rstrip("/") == "/models":
            return self._send_json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model",
                                                                     "owned_by": "ctxlake-e2e"}]})
        if "/models/" in rest:
            return self._send_json(200, {"id": rest.rsplit("/", 1)[1], "object": "model", "owned_by": "ctxlake-e2e"})
        return self._send_json(200, {})

    def do_POST(self):
        route, rest = self._route_and_rest()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        entry = {"route": route, "method": "POST", "path": self.path, "headers": _drop_secret_headers(self.headers),
                 "body": body, "turn": None}
        if rest.endswith("/messages/count_tokens"):
            self.model._record(entry)
            return self._send_json(200, {"input_tokens": 100})
        if rest.endswith("/messages"):
            turn, items = self.model.turn_for(route, body, _drop_secret_headers(self.headers))
            entry["turn"] = turn
            self.model._record(entry)
            model = body.get("model") or MODEL_ID
            if body.get("stream"):
                return self._send_sse([f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                                       for name, data in anthropic_events(items, model)])
            return self._send_json(200, anthropic_message(items, model))
        if rest.endswith("/chat/completions"):
            turn, items = self.model.turn_for(route, body, _drop_secret_headers(self.headers))
            entry["turn"] = turn
            self.model._record(entry)
            model = body.get("model") or MODEL_ID
            if body.get("stream"):
                frames = [f"data: {json.dumps(c)}\n\n".encode() for c in openai_chunks(items, model)]
                return self._send_sse(frames + [b"data: [DONE]\n\n"])
            return self._send_json(200, openai_completion(items, model))
        self.model._record(entry)
        return self._send_json(200, {})
