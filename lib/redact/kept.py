"""The kept-clean classes (docs/security.md, Redaction; issue #17): high-entropy runs that are data,
not secrets, and that the entropy rule must leave untouched — OpenSSH public keys, the lines of a
certificate / public-key PEM block, base64 whose decoded bytes are binary data (a wrapped image, a
DER certificate) or text in which the scrub finds nothing, file paths and URL paths."""
from __future__ import annotations

from lib.redact.outcome import _P_SECRET
from lib.redact.scan import _Lazy, _Scan
from lib.redact.shapes import _case_mixed_hex, _HEX, _PIECES, _word_piece
from lib.redact.providers import _PEM_PRIVATE


_PUBLIC_KEY_MAGIC = (b"AAAAB3NzaC1yc2E", b"AAAAC3NzaC1lZDI1NTE5", b"AAAAE2VjZHNhLXNoYTItbmlzdHA", b"AAAAB3NzaC1kc3M",
                     b"AAAAGnNrLXNzaC1lZDI1NTE5", b"AAAAInNrLWVjZHNhLXNoYTItbmlzdHAyNTZAb3BlbnNzaC5jb20")
"""OpenSSH public-key blobs (base64 of the length-prefixed key type: ssh-rsa, ssh-ed25519,
ecdsa-sha2-nistp*, ssh-dss, sk-ssh-ed25519@openssh.com, sk-ecdsa-...): public by design."""
_PEM_BEGIN = b"-----BEGIN "
_B64_LINE = _Lazy(rb"[A-Za-z0-9+/]+={0,2}")
_LINE_SEP = _Lazy(rb"\\r\\n|\\n|\\r|\r\n|\n|\r")
_TEXT_BYTES = frozenset(range(32, 127)) | frozenset(b"\t\n\r")
_MAX_BLOCK_LINES = 4096


def _kept(sc: _Scan, s: int, j: int) -> bool:
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


def _base64_verdict(sc: _Scan, s: int, j: int):
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

    from lib.redact.scrub import scrub  # the decoded text goes through the whole scrub (a cycle at import time)

    try:
        raw = binascii.a2b_base64(b"".join(_LINE_SEP.sub(b"", b[start:end]).split()))
    except (binascii.Error, ValueError):
        return None
    text_like = raw and sum(c in _TEXT_BYTES for c in raw[:4096]) >= 0.95 * min(len(raw), 4096)
    if text_like:
        verdict = scrub(raw.decode("utf-8", "replace"), True)[1].status == "clean"
        if not verdict:  # the whole block goes: a line holding the secret may not look random itself
            sc.span(start, end, _P_SECRET, "high_entropy_run")
    elif lines >= 3 or raw.startswith((b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"\x00\x00\x01\x00", b"0\x82")):
        verdict = True  # binary data: an image, an icon, a DER certificate
    else:
        return None
    sc.blocks[start] = verdict
    return verdict


def _pathy(b: bytes, s: int, j: int) -> bool:
    """A run that is a file path: at least one ``/`` and no ``+`` or ``=``, followed by a file
    extension or holding two ``/`` or more, and every ``/``-separated piece short (≤ 12), hex
    in one case, or words (:func:`_word_piece` on its ``_ . -``-separated parts, none of them
    random-shaped by :func:`lib.redact.assigned._random_piece`: a token used as a directory
    name, ``notes/atlnb837wozix66k5en5x40qla5qcecw/README.md``, is not a path's word). Measured
    on installed packages' paths (``bench/redact_corpus.py``): ``kdf/pbkdf2.py``,
    ``cloudhsmv2/2017-04-28``."""
    run = b[s:j]
    slashes = run.count(b"/")
    if not slashes or b"+" in run or b"=" in run:
        return False
    ext = j < len(b) and b[j] == 46 and j + 1 < len(b) and 97 <= b[j + 1] <= 122
    if not ext and slashes < 2:
        return False
    from lib.redact.assigned import MIN_PIECE, _random_piece  # assigned imports this module

    for piece in run.split(b"/"):
        if len(piece) <= 12 or sum(48 <= c <= 57 for c in piece) >= len(piece) - 2:
            continue
        if _HEX.fullmatch(piece):
            if _case_mixed_hex(set(piece)):
                return False  # hex in both cases is a token, never a digest (lib.redact.shapes)
            continue
        for p in _PIECES.split(piece):
            if len(p) >= MIN_PIECE and _random_piece(p):
                return False  # a random-shaped part (digits in groups, fine case mix): a token, not a name
            if len(p) > 8 and not _word_piece(p, strict=len(p) > 24):
                return False  # a 25+ character part must be words even by the strict test
    return True
