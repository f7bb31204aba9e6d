"""Generic assigned tokens (docs/security.md, Redaction, rule 4b; docs/design.md §7 step 4): a
value that no provider marker and no secret-meaning name identifies, caught by its shape where a
name sits right before it. Part of generic detection: tool input and output (every captured
text the envelope scrubs as such), the first :data:`lib.redact.entropy.MAX_SCAN_BYTES` of a
field, on the text the earlier rules left (a keyed value already replaced is not seen again).

A token run of ``[A-Za-z0-9_-]`` is a secret when its longest ``_``/``-``-free piece is random-shaped
(:func:`_random_piece`: 16+ characters that mix letters and digits in several groups, whose
Shannon entropy is near the most its length allows, and that are not made of words), and an
identifier of three or more letters ends within :data:`NAME_WINDOW` bytes before it on the same
line (``provider_token := "<value>"``, ``X-Foo-Key: <value>``; the name-then-value shape the
assignment rules of gitleaks' ``generic-api-key`` and secrets-patterns-db's per-provider rules
share). Pure hex (SHAs, digests), UUIDs, version strings and identifiers stay clean by shape; a
value is a secret only by its name (:func:`_assigned_hex`) when it is hex, and never when the name
says checksum, integrity, hash, digest, etag, commit, revision or id (:data:`NOT_SECRET_NAMES`).
Measured in ``bench/redact_corpus.py`` (public corpora per family and placement, false
positives on real lines)."""
from __future__ import annotations

from lib.redact.kept import _kept
from lib.redact.outcome import _P_SECRET
from lib.redact.scan import _ALNUM, _entropy, _HAS_DIGIT, _Lazy, _LOWER, _runs, _Scan, _table
from lib.redact.shapes import (_ANTHROPIC_ID, _case_mixed_hex, _DIGEST_PREFIXES, _LETTER_CHUNK, _ULIDS, _word_piece,
                               _wordy)

CHUNK_AVG = 3.3
"""Mixed-case pieces with few digits are random-shaped when their camelCase chunks
(``[A-Z]?[a-z]+``, ``[A-Z]+``) average under this many letters: random mixed-case letters
average 2.5 (95th percentile 3.3–3.4 at 20–24 characters); identifiers of words 3.5 and more
(``getElementById``, ``CrtCrc32Checksum``), and words are also judged by
:func:`lib.redact.shapes._wordy`."""
MIN_PIECE = 16
"""Shortest random-shaped piece the rule takes (characters): gitleaks' ``generic-api-key`` takes
values of 10+, secrets-patterns-db's per-provider rules 20–40; below 16, identifiers and short
ids (YouTube ids, k8s pod suffixes, tmp dirs) look random too often."""
NAME_WINDOW = 40
"""Bytes before the value within which the name must end (secrets-patterns-db's rules allow a
name, up to 25 name characters, an operator and 5 more bytes before the value)."""

_LINE_BREAKS = (b"\n", b"\r", b"\\n", b"\\r")
_NAME = _Lazy(rb"[a-z]{3}[a-z0-9_.-]*")
NOT_SECRET_NAMES = (
    b"sha", b"hash", b"digest", b"checksum", b"integrity", b"etag", b"commit", b"rev", b"uuid", b"guid",
    b"oid", b"md5", b"crc", b"fingerprint", b"version", b"resolved", b"build", b"trace", b"span", b"request",
    b"parent", b"tree", b"object", b"blob", b"head", b"ref", b"path", b"file", b"image", b"cache", b"hex")
"""Words in the name before a hex value that make it data (a checksum, a commit, an id), as
gitleaks' and detect-secrets' allowlists treat lock files, digests and ids."""


