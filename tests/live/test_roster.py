"""Heartbeats and the roster: carry-forward, pruning by the store clock, rebuild cadence, CAS
publication with "412 = use theirs", join/leave edits (docs/design.md §9)."""
from __future__ import annotations

import json

from lib.live import presence
from lib.store.memory import MemoryStore
from tests.live.conftest import REPO_ID

F = "fleet-r"


def hb(agent, updated_at, **kw):
    return {"agent_id": agent, "fleet_id": F, "runtime": "claude_code", "paths": [], "updated_at": updated_at, **kw}


def test_heartbeat_overwrite_carries_forward_fields_it_did_not_change():
    # reference bug: a heartbeat overwrite cleared session_id/task/paths
    prev = hb("a", 100, session_id="s1", task="fix the lexer", paths=["src/lexer.py"], repo=REPO_ID)
    nxt = presence.next_heartbeat(prev, {"agent_id": "a", "session_id": None, "task": None, "paths": None,
                                       "branch": "main"}, 160)
    assert nxt["session_id"] == "s1" and nxt["task"] == "fix the lexer" and nxt["paths"] == ["src/lexer.py"]
    assert nxt["branch"] == "main" and nxt["repo"] == REPO_ID and nxt["updated_at"] == 160
    assert None not in nxt.values()


def test_heartbeat_changes_replace_what_changed():
    nxt = presence.next_heartbeat(hb("a", 100, session_id="s1", task="old"), {"session_id": "s2", "task": "new"}, 200)
    assert nxt["session_id"] == "s2" and nxt["task"] == "new"


def test_touched_files_merge_newest_first_within_the_window():
    old = [{"repo": "r", "path": "a.py", "at": 100, "write": True}, {"repo": "r", "path": "gone.py", "at": 10}]
    new = [{"repo": "r", "path": "a.py", "at": 150, "tool": "Read", "write": False}, {"repo": "r", "path": "b.py", "at": 160}]
    out = presence.merge_touched(old, new, now=200, window=120)
    assert [t["path"] for t in out] == ["b.py", "a.py"]
    assert out[1]["at"] == 150 and out[1]["write"] is True  # an edit stays an edit
    assert presence.paths_of(out) == ["b.py", "a.py"]


def test_readers_drop_entries_older_than_the_ttl_by_the_store_clock():
    entries = [hb("fresh", 1000), hb("stale", 600), hb("ended", 1000, ended=True), {"agent_id": ""}, "junk",
               hb("fresh", 900)]
    out = presence.live_agents(entries, now=1200, ttl=300)
    assert [a["agent_id"] for a in out] == ["fresh"] and out[0]["updated_at"] == 1000


def test_roster_rebuild_is_due_at_most_every_interval_plus_jitter():
    r = {"agents": [], "built_at": 1000}
    assert not presence.rebuild_due(r, 1059, 60, 0)
    assert presence.rebuild_due(r, 1060, 60, 0)
    assert not presence.rebuild_due(r, 1065, 60, 6.5)
    assert presence.rebuild_due(None, 0, 60) and presence.rebuild_due({"agents": "x"}, 0, 60)
    assert presence.rebuild_due({"agents": [], "built_at": "?"}, 0, 60)


def test_edit_puts_in_joiners_and_takes_out_leavers_without_a_rebuild():
    r = {"agents": [hb("a", 1000), hb("b", 1000)], "built_at": 1000, "built_by": "x"}
    out = presence.edit_roster(r, upserts=[hb("c", 1010)], removals=["b"], now=1010, ttl=300)
    assert [a["agent_id"] for a in out["agents"]] == ["a", "c"] and out["built_at"] == 1000 and out["edited_at"] == 1010


def test_rebuild_publishes_by_cas_and_a_412_means_use_theirs(store_clock):
    store = MemoryStore(now=store_clock)
    presence.write_heartbeat(store, F, hb("a", store_clock()))
    built, etag, published = presence.rebuild(store, F, etag=None, ttl=300, built_by="host-1")
    assert published and [a["agent_id"] for a in built["agents"]] == ["a"]
    # host-2 read the same version; host-1 rebuilds first; host-2's CAS loses and takes host-1's
    store_clock.advance(61)
    presence.write_heartbeat(store, F, hb("b", store_clock()))
    first, _, _ = presence.rebuild(store, F, etag=etag, ttl=300, built_by="host-1")
    theirs, _, published2 = presence.rebuild(store, F, etag=etag, ttl=300, built_by="host-2")
    assert not published2 and theirs["built_by"] == "host-1" and theirs == first
    assert json.loads(store.get(presence.roster_key(F)).data)["built_by"] == "host-1"


def test_rebuild_leaves_out_stale_heartbeats(store_clock):
    store = MemoryStore(now=store_clock)
    presence.write_heartbeat(store, F, hb("old", store_clock() - 400))
    presence.write_heartbeat(store, F, hb("new", store_clock() - 10))
    store.put(presence.agents_prefix(F) + "junk.json", b"{not json")
    built, _, _ = presence.rebuild(store, F, etag=None, ttl=300, built_by="h")
    assert [a["agent_id"] for a in built["agents"]] == ["new"]


def test_edit_retries_on_a_lost_race(store_clock):
    store = MemoryStore(now=store_clock)
    presence.rebuild(store, F, etag=None, ttl=300, built_by="h")
    real_put, state = store.put, {"raced": False}

    def racing_put(key, data, mode="overwrite"):
        if not state["raced"]:
            state["raced"] = True
            real_put(key, json.dumps({"agents": [hb("z", store_clock())], "built_at": store_clock()}).encode())
        return real_put(key, data, mode)

    store.put = racing_put
    out, _ = presence.edit(store, F, upserts=[hb("c", store_clock())], ttl=300)
    assert [a["agent_id"] for a in out["agents"]] == ["c", "z"]


def test_recent_touches_names_other_live_agents_edits_of_the_same_file(git_repo):
    import os

    view = {"store_time": 5000.0, "refreshed_at": 5000.0, "presence_ttl_secs": 300, "agents": [
        hb("bob", 4990, task="split the lexer", touched=[
            {"repo": REPO_ID, "path": "src/parser/lexer.py", "at": 4800, "tool": "Edit", "write": True},
            {"repo": REPO_ID, "path": "src/app.py", "at": 4900, "tool": "Read", "write": False}]),
        hb("carol", 4000, touched=[{"repo": REPO_ID, "path": "src/parser/lexer.py", "at": 3990, "write": True}]),
        hb("alice", 4990, touched=[{"repo": REPO_ID, "path": "src/parser/lexer.py", "at": 4980, "write": True}]),
        hb("dave", 4990, touched=[{"repo": "github.com/other/repo", "path": "src/parser/lexer.py", "at": 4980,
                                   "write": True}]),
    ]}
    target = os.path.join(git_repo, "src", "parser", "lexer.py")
    hits = presence.recent_touches(view, "alice", [target], None, local_now=5000.0)
    assert [(h["agent_id"], h["ago_secs"]) for h in hits] == [("bob", 200)]
    assert presence.recent_touches(view, "alice", ["src/app.py"], git_repo, local_now=5000.0) == []  # only a read
    msg = presence.touch_message(hits)
    assert "bob edited src/parser/lexer.py 3 min ago (task: split the lexer)" in msg and "advisory" in msg
