"""Claude Code end to end: the real CLI (``claude -p``), the real installer, our hook and MCP
server, driven by a scripted model.

Two sessions of one agent on one host. Session 1 runs a shell command, reads, edits and writes
files, calls ``mcp__ctxlake__fleet_status``, runs a failing command and proposes a claim through
``mcp__ctxlake__memory_propose`` citing its own first command. Then ``syncd --once`` and
``maint --once`` turn it into a sealed, digested session; the claim is a preference, which a
person approves (``ctxlake claims --approve``: an agent citing only its own session cannot promote
a claim, docs/memory.md), and ``maint --once``, ``syncd --once`` render the briefing.
Session 2 starts, gets that briefing at SessionStart, and asks ``memory_search``.

Everything is proved from the outside: the recorder hook's payloads against the spool, the
request bodies the model received, the transcript the CLI wrote, ``ctxlake import`` and
``ctxlake sessions``.
"""
from __future__ import annotations

import json
import os

import pytest

from lib.adapters import claude_code
from tests.e2e import capture, runtimes
from tests.e2e.fake_model import result_text, text, tool, tool_result
from tests.e2e.harness import ROOT, ClaudeAgent, Fleet

AGENT = "cc-alice"
CLAIM = "In the demo repository, echo hello writes out.txt in the repository root."
FIRED = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"}
FAILING = "ls does-not-exist"
_FINAL = "Fixed: main() returns 2; out.txt written; one command failed."


def _session_one(project: str) -> list:
    app, notes = os.path.join(project, "src", "app.py"), os.path.join(project, "notes.md")

    def propose(request):
        sid = request["headers"].get("x-claude-code-session-id")
        assert sid, "Claude Code sends its session id with every request"
        return [tool("mcp__ctxlake__memory_propose", {
            "claim": CLAIM, "type": "preference", "subject": "demo out.txt",
            "evidence": [{"session_id": sid, "message_id": "toolu_e2e_s1_t0_0"}]})]

    return [
        [tool("Bash", {"command": "echo hello > out.txt && cat out.txt", "description": "write out.txt"})],
        [tool("Read", {"file_path": app})],
        [tool("Edit", {"file_path": app, "old_string": "return 1", "new_string": "return 2"})],
        [tool("Write", {"file_path": notes, "content": "main() returns 2 now\n"})],
        [tool("mcp__ctxlake__fleet_status", {})],
        [tool("Bash", {"command": FAILING, "description": "a command that fails"})],
        propose,
        [text(_FINAL)],
    ]


@pytest.fixture(scope="module")
def run(claude_bin, model, tmp_path_factory, scenario_timer):
    """Both sessions and the pipeline between them; returns what the tests inspect."""
    with scenario_timer:
        fleet = Fleet(str(tmp_path_factory.mktemp("cc")))
        agent = ClaudeAgent(fleet, AGENT)
        installed = agent.install()
        model.script("s1", _session_one(agent.project))
        first = agent.run(model, "s1", "Fix the app so main() returns 2, and note what you learn.")
        recorded_first = agent.recorded()
        spool_first = fleet.spool("claude_code", first["session_id"])
        with open(os.path.join(fleet.home, "spool", "claude_code", first["session_id"] + ".done")) as fh:
            done_first = json.load(fh)
        mcp_first = fleet.mcp_records()  # syncd drains and reclaims the MCP spool
        pass_first = fleet.syncd_pass()
        fleet.maint_once()
        lake_first = fleet.lake_events(first["session_id"])
        from lib.memory import claims

        approved = fleet.ctxlake("claims", "--approve", claims.claim_id("preference", CLAIM))
        assert approved.returncode == 0, approved.stdout + approved.stderr
        fleet.maint_once()
        fleet.syncd_once()
        briefing = fleet.cache_file("briefing.json")
        model.script("s2", [[tool("mcp__ctxlake__memory_search", {"query": "what does echo hello write in the demo repository"})],
                            [text("The fleet knows where out.txt comes from.")]])
        second = agent.run(model, "s2", "What does the fleet know about this repository?")
        out = {"fleet": fleet, "agent": agent, "installed": installed, "model_url": model.url, "first": first, "second": second,
               "recorded_first": recorded_first, "recorded": agent.recorded(), "spool_first": spool_first,
               "done_first": done_first, "mcp_first": mcp_first,
               "pass_first": pass_first, "lake_first": lake_first,
               "briefing": briefing, "s1": model.bodies("s1"), "s2": model.bodies("s2")}
    if capture.capturing():
        _save_capture(out)
    return out


