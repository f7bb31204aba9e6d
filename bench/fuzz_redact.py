"""atheris (libFuzzer) target for lib/redact/ — coverage-guided, beyond what hypothesis finds.

Usage (atheris is optional and not in requirements-dev.txt: a 35 MB wheel with a clang runtime
for one manual tool)::

    pip install atheris
    python bench/fuzz_redact.py -runs=200000            # or -max_total_time=600

Checks per input: ``scrub`` never raises; the output survives ``surrogatepass`` encoding;
status/rules agree; a second pass changes nothing (idempotence); a corpus secret planted in the
input never survives; ``scrub_deep`` never raises on the input parsed as JSON.
"""
from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import atheris  # noqa: E402

with atheris.instrument_imports():
    from lib import redact

from tests.redact.secrets_corpus import SECRETS  # noqa: E402


def test_one_input(data: bytes) -> None:
    """libFuzzer entry point: raise (or assert) on any property violation."""
    fdp = atheris.FuzzedDataProvider(data)
    tool = fdp.ConsumeBool()
    pick = fdp.ConsumeIntInRange(0, len(SECRETS))
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes()) if fdp.ConsumeBool() else \
        fdp.ConsumeUnicode(fdp.remaining_bytes())
    out, oc = redact.scrub(text, tool)
    out.encode("utf-8", "surrogatepass")
    assert (oc.status == "clean") == (not oc.rules)
    assert redact.scrub(out, tool)[0] == out, "not idempotent"
    if pick < len(SECRETS):
        secret = SECRETS[pick]
        planted = text + " " + secret + "\n" + text[::-1]
        assert secret not in redact.scrub(planted, tool)[0], "planted secret survived"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return
    redact.scrub_deep(value, tool)


def main(argv=None) -> None:
    """Run the fuzzer with libFuzzer flags from ``argv`` (default ``sys.argv``)."""
    atheris.Setup(argv or sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
