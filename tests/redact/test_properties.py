"""Property tests (hypothesis) on scrub() and scrub_deep().

Properties, and why they must hold:
* no exception escapes for any str (the hook fails open, but a redactor exception would drop
  the event, and scrub_deep guards MCP writes);
* the output is a str that round-trips through UTF-8 with ``surrogatepass`` (spool lines are
  written that way) and, for valid text, encodes as plain UTF-8;
* status and rules agree (clean ⇔ no rules; rules sorted and unique); clean returns the input;
* idempotence: scrub(scrub(x)) == scrub(x) — placeholders are built from characters the rules
  never match, so a second pass finds nothing new (an envelope re-scrubbed by import or by the
  MCP guard does not change);
* a planted secret never survives, whatever surrounds it, and never appears in a placeholder;
* determinism: the same input gives the same output (same secret → same placeholder).
"""
from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lib import redact
from tests.redact import secrets_corpus

# CTXLAKE_HYPOTHESIS_EXAMPLES raises the budget for a long local run (e.g. 5000).
SETTINGS = settings(max_examples=int(os.environ.get("CTXLAKE_HYPOTHESIS_EXAMPLES", "300")), deadline=None,
                    database=None, suppress_health_check=[HealthCheck.too_slow])
TOKENISH = st.text(alphabet=st.sampled_from("abcXYZ019+/=_-.:@ \n\\\"'~é😀"), max_size=80)
ANY_TEXT = st.one_of(st.text(max_size=300), TOKENISH)
SECRETS = st.sampled_from(secrets_corpus.SECRETS)


@SETTINGS
@given(ANY_TEXT, st.booleans())
@example("\ud800 postgres://u:p@h", True)
@example("4111 1111 1111 1111\udfff", False)
def test_scrub_never_raises_and_returns_consistent_outcome(text, tool):
    out, oc = redact.scrub(text, tool)
    assert isinstance(out, str)
    out.encode("utf-8", "surrogatepass")
    assert oc.status in redact.STATUS_ORDER
    assert (oc.status == "clean") == (not oc.rules)
    assert list(oc.rules) == sorted(set(oc.rules))
    if oc.status == "clean":
        assert out is text


@SETTINGS
@given(st.text(max_size=300), st.booleans())
def test_valid_text_stays_valid_utf8(text, tool):
    out, _ = redact.scrub(text, tool)
    out.encode("utf-8")  # raises on lone surrogates: none may be created


@SETTINGS
@given(ANY_TEXT, st.booleans())
def test_scrub_is_idempotent(text, tool):
    once, _ = redact.scrub(text, tool)
    twice, _ = redact.scrub(once, tool)
    assert twice == once


@SETTINGS
@given(ANY_TEXT, SECRETS, ANY_TEXT, st.booleans())
def test_planted_secret_never_survives(before, secret, after, tool):
    text = before + " " + secret + "\n" + after
    out, oc = redact.scrub(text, tool)
    assert secret not in out
    assert oc.status != "clean"
    assert redact.scrub(text, tool) == (out, oc)  # deterministic


@SETTINGS
@given(SECRETS, st.booleans())
def test_placeholder_never_contains_the_input(secret, tool):
    out, _ = redact.scrub(secret, tool)
    for placeholder in _placeholders(out):
        assert secret not in placeholder
        assert secret[-12:] not in placeholder


def _placeholders(text):
    i = text.find("[ctxlake")
    while i >= 0:
        j = text.find("]", i)
        yield text[i:j + 1]
        i = text.find("[ctxlake", j)


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), ANY_TEXT, SECRETS),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.one_of(st.text(max_size=10), SECRETS), children, max_size=4)),
    max_leaves=20)


@SETTINGS
@given(JSONISH, st.booleans())
def test_scrub_deep_never_raises_and_removes_every_secret(value, tool):
    out, outcomes = redact.scrub_deep(value, tool)
    blob = json.dumps(out, ensure_ascii=False, default=str)
    for s in secrets_corpus.SECRETS:
        if s in json.dumps(value, ensure_ascii=False, default=str):
            assert s not in blob
    assert all(isinstance(o, redact.Outcome) and o.status != "clean" for o in outcomes)
    again, more = redact.scrub_deep(out, tool)
    assert again == out


def test_scrub_deep_catches_card_numbers_given_as_json_numbers():
    out, outcomes = redact.scrub_deep({"pan": 4111111111111111, "qty": 3, "ok": True})
    assert out == {"pan": "[ctxlake:redacted-card]", "qty": 3, "ok": True}
    assert outcomes[0].rules == ("card_number",)


