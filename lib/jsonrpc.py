"""Newline-delimited JSON-RPC 2.0 over stdio for MCP servers (docs/design.md §11).

Where it sits: ``mcp_server.py`` hands a list of :class:`Tool` to a :class:`Server` and calls
:meth:`Server.serve` on the process's stdin/stdout; ctxctl's MCP adapter (``lib/code/mcp.py``)
registers its own ``tools/list`` and ``tools/call`` on one instead. Everything here is
standard library only and touches no file, no network and no environment: the caller passes
the streams in, so tests drive whole sessions through byte buffers.

Framing: one JSON value per line, UTF-8, ``\\n``-terminated (a trailing ``\\r`` is tolerated,
blank lines are skipped). stdout carries frames and nothing else; diagnostics go to the ``log``
callable (stderr in the role scripts). One request in, exactly one frame out; a notification or
a stray response frame in, nothing out.

The error table (the seed's, pinned by ``tests/mcp/test_jsonrpc.py``)::

    input                                         answer
    bytes that are not JSON / not UTF-8           -32700 parse error, id null
    a frame larger than max_frame_bytes           -32600 invalid request, id null
    a JSON value that is not an object (arrays)   -32600 invalid request, id null
    an object with an id but no method            -32600 invalid request
    an id that is not a string or an integer      -32600 invalid request, id null
    "jsonrpc" missing or not "2.0"                -32600 invalid request
    params neither object nor array               -32600 invalid request
    nesting deeper than max_depth                 -32600 invalid request
    an unknown method                             -32601 method not found
    params an array, or initialize params wrong   -32602 invalid params
    tools/call: unknown tool, arguments not an
      object, or arguments failing inputSchema    -32602 invalid params
    a tool refusing on its own terms (ToolError)  result {"content": [...], "isError": true}
    a tool raising anything else                  result with isError true (logged with traceback)
    a notification (no id), known or not          nothing
    a stray result/error frame (no method)        nothing (-32600 when stray_responses="invalid")

The table is the ``Server`` defaults; ``null_id="notification"`` makes ``"id": null`` a
notification (nothing, with or without a method), ``stray_responses="invalid"`` answers a
stray response that carries an id -32600 like any other id without a method, and
``final_line="frame"`` answers a last line that ends at EOF without its newline (all three
ctxctl's).

Methods: ``initialize`` (protocol negotiation: the client's ``protocolVersion`` is echoed when
it is one of ``protocol_versions``, else ``default_protocol`` is answered), ``ping``,
``tools/list``, ``tools/call``; :meth:`Server.register` adds more.

Reuse (ctxctl's adapter, :func:`lib.code.mcp.server`): a server pinned to one revision that
treats ``"id": null`` as a notification and answers tool calls its own way::

    server = Server("ctxctl", version, [], protocol_versions=("2025-03-26",),
                    default_protocol="2025-03-26", null_id="notification", stray_responses="invalid",
                    final_line="frame")
    server.register("tools/list", list_fn)
    server.register("tools/call", call_fn)
    server.serve(sys.stdin.buffer, sys.stdout.buffer)

Tool arguments are validated against the very ``inputSchema`` that ``tools/list`` publishes (one
source of truth) by :func:`validate`, a hand-written checker for the JSON-Schema subset listed
in :data:`SCHEMA_KEYWORDS`. jsonschema is not imported: it costs more start-up time than this
whole module, and :func:`check_schema` refuses a schema using a keyword the checker does not
implement, so nothing is silently left unvalidated.
"""
from __future__ import annotations

import json
import sys

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18")
"""Revisions this layer speaks, oldest first. Tool ``annotations`` appear from 2025-03-26,
``title`` and ``structuredContent`` from 2025-06-18."""
DEFAULT_PROTOCOL_VERSION = "2024-11-05"
"""Answered when the client asks for a revision not in :data:`PROTOCOL_VERSIONS` (or none)."""
MAX_FRAME_BYTES = 4 << 20
"""A frame longer than 4 MiB is skipped without being buffered whole and answered -32600."""
MAX_DEPTH = 64
"""Deepest nesting of arrays/objects accepted in one frame (and so in tool arguments)."""

