"""Claude Code transcript import (``~/.claude/projects/<slug>/<session>.jsonl``).

A transcript is read twice, streaming (memory holds per-message usage and the tool calls still
waiting for their result, never the file): the first pass finds each API message's final usage
and last record, the record uuids of each session and the titles; the second builds envelopes.

Records read (field names as Claude Code writes them; see ``tests/fixtures/claude-transcripts``),
with each event's id from :func:`lib.identity.event_id` (docs/architecture.md "Event identity"):

- ``user``: classified by :func:`lib.adapters.claude_code.user_kind` (docs/architecture.md "User
  records"). A typed prompt → ``prompt`` (id from ``promptId``, else the record uuid); every
  other kind → ``context`` with its ``user_kind``; ``isCompactSummary`` → ``compact``;
  ``tool_result`` blocks → the result of the matching ``tool_use`` (one ``tool_call`` per
  tool-use id, at the call's time, ``observed_at`` the result's), with the shell's status from
  ``"Exit code <n>"`` and a ``failure_reason``; a result whose call is not in this file is kept
  as a result (``orphan_result``), never counted as a command.
- ``assistant``: one ``assistant`` event per API message (``message.id``, else ``requestId``):
  its text blocks joined and its final usage (Claude Code writes usage on every content-block
  record of a message, the last one final); ``tool_use`` blocks become ``tool_call`` events.
- ``system`` ``compact_boundary`` → ``compact`` with ``compact_trigger`` and ``pre_tokens``;
  ``system`` ``local_command`` (a slash command's output, newer versions) → ``context``
  ``local_command_output``.
- ``ai-title``/``custom-title`` (by ``sessionId``) and ``summary`` (by ``leafUuid``; a summary
  with no session id whose leaf is not in the file titles the file's first session) → the
  session's ``title`` (a custom title wins over an AI title, which wins over a summary),
  carried by its ``session_end``.
- ``isSidechain`` records (sub-agents) are marked ``turn_id = "sidechain:<agentId>"``; every
  other event of a turn carries ``turn_id`` = the turn's prompt id (``promptId`` of the user
  records since the turn's prompt, which a hook payload carries as ``prompt_id``), so the
  transcript backstop (:mod:`lib.backstop`) can tell which turn a missed Stop ended.
- Everything else (progress, file-history-snapshot, queue-operation, other system records,
  types from newer versions) is skipped.

Each file gives every session it holds one ``session_start`` (its first record) and one
``session_end`` (its last); the lake keeps the earliest start and the latest end
(:func:`lib.identity.pick`), so a session spread over several files starts and ends once.

Bad input: a line that is not JSON is skipped and counted; two records glued on one line are
both read; invalid UTF-8 is replaced (U+FFFD) and counted; the rest of the file is imported.
"""
from __future__ import annotations

import json
import os

from lib import identity
from lib.adapters.claude_code import failure_exit_code, failure_reason, user_kind
from lib.clock import format_time, parse_time_strict
from lib.envelope import Builder
from lib.importers import ImportResult

_DECODER = json.JSONDecoder()


def default_path(environ=None) -> str:
    """Where Claude Code keeps its transcripts (docs/runtimes.md): ``$CLAUDE_CONFIG_DIR/projects``
    when that variable is set (Claude Code's own override of ``~/.claude``), else
    ``~/.claude/projects``."""
    env = os.environ if environ is None else environ
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(os.path.expanduser(base), "projects")


