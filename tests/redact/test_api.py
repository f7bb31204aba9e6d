"""The public surface of lib/redact/ stays backward compatible, documented and cheap to import."""
from __future__ import annotations

import inspect
import subprocess
import sys

from lib import redact

PUBLIC = ["scrub", "Outcome", "fold", "denied_path", "withhold_path", "withheld", "scrub_deep",
          "shannon_entropy", "denied_in_command", "CLEAN", "ENTROPY_MIN_LEN", "ENTROPY_THRESHOLD",
          "MAX_SCAN_CHARS", "MAX_SCAN_BYTES", "STATUS_ORDER"]


def test_public_names_exist_with_their_documented_values():
    for name in PUBLIC:
        assert hasattr(redact, name), name
    assert redact.ENTROPY_MIN_LEN == 32 and redact.ENTROPY_THRESHOLD == 4.5
    assert redact.MAX_SCAN_BYTES == redact.MAX_SCAN_CHARS == 256 * 1024
    assert redact.STATUS_ORDER == {"clean": 0, "redacted": 1, "quarantined": 2}
    assert redact.CLEAN == redact.Outcome() == redact.Outcome("clean", ())


def test_every_public_function_has_a_docstring():
    modules = [redact] + [m for n, m in sorted(sys.modules.items()) if n.startswith(redact.__name__ + ".")]
    assert len(modules) >= 3
    for mod in modules:
        assert mod.__doc__ and len(mod.__doc__.strip()) > 20, mod.__name__
        for name, obj in vars(mod).items():
            if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj)) \
                    and obj.__module__ == mod.__name__:
                assert obj.__doc__ and len(obj.__doc__.strip()) > 20, (mod.__name__, name)


def test_fold_and_withhold_path_keep_their_shapes():
    assert redact.fold([]) == {"status": "clean"}
    folded = redact.fold([redact.Outcome("redacted", ("ssn",)), redact.Outcome("quarantined", ("jwt", "ssn"))])
    assert folded == {"status": "quarantined", "rules_fired": ["jwt", "ssn"]}
    text, oc = redact.withhold_path("/x/.env", "SECRET=1")
    assert text == "[ctxlake: withheld, denied path /x/.env]" and oc.rules == ("denied_path",)
    assert redact.withheld("abc") == ("[ctxlake: withheld, 3 bytes, sha256:"
                                      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad]")


def test_import_is_standard_library_only_and_cheap():
    code = ("import sys; before = set(sys.modules); import lib.redact; "
            "new = sorted(m for m in set(sys.modules) - before if not m.startswith(('lib', '_')) and '.' not in m); "
            "print(','.join(new))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    allowed = {"hashlib", "math", "re", "dataclasses", "copy", "inspect", "keyword", "types", "enum", "functools",
               "operator", "collections", "reprlib", "itertools", "ast", "dis", "opcode", "token", "tokenize",
               "linecache", "contextlib", "weakref", "importlib", "codecs", "io", "abc", "warnings", "sre_compile",
               "sre_parse", "sre_constants", "copyreg", "heapq", "keyword", "site", "os", "stat", "posixpath",
               "genericpath", "textwrap", "string", "fnmatch", "ntpath", "errno", "locale", "__future__", "select",
               "zlib", "bz2", "lzma", "struct", "binascii", "annotationlib", "token"}
    assert set(filter(None, out.split(","))) <= allowed, out
