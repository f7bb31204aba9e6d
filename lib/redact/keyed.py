"""Keyword-anchored rules (docs/security.md, Redaction, rules 1–3): values that only their context
identifies. A name holding a secret-meaning keyword (:data:`_KEYWORDS`) or a provider's name
(:data:`_PROVIDER_NAMES`), an assignment operator within 20 characters (gitleaks' operator set,
quotes and JSON escapes around it) and a secret-shaped value (:func:`_keyed_value`) —
``password_assignment`` / ``keyed_secret``, or a named key (``aws_secret_kv`` …) that withholds the
whole field; ``Authorization:`` headers, ``Bearer`` tokens and the ``data:`` values of a
Kubernetes ``kind: Secret`` manifest. As gitleaks' ``generic-api-key`` and detect-secrets'
``KeywordDetector`` do; keywords are found with ``bytes.find`` over the lower-cased text, the
name around a keyword and the value after the operator by one anchored, bounded regex."""
from __future__ import annotations

import re

from lib.redact.outcome import _P
from lib.redact.scan import _finds, _HAS_DIGIT, _Lazy, _mixed, _Scan, _table
from lib.redact.shapes import _DIGEST_PREFIXES, _secretish, _wordy


_K8S_SECRET = _Lazy(rb"kind:(?:[ \t]|\\t)*(?:\\?[\"'])?secret(?![a-z0-9_-])")
_K8S_DATA_VALUE = _Lazy(rb"[\w.-]+:(?:(?:[ \t]|\\t)*[|>][-+]?)?(?:\s|\\[tnr])*(?:\\?[\"'])?([A-Za-z0-9+/]{10,}(?:={1,3}(?![A-Za-z0-9+=])|(?![A-Za-z0-9+/=])))")
"""``kind: Secret`` and, within 300 bytes, ``data:``: each ``name: <base64>`` after it (4 KiB) is
a secret's value (gitleaks ``kubernetes-secret-yaml``); a ``/`` may follow its ``=`` padding (the
manifest's text inside a path)."""

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
_TAIL_OPERATOR = re.compile(rb"[:=>?|,]").search
"""The first byte of an assignment operator of :data:`_KEYED_TAIL`. The operator starts at most
48 bytes after the keyword's word (a name rest of ≤ 20 units and ≤ 4 quotes, each unit at most
a 2-byte JSON escape), and an XML ``value`` needs a ``"`` within 21: without either, neither
pattern can match and :func:`_keyed_at` stops before running them."""
_QUOTE_NEAR = _Lazy(rb"[\"'`]")
_NAME_CH = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.-")
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


def _keyed_at(sc: _Scan, ks: int, ke: int, kind: bytes) -> int:
    """Judge the assignment whose name holds a keyword at ``[ks, ke)``; record the span or the
    quarantine rule. Returns the end of the value read (or ``ke``)."""
    b, low = sc.b, sc.lower()
    done = _KEYWORD_REST.get(kind)
    if done is not None:
        ke = done.match(low, ke).end()  # "password", "credentials": the name window starts after the word
    if _TAIL_OPERATOR(b, ke, ke + 49) is None and b.find(b'"', ke, ke + 22) < 0:
        return ke  # neither pattern below can match: most keyword hits in code and prose end here
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


def _scan_keyed(sc: _Scan) -> None:
    """Keyword-anchored assignments, every keyword occurrence of the whole field."""
    low = sc.lower()
    hits = sc.kw_hits
    find = low.find
    for kw in _KEYWORDS:
        i = find(kw)
        at = _finds(low, kw, i) if i >= 0 else ()  # most fields hold few keywords: no call for the rest
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
_BEARER = _Lazy(rb"bearer[ \t]+([A-Za-z0-9._~+/=-]{16,})")


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


def _scan_keywords(sc: _Scan) -> None:
    """Case-insensitive keyword rules: named secret assignments, Authorization, Bearer,
    Kubernetes Secret data values."""
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
    for i in (_finds(low, b"bearer", first) if (first := low.find(b"bearer")) >= 0 else ()):
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
