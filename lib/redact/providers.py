"""Redaction: nothing that looks like a secret reaches disk (docs/design.md §7, invariant 7).

Where it sits: every path that writes captured text — hook → envelope → spool, MCP write tools,
``ctxlake import`` — calls :func:`scrub` (or :func:`scrub_deep`) before a byte reaches disk.
It refuses nothing and never raises on a ``str``: the worst outcome is that a whole value is
withheld.

``scrub(text, is_tool_output)`` returns ``(text_to_store, Outcome)``. Rules, in order of
severity (the rule names below are the ``rules_fired`` names; docs/security.md, Redaction):

1. **Secret markers** (whole field) — provider token formats, private keys, JWTs,
   ``Authorization:`` headers and named secret assignments (``AWS_SECRET_ACCESS_KEY=...``).
   Any hit withholds the *whole* value as ``[ctxlake: withheld, <n> bytes, sha256:<hex>]``,
   status ``quarantined``. Every marker needs a token-shaped tail after its prefix, so prose that
   merely names a provider stays clean (reference bug 12.2 #7).
2. **Structural spans** (whole field, every text incl. prompts) — URL credentials
   (``scheme://user:PASS@``), ``curl -u user:PASS``, signed-URL signatures (Azure SAS ``sig=``,
   ``X-Amz-Signature=``, ``X-Goog-Signature=``), Luhn-valid card numbers with a real issuer
   prefix, US SSNs — replaced in place (status ``redacted``); and **keyed secrets**
   (:func:`_scan_keyed`, :func:`_provider_keyed`): a name holding a secret-meaning keyword
   (:data:`_KEYWORDS`) or a provider name (:data:`_PROVIDER_NAMES`), an assignment operator
   within 20 characters (gitleaks' operator set, quotes and JSON escapes around it), and a
   secret-shaped value (:func:`_keyed_value`) — ``password_assignment`` / ``keyed_secret``.
   Markers are found at the start of every token run and after each ``-``/``_`` inside one
   (``key-AKIA…``, ``token_ghp_…``).
3. **Prefixed tokens** (whole field) — ``Bearer ``, ``hf_``, ``npm_``, ``SG.`` only when a
   token-shaped run follows; the prefix is kept, the tail replaced.
4. **Entropy** — tool input/output only, first :data:`MAX_SCAN_BYTES` (256 KiB) of the UTF-8
   text: runs of ``[A-Za-z0-9+/=_-]`` of ≥ 32 characters that look random (see
   :func:`_entropy_secret`), replaced in place — unless :func:`_kept`: an OpenSSH public key, a
   line of a certificate/public-key PEM block, base64 that decodes to binary data in a wrapped
   block or to text the rules find clean (:func:`_base64_verdict`), or a file path
   (:func:`_pathy`).

A path denylist (:func:`denied_path`, :func:`denied_in_command`) withholds both input and
result of a tool call that touches a credential file (reference bug 12.2 #8).

**How it stays fast** (docs/design.md §12: ≤ 20 ms for 1 MiB). Python's ``re`` is quick only when a
pattern starts with a literal; the first version's big alternation cost ~2 s per MiB. So the text
is encoded to UTF-8 once and each rule is found with C-speed primitives: ``bytes.translate`` maps
the text to a character-class string (and lower-cases it: ``bytes.lower`` costs ~4x a translate)
in which runs of token characters are found by one sre search whose pattern is a literal prefix
(``a`` * n: ``bytes.find`` of such a needle in text made of ``a`` and blanks is Horspool's worst
case), digit groups and SSN shapes by ``bytes.find``; provider prefixes are looked up by the first
two bytes of each token run of ≥ 14 characters (one dict lookup per run); markers whose alphabet
leaves the token class are read only inside runs of their own alphabet; provider names before a
value are one trie-shaped regex (one branch per byte, not one per name); keywords
(``authorization``, ``bearer``, ``password`` ...) are found with ``bytes.find`` / literal-prefixed
regexes over the lower-cased bytes, rare bytes (``~``, the lead bytes of lookalike letters) with
memchr. Every window is bounded, so no input makes a rule quadratic. Every pattern matches ASCII
only and every replaced span starts and ends on an ASCII byte, so a replacement never splits a
multibyte character, and the result decodes losslessly (lone surrogates survive via
``surrogatepass``). Provider patterns compile on first use, so importing the module stays cheap.

**Decisions against the reference rule table** (docs/security.md), each with a test: literal markers
scan the whole field (the reference scanned only the 256 KiB window); ``-----BEGIN`` and
``PRIVATE KEY`` fire only as a private-key PEM header (certificates and public keys are not
secrets, prose naming a private key is not one); ``Authorization:`` needs a token-shaped value
(``Bearer <your-token>`` and ``$TOKEN`` stay clean); ``GOOGLE_APPLICATION_CREDENTIALS=<path>``
(``gcp_adc_kv``) is dropped — its value is a file path; the key file's content is caught as
``private_key``; AWS ``AIDA/AROA/AGPA/ANPA`` ids are principals, not credentials; well-known
test card numbers (``4111 1111 1111 1111``) are redacted like any PAN; the entropy rule uses
4.2 bits/char for runs mixing letters and digits (4.5 alone misses a third of random 32-char
tokens).

**Determinism.** The same input always yields the same output; in-place placeholders are
constant per rule (``[ctxlake:redacted]``, ``[ctxlake:redacted-card]`` ...) and the withheld
placeholder carries the sha256 of the whole original value, so the same secret always yields the
same placeholder and a placeholder never contains the secret.

**Precision trades** (each tested in ``tests/redact/``): pure-hex runs are never entropy hits
(git SHAs, digests, lock-file checksums are hex; hex API keys are caught only by a marker or a
keyed assignment); UUIDs, ULIDs, Anthropic ``msg_``/``toolu_`` ids, ``sha512-`` integrity
strings, go.sum ``h1:`` hashes and image payloads (``data:image/...;base64,`` and raw PNG/JPEG/
GIF/WebP base64) stay clean; runs made of words (paths, identifiers, test names) stay clean;
password assignments whose value is letters only (``changeme``, ``your_password_here``) stay
clean. Standard library only and import-cheap (the hook uses it).
"""
from __future__ import annotations

import hashlib
import math
import re

from lib.redact.cmdline import spans as command_line_spans

ENTROPY_MIN_LEN = 32
"""Shortest run (characters) the entropy rule looks at (docs/design.md §7)."""
ENTROPY_THRESHOLD = 4.5
"""Shannon entropy (bits/char) above which a run of any shape is a secret (docs/design.md §7)."""
ENTROPY_THRESHOLD_MIXED = 4.2
"""Lower threshold for runs that mix letters and digits. A uniformly random 32-character
base62 token has a median entropy of only ~4.54 bits/char, so 4.5 alone misses a third of them
(measured in ``bench/redact_corpus.py``); words and paths are excluded before this test."""
MAX_SCAN_BYTES = 256 * 1024
"""The entropy scan covers the first 256 KiB (UTF-8 bytes) of a field; a run that starts inside
the window is scanned to its end. Markers and structural rules scan the whole field."""
MAX_SCAN_CHARS = MAX_SCAN_BYTES
"""Backward-compatible alias of :data:`MAX_SCAN_BYTES` (the window is measured in bytes)."""

STATUS_ORDER = {"clean": 0, "redacted": 1, "quarantined": 2}

PLACEHOLDER = "[ctxlake:redacted]"
PLACEHOLDER_CARD = "[ctxlake:redacted-card]"
PLACEHOLDER_SSN = "[ctxlake:redacted-ssn]"
PLACEHOLDER_SECRET = "[ctxlake:redacted-secret]"

_P = PLACEHOLDER.encode()
_P_CARD = PLACEHOLDER_CARD.encode()
_P_SSN = PLACEHOLDER_SSN.encode()
_P_SECRET = PLACEHOLDER_SECRET.encode()


class Outcome:
    """Result of scrubbing one value: ``status`` clean|redacted|quarantined, ``rules`` fired
    (sorted tuple of rule names). Immutable, compared and hashed by value (a plain class, not a
    dataclass: the hook imports this module, and building a dataclass costs milliseconds)."""

    __slots__ = ("status", "rules")

    def __init__(self, status: str = "clean", rules: tuple = ()):
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "rules", rules)

    def __setattr__(self, name, value):
        raise AttributeError(f"Outcome is immutable: cannot set {name!r}")

    def __eq__(self, other):
        return (self.status, self.rules) == (other.status, other.rules) if isinstance(other, Outcome) else NotImplemented

    def __hash__(self):
        return hash((self.status, self.rules))

    def __repr__(self) -> str:
        return f"Outcome(status={self.status!r}, rules={self.rules!r})"


CLEAN = Outcome()


def withheld(text: str) -> str:
    """Placeholder for a wholly withheld value: UTF-8 size and sha256, never the value.

    ``[ctxlake: withheld, <n> bytes, sha256:<64 hex>]``; lone surrogates are hashed as
    ``surrogatepass`` bytes, so any ``str`` works.
    """
    raw = text.encode("utf-8", "surrogatepass")
    return f"[ctxlake: withheld, {len(raw)} bytes, sha256:{hashlib.sha256(raw).hexdigest()}]"


