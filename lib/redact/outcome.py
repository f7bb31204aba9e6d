"""What one scrub returns and what it leaves in the text: the :class:`Outcome` (status and rules
fired), the in-place placeholders, the withheld-value placeholder (:func:`withheld`) and the fold
of per-field outcomes into an envelope's ``redaction`` object (:func:`fold`; docs/security.md,
Redaction). Placeholders are constant per rule, and the withheld placeholder carries the sha256 of
the whole original value: the same secret always yields the same placeholder and a placeholder
never contains the secret."""
from __future__ import annotations

import hashlib


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
