"""Command lines from the tldr pages (CC BY 4.0, ``tests/fixtures/tldr/``), rendered as an agent
would run them: every ``{{placeholder}}`` replaced by a plausible value, and the placeholders
that name a secret (``{{password}}``, ``{{api_key}}``, ``{{token}}``...) by a generated secret.

Used by the command-line credential tests and ``bench/redact_corpus.py``. The examples were
extracted from the tldr pages (``pages/{common,linux,osx,windows,freebsd}``) by keeping every
example that has a secret placeholder or a short flag that some tool uses for a password
(``-p``, ``-P``, ``-a``, ``-w``, ``-k``, ``-u``, ``login``, ``auth``): the positives, and the hard
negatives (``docker run -p 8080:80``, ``ssh -p 22``, ``grep -P``).

Shapes: :func:`samples` returns dicts ``{"page", "command", "secrets": [str], "held_out": bool}``.
A page is held out (never used for tuning) when the CRC-32 of its name is odd.
"""
from __future__ import annotations

import json
import os
import random
import re
import string
import zlib

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "tldr", "examples.jsonl")

_HOLE = re.compile(r"\{\{(.*?)\}\}")
SECRET_HOLE = re.compile(
    r"(?:^|[_ -])(?:password|passwd|passphrase|pass|secret|token|api[_ -]?key|apikey|otp|"
    r"one_time_password|access_key|secret_key|auth_key|client_secret|pat|personal_access_token)$", re.I)
"""A placeholder whose name ends in a secret word (``{{computer_password}}``, ``{{api_key}}``),
not one that names where a secret is kept (``{{path/to/password_file}}``)."""
_NOT_SECRET_HOLE = re.compile(r"path/to|/|file|description|version|string|length|hint|id$|name$|policy", re.I)


def _secret(rng: random.Random) -> str:
    """A generated password or token: mixed-case letters and digits, 10 to 20 characters, or a
    passphrase of words and digits, as people really choose them."""
    if rng.random() < 0.25:
        words = ["Harbor", "sunset", "Maple", "orbit", "Copper", "lantern", "Violet", "falcon"]
        return f"{rng.choice(words)}-{rng.choice(words)}{rng.randint(10, 99)}"
    alphabet = string.ascii_letters + string.digits
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(10, 20)))
        if any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s):
            return s


def _benign(hole: str) -> str:
    """A plausible non-secret value for a placeholder, from its own words."""
    h = hole.strip()
    if h.startswith("[") and h.endswith("]") and "|" in h:  # {{[-p|--password]}}: the short form
        return h[1:-1].split("|")[0]
    if "|" in h:
        return h.split("|")[0]
    if h.startswith(("path/to/", "/")):
        return h
    low = h.lower()
    if "url" in low or "uri" in low:
        return "https://example.com/repo"
    if "host" in low or "server" in low or "domain" in low:
        return "db.example.com"
    if "port" in low:
        return "5432"
    if "user" in low or "login" in low:
        return "alice"
    if "email" in low:
        return "alice@example.com"
    if low.isdigit():
        return h
    if re.fullmatch(r"[\w.-]+", h):
        return h
    return re.sub(r"[^\w./:-]+", "_", h).strip("_") or "value"


def _long_form(hole: str) -> str:
    h = hole.strip()
    if h.startswith("[") and h.endswith("]") and "|" in h:
        return h[1:-1].split("|")[-1]
    return _benign(h)


def is_secret_hole(hole: str) -> bool:
    """Whether a placeholder's name says it holds a secret value (see :data:`SECRET_HOLE`)."""
    h = hole.strip()
    return bool(SECRET_HOLE.search(h)) and not _NOT_SECRET_HOLE.search(h)


def held_out(page: str) -> bool:
    """Whether ``page`` belongs to the held-out half (CRC-32 of its name is odd)."""
    return zlib.crc32(page.encode()) & 1 == 1


def examples() -> list[dict]:
    """The committed tldr examples: ``{"page", "example", "secret"}`` rows."""
    with open(FIXTURE, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def samples(seed: int = 7) -> list[dict]:
    """Every example rendered twice (short and long option forms), secrets generated with a
    ``random.Random(seed)``; ``secrets`` lists the generated values the command holds."""
    rng = random.Random(seed)
    out = []
    for row in examples():
        for form in (_benign, _long_form):
            secrets: list[str] = []

            def fill(m, form=form):
                hole = m.group(1)
                if is_secret_hole(hole):
                    v = _secret(rng)
                    secrets.append(v)
                    return v
                return form(hole)

            cmd = _HOLE.sub(fill, row["example"])
            out.append({"page": row["page"], "command": cmd, "secrets": secrets,
                        "held_out": held_out(row["page"])})
    return out


def measure(scrub, seed: int = 7) -> dict:
    """Recall and false-positive rate of ``scrub(text, is_tool_output) -> (text, outcome)`` (the
    shape of ``lib.redact.scrub``) on :func:`samples`, per half: ``{"tuning": {...},
    "held_out": {...}}``, each ``{"positives", "caught", "negatives", "touched"}``. A positive is
    caught when no generated secret survives in the Bash tool input as an agent sends it
    (compact JSON, as the hook stores a tool's input: :func:`lib.envelope.to_text`); a negative is touched when scrubbing changes it at all."""
    from lib.envelope import to_text

    rows = samples(seed)
    out = {}
    for name, held in (("tuning", False), ("held_out", True)):
        pos = [s for s in rows if s["secrets"] and s["held_out"] is held]
        neg = [s for s in rows if not s["secrets"] and s["held_out"] is held]
        caught = 0
        for s in pos:
            text, _ = scrub(to_text({"command": s["command"]}), True)
            caught += not any(json.dumps(v)[1:-1] in text for v in s["secrets"])
        touched = sum(scrub(s["command"], True)[0] != s["command"] for s in neg)
        out[name] = {"positives": len(pos), "caught": caught, "negatives": len(neg), "touched": touched}
    return out
