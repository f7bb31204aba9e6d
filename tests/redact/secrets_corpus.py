"""Realistic fake secrets, one generator per publicly documented token format.

Nothing here is a live credential: every token is drawn from a seeded ``random.Random`` in the
shape its provider documents (prefix, alphabet, length, checksum where one is public). Used by

* ``tests/redact/`` — one positive test per format;
* ``bench/redact_corpus.py`` — recall per rule family over many samples;
* the end-to-end hook test — ``SECRETS`` (≥ 30 distinct secrets of different formats) is pushed
  through the hook and every byte the spool gets is grepped for each of them.

A :class:`Case` is ``(family, text, secret)``: ``text`` is what the agent would see (a line of
config, a header, a JSON value), ``secret`` the part that must never reach disk. ``family`` names
the rule family expected to fire (``bench`` groups recall by it); ``field`` says where the text
would appear: ``any`` (prompts too) or ``tool`` (entropy rule: tool input/output only).
"""
from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "_-"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


@dataclass(frozen=True)
class Case:
    """One labelled secret: rule ``family``, the ``text`` that carries it, the ``secret`` part
    that must not survive, and the ``field`` kind (``any`` or ``tool``)."""

    family: str
    text: str
    secret: str
    field: str = "any"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return body + str((10 - total % 10) % 10)


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": str(rng.randrange(10 ** 9)), "iat": 1700000000 + rng.randrange(10 ** 7),
                                  "scope": "repo read:org"}).encode())
    return f"{header}.{payload}.{_b64url(rng.randbytes(32))}"


def _pem_body(rng: random.Random, der_prefix: bytes, n: int = 600) -> str:
    b64 = base64.b64encode(der_prefix + rng.randbytes(n)).decode()
    return "\n".join(b64[i:i + 64] for i in range(0, len(b64), 64))


_PKCS8_RSA = bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7")
_PKCS1_RSA = bytes.fromhex("308204a40201000282010100")
_SEC1_EC = bytes.fromhex("30770201010420")
_OPENSSH = b"openssh-key-v1\x00\x00\x00\x00\x04none"


def _private_key(rng: random.Random, kind: str) -> str:
    if kind == "pkcs8":
        return f"-----BEGIN PRIVATE KEY-----\n{_pem_body(rng, _PKCS8_RSA)}\n-----END PRIVATE KEY-----"
    if kind == "rsa":
        return f"-----BEGIN RSA PRIVATE KEY-----\n{_pem_body(rng, _PKCS1_RSA)}\n-----END RSA PRIVATE KEY-----"
    if kind == "ec":
        return f"-----BEGIN EC PRIVATE KEY-----\n{_pem_body(rng, _SEC1_EC, 90)}\n-----END EC PRIVATE KEY-----"
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_pem_body(rng, _OPENSSH, 300)}\n-----END OPENSSH PRIVATE KEY-----"


def _gcp_service_account(rng: random.Random) -> tuple[str, str]:
    key = _private_key(rng, "pkcs8")
    doc = {"type": "service_account", "project_id": "demo-project-" + _r(rng, LOWER_ALNUM, 6),
           "private_key_id": _r(rng, HEX, 40), "private_key": key + "\n",
           "client_email": "svc@demo.iam.gserviceaccount.com", "client_id": str(rng.randrange(10 ** 20))}
    return json.dumps(doc, indent=2), key.splitlines()[1]


