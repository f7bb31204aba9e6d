"""One error style for every CLI and daemon entry point (docs/operations.md "Exit codes").

A failure is one line on stderr — ``<prog>: <what failed>: <why>; <what fixes it>`` — and an exit
code that names its kind, so a script can branch on it without parsing text. A traceback is
printed only with ``--debug`` (or ``CTXLAKE_DEBUG=1``). No message prints a destructive command
to copy.

=====  ============  ==========================================================================
code   kind          meaning
=====  ============  ==========================================================================
0      ok            done
1      refused       the request was understood and refused by state: a lease is held, a file
                     would be clobbered, the store cannot do what the command needs
2      usage         a bad command line or a bad input file/argument; nothing was changed
3      config        the ctxlake config file is missing where required, unreadable or invalid
4      store         the store cannot be reached, refused the credentials, or has no bucket
5      dependency    a Python package or a server the command needs is missing
6      disk          the local disk refused a write: full, over quota, a file size limit,
                     read-only (``ENOSPC``, ``EDQUOT``, ``EFBIG``, ``EROFS``; SQLite's FULL
                     and IOERR, which is how a refused write reaches it)
70     internal      a bug: an exception nobody anticipated (``--debug`` shows where)
=====  ============  ==========================================================================

Standard library only: the hook path never imports it, but the CLI does before anything else.
"""
from __future__ import annotations

import os
import sys

EXIT_CODES = {"ok": 0, "refused": 1, "usage": 2, "config": 3, "store": 4, "dependency": 5, "disk": 6, "internal": 70}
"""Kind of failure → process exit code (stable: scripts branch on these)."""


class Failure(Exception):
    """A failure the user can act on: ``kind`` (a key of :data:`EXIT_CODES`) and one ``message``
    saying what failed, why and what fixes it. ``code`` is the exit code."""

    def __init__(self, kind: str, message: str):
        if kind not in EXIT_CODES or kind == "ok":
            raise ValueError(f"unknown failure kind {kind!r}")
        self.kind = kind
        self.code = EXIT_CODES[kind]
        super().__init__(message)


def classify(exc: BaseException) -> Failure:
    """The :class:`Failure` for any exception that escapes a command.

    Known library errors map to their kind (config → 3, store → 4, missing package → 5, a
    runtime file left untouched → 1); anything else is ``internal`` (70) with a pointer to
    ``--debug``.
    """
    if isinstance(exc, Failure):
        return exc
    from lib.config import ConfigError

    if isinstance(exc, ConfigError):
        return Failure("config", f"{exc}")
    try:
        from lib.store import StoreError
    except ImportError:  # pragma: no cover - lib.store is part of the checkout
        StoreError = ()  # type: ignore[assignment]
    if StoreError and isinstance(exc, StoreError):
        return Failure("store", f"{exc}")
    if isinstance(exc, ModuleNotFoundError):
        return Failure("dependency", f"the Python package {exc.name!r} is not installed; "
                                     "run `make venv` (or `pip install -r requirements.txt`) in the checkout")
    from lib.install import InstallError

    if isinstance(exc, InstallError):
        return Failure("refused", str(exc))
    if isinstance(exc, KeyboardInterrupt):
        return Failure("refused", "interrupted")
    disk = disk_refusal(exc)
    if disk and "(EROFS)" in disk:  # nothing to free: the filesystem takes no writes at all
        return Failure("disk", f"the local disk refused an operation: {disk}; that path is read-only: mount it "
                               "writable, or point CTXLAKE_HOME (or CTXLAKE_SPOOL_DIR / CTXLAKE_CACHE_DIR) at a "
                               "writable folder, and run again")
    if disk:
        return Failure("disk", f"the local disk refused an operation: {disk}; free space on the filesystem of CTXLAKE_HOME "
                               "(or raise its quota or file size limit) and run again")
    return Failure("internal", f"unexpected {type(exc).__name__}: {str(exc)[:300]}; "
                               "run again with --debug for the traceback and report it")


_DISK_ERRNOS = ("ENOSPC", "EDQUOT", "EFBIG", "EROFS")
_SQLITE_DISK = {10: "disk I/O error", 13: "database or disk is full"}  # SQLITE_IOERR, SQLITE_FULL (primary codes)


