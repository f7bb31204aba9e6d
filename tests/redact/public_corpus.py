"""Secrets generated from public scanners' rule sets, planted where agents put them.

The rules of the redactor were written from providers' documentation; this corpus was not. It is
generated from other projects' rule sets, so it measures recall on shapes the rules' authors did
not choose:

* **gitleaks** (``config/gitleaks.toml``, MIT): ~220 rules. Samples derived from it are
  committed in ``tests/fixtures/secrets/gitleaks-samples.json`` (provenance in
  ``tests/fixtures/NOTICE.md``), so tests and CI need no network. ``bench/redact_corpus.py
  --regen`` rebuilds the file from a fetched copy at ``.cache/gitleaks.toml``.
* **secrets-patterns-db** (``db/rules-stable.yml``, CC BY-SA 4.0, not committed): read at
  bench time from ``.cache/secrets-patterns-db-rules-stable.yml`` when present. Split by
  :func:`held_out_rule` (a stable hash of the rule id): about half is tuning material, the
  other half is held out.
* **detect-secrets** (Yelp/detect-secrets 1.5.0 on PyPI, Apache-2.0): its plugins' regexes,
  read from the installed package at bench time when it is installed (``pip install
  detect-secrets==1.5.0``); wholly held out (:func:`detect_secrets_samples`).

A sample is drawn from a rule's regex with ``exrex`` and kept only where the rule itself reports
it: its own regex matches the sample, and the secret group's Shannon entropy reaches the rule's
``entropy`` (gitleaks' own acceptance test); a detect-secrets sample only where that scanner's
own ``scan_line`` (default plugins and filters, no verification) reports it. Families are the
rule id's first word (``aws``, ``github``, ``generic``). Every gitleaks family has been looked
at while the rules were tuned (the one-in-five split of the first round was opened in the
second). secrets-patterns-db (``db/rules-stable.yml`` of mazen160/secrets-patterns-db at commit
24984df, byte-identical to the fetched repository) was wholly held out until the third round,
which opened the half :func:`held_out_rule` calls tuning; the other half and the detect-secrets
corpus are **held out**: never looked at while tuning, the bench prints their share caught per
placement and no family figures or examples of their misses.

:func:`placements` plants one sample in the eight places the issue names (prompt, assistant text,
Bash command, tool output, Edit text, file path, JSON-escaped output, base64 output) as the hook
would hand them to :class:`lib.envelope.Builder`; :func:`leaked` says whether the secret survived
into the stored envelope.
"""
from __future__ import annotations

import base64
import collections
import hashlib
import json
import math
import os
import random
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "tests", "fixtures", "secrets", "gitleaks-samples.json")
GITLEAKS_TOML = os.path.join(ROOT, ".cache", "gitleaks.toml")
SPDB_YAML = os.path.join(ROOT, ".cache", "secrets-patterns-db-rules-stable.yml")
PLACEMENTS = ("prompt", "assistant", "bash_command", "tool_output", "edit_text", "file_path",
              "json_escaped", "base64")


def family(rule_id: str) -> str:
    """Family of a rule: the first word of its id (``github-fine-grained-pat`` → ``github``)."""
    return re.split(r"[-_ ]", rule_id.strip().lower(), 1)[0]


_POSIX = {"alnum": "A-Za-z0-9", "alpha": "A-Za-z", "digit": "0-9", "xdigit": "0-9A-Fa-f", "upper": "A-Z",
          "lower": "a-z", "space": r" \t\r\n\v\f", "word": r"\w", "punct": r"!-/:-@\[-`{-~"}


def go_to_python(rx: str) -> str:
    """Translate a Go RE2 pattern to Python ``re``: ``\\z`` → ``\\Z``, POSIX classes
    (``[[:alnum:]]``) spelled out, and a ``(?i)`` that is not
    at the start (Go: case-insensitive to the end of its group) → a scoped ``(?i:...)``."""
    rx = rx.replace(r"\z", r"\Z")
    for posix, py in _POSIX.items():
        rx = rx.replace(f"[:{posix}:]", py)
    out, closes, j = [], [0], 0
    while j < len(rx):
        c = rx[j]
        if c == "\\":
            out.append(rx[j:j + 2])
            j += 2
        elif c == "[":
            k = j + 1
            k += rx[k] == "^"
            k += rx[k] == "]"
            while rx[k] != "]":
                k += 2 if rx[k] == "\\" else 1
            out.append(rx[j:k + 1])
            j = k + 1
        elif rx.startswith("(?i)", j) and j > 0:
            out.append("(?i:")
            closes[-1] += 1
            j += 4
        elif c == "(":
            closes.append(0)
            out.append(c)
            j += 1
        elif c == ")":
            out.append(")" * closes.pop() + ")")
            j += 1
        else:
            out.append(c)
            j += 1
    return "".join(out) + ")" * closes[0]


