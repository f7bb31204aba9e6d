#!/usr/bin/env python3
"""ctxlake hook: one process per runtime hook event (docs/design.md §1, §6).

Usage (as ``ctxlake install`` writes it into a runtime's hook config)::

    python3 -I -S /path/to/hook.py <runtime> [<event>] [--fleet=<id> --agent=<id>] [--async] < payload.json

(``--async``: the runtime does not wait for this event; see :func:`lib.hookproc.parse_argv`.)
``install`` writes it behind a ``-c`` launcher (``python3 -I -S -c <launcher> /path/to/hook.py …``,
:data:`lib.install.commands.LAUNCHER`) that answers ``{}`` and exits 0 when this file is gone.

Prints the runtime's answer (briefing, lease warning, or ``{}``) on stdout, captures the event
into the local spool (redacted), and always exits 0. Never touches the network or the store.
The logic lives in :mod:`lib.hookproc` (byte-compiled once; this file is recompiled per start).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    """``hook.py <runtime> [<event>] [options]``: payload on stdin, answer on stdout, exit 0 always."""
    try:
        from lib.hookproc import run

        return run(sys.argv[1:], sys.stdin.buffer, sys.stdout, release_stdio=True)
    except BaseException:  # noqa: BLE001 - even a broken install must not fail the agent
        return 0


if __name__ == "__main__":
    code = main()
    try:
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - stdout may be closed already (released to /dev/null)
        pass
    os._exit(code)  # the answer is out and the capture done or detached: skip interpreter teardown
