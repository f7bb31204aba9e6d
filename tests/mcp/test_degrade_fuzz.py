"""Every read path degrades (issue #19): any content of any cache file, and any value in any
snapshot table cell, gives every MCP tool a result (never ``isError`` from an unexpected
exception), the hook a valid answer (``{}`` when the cache says nothing usable), and syncd's
briefing step a logged warning at most — never a traceback.

Property-based (hypothesis): cache files are generated both as arbitrary bytes and as documents
shaped like the real ones (right keys, arbitrary values at any depth: wrong types, huge,
negative, NaN, 1e308, empty); snapshot cells are arbitrary SQLite values (SQLite tables here
are not STRICT, so a cell can hold any type). Tools are driven through the real
:class:`lib.jsonrpc.Server` the stdio server runs; ``tests/mcp/test_sdk_e2e.py`` drives a few
of the worst cases through the official MCP client.
"""
from __future__ import annotations

import io
import json
import math
import os
import sqlite3
import tempfile

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lib import hookproc, jsonrpc, mcp_tools
from lib.memory import embed, snapshot
from lib.config import load
from lib.spool import atomic_write

FLEET, AGENT = "fleet-f", "agent-f"
NOW = 1_800_000_000.0
SETTINGS = settings(max_examples=80, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- value strategies -----------------------------------------------------------------------------

NASTY_NUMBERS = st.sampled_from([1e308, -1e308, 1e20, -1e20, 2 ** 63, -(2 ** 63) - 1, 10 ** 30, -1, 0, -0.0,
                                 float("nan"), float("inf"), float("-inf"), 1e-300, 253402300800, -62135596801])
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                   NASTY_NUMBERS, st.text(max_size=40),
                   st.sampled_from(["", "high", "2026-13-45T99:99:99Z", "9999-12-31T23:59:59Z", "0001-01-01",
                                    "-1", "1e308", "NaN", "\u202e\u200b", "x" * 5000]))
JSONISH = st.recursive(SCALAR, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                      st.dictionaries(st.text(max_size=12), kids, max_size=4)),
                       max_leaves=12)


def shaped(keys: dict) -> st.SearchStrategy:
    """A dict with some of ``keys`` (each mapped to its own strategy) plus arbitrary extras."""
    return st.fixed_dictionaries({}, optional={k: v for k, v in keys.items()}).flatmap(
        lambda d: st.dictionaries(st.text(max_size=8), JSONISH, max_size=2).map(lambda extra: {**extra, **d}))


def entries(keys: tuple) -> st.SearchStrategy:
    return st.lists(st.one_of(shaped({k: JSONISH for k in keys}), JSONISH), max_size=4)


TIME = st.one_of(SCALAR, st.just("2027-01-15T07:59:00.000Z"), st.just(NOW), st.just(NOW + 600))
ROSTER = shaped({"agents": st.one_of(entries(("agent_id", "runtime", "host_id", "session_id", "repo", "branch", "task",
                                              "paths", "touched", "updated_at")), JSONISH),
                 "store_time": TIME, "refreshed_at": TIME})
LEASES = shaped({"store_time": TIME, "refreshed_at": TIME, "policy": JSONISH,
                 "leases": st.one_of(entries(("resource", "repo", "path", "holder", "session_id", "reason",
                                              "acquired_at", "expires_at", "epoch")), JSONISH),
                 "requests": st.one_of(st.dictionaries(st.text(max_size=8), st.one_of(shaped({
                     "agent_id": st.one_of(st.just(AGENT), JSONISH), "kind": JSONISH, "paths": JSONISH,
                     "requested_at": TIME, "outcome": JSONISH}), JSONISH), max_size=3),
                     entries(("record_id", "agent_id", "kind", "paths", "requested_at", "outcome")))})
SYNC = shaped({"last_run_at": TIME, "errors": JSONISH})
BRIEFING = shaped({"text": st.one_of(SCALAR, st.just("## fleet\nhello")), "claim_ids": JSONISH,
                   "rendered_at": TIME})


