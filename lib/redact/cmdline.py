"""Credentials given on a command line: the value of an option whose name means secret
(``--password X``, ``--ftp-passwd=X``, ``-computer-pass X``, ``--api-key X``, ``--ks-pass
pass:X``) and the short flags that specific tools document as their password or token
(``mysql -pX``, ``sshpass -p X``, ``docker login -p X``, ``redis-cli -a X``, ``sqlcmd -P X``,
``ldapsearch -w X``, ``zip -P X``, ``7z -pX``, ``smbclient -U user%X``, Windows ``/p X``, ...).

Why its own module: these values carry no shape of their own (a 12-character password is
indistinguishable from a file name), so neither the provider markers nor the entropy rule of
:mod:`lib.redact` can see them; only the option that precedes them says what they are. The rule
table comes from the tools' own documentation as collected by the tldr pages (CC BY 4.0, the
corpus under ``tests/fixtures/tldr/``, see ``tests/fixtures/NOTICE.md``); docs/security.md,
Redaction, lists the classes.

Cost: one ``bytes.find`` per secret word over the lowered text (memchr speed), and a tool-table
lookup only where a listed tool's name occurs; text without ``pass``/``secret``/``token``/
``key``/``auth`` and without a listed tool costs a few scans.
"""
from __future__ import annotations

import re

_WORDS = (b"key", b"token", b"secret", b"pass", b"pwd", b"auth", b"cred")
"""Literal pieces one of which every secret option name holds (the keywords of
``lib.redact.keyed._KEYWORDS``, whose offsets the scrub has already found)."""

_NAME = re.compile(
    rb"(?:[a-z0-9]+[-_])*?(?:"
    rb"password|passwd|passphrase|pass|pwd|passwort|secret|secret[-_]string|secret[-_]key|"
    rb"token|api[-_]?key|apikey|access[-_]?key|auth[-_]?key|auth|client[-_]?secret|otp|"
    rb"credentials?|storepass|keypass|srcstorepass|deststorepass|ks[-_]pass|key[-_]pass|"
    rb"passin|passout|private[-_]key[-_]password|master[-_]key|license[-_]key)")
"""An option name (without its dashes) whose last part means a secret value follows."""

_NOT_A_VALUE_OPTION = re.compile(
    rb"(?:no|ask|prompt|read|show|reset|rotate|generate|gen|with|use|require|allow|disable|"
    rb"enable|change|expire|forgot|new[-_]pass(?:word)?[-_]prompt|max|min)(?:[-_][a-z0-9]+)*"
    rb"|.*[-_](?:file|files|path|dir|stdin|env|id|ids|name|names|length|len|type|policy|prompt|"
    rb"hash|hint|store|manager|command|cmd|fd|url|uri|ttl|expiry|expiration|count|size|mode|"
    rb"helper|source|format|version|arn|server|host|port|user|username|header|cache|endpoint)")
"""Option names that end in a secret word but take no secret (``--no-password``,
``--ask-become-pass``) or name where one is kept (``--password-file``)."""

_OPT_START = frozenset(b" \t\n\r\"'`[|({;&=\\")
_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_")
_VALUE_END = frozenset(b" \t\n\r\"'`;|&)<>,")


def _value_at(b: bytes, i: int, stop: int) -> tuple[int, int]:
    """The value token starting at ``b[i]`` (after an option): ``(start, end)``, quotes and a
    JSON escape (``\\"``) excluded; ``(i, i)`` when there is none."""
    q = b[i:i + 1]
    if q == b"\\" and b[i + 1:i + 2] in (b'"', b"'"):
        q, i = b[i + 1:i + 2], i + 1
    if q in (b'"', b"'"):
        end = b.find(q, i + 1, stop)
        if end < 0:
            return i, i
        if b[end - 1:end] == b"\\":  # JSON-escaped closing quote
            end -= 1
        return i + 1, end
    j = i
    while j < stop and b[j] not in _VALUE_END:
        if b[j] == 92 and b[j + 1:j + 2] in (b"n", b"t", b"r", b'"'):  # a JSON escape ends it
            break
        j += 1
    return i, j


_FILEISH = re.compile(rb"(?:[\w.-]*/)+[\w.-]+|[\w-]+\.(?:txt|lst|list|pem|key|crt|json|ya?ml|cfg|conf|ini|csv|db|p12|pfx|jks|gpg|asc|age|enc)")


