"""A foreign hook for the e2e tests: appends each payload a runtime sends to a file, answers ``{}``.

Registered in a runtime's config *before* ``ctxlake install`` runs (so the installer has to merge
around it), for the same events ctxlake wires. What it writes is the ground truth the tests hold
the spool against, and the raw material of ``tests/fixtures/captured/``::

    python3 -I -S record_hook.py <out.ndjson> <event>    # payload on stdin

Each line: ``{"event": <event>, "env": {CLAUDE*/HERMES* variables}, "payload": <stdin JSON>}``.
Standard library only; one ``write`` on an ``O_APPEND`` descriptor per payload (runtimes may run
hooks in parallel).
"""
import json
import os
import sys


def main() -> int:
    out, event = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    raw = sys.stdin.buffer.read()
    try:
        payload = json.loads(raw) if raw.strip() else None
    except ValueError:
        payload = {"_unparsed": raw.decode("utf-8", "replace")}
    env = {k: v for k, v in os.environ.items() if k.startswith(("CLAUDE", "HERMES"))}
    line = json.dumps({"event": event, "env": env, "payload": payload}) + "\n"
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    sys.stdout.write("{}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
