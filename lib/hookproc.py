"""The hook process: answer the runtime fast, capture in a detached child (docs/design.md §6, §12).

Lives in ``lib/`` (not in ``hook.py``) so its bytecode is cached: the script a runtime runs is
recompiled on every start, and on the agent's path that matters. ``hook.py`` is a thin shim
around :func:`run`. Imports only builtins, ``_json`` and hook-safe ``lib`` modules on the answer
path; the capture child imports the redactor.

For a synchronous hook the runtime waits for this process, so the work is split in two (budget:
median ≤ 1.3× a bare interpreter):

1. **Answer** (the process the agent waits on): print the answer known from the event name
   (SessionStart: the cached briefing) and flush; read stdin; parse; answer what depends on the
   payload (PreToolUse on a write tool: the lease check).
   Then the process points its stdin, stdout and stderr at ``/dev/null`` (the runtime reads the
   pipes to their end, so they close before the fork, never when a child gets round to it), and
   ``hook.py`` leaves with ``os._exit`` (no interpreter teardown on the agent's path).
2. **Capture** (a detached child, forked once the answer is out, holding a shared lock on
   ``spool/.state/hooks.lock`` until it is done): map → redact → append one line per envelope
   (one ``write`` on an ``O_APPEND`` descriptor) → on session end write ``<session>.done``,
   else keep the session's runtime process (the hook's parent) and transcript path in its
   process record (:mod:`lib.idle_seal`: how syncd seals a session that never ends).
   Nothing unredacted touches disk: the payload crosses the fork in memory only.

:func:`lib.spool.wait_for_hooks` lets syncd and tests wait for in-flight captures.
``CTXLAKE_HOOK_SYNC=1`` (or a platform without ``fork``) runs both parts in one process. An
event installed async (``--async``: Claude Code does not wait for it, docs/runtimes.md) needs
no detached child: it answers ``{}`` at once and captures in its own process, holding the same
shared lock.
Any failure: one JSON line in ``$CTXLAKE_HOME/hook-errors.log``, the default answer, exit 0
(invariant 12).
"""
from __future__ import annotations


import os
import sys

MAX_STDIN = 64 << 20


def _log_error(paths, runtime: str, event: str, step: str, error) -> None:
    """Append one JSON line to hook-errors.log. When that fails (a full disk refuses the
    append), record the failure in the lost-events ledger, which needs no new block
    (:mod:`lib.lost_events`), and write the line to stderr too."""
    import time

    from lib import jsonfast

    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    event, text = _scrubbed(event), _scrubbed(text)
    line = jsonfast.dumps({"ts": ts, "runtime": runtime, "event": event, "step": step, "error": text})
    try:
        if paths is None:
            raise OSError("no CTXLAKE_HOME")
        path = paths.hook_errors
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except OSError as exc:
        if paths is not None:
            from lib import lost_events

            lost_events.record(paths.hook_lost, ts, runtime, event, step,
                               f"{text} (hook-errors.log: {exc.strerror or exc})")
        try:
            sys.stderr.write(line + "\n")
        except Exception:
            pass


def _emit(stdout, answer: dict) -> None:
    from lib import jsonfast

    stdout.write(jsonfast.dumps(answer) + "\n")
    stdout.flush()


def _read_all(stdin) -> tuple[bytes, int, bytes]:
    """``(the first MAX_STDIN bytes, total size, the last 64 KiB)``: an oversized payload is
    drained (the runtime is never left blocked on a full pipe) and kept in part
    (:func:`_partial_payload` reads its head and its tail)."""
    chunks, total, tail = [], 0, b""
    while True:
        chunk = stdin.read(1 << 20)
        if not chunk:
            break
        if total < MAX_STDIN:
            chunks.append(chunk[:MAX_STDIN - total])
        total += len(chunk)
        if total > MAX_STDIN:
            tail = (tail + chunk)[-(1 << 16):]
    return b"".join(chunks), total, tail


_KEEP = ("hook_event_name", "session_id", "conversation_id", "tool_name", "tool_use_id", "prompt_id", "cwd",
         "transcript_path", "agent_id")