def encoded(doc: st.SearchStrategy) -> st.SearchStrategy:
    """File bytes: the document as JSON (NaN/Infinity as Python writes them), truncated, or garbage."""
    as_json = doc.map(lambda d: json.dumps(d).encode())
    return st.one_of(as_json, as_json.flatmap(lambda b: st.integers(0, max(0, len(b) - 1)).map(lambda n: b[:n])),
                     st.binary(max_size=64), st.sampled_from([b"", b"{", b"[]", b"null", b"\xff\xfe{}", b"1e999",
                                                              b'{"a":' * 5000, b"\x00" * 64]))


SQL_VALUE = st.one_of(st.none(), st.integers(-(2 ** 63), 2 ** 63 - 1), st.floats(allow_nan=False),
                      st.sampled_from([1e308, -1e308, float("inf"), float("-inf"), -1, 10 ** 18]),
                      st.text(max_size=30), st.binary(max_size=16),
                      st.sampled_from(["high", "", "not json", "[1,2", '{"a": 1}', "[]", "null", "1e999", "9" * 400, "[" * 3000 + "]" * 3000,
                                       '["a", 1e999, {"x": NaN}]', '{"input_tokens": 1e999}']))
CLAIM_ROW = st.fixed_dictionaries({c: SQL_VALUE for c in snapshot.CLAIM_COLUMNS if c not in ("claim_id",)})
SESSION_ROW = st.fixed_dictionaries({c: SQL_VALUE for c in snapshot.SESSION_COLUMNS if c != "session_id"})
HANDOFF_ROW = st.fixed_dictionaries({c: SQL_VALUE for c in snapshot.HANDOFF_COLUMNS if c != "record_id"})
META = st.dictionaries(st.sampled_from(["summarize_mode", "agent_reads_enabled", "relevance_floor",
                                        "relevance_floor_mixed", "schema_version", "fleet_id"]), SQL_VALUE, max_size=4)

# -- one temporary home per example ----------------------------------------------------------------