# Each generator returns (text, secret) for one sample.
def _gen_table():
    t = {}

    def add(family, field="any", standalone=True):
        def deco(fn):
            t.setdefault(family, []).append((fn, field, standalone))
            return fn
        return deco

    # --- provider markers (whole value quarantined) ---
    @add("anthropic")
    def _(g):
        s = "sk-ant-api03-" + _r(g, B64URL, 93) + "AA"
        return f"export ANTHROPIC_KEY={s}", s

    @add("anthropic")
    def _(g):
        s = "sk-ant-admin01-" + _r(g, B64URL, 93) + "AA"
        return f'{{"admin_key": "{s}"}}', s

    @add("openai")
    def _(g):
        s = "sk-proj-" + _r(g, B64URL, 156)
        return f"client = OpenAI(api_key=\"{s}\")", s

    @add("openai")
    def _(g):
        s = "sk-" + _r(g, ALNUM, 20) + "T3BlbkFJ" + _r(g, ALNUM, 20)
        return f"OPENAI_KEY: {s}", s

    @add("openai")
    def _(g):
        s = "sk-svcacct-" + _r(g, B64URL, 120)
        return f"token {s}", s

    @add("openai")
    def _(g):
        s = "sk-or-v1-" + _r(g, HEX, 64)
        return f"OPENROUTER={s}", s

    @add("stripe")
    def _(g):
        s = g.choice(["sk_live_", "sk_test_", "rk_live_"]) + _r(g, ALNUM, g.choice([24, 99]))
        return f"Stripe.api_key = '{s}'", s

    @add("stripe")
    def _(g):
        s = "whsec_" + _r(g, ALNUM, 32)
        return f"STRIPE_WEBHOOK={s}", s

    @add("aws")
    def _(g):
        s = g.choice(["AKIA", "ASIA"]) + _r(g, B32, 16)
        return f"aws_access_key_id = {s}", s

    @add("aws", standalone=False)
    def _(g):
        s = _r(g, B64, 40)
        return f"aws_secret_access_key = {s}", s

    @add("aws", standalone=False)
    def _(g):
        key_id = "ASIA" + _r(g, B32, 16)
        doc = {"Credentials": {"AccessKeyId": key_id, "SecretAccessKey": _r(g, B64, 40),
                               "SessionToken": _r(g, B64, 300), "Expiration": "2030-01-01T00:00:00Z"}}
        return json.dumps(doc, indent=4), doc["Credentials"]["SecretAccessKey"]

    @add("github")
    def _(g):
        s = g.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + _r(g, ALNUM, 36)
        return f"git clone https://x-access-token:{s}@github.com/org/repo.git", s

    @add("github")
    def _(g):
        s = "github_pat_" + _r(g, ALNUM, 22) + "_" + _r(g, ALNUM, 59)
        return f"GH_TOKEN={s}", s

    @add("slack")
    def _(g):
        s = "xoxb-" + _r(g, string.digits, 12) + "-" + _r(g, string.digits, 13) + "-" + _r(g, ALNUM, 24)
        return f"SLACK_BOT_TOKEN={s}", s

    @add("slack")
    def _(g):
        s = "xoxp-" + "-".join(_r(g, string.digits, 12) for _ in range(3)) + "-" + _r(g, HEX, 32)
        return f"slack user token: {s}", s

    @add("slack")
    def _(g):
        s = "xapp-1-A" + _r(g, string.ascii_uppercase + string.digits, 10) + "-" + _r(g, string.digits, 13) + "-" + _r(g, HEX, 64)
        return f"app_token = \"{s}\"", s

    @add("slack")
    def _(g):
        s = ("https://hooks.slack.com/services/T" + _r(g, string.ascii_uppercase + string.digits, 8) + "/B"
             + _r(g, string.ascii_uppercase + string.digits, 10) + "/" + _r(g, ALNUM, 24))
        return f"curl -X POST -d '{{\"text\":\"hi\"}}' {s}", s

    @add("discord")
    def _(g):
        s = "https://discord.com/api/webhooks/" + _r(g, string.digits, 18) + "/" + _r(g, B64URL, 68)
        return f"WEBHOOK_URL={s}", s

    @add("gitlab")
    def _(g):
        s = g.choice(["glpat-", "glrt-", "gldt-"]) + _r(g, B64URL, 20)
        return f"CI_TOKEN: {s}", s

    @add("google")
    def _(g):
        s = "AIza" + _r(g, B64URL, 35)
        return f"https://maps.googleapis.com/maps/api/geocode/json?key={s}", s

    @add("google")
    def _(g):
        s = "ya29." + _r(g, B64URL, 150)
        return f"access_token: {s}", s

    @add("google")
    def _(g):
        s = "GOCSPX-" + _r(g, B64URL, 28)
        return f'"client_secret_value": "{s}"', s

    @add("google")
    def _(g):
        s = "1//0" + _r(g, B64URL, 100)
        return f"refresh: {s}", s

    @add("gcp_service_account", standalone=False)
    def _(g):
        return _gcp_service_account(g)

    @add("jwt")
    def _(g):
        s = _jwt(g)
        return f"Cookie: session={s}", s

    @add("private_key")
    def _(g):
        s = _private_key(g, g.choice(["pkcs8", "rsa", "ec", "openssh"]))
        return s, s

    @add("private_key", standalone=False)
    def _(g):  # JSON-escaped: the key inside a JSON string, newlines as \n
        s = _private_key(g, g.choice(["pkcs8", "rsa"]))
        return json.dumps({"content": "key:\n" + s}), s.splitlines()[1]

    @add("private_key")
    def _(g):  # body only, no header (pasted without the BEGIN line)
        body = _pem_body(g, _PKCS8_RSA).replace("\n", "")
        return f"key_material={body}", body

    @add("azure", standalone=False)
    def _(g):
        key = _r(g, B64, 86) + "=="
        s = f"DefaultEndpointsProtocol=https;AccountName=demo{_r(g, LOWER_ALNUM, 6)};AccountKey={key};EndpointSuffix=core.windows.net"
        return s, key

    @add("azure", standalone=False)
    def _(g):
        key = _r(g, B64, 43) + "="
        return f"Endpoint=sb://demo.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={key}", key

    @add("azure")
    def _(g):
        s = _r(g, ALNUM, 3) + str(g.randrange(10)) + "Q~" + _r(g, ALNUM + "_-.", 34)
        return f"AZURE_CLIENT_SECRET_VALUE {s}", s

    @add("twilio")
    def _(g):
        s = "SK" + _r(g, HEX, 32)
        return f"api key sid {s}", s

    @add("mailgun")
    def _(g):
        s = "key-" + _r(g, LOWER_ALNUM, 32)
        return f"MAILGUN={s}", s

    @add("mailgun")
    def _(g):
        s = _r(g, HEX, 32) + "-" + _r(g, HEX, 8) + "-" + _r(g, HEX, 8)
        return f"mailgun private key {s}", s

    @add("databricks")
    def _(g):
        s = "dapi" + _r(g, HEX, 32)
        return f"DATABRICKS_TOKEN={s}", s

    @add("pypi")
    def _(g):
        s = "pypi-AgEIcHlwaS5vcmc" + _r(g, B64URL, 120)
        return f"password = {s}", s

    def provider(make):
        def fn(g):
            s = make(g)
            return f"token={s}", s
        t.setdefault("other_providers", []).append((fn, "any", True))

    for make in (
        lambda g: "gsk_" + _r(g, ALNUM, 52), lambda g: "xai-" + _r(g, ALNUM, 80),
        lambda g: "dop_v1_" + _r(g, HEX, 64), lambda g: "shpat_" + _r(g, HEX, 32),
        lambda g: "shpss_" + _r(g, HEX, 32), lambda g: "lin_api_" + _r(g, ALNUM, 40),
        lambda g: "ntn_" + _r(g, ALNUM, 46), lambda g: "PMAK-" + _r(g, HEX, 24) + "-" + _r(g, HEX, 34),
        lambda g: "ATATT3xFfGF0" + _r(g, B64URL, 180), lambda g: "sntryu_" + _r(g, HEX, 64),
        lambda g: "glsa_" + _r(g, ALNUM, 32) + "_" + _r(g, HEX, 8),
        lambda g: "NRAK-" + _r(g, string.ascii_uppercase + string.digits, 27),
        lambda g: "r8_" + _r(g, ALNUM, 37), lambda g: "pplx-" + _r(g, ALNUM, 48),
        lambda g: "sbp_" + _r(g, HEX, 40), lambda g: "tskey-auth-k" + _r(g, ALNUM, 10) + "-" + _r(g, ALNUM, 33),
        lambda g: "hvs." + _r(g, B64URL, 90), lambda g: "AGE-SECRET-KEY-1" + _r(g, B32, 58),
        lambda g: "dp.pt." + _r(g, ALNUM, 43), lambda g: "sl." + _r(g, B64URL, 140),
        lambda g: "sq0atp-" + _r(g, B64URL, 22), lambda g: "figd_" + _r(g, B64URL, 40),
        lambda g: "pul-" + _r(g, HEX, 40), lambda g: "dapi" + _r(g, HEX, 32) + "-2",
        lambda g: "secret_" + _r(g, ALNUM, 43),
        lambda g: str(g.randrange(10 ** 8, 10 ** 10)) + ":AA" + _r(g, B64URL, 33),
    ):
        provider(make)

    @add("authorization_header", standalone=False)
    def _(g):
        s = base64.b64encode(f"admin:{_r(g, ALNUM, 14)}".encode()).decode()
        return f"curl -H 'Authorization: Basic {s}' https://api.example.com/v1", s

    @add("secret_assignment", standalone=False)
    def _(g):
        name, value = g.choice([("ANTHROPIC_API_KEY", None), ("PGPASSWORD", None), ("MYSQL_PWD", None),
                                ("client_secret", None), ("OPENAI_API_KEY", None), ("DB_PASSWORD", None)])
        s = _r(g, ALNUM, 12) + g.choice("!@#%^") + _r(g, ALNUM, 6)
        sep = g.choice(["=", ": ", " = "])
        return f"{name}{sep}{s}", s

    # --- structural (replaced in place) ---
    @add("uri_credentials", standalone=False)
    def _(g):
        pw = _r(g, ALNUM, 14)
        scheme = g.choice(["postgres", "mysql", "mongodb+srv", "redis", "amqp", "https"])
        return f"DATABASE_URL={scheme}://app_user:{pw}@db.internal.example:5432/prod", pw

    @add("uri_credentials", standalone=False)
    def _(g):
        pw = _r(g, ALNUM, 10) + "9"
        return f"curl -u deploy:{pw} https://ci.example.com/api", pw

    @add("url_signature", standalone=False)
    def _(g):
        sig = _r(g, ALNUM, 30) + "%2B" + _r(g, ALNUM, 10) + "%3D"
        return ("https://acct.blob.core.windows.net/c/f.zip?sv=2022-11-02&ss=b&srt=o&sp=r"
                f"&se=2030-01-01T00:00:00Z&spr=https&sig={sig}"), sig

    @add("url_signature", standalone=False)
    def _(g):
        sig = _r(g, HEX, 64)
        return (f"https://bucket.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20300101T000000Z"
                f"&X-Amz-Expires=3600&X-Amz-Signature={sig}"), sig

    @add("password_assignment", standalone=False)
    def _(g):
        pw = _r(g, ALNUM, 10) + g.choice("0123456789") + g.choice("!$%")
        return g.choice([f'password = "{pw}"', f"password: {pw}", f'{{"password": "{pw}"}}',
                         f"--password={pw}"]), pw

    @add("card_number")
    def _(g):
        prefix, length = g.choice([("4", 16), ("51", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16),
                                   ("3528", 16), ("4", 19), ("62", 16)])
        n = _luhn_complete(prefix, length, g)
        if length == 15:
            shown = g.choice([n, f"{n[:4]} {n[4:10]} {n[10:]}", f"{n[:4]}-{n[4:10]}-{n[10:]}"])
        else:
            sep = g.choice(["", " ", "-"])
            shown = sep.join(n[i:i + 4] for i in range(0, len(n), 4))
        return f"card on file: {shown}, exp 12/30", shown

    @add("ssn")
    def _(g):
        s = f"{g.randrange(1, 666):03d}-{g.randrange(1, 100):02d}-{g.randrange(1, 10000):04d}"
        return f"SSN {s} (employee record)", s

    # --- prefixed tokens ---
    @add("bearer_token", standalone=False)
    def _(g):
        s = _r(g, B64URL, 40)
        return f"-H \"X-Auth: Bearer {s}\"", s

    @add("huggingface_token", standalone=False)
    def _(g):
        s = _r(g, ALNUM, 34)
        return f"HF_TOKEN=hf_{s}", s

    @add("npm_token", standalone=False)
    def _(g):
        s = _r(g, ALNUM, 36)
        return f"//registry.npmjs.org/:_authToken=npm_{s}", s

    @add("sendgrid_key", standalone=False)
    def _(g):
        s = _r(g, B64URL, 22) + "." + _r(g, B64URL, 43)
        return f"SENDGRID=SG.{s}", s

    # --- entropy (tool output only) ---
    @add("high_entropy", "tool", False)
    def _(g):
        s = _r(g, g.choice([ALNUM, B64, B64URL]), g.choice([32, 40, 48, 64]))
        return f'{{"id": 7, "api_key": "{s}", "ok": true}}', s

    @add("high_entropy", "tool", False)
    def _(g):
        s = _b64url(g.randbytes(42))
        return f'<meta name="csrf-token" content="{s}"/>', s

    @add("high_entropy", "tool", False)
    def _(g):
        s = _r(g, B64, 40)  # an AWS-style secret on its own line, no key name
        return f"line 1\n{s}\nline 3", s

    return t


