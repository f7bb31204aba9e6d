"""``exec "<cmd>"``: run one command (never a shell) and return its folded output.

Before anything is spawned: unquoted shell metacharacters (``| & ; ( ) < >`` or a newline,
found outside single and double quotes with backslash escapes honoured) are refused with a
message naming ``sh -c``; the line is split with POSIX shell-word rules; keep patterns are
compiled. So a bad call never leaves an orphan child.

The child runs in its own process group with stdin on /dev/null. stdout streams through the
:class:`~lib.code.fold.Folder` as it arrives; stderr is drained on a thread into an unnamed
temporary file and folded after stdout (the merge order is all of stdout, then all of stderr,
with a ``\\n`` between them when stdout does not end with one). A wall-clock timeout (30 s)
kills the whole process group. The child's exit code passes through (128+signal when it was
killed by a signal, truncated to 0–255).

Raw-output recovery (beyond upstream ctxctl): every byte the child wrote is also streamed to a
file. When the shown output dropped anything (folded lines, ANSI codes, progress redraws,
repeated lines) the file is kept under ``$TMPDIR/ctxctl-exec/<sha256 prefix>.log`` — named by
its content, so identical runs print identical bytes — and its path is reported; otherwise it
is deleted.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass

from lib.code import fold, render
from lib.code.errors import READ, ExitError
from lib.code.render import Result

TIMEOUT_SECS = 30.0
"""Hard wall-clock limit on a child, in seconds: a hung command cannot wedge the caller."""
METACHARACTERS = "|&;()<>\n"
CHUNK = 65536


def find_metachar(cmd: str) -> str | None:
    """The first unquoted shell metacharacter in ``cmd``, or ``None``."""
    quote = None
    escaped = False
    for ch in cmd:
        if escaped:
            escaped = False
            continue
        if ch == "\\" and quote != "'":
            escaped = True
            continue
        if quote:
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
            continue
        if ch in METACHARACTERS:
            return ch
    return None


def split_command(cmd: str) -> list:
    """``argv`` for ``cmd``.

    :raises ExitError: code 1 — metacharacter, unbalanced quotes, or empty command.
    """
    ch = find_metachar(cmd)
    if ch is not None:
        shown = "\\n" if ch == "\n" else ch
        raise ExitError(READ, f"exec runs a single command, not a shell; found unquoted `{shown}` — "
                              f"wrap compound commands as sh -c \"<command>\"")
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise ExitError(READ, f"invalid command line: {exc}") from None
    if not argv:
        raise ExitError(READ, "empty command")
    return argv


@dataclass
class Outcome:
    """A finished run: the folded output, the child's exit code and the recovery file path."""

    folded: fold.Folded
    exit_code: int
    full_output: str | None


def _recovery_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "ctxctl-exec")


def run_command(cmd: str, patterns: list, head: int, tail: int, threshold: int,
                timeout: float = TIMEOUT_SECS, cwd: str | None = None) -> Outcome:
    """Spawn ``cmd`` and fold its output.

    :raises ExitError: code 1 — pre-spawn errors, spawn failure, or the timeout.
    """
    argv = split_command(cmd)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, cwd=cwd)
    except OSError as exc:
        reason = f"{exc.strerror} (os error {exc.errno})" if exc.errno else str(exc)
        raise ExitError(READ, f"failed to run `{cmd}`: {reason}") from None
    timed_out = threading.Event()

    def kill_group():
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass

    timer = threading.Timer(timeout, kill_group)
    timer.daemon = True
    err_spool = tempfile.TemporaryFile()
    os.makedirs(_recovery_dir(), exist_ok=True)
    raw_fd, raw_path = tempfile.mkstemp(prefix=".partial-", dir=_recovery_dir())
    raw = os.fdopen(raw_fd, "wb")
    digest = hashlib.sha256()

    def drain_stderr():
        for chunk in iter(lambda: proc.stderr.read1(CHUNK), b""):
            err_spool.write(chunk)

    folder = fold.Folder(patterns, head, tail, threshold)
    reader = threading.Thread(target=drain_stderr, daemon=True)
    timer.start()
    reader.start()
    try:
        last = b""
        wrote_out = False
        for chunk in iter(lambda: proc.stdout.read1(CHUNK), b""):
            folder.feed(chunk)
            raw.write(chunk)
            digest.update(chunk)
            last = chunk[-1:]
            wrote_out = True
        reader.join()
        proc.wait()
    finally:
        timer.cancel()
    if timed_out.is_set():
        raw.close()
        os.unlink(raw_path)
        err_spool.close()
        raise ExitError(READ, f"command `{cmd}` exceeded the {int(timeout) if timeout == int(timeout) else timeout}s "
                              f"execution timeout and was killed")
    err_spool.seek(0)
    first = True
    for chunk in iter(lambda: err_spool.read(CHUNK), b""):
        if first and wrote_out and last != b"\n":
            folder.feed(b"\n")
            raw.write(b"\n")
            digest.update(b"\n")
        first = False
        folder.feed(chunk)
        raw.write(chunk)
        digest.update(chunk)
    err_spool.close()
    raw.close()
    folded = folder.finish()
    full = None
    if folded.folded or folded.changed:
        full = os.path.join(_recovery_dir(), digest.hexdigest()[:16] + ".log")
        os.replace(raw_path, full)
    else:
        os.unlink(raw_path)
    code = proc.returncode
    if code < 0:
        code = 128 + (-code)
    return Outcome(folded, code & 0xFF, full)


def run(cmd: str, config, *, keep=(), head: int | None = None, tail: int | None = None,
        json_mode: bool = False, show_saved: bool = True, timeout: float = TIMEOUT_SECS,
        cwd: str | None = None) -> Result:
    """The ``exec`` command: ``Result.code`` is the child's exit code.

    ``keep`` patterns are appended to ``[exec] keep``; ``head``/``tail`` override the config.
    :raises ExitError: code 1, see :func:`run_command`.
    """
    split_command(cmd)
    patterns = fold.compile_patterns(list(config.exec.keep) + list(keep))
    h = config.exec.head_lines if head is None else head
    t = config.exec.tail_lines if tail is None else tail
    outcome = run_command(cmd, patterns, h, t, config.exec.collapse_threshold, timeout, cwd)
    folded = outcome.folded
    text = folded.text.decode("utf-8", "replace")
    warning = folded.warning()
    if json_mode:
        env = render.envelope("exec", cmd=cmd, exit_code=outcome.exit_code, compressed=text,
                              full_output=outcome.full_output, warning=warning)
        if show_saved:
            env["saved"] = {"tokens_before": folded.tokens_before, "tokens_after": folded.tokens_after,
                            "percent": folded.percent}
        return Result(render.dumps(env) + "\n", outcome.exit_code, [], None)
    out = f"$ {cmd}\n"
    if text:
        out += text if text.endswith("\n") else text + "\n"
    if outcome.full_output:
        out += f"[full output: {outcome.full_output}]\n"
    if show_saved:
        out += f"Saved ~{folded.percent}% ({render.group(folded.tokens_before)} -> {render.group(folded.tokens_after)} tokens)\n"
    return Result(out, outcome.exit_code, [warning] if warning else [], None)
