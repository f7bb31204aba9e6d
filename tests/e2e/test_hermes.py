"""Hermes end to end: the real ``hermes -z`` one-shot CLI (hermes-agent with its ``mcp`` extra),
the real installer, our hook and MCP server, driven by a scripted model over OpenAI chat
completions.

Two sessions of one agent. Session 1 runs ``terminal``, ``read_file``, ``patch``, ``write_file``,
``mcp__ctxlake__fleet_status`` and a failing ``terminal`` command. ``syncd --once``,
``maint --once``, ``syncd --once`` digest it and render a briefing; session 2 gets that briefing
from ``pre_llm_call`` and calls ``mcp__ctxlake__fleet_history``, which can only list session 1 if
the MCP server Hermes spawned reads the right ``CTXLAKE_HOME`` — one Hermes does not pass
through, so it must come from the entry ``install`` wrote. Then an operator holds ``src/app.py``
(``ctxlake lease acquire``), sets policy ``block``, and session 3's ``patch`` of it is refused
through Hermes' own pre_tool_call answer (``{"action": "block"}``).
"""
from __future__ import annotations

import json
import os

import pytest

from tests.e2e import capture, runtimes
from tests.e2e.fake_model import text, tool, tool_result
from tests.e2e.harness import ROOT, Fleet, HermesAgent, read_ndjson

AGENT = "hermes-bob"
HOLDER, HOLD_REASON = "ops-carol", "hotfix in progress"
SIX = ["on_session_start", "pre_llm_call", "pre_tool_call", "post_tool_call", "post_llm_call", "on_session_end"]
FAILING = "ls does-not-exist"
PROMPT = "Fix the app so main() returns 2."


def _mcp_json(content: str) -> dict:
    """The ctxlake answer inside Hermes' wrapping of an MCP tool result
    (``<untrusted_tool_result …>`` preamble, then ``{"result": "<json text>"}``)."""
    start, end = content.index("{"), content.rindex("}")
    outer = json.loads(content[start:end + 1])
    return json.loads(outer["result"]) if isinstance(outer.get("result"), str) else outer


def _session_one(project: str) -> list:
    app, notes = os.path.join(project, "src", "app.py"), os.path.join(project, "notes.md")
    return [
        [tool("terminal", {"command": "echo hello > out.txt && cat out.txt"})],
        [tool("read_file", {"path": app})],
        [tool("patch", {"path": app, "old_string": "return 1", "new_string": "return 2"})],
        [tool("write_file", {"path": notes, "content": "main() returns 2 now\n"})],
        [tool("mcp__ctxlake__fleet_status", {})],
        [tool("terminal", {"command": FAILING})],
        [text("Fixed: main() returns 2; one command failed.")],
    ]


@pytest.fixture(scope="module")
def run(hermes_bin, model, tmp_path_factory, scenario_timer):
    with scenario_timer:
        base = str(tmp_path_factory.mktemp("hermes"))
        fleet = Fleet(base, home=os.path.join(base, "var-lib-ctxlake"))  # not under HOME: the MCP entry must carry it
        agent = HermesAgent(fleet, AGENT, model, "h")
        installed = agent.install()
        model.script("h", _session_one(agent.project))
        agent.run(PROMPT)
        recorded_first = agent.recorded()
        sid = recorded_first[0]["payload"]["session_id"]
        spool_first = fleet.spool("hermes", sid)
        first_bodies = model.bodies("h")
        pass_first = fleet.syncd_pass()
        fleet.maint_once()
        fleet.syncd_once()
        briefing = fleet.cache_file("briefing.json")
        model.script("h", [[tool("mcp__ctxlake__fleet_history", {})], [text("Session 1 fixed the app.")]], tag="h2")
        agent.run("What happened in this repository before?")
        sid2 = agent.recorded()[len(recorded_first)]["payload"]["session_id"]
        second_bodies = model.bodies("h")[len(first_bodies):]
        spool_second = fleet.spool("hermes", sid2)

        acquired = fleet.ctxlake("lease", "acquire", "src/app.py", "--reason", HOLD_REASON, "--holder", HOLDER,
                                 cwd=agent.project)
        assert acquired.returncode == 0, acquired.stdout + acquired.stderr
        fleet.set_policy("block")
        fleet.syncd_once()
        model.script("h", [[tool("patch", {"path": os.path.join(agent.project, "src", "app.py"),
                                           "old_string": "return 2", "new_string": "return 3"})],
                           [text("The patch was refused.")]], tag="h3")
        agent.run("Make main() return 3.")
        recorded = agent.recorded()
        out = {"fleet": fleet, "agent": agent, "installed": installed, "model_url": model.url, "sid": sid, "sid2": sid2,
               "recorded_first": recorded_first, "recorded": recorded, "spool_first": spool_first,
               "spool_second": spool_second, "pass_first": pass_first,
               "briefing": briefing, "s1": first_bodies, "s2": second_bodies,
               "s3": model.bodies("h")[len(first_bodies) + len(second_bodies):]}
    if capture.capturing():
        _save_capture(out)
    return out