def disk_refusal(exc: BaseException) -> str | None:
    """Why the local disk refused a write, when ``exc`` (or an exception it was raised from) is
    an ``OSError`` with one of :data:`_DISK_ERRNOS` or a ``sqlite3`` error whose primary result
    code is SQLITE_IOERR or SQLITE_FULL (https://www.sqlite.org/rescode.html); else ``None``."""
    import errno

    codes = {getattr(errno, name) for name in _DISK_ERRNOS if hasattr(errno, name)}
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in codes:
            return f"{os.strerror(exc.errno)} ({errno.errorcode[exc.errno]})" + (f" at {exc.filename}" if exc.filename else "")
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and (code & 0xFF) in _SQLITE_DISK:
            return f"SQLite: {exc}"
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def debug_requested(argv: list[str], environ=None) -> tuple[bool, list[str]]:
    """``(debug, argv without --debug)``: ``--debug`` anywhere on the line, or ``CTXLAKE_DEBUG=1``."""
    env = os.environ if environ is None else environ
    rest = [a for a in argv if a != "--debug"]
    return len(rest) != len(argv) or env.get("CTXLAKE_DEBUG") == "1", rest


PROG_ENV = "CTXLAKE_PROG"
"""Set by ``ctxlake`` when it hands a verb to a role script's process (``ctxlake sync`` runs
``syncd.py``): the name that script's one-line errors give the command."""


def prog_name(default: str, environ=None) -> str:
    """The command name for errors: :data:`PROG_ENV` (removed, so the role's own children do not
    inherit it), else ``default``."""
    env = os.environ if environ is None else environ
    return env.pop(PROG_ENV, None) or default


def run(prog: str, fn, argv: list[str], stderr=None) -> int:
    """Run ``fn(argv) -> int`` and turn any escaping exception into one line on ``stderr``
    (default ``sys.stderr``) and its exit code; with ``--debug`` the traceback follows.
    ``SystemExit`` (argparse) passes through unchanged. A closed stdout (``| head``) ends quietly
    with :data:`SIGPIPE_EXIT`, as a tool killed by SIGPIPE does."""
    err = stderr or sys.stderr
    debug, argv = debug_requested(argv)
    if debug:  # nested entry points (ctxlake maint → maint.main) see it too
        os.environ["CTXLAKE_DEBUG"] = "1"
    try:
        code = fn(argv)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at interpreter exit
        return code
    except SystemExit:
        raise
    except BrokenPipeError:
        return _stdout_closed()
    except BaseException as exc:  # noqa: BLE001 - the one place every failure is reported
        failure = classify(exc)
        err.write(f"{prog}: {' '.join(str(failure).split())}\n")
        if debug:
            import traceback

            traceback.print_exception(exc, file=err)
        return failure.code


SIGPIPE_EXIT = 141
"""Exit code when the reader of stdout went away: 128 + SIGPIPE (13), what a shell reports for
a C tool the signal ended (https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
CLOSED_PIPE = SIGPIPE_EXIT
"""The same code under the name the CLI tests use."""


def bounded_int(lo: int, hi: int, unit: str = ""):
    """An argparse ``type=`` for a whole number in ``[lo, hi]``: anything else (``x``, ``1.5``,
    ``0``, a number too large for SQLite or a timestamp) is a usage error naming the range, so
    no verb ever sees an out-of-range value (``sessions --limit``, ``lease acquire --ttl``)."""

    def parse(text: str) -> int:
        import argparse  # only where a parser already runs (see Parser below)

        try:
            value = int(text, 10)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be a whole number{unit} from {lo} to {hi}, got {text[:40]!r}")
        return value

    parse.__name__ = "whole number"
    return parse


def _stdout_closed() -> int:
    """Point fd 1 at ``/dev/null`` so the interpreter's final flush cannot raise again; returns
    :data:`SIGPIPE_EXIT`."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is no file (replaced in-process)
        pass
    return SIGPIPE_EXIT


def _parser_class():
    import argparse

    class Parser(argparse.ArgumentParser):
        """argparse with one-line errors: a bad command line raises :class:`Failure` (``usage``,
        exit 2) naming the fix, instead of printing the usage block and a second line."""

        def error(self, message):
            raise Failure("usage", f"{message}; see `{self.prog} --help`")

    Parser.__qualname__ = "Parser"
    return Parser


def __getattr__(name):
    """``Parser`` is built on first use: ``argparse`` (and ``re``) stay out of a command line
    that never needs them (ctxctl's fast path, docs/ctxctl.md)."""
    if name == "Parser":
        globals()["Parser"] = cls = _parser_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
