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
   (:mod:`lib.redact.keyed`): a name holding a secret-meaning keyword or a provider name, an
   assignment operator
   within 20 characters (gitleaks' operator set, quotes and JSON escapes around it), and a
   secret-shaped value — ``password_assignment`` / ``keyed_secret``.
   Markers are found at the start of every token run and after each ``-``/``_`` inside one
   (``key-AKIA…``, ``token_ghp_…``).
3. **Prefixed tokens** (whole field) — ``Bearer ``, ``hf_``, ``npm_``, ``SG.`` only when a
   token-shaped run follows; the prefix is kept, the tail replaced.
4. **Entropy** — tool input/output only, first :data:`MAX_SCAN_BYTES` (256 KiB) of the UTF-8
   text: runs of ``[A-Za-z0-9+/=_-]`` of ≥ 32 characters that look random
   (:mod:`lib.redact.entropy`), replaced in place — unless kept clean (:mod:`lib.redact.kept`):
   an OpenSSH public key, a line of a certificate/public-key PEM block, base64 that decodes to
   binary data in a wrapped block or to text the rules find clean, or a file path. In the same
   window, **assigned tokens** (:mod:`lib.redact.assigned`): a ``[A-Za-z0-9_-]`` run of ≥ 16
   characters that is random-shaped (digits in several groups or finely mixed case, entropy near
   the most its length allows, not words), or 32+ hex after an operator, where any name sits
   within 40 bytes before it and does not say checksum, hash, digest, commit, id or version.

A path denylist (:func:`denied_path`, :func:`denied_in_command`) withholds both input and
result of a tool call that touches a credential file (reference bug 12.2 #8).

**Modules**, one concept each (docs/architecture.md): :mod:`~lib.redact.scrub` the driver that
runs the rules in order over one value (and :func:`scrub_deep` over a JSON-like value);
:mod:`~lib.redact.providers` provider tokens by their documented shapes (rules 1 and 3);
:mod:`~lib.redact.keyed` keyword-anchored rules; :mod:`~lib.redact.structural` structural spans;
:mod:`~lib.redact.cmdline` command-line credentials; :mod:`~lib.redact.entropy` and
:mod:`~lib.redact.assigned` generic detection; :mod:`~lib.redact.kept` the kept-clean classes; :mod:`~lib.redact.shapes` the shape
judgements they share (words, paths, placeholders); :mod:`~lib.redact.confusables` lookalike
folding; :mod:`~lib.redact.denylist` the credential-file denylist; :mod:`~lib.redact.outcome`
outcomes and placeholders; :mod:`~lib.redact.scan` the byte scan they all work on. This package
imports them all (standard library only: ``re``, ``math``, ``hashlib``), as ``lib/redact.py``
did.

**How it stays fast** (docs/design.md §12: ≤ 20 ms for 1 MiB). Python's ``re`` is quick only when a
pattern starts with a literal; the first version's big alternation cost ~2 s per MiB. So the text
is encoded to UTF-8 once and each rule is found with C-speed primitives: ``bytes.translate`` maps
the text to a character-class string (and lower-cases it: ``bytes.lower`` costs ~4x a translate)
in which runs of token characters are found by one sre search whose pattern is a literal prefix
(``a`` * n: ``bytes.find`` of such a needle in text made of ``a`` and blanks is Horspool's worst
case), digit groups and SSN shapes by ``bytes.find``; provider prefixes are looked up by the first
two bytes of each token run of ≥ 14 characters (one dict lookup and one ``bytes.startswith`` of
a tuple of anchors per run); anchors of markers whose alphabet leaves the token class are found
by ``bytes.find`` over the whole field and count only inside a run of their own alphabet (no
per-run work where no anchor occurs: a regex alternation per run cost ~20 % of a scrub); a
keyword with no operator byte near it skips the assignment regexes; provider names before a
value are one trie-shaped regex (one branch per byte, not one per name); keywords
(``authorization``, ``bearer``, ``password`` ...) are found with ``bytes.find`` / literal-prefixed
regexes over the lower-cased bytes, rare bytes (``~``, the lead bytes of lookalike letters) with
memchr. The token runs are listed once, by the marker scan, and the assigned rule reads its runs
off that list while the bytes are unchanged; a run's entropy sums ``c * log2(c)`` over its byte
counts with C-level ``map`` calls (the textbook sum decides within 1e-6 bits of a threshold); a
word piece's letters and vowels are counted by ``translate``, not a loop over its bytes; a lazy
pattern binds its compiled methods on first use. Every window is bounded, so no input makes a rule quadratic. Every pattern matches ASCII
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

**Precision trades** (each tested in ``tests/redact/``): pure-hex runs in one case are never
entropy hits (git SHAs, digests, lock-file checksums are hex; hex API keys are caught only by a
marker, a keyed assignment or an assigned token after a name that does not call it data); UUIDs, ULIDs, Anthropic ``msg_``/``toolu_`` ids, ``sha512-`` integrity
strings, go.sum ``h1:`` hashes and image payloads (``data:image/...;base64,`` and raw PNG/JPEG/
GIF/WebP base64) stay clean; runs made of words (paths, identifiers, test names) stay clean;
password assignments whose value is letters only (``changeme``, ``your_password_here``) stay
clean. Standard library only and import-cheap (the hook uses it).
"""
from __future__ import annotations

from lib.redact.denylist import denied_in_command, denied_path, withhold_path
from lib.redact.entropy import (ENTROPY_MIN_LEN, ENTROPY_THRESHOLD, ENTROPY_THRESHOLD_MIXED, MAX_SCAN_BYTES,
                                MAX_SCAN_CHARS, shannon_entropy)
from lib.redact.confusables import fold_confusables
from lib.redact.outcome import (CLEAN, PLACEHOLDER, PLACEHOLDER_CARD, PLACEHOLDER_SECRET, PLACEHOLDER_SSN,
                                STATUS_ORDER, Outcome, fold, withheld)
from lib.redact.scrub import scrub, scrub_deep

__all__ = ["CLEAN", "ENTROPY_MIN_LEN", "ENTROPY_THRESHOLD", "ENTROPY_THRESHOLD_MIXED", "MAX_SCAN_BYTES",
           "MAX_SCAN_CHARS", "PLACEHOLDER", "PLACEHOLDER_CARD", "PLACEHOLDER_SECRET", "PLACEHOLDER_SSN",
           "STATUS_ORDER", "Outcome", "denied_in_command", "denied_path", "fold", "fold_confusables", "scrub",
           "scrub_deep", "shannon_entropy", "withheld", "withhold_path"]
