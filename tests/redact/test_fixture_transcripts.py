"""What fires on the real Claude Code fixture transcripts (tests/fixtures/claude-transcripts).

The fixtures contain no live secrets. Every field on which a rule fires is listed, with the
judgement made after reading it, in ``fixture_text.JUDGED_HITS``; a new hit fails this test
until someone reads it and either fixes the rule or adds a judgement.
"""
from __future__ import annotations

from lib import redact
from tests.redact.fixture_text import JUDGED_HITS, iter_fields


def _hits():
    out = {}
    for f in iter_fields():
        text, oc = redact.scrub(f.text, is_tool_output=f.is_tool)
        if oc.status != "clean":
            out[(f.file, f.line, f.field)] = (oc, f.text, text)
    return out


def test_fixture_hits_are_exactly_the_judged_ones():
    hits = _hits()
    assert set(hits) == set(JUDGED_HITS)
    for key, (oc, _, _) in hits.items():
        assert oc.status == "redacted"  # nothing in the fixtures is worth quarantining
        assert oc.rules == JUDGED_HITS[key][0]


def test_fixtures_are_mostly_clean_and_prose_entirely():
    fields = list(iter_fields())
    assert len(fields) > 1000
    prose = [f for f in fields if not f.is_tool]
    assert all(redact.scrub(f.text)[1] == redact.CLEAN for f in prose)


def test_judged_hits_replace_only_high_entropy_runs():
    for key, (_, before, after) in _hits().items():
        assert len(after) < len(before)
        assert "[ctxlake:redacted-secret]" in after
        # everything outside the placeholders is unchanged
        pieces = after.split("[ctxlake:redacted-secret]")
        pos = 0
        for piece in pieces:
            i = before.find(piece, pos)
            assert i >= 0, key
            pos = i + len(piece)


def test_tool_use_ids_and_session_ids_survive():
    """The tool-use id is the join key to transcripts (docs/design.md §5): it must never be
    redacted, nor the session UUIDs and paths around it."""
    for f in iter_fields():
        if f.field == "tool.input" and "toolu_01" in f.text:
            out, _ = redact.scrub(f.text, is_tool_output=True)
            assert out.count("toolu_01") == f.text.count("toolu_01")


def test_fixture_home_paths_use_placeholder_user_names():
    """Reference bug 12.2 #32: a user name leaked through Claude's slugged transcript path.
    Both forms — ``/Users/<name>`` and ``-Users-<name>-`` (likewise ``/home``) — must carry a
    placeholder name in every fixture."""
    import os
    import re

    from tests.conftest import FIXTURES

    pattern = re.compile(r"(?:[/\\](?:Users|home)[/\\]+|(?<=[/\\\"-])-(?:Users|home)-)([A-Za-z0-9._]+)")
    names = set()
    for folder, _, files in os.walk(FIXTURES):
        for name in files:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as fh:
                names.update(pattern.findall(fh.read()))
    assert names <= {"dev", "USER", "user", "node", "..."}, names  # "/Users/..." is the source's own elision