def _random_piece(v: bytes) -> bool:
    """Whether ``v`` (``[A-Za-z0-9]+``, ≥ :data:`MIN_PIECE` long) looks drawn at random: some
    letters, not all hex, entropy at least :func:`min_entropy` of its length, not made of words
    (:func:`lib.redact.shapes._wordy`), and either 10 %+ digits in two or more groups (three or
    more groups are never words) or upper and lower case mixed so finely that its camelCase
    chunks average under :data:`CHUNK_AVG` letters (``ocYfVGBHDqAz2wDxbxCMzmUA``)."""
    n = len(v)
    letters = v.translate(None, _DIGITS)
    digits = n - len(letters)
    if not letters:
        return False  # a number
    if not letters.translate(None, _HEX_LETTERS):
        return _case_mixed_hex(set(v))  # hex ids (SHAs, digests): only a name makes one a secret
    groups = len(v.translate(_LETTER_MARK).split()) if digits > 1 else digits
    if digits * 10 < n or groups < 2:
        upper = letters.translate(None, _LOWER_LETTERS)
        if not upper or len(upper) == len(letters):
            return False  # one case and a number glued on: identifiers, words, "Python311"
        chunks = _LETTER_CHUNK.findall(letters)
        if len(letters) >= CHUNK_AVG * len(chunks):
            return False  # camelCase words, "CrtCrc32Checksum": chunks of 3+ letters on average
        groups = 0
    bound = min_entropy(n)
    if _entropy(v, set(v), (bound,)) < bound:
        return False
    return groups >= 3 or not _wordy(v)


_DIGITS = b"0123456789"
_HEX_LETTERS = b"abcdefABCDEF"
_LOWER_LETTERS = b"abcdefghijklmnopqrstuvwxyz"
_LETTER_MARK = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", b" " * 52)
"""Letters to blanks: the digit groups split on whitespace."""


def min_entropy(n: int) -> float:
    """Least Shannon entropy (bits per character) of a random-shaped piece of ``n`` characters:
    the 1st percentile of uniformly random ``[a-z0-9]`` strings of that length (measured: 3.16
    at 16, 3.42 at 20, 3.65 at 24, 3.90 at 32, 4.11 at 40), linear between, 4.1 beyond 40."""
    if n <= 24:
        return 3.16 + (n - 16) * 0.062
    return min(4.1, 3.65 + (n - 24) * 0.029)


_HEX_CHARS = frozenset(b"0123456789abcdefABCDEF")


def _name_ok(low: bytes, s: int, assignment: bool = False) -> bool:
    """An identifier (three letters) ends within :data:`NAME_WINDOW` bytes before ``s`` on the
    same line — right before the operator when one (``=``, ``:``, ``:=``, ``=>``, quotes and
    blanks around it) ends right before ``s`` — and the last name before ``s`` (``[a-z0-9_.-]`` around its letters, lower-cased
    ``low``) holds none of :data:`NOT_SECRET_NAMES`; with ``assignment``, an operator
    (``=``, ``:``, ``>``) also sits between that name and ``s``, at most 12 bytes apart, or up
    to 8 bytes of :data:`_GLUE` punctuation and nothing else."""
    lo = max(0, s - NAME_WINDOW)
    for br in _LINE_BREAKS:
        k = low.rfind(br, lo, s)
        if k >= 0:
            lo = k + len(br)
    op = _OPERATOR_BEFORE.search(low, max(lo, s - 8), s)
    e = -1
    if op is not None:
        e = op.start()
        while e > lo and low[e - 1] in b" \t'\"`\\":
            e -= 1
    if e > lo and low[e - 1] in _NAME_BYTES:  # "n=<value>": the name is what the operator assigns to
        m = _NAME_END.search(low, max(lo, e - 48), e)
        if m is None:
            return False  # "&s=<value>", "x: <value>": a one- or two-letter name
    else:
        m = None
        for m in _NAME.finditer(low, lo, s):
            pass
        if m is None:
            return False
    i, e = m.start(), m.end()
    while i > lo and low[i - 1] in _NAME_BYTES:
        i -= 1
    name = low[i:e]
    if any(w in name for w in NOT_SECRET_NAMES):
        return False
    if not assignment or s - e > 12:
        return not assignment
    gap = low[e:s]
    return _OPERATOR(gap) is not None or (0 < len(gap) <= 8 and not gap.translate(None, _GLUE))