class Home:
    """A throwaway CTXLAKE_HOME with a config bound to it (hypothesis examples share no state)."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ctxlake-fuzz-")
        self.dir = self._tmp.name
        self.env = {"CTXLAKE_HOME": self.dir, "CTXLAKE_FLEET_ID": FLEET, "CTXLAKE_AGENT_ID": AGENT,
                    "CTXLAKE_CONFIG": os.path.join(self.dir, "absent.toml"), "HOME": self.dir}
        self.cfg = load(self.env)
        os.makedirs(self.cfg.paths.fleet_cache(FLEET), exist_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._tmp.cleanup()

    def write(self, name: str, data: bytes) -> None:
        atomic_write(os.path.join(self.cfg.paths.fleet_cache(FLEET), name), data, mode=0o644)

    def snapshot(self, claims: list[dict], sessions: list[dict], meta: dict, handoffs: list[dict] = ()) -> None:
        """A real snapshot (:func:`lib.memory.snapshot.build`), then every generated cell written raw."""
        good = [{"claim_id": "c-good", "claim": "postgres migrations run first", "claim_type": "environment",
                 "subject": "postgres", "status": "promoted", "confidence": 0.8, "independent_sessions": 2,
                 "visible_to_agents": 1, "observed_by": "cc-1", "observed_at": "2027-01-01T00:00:00.000Z",
                 "embedding": embed.to_blob(embed.hash_embed("postgres migrations")), "embedder": embed.HASH_EMBEDDER_ID}]
        data = _base_snapshot(good)
        path = self.cfg.paths.snapshot(FLEET)
        atomic_write(path, data)
        conn = sqlite3.connect(path)
        for i, row in enumerate(claims):
            # keep most rows findable: visible, and matching the queries below
            row = dict(row, claim_id=f"c{i}")
            if i % 2 == 0:
                row.update(visible_to_agents=1, status="promoted", claim=f"postgres {row['claim']!s:.20}")
            conn.execute(f"INSERT INTO claims ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
            conn.execute("INSERT INTO claims_fts (claim_id, claim, subject) VALUES (?, ?, ?)",
                         (row["claim_id"], row["claim"] if isinstance(row["claim"], str) else "postgres", "postgres"))
        for i, row in enumerate(sessions):
            row = dict(row, session_id=f"s{i}")
            if i % 2 == 0:
                row.update(summary=f"postgres {row['summary']!s:.20}")
            conn.execute(f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
        for i, row in enumerate(handoffs):
            row = dict(row, record_id=f"h{i}")
            conn.execute(f"INSERT INTO handoffs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
        for k, v in meta.items():
            conn.execute("INSERT OR REPLACE INTO snapshot_meta (key, value) VALUES (?, ?)", (k, v))
        conn.commit()
        conn.close()


_BASE: dict = {}


def _base_snapshot(good: list[dict]) -> bytes:
    """The real snapshot every example starts from (built once: sqlite-utils is slow to load)."""
    if "data" not in _BASE:
        _BASE["data"] = snapshot.build(FLEET, [], good, meta={"summarize_mode": "agent"})
    return _BASE["data"]


CALLS = [("fleet_status", {}), ("fleet_history", {}), ("fleet_history", {"since": "7d", "repo": "github.com/a/b"}),
         ("memory_search", {"query": "postgres"}), ("memory_search", {"query": ""}),
         ("memory_search", {"query": "postgres", "subject": "postgres", "claim_type": "environment", "k": 200}),
         ("memory_timeline", {"subject": "postgres"}), ("memory_timeline", {"subject": "postgres", "since": "2000-01-01"}),
         ("fleet_claim", {"paths": ["src/a.py"], "reason": "fuzz"}), ("fleet_release", {}),
         ("fleet_handoff", {"summary": "fuzzed", "status": "done"}),
         ("memory_propose", {"claim": "c", "type": "outcome", "subject": "s",
                             "evidence": [{"session_id": "s", "message_id": "m"}]})]


def every_tool_answers(home: Home) -> list[dict]:
    """Call every tool through the real JSON-RPC server; each must be a non-error result whose
    text is one JSON object (writes: queued). Returns the decoded payloads."""
    logged = []
    ctx = mcp_tools.Context(home.cfg, cwd=home.dir, clock=lambda: NOW, log=lambda ev, **kw: logged.append((ev, kw)))
    server = jsonrpc.Server("ctxlake", "fuzz", mcp_tools.build_tools(ctx), log=lambda ev, **kw: logged.append((ev, kw)))
    server.handle(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": {"protocolVersion": "2025-06-18"}}).encode())
    out = []
    for i, (name, args) in enumerate(CALLS, 1):
        frame = server.handle(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                          "params": {"name": name, "arguments": args}}).encode())
        resp = json.loads(frame)
        assert "result" in resp, (name, resp)
        text = resp["result"]["content"][0]["text"]
        assert resp["result"]["isError"] is False, (name, text)
        payload = json.loads(text)
        assert isinstance(payload, dict), (name, text)
        if name in ("fleet_claim", "fleet_release", "fleet_handoff", "memory_propose"):
            assert payload["queued"] is True, (name, payload)
        out.append(payload)
    # no tool raised: not even the read tools' last-resort degradation was needed
    assert not [e for e in logged if e[0] in ("tool_failed", "tool_degraded", "tool_answer_degraded")], logged
    return out


def hook_answers(home: Home, event: str, payload: dict) -> dict:
    """Run the real hook in-process (capture inline) and return its one JSON answer."""
    stdout = io.StringIO()
    hookproc.run(["claude_code", event], io.BytesIO(json.dumps(payload).encode()), stdout, environ=home.env, detach=False)
    answer = json.loads(stdout.getvalue())
    assert isinstance(answer, dict)
    return answer


# -- the properties -----------------------------------------------------------------------------


@SETTINGS
@given(sync=encoded(SYNC), roster=encoded(ROSTER), leases=encoded(LEASES))
@example(sync=b'{"last_run_at": 1e308}', roster=b'{"refreshed_at": 1e20, "agents": []}',
         leases=b'{"refreshed_at": 1e20, "leases": []}')
@example(sync=b'{"last_run_at": -1e308}', roster=b'{"store_time": 1e308, "refreshed_at": 0, "agents": [{"agent_id": "b", "updated_at": -1e308}]}',
         leases=b'{"store_time": -1e308, "refreshed_at": 1e308, "leases": [{"holder": "b", "expires_at": 1e308, "path": "src/"}]}')
def test_any_live_cache_content_leaves_every_tool_answering(sync, roster, leases):
    with Home() as home:
        home.write("sync.json", sync)
        home.write("roster.json", roster)
        home.write("leases.json", leases)
        # the write tools' retry memory (spool/.state/mcp-last/) is local state too: garbage in it
        # only means no retry is recognised
        atomic_write(home.cfg.paths.mcp_last_write(FLEET, AGENT, None), sync)
        status = every_tool_answers(home)[0]
        assert isinstance(status["agents"], list) and isinstance(status["leases"], list)


@SETTINGS
@given(claims=st.lists(CLAIM_ROW, max_size=4), sessions=st.lists(SESSION_ROW, max_size=4), meta=META,
       handoffs=st.lists(HANDOFF_ROW, max_size=3))
@example(claims=[dict.fromkeys(snapshot.CLAIM_COLUMNS, None) | {"confidence": "high", "visible_to_agents": 1,
                                                                 "status": "promoted", "claim": "postgres"}],
         sessions=[], meta={}, handoffs=[])
def test_any_snapshot_cell_leaves_every_tool_answering(claims, sessions, meta, handoffs):
    with Home() as home:
        home.snapshot(claims, sessions, meta, handoffs)
        answers = every_tool_answers(home)
        for payload in answers:
            if payload.get("enabled") is False:
                assert payload.get("note"), payload


@SETTINGS
@given(blob=st.one_of(st.binary(max_size=256), st.just(b"SQLite format 3\x00" + b"\x00" * 300)))
def test_any_snapshot_file_bytes_leave_every_tool_answering(blob):
    with Home() as home:
        home.write("snapshot.bin", blob)
        every_tool_answers(home)


@SETTINGS
@given(briefing=encoded(BRIEFING), leases=encoded(LEASES), roster=encoded(ROSTER))
def test_any_cache_content_leaves_the_hook_answering(briefing, leases, roster):
    with Home() as home:
        home.write("briefing.json", briefing)
        home.write("leases.json", leases)
        home.write("roster.json", roster)
        start = hook_answers(home, "SessionStart", {"session_id": "s1", "hook_event_name": "SessionStart", "cwd": home.dir})
        assert start == {} or isinstance(start["hookSpecificOutput"]["additionalContext"], str)
        pre = hook_answers(home, "PreToolUse", {"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": home.dir,
                                                "tool_name": "Edit", "tool_input": {"file_path": os.path.join(home.dir, "a.py")}})
        assert pre == {} or isinstance(pre["hookSpecificOutput"], dict)
        errors = os.path.join(home.dir, "hook-errors.log")
        assert not os.path.exists(errors), open(errors).read()[:2000]


@SETTINGS
@given(roster=encoded(ROSTER), claims=st.lists(CLAIM_ROW, max_size=3), sessions=st.lists(SESSION_ROW, max_size=3),
       handoffs=st.lists(HANDOFF_ROW, max_size=3))
def test_any_cache_content_leaves_syncd_rendering_a_briefing(roster, claims, sessions, handoffs):
    from lib import briefing
    with Home() as home:
        home.write("roster.json", roster)
        home.snapshot(claims, sessions, {}, handoffs)
        logged = []
        out = briefing.render_cached(home.cfg, lambda ev, **kw: logged.append((ev, kw)))
        with open(home.cfg.paths.briefing(FLEET), "rb") as fh:
            data = json.loads(fh.read())
        assert isinstance(data["text"], str) and out["briefing_chars"] == len(data["text"])
        assert all(not (isinstance(v, float) and math.isnan(v)) for v in data.values())


@SETTINGS
@given(side=encoded(shaped({"etag": JSONISH, "pointer": st.one_of(JSONISH, shaped({"sha256": JSONISH})),
                            "file": JSONISH})),
       blob=st.one_of(st.binary(max_size=64), st.just(b"")))
def test_any_snapshot_mirror_state_leaves_syncd_refreshing_the_cache(side, blob):
    """syncd's own record of the mirrored snapshot (``snapshot.bin.pointer.json``) and the
    mirrored file itself, garbage: the next refresh verifies, downloads again and renders."""
    from lib import briefing
    from lib.store import open_store

    with Home() as home:
        store = open_store(home.cfg.store)
        data = _base_snapshot([{"claim_id": "c-good", "claim": "postgres migrations run first", "claim_type": "environment",
                                "subject": "postgres", "status": "promoted", "confidence": 0.8, "independent_sessions": 2,
                                "visible_to_agents": 1}])
        snapshot.publish(store, FLEET, data, maint_epoch=1, built_at="2027-01-01T00:00:00.000Z", claim_count=1,
                         session_count=0)
        path = home.cfg.paths.snapshot(FLEET)
        home.write("snapshot.bin", blob)
        atomic_write(path + ".pointer.json", side)
        out = briefing.refresh(home.cfg, store, lambda *a, **k: None)
        assert out["snapshot_sha"] == snapshot.sha256(data)
        with open(path, "rb") as fh:
            assert fh.read() == data


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(live_state=encoded(shaped({"sessions": JSONISH, "agents": JSONISH, "held": JSONISH, "requests": JSONISH,
                                  "lost": JSONISH, "roster": JSONISH, "stale_since": TIME})),
       watermark=encoded(shaped({"files": st.one_of(JSONISH, st.dictionaries(st.text(max_size=8), SCALAR))})))
def test_any_local_syncd_state_leaves_a_pass_running_and_the_spool_draining(live_state, watermark):
    """syncd's own state files (the live plane's memory, the MCP consumers' watermarks) garbage:
    the pass logs and goes on, the handoff in the MCP spool still reaches the store, and the
    spool is reclaimed."""
    from lib import handoffs, syncpass
    from lib.paths import MCP_CONSUMERS
    from lib.store import open_store

    with Home() as home:
        atomic_write(home.cfg.paths.live_state(FLEET), live_state)
        for name in MCP_CONSUMERS:
            atomic_write(home.cfg.paths.mcp_consumer_state(FLEET, name), watermark)
        ctx = mcp_tools.Context(home.cfg, cwd=home.dir, clock=lambda: NOW)
        rid = mcp_tools.Tools(ctx).fleet_handoff({"summary": "fuzzed state", "status": "done"})["record_id"]
        store = open_store(home.cfg.store)
        summary = syncpass.run_pass(home.cfg, store, lambda *a, **k: None)
        assert "live_error" not in summary["live"], summary
        assert rid in [n["record_id"] for n in handoffs.load_recent(store, FLEET, now=NOW)]
        syncpass.run_pass(home.cfg, store, lambda *a, **k: None)
        assert not os.path.exists(home.cfg.paths.mcp_spool(FLEET))


def test_gigantic_cache_files_are_unreadable_not_loaded():
    """A cache file larger than the reader's cap (16 MiB for the MCP server, 8 MiB / 1 MiB for the
    hook) is reported unreadable without being parsed; every tool and the hook still answer."""
    big = b'{"agents": [' + b'{"agent_id": "x", "task": "' + b"y" * (17 << 20) + b'"}]}'
    with Home() as home:
        for name in ("roster.json", "leases.json", "sync.json", "briefing.json"):
            home.write(name, big)
        status = every_tool_answers(home)[0]
        assert status["enabled"] is False and "larger than" in status["note"]
        assert hook_answers(home, "SessionStart", {"session_id": "s1", "hook_event_name": "SessionStart"}) == {}