def _save_capture(r) -> None:
    fleet, agent = r["fleet"], r["agent"]
    norm = capture.normaliser_for(fleet, agent, [(r["model_url"], "http://127.0.0.1:8765")])
    d = capture.folder("hermes", runtimes.HERMES_VERSION)
    capture.write_json(os.path.join(d, "hooks.json"), norm.value(capture.payloads(r["recorded"])), fleet)
    capture.write_json(os.path.join(d, "hook-env.json"), capture.env_names(r["recorded"]), fleet)
    capture.write_json(os.path.join(d, "state.json"), norm.value(capture.hermes_state(agent.state_db)), fleet)


def test_install_wrote_hooks_and_the_mcp_server_into_config_yaml(run):
    import yaml

    agent, fleet = run["agent"], run["fleet"]
    with open(os.path.join(agent.hermes_home, "config.yaml")) as fh:
        doc = yaml.safe_load(fh)
    assert doc["model"]["provider"] == "custom", "the user's own settings are kept"
    for event in SIX:
        commands = [h["command"] for h in doc["hooks"][event]]
        assert commands[0] == agent.recorder_command(event)
        assert any(os.path.join(ROOT, "hook.py") in c and f"--agent={AGENT}" in c and not c.startswith("env ") for c in commands)
    server = doc["mcp_servers"]["ctxlake"]
    assert server["args"] == [os.path.join(ROOT, "mcp_server.py")]
    assert server["env"]["CTXLAKE_HOME"] == fleet.home and server["env"]["CTXLAKE_AGENT_ID"] == AGENT


def test_all_six_hook_events_are_in_the_spool_with_their_mapping(run):
    fleet, sid = run["fleet"], run["sid"]
    recorded = [x["payload"] for x in run["recorded_first"]]
    assert [p["hook_event_name"] for p in recorded][:2] == SIX[:2] and recorded[-1]["hook_event_name"] == "on_session_end"
    assert sorted({p["hook_event_name"] for p in recorded}) == sorted(SIX)
    assert all(p["session_id"] == sid for p in recorded)
    assert fleet.hook_errors() == ""
    spooled = run["spool_first"]
    types = {"on_session_start": "session_start", "pre_llm_call": "prompt", "pre_tool_call": "tool_call",
             "post_tool_call": "tool_call", "post_llm_call": "assistant", "on_session_end": "session_end"}
    assert [e["event_type"] for e in spooled] == [types[p["hook_event_name"]] for p in recorded]
    for p, e in zip(recorded, spooled):
        assert e["session_id"] == sid and e["agent_id"] == AGENT and e["runtime"] == "hermes" and e["cwd"] == p["cwd"]
        extra = p["extra"]
        if p["hook_event_name"] == "pre_llm_call":
            assert e["content"] == extra["user_message"] == PROMPT
        if p["hook_event_name"] == "post_llm_call":
            assert e["content"] == extra["assistant_response"]
        if p["hook_event_name"] in ("pre_tool_call", "post_tool_call"):
            assert e["message_id"] == extra["tool_call_id"] and e["tool"]["name"] == p["tool_name"]
            assert e["turn_id"] == extra["turn_id"]
            path = p["tool_input"].get("path")
            assert e["tool"]["paths"] == ([path] if path else [])
    ids = [p["extra"]["tool_call_id"] for p in recorded if p["hook_event_name"] == "pre_tool_call"]
    assert ids == [f"call_e2e_h_t{i}_0" for i in range(6)]


def test_extra_result_is_the_recorded_tool_result(run):
    recorded = [x["payload"] for x in run["recorded_first"] if x["payload"]["hook_event_name"] == "post_tool_call"]
    spooled = {e["message_id"]: e for e in run["spool_first"] if e["event_type"] == "tool_call" and "exit_code" in e["tool"]}
    assert len(spooled) == len(recorded) == 6
    for p in recorded:
        raw = p["extra"]["result"]
        assert isinstance(raw, str), "Hermes sends extra.result as JSON text"
        e = spooled[p["extra"]["tool_call_id"]]
        if p["tool_name"] == "terminal":
            decoded = json.loads(raw)
            assert e["tool"]["result"] == decoded["output"] and e["tool"]["exit_code"] == decoded["exit_code"]
        elif p["tool_name"].startswith("mcp__"):
            assert json.loads(json.loads(raw)["result"])["agent_id"] == AGENT and e["tool"]["exit_code"] == 0
        else:
            assert e["tool"]["result"] == raw and e["tool"]["exit_code"] == 0
        assert e["tool"]["duration_ms"] == int(p["extra"]["duration_ms"])
    failing = [e for e in spooled.values() if json.loads(e["tool"]["input"]) == {"command": FAILING}]
    assert failing and failing[0]["tool"]["exit_code"] == 2