def shannon_entropy(s) -> float:
    """Shannon entropy of ``s`` (``str`` or ``bytes``) in bits per character; 0.0 if empty."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(ch) for ch in set(s)))


# --------------------------------------------------------------------------------------
# Character classes. Each table maps a byte to a class byte, for bytes.translate.

def _table(classes: dict, default: int) -> bytes:
    out = bytearray([default]) * 256
    for chars, cls in classes.items():
        for ch in chars.encode():
            out[ch] = cls
    return bytes(out)


class _Lazy:
    """A regex compiled on first use. The hook's capture child scrubs one event and exits, so
    the ~100 provider patterns are compiled only when a candidate token asks for one."""

    __slots__ = ("pattern", "rx")

    def __init__(self, pattern):
        self.pattern = pattern
        self.rx = None

    def match(self, *a):
        return (self.rx or self._compile()).match(*a)

    def search(self, *a):
        return (self.rx or self._compile()).search(*a)

    def fullmatch(self, *a):
        return (self.rx or self._compile()).fullmatch(*a)

    def finditer(self, *a):
        return (self.rx or self._compile()).finditer(*a)

    def sub(self, *a):
        return (self.rx or self._compile()).sub(*a)

    def split(self, *a):
        return (self.rx or self._compile()).split(*a)

    def findall(self, *a):
        return (self.rx or self._compile()).findall(*a)

    def _compile(self):
        self.rx = re.compile(self.pattern)
        return self.rx


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_TOKEN_CLS = _table({_ALNUM + "_-": ord("a")}, ord(" "))   # provider-token runs
_ENT_CLS = _table({_ALNUM + "+/=_-": ord("a")}, ord(" "))  # entropy runs (docs/design.md §7)
_DIGIT_CLS = _table({"0123456789": ord("d"), " ": ord("s"), "-": ord("-"),
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_": ord("w")}, ord("x"))
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
"""``bytes.lower`` as a translate table (ASCII only, as ``bytes.lower``; ~4x faster per MiB)."""
_WORD_BYTES = frozenset((_ALNUM + "_").encode())
_LOWER_LETTERS = frozenset(b"abcdefghijklmnopqrstuvwxyz")

_MARKER_MIN_RUN = 16
"""Every provider token is at least 16 token characters long, prefix included (Stripe keys
``sk_prod_`` + 10, Settlemint ``sm_pat_`` + 16)."""


def _bounded(b: bytes, i: int) -> bool:
    """True when position ``i`` starts a word: start of text, a non-word byte before it, or a
    JSON/shell escape (``\\n``, ``\\t``, ``\\r``) right before it."""
    if i == 0 or b[i - 1] not in _WORD_BYTES:
        return True
    return i >= 2 and b[i - 1] in b"ntr" and b[i - 2] == 92


_HAS_DIGIT = re.compile(rb"[0-9]").search
_HAS_UPPER = re.compile(rb"[A-Z]").search
_HAS_LOWER = re.compile(rb"[a-z]").search


def _mixed(tail: bytes) -> bool:
    """Token-shaped: the tail mixes digits and letters, or upper and lower case."""
    upper = _HAS_UPPER(tail) is not None
    lower = _HAS_LOWER(tail) is not None
    return (upper and lower) or ((upper or lower) and _HAS_DIGIT(tail) is not None)


# --------------------------------------------------------------------------------------
# 1. Secret markers. (anchor, rule, regex matched at the anchor, needs a mixed tail).
# A marker is tried only at the start of a token run of >= 20 [A-Za-z0-9_-] characters (or the
# character after a JSON escape), so a prefix inside a word ("task-", "disk-") never fires.
# Sources: each provider's documentation of its token format; gitleaks / detect-secrets rule
# sets for the prefixes; docs/security.md, Redaction for the rule names it defines.

_B64U = rb"[A-Za-z0-9_-]"
_END = rb"(?![A-Za-z0-9_-])"

# The last field asks for a token-shaped tail (_mixed: letters and digits, or both cases). Every
# provider tail below is random base62/base64/hex, so it always is; "sk-ant-admin01-your_token"
# is not. AWS key ids (base32, 16 chars: 3.6 % have no digit) and age keys skip the check.
_START_MARKERS = [
    # Anthropic: sk-ant-api03-<93>AA, admin keys sk-ant-admin01-<93>AA (console docs).
    (b"sk-ant-admin01-", "anthropic_admin_key", rb"sk-ant-admin01-" + _B64U + rb"{20,}", True),
    (b"sk-ant-", "anthropic_key", rb"sk-ant-(?:[a-z]{2,8}\d\d-)?+(" + _B64U + rb"{20,})", True),
    # OpenAI project / service-account / admin keys: sk-proj-<156>, sk-svcacct-..., sk-admin-...
    (b"sk-proj-", "openai_project_key", rb"sk-proj-" + _B64U + rb"{20,}", True),
    (b"sk-svcacct-", "openai_project_key", rb"sk-svcacct-" + _B64U + rb"{20,}", True),
    (b"sk-admin-", "openai_project_key", rb"sk-admin-" + _B64U + rb"{20,}", True),
    (b"sk-None-", "openai_project_key", rb"sk-None-" + _B64U + rb"{20,}", True),
    (b"sk-or-v1-", "openrouter_key", rb"sk-or-v1-[0-9a-f]{64}", True),
    # Legacy OpenAI sk-<48 alnum>, DeepSeek sk-<32 hex>, other sk- keys (reference: sk-).
    (b"sk-", "anthropic_or_openai_key", rb"sk-[A-Za-z0-9]{20,}" + _END, True),
    (b"sk_live_", "stripe_live_key", rb"sk_live_[A-Za-z0-9]{10,}", True),
    (b"sk_prod_", "stripe_live_key", rb"sk_prod_[A-Za-z0-9]{10,}", True),
    (b"rk_prod_", "stripe_restricted_key", rb"rk_prod_[A-Za-z0-9]{10,}", True),
    (b"sk_test_", "stripe_test_key", rb"sk_test_[A-Za-z0-9]{10,}", True),
    (b"rk_live_", "stripe_restricted_key", rb"rk_live_[A-Za-z0-9]{10,}", True),
    (b"rk_test_", "stripe_restricted_key", rb"rk_test_[A-Za-z0-9]{10,}", True),
    (b"whsec_", "stripe_webhook_secret", rb"whsec_[A-Za-z0-9+/]{24,}", True),
    # AWS access key ids (AKIA long-term, ASIA STS, ABIA/ACCA service). AIDA/AROA/AGPA/ANPA are
    # principal ids printed by `aws sts get-caller-identity`, not credentials: left clean.
    (b"AKIA", "aws_access_key_id", rb"AKIA[A-Z0-9]{16}" + _END, False),
    (b"ABIA", "aws_access_key_id", rb"ABIA[A-Z2-7]{16}" + _END, False),
    (b"ACCA", "aws_access_key_id", rb"ACCA[A-Z2-7]{16}" + _END, False),
    (b"ASIA", "aws_session_key_id", rb"ASIA[A-Z0-9]{16}" + _END, False),
    # GitHub (github.blog 2021 token format): prefix + 36 base62 (+ fine-grained 82 chars).
    (b"github_pat_", "github_fine_grained_pat", rb"github_pat_[A-Za-z0-9_]{40,}", True),
    (b"ghp_", "github_pat", rb"ghp_[A-Za-z0-9]{30,}", True),
    (b"gho_", "github_oauth", rb"gho_[A-Za-z0-9]{30,}", True),
    (b"ghu_", "github_user_token", rb"ghu_[A-Za-z0-9]{30,}", True),
    (b"ghs_", "github_server_token", rb"ghs_[A-Za-z0-9]{30,}", True),
    (b"ghr_", "github_refresh_token", rb"ghr_[A-Za-z0-9]{30,}", True),
    # Slack (api.slack.com/authentication/token-types).
    (b"xoxb-", "slack_bot_token", rb"xoxb-[0-9]{6,}-[A-Za-z0-9-]{10,}", True),
    (b"xoxp-", "slack_user_token", rb"xoxp-[0-9]{6,}-[A-Za-z0-9-]{10,}", True),
    (b"xoxa-", "slack_app_token", rb"xoxa-[0-9A-Za-z-]{10,}", True),
    (b"xoxr-", "slack_refresh_token", rb"xoxr-[0-9A-Za-z-]{10,}", True),
    (b"xoxe", "slack_token", rb"xoxe(?:\.xox[bp])?-[0-9A-Za-z-]{10,}", True),
    (b"xoxs-", "slack_token", rb"xoxs-[0-9A-Za-z-]{10,}", True),
    (b"xapp-", "slack_app_level_token", rb"xapp-\d-[A-Za-z0-9-]{10,}", True),
    # GitLab (docs.gitlab.com/ee/security/tokens): glpat-<20+>, runner glrt-, others.
    (b"glpat-", "gitlab_pat", rb"glpat-" + _B64U + rb"{20,}", True),
    (b"glrt-", "gitlab_runner_token", rb"glrt-" + _B64U + rb"{20,}", True),
    (b"gldt-", "gitlab_token", rb"gldt-" + _B64U + rb"{20,}", True),
    (b"glptt-", "gitlab_token", rb"glptt-" + _B64U + rb"{20,}", True),
    (b"glcbt-", "gitlab_token", rb"glcbt-" + _B64U + rb"{20,}", True),
    (b"glft-", "gitlab_token", rb"glft-" + _B64U + rb"{20,}", True),
    (b"glsoat-", "gitlab_token", rb"glsoat-" + _B64U + rb"{20,}", True),
    # Google: API key AIza+35, OAuth client secret GOCSPX-+28.
    (b"AIza", "google_api_key", rb"AIza[0-9A-Za-z_-]{35}", True),
    (b"GOCSPX-", "google_oauth_client_secret", rb"GOCSPX-" + _B64U + rb"{24,}", True),
    # JWT: header.payload[.signature], both JSON objects (base64url of '{"').
    (b"eyJ", "jwt", rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,})?", True),
    (b"ey", "jwt", rb"ey[A-Za-z0-9]{17,}\.ey[A-Za-z0-9/_-]{17,}\.", True),
    # Private key bodies without their PEM header: PKCS#8 / PKCS#1 RSA DER, SEC1 EC, OpenSSH.
    (b"MII", "private_key", rb"MII[A-Za-z0-9+/]{3}IBA(?:DAN|AK)", True),
    (b"MIG", "private_key", rb"MIG[A-Za-z0-9+/]AgEAMBMGByqGSM49", True),
    (b"MHcCAQEE", "private_key", rb"MHcCAQEE[A-Za-z0-9+/]{20,}", True),
    (b"b3BlbnNzaC1rZXktdjE", "private_key", rb"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{20,}", True),
    (b"AGE-SECRET-KEY-1", "age_secret_key", rb"AGE-SECRET-KEY-1[0-9A-Z]{50,}", False),
    # Other providers (each documented prefix + length).
    (b"gsk_", "groq_key", rb"gsk_[A-Za-z0-9]{20,}", True),
    (b"xai-", "xai_key", rb"xai-[A-Za-z0-9]{20,}", True),
    (b"dop_v1_", "digitalocean_token", rb"do[opr]_v1_[a-f0-9]{40,}", True),
    (b"doo_v1_", "digitalocean_token", rb"do[opr]_v1_[a-f0-9]{40,}", True),
    (b"dor_v1_", "digitalocean_token", rb"do[opr]_v1_[a-f0-9]{40,}", True),
    (b"shpat_", "shopify_access_token", rb"shpat_[a-fA-F0-9]{20,}", True),
    (b"shpss_", "shopify_shared_secret", rb"shpss_[a-fA-F0-9]{20,}", True),
    (b"shpca_", "shopify_token", rb"shpca_[a-fA-F0-9]{20,}", True),
    (b"shppa_", "shopify_token", rb"shppa_[a-fA-F0-9]{20,}", True),
    # Twilio API key SID: SK + 32 hex.
    (b"SK", "twilio_key", rb"SK[0-9a-fA-F]{32}" + _END, True),
    # Mailgun private key: key-<32 [0-9a-z]> (docs example key-3ax6xnjp29jd6fds4gc373sgvjxteol0).
    (b"key-", "mailgun_key", rb"key-[0-9a-z]{32}" + _END, True),
    (b"dapi", "databricks_token", rb"dapi[0-9a-f]{32}(?:-\d)?" + _END, True),
    (b"pypi-AgE", "pypi_token", rb"pypi-AgE[A-Za-z0-9_-]{40,}", True),
    (b"lin_api_", "linear_api_key", rb"lin_api_[A-Za-z0-9]{40}", True),
    (b"ntn_", "notion_token", rb"ntn_[A-Za-z0-9]{40,}", True),
    (b"secret_", "notion_token", rb"secret_[A-Za-z0-9]{43}" + _END, True),
    (b"PMAK-", "postman_api_key", rb"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", True),
    (b"ATATT3", "atlassian_api_token", rb"ATATT3[A-Za-z0-9_=-]{100,}", True),
    (b"sntrys_", "sentry_token", rb"sntrys_eyJ[A-Za-z0-9+/=_-]{30,}", True),
    (b"sntryu_", "sentry_token", rb"sntryu_[a-f0-9]{64}", True),
    (b"glsa_", "grafana_token", rb"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", True),
    (b"glc_", "grafana_token", rb"glc_[A-Za-z0-9+/]{32,}", True),
    (b"NRAK-", "newrelic_api_key", rb"NRAK-[A-Z0-9]{27}", True),
    (b"r8_", "replicate_token", rb"r8_[A-Za-z0-9]{37}", True),
    (b"pplx-", "perplexity_key", rb"pplx-[A-Za-z0-9]{40,}", True),
    (b"sbp_", "supabase_token", rb"sbp_[a-f0-9]{40}", True),
    (b"sb_secret_", "supabase_token", rb"sb_secret_" + _B64U + rb"{20,}", True),
    (b"tskey-", "tailscale_key", rb"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}", True),
    (b"ops_eyJ", "onepassword_token", rb"ops_eyJ[A-Za-z0-9+/=_-]{30,}", True),
    (b"pul-", "pulumi_token", rb"pul-[a-f0-9]{40}", True),
    (b"figd_", "figma_token", rb"figd_" + _B64U + rb"{40,}", True),
    # More documented prefixes (gitleaks rule set, MIT; each provider's token docs).
    (b"A3-", "onepassword_secret_key", rb"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}", False),
    (b"p8e-", "adobe_client_secret", rb"p8e-[A-Za-z0-9]{32}", True),
    (b"LTAI", "alibaba_access_key_id", rb"LTAI[A-Za-z0-9]{20}" + _END, True),
    (b"pat", "airtable_token", rb"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", True),
    (b"FLWSECK", "flutterwave_key", rb"FLWSECK(?:_TEST)?-[A-Za-z0-9]{12,}", True),
    (b"FLWPUBK", "flutterwave_key", rb"FLWPUBK(?:_TEST)?-[A-Za-z0-9]{12,}", True),
    (b"glffct-", "gitlab_token", rb"glffct-" + _B64U + rb"{20}", True),
    (b"glimt-", "gitlab_token", rb"glimt-" + _B64U + rb"{25}", True),
    (b"gloas-", "gitlab_token", rb"gloas-" + _B64U + rb"{20,}", True),
    (b"glagent-", "gitlab_token", rb"glagent-" + _B64U + rb"{50,}", True),
    (b"GR1348941", "gitlab_token", rb"GR1348941" + _B64U + rb"{20}", True),
    (b"API-", "octopus_deploy_key", rb"API-[A-Z0-9]{26}" + _END, False),
    (b"sm_", "settlemint_token", rb"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}", True),
    (b"shippo_", "shippo_token", rb"shippo_(?:live|test)_[a-fA-F0-9]{40}", True),
    (b"pubkey-", "mailgun_key", rb"pubkey-[a-f0-9]{32}", True),
    (b"NRJS-", "newrelic_api_key", rb"NRJS-[a-f0-9]{19}", True),
    (b"NRII-", "newrelic_api_key", rb"NRII-[A-Za-z0-9-]{32}", True),
    (b"pnu_", "prefect_token", rb"pnu_[A-Za-z0-9]{36}", True),
    (b"rdme_", "readme_token", rb"rdme_[a-z0-9]{70}", True),
    (b"xkeysib-", "sendinblue_key", rb"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", True),
    (b"fio-u-", "frameio_token", rb"fio-u-[A-Za-z0-9_=-]{64}", True),
    (b"AKCp", "artifactory_api_key", rb"AKCp[A-Za-z0-9]{69}" + _END, True),
    (b"cmVmd", "artifactory_reference_token", rb"cmVmd[A-Za-z0-9]{59}" + _END, True),
    (b"CLOJARS_", "clojars_token", rb"CLOJARS_[A-Za-z0-9]{60}", True),
    (b"4b1d", "clickhouse_api_secret", rb"4b1d[A-Za-z0-9]{38}" + _END, True),
    (b"EAA", "facebook_access_token", rb"EAA[MC][A-Za-z0-9]{100,}", True),
    (b"eyJrIjoi", "grafana_token", rb"eyJrIjoi[A-Za-z0-9]{70,400}", True),
    (b"HRKU-AA", "heroku_api_key", rb"HRKU-AA[A-Za-z0-9_-]{58}", True),
    (b"duffel_", "duffel_token", rb"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}", True),
    (b"ZXlK", "jwt", rb"ZXlK[A-Za-z0-9+/_\\-]{40,}", True),
    (b"sq0atp-", "square_token", rb"sq0atp-" + _B64U + rb"{22,}", True),
    (b"sq0csp-", "square_token", rb"sq0csp-" + _B64U + rb"{40,}", True),
    (b"EAAA", "square_token", rb"EAAA[A-Za-z0-9_-]{22,60}" + _END, True),
    # More documented shapes (gitleaks config/gitleaks.toml, MIT: the rule named after each).
    (b"api_org_", "huggingface_token", rb"api_org_[A-Za-z]{34}" + _END, False),
    (b"rubygems_", "rubygems_token", rb"rubygems_[a-f0-9]{48}" + _END, True),
    (b"live_", "lob_api_key", rb"live_(?:pub_)?[a-f0-9]{31,35}" + _END, True),
    (b"test_", "lob_api_key", rb"test_(?:pub_)?[a-f0-9]{31,35}" + _END, True),
    (b"s-s4t2", "intra42_client_secret", rb"s-s4t2(?:ud|af)-[a-fA-F0-9]{64}" + _END, True),
    (b"xoxo-", "slack_token", rb"xoxo-[0-9]+-[0-9]+-[0-9]+-[a-fA-F0-9]+", False),
    (b"xoxs-", "slack_token", rb"xoxs-[0-9]+-[0-9]+-[0-9]+-[a-fA-F0-9]+", False),
    (b"EZAK", "easypost_token", rb"EZAK[A-Za-z0-9]{54}" + _END, True),
    (b"EZTK", "easypost_token", rb"EZTK[A-Za-z0-9]{54}" + _END, True),
    (b"fo1_", "flyio_token", rb"fo1_[A-Za-z0-9_-]{43}" + _END, True),
    (b"fm1", "flyio_token", rb"fm1[ar]_[A-Za-z0-9+/]{30,}", True),
    (b"fm2_", "flyio_token", rb"fm2_[A-Za-z0-9+/]{30,}", True),
    (b"ico-", "infracost_token", rb"ico-[A-Za-z0-9]{32}" + _END, True),
    (b"tk-us-", "scalingo_token", rb"tk-us-[A-Za-z0-9_-]{48}" + _END, True),
    (b"sgp_", "sourcegraph_token", rb"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}" + _END, True),
]

# Markers whose anchor ends in "." (the token run starts after it).
_DOT_MARKERS = [
    (b"dt0c01.", "dynatrace_token", rb"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", True),
    (b"pk.", "mapbox_token", rb"pk\.[A-Za-z0-9]{60}\.[A-Za-z0-9_-]{22}", True),
    (b"t1.", "yandex_token", rb"t1\.[A-Za-z0-9_-]+={0,2}\.[A-Za-z0-9_-]{86}", True),
    (b"atlasv1.", "terraform_cloud_token", rb"atlasv1\.[A-Za-z0-9_=-]{60,70}", True),
    (b"sat.", "harness_token", rb"sat\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}", True),
    (b"pat.", "harness_token", rb"pat\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}", True),
    (b"ya29.", "google_oauth_token", rb"ya29\.[0-9A-Za-z_-]{20,}", True),
    (b"hvs.", "vault_token", rb"hvs\.[A-Za-z0-9_-]{24,}", True),
    (b"hvb.", "vault_token", rb"hvb\.[A-Za-z0-9_-]{24,}", True),
    (b"sk.", "mapbox_secret_token", rb"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", True),
    (b"v1.", "cloudflare_origin_ca_key", rb"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", True),
    (b"s.", "vault_token", rb"s\.(?=[A-Za-z]*[0-9])[A-Za-z0-9]{24}(?![A-Za-z0-9_.-])", True),
    (b"sl.", "dropbox_token", rb"sl\.[A-Za-z0-9=_-]{130,}", True),
    (b"dp.pt.", "doppler_token", rb"dp\.pt\.[A-Za-z0-9]{40,}", True),
    (b"dp.st.", "doppler_token", rb"dp\.st\.(?:[a-z0-9_-]{2,35}\.)?[A-Za-z0-9]{40,}", False),
]
# Prefixed tokens replaced in place (docs/security.md, Redaction): keep the prefix, drop the tail.
_PREFIXED = [
    (b"hf_", "huggingface_token", _Lazy(rb"hf_([A-Za-z0-9]{20,})")),
    (b"npm_", "npm_token", _Lazy(rb"npm_([A-Za-z0-9]{20,})")),
]
_SENDGRID = _Lazy(rb"SG\.([A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|[A-Za-z0-9=_.-]{66}(?![A-Za-z0-9=_.-]))")
_FOUND_MARKERS = [
    # Anchors of tokens whose alphabet leaves the token-run class ([A-Za-z0-9_-]): "=", "+", "/",
    # "." or "~" may cut the run right after the anchor, so these are found by bytes.find over
    # the whole field instead (one memchr-speed pass each). Sources: gitleaks rules
    # hashicorp-tf-api-token, grafana-cloud-api-token, 1password-service-account-token,
    # sentry-org-token, openshift-user-token (config/gitleaks.toml, MIT).
    (b"atlasv1.", "terraform_cloud_token", _Lazy(rb"atlasv1\.[A-Za-z0-9_=-]{60,70}")),
    (b"glc_", "grafana_token", _Lazy(rb"glc_[A-Za-z0-9+/]{32,400}")),
    (b"ops_eyJ", "onepassword_token", _Lazy(rb"ops_eyJ[A-Za-z0-9+/=_-]{30,}")),
    (b"sntrys_eyJ", "sentry_token", _Lazy(rb"sntrys_eyJ[A-Za-z0-9+/=_-]{30,}")),
    (b"whsec_", "stripe_webhook_secret", _Lazy(rb"whsec_[A-Za-z0-9+/]{24,}")),
    (b"tfp_", "typeform_token", _Lazy(rb"tfp_[A-Za-z0-9_.=-]{59}")),
    (b"pscale_", "planetscale_token", _Lazy(rb"pscale_(?:pw|oauth|tkn)_[A-Za-z0-9_=.-]{32,64}")),
    (b"ABSK", "aws_bedrock_api_key", _Lazy(rb"ABSK[A-Za-z0-9+/]{109,269}")),
    (b"bedrock-api-key-", "aws_bedrock_api_key", _Lazy(rb"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=]{0,2000}")),
]
_K8S_SECRET = _Lazy(rb"kind:(?:[ \t]|\\t)*(?:\\?[\"'])?secret(?![a-z0-9_-])")
_K8S_DATA_VALUE = _Lazy(rb"[\w.-]+:(?:(?:[ \t]|\\t)*[|>][-+]?)?(?:\s|\\[tnr])*(?:\\?[\"'])?([A-Za-z0-9+/]{10,}={0,3})(?![A-Za-z0-9+/=])")
"""``kind: Secret`` and, within 300 bytes, ``data:``: each ``name: <base64>`` after it (4 KiB) is
a secret's value (gitleaks ``kubernetes-secret-yaml``)."""
_AUTHRESS = _Lazy(rb"(?:(?<![A-Za-z0-9_])|(?<=\\[ntr]))(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120}")
_OPENSHIFT = _Lazy(rb"sha256~[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")
_FACEBOOK_APP_TOKEN = _Lazy(rb"(?<![0-9])[0-9]{15,16}(?:\||%7[Cc]|%)([0-9a-zA-Z_-]{27,40})(?![0-9a-zA-Z_-])")
"""A Facebook app access token, ``<app id>|<app secret>`` (15–16 digit id; gitleaks
``facebook-access-token``); ``%``/``%7C`` when URL-encoded."""


