"""Secret markers: any hit withholds the whole value (docs/design.md §7 step 1, docs/security.md, Redaction).

Positives come from ``secrets_corpus`` (documented formats, seeded fakes); each negative is the
bare prefix in prose or code, which must stay clean (reference bug 12.2 #7).
"""
from __future__ import annotations

import json
import re

import pytest

from lib import redact
from lib.redact import providers
from lib.envelope import to_text
from tests.redact import secrets_corpus

QUARANTINE_FAMILIES = ["anthropic", "openai", "stripe", "aws", "github", "slack", "discord", "gitlab",
                       "google", "gcp_service_account", "jwt", "private_key", "azure", "twilio", "mailgun",
                       "databricks", "pypi", "other_providers", "authorization_header", "secret_assignment"]


def _withheld_re():
    return re.compile(r"\[ctxlake: withheld, \d+ bytes, sha256:[0-9a-f]{64}\]")


@pytest.mark.parametrize("family", QUARANTINE_FAMILIES)
def test_marker_family_quarantines_whole_value(family):
    for case in secrets_corpus.cases(family, 40, seed=1):
        text, oc = redact.scrub(case.text)
        assert oc.status == "quarantined", case.text
        assert _withheld_re().fullmatch(text)
        assert case.secret not in text


@pytest.mark.parametrize("family", QUARANTINE_FAMILIES)
def test_marker_fires_inside_json_escaped_tool_input(family):
    """Builder scrubs tool input as compact JSON: newlines become the two characters \\n, so a
    token at the start of a line is preceded by an 'n' — it must still fire."""
    for case in secrets_corpus.cases(family, 10, seed=2):
        text = to_text({"file_path": "/tmp/notes.txt", "content": "header line\n" + case.text + "\nfooter"})
        out, oc = redact.scrub(text, is_tool_output=True)
        assert oc.status == "quarantined", case.text
        assert case.secret not in out