_OPERATOR = _Lazy(rb"[=:>]").search
_OPERATOR_BEFORE = _Lazy(rb"(?::=|=>|[=:])[ \t'\"`\\]*\Z")
_NAME_END = _Lazy(rb"[a-z][a-z0-9_.-]*[a-z][a-z0-9_.-]*[a-z][a-z0-9_.-]*\Z")
_GLUE = b"!$()*,;<[]^_{|}~'\"`-"
"""Punctuation that may glue a name to a hex value with no operator (``kucoin!<hex>``,
``metaapi]^<hex>``); blanks, letters, ``/ . # @ % &`` (paths, URLs, addresses, prose) may not."""


_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.-")


def _shape(v: bytes) -> int:
    """What the run ``v`` (``[A-Za-z0-9_-]``) is: :data:`RANDOM` when its longest ``_``/``-``
    piece is random-shaped (:func:`_random_piece`) or, made of short pieces none of which is a
    word (``US2A2U6-Y7Q0NLL-NBT934L``), its pieces joined are; :data:`HEX` when it is 32+ hex
    digits (a UUID is not: ids stay clean); else 0."""
    v = v.strip(b"_-")
    if b"_" in v or b"-" in v:
        pieces = v.replace(b"-", b"_").split(b"_")
        longest = max(pieces, key=len)
        if len(longest) >= MIN_PIECE and _random_piece(longest):
            return RANDOM
        if len(longest) >= 32 and not longest.translate(None, _HEX_ALL):
            return HEX if _hex_random(longest) else 0  # "<account id>-<hex key>"
        if len(pieces) < 3 or any(len(p) >= 3 and p.isalpha() and _word_piece(p) for p in pieces):
            return 0  # words joined by separators: an identifier, a slug, a k8s name
        v = b"".join(pieces)
        if len(v) < MIN_PIECE:
            return 0
        if not v.translate(None, _HEX_ALL):
            return 0  # UUIDs and other dashed hex ids
    elif len(v) >= 32 and not v.translate(None, _HEX_ALL) and not _case_mixed_hex(set(v)):
        return HEX if _hex_random(v) else 0
    return RANDOM if _random_piece(v) else 0


RANDOM, HEX = 1, 2
_HEX_ALL = b"0123456789abcdefABCDEF"


def _hex_random(v: bytes) -> bool:
    """Hex that could be a key: letters among its digits and 10+ distinct symbols (random hex
    of 32 digits shows ~14; ``FffFFFF0...`` placeholders show 3)."""
    return len(set(v.lower())) >= 10 and _HAS_ALPHA(v) is not None


_HAS_ALPHA = _Lazy(rb"[A-Fa-f]").search


def _text_base64(b: bytes, s: int, j: int) -> bool:
    """The run ``b[s:j]`` (with its ``=`` padding) is base64 of printable text (``RGF0YSB0byBl
    bmNvZGU=`` in a test); a random token decodes to bytes that are not text."""
    import binascii

    e = j
    while e < len(b) and b[e] == 61:
        e += 1
    run = b[s:e]
    if (len(run) % 4 and e == j) or b"_" in run or b"-" in run:
        return False
    try:
        raw = binascii.a2b_base64(run + b"=" * (-len(run) % 4))
    except (binascii.Error, ValueError):
        return False
    return bool(raw) and all(32 <= c < 127 or c in (9, 10, 13) for c in raw)


_TOKEN_CLS = _table({_ALNUM + "_-": ord("a")}, ord(" "))
_TOKEN_TAIL = _Lazy(rb"[A-Za-z0-9_-]*")


def _scan_assigned(sc: _Scan, window: int) -> None:
    """Every token run of ≥ :data:`MIN_PIECE` bytes holding a digit that starts in
    ``b[:window]`` (one translate, one run search), judged by :func:`_scan_assigned_run`; runs
    the entropy rule already replaced (``sc.spans``, in order) are skipped."""
    b = sc.b
    covered = sc.spans[:]  # the entropy rule's spans, in order of start
    c = 0
    for k, j in _token_runs(sc, window):
        if _HAS_DIGIT(b, k, j) is None:
            continue
        if k >= 1 and b[k - 1] == 92 and b[k] in b"ntr":
            k += 1  # the run begins right after a JSON escape such as \n
        elif k >= 1 and b[k - 1] == 37 and j - k > 2:
            k += 2  # URL-encoded separator: %3D<token>
        while c < len(covered) and covered[c][1] <= k:
            c += 1
        if c < len(covered) and covered[c][0] < j:
            continue
        _scan_assigned_run(sc, k, j)