def _save_capture(r) -> None:
    fleet, agent = r["fleet"], r["agent"]
    norm = capture.normaliser_for(fleet, agent, [(r["model_url"], "http://127.0.0.1:8765")])
    d = capture.folder("claude-code", runtimes.CLAUDE_CODE_VERSION)
    capture.write_json(os.path.join(d, "hooks.json"), norm.value(capture.payloads(r["recorded"])), fleet)
    capture.write_json(os.path.join(d, "hook-env.json"), capture.env_names(r["recorded"]), fleet)
    for key in ("first", "second"):
        sid = r[key]["session_id"]
        capture.write_lines(os.path.join(d, f"transcript-{key}.jsonl"),
                            norm.value(capture.transcript_records(agent.transcript(sid))), fleet)


def test_install_wrote_hooks_and_mcp_server_beside_the_foreign_hook(run):
    agent = run["agent"]
    with open(os.path.join(agent.home, ".claude", "settings.json")) as fh:
        settings = json.load(fh)
    for event in FIRED:
        hooks = [h for g in settings["hooks"][event] for h in g["hooks"]]
        assert hooks[0]["command"] == agent.recorder_command(event), "the foreign hook is kept, first"
        ours = [h for h in hooks if os.path.join(ROOT, "hook.py") in h.get("args", [])]
        assert ours and all(f"--agent={AGENT}" in h["args"] for h in ours), "exec form, identity as arguments"
    with open(os.path.join(agent.home, ".claude.json")) as fh:
        server = json.load(fh)["mcpServers"]["ctxlake"]
    assert server["args"] == [os.path.join(ROOT, "mcp_server.py")] and server["env"]["CTXLAKE_AGENT_ID"] == AGENT


def test_every_hook_event_the_cli_fired_is_in_the_spool_with_its_mapping(run):
    fleet, first = run["fleet"], run["first"]
    sid = first["session_id"]
    recorded = [x["payload"] for x in run["recorded_first"]]
    assert {p["hook_event_name"] for p in recorded} == FIRED
    assert all(p["session_id"] == sid for p in recorded)
    assert fleet.hook_errors() == ""
    spooled = run["spool_first"]
    assert all(e["agent_id"] == AGENT and e["fleet_id"] == "e2e" and e["runtime"] == "claude_code" for e in spooled)
    captured, missed = _align(recorded, spooled)
    assert all(p["hook_event_name"] not in claude_code.SYNC_EVENTS for p in missed), \
        "only an async hook may miss (Claude Code ends the ones still running at exit)"
    assert len(captured) == len(spooled), "every spooled envelope is a recorded event"
    for p, e in captured:
        assert e["session_id"] == sid and e["cwd"] == p["cwd"]
        if p["hook_event_name"] == "UserPromptSubmit":
            assert e["content"] == p["prompt"] == "Fix the app so main() returns 2, and note what you learn."
        if "tool_use_id" in p:
            assert e["message_id"] == p["tool_use_id"] and e["tool"]["name"] == p["tool_name"]
            path = p["tool_input"].get("file_path")
            assert e["tool"]["paths"] == ([path] if path else [])
        if p["hook_event_name"] == "PostToolUse":
            assert e["tool"]["exit_code"] == 0
        if p["hook_event_name"] == "PostToolUseFailure":
            assert p["tool_input"]["command"] == FAILING
            assert e["tool"]["exit_code"] == 2, "the real exit status, read from the failure payload"
        if p["hook_event_name"] == "Stop":
            assert e["content"] == p["last_assistant_message"]
    ids = [p["tool_use_id"] for p in recorded if p["hook_event_name"] == "PreToolUse"]
    assert ids == [f"toolu_e2e_s1_t{i}_0" for i in range(7)]
    assert run["done_first"] == {"event": "SessionEnd", "transcript_path": run["agent"].transcript(sid)}


