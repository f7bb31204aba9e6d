"""Claude Code transcript import (``~/.claude/projects/<slug>/<session>.jsonl``).

Record types read (field names as Claude Code writes them; see ``tests/fixtures/claude-transcripts``):

- ``user`` with string content → ``prompt``; with ``text`` blocks → ``prompt``; with
  ``tool_result`` blocks → the result of the matching ``tool_use`` (``is_error`` — a bool or the
  string ``"True"`` — gives a failure: the shell's status from ``"Exit code <n>"`` at the start of
  the result, as the hook reads it, else 1; no error gives 0); ``isCompactSummary`` → ``compact``;
  ``isMeta`` records (injected command output, caveats) are skipped.
- ``assistant`` → ``text`` blocks become ``assistant`` events; ``tool_use`` blocks become
  ``tool_call`` events (``message_id`` = the tool-use id, the join key to hook events). Token
  usage is counted once per API message (``message.id``, else ``requestId``): Claude Code
  writes usage on every content-block record of one message, the last one final (output
  tokens grow while it streams): the final usage is attached once, to the message's first event.
- ``isSidechain`` records (sub-agents) are marked ``turn_id = "sidechain:<agentId>"``.
- Everything else (progress, file-history-snapshot, queue-operation, system) is ignored.

A line that is not JSON is skipped and counted; the rest of the file is imported.
"""
from __future__ import annotations

import hashlib
import json
import os

from lib.adapters.claude_code import failure_exit_code
from lib.envelope import Builder, format_time, parse_time
from lib.importers import ImportResult
from lib.ulid import _encode


def _event_id(ts_ms: int, *parts: str) -> str:
    """Deterministic ULID: the record's time + 80 bits of sha256(parts) (re-import = same ids)."""
    rand = int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:10], "big")
    return _encode(ts_ms, 10) + _encode(rand, 16)


def _ts(rec: dict, fallback: str | None) -> tuple[str, int]:
    raw = rec.get("timestamp")
    try:
        t = parse_time(raw) if isinstance(raw, str) else None
    except ValueError:
        t = None
    if t is None:
        t = parse_time(fallback) if fallback else 0.0
    return format_time(t), int(round(t * 1000))


def _is_error(value) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _result_text(block: dict, rec: dict):
    tur = rec.get("toolUseResult")
    if isinstance(tur, dict) and ("stdout" in tur or "stderr" in tur):
        out = tur.get("stdout") or ""
        err = tur.get("stderr") or ""
        return out + ("\n[stderr]\n" + err if err else "")
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return content


