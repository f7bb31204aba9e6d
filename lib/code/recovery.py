"""Where ``exec`` keeps a command's full output, and how much of it.

docs/ctxctl.md (raw-output recovery). The files hold the child's output exactly as written — unredacted: whatever a command prints (a
token, ``/etc/shadow``) is in them. So they live in a per-user private directory,
``$TMPDIR/ctxctl-exec-<uid>/`` (mode 0700), and are bounded: every ``exec`` deletes kept files
older than ``[exec] full_output_hours`` and then the oldest ones until the rest fit in
``[exec] full_output_mib`` (the file of the current run always stays: its path was just printed).

The directory is checked through a descriptor opened with ``O_NOFOLLOW``: a symlink, a
non-directory or a directory another user owns is refused (:class:`Refused`, the output is then
shown but not kept), never written into; one of ours with a looser mode is narrowed to 0700.
"""
from __future__ import annotations

import os
import stat
import tempfile
import time

PARTIAL_PREFIX = ".partial-"
"""Name prefix of the file a running ``exec`` streams into (renamed to ``<sha256 prefix>.log``
when kept)."""
PARTIAL_GRACE_SECS = 3600
"""A ``.partial-`` file older than this belongs to a run that was killed; pruning deletes it."""


class Refused(Exception):
    """The recovery directory is not safe to write into; the message says why and what fixes it."""


def directory(base: str | None = None) -> str:
    """``<base>/ctxctl-exec-<uid>`` (``base``: :func:`tempfile.gettempdir`), created 0700 when
    missing. :raises Refused: it is a symlink or not a directory, or another user owns it."""
    path = os.path.join(base or tempfile.gettempdir(), f"ctxctl-exec-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise Refused(f"cannot create {path}: {exc.strerror}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        raise Refused(f"{path} is not a directory of ours (a symlink or a file); remove it") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise Refused(f"{path} is owned by uid {st.st_uid}, not by us (uid {os.getuid()}); remove it "
                          "or set TMPDIR to a private directory")
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def prune(path: str, keep: str | None, max_age_hours: int, max_mib: int, now: float | None = None) -> list:
    """Delete kept outputs in ``path`` older than ``max_age_hours``, then the oldest until the
    rest total at most ``max_mib`` MiB, never ``keep`` (the current run's file); and
    ``.partial-`` files of killed runs (:data:`PARTIAL_GRACE_SECS`). Returns the names deleted.
    Files that vanish meanwhile (a concurrent ``exec`` pruning too) are skipped."""
    now = time.time() if now is None else now
    entries = []
    try:
        it = os.scandir(path)
    except OSError:  # removed meanwhile: nothing to prune, and the command's answer stands
        return []
    with it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if e.name.startswith(PARTIAL_PREFIX):
                if now - st.st_mtime > PARTIAL_GRACE_SECS:
                    entries.append((0.0, 0, e.name))  # first to go
                continue
            if e.name.endswith(".log") and e.path != keep:
                entries.append((st.st_mtime, st.st_size, e.name))
    keep_size = 0
    if keep:
        try:
            keep_size = os.stat(keep).st_size
        except OSError:
            pass
    budget = max_mib * 1024 * 1024 - keep_size
    removed = []
    total = sum(size for _, size, _ in entries)
    for mtime, size, name in sorted(entries):
        if mtime and now - mtime <= max_age_hours * 3600 and total <= budget:
            continue
        try:
            os.unlink(os.path.join(path, name))
        except FileNotFoundError:
            pass
        total -= size
        removed.append(name)
    return removed
