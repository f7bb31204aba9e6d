"""Sessions that never ended: the seal syncd gives a session whose end event never came
(docs/design.md §3, docs/operations.md "Sessions that never ended").

A session is sealed when its end marker (``<sid>.done``, written by the hook on the runtime's
end event) is there. A runtime killed with SIGKILL, a crash, or a laptop whose battery ran out
sends no end event, and such a session would stay unsealed forever: maint never compacts it,
the gate never counts it. So each hook capture also records the session's runtime process and
the transcript it writes (:func:`record`, ``spool/.state/<runtime>/<sid>.proc``), and syncd
treats a session as ended (:func:`idle_end`) when

- no spool file of it was written for ``[sync] idle_seal_secs`` (default 1800 s), and
- its runtime process is gone, or whether it is gone cannot be known (:func:`process_state`):
  a process that is still running keeps its session open however long it is idle.

The seal is the same as at a real end: the transcript backstop (:mod:`lib.backstop`) reads the
transcript the hooks saw and fills in what they missed (a process killed mid-turn never ran the
hooks of its last events), then ``_SEALED`` is written. A session that resumes afterwards
(``claude --resume``) writes to a fresh spool file and is sealed again at its next end; its
events keep their identities (docs/architecture.md "Event identity") and the ids the first seal
reconciled are kept, so nothing is doubled. Only this module decides idleness and liveness.
Standard library only (:func:`record` runs in the hook's capture).
"""
from __future__ import annotations

import json
import os
import time

ALIVE, GONE, UNKNOWN = "alive", "gone", "unknown"


def _proc_start(pid: int) -> int | None:
    """Start time of process ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field 22),
    or ``None`` where there is no ``/proc`` or no such process. Tells a pid reused by another
    process from the one recorded."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        return int(data.rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _pid_namespace() -> str | None:
    """This process's pid namespace (``/proc/self/ns/pid``'s link, ``pid:[<inode>]``), or
    ``None`` where it cannot be read. A pid means nothing in another namespace."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def process_record(pid: int | None, transcript_path: str | None) -> dict:
    """``{pid?, pid_start?, pid_ns?, transcript_path?}`` for a runtime process ``pid`` (the
    hook's parent; ``None`` or 1 when the hook outlived it and was reparented: no pid then)."""
    out: dict = {}
    if isinstance(pid, int) and pid > 1:
        out["pid"] = pid
        start, ns = _proc_start(pid), _pid_namespace()
        if start is not None:
            out["pid_start"] = start
        if ns:
            out["pid_ns"] = ns
    if isinstance(transcript_path, str) and transcript_path:
        out["transcript_path"] = transcript_path
    return out


def read(path: str) -> dict:
    """A session's process record (``{}`` when missing, unreadable or not an object)."""
    try:
        with open(path, "rb") as fh:
            rec = json.loads(fh.read() or b"{}")
    except (OSError, ValueError, RecursionError):
        return {}
    return rec if isinstance(rec, dict) else {}


def record(path: str, pid: int | None, transcript_path: str | None, scrub=None) -> bool:
    """Keep the session's runtime process and transcript path at ``path`` (the session's
    ``.proc`` record, :meth:`lib.paths.Paths.session_process`); True when it was (re)written.

    Written when it is missing or names another process or transcript (a resumed session runs
    in a new process); a capture whose hook was reparented (no pid) keeps the pid recorded.
    ``scrub(text)`` redacts the transcript path before it reaches disk (invariant 7; the hook
    passes the rules the end marker uses). Atomic, not fsynced: losing it to a power cut only
    makes the session's liveness unknown. :raises OSError: the write failed (the hook logs it;
    the event itself is already spooled)."""
    if scrub is not None and isinstance(transcript_path, str):
        transcript_path = scrub(transcript_path)
    new = process_record(pid, transcript_path)
    old = read(path)
    if "pid" not in new and "pid" in old:
        new = {**{k: old[k] for k in ("pid", "pid_start", "pid_ns") if k in old}, **new}
    if "transcript_path" not in new and "transcript_path" in old:
        new["transcript_path"] = old["transcript_path"]
    if new == old or not new:
        return False
    from lib.spool import atomic_write

    atomic_write(path, json.dumps(new, sort_keys=True).encode(), fsync=False)
    return True


def process_state(rec: dict) -> str:
    """Whether the runtime process of a record is :data:`ALIVE`, :data:`GONE` or
    :data:`UNKNOWN`.

    Unknown: no pid recorded, or it was recorded in another pid namespace than this process's
    (syncd in its own container). Where ``/proc`` exists the pid is alive only if a process
    with that pid and the recorded start time exists (a reused pid is another process);
    elsewhere ``kill(pid, 0)`` decides (a process of another user is alive)."""
    pid = rec.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return UNKNOWN
    ns = _pid_namespace()
    if rec.get("pid_ns") and ns and rec["pid_ns"] != ns:
        return UNKNOWN
    if os.path.isdir("/proc/self"):
        start = _proc_start(pid)
        if start is None:
            return GONE
        return ALIVE if rec.get("pid_start") in (None, start) else GONE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return GONE
    except PermissionError:
        return ALIVE
    except OSError:
        return UNKNOWN
    return ALIVE


def idle_end(files: list[str], proc_path: str, idle_secs: float, now: float | None = None) -> dict | None:
    """The end marker syncd gives a session without one, or ``None`` while it is not ended.

    ``files``: the session's spool files; ``proc_path``: its process record; ``idle_secs``:
    ``[sync] idle_seal_secs`` (0 or less: never). Returns ``{"event": "idle", "idle_secs",
    "process": "gone"|"unknown", "transcript_path"?, "mark"}`` when the newest spool file was
    last written ``idle_secs`` ago or more and the process is not alive (module docstring); the
    returned ``idle_secs`` is that idle time rounded to whole seconds (float noise in an mtime
    never shows as a second less); ``mark`` (``idle:<newest mtime ns>``) names this idle end, so the backstop runs once for
    it."""
    if not idle_secs or idle_secs <= 0:
        return None
    newest = None
    for path in files:
        try:
            m = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            continue
        newest = m if newest is None else max(newest, m)
    if newest is None:
        return None
    now = time.time() if now is None else now
    idle = now - newest / 1e9
    if idle < idle_secs:
        return None
    rec = read(proc_path)
    state = process_state(rec)
    if state == ALIVE:
        return None
    out = {"event": "idle", "idle_secs": round(idle), "process": state, "mark": f"idle:{newest}"}
    if isinstance(rec.get("transcript_path"), str):
        out["transcript_path"] = rec["transcript_path"]
    return out