def test_the_mcp_call_went_through_our_server_and_its_result_reached_the_model(run):
    answer = _mcp_json(tool_result(run["s1"], "call_e2e_h_t4_0")["content"])
    assert answer["fleet_id"] == "e2e" and answer["agent_id"] == AGENT and "advisory" in answer


def test_pre_llm_call_briefing_reached_the_model_and_mcp_reads_the_right_cache(run):
    briefing = run["briefing"]
    assert briefing and "Fix the app" in briefing["text"]
    first = run["s2"][0]
    (user,) = [m for m in first["messages"] if m["role"] == "user"]
    assert user["content"].startswith("What happened in this repository before?")
    assert "<ctxlake-briefing>" in user["content"] and PROMPT in user["content"]
    assert "<ctxlake-briefing>" not in json.dumps(run["s1"][0])
    prompt = [e for e in run["spool_second"] if e["event_type"] == "prompt"]
    assert prompt and prompt[0]["content"] == "What happened in this repository before?"
    assert prompt[0].get("injected_context", []) == briefing["claim_ids"]
    history = _mcp_json(tool_result(run["s2"], "call_e2e_h2_t0_0")["content"])
    assert run["sid"] in json.dumps(history), history


def test_import_hermes_reads_the_runs_state_db(run, tmp_path):
    fleet, agent, sid = run["fleet"], run["agent"], run["sid"]
    other = str(tmp_path / "import-home")
    r = fleet.ctxlake("import", "hermes", env=agent.env(CTXLAKE_HOME=other))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 session(s)" in r.stdout, r.stdout
    imported = read_ndjson(os.path.join(other, "spool", "import", "*.ndjson"))
    mine = [e for e in imported if e["session_id"] == sid]
    calls = {e["message_id"]: e["tool"].get("exit_code") for e in mine if e["event_type"] == "tool_call"}
    hooked = {e["message_id"]: e["tool"]["exit_code"] for e in run["spool_first"]
              if e["event_type"] == "tool_call" and "exit_code" in e["tool"]}
    assert calls == hooked
    assert [e["content"] for e in mine if e["event_type"] == "prompt"] == [PROMPT]


def test_the_session_appears_in_ctxlake_sessions_with_its_commands_and_failure(run):
    r = run["fleet"].ctxlake("sessions", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    (s,) = [s for s in json.loads(r.stdout) if s["session_id"] == run["sid"]]
    assert s["agent_id"] == AGENT and s["runtime"] == "hermes"
    cmds = {c["command"]: c["exit_code"] for c in s["commands"] if c["tool"] == "terminal"}
    assert cmds == {"echo hello > out.txt && cat out.txt": 0, FAILING: 2}
    assert s["commands_failed"] == 1
    assert {os.path.basename(f) for f in s["files_touched"]} >= {"app.py", "notes.md"}


def test_block_policy_refuses_a_patch_through_hermes_own_answer(run):
    refused = tool_result(run["s3"], "call_e2e_h3_t0_0")["content"]
    assert f"held by {HOLDER} ({HOLD_REASON})" in refused and "advisory" in refused
    assert run["agent"].file("src/app.py") == "def main():\n    return 2\n", "session 1's patch stands, session 3's did not land"
    (post,) = [x["payload"] for x in run["recorded"] if x["payload"]["hook_event_name"] == "post_tool_call"
               and x["payload"]["extra"]["tool_call_id"] == "call_e2e_h3_t0_0"]
    assert post["extra"]["status"] == "blocked" and post["extra"]["error_type"] == "plugin_block"
    (env,) = [e for e in run["fleet"].spool("hermes", post["session_id"])
              if e.get("message_id") == "call_e2e_h3_t0_0" and "exit_code" in e["tool"]]
    assert env["tool"]["exit_code"] == 1 and env["tool"]["result"] == post["extra"]["error_message"]


def test_payload_shapes_match_the_committed_capture(run):
    path = os.path.join(capture.folder("hermes", runtimes.HERMES_VERSION), "hooks.json")
    assert os.path.exists(path), f"no capture for Hermes {runtimes.HERMES_VERSION}: run `make e2e-capture`"
    live = capture.shapes(capture.payloads(run["recorded"]))
    assert live == capture.shapes(capture.load_json(path)), "Hermes' hook payloads changed shape: re-capture"


def test_the_seal_reconciled_the_session_with_state_db_and_found_nothing_missing(run):
    """The transcript backstop reads Hermes' state.db at the seal (the .done names it); with
    every hook run it fills nothing: hooks and state.db give each event the same id."""
    p = run["pass_first"]
    assert p["errors"] == 0 and p["sealed"] == 1, p
    print(f"\nHermes seal: backstop filled {p['backstop_filled']} event(s)")
    assert p["backstop_filled"] == 0
