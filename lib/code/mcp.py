"""ctxctl's MCP adapter: the five commands as tools over newline-delimited JSON-RPC 2.0 on stdio.

The CLI stays canonical: a tool call runs the same handler as the CLI in text mode (metrics as
configured) and returns its text as ``{content: [{type: "text", text}]}``. Failures — missing
file, unknown symbol, bad arguments, a non-zero exit — are ``isError: true`` results, never
protocol errors, and their text teaches the fix:

* unknown tool → the registry is listed; unknown argument → the valid keys are listed;
  missing argument → an expected-usage example built from the tool's schema;
* a wrong type names key, expected type and got type; a JSON number for a string argument is
  coerced to its decimal string (agents send ``lines: 100``); ``null`` counts as absent;
* a missed ``ctxctl_symbol`` lookup gains ranked suggestions and a mini-outline
  (:func:`lib.code.lookup.heal`);
* a non-zero status with output reads ``tool <name> failed with exit code N[: <diagnostic>]``
  followed by the full output.

Workspace pinning: the working directory at launch is the root; every ``file`` argument is
confined to it (lexical ``..`` climbing above it, absolute paths outside it, and symlinks
resolving outside it are refused; an absolute path through a symlinked alias of the root is
accepted when it resolves inside it); ``exec`` runs in the root (it is not sandboxed) under the
wall-clock timeout.

The JSON-RPC loop is ``lib/jsonrpc.py``'s :class:`~lib.jsonrpc.Server`, shared with ctxlake's
MCP server; :func:`server` sets it to ctxctl's contract and registers ``tools/list`` and
``tools/call`` (:func:`methods`) on it.
"""
from __future__ import annotations

import json
import os
import posixpath
import threading

from lib import jsonrpc
from lib.code import symbols
from lib.code.errors import NOT_FOUND, ExitError

PROTOCOL_VERSION = "2025-03-26"

_FILE_HINT = "<workspace-relative or absolute path under workspace>"
_PLACEHOLDER = {"file": _FILE_HINT, "name": "<exact symbol name>", "cmd": "<command line>"}
_TYPE_PHRASE = {"string": "a string", "boolean": "a boolean", "integer": "an integer",
                "array": "an array of strings"}

# (name, description, [(key, type, required, description)])
TOOL_TABLE = [
    ("ctxctl_outline", "List a file's symbols (kind, name, lines, signature) instead of reading the whole file.",
     [("file", "string", True, "path of the source file"),
      ("no_doc", "boolean", False, "omit doc comments"),
      ("no_lines", "boolean", False, "omit line locations")]),
    ("ctxctl_symbol", "Return one symbol's source by exact name (or its signature, a compact view, or some of its lines).",
     [("file", "string", True, "path of the source file"),
      ("name", "string", True, "exact, case-sensitive symbol name"),
      ("kind", "string", False, "only symbols of this kind"),
      ("signature", "boolean", False, "signature only"),
      ("compact", "boolean", False, "signature plus a fold marker for the body"),
      ("lines", "string", False, "sub-range of the symbol's own lines: \"N\", \"N-M\" or \"N-\"")]),
    ("ctxctl_read", "Return line ranges of any file.",
     [("file", "string", True, "path of the file"),
      ("lines", "string", False, "\"N\", \"N-M\", \"N-\" or a comma list; omitted or empty means the whole file")]),
    ("ctxctl_deps", "List a file's imports, each local, external, ignored or unresolved.",
     [("file", "string", True, "path of the source file")]),
    ("ctxctl_exec", "Run one command (no shell; use sh -c for pipelines) and return its folded output.",
     [("cmd", "string", True, "the command line"),
      ("keep", "array", False, "extra regexes whose matching lines are kept"),
      ("head", "integer", False, "lines kept from the start"),
      ("tail", "integer", False, "lines kept from the end"),
      ("raw", "boolean", False, "bypass folding: the whole output, byte for byte")]),
]


def tool_list() -> list:
    """The ``tools/list`` entries, in the contract's order."""
    out = []
    for name, description, args in TOOL_TABLE:
        props = {}
        for key, typ, _, desc in args:
            schema = {"type": typ, "description": desc}
            if typ == "array":
                schema["items"] = {"type": "string"}
            if key == "kind":
                schema["enum"] = list(symbols.KINDS)
            props[key] = schema
        out.append({"name": name, "description": description,
                    "inputSchema": {"type": "object", "properties": props,
                                    "required": [k for k, _, req, _ in args if req],
                                    "additionalProperties": False}})
    return out


class ArgumentError(Exception):
    """A tool call's arguments were refused before dispatch; the message is the isError text."""


def _json_type(value) -> str:
    """:func:`lib.jsonrpc.json_type` in ctxctl's wording: every JSON number is ``number``."""
    kind = jsonrpc.json_type(value)
    return "number" if kind == "integer" else kind