SCHEMA_KEYWORDS = frozenset({
    "type", "required", "properties", "items", "enum", "minimum", "maximum", "minLength",
    "maxLength", "minItems", "maxItems", "additionalProperties",
})
"""Validation keywords :func:`validate` implements."""
ANNOTATION_KEYWORDS = frozenset({"description", "title", "default", "examples", "$schema"})
"""Keywords that carry documentation only (accepted, never checked)."""


class RpcError(Exception):
    """A JSON-RPC error answer: ``code`` (int), ``message`` (str), optional ``data`` (JSON)."""

    def __init__(self, code: int, message: str, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class InvalidParams(RpcError):
    """-32602: the parameters (or a tool's arguments) do not fit the method's contract."""

    def __init__(self, message: str, data=None):
        super().__init__(INVALID_PARAMS, message, data)


class ToolError(Exception):
    """A tool refusing on its own terms. Becomes a normal ``tools/call`` result with
    ``isError: true`` and ``message`` as its text, so the session keeps going and the agent
    can read why. ``data`` (a dict) is appended as one line of JSON when given."""

    def __init__(self, message: str, data: dict | None = None):
        super().__init__(message)
        self.message, self.data = message, data


class SchemaError(ValueError):
    """An argument does not fit the tool's ``inputSchema``; ``path`` names it (``evidence[0].session_id``)."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path


class Tool:
    """One tool: what ``tools/list`` publishes and what ``tools/call`` runs.

    ``handler(arguments: dict) -> value``: ``arguments`` has already passed ``input_schema``;
    a ``dict``/``list`` value is answered as one line of JSON text (and as ``structuredContent``
    when it is a dict and the session negotiated 2025-06-18), a ``str`` as plain text.
    Raise :class:`ToolError` to refuse, :class:`InvalidParams` for a semantic argument error.
    ``annotations`` are MCP tool hints (``readOnlyHint``...), sent from 2025-03-26 on.
    (A plain class, not a dataclass: importing ``dataclasses`` costs more start-up than this module.)
    """

    __slots__ = ("name", "description", "input_schema", "handler", "title", "annotations")

    def __init__(self, name: str, description: str, input_schema: dict, handler, title: str | None = None,
                 annotations: dict | None = None):
        self.name, self.description, self.input_schema = name, description, input_schema
        self.handler, self.title, self.annotations = handler, title, annotations

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


# -- JSON-Schema subset ---------------------------------------------------------------------

def json_type(value) -> str:
    """JSON type name of a decoded value: null, boolean, integer, number, string, array, object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


_ARTICLE = {"integer": "an integer", "array": "an array", "object": "an object", "boolean": "a boolean",
            "string": "a string", "number": "a number", "null": "null"}


def _type_ok(value, expected: str) -> bool:
    actual = json_type(value)
    return actual == expected or (expected == "number" and actual == "integer")


def check_schema(schema, where: str = "schema") -> None:
    """Refuse a schema that uses a validation keyword :func:`validate` does not implement.

    :raises ValueError: naming the keyword and where it sits. Called once per tool when a
        :class:`Server` is built, so a new keyword fails loudly instead of validating nothing.
    """
    if not isinstance(schema, dict):
        raise ValueError(f"{where}: a schema must be an object")
    unknown = set(schema) - SCHEMA_KEYWORDS - ANNOTATION_KEYWORDS
    if unknown:
        raise ValueError(f"{where}: unsupported schema keyword(s) {sorted(unknown)}; "
                         f"lib.jsonrpc.validate implements {sorted(SCHEMA_KEYWORDS)}")
    for name, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{where}.properties.{name}")
    if isinstance(schema.get("items"), dict):
        check_schema(schema["items"], f"{where}.items")
    if isinstance(schema.get("additionalProperties"), dict):
        check_schema(schema["additionalProperties"], f"{where}.additionalProperties")


def _label(path: str) -> str:
    return f"argument `{path}`" if path else "arguments"


def validate(schema: dict, value, path: str = "") -> None:
    """Check ``value`` against ``schema`` (the :data:`SCHEMA_KEYWORDS` subset).

    ``path`` is the location for messages (``""`` = the arguments object itself). Integers are
    JSON integers (``true`` is not one; ``3.0`` is). :raises SchemaError: at the first
    mismatch, with an agent-readable message such as ``argument `ttl_secs` must be an integer,
    got string`` or ``unknown argument `foo`; valid arguments: paths, reason, ttl_secs``.
    """
    expected = schema.get("type")
    if expected is not None:
        options = expected if isinstance(expected, list) else [expected]
        if not any(_type_ok(value, t) for t in options):
            want = " or ".join(_ARTICLE.get(t, t) for t in options)
            raise SchemaError(path, f"{_label(path)} must be {want}, got {json_type(value)}")
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        raise SchemaError(path, f"{_label(path)} must be one of {allowed}; got {json.dumps(value)[:80]}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaError(path, f"{_label(path)} must be at least {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaError(path, f"{_label(path)} must be at most {schema['maximum']}, got {value}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise SchemaError(path, f"{_label(path)} must not be empty" if schema["minLength"] == 1 else
                              f"{_label(path)} must be at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise SchemaError(path, f"{_label(path)} must be at most {schema['maxLength']} characters, got {len(value)}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            raise SchemaError(path, f"{_label(path)} needs at least {schema['minItems']} item(s), got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaError(path, f"{_label(path)} takes at most {schema['maxItems']} item(s), got {len(value)}")
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                validate(items, item, f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key in schema.get("required") or ():
            if key not in value:
                where = f"{path}.{key}" if path else key
                raise SchemaError(where, f"missing required argument `{where}`")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key in props:
                validate(props[key], item, where)
            elif extra is False:
                valid = ", ".join(props) or "(none)"
                raise SchemaError(where, f"unknown argument `{where}`; valid arguments: {valid}")
            elif isinstance(extra, dict):
                validate(extra, item, where)


def too_deep(value, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests arrays/objects more than ``limit`` levels (iterative, no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            if depth > limit:
                return True
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            if depth > limit:
                return True
            stack.extend((x, depth + 1) for x in v)
    return False


# -- framing ----------------------------------------------------------------------------------

FRAME, OVERSIZE, FRAGMENT = "frame", "oversize", "fragment"


def read_frames(stream, max_bytes: int = MAX_FRAME_BYTES):
    """Yield ``(kind, payload)`` from a binary stream, one per input line.

    - ``(FRAME, bytes)``: one complete line without its ``\\n`` (and ``\\r``); blank lines are skipped;
    - ``(OVERSIZE, n)``: a line longer than ``max_bytes``; its ``n`` bytes were read in bounded
      chunks and dropped, never held in memory whole;
    - ``(FRAGMENT, bytes)``: the stream ended in the middle of a line (the last item).

    Works across partial reads: a frame written in several pieces is returned once, whole.
    """
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            body = line[:-1]
            if body.endswith(b"\r"):
                body = body[:-1]
            if body.strip():
                yield FRAME, body
            continue
        if len(line) <= max_bytes:
            if line.strip():
                yield FRAGMENT, line
            return
        skipped = len(line)
        while True:
            chunk = stream.readline(1 << 20)
            skipped += len(chunk)
            if not chunk:
                yield FRAGMENT, b""
                return
            if chunk.endswith(b"\n"):
                break
        yield OVERSIZE, skipped


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def encode(message: dict) -> bytes:
    """One frame's bytes (no newline): compact, ASCII-only JSON, so a frame is valid UTF-8 and
    never contains a raw newline whatever the strings inside hold. :raises ValueError: NaN/Infinity."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def error_frame(rid, code: int, message: str, data=None) -> bytes:
    """An error response frame for request id ``rid`` (``None`` → ``"id": null``)."""
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return encode({"jsonrpc": "2.0", "id": rid, "error": err})


def error_result(text: str) -> dict:
    """A ``tools/call`` result reporting a tool failure in-band: ``text`` with ``isError: true``."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _valid_id(rid) -> bool:
    if isinstance(rid, bool):
        return False
    return isinstance(rid, (str, int)) or (isinstance(rid, float) and rid.is_integer())


def _stderr_log(event: str, **fields) -> None:
    try:
        sys.stderr.write(json.dumps({"event": event, **fields}, default=str) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Server:
    """A sequential JSON-RPC 2.0 server speaking the MCP tool surface.

    :param name: ``serverInfo.name``; :param version: ``serverInfo.version``.
    :param tools: the :class:`Tool` list, published in this order.
    :param instructions: optional ``instructions`` text in the ``initialize`` answer.
    :param protocol_versions: revisions echoed back when the client asks for one of them.
    :param default_protocol: answered otherwise (a server pinned to one revision passes a
        one-element ``protocol_versions`` and the same ``default_protocol``).
    :param null_id: ``"invalid"`` (MCP: a request id must not be null → -32600) or
        ``"notification"`` (treat ``"id": null`` as a notification: never answered).
    :param stray_responses: what a frame with an id, no ``method`` and a ``result``/``error``
        gets: ``"ignore"`` (a response not addressed to this server: nothing) or ``"invalid"``
        (-32600 like any other id without a method; ctxctl's contract).
    :param final_line: what becomes of a last line that EOF cuts off before its ``\\n``:
        ``"drop"`` (logged, never a complete frame) or ``"frame"`` (answered like any other
        line, as a line-by-line reader does; ctxctl's contract).
    :param null_as_absent: drop ``null`` top-level tool arguments before validation (models
        often send ``null`` for an optional argument they mean to omit).
    :param log: ``log(event, **fields)`` for diagnostics; never stdout.
    :raises ValueError: a tool schema uses a keyword :func:`validate` does not implement, two
        tools share a name, or ``null_id``/``stray_responses``/``final_line`` is not one of its
        two values.
    """

    def __init__(self, name: str, version: str, tools: list[Tool], *, instructions: str | None = None,
                 protocol_versions=PROTOCOL_VERSIONS, default_protocol: str = DEFAULT_PROTOCOL_VERSION,
                 null_id: str = "invalid", stray_responses: str = "ignore", final_line: str = "drop",
                 null_as_absent: bool = True, max_frame_bytes: int = MAX_FRAME_BYTES, max_depth: int = MAX_DEPTH,
                 log=None):
        self.name, self.version, self.instructions = name, version, instructions
        self.protocol_versions = tuple(protocol_versions)
        self.default_protocol = default_protocol
        for param, value, allowed in (("null_id", null_id, ("invalid", "notification")),
                                      ("stray_responses", stray_responses, ("ignore", "invalid")),
                                      ("final_line", final_line, ("drop", "frame"))):
            if value not in allowed:
                raise ValueError(f"{param} must be {' or '.join(map(repr, allowed))}, not {value!r}")
        self.null_id, self.stray_responses, self.final_line = null_id, stray_responses, final_line
        self.null_as_absent = null_as_absent
        self.max_frame_bytes, self.max_depth = max_frame_bytes, max_depth
        self.log = log or _stderr_log
        self.protocol_version: str | None = None
        """The negotiated revision once ``initialize`` was answered (``None`` before)."""
        self.client_info: dict | None = None
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            check_schema(tool.input_schema, f"{tool.name}.inputSchema")
            if tool.input_schema.get("type") != "object":
                raise ValueError(f"{tool.name}.inputSchema must have type object")
            self.tools[tool.name] = tool
        self.methods: dict = {
            "initialize": self._initialize, "ping": lambda params: {},
            "tools/list": self._tools_list, "tools/call": self._tools_call,
        }
        self.notifications: dict = {}

    def register(self, method: str, fn, *, notification: bool = False) -> None:
        """Add a request method (``fn(params) -> result``) or a notification handler."""
        (self.notifications if notification else self.methods)[method] = fn

    # -- protocol version ------------------------------------------------------------------
    def at_least(self, minimum: str) -> bool:
        """True when the negotiated revision is ``minimum`` or newer (by :data:`PROTOCOL_VERSIONS` order)."""
        order = PROTOCOL_VERSIONS
        v = self.protocol_version or self.default_protocol
        return v in order and minimum in order and order.index(v) >= order.index(minimum)

    def _initialize(self, params: dict) -> dict:
        requested = params.get("protocolVersion")
        if requested is not None and not isinstance(requested, str):
            raise InvalidParams("initialize: protocolVersion must be a string")
        self.protocol_version = requested if requested in self.protocol_versions else self.default_protocol
        info = params.get("clientInfo")
        self.client_info = info if isinstance(info, dict) else None
        result = {"protocolVersion": self.protocol_version, "capabilities": {"tools": {"listChanged": False}},
                  "serverInfo": {"name": self.name, "version": self.version}}
        if self.instructions:
            result["instructions"] = self.instructions
        self.log("mcp_initialized", requested=requested, negotiated=self.protocol_version)
        return result

    # -- tools -----------------------------------------------------------------------------
    def listing(self) -> list[dict]:
        """The ``tools`` array ``tools/list`` answers for the negotiated revision."""
        out = []
        for tool in self.tools.values():
            entry = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
            if tool.title and self.at_least("2025-06-18"):
                entry["title"] = tool.title
            if tool.annotations and self.at_least("2025-03-26"):
                entry["annotations"] = tool.annotations
            out.append(entry)
        return out

    def _tools_list(self, params: dict) -> dict:
        return {"tools": self.listing()}

    def _tools_call(self, params: dict) -> dict:
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParams("tools/call: `name` must be a string")
        tool = self.tools.get(name)
        if tool is None:
            raise InvalidParams(f"unknown tool `{name[:100]}`; available: {', '.join(sorted(self.tools))}")
        args = params.get("arguments")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise InvalidParams(f"tool `{name}`: arguments must be an object, got {json_type(args)}")
        if self.null_as_absent:
            args = {k: v for k, v in args.items() if v is not None}
        try:
            validate(tool.input_schema, args)
        except SchemaError as exc:
            raise InvalidParams(f"tool `{name}`: {exc}", {"tool": name, "argument": exc.path}) from None
        try:
            value = tool.handler(args)
        except ToolError as exc:
            text = exc.message
            if exc.data:
                text += "\n" + json.dumps(exc.data, ensure_ascii=False, separators=(", ", ": "), default=str)
            return error_result(text)
        except RpcError:
            raise
        except Exception as exc:  # a bug in a tool must not end the session: report it in-band
            import traceback

            self.log("tool_failed", tool=name, error=f"{type(exc).__name__}: {exc}"[:500],
                     traceback=traceback.format_exc(limit=8))
            return error_result(f"tool {name} failed: {type(exc).__name__}: {exc}"[:2000])
        return self.tool_result(value)

    def tool_result(self, value) -> dict:
        """Wrap a handler's value as a ``tools/call`` result (see :class:`Tool`)."""
        if isinstance(value, str):
            return {"content": [{"type": "text", "text": value}], "isError": False}
        # One line, ", "/": " separators: the C encoder (indent= falls back to pure Python and
        # costs milliseconds on a large result) and no indentation spent from the agent's context.
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), allow_nan=False, default=str)
        result = {"content": [{"type": "text", "text": text}], "isError": False}
        if isinstance(value, dict) and self.at_least("2025-06-18"):
            result["structuredContent"] = value
        return result

    # -- dispatch --------------------------------------------------------------------------
    def handle(self, line: bytes) -> bytes | None:
        """Answer one frame (bytes without the newline): the response frame, or ``None``."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return error_frame(None, PARSE_ERROR, f"parse error: invalid UTF-8 at byte {exc.start}")
        try:
            msg = json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            return error_frame(None, PARSE_ERROR, "parse error: nesting too deep")
        except ValueError as exc:
            return error_frame(None, PARSE_ERROR, f"parse error: {exc}"[:300])
        return self.handle_message(msg)

    def handle_message(self, msg) -> bytes | None:
        """Answer one decoded message (see the module's error table)."""
        if not isinstance(msg, dict):
            what = "a batch (array)" if isinstance(msg, list) else json_type(msg)
            return error_frame(None, INVALID_REQUEST, f"invalid request: expected a JSON object, got {what}")
        has_id = "id" in msg
        rid = msg.get("id")
        if has_id and rid is None and self.null_id == "notification":
            has_id = False  # "id": null counts as no id at all, with or without a method
        if "method" not in msg:
            if not has_id:
                return None
            if self.stray_responses == "ignore" and ("result" in msg or "error" in msg):
                return None  # a stray response: not addressed to this server
            return error_frame(rid if _valid_id(rid) else None, INVALID_REQUEST,
                               "invalid request: missing or non-string method")
        if has_id and not _valid_id(rid):
            return error_frame(None, INVALID_REQUEST, "invalid request: id must be a string or an integer")
        method = msg["method"]
        if not has_id:
            self._notify(method, msg)
            return None
        if not isinstance(method, str):
            return error_frame(rid, INVALID_REQUEST, "invalid request: missing or non-string method")
        if msg.get("jsonrpc") != "2.0":
            return error_frame(rid, INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
        if too_deep(msg, self.max_depth):
            return error_frame(rid, INVALID_REQUEST, f"invalid request: nested deeper than {self.max_depth} levels")
        fn = self.methods.get(method)
        if fn is None:
            return error_frame(rid, METHOD_NOT_FOUND, f"method not found: {method[:200]}")
        params = msg.get("params")
        if params is None:
            params = {}
        elif isinstance(params, list):
            return error_frame(rid, INVALID_PARAMS, f"{method}: params must be an object")
        elif not isinstance(params, dict):
            return error_frame(rid, INVALID_REQUEST, "invalid request: params must be an object or an array")
        try:
            result = fn(params)
        except RpcError as exc:
            return error_frame(rid, exc.code, exc.message, exc.data)
        except Exception as exc:
            import traceback

            self.log("method_failed", method=method, error=f"{type(exc).__name__}: {exc}"[:500],
                     traceback=traceback.format_exc(limit=8))
            return error_frame(rid, INTERNAL_ERROR, f"internal error: {type(exc).__name__}")
        try:
            return encode({"jsonrpc": "2.0", "id": rid, "result": result})
        except (TypeError, ValueError) as exc:
            self.log("encode_failed", method=method, error=str(exc)[:300])
            return error_frame(rid, INTERNAL_ERROR, "internal error: result is not encodable as JSON")

    def _notify(self, method, msg: dict) -> None:
        fn = self.notifications.get(method) if isinstance(method, str) else None
        if fn is None:
            return
        params = msg.get("params")
        try:
            fn(params if isinstance(params, dict) else {})
        except Exception as exc:  # a notification has no answer channel; log and go on
            self.log("notification_failed", method=method, error=f"{type(exc).__name__}: {exc}"[:300])

    # -- the loop --------------------------------------------------------------------------
    def serve(self, stdin, stdout) -> int:
        """Answer frames from binary ``stdin`` on binary ``stdout`` until EOF; return 0.

        Each answer is written as one ``write`` of the frame plus ``\\n`` and flushed. A line
        cut off by EOF is logged and dropped (it was never a complete frame), or answered like
        any other line when ``final_line="frame"``. A closed stdout ends the loop quietly (the
        client went away).
        """
        for kind, data in read_frames(stdin, self.max_frame_bytes):
            if kind == FRAME or (kind == FRAGMENT and data and self.final_line == "frame"):
                out = self.handle(data)
            elif kind == OVERSIZE:
                self.log("frame_too_large_dropped", bytes=data, limit=self.max_frame_bytes)
                out = error_frame(None, INVALID_REQUEST,
                                  f"invalid request: frame larger than {self.max_frame_bytes} bytes")
            else:
                self.log("stdin_fragment_dropped", bytes=len(data))
                break
            if out is None:
                continue
            try:
                stdout.write(out + b"\n")
                stdout.flush()
            except (OSError, ValueError):
                self.log("stdout_closed")
                return 0
        return 0
