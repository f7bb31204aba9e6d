"""docs/mcp.md stays true to the server: the documented tools and arguments are the listed ones,
in order, and the error codes and spool kinds the code uses are all documented."""
from __future__ import annotations

import os
import re

from lib import jsonrpc, mcp_tools
from tests.conftest import ROOT

DOC = os.path.join(ROOT, "docs", "mcp.md")


def _doc() -> str:
    with open(DOC, encoding="utf-8") as fh:
        return fh.read()


def _tool_rows() -> dict[str, str]:
    section = _doc().split("## Tools", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `(\w+)` \|(.*)$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_documented_tools_are_the_listed_tools_in_order():
    assert list(_tool_rows()) == list(mcp_tools.TOOL_NAMES)
    assert "memory_write" not in _tool_rows()


def test_every_argument_is_documented_with_its_tool():
    rows = _tool_rows()
    for name, schema in mcp_tools.SCHEMAS.items():
        args_cell = rows[name].split("|")[0]
        for prop in schema["properties"]:
            assert f"`{prop}`" in args_cell, (name, prop)
        for enum_prop in (p for p in schema["properties"].values() if "enum" in p):
            for value in enum_prop["enum"]:
                assert f"`{value}`" in rows[name], (name, value)


def test_error_codes_and_spool_kinds_are_documented():
    doc = _doc()
    for code in (jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST, jsonrpc.METHOD_NOT_FOUND, jsonrpc.INVALID_PARAMS):
        assert f"`{code}`" in doc
    for version in jsonrpc.PROTOCOL_VERSIONS:
        assert f"`{version}`" in doc
    for kind in ("lease_request", "lease_release", "handoff", "proposed"):
        assert f"| `{kind}` |" in doc
    assert str(mcp_tools.ROW_CEILING) in doc and str(mcp_tools.EVIDENCE_MAX) in doc
