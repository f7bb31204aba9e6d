"""Redaction: nothing that looks like a secret reaches disk (DESIGN.md §7, invariant 7).

``scrub(text, is_tool_output)`` returns ``(clean_text, Outcome)``. Order of rules:

1. **Secret markers** — provider token formats and secret key/value assignments. Any hit
   withholds the *whole* value as ``[ctxlake: withheld, <n> bytes, sha256:<hex>]`` and the
   status is ``quarantined``. Scans the whole field.
2. **Structural spans** — URL credentials (``scheme://user:PASS@``), Luhn-valid card numbers,
   US SSNs — replaced in place (status ``redacted``).
3. **Prefixed tokens** — ``Bearer ``, ``hf_``, ``npm_``, ``SG.`` only when a token-shaped run
   follows (a bare prefix in prose such as ``MSG.txt`` stays clean: reference bug 12.2 #7).
4. **Entropy** — tool input/output only: runs of ``[A-Za-z0-9+/=_-]`` of ≥ 32 characters with
   Shannon entropy ≥ 4.5 bits/char, within the first 256 KiB.

A path denylist (:func:`denied_path`) withholds both input and result of a tool call that
touches a credential file. Replacements never split a multibyte character (we work on ``str``).
Precision trades, each deliberate: markers need a token-shaped tail so prose naming a provider
stays clean; the entropy rule skips pure hex (git SHAs, sha256 digests: ≤ 4 bits/char by
construction) and runs that are paths or ULIDs/UUIDs. Standard library only (the hook uses it).
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

ENTROPY_MIN_LEN = 32
ENTROPY_THRESHOLD = 4.5
MAX_SCAN_CHARS = 256 * 1024
"""The entropy scan covers the first 256 KiB of a field (DESIGN.md §7)."""

STATUS_ORDER = {"clean": 0, "redacted": 1, "quarantined": 2}

# -- 1. secret markers: (rule, regex). A hit withholds the whole value. -------------------
_B = r"(?<![A-Za-z0-9_])"  # token must not continue a word
_MARKERS = [
    ("anthropic_key", _B + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai_project_key", _B + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"),
    ("anthropic_or_openai_key", _B + r"sk-[A-Za-z0-9]{20,}"),
    ("stripe_live_key", _B + r"sk_live_[A-Za-z0-9]{16,}"),
    ("stripe_test_key", _B + r"sk_test_[A-Za-z0-9]{16,}"),
    ("stripe_restricted_key", _B + r"rk_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("aws_access_key_id", _B + r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("github_pat", _B + r"gh[pousr]_[A-Za-z0-9]{30,}"),
    ("github_fine_grained_pat", _B + r"github_pat_[A-Za-z0-9_]{40,}"),
    ("slack_token", _B + r"xox[abprse]-[A-Za-z0-9-]{10,}"),
    ("slack_app_level_token", _B + r"xapp-\d-[A-Za-z0-9-]{10,}"),
    ("slack_webhook", r"hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    ("discord_webhook", r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}"),
    ("gitlab_pat", _B + r"gl(?:pat|rt|dt|ptt|cbt)-[A-Za-z0-9_-]{20,}"),
    ("google_api_key", _B + r"AIza[0-9A-Za-z_-]{35}"),
    ("google_oauth_token", _B + r"ya29\.[0-9A-Za-z_-]{20,}"),
    ("private_key", r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----"),
    ("jwt", _B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("authorization_header", r"(?i:\bauthorization\s*[:=]\s*[\"']?(?:basic|bearer|token|digest)?\s*[A-Za-z0-9._~+/=-]{12,})"),
    ("groq_key", _B + r"gsk_[A-Za-z0-9]{20,}"),
    ("xai_key", _B + r"xai-[A-Za-z0-9]{20,}"),
    ("digitalocean_token", _B + r"do[opr]_v1_[a-f0-9]{40,}"),
    ("shopify_token", _B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{20,}"),
    ("twilio_key", _B + r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])"),
    ("mailgun_key", _B + r"key-[0-9a-f]{32}(?![A-Za-z0-9])"),
    ("databricks_token", _B + r"dapi[0-9a-f]{32}(?:-\d)?(?![A-Za-z0-9])"),
    ("azure_storage_key", r"AccountKey=[A-Za-z0-9+/]{40,}={0,2}"),
    ("pypi_token", _B + r"pypi-AgE[A-Za-z0-9_-]{40,}"),
    ("secret_assignment", r"(?i:(?:aws_secret_access_key|anthropic_api_key|openai_api_key|pgpassword|mysql_pwd|"
                          r"client_secret|api_secret|secret_key|db_password)[\"']?\s*[:=]\s*[\"']?[^\s\"',]{8,})"),
]
_MARKER_RE = re.compile("|".join(f"(?P<m{i}>{pat})" for i, (_, pat) in enumerate(_MARKERS)))
_MARKER_RULES = {f"m{i}": rule for i, (rule, _) in enumerate(_MARKERS)}

# -- 2. structural spans ----------------------------------------------------------------
_URI_CRED = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/?#@:\"']+:)([^\s/?#@\"']+)(@)")
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_SSN = re.compile(r"(?<![\d-])(\d{3})-(\d{2})-(\d{4})(?![\d-])")

# -- 3. prefixed tokens: (rule, prefix regex, minimum tail) -------------------------------
_PREFIXED = [
    ("bearer_token", re.compile(r"\b(Bearer )([A-Za-z0-9._~+/=-]{16,})")),
    ("huggingface_token", re.compile(r"(?<![A-Za-z0-9_])(hf_)([A-Za-z0-9]{20,})")),
    ("npm_token", re.compile(r"(?<![A-Za-z0-9_])(npm_)([A-Za-z0-9]{20,})")),
    ("sendgrid_key", re.compile(r"(?<![A-Za-z0-9_])(SG\.)([A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,})")),
]

# -- 4. entropy -------------------------------------------------------------------------
_RUN = re.compile(r"[A-Za-z0-9+/=_-]{%d,}" % ENTROPY_MIN_LEN)
_HEX = re.compile(r"[0-9a-fA-F]+")
_UUIDISH = re.compile(r"^[0-9a-fA-F-]+$")
_INTEGRITY = re.compile(r"(?:sha(?:1|256|384|512))-[A-Za-z0-9+/]+=*$")

# -- path denylist ----------------------------------------------------------------------
_DENY_SUBSTR = ("/.aws/credentials", "/.aws/config", "/.ssh/id_", "/.netrc", "/.npmrc", "/.pypirc",
                "/.docker/config.json", "/.kube/config", "/secrets/", "/vault/", "/.git-credentials",
                "/.config/gh/hosts.yml", "/.config/gcloud/", "/.azure/", "/.gnupg/", "/terraform.tfstate",
                "/id_rsa", "/id_ed25519", "/id_ecdsa")
_DENY_SUFFIX = (".pem", ".key", ".p12", ".pfx", ".jks")


@dataclass(frozen=True)
class Outcome:
    """Result of scrubbing one value: ``status`` clean|redacted|quarantined, ``rules`` fired."""

    status: str = "clean"
    rules: tuple = ()


CLEAN = Outcome()


def withheld(text: str) -> str:
    """Placeholder for a wholly withheld value: size and hash, never the value."""
    raw = text.encode("utf-8", "surrogatepass")
    return f"[ctxlake: withheld, {len(raw)} bytes, sha256:{hashlib.sha256(raw).hexdigest()}]"


def shannon_entropy(s: str) -> float:
    """Shannon entropy of ``s`` in bits per character."""
    if not s:
        return 0.0
    counts: dict = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(m: re.Match) -> str | None:
    raw = m.group(0)
    seps = set(ch for ch in raw if not ch.isdigit())
    if len(seps) > 1:
        return None
    digits = raw.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or not _luhn(digits) or len(set(digits)) < 3:
        return None
    if not seps and digits[0] not in "23456":  # unseparated runs: only real card prefixes (Visa, MC, Amex, Discover...)
        return None
    return "[ctxlake:redacted-card]"


def _ssn(m: re.Match) -> str | None:
    area, group, serial = m.group(1), m.group(2), m.group(3)
    if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
        return None
    return "[ctxlake:redacted-ssn]"


def _entropy_run(run: str) -> bool:
    if _HEX.fullmatch(run) or _UUIDISH.match(run) or _INTEGRITY.match(run):
        return False  # hashes, UUIDs and lock-file integrity strings are not secrets
    if run.count("/") >= 2 and not run.endswith("="):
        return False  # path-like (a/b/c): base64 blobs rarely carry many slashes and no padding
    return shannon_entropy(run) >= ENTROPY_THRESHOLD


def scrub(text: str, is_tool_output: bool = False) -> tuple[str, Outcome]:
    """Scrub one text value. Returns ``(text_to_store, Outcome)``; never raises on any str.

    ``is_tool_output`` enables the entropy rule (tool input and result, not prose).
    """
    if not text:
        return text, CLEAN
    m = _MARKER_RE.search(text)
    if m:
        rules = sorted({_MARKER_RULES[k] for mm in _MARKER_RE.finditer(text) for k, v in mm.groupdict().items() if v})
        return withheld(text), Outcome("quarantined", tuple(rules))
    rules: list[str] = []
    out = text
    if "://" in out:
        new = _URI_CRED.sub(lambda mm: mm.group(1) + "[ctxlake:redacted]" + mm.group(3), out)
        if new != out:
            rules.append("uri_credentials")
            out = new
    for rule, rx, fn in (("card_number", _CARD, _card), ("ssn", _SSN, _ssn)):
        fired = False

        def repl(mm, fn=fn):
            nonlocal fired
            r = fn(mm)
            if r is None:
                return mm.group(0)
            fired = True
            return r

        out = rx.sub(repl, out)
        if fired:
            rules.append(rule)
    for rule, rx in _PREFIXED:
        new = rx.sub(lambda mm: mm.group(1) + "[ctxlake:redacted]", out)
        if new != out:
            rules.append(rule)
            out = new
    if is_tool_output:
        head, tail = out[:MAX_SCAN_CHARS], out[MAX_SCAN_CHARS:]
        fired = False

        def ent(mm):
            nonlocal fired
            if _entropy_run(mm.group(0)):
                fired = True
                return "[ctxlake:redacted-secret]"
            return mm.group(0)

        head = _RUN.sub(ent, head)
        if fired:
            rules.append("high_entropy_run")
            out = head + tail
    if not rules:
        return text, CLEAN
    return out, Outcome("redacted", tuple(rules))


def denied_path(paths) -> str | None:
    """The first path in ``paths`` on the credential-file denylist, or ``None``.

    Substring match (``/.aws/credentials``, ``/.ssh/id_``, ...), any ``.env``/``.env.*`` file,
    and the key-file suffixes ``.pem .key .p12 .pfx .jks`` (reference spec §6).
    """
    for p in paths or ():
        s = str(p).replace("\\", "/")
        low = s.lower()
        base = low.rsplit("/", 1)[-1]
        if any(d in "/" + low for d in _DENY_SUBSTR) or low.endswith(_DENY_SUFFIX):
            return s
        if base == ".env" or base.startswith(".env."):
            return s
    return None


def withhold_path(path: str, text: str) -> tuple[str, Outcome]:
    """Withhold a tool value because the call touched ``path`` on the denylist."""
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


def scrub_deep(value, is_tool_output: bool = False):
    """Scrub every string at any depth of a JSON-like value (MCP write guard, DESIGN.md §11).

    Returns ``(new_value, [Outcome, ...])``; dict keys are scrubbed too.
    """
    outcomes: list = []

    def walk(v):
        if isinstance(v, str):
            t, o = scrub(v, is_tool_output)
            if o.status != "clean":
                outcomes.append(o)
            return t
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        return v

    return walk(value), outcomes
