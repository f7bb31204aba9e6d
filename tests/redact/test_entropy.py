"""Entropy rule on tool input/output (docs/design.md §7 step 4) and its exclusions."""
from __future__ import annotations

import base64
import random
import string

import pytest

from lib import redact
from lib.envelope import to_text
from tests.redact import secrets_corpus


def test_entropy_family_in_tool_output():
    for case in secrets_corpus.cases("high_entropy", 60, seed=1):
        out, oc = redact.scrub(case.text, is_tool_output=True)
        assert case.secret not in out, case.text
        # a keyed carrier ("token: <run>") is caught by the keyword rule first, a random-shaped
        # run after a name by the assigned-token rule too (issue #17)
        assert oc.rules and set(oc.rules) <= {"high_entropy_run", "keyed_secret", "assigned_token"}, case.text


def test_entropy_rule_does_not_apply_to_prose():
    token = "Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc"
    assert redact.scrub(f"my token is {token}") == (f"my token is {token}", redact.CLEAN)
    assert token not in redact.scrub(f"my token is {token}", is_tool_output=True)[0]


def test_aws_secret_with_slashes_is_caught_without_its_key_name():
    """The first version skipped runs with >= 2 slashes as paths, so AWS's own example secret
    (two slashes) passed. Paths are now recognised by their words instead."""
    out, oc = redact.scrub("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", is_tool_output=True)
    assert out == "[ctxlake:redacted-secret]"


def test_real_csrf_token_in_meta_tag_is_redacted():
    tok = base64.urlsafe_b64encode(random.Random(8).randbytes(42)).rstrip(b"=").decode()
    html = f'<meta name="csrf-token" content="{tok}"/>'
    out, _ = redact.scrub(html, is_tool_output=True)
    assert tok not in out and out.startswith('<meta name="csrf-token" content="[ctxlake:redacted-secret]"')


def test_fixture_csrf_fakes_are_low_entropy_and_stay():
    fake = "FFFFFfffF00fFFFFFFF-FFFFFfffFffff0FffFFF0F00Ff0fF0ff0ffF"
    assert redact.shannon_entropy(fake) < 2.5
    assert redact.scrub(fake, is_tool_output=True)[1] == redact.CLEAN


def test_name_equals_value_keeps_the_name():
    tok = "Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc"
    out, _ = redact.scrub(f"session_secret={tok}", is_tool_output=True)
    assert out == "session_secret=[ctxlake:redacted]"  # the keyword rule (issue #17) takes it first
    out, _ = redact.scrub(f"session_id={tok}", is_tool_output=True)
    assert out == "session_id=[ctxlake:redacted-secret]"


def test_json_escape_before_a_run_is_kept():
    tok = "Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc"
    text = to_text({"content": "first\n" + tok})
    out, _ = redact.scrub(text, is_tool_output=True)
    assert out == '{"content":"first\\n[ctxlake:redacted-secret]"}'


def test_entropy_window_is_256_kib_and_a_run_is_not_cut():
    tok = "Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc"
    pad = "x " * (redact.MAX_SCAN_BYTES // 2 - 10)  # the run starts inside the window, ends outside
    out, oc = redact.scrub(pad + tok + " tail " + tok, is_tool_output=True)
    assert out == pad + "[ctxlake:redacted-secret] tail " + tok  # second copy is past the window
    assert oc.rules == ("high_entropy_run",)


def test_entropy_window_counts_bytes_not_characters():
    tok = "Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc"
    pad = "é" * (redact.MAX_SCAN_BYTES // 2)  # 2 bytes each: the window ends right here
    assert redact.scrub(pad + " " + tok, is_tool_output=True)[1] == redact.CLEAN
    assert redact.scrub(pad[:-20] + " " + tok, is_tool_output=True)[1].status == "redacted"


def test_mixed_threshold_catches_short_random_tokens():
    rng = random.Random(11)
    alphabet = string.ascii_letters + string.digits
    hits = sum(redact.scrub(" " + "".join(rng.choice(alphabet) for _ in range(32)), True)[1].status == "redacted"
               for _ in range(300))
    assert hits >= 285  # >= 95 % (4.5 alone: ~66 %)


@pytest.mark.parametrize("run,expected", [
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0.0),
    ("abababababababababababababababab", 1.0),
])
def test_shannon_entropy_values(run, expected):
    assert redact.shannon_entropy(run) == pytest.approx(expected)
    assert redact.shannon_entropy(run.encode()) == pytest.approx(expected)
    assert redact.shannon_entropy("") == 0.0
