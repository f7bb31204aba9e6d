"""The envelope: one captured event, one spool line (docs/design.md §5, schema v1).

An envelope is a plain ``dict`` with optionals omitted (never ``None``), serialized as one
JSON line without an embedded newline. :func:`make` builds one, applying redaction to every
free-text field first (invariant 7) and folding the outcomes into ``redaction``. The field
list of docs/design.md §5 is the contract; :func:`check` is the one structural check a reader
applies (syncd's shipper per line, ``lib.lake`` vectorized). Standard library only (the hook
builds envelopes).
"""
from __future__ import annotations

import hashlib
import json
import os

from lib import redact
from lib.clock import format_time
from lib.sanitize import strip_ansi
from lib.ulid import new_ulid

SCHEMA_VERSION = 1
EVENT_TYPES = ("session_start", "prompt", "assistant", "tool_call", "compact", "session_end", "context",
               "model_switch")
"""``context``: a user-role record that is not a typed prompt (an interrupt marker, a slash
command, local command output, a task notification, a system reminder, …); its ``user_kind``
says which (docs/architecture.md "User records"). ``model_switch``: the session's model changed
(Claude Code's PostModelSwitch; ``from_model``, ``to_model``, ``requested_model``,
``switch_source``)."""
EVENT_FIELDS = ("observed_at", "user_kind", "failure_reason", "orphan_result", "compact_trigger", "pre_tokens",
                "title", "truncated", "from_model", "to_model", "requested_model", "switch_source")
"""Optional top-level fields an event may carry (docs/architecture.md "Event identity", "User
records"): ``observed_at`` (time of the newest runtime record behind it), ``user_kind``,
``failure_reason`` of a failed tool call, ``orphan_result`` (a result whose call is not in the
source), ``compact_trigger``/``pre_tokens`` of a compaction, ``title`` (the runtime's own
session title), ``truncated`` (a value was cut to fit), ``from_model``/``to_model``/
``requested_model``/``switch_source`` of a ``model_switch`` (``switch_source``: what asked for
it, ``command`` for ``/model``)."""
SCRUBBED_FIELDS = ("title", "requested_model")
"""Event fields that may hold what a person typed, redacted like content."""
MAX_FIELD_BYTES = 1 << 20
"""Every free-text field is cut to 1 MiB (on a character boundary) before redaction."""
TRUNCATED_MARKER = "…[ctxlake:truncated]"


def sha256_hex(data: bytes | str) -> str:
    """``sha256:<lowercase hex>`` of ``data`` (str is UTF-8 encoded)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def multi_hash(*fields: str) -> str:
    """Hash of several fields joined with NUL, so ("ab","c") != ("a","bc") (docs/design.md §5)."""
    return sha256_hex("\0".join(fields))


_HOST_ID = None


def host_id(environ=None) -> str:
    """``sha256:`` of the host name (``HOSTNAME`` → the node name, as ``gethostname()`` gives it → ``unknown-host``).

    Never the name itself (docs/design.md §5).
    """
    global _HOST_ID
    if _HOST_ID is None or environ is not None:
        env = os.environ if environ is None else environ
        name = env.get("HOSTNAME") or ""
        if not name:
            try:  # gethostname(2) is uname's nodename; importing socket costs the hook ~10 ms
                name = os.uname().nodename if hasattr(os, "uname") else __import__("socket").gethostname()
            except OSError:
                name = ""
        value = sha256_hex(name or "unknown-host")
        if environ is not None:
            return value
        _HOST_ID = value
    return _HOST_ID


def truncate(text: str, limit: int = MAX_FIELD_BYTES) -> str:
    """Cut ``text`` to at most ``limit`` UTF-8 bytes on a character boundary, with a marker."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", "ignore") + TRUNCATED_MARKER


