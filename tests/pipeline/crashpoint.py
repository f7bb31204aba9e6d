"""Run a role script and SIGKILL it at a chosen I/O boundary (a test helper, not a test).

Usage: ``CTXLAKE_CRASH_AT=<label>:<n> python tests/pipeline/crashpoint.py syncd.py --once``

The role script runs unchanged (``runpy``), with thin wrappers around the calls that cross a
durability boundary. At the ``n``-th occurrence of ``label`` the process sends itself SIGKILL —
no ``finally``, no flush, exactly like a power cut or the OOM killer at that instant. Labels:

- ``save_pending`` / ``save``: right after a spool watermark was written with / without a
  pending batch (``save_pending`` = the write-ahead record is durable, the PUT has not happened);
- ``put_<kind>`` / ``before_<kind>``: right after / before a successful store PUT, with
  ``kind`` one of ``seg``, ``sealed``, ``manifest`` (a pass manifest next to the Delta table),
  ``ledger``, ``digest``, ``snapshot``, ``live``, ``other``;
- ``delta_commit``: right after delta-rs wrote a Delta commit (the MERGE or the table's
  creation returned), before maint recorded anything about it;
- ``unlink_spool``: right after a spool file (or ``.done`` marker) was deleted;
- ``any``: every one of the above.

Random delays from outside cannot reliably hit a window a few hundred microseconds wide; this can.
"""
from __future__ import annotations

import os
import runpy
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def key_kind(key: str) -> str:
    """Which kind of object a store key is (see the module docstring)."""
    if key.startswith("sessions/"):
        if "/seg-" in key:
            return "seg"
        if key.endswith("/_SEALED"):
            return "sealed"
        if key.endswith("/digest.json"):
            return "digest"
    if key.startswith("compacted/"):
        if "/_ctxlake/passes/" in key:
            return "manifest"
        return "ledger" if "/_ctxlake/" in key else "other"
    if key.startswith("snapshot/"):
        return "snapshot"
    if key.startswith("live/"):
        return "live"
    return "other"


def install(spec: str) -> None:
    """Wrap the boundary calls; kill this process at the ``n``-th ``label`` of ``spec``."""
    from lib import spool
    from lib.paths import Paths
    from lib.store import OVERWRITE
    from lib.store.file import FileStore

    label, _, count = spec.partition(":")
    target = int(count or 1)
    seen = [0]

    def point(name: str) -> None:
        if label == "any" or label == name:
            seen[0] += 1
            if seen[0] == target:
                os.kill(os.getpid(), signal.SIGKILL)

    real_save = spool.Watermark.save

    def save(self):
        real_save(self)
        point("save_pending" if self.pending else "save")

    spool.Watermark.save = save

    real_put = FileStore.put

    def put(self, key, data, mode=OVERWRITE):
        kind = key_kind(key)
        point("before_" + kind)
        obj = real_put(self, key, data, mode)
        point("put_" + kind)
        return obj

    FileStore.put = put

    spool_dir = Paths.from_env().spool_dir + os.sep
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        real_unlink(path, *args, **kwargs)
        p = os.fspath(path)
        if isinstance(p, str) and p.startswith(spool_dir) and (".ndjson" in p or p.endswith(".done")):
            point("unlink_spool")

    os.unlink = unlink

    import deltalake
    import deltalake.table

    real_write = deltalake.write_deltalake
    real_execute = deltalake.table.TableMerger.execute

    def write_deltalake(*args, **kwargs):
        out = real_write(*args, **kwargs)
        point("delta_commit")
        return out

    def execute(self):
        out = real_execute(self)
        point("delta_commit")
        return out

    deltalake.write_deltalake = write_deltalake
    deltalake.table.TableMerger.execute = execute


def main() -> None:
    """Install the crash point from ``CTXLAKE_CRASH_AT`` and run ``argv[1]`` as ``__main__``."""
    sys.path.insert(0, ROOT)
    spec = os.environ.pop("CTXLAKE_CRASH_AT", "")
    if spec:
        install(spec)
    script = os.path.join(ROOT, sys.argv[1])
    sys.argv = [script] + sys.argv[2:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
