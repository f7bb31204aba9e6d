"""Import is idempotent and converges (issue #16 item 2): for real transcripts cut while they
grow (at any byte: a torn last line too), imported in any order, any number of times, the lake
equals the lake of importing each final file once — the latest figures, one start and one end
per session, also for a session spread over several files."""
from __future__ import annotations

import json
import os
from collections import Counter
from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib import identity
from lib.importers.claude_code import import_path, iter_envelopes
from tests.conftest import FIXTURES
from tests.pipeline import lakeutil

T = os.path.join(FIXTURES, "claude-transcripts")
FILES = (
    # one session over two files: a sub-agent transcript and a compaction agent's, same session id
    "spotter__8463c716.subagents.agent-a7be2f0.jsonl",
    "spotter__8463c716.subagents.agent-acompact-f46190.jsonl",
    "spotter__tool_heavy.jsonl",
    "spotter__short.jsonl",
    "claude-reliability__stop-hook-reflection-first-stop.transcript.jsonl",
)


@lru_cache(maxsize=None)
def _bytes(name: str) -> bytes:
    with open(os.path.join(T, name), "rb") as fh:
        return fh.read()


_TMP = {}


@lru_cache(maxsize=256)
def _import(name: str, cut: int) -> tuple:
    """The envelopes of the first ``cut`` bytes of a real transcript (canonical JSON)."""
    import tempfile

    d = _TMP.setdefault("dir", tempfile.mkdtemp(prefix="ctxlake-convergence-"))
    path = os.path.join(d, f"{name}.{cut}")
    with open(path, "wb") as fh:
        fh.write(_bytes(name)[:cut])
    envs = [e for _, e in iter_envelopes(path, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)]
    os.unlink(path)
    return tuple(json.dumps(e, sort_keys=True) for e in envs)


def _lake(imports) -> set:
    envs = [json.loads(s) for name, cut in imports for s in _import(name, cut)]
    return {json.dumps(e, sort_keys=True) for e in identity.dedupe(envs)}


def _final():
    return [(n, len(_bytes(n))) for n in FILES]


@st.composite
def histories(draw):
    """Every file's final version once, plus growing prefixes and repeats, shuffled."""
    steps = list(_final())
    for _ in range(draw(st.integers(0, 6))):
        name = draw(st.sampled_from(FILES))
        steps.append((name, draw(st.integers(1, len(_bytes(name))))))
    steps += draw(st.lists(st.sampled_from(_final()), max_size=2))
    return draw(st.permutations(steps))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_any_history_of_growing_files_converges_to_the_final_lake(history):
    assert _lake(history) == _lake(_final())


def test_the_final_lake_has_one_start_and_end_per_session_and_the_latest_figures():
    rows = [json.loads(s) for s in _lake(_final())]
    per = Counter((e["session_id"], e["event_type"]) for e in rows if e["event_type"] in ("session_start", "session_end"))
    assert set(per.values()) == {1}
    sessions = {e["session_id"] for e in rows}
    assert {sid for sid, _ in per} == sessions
    # the two 8463c716 files are one session
    assert sum(1 for sid in sessions if sid.startswith("8463c716")) == 1
    grown = [(FILES[2], len(_bytes(FILES[2])) // 2), (FILES[2], len(_bytes(FILES[2])))]
    half_then_full = [json.loads(s) for s in _lake(grown)]
    full_then_half = [json.loads(s) for s in _lake(grown[::-1])]
    tokens = lambda rows: sum((e.get("usage") or {}).get("output_tokens", 0) for e in rows)
    assert tokens(half_then_full) == tokens(full_then_half) == _independent_output_tokens(FILES[2])


def _independent_output_tokens(name: str) -> int:
    """Output tokens of a transcript counted without the importer: the last usage written for
    each API message id."""
    last = {}
    for line in _bytes(name).splitlines():
        rec = json.loads(line)
        if rec.get("type") == "assistant" and isinstance(rec["message"].get("usage"), dict):
            last[rec["message"].get("id") or rec.get("requestId")] = rec["message"]["usage"].get("output_tokens", 0)
    return sum(last.values())


def test_a_grown_transcript_reimported_through_the_pipeline_gives_the_latest_figures(home, tmp_path):
    """The same through syncd's shipping and maint's compaction, on the real store code."""
    paths, store, cfg = lakeutil.setup(home)
    name = "spotter__8463c716.subagents.agent-a7be2f0.jsonl"
    data = _bytes(name)
    src = tmp_path / "8463c716.jsonl"
    for cut in (len(data) // 3, len(data), len(data) // 2):  # grows, then an old copy comes back
        src.write_bytes(data[:cut])
        import_path(str(src), paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
        lakeutil.ship_and_maint(paths, store, cfg)
    compact = (tmp_path / "acompact.jsonl")
    compact.write_bytes(_bytes("spotter__8463c716.subagents.agent-acompact-f46190.jsonl"))
    import_path(str(compact), paths, fleet_id=lakeutil.FLEET, agent_id=lakeutil.AGENT)
    lakeutil.ship_and_maint(paths, store, cfg)
    rows = lakeutil.compacted(store)
    assert len(rows) == len({identity.key(e) for e in rows})
    want = _lake([(name, len(data)), ("spotter__8463c716.subagents.agent-acompact-f46190.jsonl",
                                      len(_bytes("spotter__8463c716.subagents.agent-acompact-f46190.jsonl")))])
    assert {json.dumps(e, sort_keys=True) for e in rows} == want
    d = list(lakeutil.digests(store).values())
    assert len(d) == 1
    assert d[0]["usage"]["output_tokens"] == _independent_output_tokens(name) + _independent_output_tokens(
        "spotter__8463c716.subagents.agent-acompact-f46190.jsonl")