def _partial_payload(raw: bytes, why: str, tail: bytes = b"") -> dict:
    """What can be kept of a payload too large or too deep to parse: the top-level identity fields
    (read from its first and last 64 KiB by pattern, standard library only), marked truncated,
    with the reason in place of the content, so the event is kept in part, never dropped
    (issue #16)."""
    import re

    head = (raw[:1 << 16] + b"\n" + (tail or raw[-(1 << 16):])).decode("utf-8", "replace")
    out: dict = {}
    for key in _KEEP:
        m = re.search(r'"' + key + r'"\s*:\s*"((?:[^"\\]|\\.){0,4096})"', head)
        if m:
            try:
                from lib import jsonfast

                out[key] = jsonfast.loads('"' + m.group(1) + '"')
            except ValueError:
                continue
    note = f"[ctxlake: payload kept in part: {why}]"
    out.update(prompt=note, tool_response=note, last_assistant_message=note, _ctxlake_truncated=why)
    return out


def _scrubbed(text) -> str:
    """``text`` through the tool rules of :func:`lib.redact.scrub`: what the hook writes outside an
    envelope (``hook-errors.log``, the unmapped-event marker's file name) comes from the payload
    too — an event name or an error quoting it is a field that reaches disk (issue #17). Never
    raises: on a redaction failure the text is replaced by its length."""
    text = text if isinstance(text, str) else str(text)
    try:
        from lib import redact

        return redact.scrub(text, is_tool_output=True)[0]
    except Exception:
        return f"[ctxlake: {len(text)} characters not shown: redaction failed]"


def _log_unmapped_once(paths, runtime: str, event: str) -> None:
    event = _scrubbed(event)
    marker = paths.unmapped_marker(runtime, event)
    try:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return
    except OSError:
        pass
    _log_error(paths, runtime, event, "map", "event not captured by ctxlake (answered with the default)")


class HookArgs:
    """``hook.py``'s arguments: ``<runtime> [<event>] [--fleet=<id>] [--agent=<id>] [--home=<dir>]
    [--async]`` (``--fleet <id>``, ``--agent <id>``, ``--home <dir>`` are accepted too). ``home``
    is the ``CTXLAKE_HOME`` ``install`` ran with when it was not the default; it wins over the
    environment's (docs/runtimes.md "Where the data goes"). ``run_async`` marks an event the
    runtime does not wait for (installed with ``"async": true``, docs/runtimes.md): capture in
    this process, no detached child, no answer computed. Unknown options are ignored, so a newer
    installer's entry never breaks an older checkout (the hook fails open)."""

    __slots__ = ("runtime", "event", "fleet_id", "agent_id", "home", "run_async")

    def __init__(self, runtime="", event="", fleet_id=None, agent_id=None, run_async=False, home=None):
        self.runtime, self.event, self.fleet_id, self.agent_id, self.run_async, self.home = \
            runtime, event, fleet_id, agent_id, run_async, home


_ARG_SLOTS = {"fleet": "fleet_id", "agent": "agent_id", "home": "home"}


def parse_argv(argv: list[str]) -> HookArgs:
    """Parse ``hook.py``'s argument list (without the program name) into :class:`HookArgs`."""
    out, positional, i = HookArgs(), [], 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--async":
            out.run_async = True
        elif a in ("--fleet", "--agent", "--home"):
            if i < len(argv):
                setattr(out, _ARG_SLOTS[a[2:]], argv[i] or None)
                i += 1
        elif a.startswith(("--fleet=", "--agent=", "--home=")):
            key, _, value = a[2:].partition("=")
            setattr(out, _ARG_SLOTS[key], value or None)
        elif not a.startswith("--"):
            positional.append(a)
    out.runtime = positional[0] if positional else ""
    out.event = positional[1] if len(positional) > 1 else ""
    return out


class _Identity:
    """Fleet and agent ids for the answer step: from the hook's arguments or the environment
    when the installer set them (no config file read), else from the full config; the lease
    policy is loaded lazily."""

    def __init__(self, env, fleet=None, agent=None):
        self.env = env
        self._cfg = None
        if not (fleet and agent):
            fleet, agent = env.get("CTXLAKE_FLEET_ID"), env.get("CTXLAKE_AGENT_ID")
        if fleet and agent and not env.get("CTXLAKE_CONFIG_FORCE"):
            self.fleet_id, self.agent_id = fleet, agent
        else:
            cfg = self.config()
            self.fleet_id, self.agent_id = cfg.fleet_id, cfg.agent_id

    def config(self):
        if self._cfg is None:
            from lib.config import ConfigError, load

            try:
                self._cfg = load(self.env)
            except ConfigError:
                self._cfg = load(self.env, path=os.devnull + ".missing")
                raise
        return self._cfg

    def policy(self, cached: str | None = None) -> str:
        """Lease policy: ``CTXLAKE_LEASE_POLICY``, else the one syncd wrote into the cached lease
        view (``cached``: its config, without importing the config machinery here), else the
        config file, else ``warn``."""
        p = self.env.get("CTXLAKE_LEASE_POLICY")
        if p in ("warn", "block"):
            return p
        if cached in ("warn", "block"):
            return cached
        try:
            return self.config().leases.policy
        except Exception:
            return "warn"