def parse_file(path: str, *, fleet_id: str, agent_id: str):
    """Yield envelopes for one transcript file; returns via ``ImportResult`` (second element).

    Returns ``(envelopes_by_session: dict[str, list[dict]], result: ImportResult,
    quarantine: list[dict])``. Envelopes are sorted by ``event_id`` per session and include a
    ``session_start`` and ``session_end`` bracketing the session's records.
    """
    result = ImportResult(path)
    records = []
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                result.skipped_lines += 1
                continue
            if not isinstance(rec, dict):
                result.skipped_lines += 1
                continue
            records.append(rec)
    result.records = len(records)
    final_usage: dict = {}  # message id -> the last usage written for it (streaming updates it)
    for rec in records:
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        if rec.get("type") == "assistant" and isinstance(msg.get("usage"), dict):
            final_usage[msg.get("id") or rec.get("requestId") or rec.get("uuid")] = (msg.get("usage"), msg.get("model"))
    builders: dict[str, Builder] = {}
    out: dict[str, list[dict]] = {}
    pending_tools: dict[str, dict] = {}
    seen_usage: set = set()
    last_ts: dict[str, tuple] = {}
    first_ts: dict[str, tuple] = {}
    meta: dict[str, dict] = {}
    version = None

    def builder(sid: str) -> Builder:
        if sid not in builders:
            builders[sid] = Builder(fleet_id=fleet_id, agent_id=agent_id, runtime="claude_code", session_id=sid,
                                    runtime_version=version, imported=True)
            out[sid] = []
        return builders[sid]

    prev_ts = None
    for idx, rec in enumerate(records):
        rtype = rec.get("type")
        sid = rec.get("sessionId")
        if rtype not in ("user", "assistant") or not isinstance(sid, str) or not sid:
            continue
        version = version or rec.get("version")
        ts, ms = _ts(rec, prev_ts)
        prev_ts = ts
        b = builder(sid)
        first_ts.setdefault(sid, (ts, ms))
        last_ts[sid] = (ts, ms)
        m = meta.setdefault(sid, {})
        common = {"cwd": rec.get("cwd") if isinstance(rec.get("cwd"), str) else None,
                  "branch": rec.get("gitBranch") if isinstance(rec.get("gitBranch"), str) else None}
        m.update({k: v for k, v in common.items() if v})
        if rec.get("isSidechain"):
            common["turn_id"] = f"sidechain:{rec.get('agentId') or 'unknown'}"
        uid = str(rec.get("uuid") or idx)
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = msg.get("content")
        if rtype == "user":
            if rec.get("isMeta"):
                continue
            if rec.get("isCompactSummary"):
                text = content if isinstance(content, str) else "\n".join(
                    c.get("text", "") for c in content or [] if isinstance(c, dict))
                out[sid].append(b.make("compact", content=text, emitted_at=ts, event_id=_event_id(ms, path, uid, "c"), **common))
                continue
            if isinstance(content, str):
                out[sid].append(b.make("prompt", role="user", content=content, emitted_at=ts,
                                       event_id=_event_id(ms, uid, "p"), **common))
                continue
            for j, block in enumerate(content if isinstance(content, list) else []):
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    out[sid].append(b.make("prompt", role="user", content=block["text"], emitted_at=ts,
                                           event_id=_event_id(ms, uid, "p", str(j)), **common))
                elif block.get("type") == "tool_result":
                    tid = block.get("tool_use_id")
                    call = pending_tools.pop(tid, None) if isinstance(tid, str) else None
                    tool = {"name": "unknown", "input": None, "paths": []}
                    base_ts, base_ms, extra = ts, ms, common
                    if call:
                        tool, base_ts, base_ms, extra = call["tool"], call["ts"], call["ms"], call["common"]
                    output = _result_text(block, rec)
                    code = failure_exit_code(output) if _is_error(block.get("is_error")) else 0
                    tool = dict(tool, result=output, exit_code=code)
                    dur = rec.get("toolUseResult", {}).get("durationMs") if isinstance(rec.get("toolUseResult"), dict) else None
                    if isinstance(dur, (int, float)):
                        tool["duration_ms"] = int(dur)
                    out[sid].append(b.make("tool_call", tool=tool, message_id=tid, emitted_at=base_ts,
                                           event_id=_event_id(base_ms, str(tid), "t"), **extra))
        else:
            mid = msg.get("id") or rec.get("requestId") or uid
            usage = None
            if mid in final_usage and mid not in seen_usage:
                seen_usage.add(mid)
                u, model = final_usage[mid]
                usage = {"model": model, "input_tokens": int(u.get("input_tokens") or 0),
                         "output_tokens": int(u.get("output_tokens") or 0),
                         "cache_read_tokens": int(u.get("cache_read_input_tokens") or 0),
                         "cache_write_tokens": int(u.get("cache_creation_input_tokens") or 0)}
                if not usage["model"]:
                    del usage["model"]
            blocks = content if isinstance(content, list) else ([{"type": "text", "text": content}] if isinstance(content, str) else [])
            texts = [blk.get("text", "") for blk in blocks if isinstance(blk, dict) and blk.get("type") == "text"
                     and blk.get("text", "").strip()]
            if texts or usage:
                out[sid].append(b.make("assistant", role="assistant", content="\n".join(texts) or None, usage=usage,
                                       emitted_at=ts, event_id=_event_id(ms, uid, "a"), **common))
            for blk in blocks:
                if isinstance(blk, dict) and blk.get("type") == "tool_use" and isinstance(blk.get("id"), str):
                    inp = blk.get("input")
                    paths = [inp[k] for k in ("file_path", "path", "notebook_path")
                             if isinstance(inp, dict) and isinstance(inp.get(k), str) and inp[k]]
                    pending_tools[blk["id"]] = {"sid": sid, "ts": ts, "ms": ms, "common": common,
                                                "tool": {"name": blk.get("name") or "unknown", "input": inp, "paths": paths}}
    for tid, call in pending_tools.items():  # tool calls whose result never came (interrupted)
        b = builder(call["sid"])
        out[call["sid"]].append(b.make("tool_call", tool=call["tool"], message_id=tid, emitted_at=call["ts"],
                                       event_id=_event_id(call["ms"], tid, "t"), **call["common"]))
    quarantine = []
    for sid, b in builders.items():
        m = meta.get(sid, {})
        ts0, ms0 = first_ts[sid]
        ts1, ms1 = last_ts[sid]
        out[sid].append(b.make("session_start", emitted_at=ts0, event_id=_event_id(ms0, sid, "start"), **m))
        out[sid].append(b.make("session_end", emitted_at=ts1, event_id=_event_id(ms1, sid, "end"),
                               content="imported transcript", **m))
        out[sid].sort(key=lambda e: e["event_id"])
        result.sessions.add(sid)
        result.envelopes += len(out[sid])
        quarantine.extend(b.quarantine)
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
    session). Sessions split over several files (sub-agent transcripts share the parent's id) are
    merged; returns one :class:`ImportResult` per file. :raises FileNotFoundError: no such path.
    """
    from lib import spool
    from lib.envelope import dumps

    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file or directory: {path}")
    results = []
    for f in transcript_files(path):
        by_session, res, quarantine = parse_file(f, fleet_id=fleet_id, agent_id=agent_id)
        for sid, envs in by_session.items():
            target = paths.session_spool("import", sid)
            for e in envs:
                spool.append(target, dumps(e))
            spool.atomic_write(paths.session_done("import", sid), json.dumps({"event": "import", "source": os.path.basename(f)}).encode())
        for rec in quarantine:
            spool.append(os.path.join(paths.quarantine_spool, f"{fleet_id}.ndjson"), json.dumps(rec) + "\n")
        log("transcript_imported", file=os.path.basename(f), sessions=len(res.sessions), envelopes=res.envelopes,
            skipped_lines=res.skipped_lines)
        results.append(res)
    return results
