"""Issue #17, fourth round of recall: provider keys by documented shapes the rule table lacked,
tokens used as a path's directory name, a base64 block whose secret line does not look random,
and a Kubernetes Secret value inside a path (docs/security.md, Redaction). Each positive has the
negatives the same rule must leave alone."""
from __future__ import annotations

import base64
import json

import pytest

from lib import redact
from tests.redact import public_corpus


def _stored(**kw) -> str:
    return public_corpus.stored(kw)


def _unchanged(text: str) -> bool:
    return redact.scrub(text, True)[0] == text and redact.scrub(text, False)[0] == text


# -- provider keys by their documented shapes ------------------------------------------------

@pytest.mark.parametrize("text,secret,rule", [
    ("MWS_TOKEN amzn.mws.4ea38b7b-f563-7709-4bae-87aeaa4f5bd8 ok", "4ea38b7b-f563-7709-4bae-87aeaa4f5bd8",
     "aws_mws_token"),
    ("bitly R_0f3c9a7e21d84b6a95c0e7d1f2a3b4c5", "0f3c9a7e21d84b6a95c0e7d1f2a3b4c5", "bitly_secret_key"),
    ("NRAA-0650a5b3c7211c22ba12d828ce0", "0650a5b3c7211c22ba12d828ce0", "newrelic_api_key"),
    ("key: NRSP-us01a5b3c7211c22ba12d828ce0d47a1234", "a5b3c7211c22ba12d828ce0d47a1234", "newrelic_api_key"),
    ("RAZORPAY_KEY_ID rzp_live_ILgsfZCZoFIKMb", "ILgsfZCZoFIKMb", "razorpay_key"),
    ("sid AC272ebc9bc40b26396011a585ac11b649", "272ebc9bc40b26396011a585ac11b649", "twilio_account_sid"),
    ("graph EAACEdEose0cBA1b2C3d4E5f6G7h8", "1b2C3d4E5f6G7h8", "facebook_access_token"),
    ("LTAI5tB9yKq2mWx7Lp3Z", "LTAI5tB9yKq2mWx7Lp3Z", "alibaba_access_key_id"),
    ("SLACK xoxb-sa2vh-KoigxWueOIW26xCOuz", "KoigxWueOIW26xCOuz", "slack_bot_token"),
    ("CKO sk_test_3a839d7a-9847-fa69-e8a7-b7e8becfdc3f", "3a839d7a-9847-fa69-e8a7-b7e8becfdc3f",
     "checkout_secret_key"),
    ("https://contoso.webhook.office.com/webhookb2/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d@"
     "9f8e7d6c-5b4a-3c2d-1e0f-a9b8c7d6e5f4/IncomingWebhook/5d4c3b2a19f8e7d6c5b4a39f8e7d6c5b/"
     "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d", "5d4c3b2a19f8e7d6c5b4a39f8e7d6c5b", "teams_webhook"),
])
def test_documented_provider_shapes_quarantine(text, secret, rule):
    for tool in (False, True):
        out, oc = redact.scrub(text, tool)
        assert oc.status == "quarantined" and rule in oc.rules and secret not in out, (text, tool, oc)
    for where, kw in public_corpus.placements(text, __import__("random").Random(0)):
        assert not public_corpus.leaked(_stored(**kw), where, secret), (where, text)


@pytest.mark.parametrize("text", [
    "xoxb-your-token-here", "SLACK_BOT_TOKEN=xoxb-REPLACE-ME-PLEASE", "R_squared_value_of_the_model = 0.93",
    "ACCOUNT_SID=ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "AC_TIMEOUT_SECONDS_DEFAULT", "rzp_checkout_handler_v2",
    "LTAI_CONFIGURATION_FILE", "sk_test_placeholder_for_docs", "https://outlook.office.com/mail/inbox",
    "amzn.mws.example-token-goes-here", "EAACEdEose0cBA",
])
def test_provider_shapes_leave_lookalikes_clean(text):
    assert _unchanged(text), text


# -- a token as a path's directory name ------------------------------------------------------

@pytest.mark.parametrize("token", [
    "c6aB8b6DA5a8421F47FD9520f01Cbaf572AFF3d7",  # hex in both cases: never a digest
    "atlnb837wozix66k5en5x40qla5qcecw",  # lowercase and digits in groups
    "pr7dhqaqfdkjh2oq3yzkikd",
])
def test_a_token_used_as_a_directory_name_is_caught_in_paths(token):
    path = f"/home/dev/notes/{token}/README.md"
    stored = _stored(event_type="tool_call", tool={"name": "Read", "input": {"file_path": path}, "paths": [path]})
    assert token not in stored
    glued = f"/home/dev/notes/x]>){token}/README.md"  # after punctuation, not a segment's start
    assert token not in redact.scrub(glued, True)[0]


@pytest.mark.parametrize("path", [
    "/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.195/src/lib.rs",
    ".git/objects/13/ac08b61c07af1de0a4ef2dfe070eed66c4cdc5",
    "/home/u/.cache/pip/http-v2/a/b/c/d/e/abcdef0123456789abcdef0123456789abcdef0123456789abcdef01",
    "/usr/lib/python3/site-packages/cryptography/hazmat/primitives/kdf/pbkdf2.py",
    "src/golang.org/x/sys/unix/zsysctl_openbsd_386.go",
    "botocore/data/cloudhsmv2/2017-04-28/service-2.json",
    "/home/u/.claude/projects/-work-wt-r17recall2/0f8fad5b-d9cb-469f-a165-70867728950e.jsonl",
    "node_modules/.pnpm/@esbuild+linux-x64@0.19.12/node_modules/@esbuild/linux-x64/bin/esbuild",
])
def test_real_paths_stay(path):
    assert _unchanged(path) and _unchanged(f"Read {path}\n") and _unchanged(json.dumps({"file_path": path}))


def test_integrity_strings_with_slashes_stay():
    line = '"integrity": "sha512-6i/xYNDkR/ZAIGz1GVm/wtfJS93oYi5zYYIQnplWWrgU48PPk=="'
    assert _unchanged(line)


# -- base64 and Kubernetes Secrets -----------------------------------------------------------

def test_a_base64_block_holding_a_secret_goes_whole():
    """The line that holds the value is mostly tabs and blanks: its base64 does not look random,
    so the block's verdict (the decoded text holds a secret) must take every line with it."""
    conf = ('# settings\nregion=eu-west-1\n<add key="ClearTextPassword"\t   \t\t \t   \t\t\t \t'
            'value="bHG]|}0"\\[vjy"\t  \t\t     \t\t    \t\t\t\t \t/>\nretries=3\n')
    enc = base64.encodebytes(conf.encode()).decode()
    out, oc = redact.scrub(enc, True)
    assert oc.status == "redacted"
    hay = out.replace("\n", "")
    assert not any(f in hay for f in public_corpus.planted_form("base64", 'bHG]|}0"\\[vjy'))
    assert redact.scrub(out, True)[0] == out


def test_a_base64_block_of_clean_text_stays():
    enc = base64.encodebytes(b"hello world, nothing secret in this plain text at all, really.\t \t \n" * 4).decode()
    assert _unchanged(enc)


def test_kubernetes_secret_value_inside_a_path():
    path = "/home/dev/notes/kind: Secret\tdata: pw: \"fxan2kcjgsw==/README.md"
    out = redact.scrub(path, True)[0]
    assert "fxan2kcjgsw" not in out and out.endswith("/README.md")
    assert _unchanged("kind: ConfigMap\ndata:\n  logo: aGVsbG8gd29ybGQ=/static/logo.png\n")