def usage_hint(tool: str) -> str:
    """``expected: {...}`` built from the tool's argument table."""
    args = next(a for n, _, a in TOOL_TABLE if n == tool)
    parts = []
    for key, typ, _, _ in args:
        if typ == "string":
            value = json.dumps(_PLACEHOLDER.get(key, "<string>"))
        elif typ == "array":
            value = '["<string>"]'
        else:
            value = f"<{typ}>"
        parts.append(f'"{key}": {value}')
    return "expected: {" + ", ".join(parts) + "}"


def validate(tool: str, arguments) -> dict:
    """Check and coerce a call's arguments against the table.

    :raises ArgumentError: unknown tool, non-object arguments, unknown key, wrong type,
        missing or empty required argument, unknown kind.
    """
    table = {n: a for n, _, a in TOOL_TABLE}
    if tool not in table:
        raise ArgumentError(f"unknown tool `{tool}`; available: {', '.join(sorted(table))}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ArgumentError("arguments must be an object")
    spec = table[tool]
    types = {k: t for k, t, _, _ in spec}
    out = {}
    for key, value in arguments.items():
        if key not in types:
            raise ArgumentError(f"unknown argument `{key}`; valid arguments: {', '.join(k for k, *_ in spec)}")
        if value is None:
            continue
        out[key] = _coerce(key, types[key], value)
    for key, _, required, _ in spec:
        if required and (key not in out or out[key] == ""):
            raise ArgumentError(f"missing or empty argument: {key}\n{usage_hint(tool)}")
    if out.get("kind") is not None and out["kind"] not in symbols.KINDS:
        raise ArgumentError(f"unknown kind `{out['kind']}` (expected {'|'.join(symbols.KINDS)})")
    return out


def _coerce(key: str, typ: str, value):
    got = _json_type(value)
    if typ == "string":
        if isinstance(value, str):
            return value
        if got == "number":
            return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    elif typ == "boolean":
        if isinstance(value, bool):
            return value
    elif typ == "integer":
        if got == "number" and isinstance(value, int) and value >= 0:
            return value
        if got == "number" and isinstance(value, float) and value.is_integer() and value >= 0:
            return int(value)
        if got == "number":
            got = "negative or fractional number"
    elif typ == "array":
        if isinstance(value, list):
            bad = next(((i, v) for i, v in enumerate(value) if not isinstance(v, str)), None)
            if bad is None:
                return value
            got = f"array with {_json_type(bad[1])} at index {bad[0]}"
    raise ArgumentError(f"argument `{key}` must be {_TYPE_PHRASE[typ]}, got {got}")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def resolve(raw: str, root: str) -> str:
    """The real path to open for a ``file`` argument, confined to ``root``.

    :raises ArgumentError: with the contract's ``invalid argument `file`: …`` messages.
    """
    canon_root = os.path.realpath(root)
    escape = f"invalid argument `file`: {raw}: path escapes workspace root"
    if os.path.isabs(raw):
        lexical = posixpath.normpath(raw)
        if not (_under(lexical, posixpath.normpath(root)) or _under(lexical, canon_root)):
            # an alias of the root (a symlinked parent, /tmp vs /private/tmp): the contract
            # symlink-resolves existing targets, so what counts is where the path really is
            real = os.path.realpath(lexical)
            if not _under(real, canon_root):
                raise ArgumentError(escape)
            return real
        joined = lexical
    else:
        parts = []
        for part in raw.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise ArgumentError(escape)
                parts.pop()
            else:
                parts.append(part)
        joined = os.path.join(canon_root, *parts)
    if os.path.lexists(joined):
        real = os.path.realpath(joined)
        if not _under(real, canon_root):
            raise ArgumentError(f"invalid argument `file`: {raw}: resolved symlink target is outside the workspace; "
                                f"path escapes workspace root")
        return real
    return joined


class Adapter:
    """Runs validated tool calls against a pinned workspace root with a loaded config."""

    def __init__(self, root: str, config, exec_timeout: float):
        self.root = os.path.realpath(root)
        self.config = config
        self.exec_timeout = exec_timeout

    def call(self, tool: str, arguments) -> dict:
        """``tools/call``: a result object, ``isError: true`` on any failure."""
        try:
            args = validate(tool, arguments)
            text, code, diagnostic, warnings = self._run(tool, args)
        except ArgumentError as exc:
            return jsonrpc.error_result(str(exc))
        except ExitError as exc:
            message = exc.message
            if exc.code == NOT_FOUND and tool == "ctxctl_symbol":
                message = self._heal(message, arguments)
            return jsonrpc.error_result(message)
        except Exception as exc:  # a bug must still come back as a tool result (the contract), not -32603
            return jsonrpc.error_result(f"internal error in {tool}: {type(exc).__name__}: {exc}. "
                                        "This is a ctxctl bug; the command line `ctxctl.py` may still work.")
        for w in warnings:
            text = text + ("" if text.endswith("\n") or not text else "\n") + f"warning: {w}\n"
        if code != 0:
            head = f"tool {tool} failed with exit code {code}" + (f": {diagnostic}" if diagnostic else "")
            return jsonrpc.error_result(head + "\n" + text)
        if not text:
            return jsonrpc.error_result("tool produced no output")
        return {"content": [{"type": "text", "text": text}]}

    def _run(self, tool: str, args: dict):
        cfg = self.config
        show = cfg.general.show_saved
        if tool == "ctxctl_exec":
            from lib.code import execute

            r = execute.run(args["cmd"], cfg, keep=args.get("keep", ()), head=args.get("head"), tail=args.get("tail"),
                            show_saved=show, timeout=self.exec_timeout, cwd=self.root, raw=args.get("raw", False))
            return r.out, r.code, r.diagnostic, r.warnings
        path = args["file"]
        real = resolve(path, self.root)
        if tool == "ctxctl_outline":
            from lib.code import outline

            r = outline.run(path, cfg, show_saved=show, no_doc=args.get("no_doc", False),
                            no_lines=args.get("no_lines", False), real=real)
        elif tool == "ctxctl_symbol":
            from lib.code import lookup

            r = lookup.run(path, args["name"], cfg, kind=args.get("kind"), signature=args.get("signature", False),
                           lines=args.get("lines") or None, compact=args.get("compact", False), show_saved=show, real=real)
        elif tool == "ctxctl_read":
            from lib.code import ranges

            r = ranges.run(path, args.get("lines"), cfg, show_saved=show, real=real)
        else:
            from lib.code import deps

            r = deps.run(path, cfg, show_saved=show, real=real)
        return r.out, r.code, r.diagnostic, []

    def _heal(self, message: str, arguments) -> str:
        try:
            from lib.code import lookup, outline

            real = resolve(arguments["file"], self.root)
            _, _, syms = outline.load(arguments["file"], self.config, real)
            return lookup.heal(message, arguments["name"], syms)
        except Exception:  # the hint is best effort; the plain error always stands
            return message


def methods(adapter: Adapter, version: str | None = None) -> dict:
    """ctxctl's own MCP methods, ``tools/list`` and ``tools/call``, for a :class:`lib.jsonrpc.Server`.

    ``initialize`` and ``ping`` are the shared server's (pinned by :func:`server`); ``version``
    is unused and accepted so callers written against the older four-method table still work.
    """
    return {
        "tools/list": lambda params: {"tools": tool_list()},
        "tools/call": lambda params: adapter.call(params.get("name"), params.get("arguments")),
    }


def _loop_log(warn):
    """``lib.jsonrpc``'s ``log(event, **fields)`` onto ctxctl's ``warn(message)`` (a stderr
    ``warning: …`` line). The routine ``mcp_initialized`` event is not a warning and is dropped;
    without ``warn`` nothing is written, so stderr stays as quiet as the CLI's."""
    def log(event: str, **fields) -> None:
        if warn is None or event == "mcp_initialized":
            return
        trace = fields.pop("traceback", None)
        detail = " ".join(f"{k}={v}" for k, v in fields.items())
        warn(f"mcp: {event}" + (f": {detail}" if detail else "") + (f"\n{trace.rstrip()}" if trace else ""))
    return log


def server(adapter: Adapter, version: str, log=None) -> jsonrpc.Server:
    """The shared loop set to ctxctl's contract (docs/ctxctl.md): ``initialize`` answers
    :data:`PROTOCOL_VERSION` whatever the client offers, with no instructions; ``"id": null`` is a
    notification; any id without a string method, a stray response frame included, gets -32600;
    a last line without its newline is still answered; tool calls go to :meth:`Adapter.call`, so every tool failure is an ``isError`` result.
    ``log`` is ctxctl's ``warn(message)``."""
    loop = jsonrpc.Server("ctxctl", version, [], protocol_versions=(PROTOCOL_VERSION,),
                          default_protocol=PROTOCOL_VERSION, null_id="notification",
                          stray_responses="invalid", final_line="frame", log=_loop_log(log))
    for method, fn in methods(adapter).items():
        loop.register(method, fn)
    return loop


def preload() -> threading.Thread:
    """Build the cl100k_base encoding on a daemon thread (a long-lived server counts exactly;
    the first call then does not wait ~100 ms for the tokenizer). Returns the thread."""
    from lib.code import tokens

    thread = threading.Thread(target=tokens.encoding, name="ctxctl-preload", daemon=True)
    thread.start()
    return thread


def serve(stdin, stdout, *, root: str, config, version: str, exec_timeout: float, log=None) -> int:
    """Run the MCP server on binary streams until stdin EOF; returns the exit code (0).
    Token figures are exact (the tokenizer is preloaded by :func:`preload`)."""
    preload()
    return server(Adapter(root, config, exec_timeout), version, log).serve(stdin, stdout)
