"""Generic assigned tokens (lib/redact/assigned.py; issue #17): values no provider marker and no
secret-meaning name identifies, caught by their shape after any name, and what stays clean.

The positive shapes reproduce misses of the secrets-patterns-db tuning half (a provider name
absent from our lists, up to ~40 characters before the value: ``provider[a-z0-9_ .-]{0,25}
(=|:|=>...).{0,5}['"]([a-z0-9]{32})['"]``); their values are drawn here from a seeded RNG, not
copied from that corpus."""
from __future__ import annotations

import random
import string

import pytest

from lib import redact
from lib.redact import assigned
from lib.redact.entropy import shannon_entropy

RNG = random.Random(1717)


def _draw(alphabet: str, n: int) -> str:
    while True:
        v = "".join(RNG.choice(alphabet) for _ in range(n))
        if sum(c.isdigit() for c in v) >= n // 8 and any(c.isalpha() for c in v):
            return v


LOWER_DIGITS = string.ascii_lowercase + string.digits
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"

POSITIVES = [
    # (carrier with {v}, value)
    ("zipcodeapi_key := '{v}'", _draw(LOWER_DIGITS, 32)),
    ('"currencyscoop": "{v}"', _draw(LOWER_DIGITS, 32)),
    ("WEATHERSTACK_ACCESS = {v}", _draw(LOWER_DIGITS, 24)),
    ("scrapfly {v}", _draw(LOWER_DIGITS, 32)),
    ("openweather+CZ%\"{v}", _draw(LOWER_DIGITS, 32)),
    ("polygon_secret_x: {v}", _draw(ALNUM, 32)),
    ("const paralleldots = `{v}`", _draw(ALNUM, 43)),
    ("fetchrss.apikey => '{v}'", _draw(ALNUM, 20)),
    ("screenshotapi: {v}", "-".join(_draw(UPPER_DIGITS, 7) for _ in range(4))),
    ("saucelabs='{v}'", "k3v9qzt1-xrrw-tt4m-85z8-cq0pn6pg6cd2"),
    ("thinkific_key = \"{v}\"", _draw(HEX, 32)),
    ("avaza_token: 1729848293-{v}", _draw(HEX, 40)),
    ("pdfshift = {v}", _draw(HEX, 64)),
    ("mixedcase {v}", "c6aB8b6DA5a8421F47FD9520f01Cbaf572AFF3d7"),
]


@pytest.mark.parametrize("carrier,value", POSITIVES)
def test_random_shaped_values_after_any_name_are_redacted(carrier, value):
    text = carrier.format(v=value)
    for t in (text, f"line one\n{text}\nline three", text.replace('"', '\\"')):
        out, oc = redact.scrub(t, is_tool_output=True)
        assert value not in out, (t, oc)


@pytest.mark.parametrize("carrier,value", POSITIVES[:3])
def test_every_envelope_field_gets_the_rule(carrier, value):
    """The hook scrubs prompts, assistant text and tool fields as tool output (docs/security.md,
    Redaction, rule 4): the rule's scope is the entropy rule's."""
    from tests.redact.public_corpus import leaked, placements, stored

    text = carrier.format(v=value)
    for where, kw in placements(text, random.Random(3)):
        assert not leaked(stored(kw), where, value), where


def test_a_value_past_the_generic_window_is_left_as_the_entropy_rule_leaves_it():
    from lib.redact.entropy import MAX_SCAN_BYTES

    value = POSITIVES[3][1]
    text = "x " * (MAX_SCAN_BYTES // 2 + 8) + f"scrapfly {value}"
    assert value in redact.scrub(text, is_tool_output=True)[0]
    assert value not in redact.scrub(text[-200:], is_tool_output=True)[0]


CLEAN = [
    "class CrtCrc32Checksum(BaseChecksum):",
    "class CrtXxhash128Checksum(BaseChecksum):",
    '    "request-id": "N4N7GDK58NMKJ12R",',
    '    # {"base64": "RGF0YSB0byBlbmNvZGU="}',
    '                The specific model revision to deploy on the Inference Endpoint (e.g. '
    '`"6c0e6080953db56375760c0471a8c5f2929baf11"`).',
    'commit = "6c0e6080953db56375760c0471a8c5f2929baf11"',
    'checksum = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"',
    '"sha": "6c0e6080953db56375760c0471a8c5f2929baf11",',
    '"etag": "W/\\"6c0e6080953db56375760c0471a8c5f2\\""',
    "request_id: 8cf1b045-1234-4abc-9def-0123456789ab",
    "pod/nginx-deployment-7d4b9c8f6-x2k9p   1/1   Running   0   3d",
    "test_scrub_keeps_version_2_3_and_build_17_of_x86_64_linux",
    "python3.11 -m pip install cryptography==42.0.5",
    "wheel: numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "resolved \"https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#679591c564c3bffaae8454cf0b3df370c3d6911c\"",
    "Go: golang.org/x/sys v0.0.0-20220412211240-33da011f77ad h1:DzZ3mr3lwo",
    "e2e: base64url sha256 utf8to16 ipv4ipv6 v1beta1 md5sha1sha256",
]


@pytest.mark.parametrize("text", CLEAN)
def test_identifiers_digests_ids_and_versions_stay(text):
    out, oc = redact.scrub(text, is_tool_output=True)
    assert "assigned_token" not in oc.rules, (text, out)


def test_random_piece_thresholds_follow_the_documented_percentile():
    # min_entropy(n) is the 1st percentile of uniform [a-z0-9] strings: ~99 % of them pass it
    rng = random.Random(5)
    for n in (16, 20, 24, 32, 40):
        passed = 0
        for _ in range(400):
            v = "".join(rng.choice(LOWER_DIGITS) for _ in range(n)).encode()
            passed += shannon_entropy(v) >= assigned.min_entropy(n)
        assert passed >= 0.97 * 400, (n, passed)
