"""The false-positive floor: each category the redactor trades recall against, decided by a test
(docs/design.md §7 "must stay clean"; docs/security.md, Redaction's tested list). Everything is scanned as tool
output, the strictest mode."""
from __future__ import annotations

import pytest

from lib import redact
from tests.redact.negatives import MUST_STAY_CLEAN, hard_negatives

_HARD = hard_negatives(seed=3, n=60)


@pytest.mark.parametrize("text", MUST_STAY_CLEAN)
def test_reference_must_stay_clean_list(text):
    assert redact.scrub(text, is_tool_output=True) == (text, redact.CLEAN)


@pytest.mark.parametrize("category", sorted(_HARD))
def test_hard_negative_category_stays_clean(category):
    dirty = [t for t in _HARD[category] if redact.scrub(t, is_tool_output=True)[1] != redact.CLEAN]
    assert dirty == []


def test_clean_text_comes_back_as_the_same_object():
    text = "nothing to see here " * 100
    out, oc = redact.scrub(text, is_tool_output=True)
    assert out is text and oc is redact.CLEAN


@pytest.mark.parametrize("text", [
    # base64 that is not an image is data we cannot vouch for: redacted, by design
    "payload: " + "TWFueSBoYW5kcyBtYWtlIGxpZ2h0IHdvcmsuIFRoaXMgaXMgYmFzZTY0IQ==",
])
def test_opaque_base64_in_tool_output_is_redacted_by_design(text):
    assert redact.scrub(text, is_tool_output=True)[1].status == "redacted"