def _by_first_two(markers, prefixed) -> dict:
    """First two bytes of an anchor → [(anchor, rule, regex, needs mixed tail, in place)],
    most specific (longest) anchor first."""
    rows = [(a, rule, _Lazy(p), mixed, False) for a, rule, p, mixed in markers]
    rows += [(a, rule, rx, False, True) for a, rule, rx in prefixed]
    out: dict = {}
    for row in rows:
        out.setdefault(row[0][:2], []).append(row)
    for key in out:
        out[key].sort(key=lambda r: -len(r[0]))
    return out


_START_BY_2 = _by_first_two(_START_MARKERS, _PREFIXED)
_JWT = _Lazy(next(p for a, _, p, _ in _START_MARKERS if a == b"eyJ"))
_SGR = re.compile(rb"[0-9]{1,3}m")
_DOT_ROWS = [(a, rule, _Lazy(p), m) for a, rule, p, m in _DOT_MARKERS]
_DOT_ANCHORS = tuple(a for a, *_ in _DOT_MARKERS)

# Context markers (checked on a run by the character before it).
_TELEGRAM = _Lazy(rb"(?<![0-9])[0-9]{5,16}:A[A-Za-z0-9_-]{34}" + _END)
_AZURE_AD_SECRET = _Lazy(rb"(?:(?<![A-Za-z0-9_~.-])|(?<=\\[ntr]))[A-Za-z0-9_.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])")
_GOOGLE_REFRESH = _Lazy(rb"1//0[A-Za-z0-9_-]{40,}")
_MAILGUN_NEW = _Lazy(rb"[0-9a-h]{32}-[0-9a-h]{8}-[0-9a-h]{8}")
_SLACK_HOOK = b"hooks.slack.com/services/"
_DISCORD_HOOK = _Lazy(rb"discord(?:app)?\.com/api/webhooks/[0-9]{5,}/$")
_PEM_PRIVATE = _Lazy(rb"-----BEGIN[A-Z0-9 _-]{0,100}PRIVATE KEY(?: BLOCK)?-----")

# Keyed secrets (keyword-anchored assignments, as gitleaks' generic-api-key and detect-secrets'
# KeywordDetector do): a name that means secret, an assignment operator, then a value only the
# name identifies. Keywords are found with bytes.find over the lower-cased text; the name around
# the keyword and the value after the operator are then read with one anchored regex.
_KEYWORDS = (b"key", b"token", b"secret", b"pass", b"pwd", b"auth", b"cred", b"contribsys__com")
"""Substrings that make a name mean secret (gitleaks ``generic-api-key`` keywords: access, auth,
api, credential, creds, key, passwd/password, secret, token; ``access``/``api`` names always
hold one of ours: ``api_key``, ``access_token``)."""
_PROVIDER_NAMES = (
    b"adobe", b"airtable", b"algolia", b"alibaba", b"artifactory", b"asana", b"atlassian", b"beamer",
    b"bintray", b"bitbucket", b"bittrex", b"codecov", b"cohere", b"coinbase", b"confluence", b"confluent",
    b"contentful", b"datadog", b"droneci", b"dropbox", b"etsy", b"facebook", b"finicity", b"freshbooks",
    b"gitter", b"gocardless", b"heroku", b"intercom", b"jfrog", b"jira", b"kraken", b"launchdarkly",
    b"linear", b"linkedin", b"linked_in", b"linked-in", b"looker", b"mailchimp", b"mailgun", b"mapbox",
    b"mattermost", b"meraki", b"messagebird", b"message_bird", b"message-bird", b"netlify", b"newrelic",
    b"new_relic", b"new-relic", b"nytimes", b"newyorktimes", b"new-york-times", b"okta", b"plaid",
    b"privateai", b"private_ai", b"private-ai", b"rapidapi", b"sentry", b"sonar", b"telegr", b"twitch",
    b"xray", b"yandex", b"zendesk", b"shippo", b"settlemint", b"harness", b"etsy", b"octopus", b"openshift",
    b"twilio", b"sendgrid", b"sendinblue", b"duffel", b"easypost", b"flutterwave", b"frameio", b"gcp",
    b"cisco", b"gitlab", b"clickhouse", b"clojars", b"dynatrace", b"maxmind", b"prefect", b"readme", b"kubernetes",
    b"adafruit", b"cloudflare", b"dnkey", b"discord", b"fastly", b"finnhub", b"flickr", b"hubspot", b"kucoin",
    b"sendbird", b"contribsys", b"snyk", b"squarespace", b"sumo", b"travis", b"twitter", b"typeform", b"mailchimpsdk",
    b"sourcegraph")
"""Provider names that mark a value as that provider's credential when it is assigned to a name
holding them (``HEROKU_API = <uuid>``, ``datadog: <40 hex>``): the providers whose key shapes
have no prefix of their own. Source: the keyword lists of the gitleaks rules for those
providers (``config/gitleaks.toml``, MIT). ``sourcegraph``: legacy Sourcegraph tokens are any 40
hex digits, so only a name holding the provider's name identifies one (a bare SHA stays clean)."""