def _plausible(v: bytes) -> bool:
    """Whether ``v`` may be a literal secret rather than a reference, placeholder, file or flag."""
    if _FILEISH.fullmatch(v):
        return False  # "-p path/to/passwords.txt", "--password-list words.lst": where one is kept
    if len(v) < 3 or v[:1] in (b"-", b"$", b"%", b"<", b"@", b"{", b"[") or b"${" in v or b"{{" in v:
        return False
    lv = v.lower()
    if lv.startswith((b"env:", b"file:", b"fd:", b"stdin", b"prompt", b"[ctxlake")):
        return False
    if not lv.strip(b"*x.") or lv in (b"password", b"secret", b"token", b"none", b"null", b"true",
                                      b"false", b"changeme", b"redacted", b"hidden"):
        return False
    return True


def _secret_part(b: bytes, s: int, e: int) -> tuple[int, int]:
    """Within an option value, the part that is secret: after ``pass:`` (OpenSSL's
    ``-passin pass:X``), after ``user:`` / ``user%`` when the value is a credential pair."""
    v = b[s:e]
    if v.lower().startswith(b"pass:"):
        return s + 5, e
    for sep in (b":", b"%"):
        k = v.find(sep)
        if 0 < k < len(v) - 1 and b"/" not in v[:k] and b"@" not in v[:k]:
            return s + k + 1, e
    return s, e


def _word_hits(low: bytes):
    """``(word, [offsets])`` of every :data:`_WORDS` occurrence in ``low``."""
    out = []
    for w in _WORDS:
        at, i = [], low.find(w)
        while i >= 0:
            at.append(i)
            i = low.find(w, i + 1)
        out.append((w, at))
    return out


