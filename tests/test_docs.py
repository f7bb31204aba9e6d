"""The operator docs stay true to the code (docs/design.md §14): every ``ctxlake <verb> --flag`` the
docs mention exists in that verb's ``--help``; every verb of ``ctxlake --help`` is documented;
the knob table in docs/operations.md equals lib/config.py's keys and defaults; the MCP tools in
docs/mcp.md are the running server's ``tools/list``; redaction rule names in docs/security.md
exist in lib/redact/; relative links resolve; no machine path leaks into a page.

Only code (inline spans and fenced blocks) is parsed for commands, so prose may say "ctxlake
does not ..." freely.
"""
from __future__ import annotations

import dataclasses
import functools
import glob
import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
OPERATOR_PAGES = [os.path.join(ROOT, p) for p in ("README.md", "docs/architecture.md", "docs/operations.md",
                                                     "docs/security.md", "docs/runtimes.md", "docs/memory.md")]


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _code_fragments(text: str) -> list[str]:
    """Each line of every fenced block, and every inline code span outside fences."""
    out, prose, fence = [], [], None
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else line
            continue
        (out if fence is not None else prose).append(line)
    out += re.findall(r"`([^`\n]+)`", "\n".join(prose))
    return out


# `ctxlake <verb> ...` or `.../ctxlake.py <verb> ...`, not `kubectl -n ctxlake get ...`
_CMD = re.compile(r"(?:^|(?<=[\s`(/]))ctxlake(?:\.py)?[ \t]+([a-z][a-z-]*)((?:[ \t]+[^\s#|;&]+)*)")


def _commands(path: str) -> list[tuple[str, list[str], str]]:
    found = []
    for frag in _code_fragments(_read(path)):
        for m in _CMD.finditer(frag):
            before = frag[:m.start()].rstrip()
            if before.endswith(("-n", "--namespace", "-l", "runpip")):  # `pipx runpip ctxlake`: the tool's venv
                continue
            flags = re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(2))
            found.append((m.group(1), flags, frag.strip()))
    return found