@pytest.mark.parametrize("text,rule", [
    ("sk-ant-admin01-" + "Ab3_" * 24 + "AA", "anthropic_admin_key"),
    ("sk-ant-api03-" + "Ab3_" * 24 + "AA", "anthropic_key"),
    ("sk-proj-" + "aB3d-" * 20, "openai_project_key"),
    ("AKIAIOSFODNN7EXAMPLE", "aws_access_key_id"),
    ("ASIAIOSFODNN7EXAMPLE", "aws_session_key_id"),
    ("ghp_" + "a1B2" * 9, "github_pat"),
    ("gho_" + "a1B2" * 9, "github_oauth"),
    ("ghs_" + "a1B2" * 9, "github_server_token"),
    ("github_pat_" + "11ABCDEFG0" * 8, "github_fine_grained_pat"),
    ("xoxb-123456789012-1234567890123-" + "aB3" * 8, "slack_bot_token"),
    ("xoxp-123456789012-123456789012-123456789012-" + "ab12" * 8, "slack_user_token"),
    ("glpat-" + "aB3d" * 5, "gitlab_pat"),
    ("glrt-" + "aB3d" * 5, "gitlab_runner_token"),
    ("AIzaSyD" + "aB3d-_" * 5 + "xy", "google_api_key"),
    ("ya29." + "aB3d" * 20, "google_oauth_token"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "private_key"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "private_key"),
    ("key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "mailgun_key"),
    ("SK" + "0123456789abcdef" * 2, "twilio_key"),
    ("dapi" + "0123456789abcdef" * 2, "databricks_token"),
    ("DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + "aB3+" * 21 + "ab==", "azure_storage_key"),
    ("abc8Q~" + "aB3d." * 6 + "xyz", "azure_ad_client_secret"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_kv"),
    ("ANTHROPIC_API_KEY=sk-live-ish-9f8e7d6c5b4a", "anthropic_key_kv"),
    ("PGPASSWORD=s3cr3t-Pa55 psql -h db", "postgres_password_kv"),
    ("MYSQL_PWD='Tr0ub4dor&3' mysql", "mysql_password_kv"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "authorization_header"),
    ('"Authorization": "token 9f8e7d6c5b4a39281706"', "authorization_header"),
    ("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "slack_webhook"),
    ("https://hooks.slack.com/workflows/T01ABCDEF/A02BCDEFG/412345678901234567/" + "aB3d" * 6, "slack_webhook"),
    ("https://hooks.slack.com/triggers/T01ABCDEF/5123456789012/" + "0a1b2c3d" * 4, "slack_webhook"),
    ("0123456789abcdef0123456789abcdef-us6", "mailchimp_key"),
    ("\\t23d4bdd3e32943ae6a74f13827c55992-us46\\r", "mailchimp_key"),
    ("https://discord.com/api/webhooks/123456789012345678/" + "aB3d_-" * 11, "discord_webhook"),
    ("123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1", "telegram_bot_token"),
    ("hvs." + "CAESIa1b2" * 10, "vault_token"),
    ("AGE-SECRET-KEY-1" + "QYZ234567ACDEFGH" * 4, "age_secret_key"),
])
def test_marker_rule_names(text, rule):
    _, oc = redact.scrub(f"value: {text} end")
    assert oc.status == "quarantined"
    assert rule in oc.rules


@pytest.mark.parametrize("text", [
    "the sk- prefix marks OpenAI keys",
    "task-runner-configuration-options and risk-assessment-matrix-v2",
    "ghp_ tokens are GitHub personal access tokens",
    "AKIA is the prefix of AWS access key ids",
    "AKIAIOSFODNN7EXAMPLEX123",  # too long for an access key id
    "xoxb- tokens belong to Slack bots",
    "use eyJ as a hint that a JWT follows",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIJAKZ\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----",
    "PRIVATE KEY handling is described in docs/keys.md",
    "Authorization: Bearer <your-token>",
    "Authorization: Bearer ${TOKEN}",
    "authorization: str = Depends(oauth2_scheme)",
    "aws sts get-caller-identity: UserId AROAEXAMPLEID12345678:session",
    "key-value store with key-based routing",
    "SKU123 and SKETCHES",
    "ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY",
    "export OPENAI_API_KEY=your-openai-api-key",
    "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/service-account.json",
    "client_secret: <CLIENT_SECRET>",
    "primaryKey: 'user_id_and_tenant_id'",
    "see https://api.slack.com/messaging/webhooks and hooks.slack.com/apps/ for the setup",
    "md5 0123456789abcdef0123456789abcdef-usage.log",
])
def test_marker_prefix_in_prose_stays_clean(text):
    assert redact.scrub(text, is_tool_output=True) == (text, redact.CLEAN)


def test_gcp_service_account_json_is_quarantined_as_private_key():
    text, secret = secrets_corpus._gcp_service_account(__import__("random").Random(3))
    out, oc = redact.scrub(text, is_tool_output=True)
    assert oc.status == "quarantined" and "private_key" in oc.rules
    assert secret not in out
    # the same document as one JSON string value (\n escapes inside the key)
    wrapped = json.dumps({"credentials": text})
    assert redact.scrub(wrapped)[1].status == "quarantined"


def test_private_key_body_without_header_is_caught():
    for case in secrets_corpus.cases("private_key", 9, seed=4):
        out, oc = redact.scrub(case.text)
        assert oc.status == "quarantined"


def test_markers_scan_the_whole_field_beyond_the_entropy_window():
    filler = "ordinary log line without secrets\n" * ((redact.MAX_SCAN_BYTES * 3) // 34)
    text = filler + "token=ghp_" + "a1B2" * 9 + "\n"
    assert len(text.encode()) > 3 * redact.MAX_SCAN_BYTES
    assert redact.scrub(text, is_tool_output=True)[1].status == "quarantined"


def test_withheld_placeholder_is_deterministic_and_carries_no_value():
    case = secrets_corpus.cases("github", 1, seed=5)[0]
    a, _ = redact.scrub(case.text)
    b, _ = redact.scrub(case.text)
    assert a == b == redact.withheld(case.text)
    assert case.secret not in a
    other = redact.scrub(case.text + " ")[0]
    assert other != a  # different value, different hash


def test_all_rules_of_the_field_are_reported():
    text = "AKIAIOSFODNN7EXAMPLE and ghp_" + "a1B2" * 9
    _, oc = redact.scrub(text)
    assert set(oc.rules) >= {"aws_access_key_id", "github_pat"}
    assert list(oc.rules) == sorted(oc.rules)


@pytest.mark.parametrize("wrap", [
    "\x1b[32m{}\x1b[0m",          # ANSI colour right before the token
    "\x1b[1;32m{}\x1b[0m",
    "next=https%3A%2F%2Fx%3Ftoken%3D{}",  # URL-encoded query inside a URL
    "a\\t{}", "a\\r\\n{}",         # JSON escapes
])
def test_marker_fires_after_escapes_colours_and_url_encoding(wrap):
    token = "ghp_" + "a1B2" * 9
    out, oc = redact.scrub(wrap.format(token), is_tool_output=True)
    assert oc.status == "quarantined" and token not in out


def test_azure_ad_secret_found_after_many_tildes():
    secret = "abc8Q~" + "aB3d." * 6 + "xyz"
    assert redact.scrub("~" * 100 + " " + secret)[1].rules == ("azure_ad_client_secret",)


_ANCHORS = sorted({a.decode() for a, *_ in providers._START_MARKERS} | {a.decode() for a, *_ in providers._DOT_MARKERS})


@pytest.mark.parametrize("anchor", _ANCHORS)
def test_every_marker_prefix_alone_stays_clean(anchor):
    """Each provider prefix, named in prose or followed by a short or word-like tail, is not a
    token (reference bug 12.2 #7 generalised to every marker)."""
    for text in (f"the {anchor} prefix marks a token", f"{anchor}abc", f"{anchor}your_token_here",
                 f"see {anchor}example-value."):
        assert redact.scrub(text)[1].status != "quarantined", text