def _trie_pattern(words) -> bytes:
    """A regex matching any of ``words`` (bytes), factored as a trie: ``mailchimp(?:sdk)?``.
    At each position it matches the longest word, as a longest-first alternation does, but
    sre tries one branch per byte instead of one per word (the alternation of 110 provider
    names cost ~4 µs per 48-byte name window)."""
    words = sorted(set(words))
    if words == [b""]:
        return b""
    ends = b"" in words
    groups: dict = {}
    for w in words:
        if w:
            groups.setdefault(w[:1], []).append(w[1:])
    alts = [re.escape(c) + _trie_pattern(rest) for c, rest in sorted(groups.items())]
    body = alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"
    return b"(?:" + body + b")?" if ends else body


_PROVIDER_KW = _Lazy(_trie_pattern(_PROVIDER_NAMES))
_KEYED_TAIL = _Lazy(
    rb"(?:[ \t\w.-]|\\t){0,20}?(?:[ \t'\"`]|\\[\"t]){0,4}(:{1,3}=|=>|\?=|\|\||[=:>,])[ \t=]{0,4}"
    rb"(?:\\?\"([^\"\\\n]{4,256})\\?\"|'([^'\\\n]{4,256})'|`([^`\\\n]{4,256})`"
    rb"|(?:[ \t=`'\"]|\\[\"t]){0,6}([^\s\"'`,;()\[\]{}<>\\]{4,256}))")
"""After the keyword: the rest of the name (≤ 20 word characters, spaces, dots, dashes), up to
four quotes or blanks (``\\"`` in JSON-escaped text), an assignment operator (``=``, ``:``,
``:=``, ``::=``, ``=>``, ``?=``, ``||``, ``>``, ``,``: the gitleaks set), then the value, quoted
(may hold spaces) or bare after up to six quotes, blanks or ``=``. Bounded everywhere: no input makes it backtrack far."""
_NAMED_KEYS = [
    # (full key name the assignment's name ends with, rule, quarantine the whole value?)
    (b"aws_secret_access_key", "aws_secret_kv", True),
    (b"secretaccesskey", "aws_secret_kv", True),
    (b"anthropic_api_key", "anthropic_key_kv", True),
    (b"openai_api_key", "openai_key_kv", True),
    (b"accountkey", "azure_storage_key", True),
    (b"sharedaccesskey", "azure_shared_access_key", True),
    (b"private_key", "private_key", True),
    (b"secret_key", "secret_assignment", True),
    (b"client_secret", "secret_assignment", True),
    (b"api_secret", "secret_assignment", True),
    (b"pgpassword", "postgres_password_kv", True),
    (b"db_password", "secret_assignment", True),
    (b"db_pass", "secret_assignment", True),
    (b"mysql_pwd", "mysql_password_kv", True),
]
_NOT_SECRET_BEFORE = frozenset((
    b"primary", b"foreign", b"sort", b"partition", b"cache", b"idempotency", b"object", b"row", b"hash",
    b"range", b"lookup", b"dedup", b"unique", b"composite", b"map", b"dict", b"i18n", b"translation",
    b"message", b"react", b"list", b"column", b"index", b"group", b"shard", b"routing", b"s3", b"bucket",
    b"public", b"pub", b"next", b"page", b"continuation", b"cancellation", b"cancel", b"sync", b"resume",
    b"pagination", b"max", b"min", b"num", b"total", b"by", b"com", b"sur", b"tres", b"encom", b"over",
    b"under", b"monkey", b"hot", b"don", b"tur", b"hoc", b"joc", b"whis", b"sentence", b"word", b"sub",
    b"ssh_auth", b"x", b"xauth", b"key", b"path", b"storage", b"registry", b"kms", b"gpg", b"pgp"))
"""Words right before the keyword that make the name an identifier, a pagination cursor or a
public value (``primary_key``, ``next_token``, ``public_key``, ``bypass``, ``monkey``)."""
_NOT_SECRET_AFTER = frozenset((
    b"name", b"names", b"type", b"types", b"size", b"len", b"length", b"path", b"file", b"format", b"pair",
    b"usage", b"alias", b"field", b"column", b"prefix", b"fn", b"func", b"word", b"event", b"code", b"map",
    b"count", b"url", b"uri", b"endpoint", b"limit", b"limits", b"izer", b"ize", b"ization", b"ref", b"arn", b"store",
    b"manager", b"version", b"provider", b"method", b"mode", b"domain", b"host", b"server", b"scheme",
    b"plugin", b"backend", b"required", b"enabled", b"dir", b"or", b"ors", b"ority", b"orities",
    b"entication", b"enticate", b"enticated", b"orize", b"orized", b"orship", b"board", b"boards", b"stroke",
    b"strokes", b"down", b"up", b"press", b"word", b"words", b"frame", b"frames", b"ring", b"chain",
    b"through", b"thru", b"enger", b"engers", b"age", b"ages", b"ed", b"es", b"ing", b"port", b"id_path",
    b"spec", b"kind", b"label", b"header", b"headers", b"schema", b"class", b"data", b"dict", b"client"))
"""First word after the keyword that makes the name something else (``key_name``,
``token_count``, ``secret_arn``, ``author``, ``keyboard``, ``passthrough``, ``tokenizer``)."""
_KEYWORD_REST = {b"pass": _Lazy(rb"(?:word|wd|phrase)?"), b"cred": _Lazy(rb"(?:entials?|s)?"),
                 b"auth": _Lazy(rb"(?:orization|entication)?"), b"token": _Lazy(rb"s?"), b"key": _Lazy(rb"s?"),
                 b"secret": _Lazy(rb"s?")}
"""The rest of the word a keyword stem begins (``pass`` → ``password``): the ≤ 20 characters of
name that may follow a keyword are counted after it, as gitleaks counts them after
``password``/``credential`` (``administrator_login_password_prod = ...``)."""
_XML_VALUE = _Lazy(rb"[A-Za-z0-9_.-]{0,20}\\?\"(?:[ \t]|\\t)*value(?:[ \t]|\\t)*=(?:[ \t]|\\t)*\\?\"([^\"\\\n]{1,256})\\?\"")
"""An XML setting whose ``key`` attribute names the secret and whose ``value`` holds it
(gitleaks ``nuget-config-password``)."""
_XML_VALUE_CLOSED = _Lazy(rb"[A-Za-z0-9_.-]{0,20}\\?\"(?:[ \t]|\\t)*value(?:[ \t]|\\t)*=(?:[ \t]|\\t)*\\?\"(.{1,256}?)\\?\"(?:[ \t]|\\t)*/>")
"""The same setting whose value holds quotes or backslashes (``value="bHG]|}0"\\[vjy" />``): the
value runs to the quote that closes the element (gitleaks ``nuget-config-password``: ``.{8,}``)."""
_QUOTE_NEAR = _Lazy(rb"[\"'`]")
_NAME_CH = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_CH_SP = _NAME_CH | frozenset(b" \t")
_NAME_SPLIT = _Lazy(rb"[_.-]+")
_DIGIT_GROUPS = _Lazy(rb"[0-9]+")
_HEXISH = _Lazy(rb"[0-9a-fA-F-]{16,}")


def _keyed_name_ok(low: bytes, ks: int, ke: int, provider: bool = False) -> bool:
    """Whether the name around the keyword ``low[ks:ke]`` means secret: the word before it and
    the word after it (split on ``_ . -``, a JSON escape ends the name) are not on the
    not-secret lists. A provider name (``provider``) is judged by the word after it only:
    ``x`` glued before ``kraken`` does not make ``xkraken`` an identifier as it does ``xauth``."""
    i = ks
    while i > 0 and ks - i < 50 and low[i - 1] in _NAME_CH and not (i >= 2 and low[i - 2] == 92):
        i -= 1
    before = low[i:ks]
    if before and not before.endswith((b"_", b".", b"-")):
        word = _NAME_SPLIT.split(before)[-1]  # letters glued to the keyword: "apikey", "bypass"
    else:
        word = _NAME_SPLIT.split(before.rstrip(b"_.-"))[-1] if before else b""
    if word in _NOT_SECRET_BEFORE and not provider:
        return False
    j = ke
    while j < len(low) and j - ke < 24 and low[j] in _NAME_CH:
        j += 1
    after = low[ke:j]
    if after and not (low.startswith(b"pass", ks) and after.startswith((b"word", b"wd", b"phrase"))):
        first = _NAME_SPLIT.split(after.lstrip(b"_.-"), 1)[0]
        if first in _NOT_SECRET_AFTER:
            return False
    return True


