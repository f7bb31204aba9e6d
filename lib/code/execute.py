"""``exec "<cmd>"``: run one command (never a shell) and return its folded output.

Before anything is spawned: unquoted shell metacharacters (``| & ; ( ) < >`` or a newline,
found outside single and double quotes with backslash escapes honoured) are refused with a
message naming ``sh -c``; the line is split with POSIX shell-word rules; keep patterns are
compiled. So a bad call never leaves an orphan child.

The child runs in its own process group and session with stdin on /dev/null and a per-run
token in its environment (:data:`TOKEN_VAR`), which every descendant inherits. One loop reads
stdout (folded as it arrives by :class:`~lib.code.fold.Folder`) and stderr (spooled to an
unnamed temporary file and folded after stdout, with a ``\\n`` between them when stdout does not
end with one) against a wall-clock deadline (30 s) that bounds reading, folding and
descendants alike (:func:`run_command`). The child's exit code passes through (128+signal
when it was killed by a signal, truncated to 0–255).

Raw-output recovery (beyond upstream ctxctl): every byte the child wrote is also streamed to a
file. When the shown output dropped anything (folded lines, ANSI codes, progress redraws,
repeated lines) the file is kept under ``$TMPDIR/ctxctl-exec-<uid>/<sha256 prefix>.log`` — named
by its content, so identical runs print identical bytes — and its path is reported; otherwise it
is deleted. The directory is private and bounded (:mod:`lib.code.recovery`).
"""
from __future__ import annotations

import binascii
import hashlib
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

from lib.code import fold, recovery, render, tokens
from lib.code.config import DEFAULT_KEEP_LIMITS
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
    """A finished run: the folded output, the child's exit code, the recovery file path and
    the note about background processes that outlived the command (``None`` when none did)."""

    folded: fold.Folded
    exit_code: int
    full_output: str | None
    note: str | None = None


LINGER_SECS = 2.0
"""After the command exits, how long descendants may keep its output open before they are
killed and the answer is given (a daemon started with ``setsid``/``nohup`` inherits the pipe)."""
TOKEN_VAR = "CTXCTL_EXEC_TOKEN"
"""Environment variable carrying a per-run token: every descendant inherits it, also one that
left the process group and the session (``setsid``), so the whole tree can be found in /proc."""


def _tagged(token: bytes) -> list:
    """PIDs of live processes whose environment holds ``TOKEN_VAR=token``."""
    needle = TOKEN_VAR.encode() + b"=" + token + b"\0"
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle in fh.read() + b"\0":
                    out.append(int(name))
        except OSError:
            continue
    return out