_TABLE = _gen_table()
FAMILIES: tuple = tuple(_TABLE)
"""Rule families in the corpus, in definition order."""


def cases(family: str, n: int, seed: int = 0) -> list[Case]:
    """``n`` labelled cases of ``family``, deterministic for ``seed``; generators of the family
    are used in turn. :raises KeyError: unknown family."""
    gens = _TABLE[family]
    rng = random.Random(f"{family}:{seed}")
    out = []
    for i in range(n):
        fn, field, _ = gens[i % len(gens)]
        text, secret = fn(rng)
        out.append(Case(family, text, secret, field))
    return out


def all_cases(n_per_family: int, seed: int = 0) -> list[Case]:
    """``n_per_family`` cases of every family (see :func:`cases`)."""
    return [c for f in FAMILIES for c in cases(f, n_per_family, seed)]


def _collect(standalone: bool) -> list:
    out: list = []
    for family in FAMILIES:
        rng = random.Random(f"SECRETS:{family}")
        for fn, field, alone in _TABLE[family]:
            text, secret = fn(rng)
            if alone == standalone:
                out.append(secret if standalone else Case(family, text, secret, field))
    return out


SECRETS: list[str] = list(dict.fromkeys(_collect(True)))
"""Distinct realistic fake secrets of different formats (> 60), each self-identifying: sent
alone in any field (prompt, assistant text, tool input/output) it must not reach disk. For the
end-to-end test: push each through the hook and grep every spooled byte for it."""

CONTEXT_CASES: list[Case] = _collect(False)
"""Secrets recognisable only with their context (``PGPASSWORD=...``, ``Bearer ...``, a URL
password, a card number's neighbours): send ``case.text``, grep for ``case.secret``. Cases with
``field == "tool"`` are caught by the entropy rule, so send them as tool input or output."""