@functools.lru_cache(maxsize=None)
def _help(*argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    r = subprocess.run([sys.executable, os.path.join(ROOT, "ctxlake.py"), *argv, "--help"], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 0, (argv, r.stderr[-2000:])
    return r.stdout


@functools.lru_cache(maxsize=None)
def _verbs() -> tuple[str, ...]:
    m = re.search(r"\{([a-z,-]+)\}", _help())
    assert m, _help()
    return tuple(m.group(1).split(","))


def _all_commands():
    return [(os.path.relpath(p, ROOT), *c) for p in PAGES for c in _commands(p)]


def test_the_parser_finds_commands():
    cmds = _all_commands()
    assert len(cmds) > 40
    assert any(v == "claims" and "--explain" in f for _, v, f, _ in cmds)


@pytest.mark.parametrize("page,verb,flags,fragment", _all_commands(), ids=lambda x: x if isinstance(x, str) else None)
def test_documented_command_exists_with_its_flags(page, verb, flags, fragment):
    assert verb in _verbs(), f"{page}: `{fragment}` uses verb {verb!r}; ctxlake has {_verbs()}"
    text = _help(verb)
    for flag in flags:
        assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), \
            f"{page}: `{fragment}` uses {flag}, which `ctxlake {verb} --help` does not list"


def test_every_verb_is_documented_and_has_help():
    documented = {v for _, v, _, _ in _all_commands()}
    for verb in _verbs():
        assert verb in documented, f"ctxlake {verb} is mentioned in no doc page"
        assert _help(verb).strip()
    assert re.search(r"\n    \w+ {2,}\S", _help()), "every verb has a one-line help"


# -- knobs ---------------------------------------------------------------------------------

def _expected_knobs() -> dict[str, str]:
    from lib import config
    from lib.paths import Paths

    out = {}
    skip = {"paths", "source", "configured", "warnings", "leases", "sync", "lake", "summarize_mode"}
    for f in dataclasses.fields(config.Config):
        if f.name in skip:
            continue
        out[f.name] = None  # defaults of top-level keys are checked one by one below
    out["[summarize] mode"] = config.Config.__dataclass_fields__["summarize_mode"].default
    for section, cls in (("leases", config.LeaseConfig), ("sync", config.SyncConfig), ("lake", config.LakeConfig)):
        for f in dataclasses.fields(cls):
            out[f"[{section}] {f.name}"] = str(f.default)
    home = Paths("$CTXLAKE_HOME", "$CTXLAKE_HOME/spool", "$CTXLAKE_HOME/cache")
    out["store"] = home.default_store_url
    out["fleet_id"] = config.load({}, path=os.devnull + ".missing").fleet_id
    out["agent_id"] = "host name"
    out["live_store"] = "none (the `store`)"
    return out


def _knob_rows() -> dict[str, str]:
    text = _read(os.path.join(ROOT, "docs", "operations.md"))
    section = text.split("## Every knob", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([^`]+)` \| (.+?) \|", line)
        if m:
            cell = m.group(2).strip()
            code = re.fullmatch(r"`([^`]*)`", cell)
            rows[m.group(1)] = code.group(1) if code else cell
    return rows


def test_knob_table_lists_exactly_the_config_keys():
    assert set(_knob_rows()) == set(_expected_knobs())


def test_knob_table_defaults_equal_the_code():
    rows, expected = _knob_rows(), _expected_knobs()
    for key, default in expected.items():
        assert rows[key] == default, f"docs/operations.md says {key} defaults to {rows[key]!r}; lib/config.py: {default!r}"


def test_config_load_matches_documented_defaults():
    from lib import config

    cfg = config.load({"CTXLAKE_HOME": "/nonexistent-ctxlake-home"}, path=os.devnull + ".missing")
    assert cfg.store == "file:///nonexistent-ctxlake-home/lake"
    assert cfg.fleet_id == "default" and cfg.live_store is None and cfg.agent_id == config.default_agent_id()


def test_environment_overrides_named_in_docs_exist_in_code():
    code = _read(os.path.join(ROOT, "lib", "config.py")) + _read(os.path.join(ROOT, "lib", "paths.py"))
    code += _read(os.path.join(ROOT, "lib", "hookproc.py")) + _read(os.path.join(ROOT, "lib", "failures.py"))
    docs = "".join(_read(p) for p in OPERATOR_PAGES)
    for var in set(re.findall(r"\bCTXLAKE_[A-Z_]+\b", docs)):
        assert var in code, f"{var} is documented but no code reads it"


# -- MCP -----------------------------------------------------------------------------------

def test_mcp_doc_lists_the_servers_tools(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=str(tmp_path), CTXLAKE_CONFIG=str(tmp_path / "none.toml"))
    frames = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
              {"jsonrpc": "2.0", "method": "notifications/initialized"},
              {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    r = subprocess.run([sys.executable, os.path.join(ROOT, "mcp_server.py")], input="".join(json.dumps(f) + "\n" for f in frames),
                       capture_output=True, text=True, env=env, timeout=60)
    answers = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    listed = next(a for a in answers if a.get("id") == 2)["result"]["tools"]
    section = _read(os.path.join(ROOT, "docs", "mcp.md")).split("## Tools", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", section, flags=re.M)
    assert documented == [t["name"] for t in listed]


# -- security, links, hygiene --------------------------------------------------------------

def test_redaction_rule_names_in_security_doc_exist():
    code = "".join(_read(os.path.join(ROOT, f)) for f in _tracked("lib/redact/*.py"))
    text = _read(os.path.join(ROOT, "docs", "security.md"))
    table = text.split("## Redaction", 1)[1].split("### ", 1)[0]
    names = set()
    for line in table.splitlines():
        if line.startswith("|") and line.count("|") >= 6:
            names.update(re.findall(r"`([a-z0-9_]+)`", line.rstrip(" |").rsplit("|", 1)[-1]))
    assert len(names) >= 10
    for name in names:
        assert f'"{name}"' in code, f"rules_fired name {name!r} is not in lib/redact/"


def test_redaction_limits_in_docs_match_the_code():
    from lib import redact

    text = _read(os.path.join(ROOT, "docs", "security.md"))
    assert redact.MAX_SCAN_BYTES == 256 * 1024 and "256 KiB" in text
    assert redact.ENTROPY_MIN_LEN == 32 and f"≥ {redact.ENTROPY_THRESHOLD} bits/char" in text
    assert f"≥ {redact.ENTROPY_THRESHOLD_MIXED}" in text


def test_iam_policies_are_valid_json():
    text = _read(os.path.join(ROOT, "docs", "security.md"))
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.S)
    policies = [json.loads(b) for b in blocks if '"Statement"' in b]
    assert len(policies) >= 3
    maint = policies[1]  # maint deletes only what retention and the migration name (docs/lake.md)
    maint_deletes = [r for s in maint["Statement"] if "s3:DeleteObject" in json.dumps(s["Action"]) for r in s["Resource"]]
    assert sorted(r.split("PREFIX/", 1)[1] for r in maint_deletes) == [
        "compacted/FLEET/*", "compacted/fleet=FLEET/*", "sessions/fleet=FLEET/*/seg-*.parquet",
        "snapshot/FLEET/*.sqlite"]
    syncd_deletes = [s for s in policies[0]["Statement"] if "s3:DeleteObject" in json.dumps(s["Action"])]
    assert [s["Resource"] for s in syncd_deletes] == ["arn:aws:s3:::BUCKET/PREFIX/live/FLEET/agents/*"]
    assert all(r.endswith("_meta/probe/*") for s in policies[2]["Statement"] if "s3:DeleteObject" in json.dumps(s["Action"])
               for r in ([s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"]))


def test_store_deletes_are_the_documented_ones():
    """syncd/maint delete only what docs/security.md grants: grep every ``.delete(`` call."""
    allowed = {"lib/doctor.py", "lib/live/fleet.py", "lib/live/presence.py", "lib/store/routed.py", "lib/lake.py", "lib/retention.py",
               "lib/maintenance.py"}
    for path in glob.glob(os.path.join(ROOT, "**", "*.py"), recursive=True):
        rel = os.path.relpath(path, ROOT)
        if rel.startswith(("tests", "bench", ".venv", "lib/store/")) and rel != "lib/store/routed.py":
            continue
        if re.search(r"\bstore\.delete\(|\.delete\(\s*(key|hb|keys)", _read(path)):
            assert rel in allowed, f"{rel} deletes store keys; update docs/security.md's IAM policies"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_relative_links_resolve(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", _read(page)):
        if "://" in target:
            continue
        assert os.path.exists(os.path.join(os.path.dirname(page), target)), f"{page}: broken link {target}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_machine_paths(page):
    text = _read(page)
    assert ROOT not in text
    assert not re.search(r"/(work|home/[a-z]+|Users/[A-Za-z]+)/", text.replace("/home/dev/projects/demo", ""))


# -- citations name documents that ship with the code (docs/design.md §14) ----------------------

def _tracked(*patterns):
    import subprocess

    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if os.path.isfile(os.path.join(ROOT, f))]


def _design_sections() -> set:
    import re

    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as fh:
        return {int(m.group(1)) for m in re.finditer(r"^## (\d+)\. ", fh.read(), re.M)}


def test_every_citation_names_a_document_in_the_repository():
    """Code and docs cite docs/design.md (by section) and the other pages of docs/; never a
    design document, style guide or reference spec that is not in the repository."""
    import re

    sections = _design_sections()
    outside = re.compile(r"\b(?:DESIGN|STYLE)\.md\b|\breference(?: \w+)? §|\bspec §|\bseeds/")
    cited = re.compile(r"\b(?:docs/)?design\.md\s*§\s?(\d+)")
    page = re.compile(r"\bdocs/([A-Za-z_-]+\.md)")
    link = re.compile(r"\]\(([A-Za-z_-]+\.md)(?:#[^)]*)?\)")
    bad = []
    for f in _tracked("*.py", "*.md", "Makefile", "Dockerfile"):
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        bad += [f"{f}: cites {m.group(0)!r}, which is not in the repository" for m in outside.finditer(text)]
        bad += [f"{f}: cites docs/design.md §{m.group(1)}, which does not exist"
                for m in cited.finditer(text) if int(m.group(1)) not in sections]
        if f.startswith(("lib/", "bench/", "docs/", "README")) or "/" not in f:
            bad += [f"{f}: cites docs/{m.group(1)}, which does not exist" for m in page.finditer(text)
                    if not os.path.exists(os.path.join(ROOT, "docs", m.group(1)))]
        if f.startswith("docs/"):
            bad += [f"{f}: links {m.group(1)}, which does not exist" for m in link.finditer(text)
                    if not os.path.exists(os.path.join(ROOT, "docs", m.group(1)))]
    assert not bad, "\n".join(bad)


def test_the_design_contract_is_cited_and_lists_every_role():
    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as fh:
        design = fh.read()
    for role in ("hook.py", "mcp_server.py", "syncd.py", "maint.py", "ctxlake.py", "ctxctl.py", "fleet_operator.py"):
        assert f"`{role}`" in design, role
    assert _design_sections() >= set(range(1, 15))


def test_architecture_lists_every_lib_module():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as fh:
        text = fh.read()
    missing = [f for f in _tracked("lib/*.py", "lib/**/*.py") if f"| `{f}` |" not in text]
    assert not missing, f"docs/architecture.md 'Modules' lacks {missing}"