EXPECTED_TYPES = {"SessionStart": "session_start", "UserPromptSubmit": "prompt", "PreToolUse": "tool_call",
                  "PostToolUse": "tool_call", "PostToolUseFailure": "tool_call", "Stop": "assistant",
                  "SessionEnd": "session_end"}


def _align(recorded: list[dict], spooled: list[dict]) -> tuple[list, list]:
    """``(pairs (payload, envelope), payloads with no envelope)``: the recorded payloads walked in
    order against the spool (an async capture may land after a later event's, so each payload is
    matched with the first unmatched envelope of its type and tool-use id)."""
    free = list(spooled)
    pairs, missed = [], []
    for p in recorded:
        etype = EXPECTED_TYPES[p["hook_event_name"]]
        tid = p.get("tool_use_id")
        hit = next((e for e in free if e["event_type"] == etype and e.get("message_id") == tid), None)
        if hit is None:
            missed.append(p)
        else:
            free.remove(hit)
            pairs.append((p, hit))
    return pairs, missed


def test_what_a_hook_missed_at_exit_the_transcript_backstop_filled_in(run):
    """Claude Code ends an async hook still running when ``claude -p`` exits (often the Stop):
    syncd's seal reconciled the transcript, and the lake has every recorded event once."""
    _, missed = _align([x["payload"] for x in run["recorded_first"]], run["spool_first"])
    rows = run["lake_first"]
    imported = [e for e in rows if e.get("imported")]
    # a missed PreToolUse is no event of its own to fill: the call is one event with its result
    fillable = [p for p in missed if p["hook_event_name"] != "PreToolUse"]
    assert run["pass_first"]["backstop_filled"] == len(imported) == len(fillable), (missed, imported)
    print(f"\nbackstop filled {len(imported)} event(s) the hooks missed: {[e['event_type'] for e in imported]}")
    ends = [e for e in rows if e["event_type"] == "assistant" and e.get("content") == _FINAL]
    assert len(ends) == 1, "the turn's end once, from the Stop hook or from the transcript"
    for p in run["recorded_first"]:
        tid = p["payload"].get("tool_use_id")
        if p["payload"]["hook_event_name"] in ("PostToolUse", "PostToolUseFailure"):
            assert [e["tool"]["name"] for e in rows if e.get("message_id") == tid and "exit_code" in e["tool"]] \
                == [p["payload"]["tool_name"]]
    assert len({e["event_id"] for e in rows}) == len(rows)


def test_the_mcp_call_went_through_our_server_and_its_result_reached_the_model(run):
    bodies = run["s1"]
    answer = json.loads(result_text(tool_result(bodies, "toolu_e2e_s1_t4_0")))
    assert answer["fleet_id"] == "e2e" and answer["agent_id"] == AGENT, "identity from the env block install wrote"
    assert "advisory" in answer
    queued = json.loads(result_text(tool_result(bodies, "toolu_e2e_s1_t6_0")))
    assert queued["queued"] is True and queued["kind"] == "proposed"
    (rec,) = [r for r in run["mcp_first"] if r.get("kind") == "proposed"] or [None]
    assert rec is not None and rec["observed_by"] == AGENT and rec["claim"] == CLAIM
    assert rec["evidence"] == [{"session_id": run["first"]["session_id"], "message_id": "toolu_e2e_s1_t0_0"}]


def test_failing_command_result_reached_the_model_as_an_error(run):
    block = tool_result(run["s1"], "toolu_e2e_s1_t5_0")
    assert block.get("is_error") is True and result_text(block).startswith("Exit code 2")