def long_option_spans(b: bytes, low: bytes, hits=None) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` (byte offsets into ``b``) of the values of options whose name
    means secret: ``--password X``, ``--password=X``, ``-computer-pass X``, ``/password:X``.

    ``low`` is ``b.lower()``. A value that is a reference (``$VAR``, ``env:X``, ``@file``), a
    placeholder (``<pw>``, ``{{pw}}``, ``***``) or the next flag is left alone. ``hits`` is
    ``[(word, [offsets])]`` of the words in ``low`` when the caller has found them already
    (``lib.redact`` has); other words in it are ignored."""
    out: list = []
    seen: set = set()
    n = len(low)
    for word, at in (hits if hits is not None else _word_hits(low)):
        if word not in _WORDS:
            continue
        for i in at:
            ts = i
            while ts > 0 and low[ts - 1] in _NAME_CHARS:
                ts -= 1
            te = i + len(word)
            while te < n and low[te] in _NAME_CHARS:
                te += 1
            if low[ts:ts + 1] != b"-" and not (ts > 0 and low[ts - 1] == 47):
                continue  # not an option: most keyword hits end here
            if ts in seen:
                continue
            seen.add(ts)
            dashes = 0
            while ts + dashes < te and low[ts + dashes] == 45:
                dashes += 1
            slash = ts > 0 and low[ts - 1] == 47 and dashes == 0  # Windows /p, /password:
            if not (1 <= dashes <= 2 or slash):
                continue
            opt = ts - 1 if slash else ts
            if opt > 0 and low[opt - 1] not in _OPT_START:
                continue
            name = low[ts + dashes:te]
            if not _NAME.fullmatch(name) or _NOT_A_VALUE_OPTION.fullmatch(name):
                continue
            k = te
            if k < n and low[k] in b"=:" and (low[k] == 61 or slash):
                k += 1
            elif k < n and low[k] in b" \t":
                while k < n and low[k] in b" \t":
                    k += 1
            else:
                continue
            s, e = _value_at(b, k, min(n, k + 512))
            if e > s and _plausible(b[s:e]):
                out.append(_secret_part(b, s, e))
    return out


# tool -> short flags that take its password/token, and how the value is given:
# "a" attached only (mysql -pSECRET; "-p" alone prompts and "-p db" names a database),
# "s" separated or attached, "u" a user%password pair (Samba), "w" Windows "/p value".
_TOOLS = {
    **dict.fromkeys((b"mysql", b"mysqldump", b"mysqladmin", b"mysqlimport", b"mysqlcheck", b"mysqlshow",
                     b"mysqlpump", b"mariadb", b"mariadb-dump", b"mariadb-admin", b"mycli", b"7z", b"7za",
                     b"7zr", b"7zz"), ((b"-p", "a"),)),
    **dict.fromkeys((b"sshpass", b"airdecap-ng", b"evil-winrm", b"crackmapexec", b"netexec", b"nxc",
                     b"atuin", b"ffsend", b"cradle", b"mongo", b"mongosh", b"mongodump", b"mongorestore",
                     b"mongoexport", b"mongoimport", b"mongostat", b"mongotop", b"mongofiles", b"hydra",
                     b"xfreerdp", b"rdesktop", b"psexec", b"pth-winexe", b"kerbrute", b"smbmap",
                     b"enum4linux", b"openconnect"), ((b"-p", "s"),)),
    **dict.fromkeys((b"redis-cli", b"valkey-cli", b"keydb-cli"), ((b"-a", "s"),)),
    **dict.fromkeys((b"sqlcmd", b"bcp", b"osql", b"zip", b"unzip", b"zipcloak", b"funzip", b"mosquitto_pub",
                     b"mosquitto_sub", b"mosquitto_rr", b"mosquitto_passwd", b"isql"), ((b"-P", "s"),)),
    **dict.fromkeys((b"ldapsearch", b"ldapmodify", b"ldapadd", b"ldapdelete", b"ldapwhoami", b"ldappasswd",
                     b"ldapmodrdn", b"ldapcompare", b"ldapexop"), ((b"-w", "s"),)),
    **dict.fromkeys((b"smbclient", b"rpcclient", b"smbcacls", b"smbget", b"net"), ((b"-U", "u"),)),
    **dict.fromkeys((b"tasklist", b"taskkill", b"schtasks", b"systeminfo", b"wmic", b"getmac", b"eventcreate",
                     b"driverquery", b"openfiles", b"gpresult", b"whoami"), ((b"/p", "w"), (b"/P", "w"))),
}
_LOGIN_TOOLS = frozenset((b"docker", b"podman", b"nerdctl", b"buildah", b"skopeo", b"crane", b"gcrane",
                          b"helm", b"oras", b"regctl", b"az", b"argocd", b"cf", b"oc", b"atuin"))
"""Tools whose ``-p`` is a password only in their ``login`` subcommand (``docker run -p`` is a port)."""
_PREFIX_WORDS = frozenset((b"sudo", b"env", b"time", b"nohup", b"exec", b"command", b"doas", b"nice", b"xargs"))
_FLAGS = frozenset((b"-p", b"-a", b"-P", b"-w", b"-U", b"/p", b"/P"))
_ATTACHABLE = (b"-p", b"-P", b"-U")
_USER_FLAG = re.compile(rb"(?<![\w-])(?:-u|-U|--user|--username|--login|/u|/user)[ \t=:]+\S")


def _segment(b: bytes, i: int) -> tuple[int, int]:
    """The simple command around ``b[i]``: ``(start, stop)``, bounded by a newline (or a JSON
    ``\\n``), ``;``, ``|``, ``&``, a backquote, 512 bytes before and 2 KiB after."""
    lo = max(0, i - 512)
    start = max(b.rfind(c, lo, i) for c in (b"\n", b";", b"|", b"&", b"`", b"\\n", b"(")) + 1
    if b[start - 1:start + 1] == b"\\n":
        start += 1
    hi = min(len(b), i + 2048)
    stop = hi
    for c in (b"\n", b";", b"|", b"&", b"`", b"\\n"):
        k = b.find(c, i, hi)
        if 0 <= k < stop:
            stop = k
    return max(start, lo), stop


def _tool_of(seg: bytes) -> bytes:
    """The program a command segment runs: the first of its words that is a listed tool
    (so ``{"command": "mysql ...``, the hook's compact ``{"command":"mysql ...`` and ``sudo env
    A=1 mysql ...`` all name ``mysql``), else its first word that is not ``sudo``/``env``/an
    assignment/an option; without its directory and ``.exe``; lowercased. A word holding a
    quote is read after its last one: in compact JSON the key and the value's first word are one
    whitespace-separated word."""
    first = b""
    for w in seg.split():
        w = w.rsplit(b'"', 1)[-1].strip(b"\"'\\{}[](),:").lower()
        if not w or w in _PREFIX_WORDS or (b"=" in w and not w.startswith(b"-")) or w.startswith(b"-"):
            continue
        w = w.rsplit(b"/", 1)[-1].rsplit(b"\\", 1)[-1]
        if w.endswith(b".exe"):
            w = w[:-4]
        if w in _TOOLS or w in _LOGIN_TOOLS:
            return w
        first = first or w
    return first


def tool_flag_spans(b: bytes) -> list[tuple[int, int]]:
    """Spans of the values of the short password/token flags that the listed tools document
    (``mysql -pX``, ``sshpass -p X``, ``docker login -p X``, ``redis-cli -a X``, ...), and of the
    ``-p`` of a ``-u USER ... -p PASS`` pair whatever the tool, read within the command segment
    (up to a newline, ``;``, ``|`` or ``&``). Found flag-first (a flag follows a space): a text
    costs two ``bytes.find`` passes plus a look at each `` -x``/`` /x``."""
    out: list = []
    n = len(b)
    for lead in (b" -", b" /"):  # one 2-byte search each; the flag letter is checked after
        i = b.find(lead)
        while i >= 0:
            k, i = i + 1, b.find(lead, i + 2)
            flag = b[k:k + 2]
            if flag not in _FLAGS:
                continue
            base = k + 2
            nxt = b[base:base + 1]
            attached = bool(nxt) and nxt not in b" \t"
            if attached and flag not in _ATTACHABLE:
                continue  # "/proc", "-web", "-Ufoo": only -p/-P/-U take an attached value
            start, stop = _segment(b, k)
            tool = _tool_of(b[start:k])
            how = None
            for f, h in _TOOLS.get(tool, ()):
                if f == flag:
                    how = h
            if how is None and flag == b"-p" and tool in _LOGIN_TOOLS and re.search(
                    rb"(?<![\w-])login(?![\w-])", b[start:stop]):
                how = "s"
            if how is None and flag in (b"-p", b"-P", b"/p", b"/P") and not attached and _USER_FLAG.search(b, start, k):
                how = "s"
            if how is None or (how == "a" and not attached) or (how in "w" and attached):
                continue
            if attached:
                s, e = _value_at(b, base, stop)
            else:
                j = base
                while j < min(n, stop) and b[j] in b" \t":
                    j += 1
                s, e = _value_at(b, j, stop)
            if how == "u":
                cut = b.find(b"%", s, e)
                if cut < 0:
                    continue
                s = cut + 1
            if e > s and _plausible(b[s:e]):
                out.append((s, e))
    return out


_IMPACKET = re.compile(rb"[ \t][^\n]{0,400}?(?<![\w./-])[\w.-]+/[\w.$-]+:([^\s@'\"]+)")
"""Impacket's ``domain/user:password[@target]`` argument (``secretsdump.py``, ``getTGT.py``...)."""
_HTPASSWD = re.compile(rb"htpasswd[ \t]+(?:-[a-z]*\b[ \t]+)*?-[a-z]*b[a-z]*[ \t]+"
                       rb"(?:(?P<f>\S+)[ \t]+)?\S+[ \t]+(?P<pw>[^\s'\"]+)[ \t]*(?:$|\n|\\n|[;|&\"'])")
"""``htpasswd -b[c] FILE USER PASSWORD`` / ``htpasswd -nb USER PASSWORD``: the last argument."""


def pair_spans(b: bytes) -> list[tuple[int, int]]:
    """Spans of passwords given as the second half of a pair in an argument: Impacket's
    ``domain/user:P[@target]`` (after a ``*.py`` or ``impacket-*`` program) and ``htpasswd
    -b``'s last argument. Found literal-first (``.py ``, ``impacket-``, ``htpasswd``)."""
    out = []
    for lit in (b".py ", b"impacket-"):
        i = b.find(lit)
        while i >= 0:
            at = b.find(b" ", i) if lit == b"impacket-" else i + 3
            i = b.find(lit, i + len(lit))
            at = max(at, 0)  # no blank after "impacket-": the pattern is tried at the start (as match(b, -1))
            # The argument's "/" and ":" lie on this line, the "/" before a ":": without them
            # the lazy pattern would try every position of the line (pytest's "x.py ..." lines).
            # Read forward from the first "/" to the first ":" after it (a line may be the whole
            # field: JSON-escaped output has no raw newline to stop a search for one).
            slash = b.find(b"/", at)
            colon = b.find(b":", slash + 1) if slash >= 0 else -1
            if colon < 0 or b.find(b"\n", at, colon) >= 0:
                continue
            m = _IMPACKET.match(b, at)
            if m and _plausible(m.group(1)):
                out.append(m.span(1))
    i = b.find(b"htpasswd")
    while i >= 0:
        m = _HTPASSWD.match(b, i)
        i = b.find(b"htpasswd", i + 8)
        if m and _plausible(m.group("pw")):
            out.append(m.span("pw"))
    return out


def spans(b: bytes, low: bytes, hits=None) -> list[tuple[int, int]]:
    """Every command-line credential span in ``b`` (``low`` is ``b.lower()``, ``hits`` as for
    :func:`long_option_spans`): the union of :func:`long_option_spans`, :func:`tool_flag_spans`
    and :func:`pair_spans`, as ``(start, end)`` byte offsets (they may overlap; the caller
    merges)."""
    return long_option_spans(b, low, hits) + tool_flag_spans(b) + pair_spans(b)