def kill_tree(pgid: int, token: bytes) -> int:
    """SIGKILL the process group ``pgid`` and every process tagged with ``token`` (repeated
    until none is left, so a process forking while it dies is caught too); returns how many
    tagged processes were found."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    seen = set()
    for _ in range(5):
        pids = [p for p in _tagged(token) if p != os.getpid()]
        if not pids:
            break
        for pid in pids:
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
    return len(seen)


def run_command(cmd: str, patterns: list, head: int, tail: int, threshold: int,
                timeout: float = TIMEOUT_SECS, cwd: str | None = None, raw: bool = False,
                keep_limits: tuple | None = None) -> Outcome:
    """Spawn ``cmd`` and fold its output (``raw``: pass it through unfolded). ``keep_limits`` =
    ``(hours, MiB)``: the bounds :func:`lib.code.recovery.prune` applies to kept full outputs
    (default: ``[exec] full_output_hours`` / ``full_output_mib``'s defaults).

    One loop reads stdout and stderr with a deadline, so the timeout bounds the whole call —
    reading, folding and descendants: at the deadline the process group and every tagged
    descendant (:func:`kill_tree`) are killed, the pipes closed and the timeout reported. When
    the command itself has exited but descendants still hold its output open, they get
    :data:`LINGER_SECS`, then they are killed too and the answer notes it.

    :raises ExitError: code 1 — pre-spawn errors, spawn failure, or the timeout.
    """
    argv = split_command(cmd)
    token = binascii.hexlify(os.urandom(8))
    env = dict(os.environ)
    env[TOKEN_VAR] = token.decode()
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, cwd=cwd, env=env)
    except OSError as exc:
        reason = f"{exc.strerror} (os error {exc.errno})" if exc.errno else str(exc)
        raise ExitError(READ, f"failed to run `{cmd}`: {reason}") from None
    err_spool = tempfile.TemporaryFile()
    try:
        keep_dir, refused = recovery.directory(), None
        raw_fd, raw_path = tempfile.mkstemp(prefix=recovery.PARTIAL_PREFIX, dir=keep_dir)
        raw_file = os.fdopen(raw_fd, "wb")
    except (recovery.Refused, OSError) as exc:  # the output is still shown, only not kept
        keep_dir, refused, raw_path = None, f"full output not kept: {exc}", None
        raw_file = tempfile.TemporaryFile()
    digest = hashlib.sha256()
    folder = fold.Folder(patterns, head, tail, threshold, raw=raw)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    last, wrote_out, timed_out, lingered = b"", False, False, 0
    exited_at = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= LINGER_SECS:
                lingered = 1
                break
            wait = min(deadline - now, 0.05 if exited_at is None else LINGER_SECS - (now - exited_at), 0.25)
            for key, _ in sel.select(max(wait, 0.0)):
                chunk = os.read(key.fd, CHUNK)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                if key.data == "err":
                    err_spool.write(chunk)
                    continue
                folder.feed(chunk)
                raw_file.write(chunk)
                digest.update(chunk)
                last = chunk[-1:]
                wrote_out = True
        if timed_out or lingered:
            kill_tree(proc.pid, token)
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()) + 1.0)
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid, token)
            proc.wait()
            timed_out = True
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
    def timeout_error():
        raw_file.close()
        if raw_path:
            os.unlink(raw_path)
        err_spool.close()
        shown = int(timeout) if timeout == int(timeout) else timeout
        return ExitError(READ, f"command `{cmd}` exceeded the {shown}s execution timeout and was killed")

    if timed_out:
        raise timeout_error()
    err_spool.seek(0)
    first = True
    for chunk in iter(lambda: err_spool.read(CHUNK), b""):
        if time.monotonic() >= deadline:  # folding is inside the bound too
            raise timeout_error()
        if first and wrote_out and last != b"\n":
            folder.feed(b"\n")
            raw_file.write(b"\n")
            digest.update(b"\n")
        first = False
        folder.feed(chunk)
        raw_file.write(chunk)
        digest.update(chunk)
    err_spool.close()
    raw_file.close()
    folded = folder.finish()
    full = None
    if raw_path and (folded.folded or folded.changed):
        full = os.path.join(keep_dir, digest.hexdigest()[:16] + ".log")
        os.replace(raw_path, full)
    elif raw_path:
        os.unlink(raw_path)
    if keep_dir:
        recovery.prune(keep_dir, full, *(keep_limits or DEFAULT_KEEP_LIMITS))
    code = proc.returncode
    if code < 0:
        code = 128 + (-code)
    note = refused if refused and (folded.folded or folded.changed) else None
    if lingered:
        note = "; ".join(filter(None, [note, f"the command exited but background processes kept its output open; "
                                             f"they were killed after {LINGER_SECS:g}s"]))
    return Outcome(folded, code & 0xFF, full, note)


def run(cmd: str, config, *, keep=(), head: int | None = None, tail: int | None = None,
        json_mode: bool = False, show_saved: bool = True, timeout: float = TIMEOUT_SECS,
        cwd: str | None = None, raw: bool = False) -> Result:
    """The ``exec`` command: ``Result.code`` is the child's exit code.

    ``keep`` patterns are appended to ``[exec] keep``; ``head``/``tail`` override the config;
    ``raw`` (the bypass switch, ``--raw`` / ``CTXCTL_EXEC_RAW=1`` / MCP ``raw: true``) passes the
    output through byte for byte, unfolded and unnormalised, still under the timeout.
    :raises ExitError: code 1, see :func:`run_command`.
    """
    split_command(cmd)
    patterns = fold.compile_patterns(list(config.exec.keep) + list(keep))
    h = config.exec.head_lines if head is None else head
    t = config.exec.tail_lines if tail is None else tail
    outcome = run_command(cmd, patterns, h, t, config.exec.collapse_threshold, timeout, cwd, raw=raw,
                          keep_limits=(config.exec.full_output_hours, config.exec.full_output_mib))
    folded = outcome.folded
    text = folded.text.decode("utf-8", "replace")
    warnings = [w for w in (folded.warning(), outcome.note) if w]
    counter = tokens.ESTIMATED if folded.estimated else tokens.EXACT
    if json_mode:
        env = render.envelope("exec", cmd=cmd, exit_code=outcome.exit_code, compressed=text,
                              full_output=outcome.full_output, warning="; ".join(warnings) or None)
        if show_saved:
            env["saved"] = counter.saved(folded.tokens_before, folded.tokens_after)
        return Result(render.dumps(env) + "\n", outcome.exit_code, [], None)
    out = f"$ {cmd}\n"
    if text:
        out += text if text.endswith("\n") else text + "\n"
    if outcome.full_output:
        out += f"[full output: {outcome.full_output}]\n"
    if show_saved:
        out += (f"Saved ~{folded.percent}% ({counter.figure(folded.tokens_before)} -> "
                f"{render.group(folded.tokens_after)} tokens)\n")
    return Result(out, outcome.exit_code, warnings, None)