def test_import_of_the_transcript_yields_the_hooks_tool_ids(run, tmp_path):
    fleet, agent, sid = run["fleet"], run["agent"], run["first"]["session_id"]
    other = str(tmp_path / "import-home")
    r = fleet.ctxlake("import", "claude-code", "--path", agent.transcript(sid),
                      env=fleet.env(CTXLAKE_HOME=other, HOME=agent.home))
    assert r.returncode == 0, r.stdout + r.stderr
    from tests.e2e.harness import read_ndjson

    imported = read_ndjson(os.path.join(other, "spool", "import", f"{sid}.ndjson"))
    hook_ids = [e["message_id"] for e in run["spool_first"] if e["event_type"] == "tool_call"]
    imp = [e for e in imported if e["event_type"] == "tool_call"]
    assert sorted(e["message_id"] for e in imp) == sorted(set(hook_ids))
    exit_codes = {e["message_id"]: e["tool"]["exit_code"] for e in imp}
    hook_exit = {e["message_id"]: e["tool"]["exit_code"] for e in run["spool_first"] if "exit_code" in e.get("tool", {})}
    assert exit_codes == hook_exit, "hooks and transcript agree on every exit status"
    prompts = [e["content"] for e in imported if e["event_type"] == "prompt"]
    assert prompts == ["Fix the app so main() returns 2, and note what you learn."]


def test_the_session_appears_in_ctxlake_sessions_with_its_commands_and_failure(run):
    fleet, sid = run["fleet"], run["first"]["session_id"]
    r = fleet.ctxlake("sessions", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    (s,) = [s for s in json.loads(r.stdout) if s["session_id"] == sid]
    assert s["agent_id"] == AGENT and s["runtime"] == "claude_code"
    cmds = {c["command"]: c["exit_code"] for c in s["commands"] if c["tool"] == "Bash"}
    assert cmds == {"echo hello > out.txt && cat out.txt": 0, FAILING: 2}
    assert s["commands_failed"] == 1
    assert {os.path.basename(f) for f in s["files_touched"]} >= {"app.py", "notes.md"}
    text_out = fleet.ctxlake("sessions").stdout
    assert AGENT in text_out and "1 failed" in text_out


def test_the_next_session_start_briefing_reached_the_model(run):
    briefing = run["briefing"]
    assert briefing and "Fix the app" in briefing["text"], "syncd rendered session 1 into the briefing"
    first_request = json.dumps(run["s2"][0])
    assert "<ctxlake-briefing>" in first_request and "Fix the app so main() returns 2" in first_request
    assert "<ctxlake-briefing>" not in json.dumps(run["s1"][0]), "no briefing before anything was learned"
    start = [e for e in run["fleet"].spool("claude_code", run["second"]["session_id"]) if e["event_type"] == "session_start"]
    assert start and start[0]["injected_context"] == briefing["claim_ids"]


def test_the_promoted_claim_is_briefed_and_found_by_memory_search(run):
    briefing = run["briefing"]
    assert CLAIM in briefing["text"] and len(briefing["claim_ids"]) == 1, briefing
    assert CLAIM in json.dumps(run["s2"][0])
    found = json.loads(result_text(tool_result(run["s2"], "toolu_e2e_s2_t0_0")))
    assert found["enabled"] is True and found["results"], found
    top = found["results"][0]
    assert top["claim_id"] == briefing["claim_ids"][0] and top["status"] == "promoted" and top["observed_by"] == AGENT
    assert CLAIM in top["rendered"]


def test_payload_shapes_match_the_committed_capture(run):
    d = capture.folder("claude-code", runtimes.CLAUDE_CODE_VERSION)
    path = os.path.join(d, "hooks.json")
    assert os.path.exists(path), f"no capture for Claude Code {runtimes.CLAUDE_CODE_VERSION}: run `make e2e-capture`"
    live = capture.shapes(capture.payloads(run["recorded"]))
    assert live == capture.shapes(capture.load_json(path)), "Claude Code's hook payloads changed shape: re-capture"