def test_pathological_inputs_finish():
    """Shapes that make a careless regex backtrack quadratically; each must simply return (a
    hang here is the failure — no timing is asserted)."""
    shapes = ["://" + ":" * 200_000 + "x", "a" * 1_000_000, "1 " * 300_000, "eyJ" * 200_000,
              "sk-" * 200_000, "password=" * 100_000, "Bearer " * 100_000, "https://u:" + "@" * 100_000,
              "4" * 500_000, "ddd-dd-" * 100_000, "=" * 500_000, "Q~" * 300_000, "\\n" * 300_000]
    for text in shapes:
        out, _ = redact.scrub(text, is_tool_output=True)
        assert isinstance(out, str)


def test_uri_credentials_rescrub_is_stable():
    """Found by the atheris target: the user part used to swallow ':' and a second pass then
    redacted inside the first pass's placeholder."""
    text = "\x7f\x7fS://\x7f\x13\x7f\x7fS:1\x7f;\x00\x00\x00\x004@4644//x"
    once, _ = redact.scrub(text, True)
    assert redact.scrub(once, True)[0] == once


def test_url_password_with_slashes_rescrub_is_stable():
    """Found by the atheris target: the raw-'/' password form swallowed a later URL and the
    placeholder the first pass had written."""
    text = "\x7f9:N/Q_Q://Q~\x7f\x7f\x7f\x7f://QQ4//\x0f\x7f\x7f://QQ\x0f\x0f\x0f\x0f\x0f:\x7f@@QQ"
    once, _ = redact.scrub(text)
    assert redact.scrub(once)[0] == once


URLISH = st.lists(st.sampled_from(["://", ":", "@", "/", "//", "Q", "x9", "\x7f", "~", "-", "4111", " ", "?sig=",
                                   "&", "%2F", "=", "[ctxlake:redacted]", "curl -u ", "a:b", "password=", '"',
                                   "hunter22", "\\n", "078-05-1120", "Bearer ", "abcDEF123456789xyzQ", "ghp_",
                                   "a1B2" * 9, "Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc", "4111 1111 1111 1111", "key=",
                                   "AKIA", "\n", "é", "hf_", "SG.", "eyJ", "sk-", "1234", "/home/u/", "R_",
                                   "rzp_", "amzn.mws.", ".webhook.office.com/webhookb2/", "kind: Secret\ndata:\n",
                                   "c6aB8b6DA5a8421F47FD9520f01Cbaf572AFF3d7", "atlnb837wozix66k5en5x40qla5qcecw"]),
                  max_size=30).map("".join)


@SETTINGS
@given(URLISH, st.booleans())
def test_scrub_is_idempotent_on_url_and_keyword_soup(text, tool):
    """The shapes atheris found idempotence bugs in, recombined: a second pass never changes
    the output."""
    once, _ = redact.scrub(text, tool)
    assert redact.scrub(once, tool)[0] == once


def test_a_run_kept_as_a_url_host_beside_a_redacted_scheme_is_judged_on_what_is_stored():
    """Found by the soup above: ``<run>://<run>`` kept its second run as a URL's host until the
    first was redacted, so a second scrub redacted it."""
    text = "://Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc://Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc"
    once, _ = redact.scrub(text, True)
    assert "Zx9Qw3Er7Ty1" not in once and redact.scrub(once, True)[0] == once


def test_regressions_found_by_random_soup():
    # a card followed by another card's first group, and an SSN glued to a token
    for text, tool in [("4111 1111 1111 1111 4111 1111 1111 1111 x", False),
                       ("@078-05-1120ghp_Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc", False),
                       ("hf_" + "a1B2" * 9 + "sk-abcDEF123456789xyzQsk-abcDEF123456789xyzQ", True)]:
        once, _ = redact.scrub(text, tool)
        assert redact.scrub(once, tool)[0] == once, text
    assert redact.scrub("4111 1111 1111 1111 4111 1111 1111 1111")[0] == \
        "[ctxlake:redacted-card] [ctxlake:redacted-card]"


ASCII_TEXT = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=200)


@SETTINGS
@given(ASCII_TEXT, SECRETS, ASCII_TEXT)
def test_base64_of_text_holding_a_secret_goes_whole_and_stays_stable(before, secret, after):
    """``base64`` output of a config file holding a secret (the bench's base64 placement: a
    block of two lines or more): the block is redacted whole (issue #17, a line padded with
    blanks encodes to base64 that does not look random), and a second scrub leaves the result
    alone."""
    import base64

    from tests.redact import public_corpus

    conf = f"# settings\nregion=eu-west-1\n{before}\n{secret}\n{after}\nretries=3\n"
    enc = base64.encodebytes(conf.encode()).decode()
    once, _ = redact.scrub(enc, True)
    flat = once.replace("\n", "")
    assert not any(f in flat for f in public_corpus.planted_form("base64", secret)), secret
    assert redact.scrub(once, True)[0] == once