def to_text(value) -> str:
    """A payload value as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False, default=str)


class Builder:
    """Builds envelopes for one (fleet, agent, runtime, session) and folds redaction outcomes.

    Usage::

        b = Builder(fleet_id="f", agent_id="a", runtime="claude_code", session_id="s")
        env = b.make("prompt", content="hello", role="user")

    Every text given to :meth:`make` is truncated to 1 MiB and scrubbed by :mod:`lib.redact`
    before it is placed in the envelope; tool input/output get the entropy scan too
    (docs/design.md §7). ``quarantine`` collects the quarantine records (never values) produced
    along the way, for the caller to spool.
    """

    def __init__(self, *, fleet_id: str, agent_id: str, runtime: str, session_id: str,
                 runtime_version: str | None = None, imported: bool = False):
        self.base = {"fleet_id": fleet_id, "agent_id": agent_id, "runtime": runtime}
        self.session_id = session_id
        self.runtime_version = runtime_version
        self.imported = imported
        self.quarantine: list[dict] = []

    def make(self, event_type: str, *, content: str | None = None, role: str | None = None,
             tool: dict | None = None, usage: dict | None = None, emitted_at: str | None = None,
             event_id: str | None = None, message_id: str | None = None, runtime_version: str | None = None,
             fields: dict | None = None, **extra) -> dict:
        """Return one envelope dict.

        ``tool`` = ``{name, input?, result?, exit_code?, duration_ms?, paths?, mcp_server?}`` with raw
        (pre-redaction) ``input``/``result`` values of any JSON type; ``extra`` may carry
        ``turn_id, parent_message_id, repo, cwd, branch, git_sha, injected_context``;
        ``runtime_version`` overrides the builder's for this event (it can change mid-session);
        ``fields`` holds :data:`EVENT_FIELDS` (``title`` is redacted like content; ``None``
        values are omitted). Content and tool results lose ANSI escapes
        (:func:`lib.sanitize.strip_ansi`). :raises ValueError: unknown ``event_type`` or field.
        """
        if event_type not in EVENT_TYPES:
            raise ValueError(f"unknown event_type {event_type!r}")
        eid = event_id or new_ulid()
        env = {"schema_version": SCHEMA_VERSION, "event_id": eid,
               "emitted_at": emitted_at or format_time(), **self.base}
        if runtime_version or self.runtime_version:
            env["runtime_version"] = str(runtime_version or self.runtime_version)
        env["host_id"] = host_id()
        env["session_id"] = self.session_id
        outcomes: list[redact.Outcome] = []
        # ids reach disk too (and the digest, and the snapshot): the same rules as tool text
        if extra.get("turn_id"):
            env["turn_id"] = self._scrub_small(str(extra["turn_id"]), "turn_id", eid, outcomes, True)
        if message_id:
            env["message_id"] = self._scrub_small(str(message_id), "message_id", eid, outcomes, True)
        for key in ("parent_message_id", "repo", "cwd", "branch", "git_sha"):
            if extra.get(key):
                # small free-text fields are scrubbed too: a repo URL can carry a token
                # (https://x-access-token:ghs_...@github.com/o/r), a cwd a user's secret dir
                env[key] = self._scrub_small(str(extra[key]), key, eid, outcomes)
        env["event_type"] = event_type
        if role:
            env["role"] = role
        if content is not None and content != "":
            # prompts and assistant text get the entropy rule too (issue #17: a key pasted in a
            # prompt becomes the digest's summary line in every agent's briefing); measured on
            # real prose (fixture transcripts, LoCoMo) in bench/redact_corpus.py
            text, out = redact.scrub(truncate(strip_ansi(to_text(content))), is_tool_output=True)
            outcomes.append(out)
            self._note(out, "content", eid, content)
            env["content"] = text
        env["content_hash"] = sha256_hex(env.get("content", ""))
        if tool is not None:
            env["tool"] = self._tool(tool, eid, outcomes)
        if usage:
            env["usage"] = usage
        if extra.get("injected_context"):
            env["injected_context"] = list(extra["injected_context"])
        for name, value in (fields or {}).items():
            if name not in EVENT_FIELDS:
                raise ValueError(f"unknown event field {name!r}")
            if value is None:
                continue
            env[name] = self._scrub_small(str(value), name, eid, outcomes) if name in SCRUBBED_FIELDS else value
        env["redaction"] = redact.fold(outcomes)
        if self.imported:
            env["imported"] = True
        return env

    def rekey(self, env: dict, event_id: str) -> dict:
        """Give ``env`` (made by this builder) the id ``event_id``, and its quarantine notes
        with it; returns ``env``. For an id that derives from the redacted content
        (``content_hash``), known only once the envelope is made (docs/architecture.md "Event
        identity": a Hermes turn)."""
        old = env["event_id"]
        env["event_id"] = event_id
        for note in self.quarantine:
            if note.get("event_id") == old:
                note["event_id"] = event_id
        return env

    def _tool(self, tool: dict, eid: str, outcomes: list) -> dict:
        name = self._scrub_small(str(tool.get("name") or "unknown"), "tool.name", eid, outcomes, True)
        paths = [str(p) for p in tool.get("paths") or [] if p]
        out: dict = {"name": name}
        raw_input = tool.get("input")
        denied = redact.denied_path(paths)
        if not denied and isinstance(raw_input, dict) and isinstance(raw_input.get("command"), str):
            denied = redact.denied_in_command(raw_input["command"])  # Bash: `cat ~/.aws/credentials`
        input_text = truncate(to_text(raw_input)) if raw_input is not None else None
        if input_text is not None:
            if denied:
                text, oc = redact.withhold_path(redact.scrub(denied)[0], input_text)
            else:
                text, oc = redact.scrub(input_text, is_tool_output=True)
            outcomes.append(oc)
            self._note(oc, "tool.input", eid, input_text)
            out["input"] = text
        # The hash of the *redacted* input, like content_hash: a hash of the original next to the
        # redacted text would let anyone holding the lake brute-force a short secret (a card number,
        # an SSN, a password) by filling the placeholder back in and comparing hashes.
        out["input_hash"] = sha256_hex(out["input"]) if input_text is not None else ""
        raw_result = tool.get("result")
        if raw_result is not None:
            result_text = truncate(strip_ansi(to_text(raw_result)))
            if denied:
                text, oc = redact.withhold_path(redact.scrub(denied)[0], result_text)
            else:
                text, oc = redact.scrub(result_text, is_tool_output=True)
            outcomes.append(oc)
            self._note(oc, "tool.result", eid, result_text)
            out["result"] = text
        if tool.get("exit_code") is not None:
            out["exit_code"] = int(tool["exit_code"])
        if tool.get("duration_ms") is not None:
            out["duration_ms"] = int(tool["duration_ms"])
        if tool.get("mcp_server"):
            out["mcp_server"] = self._scrub_small(str(tool["mcp_server"]), "tool.mcp_server", eid, outcomes, True)
        # paths get the tool rules (entropy included): a path redacted in tool.input must not be
        # stored verbatim here, then in digest.json and the snapshot
        out["paths"] = [self._scrub_small(p, "tool.paths", eid, outcomes, True) for p in paths]
        return out

    def _scrub_small(self, text: str, field: str, eid: str, outcomes: list, tool: bool = False) -> str:
        """Scrub a short metadata field (prose rules; ``tool`` adds the entropy rule, for paths
        and ids); note the outcome if any."""
        clean, oc = redact.scrub(text, is_tool_output=tool)
        if oc.status != "clean":
            outcomes.append(oc)
            self._note(oc, field, eid, text)
        return clean

    def _note(self, outcome, field: str, event_id: str, original) -> None:
        if outcome.status == "quarantined":
            self.quarantine.append({
                "fleet_id": self.base["fleet_id"], "agent_id": self.base["agent_id"],
                "session_id": self.session_id, "event_id": event_id, "field": field,
                "rules_fired": list(outcome.rules), "sha256": sha256_hex(to_text(original)),
                "recorded_at": format_time(),
            })


def dumps(env: dict) -> str:
    """One spool line for ``env``: compact JSON, no embedded newline, ending in ``\\n``."""
    return json.dumps(env, ensure_ascii=False, separators=(",", ":")) + "\n"


def check(env) -> dict:
    """Minimal structural check of a decoded spool line, standard library only.

    Returns ``env``. :raises ValueError: not an object, wrong ``schema_version``, missing
    ``event_id``/``session_id``/``event_type``/``fleet_id``/``agent_id``/``runtime``/
    ``emitted_at``, or an ``event_type`` outside :data:`EVENT_TYPES`. This is the whole check:
    no JSON Schema validator runs on envelopes (``lib.ship`` applies it to every spool line,
    ``lib.lake`` the same rules vectorized).
    """
    if not isinstance(env, dict):
        raise ValueError("envelope is not a JSON object")
    if env.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"unsupported schema_version {env.get('schema_version')!r}")
    for key in ("event_id", "session_id", "event_type", "fleet_id", "agent_id", "runtime", "emitted_at"):
        if not isinstance(env.get(key), str) or not env[key]:
            raise ValueError(f"envelope field {key!r} missing or not a string")
    if env["event_type"] not in EVENT_TYPES:
        raise ValueError(f"unknown event_type {env['event_type']!r}")
    return env