_GEN_CLASS = {"w": "a-zA-Z0-9_", "s": " \t", "d": "0-9"}


def for_generation(rx: str) -> str:
    """The pattern as ``exrex`` should draw from it: ``\\w``, ``\\s``, ``\\d`` and ``.`` stand for
    ASCII as in Go RE2 (Python would draw any Unicode word character, vertical tabs, newlines)."""
    out, j, in_class = [], 0, False
    while j < len(rx):
        c = rx[j]
        if c == "\\" and j + 1 < len(rx):
            e = rx[j + 1]
            if e in _GEN_CLASS:
                out.append(_GEN_CLASS[e] if in_class else f"[{_GEN_CLASS[e]}]")
            elif e == "S" and not in_class:
                out.append("[!-~]")
            else:
                out.append(rx[j:j + 2])
            j += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            j += 1
            if rx[j:j + 1] == "^":
                out.append("^")
                j += 1
            if rx[j:j + 1] == "]":
                out.append("\\]")
                j += 1
            continue
        if c == "]" and in_class:
            in_class = False
        elif c == "." and not in_class:
            c = "[ -~]"
        out.append(c)
        j += 1
    return "".join(out)


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in collections.Counter(s).values()) if s else 0.0


def gitleaks_rules(path: str = GITLEAKS_TOML) -> list[dict]:
    """``[{id, regex (Python), entropy, secret_group, stopwords, allow}]`` from a gitleaks TOML."""
    import tomllib

    with open(path, "rb") as fh:
        cfg = tomllib.load(fh)
    rules = []
    for r in cfg["rules"]:
        if not r.get("regex"):
            continue  # path-only rules (pkcs12 files) carry no text to generate
        allow = [re.compile(go_to_python(a)) for al in r.get("allowlists", []) for a in al.get("regexes", [])]
        stop = [s.lower() for al in r.get("allowlists", []) for s in al.get("stopwords", [])]
        rules.append({"id": r["id"], "regex": go_to_python(r["regex"]), "entropy": float(r.get("entropy") or 0),
                      "secret_group": r.get("secretGroup"), "allow": allow, "stopwords": stop})
    return rules


def spdb_rules(path: str = SPDB_YAML) -> list[dict]:
    """High-confidence rules of secrets-patterns-db (same shape as :func:`gitleaks_rules`),
    less those whose pattern draws one fixed string (``gitlab_private_token``, ``ssh-rsa``,
    ``BEGIN RSA PRIVATE KEY``): such a rule finds where a secret is named, not a secret, and
    redacting the name itself would change every line that mentions it."""
    import exrex
    import yaml

    with open(path) as fh:
        pats = yaml.safe_load(fh)["patterns"]
    out = []
    for p in pats:
        p = p["pattern"]
        if p.get("confidence") != "high":
            continue
        try:
            re.compile(p["regex"])
            if exrex.count(for_generation(p["regex"]), limit=2) <= 1:
                continue
        except Exception:  # a pattern Python cannot compile, or exrex cannot count
            continue
        out.append({"id": p["name"], "regex": p["regex"], "entropy": 0.0, "secret_group": "last",
                    "allow": [], "stopwords": []})
    return out


def held_out_rule(rule_id: str) -> bool:
    """Whether a secrets-patterns-db rule is in the held-out half: the first byte of the SHA-256
    of its id is odd (stable across runs, machines and rule-file orderings; ~50 %)."""
    return hashlib.sha256(rule_id.encode()).digest()[0] & 1 == 1


def spdb_samples(seed: int, per_rule: int = 2) -> list[dict]:
    """Samples of secrets-patterns-db, each flagged ``held_out`` by :func:`held_out_rule`."""
    return [dict(r, held_out=held_out_rule(r["rule"])) for r in generate(spdb_rules(), per_rule, seed)]


_LOOKAROUND = re.compile(r"\(\?<?[=!](?:[^()\\]|\\.|\([^()]*\))*\)")


