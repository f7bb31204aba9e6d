"""Structural spans and prefixed tokens, replaced in place (docs/design.md §7 steps 2–3)."""
from __future__ import annotations

import pytest

from lib import redact
from tests.redact import secrets_corpus

INPLACE_FAMILIES = ["uri_credentials", "url_signature", "password_assignment", "card_number", "ssn",
                    "bearer_token", "huggingface_token", "npm_token", "sendgrid_key"]


@pytest.mark.parametrize("family", INPLACE_FAMILIES)
def test_inplace_family_redacts_only_the_span(family):
    for case in secrets_corpus.cases(family, 40, seed=1):
        out, oc = redact.scrub(case.text)  # prose mode: these rules apply to every field
        assert oc.status == "redacted", case.text
        assert case.secret not in out
        assert out.startswith(case.text[:3]) and "[ctxlake:redacted" in out


@pytest.mark.parametrize("text,expected", [
    ("postgres://app:hunter22@db:5432/x", "postgres://app:[ctxlake:redacted]@db:5432/x"),
    ("redis://:s3cretpw@cache:6379/0", "redis://:[ctxlake:redacted]@cache:6379/0"),
    ("amqp://u:p@ss:w0rd@mq.local/vh", "amqp://u:[ctxlake:redacted]@mq.local/vh"),
    ("curl -u deploy:Tr0ub4dor3 https://ci.example.com", "curl -u deploy:[ctxlake:redacted] https://ci.example.com"),
    ("card 4111 1111 1111 1111 exp", "card [ctxlake:redacted-card] exp"),
    ("amex 3782-822463-10005.", "amex [ctxlake:redacted-card]."),
    ('"pan": "5555555555554444"', '"pan": "[ctxlake:redacted-card]"'),
    ("SSN 078-05-1120 on file", "SSN [ctxlake:redacted-ssn] on file"),
    ("Authorization header aside, Bearer abcDEF1234567890xyzQ", "Authorization header aside, Bearer [ctxlake:redacted]"),
    ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "HF_TOKEN=hf_[ctxlake:redacted]"),
    ("SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefg x", "SG.[ctxlake:redacted] x"),
    ('db.connect(user="app", password="s3cr3t!x")', 'db.connect(user="app", password="[ctxlake:redacted]")'),
])
def test_inplace_exact_output(text, expected):
    out, oc = redact.scrub(text)
    assert out == expected
    assert oc.status == "redacted"


@pytest.mark.parametrize("text", [
    # docs/security.md, Redaction must-stay-clean items for these rules
    "DATABASE_URL=postgres://db.internal:5432/prod",
    "call 415-555-0134 now", "zip 94107-1234", "900-45-6789 is not an SSN", "666-12-3456 neither",
    "000-12-3456 nor", "123-00-4567 nor", "123-45-0000 nor",
    "the API wants a Bearer token", "let hf_size = 32;", "npm_config_prefix=/usr/local", "MSG.txt", "SG.md",
    "created_at_ms=1718203123456",  # epoch ms: starts with 1, no card issuer
    "order #100234567 shipped",
    "1111 1111 1111 1111",  # Luhn-valid but no issuer starts with 1
    "0000 0000 0000 0000",
    "latency_ns=623225075766194070",  # 18 digits: no network issues 18-digit PANs
    "hash 4954757835329684bf1bdd6ccc131e06",  # digits inside a hex string
    "4111111111111112",  # Luhn-invalid
    "git push -u origin main", "docker run -u 1000:1000 alpine",
    "password = os.environ['DB_PASSWORD']", "password: ${{ secrets.DB_PASSWORD }}", "password=********",
    "password: str", "bypass=abc12345", "PGPASSWORD=your_password_here",
    "https://user@example.com/path", "mailto:a@b.example",
    "postgres://user:${DB_PASSWORD}@db/app", "https://user:<password>@host/",
    "?sig=short", "signature=HS256",
])
def test_structural_negatives_stay_clean(text):
    assert redact.scrub(text, is_tool_output=True) == (text, redact.CLEAN)


def test_well_known_test_card_numbers_are_redacted_on_purpose():
    """4111 1111 1111 1111 / 4242 4242 4242 4242 are public test PANs. The first version let
    low-variety numbers through; now they are redacted like any PAN: we cannot tell a test card
    from a live one, PCI scanners treat them alike, and the lake loses nothing by it."""
    for pan in ("4111 1111 1111 1111", "4242424242424242", "5555-5555-5555-4444", "378282246310005"):
        out, oc = redact.scrub(f"card {pan}")
        assert pan not in out and "card_number" in oc.rules


def test_every_occurrence_is_redacted_with_the_same_placeholder():
    text = "a postgres://u:pw111111@h/x b postgres://u:pw111111@h/y c 078-05-1120 d 078-05-1120"
    out, oc = redact.scrub(text)
    assert "pw111111" not in out and "078-05-1120" not in out
    assert out.count("[ctxlake:redacted]") == 2 and out.count("[ctxlake:redacted-ssn]") == 2
    assert oc.rules == ("ssn", "uri_credentials")


def test_multibyte_neighbours_survive_intact():
    text = "пароль→postgres://u:pässwörd9@hôst/db ✓ 卡 4111 1111 1111 1111 号 ✓ 😀 078-05-1120 😀"
    out, oc = redact.scrub(text)
    assert oc.status == "redacted"
    assert out == "пароль→postgres://u:[ctxlake:redacted]@hôst/db ✓ 卡 [ctxlake:redacted-card] 号 ✓ 😀 [ctxlake:redacted-ssn] 😀"


def test_lone_surrogates_do_not_break_scrub():
    text = "x\ud800y postgres://u:hunter22@h/ \udfff"
    out, oc = redact.scrub(text)
    assert out == "x\ud800y postgres://u:[ctxlake:redacted]@h/ \udfff"


def test_presigned_aws_url_with_session_key_is_quarantined():
    url = ("https://b.s3.amazonaws.com/o?X-Amz-Credential=ASIAIOSFODNN7EXAMPLE%2F20300101%2Fus-east-1%2Fs3"
           "&X-Amz-Signature=" + "ab12" * 16)
    assert redact.scrub(url)[1].status == "quarantined"


def test_card_after_an_unrelated_digit_group_is_found():
    """Found by the atheris target: a leading group swallowed the card's first group."""
    out, oc = redact.scrub("ref 5559 2221 4828 6689 7209 ok")
    assert "2221 4828 6689 7209" not in out and oc.rules == ("card_number",)


@pytest.mark.parametrize("text,secret", [
    ('password: "correct h0rse battery"', "correct h0rse battery"),
    ("password = 'with space 9'", "with space 9"),
    ('{\\"password\\": \\"esc4ped pass\\"}', "esc4ped pass"),
    ("postgres://app:ab/cd9x@db.internal:5432/prod", "ab/cd9x"),
    ("curl --user=deploy:Tr0ub4dor3 https://ci.example.com", "Tr0ub4dor3"),
    ("curl -udeploy:Tr0ub4dor3 https://ci.example.com", "Tr0ub4dor3"),
])
def test_quoted_values_slashes_and_curl_forms(text, secret):
    out, oc = redact.scrub(text)
    assert secret not in out and oc.status == "redacted", out


@pytest.mark.parametrize("text", [
    "http://localhost:3000/users/@john", "https://registry.npmjs.org:443/@scope/pkg",
    'password: "Enter your password"', 'password: "{{ vault_db_password }}"',
])
def test_slash_and_quoted_negatives(text):
    assert redact.scrub(text, is_tool_output=True) == (text, redact.CLEAN)