def _decode_line(raw: bytes, result: ImportResult) -> list:
    """The records of one line: usually one; two or more when records were glued together."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        result.repaired_lines += 1
    try:
        return [json.loads(text)]
    except RecursionError:  # nested deeper than the parser goes: the line is skipped and counted
        result.skipped_lines += 1
        return []
    except ValueError:
        pass
    out, pos, n = [], 0, len(text)
    while pos < n:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            break
        try:
            rec, pos = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            result.skipped_lines += 1
            break
        out.append(rec)
    return out


def _records(path: str, result: ImportResult | None = None):
    """Yield the JSON-object records of a transcript, streaming, in file order."""
    res = result or ImportResult(path)
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            for rec in _decode_line(raw, res):
                if isinstance(rec, dict):
                    yield rec
                else:
                    res.skipped_lines += 1


def _ts(rec: dict, fallback: str | None) -> str:
    raw = rec.get("timestamp")
    try:
        if isinstance(raw, str):
            return format_time(parse_time_strict(raw))
    except (ValueError, OverflowError):
        pass
    return fallback or format_time(0)


def _str(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_error(value) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _image_marker(block: dict) -> str:
    """``[image: <media type>, <n> bytes]`` for an image block (never its base64 data)."""
    src = block.get("source") if isinstance(block.get("source"), dict) else {}
    data = src.get("data") if isinstance(src.get("data"), str) else ""
    size = len(data) * 3 // 4 - data[-2:].count("=") if data else 0
    return f"[image: {src.get('media_type') or 'unknown'}, {size} bytes]"


def _blocks_text(blocks) -> str:
    parts = []
    for c in blocks:
        if isinstance(c, dict):
            if c.get("type") == "text" and isinstance(c.get("text"), str):
                parts.append(c["text"])
            elif c.get("type") == "image":
                parts.append(_image_marker(c))
    return "\n".join(parts)


def result_text(block: dict, rec: dict) -> str:
    """What a tool returned: the shell's stdout (and stderr after ``[stderr]``) when Claude Code
    recorded them and either is non-empty, else the text the model was shown (placeholders such
    as ``(Bash completed with no output)`` or a background task's notice are kept), with an
    image as ``[image: <media type>, <n> bytes]``."""
    tur = rec.get("toolUseResult")
    if isinstance(tur, dict) and (tur.get("stdout") or tur.get("stderr")):
        out = tur.get("stdout") or ""
        err = tur.get("stderr") or ""
        return str(out) + ("\n[stderr]\n" + str(err) if err else "")
    content = block.get("content")
    if isinstance(content, list):
        return _blocks_text(content)
    return content if isinstance(content, str) else ("" if content is None else json.dumps(content))


class _Scan:
    """First pass: per message id the last record index, final usage and model; record uuid →
    session; titles per session."""

    def __init__(self):
        self.last_index: dict = {}
        self.usage: dict = {}
        self.uuid_session: dict = {}
        self.ai_title: dict = {}
        self.custom_title: dict = {}
        self.leaf_titles: list = []
        self.first_session: str | None = None


def _message_id(rec: dict, msg: dict) -> str:
    return str(msg.get("id") or rec.get("requestId") or rec.get("uuid") or "")


def _scan(path: str) -> _Scan:
    scan = _Scan()
    for idx, rec in enumerate(_records(path)):
        rtype = rec.get("type")
        sid = _str(rec.get("sessionId"))
        if rtype == "assistant" and sid:
            msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
            mid = _message_id(rec, msg)
            scan.last_index[(sid, mid)] = idx
            if isinstance(msg.get("usage"), dict):
                scan.usage[(sid, mid)] = (msg["usage"], msg.get("model"))
        if sid and isinstance(rec.get("uuid"), str):
            scan.uuid_session[rec["uuid"]] = sid
        if sid and scan.first_session is None and rtype in ("user", "assistant"):
            scan.first_session = sid
        if rtype == "ai-title" and sid and _str(rec.get("aiTitle")):
            scan.ai_title[sid] = rec["aiTitle"]
        elif rtype == "custom-title" and sid and _str(rec.get("customTitle")):
            scan.custom_title[sid] = rec["customTitle"]
        elif rtype == "summary" and _str(rec.get("summary")) and _str(rec.get("leafUuid")):
            scan.leaf_titles.append((rec["leafUuid"], rec["summary"]))
    return scan


def _usage(raw: dict, model) -> dict:
    def n(key):
        v = raw.get(key)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1 << 62 else 0

    out = {"input_tokens": n("input_tokens"), "output_tokens": n("output_tokens"),
           "cache_read_tokens": n("cache_read_input_tokens"), "cache_write_tokens": n("cache_creation_input_tokens")}
    if isinstance(model, str) and model:
        out["model"] = model
    return out


def iter_envelopes(path: str, *, fleet_id: str, agent_id: str, result: ImportResult | None = None,
                   quarantine: list | None = None):
    """Yield ``(session_id, envelope)`` for one transcript file, streaming (see the module
    docstring). ``result`` collects counts; ``quarantine`` (a list) receives the redactor's
    quarantine records. Events come in file order, each session's start and end last.
    :raises OSError: the file cannot be read."""
    result = result if result is not None else ImportResult(path)
    quarantine = quarantine if quarantine is not None else []
    scan = _scan(path)
    titles: dict = {}
    for leaf, text in scan.leaf_titles:
        # a summary names the session holding its leaf; Claude Code also writes, at the top of a
        # continued conversation's file, summaries whose leaf lives in an earlier file: those
        # title the file's own (first) session, as the runtime's session picker shows them
        sid = scan.uuid_session.get(leaf) or scan.first_session
        if sid:
            titles.setdefault(sid, text)
    titles.update(scan.ai_title)
    titles.update(scan.custom_title)
    builders: dict[str, Builder] = {}
    first: dict = {}
    last: dict = {}
    meta: dict = {}
    pending: dict = {}  # (sid, tool_use_id) -> the call, until its result comes
    open_msgs: dict = {}  # (sid, message id) -> {"ts", "texts", "common", "version"}
    prompt_ids: set = set()
    turns: dict = {}  # sid -> promptId of the turn in progress
    prev_ts = None

    def builder(sid: str) -> Builder:
        if sid not in builders:
            builders[sid] = Builder(fleet_id=fleet_id, agent_id=agent_id, runtime="claude_code", session_id=sid,
                                    imported=True)
            result.sessions.add(sid)
        return builders[sid]

    def emit(sid, etype, **kw):
        result.envelopes += 1
        return sid, builder(sid).make(etype, **kw)

    for idx, rec in enumerate(_records(path, result)):
        result.records += 1
        rtype = rec.get("type")
        sid = _str(rec.get("sessionId"))
        if rtype not in ("user", "assistant", "system") or not sid:
            continue
        if rtype == "system" and rec.get("subtype") not in ("compact_boundary", "local_command"):
            continue
        ts = _ts(rec, prev_ts)
        prev_ts = ts
        version = _str(rec.get("version"))
        last[sid] = ts
        common = {"cwd": _str(rec.get("cwd")), "branch": _str(rec.get("gitBranch"))}
        first.setdefault(sid, (ts, {k: v for k, v in common.items() if v}, version))
        m = meta.setdefault(sid, {})
        m.update({k: v for k, v in common.items() if v})
        if version:
            m["runtime_version"] = version
        if rec.get("isSidechain"):
            common["turn_id"] = f"sidechain:{rec.get('agentId') or 'unknown'}"
        else:
            if rtype == "user" and _str(rec.get("promptId")):
                turns[sid] = rec["promptId"]
            if turns.get(sid):
                common["turn_id"] = turns[sid]
        uid = str(rec.get("uuid") or f"line:{idx}")
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = msg.get("content")
        at = {"emitted_at": ts, "runtime_version": version}
        if rtype == "system" and rec.get("subtype") == "local_command":
            if _str(rec.get("content")):
                yield emit(sid, "context", role="user", content=rec["content"], event_id=identity.event_id(sid, "record", uid),
                           fields={"user_kind": "local_command_output"}, **at, **common)
            continue
        if rtype == "system":
            cm = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
            pre = cm.get("preTokens")
            yield emit(sid, "compact", content=_str(rec.get("content")), event_id=identity.event_id(sid, "record", uid),
                       fields={"compact_trigger": _str(cm.get("trigger")),
                               "pre_tokens": int(pre) if isinstance(pre, int) and abs(pre) < 1 << 62 else None},
                       **at, **common)
            continue
        if rtype == "user":
            if rec.get("isCompactSummary"):
                text = content if isinstance(content, str) else _blocks_text(content or [])
                yield emit(sid, "compact", role="user", content=text, event_id=identity.event_id(sid, "record", uid),
                           fields={"user_kind": "compaction_summary"}, **at, **common)
                continue
            blocks = content if isinstance(content, list) else None
            if blocks is not None and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
                for j, block in enumerate(blocks):
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "tool_result":
                        yield from _tool_result(emit, sid, rec, block, pending, ts, version, common)
                    elif block.get("type") == "text" and _str(block.get("text")):
                        kind = user_kind(block["text"], beside_result=True)
                        yield emit(sid, "context", role="user", content=block["text"],
                                   event_id=identity.event_id(sid, "record", uid, str(j)),
                                   fields={"user_kind": kind}, **at, **common)
                continue
            text = content if isinstance(content, str) else _blocks_text(blocks or [])
            if not text or not text.strip():
                continue
            kind = user_kind(text, meta=bool(rec.get("isMeta")), sidechain=bool(rec.get("isSidechain")))
            pid = _str(rec.get("promptId"))
            if kind in ("typed", "slash_command") and pid and (sid, pid) not in prompt_ids:
                prompt_ids.add((sid, pid))
                eid = identity.event_id(sid, "prompt", pid)
            else:
                eid = identity.event_id(sid, "record", uid)
            if kind == "typed":
                yield emit(sid, "prompt", role="user", content=text, event_id=eid, **at, **common)
            else:
                yield emit(sid, "context", role="user", content=text, event_id=eid, fields={"user_kind": kind},
                           **at, **common)
            continue
        # assistant
        mid = _message_id(rec, msg)
        blocks = content if isinstance(content, list) else ([{"type": "text", "text": content}] if isinstance(content, str) else [])
        om = open_msgs.setdefault((sid, mid), {"ts": ts, "texts": [], "common": common, "version": version})
        om["texts"].extend(b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                           and isinstance(b.get("text"), str) and b["text"].strip())
        for blk in blocks:
            if isinstance(blk, dict) and blk.get("type") == "tool_use" and isinstance(blk.get("id"), str):
                inp = blk.get("input")
                paths = [inp[k] for k in ("file_path", "path", "notebook_path")
                         if isinstance(inp, dict) and isinstance(inp.get(k), str) and inp[k]]
                pending[(sid, blk["id"])] = {"ts": ts, "common": common, "version": version,
                                             "tool": {"name": blk.get("name") or "unknown", "input": inp, "paths": paths}}
        if scan.last_index.get((sid, mid)) == idx or (sid, mid) not in scan.last_index:
            om = open_msgs.pop((sid, mid))
            yield from _assistant(emit, sid, mid, om, scan.usage.get((sid, mid)), ts)
    for (sid, mid), om in list(open_msgs.items()):  # a message whose last record was unreadable
        yield from _assistant(emit, sid, mid, om, scan.usage.get((sid, mid)), last.get(sid))
    for (sid, tid), call in pending.items():  # tool calls whose result never came (interrupted, or still running)
        yield emit(sid, "tool_call", tool=call["tool"], message_id=tid, emitted_at=call["ts"],
                   runtime_version=call["version"], event_id=identity.event_id(sid, "tool", tid), **call["common"])
    for sid, b in builders.items():
        m = dict(meta.get(sid, {}))
        version = m.pop("runtime_version", None)
        ts0, m0, version0 = first[sid]  # a start depends on the first record only (any prefix agrees)
        yield emit(sid, "session_start", emitted_at=ts0, runtime_version=version0,
                   event_id=identity.event_id(sid, "start"), **m0)
        yield emit(sid, "session_end", emitted_at=last[sid], runtime_version=version,
                   event_id=identity.event_id(sid, "end"), content="imported transcript",
                   fields={"title": titles.get(sid)}, **m)
        quarantine.extend(b.quarantine)
        b.quarantine = []


def _assistant(emit, sid, mid, om, final, observed):
    usage = _usage(*final) if final else None
    if not om["texts"] and not usage:
        return
    yield emit(sid, "assistant", role="assistant", content="\n".join(om["texts"]) or None, usage=usage,
               emitted_at=om["ts"], runtime_version=om["version"], event_id=identity.event_id(sid, "assistant", mid),
               fields={"observed_at": observed if observed and observed != om["ts"] else None}, **om["common"])


def _tool_result(emit, sid, rec, block, pending, ts, version, common):
    tid = _str(block.get("tool_use_id"))
    if tid is None:
        return
    call = pending.pop((sid, tid), None)
    output = result_text(block, rec)
    error = _is_error(block.get("is_error"))
    tur = rec.get("toolUseResult")
    interrupted = isinstance(tur, dict) and tur.get("interrupted") is True
    fields = {"observed_at": ts, "failure_reason": failure_reason(output, error, interrupted)}
    if call:
        tool, at, extra, version = dict(call["tool"]), call["ts"], call["common"], call["version"] or version
    else:
        tool, at, extra = {"name": "unknown", "input": None, "paths": []}, ts, common
        fields["orphan_result"] = True
    tool.update(result=output, exit_code=failure_exit_code(output) if error else 0)
    dur = tur.get("durationMs") if isinstance(tur, dict) else None
    if isinstance(dur, (int, float)) and not isinstance(dur, bool) and 0 <= dur < 1 << 53:
        tool["duration_ms"] = int(dur)
    yield emit(sid, "tool_call", tool=tool, message_id=tid, emitted_at=at, runtime_version=version,
               event_id=identity.event_id(sid, "tool", tid), fields=fields, **extra)


def parse_file(path: str, *, fleet_id: str, agent_id: str):
    """All envelopes of one transcript file, in memory (tests and small files; ``ctxlake
    import`` streams with :func:`iter_envelopes`).

    Returns ``(envelopes_by_session: dict[str, list[dict]], result: ImportResult,
    quarantine: list[dict])``, each session's envelopes sorted by :func:`lib.identity.order`.
    """
    result = ImportResult(path)
    quarantine: list = []
    out: dict[str, list[dict]] = {}
    for sid, env in iter_envelopes(path, fleet_id=fleet_id, agent_id=agent_id, result=result, quarantine=quarantine):
        out.setdefault(sid, []).append(env)
    for envs in out.values():
        envs.sort(key=identity.order)
    return out, result, quarantine


def transcript_files(path: str) -> list[str]:
    """``*.jsonl`` files under ``path`` (a file or a directory, recursively), sorted."""
    if os.path.isfile(path):
        return [path]
    found = []
    for root, _, names in os.walk(path):
        found.extend(os.path.join(root, n) for n in names if n.endswith(".jsonl"))
    return sorted(found)


def import_path(path: str, paths, *, fleet_id: str, agent_id: str, log=lambda *a, **k: None) -> list[ImportResult]:
    """Import every transcript under ``path`` into ``spool/import/`` (one file + ``.done`` per
    session), streaming. Sessions split over several files (a resume, sub-agent transcripts
    sharing the parent's id) converge in the lake: their events carry the same identities.
    Returns one :class:`ImportResult` per file. :raises FileNotFoundError: no such path.
    """
    from lib import spool
    from lib.envelope import dumps

    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file or directory: {path}")
    results = []
    for f in transcript_files(path):
        res = ImportResult(f)
        quarantine: list = []
        for sid, env in iter_envelopes(f, fleet_id=fleet_id, agent_id=agent_id, result=res, quarantine=quarantine):
            spool.append(paths.session_spool("import", sid), dumps(env))
        for sid in res.sessions:
            spool.atomic_write(paths.session_done("import", sid), json.dumps({"event": "import", "source": os.path.basename(f)}).encode())
        for rec in quarantine:
            spool.append(paths.quarantine_spool_file(fleet_id), json.dumps(rec) + "\n")
        log("transcript_imported", file=os.path.basename(f), sessions=len(res.sessions), envelopes=res.envelopes,
            skipped_lines=res.skipped_lines, repaired_lines=res.repaired_lines)
        results.append(res)
    return results