def capture(runtime: str, event: str, payload: dict, ctx, paths) -> None:
    """Map, redact and spool one payload (the capture half). Raises on failure (caller logs)."""
    from lib import adapters, envelope, jsonfast, redact, spool

    adapter = adapters.get(runtime)
    if event not in adapter.EVENTS:
        _log_unmapped_once(paths, runtime, event or "<none>")
        return
    if adapter.EVENTS[event] is None:  # deliberately answer-only (e.g. Hermes on_session_reset)
        return
    sid = adapter.session_id(payload)
    if not sid:
        raise ValueError(f"{event} payload has no session_id; event not captured")
    builder = envelope.Builder(fleet_id=ctx.fleet_id, agent_id=ctx.agent_id, runtime=runtime, session_id=sid,
                               runtime_version=getattr(adapter, "runtime_version", lambda p: None)(payload))
    envelopes = adapter.to_envelopes(event, payload, builder, ctx)
    if payload.get("_ctxlake_truncated"):
        for env_ in envelopes:
            env_["truncated"] = True
    target = paths.session_spool(runtime, sid)
    for env_ in envelopes:
        try:
            spool.append(target, envelope.dumps(env_))
        except spool.SpoolFull as exc:
            _log_error(paths, runtime, event, "spool", f"dropped 1 event ({env_['event_type']}): {exc}")
    for rec in builder.quarantine:
        try:
            spool.append(paths.quarantine_spool_file(ctx.fleet_id), jsonfast.dumps(rec) + "\n")
        except spool.SpoolFull as exc:
            _log_error(paths, runtime, event, "quarantine", exc)
    done = adapter.done_marker(event, payload)
    transcript = getattr(adapter, "transcript_path", None)
    environ = ctx.environ if ctx.environ is not None else os.environ
    if done is not None and transcript is not None and "transcript_path" not in done:
        named = transcript(payload, environ)  # Hermes: its state.db
        if named:
            done["transcript_path"] = named
    if done is not None:
        # the marker is on disk too: its transcript path (HOME, the cwd's slug, the session id)
        # gets the rules of cwd, which its parts are stored under already; the entropy rule of
        # tool paths would cut a temporary directory's name and lose the transcript backstop
        done = {k: redact.scrub(v, is_tool_output=False)[0] if isinstance(v, str) else v for k, v in done.items()}
        spool.atomic_write(paths.session_done(runtime, sid), jsonfast.dumps(done).encode())
    elif any(e["event_type"] == "session_start" for e in envelopes):
        # a resumed session is open again: a stale end marker would let syncd seal it and delete
        # the lines this session is about to write
        try:
            os.unlink(paths.session_done(runtime, sid))
        except FileNotFoundError:
            pass
    if done is None and transcript is not None:
        # the runtime's process and transcript, so syncd can seal the session if it never ends
        from lib import idle_seal
        from lib.paths import safe_segment

        idle_seal.record(paths.session_process(runtime, safe_segment(sid)), ctx.runtime_pid,
                         transcript(payload, environ),
                         scrub=lambda text: redact.scrub(text, is_tool_output=False)[0])


def _detach_capture(runtime, event, payload, ctx, paths) -> bool:
    """Fork a detached child that runs :func:`capture`; True when the child took the work."""
    if not hasattr(os, "fork"):
        return False
    import fcntl

    lock_path = paths.hooks_lock
    os.makedirs(paths.state_dir, exist_ok=True)
    lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_SH)  # inherited by the child; syncd's LOCK_EX waits for it
    pid = os.fork()
    if pid:
        os.close(lock_fd)
        return True
    code = 0
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        try:
            capture(runtime, event, payload, ctx, paths)
        except Exception as exc:
            _log_error(paths, runtime, event, "capture", exc)
    except BaseException:
        code = 0
    finally:
        os._exit(code)