_DOTTED = _Lazy(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _code_reference(v: bytes) -> bool:
    """A dotted name in code (``rust_openssl.hpke.X25519PrivateKey``, ``httpx2.Auth``,
    ``settings.API_TOKEN``): every dot-separated piece an identifier, and the last one made of
    words or naming a secret itself (it then refers to one, it is not one)."""
    if not _DOTTED.fullmatch(v):
        return False
    last = v.rsplit(b".", 1)[1]
    low = last.lower()
    return any(k in low for k in _KEYWORDS) or _wordy(last)


def _keyed_value(v: bytes, password: bool, provider: bool = False) -> bool:
    """A value assigned to a secret-meaning name that is secret-shaped: not a placeholder, a
    variable, a path, a URL or words (:func:`_secretish`); passwords of 6+ characters; other
    values of 8+ characters (a provider's numeric id of 16+ digits) that are hex ids of 16+ digits (UUIDs, hex keys), or mix letters
    and digits the way random tokens do (two or more digit groups, or ≥ 20 % digits), or are
    not made of words (:func:`_wordy`)."""
    if len(v) < (6 if password else 8) or not _secretish(v) or b"://" in v:
        return False
    if password:
        return True
    if not any(65 <= c <= 90 or 97 <= c <= 122 for c in v):
        return provider and len(v) >= 16 and v.isdigit()  # numbers, versions, dates; account ids
    if _HEXISH.fullmatch(v):
        return _HAS_DIGIT(v) is not None
    groups = _DIGIT_GROUPS.findall(v)
    if len(groups) >= 2 or sum(map(len, groups)) * 5 >= len(v):
        return True
    return not _wordy(v)


def _keyed_at(sc: "_Scan", ks: int, ke: int, kind: bytes) -> int:
    """Judge the assignment whose name holds a keyword at ``[ks, ke)``; record the span or the
    quarantine rule. Returns the end of the value read (or ``ke``)."""
    b, low = sc.b, sc.lower()
    done = _KEYWORD_REST.get(kind)
    if done is not None:
        ke = done.match(low, ke).end()  # "password", "credentials": the name window starts after the word
    x = _XML_VALUE_CLOSED.match(b, ke) or _XML_VALUE.match(b, ke)
    if x is not None:  # <add key="ClearTextPassword" value="..."/> (NuGet.config, app.config)
        v = x.group(1)
        if _keyed_name_ok(low, ks, ke, kind == b"provider") and _keyed_value(v, kind in (b"pass", b"pwd"), kind == b"provider"):
            sc.span(x.start(1), x.end(1), _P, "password_assignment" if kind in (b"pass", b"pwd") else "keyed_secret")
        return x.end()
    m = _KEYED_TAIL.match(b, ke)
    if m is None:
        return ke
    g = m.lastindex
    vs, ve = m.start(g), m.end(g)
    if ve < len(b) and b[ve] == 40:  # "(": a call, not a value
        return ve
    op = m.start(1)
    if b[op] == 44 and not _QUOTE_NEAR.search(b, max(m.start(), op - 3), vs) \
            and (ve - vs < 20 or b"=" in b[vs:ve] or g != 5):
        return ve  # "f(password, target_ms=10)": a comma is an operator next to a quote ("k", "v") or before a long token
    if b[op] == 61 and kind != b"provider" and (b[op + 1:op + 2] == b"=" or (op and b[op - 1] in b"!<>=")) \
            and (b[op - 1] in b" \t" or b[op + 2:op + 3] in (b" ", b"\t")):
        return ve  # a comparison written as one (" == ", " != "), not an assignment
    if b.endswith(_DIGEST_PREFIXES, max(0, vs - 8), vs) or b.startswith((b"hf_", b"npm_", b"SG."), vs):
        return ve  # go.sum "h1:" hashes; prefixed tokens keep their prefix (docs/security.md, Redaction)
    while vs < ve and b[vs] in b" \t":
        vs += 1  # '" 353743932805425087"': blanks inside the quotes are not the value
    v = b[vs:ve]
    if _code_reference(v):
        return ve
    name_end = m.start()
    while name_end < vs and low[name_end] in _NAME_CH:
        name_end += 1
    for name, rule, quarantine in _NAMED_KEYS:
        if low.endswith(name, max(0, ks - 32), name_end):
            if _secretish(v) and len(v) >= 8:
                sc.marks.add(rule)
            return ve
    if not _keyed_name_ok(low, ks, ke, kind == b"provider"):
        return ve
    password = kind in (b"pass", b"pwd")
    if not _keyed_value(v, password, kind == b"provider"):
        cut = v.find(b"/")
        if cut < 8 or not _keyed_value(v[:cut], password, kind == b"provider"):
            return ve
        ve = vs + cut  # "<token>/README.md": a secret as a path's first segment (gitleaks stops at "/")
    sc.span(vs, ve, _P, "password_assignment" if password else "keyed_secret")
    return ve


def _scan_keyed(sc: "_Scan") -> None:
    """Keyword-anchored assignments, every keyword occurrence of the whole field."""
    low = sc.lower()
    hits = sc.kw_hits
    for kw in _KEYWORDS:
        at = list(_finds(low, kw))
        hits.append((kw, at))
        if kw == b"auth":
            sc.auth_at = at
        elif kw == b"secret":
            sc.secret_at = at
        for i in at:
            _keyed_at(sc, i, i + len(kw), kw)


_AUTH_HEADER = _Lazy(
    rb"authorization(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?"
    rb"(?:(?:basic|bearer|token|digest|negotiate|ntlm|aws4-hmac-sha256|sso-key)[ \t]+)?([A-Za-z0-9._~+/=@-]{8,})")

# -- 2. structural spans ----------------------------------------------------------------
_URI_CRED = re.compile(rb"://([^\s/?#@:\"'<>`\\]{0,256}):([^\s/?\"'<>`\\]{1,256})@")
_URI_CRED_SLASH = re.compile(rb"://([^\s/?#@:\"'<>`\\]{1,256}):([^\s?#\"'<>`\\@]{1,256})@[A-Za-z0-9.-]+(?=[:/?#\s\"'<>]|$)")
"""A raw '/' in the password (``postgres://u:ab/cd@db``), accepted only when a host follows the
'@' and the password is not a port and a path (``http://host:8080/users/@name``)."""
_PORT_PATH = re.compile(rb"[0-9]{1,5}/")
_PLACEHOLDER_PASSWORDS = frozenset((b"password", b"passwd", b"pass", b"pwd", b"pw", b"secret", b"token"))
"""User and password are bounded (256): an unbounded pair backtracks quadratically on a long
authority full of ':' — the hook must not be a ReDoS target."""
_CURL_USER = _Lazy(rb"(?:(?<=[ \t\n\r`])|(?<=\\[tnr]))(?:-u|--user)(?:=|(?:[ \t]|\\t){0,5})"
                   rb"(?:\\?\"([^\"\\\n]{3,256})\\?\"|'([^'\n]{3,256})'|([^\s\"'`\\]{3,256}))")
_CURL_KEY_HEADER = _Lazy(rb"(?:(?<=[ \t\n\r`])|(?<=\\[tnr]))(?:-H|--header)(?:=|(?:[ \t]|\\t){0,5})\\?[\"']"
                         rb"(?i:(?:x-(?:[a-z]+-)?)?(?:api-?)?(?:key|token)):(?:[ \t]|\\t){0,5}([\w=~@.+/-]{8,})")
"""A key header of a curl command (``-H "X-Api-Key: ..."``, ``-H 'Token: ...'``): its value is a
credential (gitleaks ``curl-auth-header``; ``Authorization:`` is the ``authorization_header``
marker)."""
_URL_SIG = _Lazy(rb"(?:sig|signature)=([A-Za-z0-9%+/=_-]{16,})")
_SIG_PARAM = re.compile(rb"sig(?:nature)?=")
_SIG_BEFORE = (b"?", b"&", b";", b"?x-amz-", b"&x-amz-", b"?x-goog-", b"&x-goog-")
_CARD_SHAPE = re.compile(
    rb"dddd(?<![dw-]dddd)(?:d{9,15}|([s-])dddd\1dddd\1d{1,4}(?:\1d{1,4})?|([s-])dddddd\2d{4,5})(?![dw-])")
# Issuer prefixes and lengths (ISO/IEC 7812 IIN ranges as published by the card networks).
_CARD_BRANDS = _Lazy(
    rb"4(?:\d{12}|\d{15}|\d{18})|5[1-5]\d{14}|2(?:2[2-9]|[3-6]\d|7[01])\d{13}|2720\d{12}"
    rb"|3[47]\d{13}|3(?:0[0-5]|[689]\d)(?:\d{11}|\d{13})|6(?:011|5\d\d|4[4-9]\d)(?:\d{12}|\d{15})"
    rb"|35(?:2[89]|[3-8]\d)(?:\d{12}|\d{15})|62(?:\d{14}|\d{17})")
"""Issuer prefixes and PAN lengths (ISO/IEC 7812 IIN ranges as the networks publish them):
Visa 4 (13/16/19), Mastercard 51–55 and 2221–2720 (16), Amex 34/37 (15), Diners 300–305/36/38/39
(14/16), Discover 6011/644–649/65 (16/19), JCB 3528–3589 (16/19), UnionPay 62 (16/19). No
network issues 17- or 18-digit PANs, so nanosecond timings and snowflake ids of that length never
match; every 13–19 digit number with a valid prefix still has a 1-in-10 chance of passing Luhn,
which is the residual false-positive rate of unseparated numbers."""

# -- 3. prefixed: Bearer ----------------------------------------------------------------
_IIN_FIRST = frozenset(b"23456")
_BEARER = _Lazy(rb"bearer[ \t]+([A-Za-z0-9._~+/=-]{16,})")

# -- 4. entropy -------------------------------------------------------------------------
_HEX = re.compile(rb"[0-9a-fA-F]+")
_ULIDS = _Lazy(rb"(?:[a-z]+_)?[0-7][0-9A-HJKMNP-TV-Z]{25}(?:[_-](?:[a-z]+_)?[0-7][0-9A-HJKMNP-TV-Z]{25})*")
_ANTHROPIC_ID = _Lazy(rb"(?:[a-z]+_)?(?:msg|toolu|srvtoolu|req|msgbatch|file)_01[A-Za-z0-9]{20,30}")
_ANTHROPIC_ID_IN = _Lazy(rb"(?:msg|toolu|srvtoolu|req|msgbatch|file)_01[A-Za-z0-9]{20,30}")
_IMAGE_MAGIC = (b"iVBORw0KGgo", b"/9j/", b"R0lGOD", b"UklGR", b"PHN2Zy", b"AAAAIGZ0eXB", b"AAAAHGZ0eXB")
_DATA_URI = _Lazy(rb"data:(?:image|font|audio|video)/[A-Za-z0-9.+-]+;base64,$")
_CHUNK = _Lazy(rb"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_PIECES = _Lazy(rb"[/_+=.-]+")
_CONSONANTS5 = _Lazy(rb"[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{5,}")
_VOWELS = frozenset(b"aeiouyAEIOUY")
_SEQUENCES = (b"abcdefgh", b"ABCDEFGH", b"01234567", b"zyxwvuts", b"ZYXWVUTS")


def _word_piece(p: bytes, strict: bool = True) -> bool:
    """A piece is a word (or words): >= 1 vowel per 6 letters, no run of 5 consonants (unless
    ``strict`` is off: path pieces such as ``connectscheduling``), and letter chunks (camelCase
    split) of >= 3 letters on average."""
    letters = vowels = 0
    for c in p:
        if 65 <= c <= 90 or 97 <= c <= 122:
            letters += 1
            if c in _VOWELS:
                vowels += 1
    if not letters:
        return True
    if vowels * 6 < letters or (strict and _CONSONANTS5.search(p)):
        return False
    chunks = [m.end() - m.start() for m in _CHUNK.finditer(p) if p[m.start()] >= 65]
    return not chunks or sum(chunks) >= 3 * len(chunks)


def _wordy(run: bytes) -> bool:
    """True when a run is made of words, numbers and hex ids: paths (``node_modules/call-bind/
    package``), identifiers and test names (``test_scrub_keeps_git_shas``), Rust/Cargo target
    names with hashes (``python_utils-1d9cbe00910c3870``). Pieces are split on ``/ _ + = . -``;
    every piece longer than 4 characters must be hex, digits or a word (:func:`_word_piece`).

    Measured (``bench/redact_corpus.py``): random base62/base64 tokens of >= 32 characters are
    judged wordy < 0.2 % of the time; random lowercase+digit tokens ~ 13 % (a recall cost we
    accept: such tokens are mostly caught by their provider marker instead).
    """
    if b"_01" in run:
        run = _ANTHROPIC_ID_IN.sub(b"id", run)  # tool-use ids inside paths (tool-results/toolu_01...)
    for p in _PIECES.split(run):
        if len(p) <= 4 or _HEX.fullmatch(p):
            continue
        if not _word_piece(p):
            return False
    return True


_HEX_DASH = frozenset(b"0123456789abcdefABCDEF-")
_INTEGRITY_PREFIXES = tuple(p + sep for p in (b"sha1", b"sha224", b"sha256", b"sha384", b"sha512", b"md5")
                            for sep in (b"-", b"="))
_ENTROPY_SAMPLE = 4096
"""Entropy of runs longer than this is estimated on their first 4 KiB (a long random blob is
uniform; a long blob that starts random and turns into prose does not exist in practice)."""


def _entropy_secret(b: bytes, s: int, e: int) -> bool:
    """Decide whether the run ``b[s:e]`` (>= 32 chars of ``[A-Za-z0-9+/=_-]``) is a secret.

    Clean: fewer than 19 distinct characters (entropy <= log2(18) = 4.17 < both thresholds),
    pure hex and UUID-ish (SHAs, digests), ``sha512-``/``sha256=`` integrity strings, go.sum
    ``h1:`` hashes, image payloads, ULIDs, Anthropic ids, alphabet literals and runs of words.
    Otherwise a secret if its entropy is >= 4.5 bits/char, or >= 4.2 when it mixes letters and
    digits (random tokens of 32–40 chars sit around 4.5). Cheap checks run first.
    """
    run = b[s:e]
    chars = set(run)
    if len(chars) <= 18 or chars <= _HEX_DASH:
        return False
    if run.startswith(_INTEGRITY_PREFIXES) or b.endswith(_DIGEST_PREFIXES, max(0, s - 8), s):
        return False  # lock files, wheel RECORD, SRI, go.sum "h1:", "sha256:" digests
    if run.startswith(_IMAGE_MAGIC) or (b.endswith(b";base64,", max(0, s - 8), s)
                                        and _DATA_URI.search(b, max(0, s - 64), s)):
        return False  # image/font payloads are data, not secrets (precision over recall)
    if len(run) > _ENTROPY_SAMPLE:
        run = run[:_ENTROPY_SAMPLE]
        chars = set(run)
    n = len(run)
    h = -sum(c / n * math.log2(c / n) for c in map(run.count, chars))
    if h < ENTROPY_THRESHOLD and not (h >= ENTROPY_THRESHOLD_MIXED and _HAS_DIGIT(run) and _mixed(run)):
        return False
    if _ULIDS.fullmatch(run) or _ANTHROPIC_ID.fullmatch(run):
        return False
    if any(q in run for q in _SEQUENCES):
        return False  # alphabet tables in code (base64/base32 alphabets)
    return not _wordy(run[:512])


_LETTER_WORDS = _Lazy(rb"[A-Za-z]+(?:[-_. ][A-Za-z]+)*[-_.]?")
_SAME_CHAR = _Lazy(rb"(.)\1+")


_YAML_ALIAS = _Lazy(rb"\*+[A-Za-z0-9_.-]*")


def _secretish(v: bytes) -> bool:
    """A keyed value that could be a secret (not a variable, placeholder or code reference)."""
    if v[:1] in (b"$", b"%", b"@", b"&", b"!", b"#", b"|", b"{", b"<", b"[") or b"ctxlake:" in v:
        return False
    if v[:1] == b"*" and _YAML_ALIAS.fullmatch(v):
        return False  # "*", "*****", a YAML alias (*default_token); "*xbfY\/wW,1D'v" is a value
    if (v[:1] in (b"/", b"~", b".") or (b"/" in v and b"=" not in v and b"+" not in v)) and _wordy(v):
        return False  # a file path (GOOGLE_APPLICATION_CREDENTIALS=/etc/sa.json), not a secret
    if _LETTER_WORDS.fullmatch(v) or _SAME_CHAR.fullmatch(v):
        return False  # letters-only words (your_password_here, settings.DB_PASSWORD), xxxxxx
    if b"xxxx" in v.lower() or b"..." in v or b"***" in v:
        return False
    return True


# --------------------------------------------------------------------------------------

def _runs(cls: bytes, min_len: int, start: int = 0, stop: int | None = None):
    """Yield (start, end) of each maximal run of class byte ``a`` of length >= ``min_len`` that
    starts in [start, stop); ``start`` must be 0 or a separator. Runs extend past ``stop`` to
    their natural end. The leftmost occurrence of ``a * min_len`` after a separator is always a
    run start, so one regex search per run suffices: a literal prefix of ``min_len`` bytes,
    which sre scans with its overlap table (``bytes.find`` of ``a * n`` in text made of ``a``
    and blanks is Horspool's worst case: ~2x the instructions)."""
    stop = len(cls) if stop is None else stop
    for m in _run_rx(min_len).finditer(cls, start):
        k = m.start()
        if k >= stop:
            return
        yield k, m.end()


_RUN_RX: dict = {}


def _run_rx(min_len: int):
    """The compiled ``a{min_len}a*`` (written as literals, so sre sees a literal prefix)."""
    rx = _RUN_RX.get(min_len)
    if rx is None:
        rx = _RUN_RX[min_len] = re.compile(b"a" * min_len + b"a*")
    return rx


class _Scan:
    """Mutable state of one scrub: the UTF-8 bytes, the spans to replace, the rules fired."""

    __slots__ = ("b", "low", "spans", "marks", "inplace", "blocks", "auth_at", "secret_at", "kw_hits")

    def __init__(self, b: bytes):
        self.b = b
        self.low = None
        self.blocks: dict = {}
        self.spans: list = []
        self.marks: set = set()
        self.inplace: set = set()
        self.auth_at: list = []
        self.secret_at: list = []
        self.kw_hits: list = []  # (keyword, [offsets]) of _scan_keyed, reused by the command-line rule

    def lower(self) -> bytes:
        if self.low is None:
            self.low = self.b.translate(_LOWER)  # bytes.lower() costs 4x a translate
        return self.low

    def span(self, s: int, e: int, placeholder: bytes, rule: str) -> None:
        """Record a replacement, unless it would cut into a placeholder already in the text
        (a re-scrub must not redact inside ``[ctxlake:redacted-ssn]``)."""
        b = self.b
        p = b.rfind(b"[ctxlake", max(0, s - 512), e + 8)  # a value cut short by one counts too
        if p >= 0 and (p >= s or b.find(b"]", p, e + 1) < 0 or b.find(b"]", p) >= s):
            return
        self.spans.append((s, e, placeholder))
        self.inplace.add(rule)


def _marker_at(sc: _Scan, s: int, rows) -> None:
    b = sc.b
    for anchor, rule, rx, mixed, inplace in rows:
        if b.startswith(anchor, s):
            m = rx.match(b, s)
            if not m:
                continue
            if inplace:  # prefixed token (docs/security.md, Redaction): keep the prefix
                tail = m.group(1)
                if _mixed(tail) or (len(tail) == 34 and tail.isalpha()):  # hf_ + 34 letters (gitleaks)
                    sc.span(m.start(1), m.end(1), _P, rule)
                return
            if not mixed or _mixed(m.group(1) if m.re.groups else m.group(0)[len(anchor):]):
                sc.marks.add(rule)
                return


_KEYED_MIN_RUN = 14
"""Shortest value the provider-name rule looks at (the shortest prefix-less provider keys:
LinkedIn client ids, 14 characters; Dropbox keys, 15; Asana client ids, 16 digits)."""
_OPENERS = "=:>,'\"` \t|"
"""Bytes that may sit right before a value: operators, quotes, blanks."""
_OPERATOR_NEAR = re.compile(rb"[=:>,|]").search
"""An assignment operator within the 17 bytes before a value (operator, blanks, quotes and
their JSON escapes: :data:`_KEYED_TAIL`); without one no name can be assigned the value."""
_VALUE_OPENERS = frozenset(_OPENERS.encode())


_NAME_CLS = _table({"abcdefghijklmnopqrstuvwxyz0123456789_. \t\\-'\"`=:>,|?": ord("n")}, ord(" "))
"""Bytes of a name, its operator and the quotes around them (lower-cased; JSON escapes
included): the provider name is looked for anywhere in them."""
_PROVIDER_SEEN: dict = {}
"""name before an operator → whether it holds a provider name (names repeat: JSON keys)."""


def _provider_keyed(sc: _Scan, k: int) -> None:
    """A value run at ``k`` after an opener (an operator, quote or blank): look for a provider
    name (:data:`_PROVIDER_NAMES`) in the name-and-operator bytes before it (≤ 48 back, cut
    with one translate) and let :func:`_keyed_at` read the assignment from that name on. The
    verdict per 48-byte prefix is cached: JSON keys repeat."""
    low = sc.lower()
    lo = k - 48 if k > 48 else 0
    name = low[lo:k]
    hit = _PROVIDER_SEEN.get(name)
    if hit is None:
        cut = name.translate(_NAME_CLS).rfind(b" ") + 1
        pm = _PROVIDER_KW.search(name, cut) if len(name) - cut >= 4 else None
        if len(_PROVIDER_SEEN) > 8192:
            _PROVIDER_SEEN.clear()
        hit = _PROVIDER_SEEN[name] = -1 if pm is None else pm.start()
    if hit >= 0:
        pm = _PROVIDER_KW.match(low, lo + hit)
        _keyed_at(sc, pm.start(), pm.end(), b"provider")


_INNER_ANCHOR = _Lazy(rb"[-_](?=" + b"|".join(sorted({re.escape(a[:2]) for a, *_ in _START_MARKERS})) + rb")")


def _inner_markers(sc: _Scan, by2: dict, k: int, j: int) -> None:
    """Markers that start after a ``-`` or ``_`` inside the token run ``b[k:j]`` (the run's own
    start was tried already); only positions leaving room for a 16-character token."""
    b = sc.b
    m = _INNER_ANCHOR.search(b, k + 1, j - 16)
    while m is not None:
        p = m.start() + 1
        _marker_at(sc, p, by2[b[p:p + 2]])
        m = _INNER_ANCHOR.search(b, p, j - 16)


def _scan_tokens(sc: _Scan) -> None:
    """Markers and prefixed tokens: every token run of >= 20 characters, whole field.

    A run is tried against the markers whose anchor starts with the run's first two bytes
    (one dict lookup per run); the byte before the run selects the context rules (``.`` for
    ``ya29.``/``SG.``-style anchors and split JWTs, ``/`` for webhook URLs and Google refresh
    tokens, ``:`` for Telegram bot tokens)."""
    b = sc.b
    by2 = _START_BY_2
    op_near = _OPERATOR_NEAR
    for m in _run_rx(_KEYED_MIN_RUN).finditer(b.translate(_TOKEN_CLS)):
        k, j = m.span()
        s = k
        if k:
            p, c = b[k - 1], b[k]
            if p == 92 and c in b"ntr":
                s = k + 1  # run begins right after a JSON escape such as \n
            elif 48 <= c <= 57 and p in b"[;%":
                if p == 37:
                    s = k + 2  # URL-encoded separator: %3Dghp_..., %20sk-...
                else:
                    sgr = _SGR.match(b, k)  # ANSI colour: ESC[32mghp_...
                    if sgr:
                        s = sgr.end()
            if (b[s - 1] in _VALUE_OPENERS or (b[s - 1] == 116 and b[s - 2] == 92)) and op_near(b, max(0, s - 17), s):
                _provider_keyed(sc, s)  # "HEROKU_API = <uuid>": a provider name before the value
        if j - k >= 24:
            _inner_markers(sc, by2, k, j)  # "key-AKIA...", "prod_AKIA...", "token_ghp_..."
        rows = by2.get(b[s:s + 2])
        if rows is not None:
            _marker_at(sc, s, rows)
        if j - k == 50 and _MAILGUN_NEW.fullmatch(b, k, j):
            sc.marks.add("mailgun_key")
        elif j - s == 40 and b.endswith(b"_mmk", s, j) and b[s + 6] == 95:
            sc.marks.add("maxmind_license_key")  # <6>_<29>_mmk
        if k == 0:
            continue
        prev = b[k - 1]
        if prev == 46:  # "."
            if b.endswith(_DOT_ANCHORS, max(0, k - 8), k):
                for anchor, rule, rx, mixed in _DOT_ROWS:
                    a0 = k - len(anchor)
                    if a0 >= 0 and b.startswith(anchor, a0) and _bounded(b, a0):
                        dm = rx.match(b, a0)
                        if dm and (not mixed or _mixed(dm.group(0)[len(anchor):])):
                            sc.marks.add(rule)
                            break
            if b.startswith(b"eyJ", k):  # JWT whose header run was shorter than 20
                h = b.rfind(b"eyJ", max(0, k - 4096), k - 1)
                if h >= 0 and _bounded(b, h) and _JWT.match(b, h):
                    sc.marks.add("jwt")
        elif prev == 47:  # "/"
            if b.find(_SLACK_HOOK, max(0, k - 64), k) >= 0:
                sc.marks.add("slack_webhook")
            elif b.find(b"webhooks/", max(0, k - 40), k) >= 0 and _DISCORD_HOOK.search(b, max(0, k - 80), k):
                sc.marks.add("discord_webhook")
            elif k >= 3 and b[k - 3:k] == b"1//" and _GOOGLE_REFRESH.match(b, k - 3):
                sc.marks.add("google_refresh_token")
        elif prev == 58:  # ":"
            if j - k == 35 and b[k] == 65 and _TELEGRAM.search(b, max(0, k - 17), j):
                sc.marks.add("telegram_bot_token")
        elif prev == 124 or prev == 37:  # "|" or "%": a Facebook app token "<app id>|<app secret>"
            if k >= 16 and 48 <= b[k - 2] <= 57 and _FACEBOOK_APP_TOKEN.search(b, max(0, k - 20), min(len(b), j + 1)):
                sc.marks.add("facebook_access_token")


def _finds(hay: bytes, needle: bytes, start: int = 0, stop: int | None = None):
    """Every start position of ``needle`` in ``hay[start:stop]`` (bytes.find: far faster than
    a regex's own literal-prefix scan for needles of 4+ bytes)."""
    stop = len(hay) if stop is None else stop
    i = hay.find(needle, start, stop)
    while i >= 0:
        yield i
        i = hay.find(needle, i + 1, stop)


def _tildes(b: bytes, sha256: bool = False):
    """Positions of "~": memchr while "~" is rare, then only those after "Q" (and after
    "sha256" when ``sha256``), by finds of "Q~" / "sha256~"."""
    i = b.find(b"~")
    seen = 0
    while i >= 0:
        seen += 1
        if seen > 64:
            hits = [q + 1 for q in _finds(b, b"Q~", max(0, i - 1))]
            if sha256:
                hits += [q + 6 for q in _finds(b, b"sha256~", max(0, i - 6))]
            yield from sorted(hits)
            return
        yield i
        i = b.find(b"~", i + 1)


_WIDE_CLS = _table({_ALNUM + "_-+/=.": ord("a")}, ord(" "))
"""Bytes of the found markers, Authress keys and SendGrid keys: every match of theirs lies inside
one run of these, at least :data:`_WIDE_MIN_RUN` long."""
_WIDE_MIN_RUN = 30
"""Shortest match of a wide marker (``whsec_`` + 24)."""
_WIDE_ANCHORS = tuple(a for a, _, _ in _FOUND_MARKERS) + (b".acc", b"SG.")
_WIDE_ANY = re.compile(b"|".join(re.escape(a) for a in _WIDE_ANCHORS))


def _scan_wide(sc: _Scan) -> None:
    """Markers whose alphabet leaves the token-run class (:data:`_FOUND_MARKERS`), Authress
    service keys and SendGrid keys (in place), whole field. One translate finds the runs of
    :data:`_WIDE_CLS` of ≥ 30 bytes; only a run holding an anchor is read further, each
    anchor by ``bytes.find`` within the run (anchors may overlap: ``SG.acc``)."""
    b = sc.b
    search = _WIDE_ANY.search
    for k, j in _runs(b.translate(_WIDE_CLS), _WIDE_MIN_RUN):
        if search(b, k, j) is None:
            continue
        for anchor, rule, rx in _FOUND_MARKERS:
            if rule in sc.marks:
                continue
            for i in _finds(b, anchor, k, j):
                m = rx.match(b, i)
                if m and _mixed(m.group(0)[len(anchor):]) and (_bounded(b, i) or anchor[-1] == 46):
                    sc.marks.add(rule)
                    break
        if "authress_key" not in sc.marks:
            for i in _finds(b, b".acc", k, j):  # Authress service keys: <sc|ext|...>_<id>.<4-6>.acc_<id>.<secret>
                m = _AUTHRESS.search(b, max(0, i - 44), min(len(b), i + 200))
                if m and m.start() < i < m.end():
                    sc.marks.add("authress_key")
                    break
        for i in _finds(b, b"SG.", k, j):  # SendGrid: SG.<22>.<43>, in place (docs/security.md, Redaction)
            sg = _bounded(b, i) and _SENDGRID.match(b, i)
            if sg and _mixed(sg.group(1)):
                sc.span(sg.start(1), sg.end(1), _P, "sendgrid_key")


def _scan_keywords(sc: _Scan) -> None:
    """Case-insensitive keyword rules: named secret assignments, Authorization, Bearer, PEM
    private-key headers, Azure AD client secrets."""
    b = sc.b
    low = sc.lower()
    _scan_keyed(sc)
    for i in sc.auth_at:  # "auth" hits of _scan_keyed (one pass fewer)
        m = low.startswith(b"authorization", i) and _AUTH_HEADER.match(low, i)
        if m:
            v = b[m.start(1):m.end(1)]
            if _mixed(v) and (_secretish(v) or (v.isalpha() and not _wordy(v))):
                sc.marks.add("authorization_header")
                break
    for i in _finds(low, b"bearer"):
        m = _BEARER.match(low, i)
        if m:
            v = b[m.start(1):m.end(1)]
            if _mixed(v) and _secretish(v):
                sc.span(m.start(1), m.end(1), _P, "bearer_token")
    for s in sc.secret_at:  # a Kubernetes Secret manifest ("kind: Secret"): every data value is a secret
        i = low.rfind(b"kind:", max(0, s - 64), s)
        if i >= 0 and _K8S_SECRET.match(low, i):
            d = low.find(b"data:", i, i + 300)
            end = min(len(b), d + 4096)
            if d < 0:  # data: before kind: (the key order is free)
                d, end = low.rfind(b"data:", max(0, i - 300), i), i
            for dm in _K8S_DATA_VALUE.finditer(b, d + 5, end) if d >= 0 else ():
                sc.span(dm.start(1), dm.end(1), _P, "kubernetes_secret")
    _scan_wide(sc)
    for i in _finds(b, b"-----BEGIN"):
        if _PEM_PRIVATE.match(b, i):
            sc.marks.add("private_key")
            break
    # Azure AD client secrets: 3 chars, a digit, "Q~", 31-34 chars (dots allowed). "~" is rare,
    # so walk it with memchr; if it is not rare here, look for "Q~" instead.
    for i in _tildes(b, sha256=True):
        if i >= 6 and b[i - 1] == 54 and b.endswith(b"sha256", i - 6, i) and _OPENSHIFT.match(b, i - 6):
            sc.marks.add("openshift_token")  # sha256~<43>: OpenShift OAuth tokens (gitleaks openshift-user-token)
        elif i >= 5 and b[i - 1] == 81 and 48 <= b[i - 2] <= 57 \
                and _AZURE_AD_SECRET.match(b, i - 5, min(len(b), i + 40)):
            sc.marks.add("azure_ad_client_secret")
            break


def _scan_structural(sc: _Scan) -> None:
    """URL credentials, curl -u, command-line credentials (:mod:`lib.redact.cmdline`), URL
    signatures, card numbers, SSNs (whole field)."""
    b = sc.b
    for i in _finds(b, b"://"):
        m = _URI_CRED.match(b, i) or _URI_CRED_SLASH.match(b, i)
        if m and not (m.re is _URI_CRED_SLASH and (_PORT_PATH.match(m.group(2)) or b"://" in m.group(2))):
            pw = m.group(2)
            if not (pw.startswith((b"$", b"<")) or not pw.strip(b"*") or b"${" in pw or b"{{" in pw
                    or b"[ctxlake" in pw or pw.lower() in _PLACEHOLDER_PASSWORDS):
                sc.span(m.start(2), m.end(2), _P, "uri_credentials")
    low = sc.lower()
    end = 0
    for i in _finds(low, b"curl"):
        # curl -u/--user user:PASS anywhere in the command (up to 1 KiB on: continuation lines);
        # windows never overlap, so many curls cost linear time (gitleaks curl-auth-user)
        if i < end or not _bounded(low, i):
            continue
        end = min(len(b), i + 1024)
        for hm in _CURL_KEY_HEADER.finditer(b, i, end):  # -H "X-Api-Key: <value>" (gitleaks curl-auth-header)
            v = hm.group(1)
            if _secretish(v):
                sc.span(hm.start(1), hm.end(1), _P, "keyed_secret")
        for cm in _CURL_USER.finditer(b, i, end):
            cred = cm.group(1) or cm.group(2) or cm.group(3)
            cs = cm.start(1) if cm.group(1) else cm.start(2) if cm.group(2) else cm.start(3)
            colon = cred.find(b":")
            a, z = (cs + colon + 1, cs + len(cred)) if 0 <= colon < len(cred) - 1 else (cs, cs + len(cred))
            pw = b[a:z]
            if len(pw) >= 3 and not pw.startswith((b"$", b"<", b"[ctxlake")):
                sc.span(a, z, _P, "uri_credentials")
    for s, e in command_line_spans(b, low, sc.kw_hits):  # --password X, mysql -pX, docker login -p X
        sc.span(s, e, _P, "command_credentials")
    for sm in _SIG_PARAM.finditer(low):  # one pass for sig= and signature= (literal prefix "sig")
        st = sm.start()
        if not low.endswith(_SIG_BEFORE, max(0, st - 8), st):
            continue  # a query parameter: ?sig= &sig= ;sig= ?X-Amz-Signature= &X-Goog-Signature=
        m = _URL_SIG.match(low, st)
        if m:
            v = b[m.start(1):m.end(1)]
            if _mixed(v) or b"%" in v:
                sc.span(m.start(1), m.end(1), _P, "url_signature")
    cls = b.translate(_DIGIT_CLS)
    pos = 0
    search = _CARD_SHAPE.search
    while True:
        m = search(cls, pos)
        if m is None:
            break
        if b[m.start()] not in _IIN_FIRST or (m.start() and b[m.start() - 1] == 46):
            # hexdumps, line numbers: no issuer starts 0/1/7/8/9; "1.3862943611198906" is a float
            pos = m.start() + 1
            continue
        end = _card_end(b, m.start(), m.end())
        if end:
            sc.span(m.start(), end, _P_CARD, "card_number")
            pos = end
        else:
            pos = m.start() + 1  # "5559 2221 4828 6689 7209": the card may start at the next group
    for i in _finds(cls, b"ddd-dd-dddd"):
        if (i and cls[i - 1] in b"dw-") or cls[i + 11:i + 12] in (b"d", b"w", b"-"):
            continue  # neighbours: no digit, dash or word character (ids like "v078-05-1120a")
        area, group, serial = b[i:i + 3], b[i + 4:i + 6], b[i + 7:i + 11]
        if area in (b"000", b"666") or area[:1] == b"9" or group == b"00" or serial == b"0000":
            continue
        sc.span(i, i + 11, _P_SSN, "ssn")


_DIGEST_PREFIXES = (b"h1:", b"sha1=", b"sha224=", b"sha256=", b"sha384=", b"sha512=", b"md5=",
                    b"sha256:", b"sha512:", b"sha384:", b"sha1:")
_EQ_PIECE = _Lazy(rb"[^=]+=*")
_ENT_TAIL = _Lazy(rb"[A-Za-z0-9+/=_-]*")


def _scan_entropy(sc: _Scan) -> None:
    b = sc.b
    window = min(len(b), MAX_SCAN_BYTES)
    cls = b[:window + 4096].translate(_ENT_CLS)
    for k, j in _runs(cls, ENTROPY_MIN_LEN, 0, window):
        if j == len(cls) < len(b):
            j = _ENT_TAIL.match(b, j).end()  # a run crossing the window edge is scanned whole
        s = k
        if k >= 1 and b[k] in b"ntr" and b[k - 1] == 92:
            s = k + 1  # keep the JSON escape (\n) out of the redacted span
        eq = b.find(b"=", s, j)
        if 0 <= eq < j - 1 and b[eq + 1:j].strip(b"="):
            # "name=value" joined into one run: base64 has "=" only at its end, so judge each
            # "=" separated piece on its own and keep the names.
            for m in _EQ_PIECE.finditer(b, s, j):
                if m.end() - m.start() >= ENTROPY_MIN_LEN and _entropy_secret(b, m.start(), m.end()):
                    sc.span(m.start(), m.end(), _P_SECRET, "high_entropy_run")
        elif j - s >= ENTROPY_MIN_LEN and _entropy_secret(b, s, j) and not _kept(sc, s, j):
            sc.span(s, j, _P_SECRET, "high_entropy_run")


# -- kept clean: public keys, certificates, wrapped base64 data, paths (issue #17) --------
_PUBLIC_KEY_MAGIC = (b"AAAAB3NzaC1yc2E", b"AAAAC3NzaC1lZDI1NTE5", b"AAAAE2VjZHNhLXNoYTItbmlzdHA", b"AAAAB3NzaC1kc3M",
                     b"AAAAGnNrLXNzaC1lZDI1NTE5", b"AAAAInNrLWVjZHNhLXNoYTItbmlzdHAyNTZAb3BlbnNzaC5jb20")
"""OpenSSH public-key blobs (base64 of the length-prefixed key type: ssh-rsa, ssh-ed25519,
ecdsa-sha2-nistp*, ssh-dss, sk-ssh-ed25519@openssh.com, sk-ecdsa-...): public by design."""
_PEM_BEGIN = b"-----BEGIN "
_B64_LINE = _Lazy(rb"[A-Za-z0-9+/]+={0,2}")
_LINE_SEP = _Lazy(rb"\\r\\n|\\n|\\r|\r\n|\n|\r")
_TEXT_BYTES = frozenset(range(32, 127)) | frozenset(b"\t\n\r")
_MAX_BLOCK_LINES = 4096


def _kept(sc: "_Scan", s: int, j: int) -> bool:
    """Whether a high-entropy run ``b[s:j]`` is data that must stay: an OpenSSH public key, a
    line of a PEM block that is not a private key (certificates, public keys, CSRs), base64
    whose decoded bytes are binary data (a wrapped image, a DER certificate) or text that holds
    no secret (scrubbed after decoding), or a file path."""
    b = sc.b
    if b.startswith(_PUBLIC_KEY_MAGIC, s):
        return True
    h = b.rfind(_PEM_BEGIN, max(0, s - 65536), s)
    if h >= 0 and b.find(b"-----END ", h, s) < 0 and not _PEM_PRIVATE.match(b, h):
        return True  # inside a certificate / public-key PEM block
    verdict = _base64_verdict(sc, s, j)
    if verdict is not None:
        return verdict
    return _pathy(b, s, j) or _url_path(b, s)


_URL_BREAK = _Lazy(rb"[\s\"'<>`?#&=\\]")


def _url_path(b: bytes, s: int) -> bool:
    """The run at ``s`` lies in the path of a URL (after ``scheme://host``, before any ``?``,
    ``#`` or ``=``): an image or page address people share (measured on LoCoMo's shared
    image URLs, ``bench/redact_corpus.py``). Secrets in URL paths are caught by their markers
    (Slack, Discord, Telegram webhooks) before this rule; query values by the keyed rules."""
    p = b.rfind(b"://", max(0, s - 2048), s)
    return p >= 0 and _URL_BREAK.search(b, p + 3, s) is None


def _line_start(b: bytes, s: int) -> int:
    """Length of the line separator right before ``s`` (``\\n``, ``\\r\\n`` or their
    JSON escapes); 0 at the start of text; -1 when ``s`` is not at a line start."""
    if s == 0:
        return 0
    for sep in (b"\\r\\n", b"\\n", b"\\r", b"\r\n", b"\n", b"\r"):
        if b.endswith(sep, 0, s):
            return len(sep)
    return -1


def _prev_line(b: bytes, start: int):
    """``(start, end)`` of the line before the line starting at ``start`` (≤ 130 bytes back),
    or ``None``."""
    sep = _line_start(b, start)
    if sep <= 0:
        return None
    pe = start - sep
    lo = max(0, pe - 130)
    i = max(b.rfind(b"\n", lo, pe), b.rfind(b"\r", lo, pe))
    k = max(b.rfind(b"\\n", lo, pe), b.rfind(b"\\r", lo, pe))
    ps = max(i + 1, k + 2 if k >= 0 else 0)
    if ps == 0 and lo > 0:
        return None
    return ps, pe


def _base64_verdict(sc: "_Scan", s: int, j: int):
    """For a run that is a whole line of base64: ``True`` (keep) when the block it belongs to
    (consecutive lines of one width, the last one shorter) decodes to binary data, or to text
    in which :func:`scrub` finds nothing; ``False`` (redact) when the decoded text holds a
    secret; ``None`` when the run is not such a line. A block of one line decoding to binary is
    ``None``: a random key is base64 of binary too. Verdicts are cached per block."""
    b = sc.b
    if _line_start(b, s) < 0 or not _B64_LINE.fullmatch(b, s, j):
        return None
    if j < len(b) and _LINE_SEP.match(b, j) is None:
        return None
    width = j - s
    start, lines = s, 1
    while lines < _MAX_BLOCK_LINES:  # earlier lines of the same width (the run may be the last)
        prev = _prev_line(b, start)
        if prev is None or not _B64_LINE.fullmatch(b, *prev):
            break
        w = prev[1] - prev[0]
        if w != width and not (lines == 1 and width < w <= 120):
            break
        width, start, lines = w, prev[0], lines + 1
    cached = sc.blocks.get(start)
    if cached is not None:
        return cached
    parts, end = [b[start:j]], j
    while lines < _MAX_BLOCK_LINES:  # later lines: same width, or one shorter last line
        m = _LINE_SEP.match(b, end)
        if m is None:
            break
        q = _B64_LINE.match(b, m.end())
        if q is None or (q.end() < len(b) and _LINE_SEP.match(b, q.end()) is None):
            break
        if q.end() - q.start() > width:
            break
        parts.append(b[q.start():q.end()])
        end, lines = q.end(), lines + 1
        if q.end() - q.start() < width:
            break
    import binascii

    try:
        raw = binascii.a2b_base64(b"".join(_LINE_SEP.sub(b"", b[start:end]).split()))
    except (binascii.Error, ValueError):
        return None
    text_like = raw and sum(c in _TEXT_BYTES for c in raw[:4096]) >= 0.95 * min(len(raw), 4096)
    if text_like:
        verdict = scrub(raw.decode("utf-8", "replace"), True)[1].status == "clean"
    elif lines >= 3 or raw.startswith((b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"\x00\x00\x01\x00", b"0\x82")):
        verdict = True  # binary data: an image, an icon, a DER certificate
    else:
        return None
    sc.blocks[start] = verdict
    return verdict


_PATH_PIECE = _Lazy(rb"[A-Za-z0-9_.-]+")


def _pathy(b: bytes, s: int, j: int) -> bool:
    """A run that is a file path: at least one ``/`` and no ``+`` or ``=``, followed by a file
    extension or holding two ``/`` or more, and every ``/``-separated piece short (≤ 12), hex,
    or words (:func:`_word_piece` on its ``_ . -``-separated parts). Measured on installed
    packages' paths (``bench/redact_corpus.py``): ``kdf/pbkdf2.py``, ``cloudhsmv2/2017-04-28``."""
    run = b[s:j]
    slashes = run.count(b"/")
    if not slashes or b"+" in run or b"=" in run:
        return False
    ext = j < len(b) and b[j] == 46 and j + 1 < len(b) and 97 <= b[j + 1] <= 122
    if not ext and slashes < 2:
        return False
    for piece in run.split(b"/"):
        if len(piece) <= 12 or _HEX.fullmatch(piece) or sum(48 <= c <= 57 for c in piece) >= len(piece) - 2:
            continue
        if not all(len(p) <= 8 or _word_piece(p, strict=len(p) > 24) for p in _PIECES.split(piece)):
            return False  # a 25+ character part must be words even by the strict test
    return True


def _card_end(b: bytes, s: int, e: int) -> int:
    """End of the card number starting at ``s`` within the digit shape ``b[s:e]``, or 0.

    A grouped shape may run on past the card ("4111 1111 1111 1111 4111 ..."): shorter prefixes
    ending on a group boundary are tried too, longest first."""
    raw = b[s:e]
    ends = [len(raw)] + [i for i in range(len(raw) - 1, 0, -1) if raw[i] in b" -"]
    for cut in ends:
        digits = raw[:cut].replace(b" ", b"").replace(b"-", b"")
        if len(digits) < 13:
            break
        if _CARD_BRANDS.fullmatch(digits) and _luhn(digits):
            return s + cut
    return 0


def _luhn(digits: bytes) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ch - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _apply(b: bytes, spans: list) -> bytes:
    """Replace ``spans`` (start, end, placeholder) in ``b``; overlapping spans merge into the
    first one's placeholder. Spans are ASCII-bounded, so the result is valid UTF-8 when ``b``
    was."""
    spans.sort(key=lambda t: (t[0], -t[1]))
    out = []
    pos = 0
    cur_s, cur_e, cur_p = spans[0]
    for s, e, p in spans[1:]:
        if s < cur_e:
            cur_e = max(cur_e, e)
            continue
        out.append(b[pos:cur_s])
        out.append(cur_p)
        pos = cur_e
        cur_s, cur_e, cur_p = s, e, p
    out.append(b[pos:cur_s])
    out.append(cur_p)
    out.append(b[cur_e:])
    return b"".join(out)


_CONFUSABLE_LEADS = tuple(bytes([c]) for c in range(0xCE, 0xD5))
"""UTF-8 lead bytes of Greek and Cyrillic (U+0380–U+053F); each is looked for with one memchr."""
_FULLWIDTH = re.compile(rb"\xef[\xbc\xbd]")
_ZERO_WIDTH = re.compile(rb"\xe2\x80[\x8b-\x8d]")
_SOFT_HYPHEN = re.compile(rb"\xc2\xad")
_CONFUSABLES = {ord(k): v for k, v in zip(
    "аеорсухкіјѕԁһԛԝвмнтАВЕКМНОРСТУХІЈЅαοινκρτυχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxkijsdhqwbmhtABEKMHOPCTYXIJSaoivkptuxeABEZHIKMNOPTYX")}
_CONFUSABLES.update({0x200B: None, 0x200C: None, 0x200D: None, 0x00AD: None})
"""Latin lookalikes of Cyrillic and Greek letters (the single-letter ``MA`` entries of Unicode's
confusables.txt, UTS #39, that map to ASCII) and the invisible characters that can split a
keyword (zero-width space / non-joiner / joiner, soft hyphen), dropped."""


def _needs_fold(b: bytes) -> bool:
    """Whether the UTF-8 text holds a Greek, Cyrillic, fullwidth or invisible character that
    could disguise a keyword: ~12 single-byte ``find`` s (memchr) when it does not, a regex only
    where the memchr saw a byte the character needs."""
    if b.isascii():
        return False
    find = b.find
    if any(find(c) >= 0 for c in _CONFUSABLE_LEADS):
        return True
    return (_by_memchr(b, b"\xef", _FULLWIDTH, 0)
            or any(_by_memchr(b, c, _ZERO_WIDTH, 2) for c in (b"\x8b", b"\x8c", b"\x8d"))
            or _by_memchr(b, b"\xad", _SOFT_HYPHEN, 1))


def _by_memchr(b: bytes, byte: bytes, rx, back: int) -> bool:
    """Whether ``rx`` (a short literal-led pattern holding ``byte`` ``back`` bytes after its start)
    occurs in ``b``: each occurrence of ``byte`` (memchr) is checked with ``rx.match`` at
    ``i - back``; past 64 occurrences one ``rx.search`` decides."""
    i = b.find(byte)
    seen = 0
    while i >= 0:
        seen += 1
        if seen > 64:
            return rx.search(b, max(0, i - back)) is not None
        if i >= back and rx.match(b, i - back):
            return True
        i = b.find(byte, i + 1)
    return False


def fold_confusables(text: str) -> str:
    """``text`` as the keyword rules should read it: NFKC-normalized (fullwidth ``ｐａｓｓ`` →
    ``pass``, mathematical letters → ASCII), Cyrillic/Greek lookalikes mapped to Latin
    (:data:`_CONFUSABLES`), zero-width characters and soft hyphens removed."""
    import unicodedata

    return unicodedata.normalize("NFKC", text).translate(_CONFUSABLES)


def scrub(text: str, is_tool_output: bool = False) -> tuple[str, Outcome]:
    """Scrub one text value. Returns ``(text_to_store, Outcome)``; never raises on any ``str``.

    ``is_tool_output`` enables the entropy rule (tool input and result, not prose). A marker hit
    returns :func:`withheld` of the whole value with status ``quarantined``; otherwise spans are
    replaced in place (status ``redacted``) or the very same ``text`` object comes back with
    :data:`CLEAN`. Rules and their sources: module docstring; docs/design.md §7; docs/security.md, Redaction.

    >>> scrub("key AKIAQWERTYUIOPASDFGH here")[1].status
    'quarantined'
    >>> scrub("postgres://app:hunter22@db:5432/x")[0]
    'postgres://app:[ctxlake:redacted]@db:5432/x'
    """
    if not text:
        return text, CLEAN
    b = text.encode("utf-8", "surrogatepass")
    if _needs_fold(b):
        # Lookalike evasion ("pаssword" with a Cyrillic "а", "ｔｏｋｅｎ", "pass\u200bword"): the
        # folded text is scrubbed too; a rule that fires only there withholds the whole value.
        out, oc = _scrub_bytes(text, b, is_tool_output)
        try:
            folded = fold_confusables(text)
        except ValueError:  # lone surrogates: unicodedata refuses them
            return out, oc
        if folded != text:
            extra = set(_scrub_bytes(folded, folded.encode("utf-8", "surrogatepass"), is_tool_output)[1].rules) - set(oc.rules)
            if extra:
                return withheld(text), Outcome("quarantined", tuple(sorted(set(oc.rules) | extra | {"confusable_text"})))
        return out, oc
    return _scrub_bytes(text, b, is_tool_output)


def _scrub_bytes(text: str, b: bytes, is_tool_output: bool) -> tuple[str, Outcome]:
    """:func:`scrub` of ``text`` whose UTF-8 (``surrogatepass``) bytes are ``b``, no folding."""
    sc = _Scan(b)
    _scan_tokens(sc)
    _scan_keywords(sc)
    if sc.marks:
        return withheld(text), Outcome("quarantined", tuple(sorted(sc.marks)))
    _scan_structural(sc)
    rules = sc.inplace
    if sc.spans:
        b = _apply(b, sc.spans)
    if is_tool_output:
        # Step 4 runs on the text as steps 2-3 left it (docs/design.md §7 order): a run's entropy
        # is judged once, on what will be stored, so a second scrub sees the same runs.
        ent = _Scan(b)
        _scan_entropy(ent)
        if ent.spans:
            b = _apply(b, ent.spans)
            rules = rules | ent.inplace
    if not rules:
        return text, CLEAN
    return b.decode("utf-8", "surrogatepass"), Outcome("redacted", tuple(sorted(rules)))


# -- path denylist ----------------------------------------------------------------------
_DENY_SUBSTR = ("/.aws/credentials", "/.aws/config", "/.ssh/id_", "/.netrc", "/.npmrc", "/.pypirc",
                "/.docker/config.json", "/.kube/config", "/secrets/", "/vault/", "/.git-credentials",
                "/.config/gh/hosts.yml", "/.config/gcloud/", "/.azure/", "/.gnupg/", "/terraform.tfstate",
                "/id_rsa", "/id_ed25519", "/id_ecdsa", "/id_dsa", "/.pgpass", "/.my.cnf", "/.s3cfg",
                "/.boto", "/.vault-token", "/.cargo/credentials", "/.gem/credentials", "/.password-store/",
                "/.config/rclone/", "/credentials.tfrc.json", "/.terraform.d/credentials", "/etc/shadow",
                "/.htpasswd", "/.hermes/.env")
_DENY_SUFFIX = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx", ".tfstate",
                ".tfstate.backup")
_CMD_SPLIT = _Lazy(r"[\s\"'`;|&<>()=]+")


def denied_path(paths) -> str | None:
    """The first path in ``paths`` on the credential-file denylist, or ``None``.

    Substring match (``/.aws/credentials``, ``/.ssh/id_``, ``/.pgpass`` ...; a leading ``/`` is
    implied so relative paths match), any ``.env`` / ``.env.*`` / ``.envrc`` file (templates such
    as ``.env.example`` included: docs/design.md §7 says ``.env*``, and they are often filled in), and
    the key-file suffixes ``.pem .key .p12 .pfx .jks .keystore .ppk .kdbx .tfstate``. Backslashes
    count as ``/``; matching is case-insensitive. Source: docs/security.md, Redaction plus the credential
    files of common CLIs.
    """
    for p in paths or ():
        s = str(p).replace("\\", "/")
        low = s.lower()
        base = low.rstrip("/").rsplit("/", 1)[-1]
        if any(d in "/" + low for d in _DENY_SUBSTR) or low.endswith(_DENY_SUFFIX):
            return s
        if base.startswith(".env") and (len(base) == 4 or base[4] in ".-_r"):
            return s
    return None


def denied_in_command(command: str) -> str | None:
    """The first denylisted path named in a shell ``command`` (``cat ~/.aws/credentials``,
    ``source .env``), or ``None``. Words are split on whitespace, quotes and shell operators;
    each word is checked with :func:`denied_path`. Used for Bash-like tools, which carry no
    ``file_path`` but read or write credential files all the same."""
    if not command or not isinstance(command, str):
        return None
    words = [w for w in _CMD_SPLIT.split(command) if "/" in w or "." in w]
    return denied_path(words)


def withhold_path(path: str, text: str) -> tuple[str, Outcome]:
    """Withhold a tool value because the call touched ``path`` on the denylist.

    Returns ``("[ctxlake: withheld, denied path <path>]", Outcome("quarantined",
    ("denied_path",)))``; ``text`` is ignored — nothing of it is kept.
    """
    return f"[ctxlake: withheld, denied path {path}]", Outcome("quarantined", ("denied_path",))


def fold(outcomes) -> dict:
    """Fold per-field outcomes into the envelope's ``redaction`` object.

    Status is the worst seen (quarantined > redacted > clean); ``rules_fired`` is the sorted,
    de-duplicated union and is omitted when empty.
    """
    status = "clean"
    rules: set = set()
    for o in outcomes:
        if STATUS_ORDER[o.status] > STATUS_ORDER[status]:
            status = o.status
        rules.update(o.rules)
    out = {"status": status}
    if rules:
        out["rules_fired"] = sorted(rules)
    return out


_BIG_INT = 10 ** 12


def scrub_deep(value, is_tool_output: bool = False):
    """Scrub every string at any depth of a JSON-like value (MCP write guard, docs/design.md §11).

    Returns ``(new_value, [Outcome, ...])`` with one outcome per changed leaf. Dict keys are
    scrubbed too; lists, tuples and dicts are rebuilt, other leaves kept. Integers of 13 digits
    or more are checked as text (a card number can arrive as a JSON number) and replaced by the
    scrubbed string when a rule fires. Never raises on JSON-like input.
    """
    outcomes: list = []

    def walk(v):
        if isinstance(v, str):
            t, o = scrub(v, is_tool_output)
            if o.status != "clean":
                outcomes.append(o)
            return t
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= _BIG_INT:
            t, o = scrub(str(v), is_tool_output)
            if o.status != "clean":
                outcomes.append(o)
                return t
        return v

    return walk(value), outcomes
