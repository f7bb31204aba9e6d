"""Structural spans (docs/security.md, Redaction, rule 2), replaced in place in every text
including prompts: URL credentials (``scheme://user:PASS@``), ``curl -u user:PASS`` and curl key
headers, command-line credentials (:mod:`lib.redact.cmdline`), signed-URL signatures (Azure SAS
``sig=``, ``X-Amz-Signature=``, ``X-Goog-Signature=``), Luhn-valid card numbers with a real
issuer prefix and US SSNs."""
from __future__ import annotations

import re

from lib.redact.outcome import _P, _P_CARD, _P_SSN
from lib.redact.scan import _bounded, _finds, _Lazy, _mixed, _Scan, _table
from lib.redact.shapes import _secretish
from lib.redact.cmdline import spans as command_line_spans


_DIGIT_CLS = _table({"0123456789": ord("d"), " ": ord("s"), "-": ord("-"),
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_": ord("w")}, ord("x"))

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
_SIG_PARAMS = (b"sig=", b"signature=")
"""The signature parameters, found by the ``sig`` they start with (``bytes.find``: a third fewer
instructions than sre's literal-prefix scan of ``sig(?:nature)?=``)."""
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

_IIN_FIRST = frozenset(b"23456")


def _scan_structural(sc: _Scan) -> None:
    """URL credentials, curl -u, command-line credentials (:mod:`lib.redact.cmdline`), URL
    signatures, card numbers, SSNs (whole field)."""
    b = sc.b
    for i in (_finds(b, b"://", first) if (first := b.find(b"://")) >= 0 else ()):
        m = _URI_CRED.match(b, i) or _URI_CRED_SLASH.match(b, i)
        if m and not (m.re is _URI_CRED_SLASH and (_PORT_PATH.match(m.group(2)) or b"://" in m.group(2))):
            pw = m.group(2)
            if not (pw.startswith((b"$", b"<")) or not pw.strip(b"*") or b"${" in pw or b"{{" in pw
                    or b"[ctxlake" in pw or pw.lower() in _PLACEHOLDER_PASSWORDS):
                sc.span(m.start(2), m.end(2), _P, "uri_credentials")
    low = sc.lower()
    end = 0
    for i in (_finds(low, b"curl", first) if (first := low.find(b"curl")) >= 0 else ()):
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
    for st in (_finds(low, b"sig", first) if (first := low.find(b"sig")) >= 0 else ()):  # one pass for sig= and signature=
        if not low.startswith(_SIG_PARAMS, st):
            continue
        if not low.endswith(_SIG_BEFORE, max(0, st - 8), st):
            continue  # a query parameter: ?sig= &sig= ;sig= ?X-Amz-Signature= &X-Goog-Signature=
        m = _URL_SIG.match(low, st)
        if m:
            v = b[m.start(1):m.end(1)]
            if _mixed(v) or b"%" in v:
                sc.span(m.start(1), m.end(1), _P, "url_signature")
    if len(b) < 11:
        return  # the shortest card number has 13 digits, an SSN 11 characters
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