def _token_runs(sc: _Scan, window: int):
    """``(start, end)`` of every maximal token run of ≥ :data:`MIN_PIECE` bytes that starts in
    ``b[:window]``, to its natural end: read off the runs the marker scan listed for these very
    bytes (``sc.token_runs``, runs of ≥ 14) when it has, else one translate and one run search."""
    runs = sc.token_runs
    if runs is not None:
        return [r for r in runs if r[1] - r[0] >= MIN_PIECE and r[0] < window]
    b = sc.b
    cls = b[:window + 4096].translate(_TOKEN_CLS)
    out = []
    for k, j in _runs(cls, MIN_PIECE, 0, window):
        if j == len(cls) < len(b):
            j = _TOKEN_TAIL.match(b, j).end()
        out.append((k, j))
    return out


def _scan_assigned_run(sc: _Scan, k: int, j: int) -> None:
    """Judge the token run ``b[k:j]``: redact it when it is random-shaped (:func:`_shape`) and a name sits before it,
    or it is hex and the name before it does not say what data it is (module docstring). Cheap
    tests first: most runs of tool output are words, paths and identifiers."""
    b = sc.b
    v = b[k:j]
    shape = _shape(v)
    if not shape or _ULIDS.fullmatch(v) or _ANTHROPIC_ID.fullmatch(v):
        return  # ULIDs (one, or several joined), Anthropic message and tool-use ids
    s2, j2 = k, j
    while s2 > 0 and b[s2 - 1] in _B64_BYTES:
        s2 -= 1
    while j2 < len(b) and b[j2] in _B64_BYTES:
        j2 += 1
    if j2 - s2 >= 32 and (s2, j2) != (k, j) and (b.find(b"+", s2, j2) >= 0 or b.find(b"/", s2, j2) >= 0) \
            and not _path_segment(b, s2, j2, k, j):
        return  # part of a longer base64 run: the entropy rule and the kept classes judge it
    if b.endswith(_DIGEST_PREFIXES, max(0, s2 - 8), s2) or v.startswith(_INTEGRITY):
        return  # go.sum "h1:", "sha256:" digests, "sha512-" integrity strings
    if sc.low is not None:
        named = _name_ok(sc.low, k, shape == HEX)
    else:  # the name lies in the NAME_WINDOW bytes before k: lower-case those, not the field
        w0 = max(0, k - NAME_WINDOW)
        named = _name_ok(b[w0:k].translate(_LOWER), k - w0, shape == HEX)
    if not named:
        return
    if shape == RANDOM and _text_base64(b, k, j):
        return
    if _kept(sc, s2, j2):
        return  # a certificate's line, a public key, an image's base64, a path
    sc.span(k, j, _P_SECRET, "assigned_token")


def _path_segment(b: bytes, s2: int, j2: int, k: int, j: int) -> bool:
    """The run ``b[k:j]`` is a whole ``/``-separated segment of the path ``b[s2:j2]``: a path
    that starts with ``/`` (or after ``~``, ``.``, or with the run itself), holds no ``+`` and no ``=`` after it, and
    whose every other segment is ≤ 12 characters or made of words, as a token used as a
    directory name is (``/home/dev/notes/<token>/README``); in base64 (``sha512-…/…==``, an
    image's lines) the pieces around a ``/`` are random too."""
    if (k > s2 and b[k - 1] != 47) or (j < j2 and b[j] != 47) or b.find(b"+", s2, j2) >= 0:
        return False
    if not (b[s2] == 47 or k == s2 or (s2 and b[s2 - 1] in b"~.")) or b[j2:j2 + 1] == b"=":
        return False
    rest = b[s2:max(s2, k - 1)].split(b"/") + b[j + 1:j2].split(b"/")
    return all(len(piece) <= 12 or _wordy(piece) for piece in rest)


_INTEGRITY = (b"sha1-", b"sha256-", b"sha384-", b"sha512-", b"md5-")
_B64_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