def detect_secrets_rules() -> list[dict]:
    """The regexes of the installed detect-secrets' plugins (``[{id, regex, group, flags}]``;
    ``[]`` when it is not installed): each ``RegexBasedDetector``'s ``denylist``, the high-entropy
    plugins' quoted-string regex, and the ``KeywordDetector``'s assignment regexes (quotes
    required and config-file sets, with the group that holds the value). ``IPPublicDetector`` is
    left out: a public IP address is not a credential (docs/security.md, Redaction)."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins import keyword
    except ImportError:
        return []
    out = []
    for cls in sorted(get_mapping_from_secret_type_to_class().values(), key=lambda c: c.__name__):
        name = cls.__name__.replace("Detector", "")
        if name == "IPPublic":
            continue
        if name == "Keyword":
            pats = [(rx, g) for table in (keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
                                          keyword.CONFIG_DENYLIST_REGEX_TO_GROUP) for rx, g in table.items()]
        elif hasattr(cls, "denylist"):
            pats = [(rx, None) for rx in cls.denylist]
        else:
            pats = [(cls().regex, 2)]  # high-entropy strings: (['"])(...)(\1)
        for n, (rx, g) in enumerate(dict.fromkeys(pats)):
            out.append({"id": f"{name.lower()}-{n}", "regex": rx.pattern, "flags": rx.flags, "group": g})
    return out


def detect_secrets_samples(seed: int, per_rule: int = 6, tries: int = 60) -> list[dict]:
    """Samples drawn from :func:`detect_secrets_rules` (all ``held_out``), each kept only where
    detect-secrets' own ``scan_line`` (default plugins and filters, verification off: no
    network) reports a secret inside the drawn text. The secret is the longest value it reports
    (or the whole match when that is a bare prefix such as GitHub's ``ghp``)."""
    rules = detect_secrets_rules()
    if not rules:
        return []
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings, get_settings

    state = random.getstate()
    random.seed(seed)
    out = []
    try:
        with default_settings():
            get_settings().disable_filters("detect_secrets.filters.common.is_ignored_due_to_verification_policies")
            for r in rules:
                rx = re.compile(r["regex"], r["flags"])
                gen = for_generation(_LOOKAROUND.sub("", r["regex"]))
                got, seen = 0, set()
                for text in _draws(gen, tries, 48, lambda: got < per_rule):
                    m = rx.search(text)
                    if not m or "\n" in text or "\r" in text or "\v" in text:
                        continue
                    found = [s.secret_value for s in scan_line(text) if s.secret_value and s.secret_value in m.group(0)]
                    if not found:
                        continue
                    secret = max(found, key=len)
                    if len(secret) < 8:
                        secret = m.group(r["group"]) if r["group"] else m.group(0).strip(" \t=:\"'")
                    if len(secret.strip()) < 6 or secret in seen:
                        continue
                    seen.add(secret)
                    got += 1
                    out.append({"rule": r["id"], "family": family(r["id"]), "text": text, "secret": secret,
                                "held_out": True})
    finally:
        random.setstate(state)
    return out


def _draws(gen: str, tries: int, limit: int, wanted):
    """Up to ``tries`` strings drawn by ``exrex`` from ``gen`` (repeats capped at ``limit``),
    each only while ``wanted()`` is true (so the seeded draws do not depend on how a caller
    loops); stops at the first construct exrex cannot draw (lookarounds)."""
    import exrex

    for _ in range(tries):
        if not wanted():
            return
        try:
            yield exrex.getone(gen, limit=limit)
        except Exception:
            return


def generate(rules: list[dict], per_rule: int, seed: int, tries: int = 40) -> list[dict]:
    """Up to ``per_rule`` accepted samples per rule: ``[{rule, family, text, secret}]``.

    Deterministic for a given ``seed`` (exrex draws from :mod:`random`). Patterns are matched
    with ``re.ASCII`` (Go's classes are ASCII) and drawn from :func:`for_generation`."""

    state = random.getstate()
    random.seed(seed)
    out = []
    try:
        for r in rules:
            rx = re.compile(r["regex"], re.ASCII)
            gen = for_generation(r["regex"])
            got, seen = 0, set()
            for text in _draws(gen, tries, 24, lambda: got < per_rule):
                m = rx.search(text)
                if not m:
                    continue
                groups = [i for i in range(1, (m.re.groups or 0) + 1) if m.group(i)]
                if r["secret_group"] == "last":  # secrets-patterns-db: the value is the last group
                    g = groups[-1] if groups else 0  # ("heroku(.{0,20})?['\"]([0-9a-f]{32})")
                else:
                    g = r["secret_group"] or (groups[0] if groups else 0)
                secret = m.group(g) if g else m.group(0)
                if len(secret.strip()) < 6 or secret in seen or _entropy(secret) < r["entropy"]:
                    continue
                if any(a.search(secret) for a in r["allow"]) or any(s in secret.lower() for s in r["stopwords"]):
                    continue
                if "\n" in text or "\r" in text:
                    continue
                seen.add(secret)
                got += 1
                out.append({"rule": r["id"], "family": family(r["id"]), "text": text, "secret": secret})
    finally:
        random.setstate(state)
    return out


def committed() -> list[dict]:
    """The committed gitleaks-derived samples (``held_out`` False: all are tuning material)."""
    with open(SAMPLES) as fh:
        rows = json.load(fh)["samples"]
    for r in rows:
        r["held_out"] = False
    return rows


def placements(text: str, rng: random.Random) -> list[tuple[str, dict]]:
    """``[(placement, Builder.make kwargs)]`` planting ``text`` in each of :data:`PLACEMENTS`.

    The kwargs are what the hook hands the envelope builder: raw tool input dicts, raw results.
    ``file_path`` puts the text inside a path (``tool.paths`` and the input's ``file_path``);
    ``json_escaped`` is a tool result that is itself JSON (a line after ``\\n``, quotes escaped);
    ``base64`` is the output of ``base64`` over a small config file holding the text."""
    pad = rng.choice(["", "  ", "\t"])
    safe = text.replace("\n", " ")
    conf = f"# settings\nregion=eu-west-1\n{safe}\nretries=3\n"
    return [
        ("prompt", {"event_type": "prompt", "content": f"here is the config line, please check it:\n{safe}\nthanks"}),
        ("assistant", {"event_type": "assistant", "content": f"I found this in the logs: {safe} — rotating it now."}),
        ("bash_command", {"event_type": "tool_call", "tool": {
            "name": "Bash", "input": {"command": f"echo '{safe}' | tee -a config/app.ini && ./deploy.sh", "description": "deploy"}}}),
        ("tool_output", {"event_type": "tool_call", "tool": {
            "name": "Bash", "input": {"command": "cat config/app.ini"}, "result": {"stdout": conf, "stderr": "", "interrupted": False},
            "exit_code": 0}}),
        ("edit_text", {"event_type": "tool_call", "tool": {
            "name": "Edit", "input": {"file_path": "/home/dev/app/settings.py", "old_string": "region=eu-west-1",
                                      "new_string": f"region=eu-west-1\n{pad}{safe}"},
            "paths": ["/home/dev/app/settings.py"]}}),
        ("file_path", {"event_type": "tool_call", "tool": {
            "name": "Read", "input": {"file_path": f"/home/dev/notes/{safe}/README.md"},
            "paths": [f"/home/dev/notes/{safe}/README.md"]}}),
        ("json_escaped", {"event_type": "tool_call", "tool": {
            "name": "Bash", "input": {"command": "kubectl get configmap app -o json"},
            "result": json.dumps({"data": {"app.ini": conf}})}}),
        ("base64", {"event_type": "tool_call", "tool": {
            "name": "Bash", "input": {"command": "base64 config/app.ini"},
            "result": base64.encodebytes(conf.encode()).decode()}}),
    ]


def _b64_forms(secret: str) -> list[str]:
    """The base64 text of ``secret`` at each of the three byte alignments it can sit at inside
    a larger encoded blob (edge characters that depend on neighbouring bytes dropped)."""
    raw = secret.encode()
    out = []
    for off in range(3):
        enc = base64.b64encode(b"\0" * off + raw + b"\0\0\0").decode()
        start = -(-off * 4 // 3)  # characters touched by the padding bytes before
        end = (off + len(raw)) * 4 // 3
        out.append(enc[start:end])
    return [f for f in out if len(f) >= 8]


def planted_form(placement: str, secret: str) -> list[str]:
    """The strings whose presence in the stored envelope means the secret leaked: the secret
    raw and JSON-escaped once or twice; for ``base64`` its base64 at every alignment."""
    if placement == "base64":
        return _b64_forms(secret)
    return [secret, json.dumps(secret)[1:-1], json.dumps(json.dumps(secret)[1:-1])[1:-1]]



def stored(kwargs: dict) -> str:
    """What the hook would write for one planted sample (``kwargs`` as :func:`placements` gives
    them, ``event_type`` included): the envelope and its quarantine records as JSON, built by
    the real :class:`lib.envelope.Builder` (the hook's own path to disk)."""
    from lib.envelope import Builder

    b = Builder(fleet_id="bench", agent_id="a", runtime="claude_code", session_id="s")
    kw = dict(kwargs)
    env = b.make(kw.pop("event_type"), **kw)
    return json.dumps([env, b.quarantine], ensure_ascii=False)

def leaked(stored: str, placement: str, secret: str) -> bool:
    """True when a :func:`planted_form` of ``secret`` appears in ``stored`` (the envelope as
    JSON; for base64 with the line wraps removed)."""
    hay = stored.replace("\\n", "") if placement == "base64" else stored
    return any(f in hay for f in planted_form(placement, secret))
