"""``ctxlake init`` writes a ``ctxlake.toml`` that reads back as what was given, whatever the
fleet id holds (issue 20: a fleet id with ``"`` or ``\\`` used to be at the mercy of hand quoting;
a character outside the Basic Multilingual Plane came out as a JSON surrogate pair, which TOML
refuses)."""
from __future__ import annotations

import json
import os
import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st

from lib import config
from tests.cli.test_errors import Box

AWKWARD = ['team "a"', "team\\a", 'a\\"b', "tab\there", "new\nline", "emoji 🛰 fleet", "del\x7f", "nul\x00"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(min_size=1), st.text(min_size=1), st.one_of(st.none(), st.text(min_size=1)))
def test_render_toml_reads_back_as_itself(store, fleet, agent):
    data = tomllib.loads(config.render_toml(store, fleet, agent))
    assert data["store"] == store and data["fleet_id"] == fleet and data.get("agent_id") == agent
    assert data["leases"] == {"policy": "warn", "ttl_secs": 300} and data["summarize"] == {"mode": "agent"}


def test_each_awkward_fleet_id_loads_through_the_config_loader(tmp_path):
    for i, fleet in enumerate(AWKWARD):
        path = tmp_path / f"c{i}.toml"
        path.write_text(config.render_toml("file:///tmp/lake", fleet, 'bob "the" \\ agent'), encoding="utf-8")
        cfg = config.load(environ={"CTXLAKE_HOME": str(tmp_path / "home")}, path=str(path))
        assert (cfg.fleet_id, cfg.agent_id) == (fleet, 'bob "the" \\ agent')


def test_init_with_a_quote_and_a_backslash_in_the_fleet_id_writes_a_config_status_reads(tmp_path):
    box = Box(tmp_path)
    fleet = 'team "a" \\ b'
    r = box.run("init", "--store", "file://" + os.path.join(box.tmp, "lake"), "--fleet", fleet)
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(open(box.config, encoding="utf-8").read())["fleet_id"] == fleet
    r = box.run("status", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fleet_id"] == fleet