def _owned_by_sync_hook(adapter, event: str, payload: dict) -> bool:
    """True when the runtime also runs a synchronous hook of ours for this call (the adapter's
    ``SYNC_EVENTS``), which captures it: the async hook then leaves it alone (one capture)."""
    sync = getattr(adapter, "SYNC_EVENTS", {})
    if event not in sync:
        return False
    tools = sync[event]
    return tools is None or payload.get("tool_name") in tools


def _capture_locked(runtime, event, payload, ctx, paths) -> None:
    """:func:`capture` in this process, holding ``hooks.lock`` shared like a detached child."""
    import fcntl

    os.makedirs(paths.state_dir, exist_ok=True)
    lock_fd = os.open(paths.hooks_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_SH)
        capture(runtime, event, payload, ctx, paths)
    finally:
        os.close(lock_fd)


def _release_stdio() -> None:
    """Point fds 0, 1 and 2 at ``/dev/null``: the runtime reads the hook's stdout and stderr to
    their end, so once the answer is out nothing of this process or its capture child may keep
    those pipes open (a child not yet scheduled to close them would hold the agent)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def run(argv: list[str], stdin, stdout, environ=None, detach: bool | None = None, release_stdio: bool = False) -> int:
    """Handle one hook invocation (``argv`` as :func:`parse_argv` reads it); ``stdin`` binary,
    ``stdout`` text. Always returns 0.

    ``detach`` (default: fork available and ``CTXLAKE_HOOK_SYNC`` unset) runs the capture half
    in a detached child after the answer is out. With ``--async`` (the runtime does not wait)
    nothing is detached: the answer is ``{}`` at once and the capture runs in this process.
    ``release_stdio`` (``hook.py``: this process is the hook) closes the runtime's pipes before
    the capture child is forked (:func:`_release_stdio`).
    """
    args = parse_argv(argv)
    runtime, event_arg = args.runtime, args.event
    env = os.environ if environ is None else environ
    if args.home:
        env = dict(env, CTXLAKE_HOME=args.home)
    if detach is None:
        detach = not env.get("CTXLAKE_HOOK_SYNC")
    if args.run_async:
        detach = False
    paths = None
    answered = False
    step = "config"
    event = event_arg
    try:
        from lib import adapters, jsonfast
        from lib.paths import Paths

        paths = Paths.from_env(env)
        ident = _Identity(env, args.fleet_id, args.agent_id)
        step = "adapter"
        adapter = adapters.get(runtime)
        ctx = adapters.HookContext(paths, ident.fleet_id, ident.agent_id, ident.policy,
                                   runtime_pid=os.getppid(), environ=env)
        if args.run_async:  # nobody reads this answer: say nothing that could reach the model
            _emit(stdout, {})
            answered = True
        elif event_arg:
            early = adapter.answer_before_payload(event_arg, ctx)
            if early is not None:
                _emit(stdout, early)
                answered = True
        step = "read"
        raw, size, tail = _read_all(stdin)
        if not raw.strip():
            raise ValueError("empty stdin: no hook payload")
        if size > MAX_STDIN:
            payload = _partial_payload(raw, f"{size} bytes, over the {MAX_STDIN}-byte limit", tail)
        else:
            try:
                payload = jsonfast.loads(raw)
            except RecursionError:
                payload = _partial_payload(raw, "nested deeper than the JSON parser's limit")
            except (ValueError, UnicodeDecodeError) as exc:
                raise ValueError(f"hook payload is not valid JSON ({exc})") from None
        if not isinstance(payload, dict):
            raise ValueError("hook payload is not a JSON object")
        name = payload.get("hook_event_name")
        event = name if isinstance(name, str) and name else event_arg
        step = "answer"
        if not answered:
            _emit(stdout, adapter.answer(event, payload, ctx))
            answered = True
        step = "capture"
        if args.run_async:
            if not _owned_by_sync_hook(adapter, event, payload):
                _capture_locked(runtime, event, payload, ctx, paths)
            return 0
        if detach and release_stdio:
            stdout.flush()
            _release_stdio()
        if detach and _detach_capture(runtime, event, payload, ctx, paths):
            return 0
        capture(runtime, event, payload, ctx, paths)
    except Exception as exc:  # fail open: log, answer the default, exit 0
        _log_error(paths, runtime, event, step, exc)
        if not answered:
            try:
                _emit(stdout, {})
            except Exception:
                pass
    return 0
