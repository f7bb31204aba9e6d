"""Typed configuration, loaded once per process and passed down (docs/design.md §3, docs/design.md §14).

Sources, lowest to highest precedence:

1. defaults — store ``file://$CTXLAKE_HOME/lake``, fleet ``default``, agent id = host name;
2. the TOML file ``$CTXLAKE_CONFIG``, else ``$XDG_CONFIG_HOME/ctxlake/ctxlake.toml``, else
   ``~/.config/ctxlake/ctxlake.toml``;
3. the environment: ``CTXLAKE_STORE``, ``CTXLAKE_FLEET_ID``, ``CTXLAKE_AGENT_ID``,
   ``CTXLAKE_LIVE_STORE``.

The file holds names of environment variables, never secrets (invariant 11). Standard library
only (the hook loads it); ``tomllib`` is imported only when a file exists.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from lib.paths import Paths, config_file_path


class ConfigError(ValueError):
    """The config file exists but cannot be parsed, holds a value of the wrong type or a key
    ctxlake does not know (a typo must never fall back silently to a default)."""


TOP_KEYS = ("store", "fleet_id", "agent_id", "live_store", "summarize", "leases", "sync", "lake")
"""Every key the top level of ``ctxlake.toml`` may hold (docs/operations.md "Every knob")."""
SUMMARIZE_KEYS = ("mode",)


def _unknown(path: str, where: str, keys, known) -> None:
    """:raises ConfigError: naming the first key of ``keys`` not in ``known``, with the closest
    known spelling (``poll_sec`` → ``poll_secs``)."""
    for key in keys:
        if key not in known:
            import difflib  # only on the error path: the hook loads the config on every event

            near = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"known: {', '.join(known)}"
            raise ConfigError(f"{path}: unknown key {where}{key!r} ({hint}); fix or remove it")


def store_url(value: str, cwd: str | None = None) -> str:
    """The store URL to save for ``value`` (``ctxlake init --store``): ``file://~/x`` and a
    relative ``file://lake`` become absolute (against ``cwd``, default the current directory),
    so every working directory sees one lake; ``s3://``, ``memory://`` pass unchanged.

    :raises ConfigError: a plain path or an unknown scheme, with the URL to write instead.
    """
    if value.startswith("file://"):
        raw = value[len("file://"):]
        if raw.startswith("localhost/"):
            raw = raw[len("localhost"):]
        raw = os.path.expanduser(raw)
        return "file://" + os.path.normpath(os.path.join(cwd or os.getcwd(), raw))
    if value.startswith(("s3://", "memory://")):
        return value
    if "://" not in value:
        absolute = os.path.normpath(os.path.join(cwd or os.getcwd(), os.path.expanduser(value)))
        raise ConfigError(f"store {value!r} is a path, not a URL; write --store file://{absolute}")
    raise ConfigError(f"store {value!r} has an unsupported scheme; use file:///abs/path or s3://bucket/prefix")


def check_store(path: str, key: str, url: str) -> None:
    """:raises ConfigError: ``url`` (the value of ``key`` in ``path``: a config file, a variable
    or a flag) is a ``file://`` URL with an empty or relative path: each working directory would
    get its own lake, ``file://`` alone the current directory's."""
    if url.startswith("file://") and not url[len("file://"):].strip():
        raise ConfigError(f"{path + ': ' if path else ''}{key} {url!r} names no folder, so the current directory would be the lake; "
                          "write an absolute file:///path")
    if url.startswith("file://") and not url.startswith(("file:///", "file://~")):
        raise ConfigError(f"{path + ': ' if path else ''}{key} {url!r} is relative, so every working directory would get its own "
                          f"lake; write an absolute file:///path (ctxlake init does)")


@dataclass(frozen=True)
class LeaseConfig:
    """Advisory leases (docs/design.md §9)."""

    policy: str = "warn"
    """``warn`` tells the agent who holds a path; ``block`` denies the tool call. Warn is the
    default because leases are advisory: git, not ctxlake, arbitrates code."""
    ttl_secs: int = 300
    """Lease lifetime in seconds, judged by the store clock; renewed every ttl/5."""


@dataclass(frozen=True)
class SyncConfig:
    """syncd intervals and batch sizes (docs/design.md §9, §12)."""

    poll_secs: float = 5.0
    """Seconds between passes of ``syncd`` (spool → store → cache)."""
    heartbeat_secs: int = 60
    """Heartbeat rewrite interval while an agent has an open session."""
    roster_secs: int = 60
    """Minimum seconds between roster rebuilds (plus jitter)."""
    presence_ttl_secs: int = 300
    """Heartbeats older than this by the store clock are dropped from every view."""
    batch_rows: int = 20000
    """Envelopes per Parquet segment at most: bounds syncd memory on a large backlog."""
    maint_every_secs: int = 300
    """On a laptop with no cluster, syncd runs one maintenance pass this often (0 = never)."""
    session_idle_secs: int = 1800
    """A session whose spool has not been written for this long is not presence (no heartbeat,
    its leases are not renewed) until it writes again: a crashed runtime that never sent
    SessionEnd must not look active forever."""
    idle_seal_secs: int = 1800
    """A session that never sent its end event (its runtime was killed, the laptop died) is
    sealed once no hook wrote to it for this long and its runtime process is gone or cannot be
    checked (:mod:`lib.idle_seal`; 0 = never). A resumed session is sealed again at its end."""
    metrics_port: int = 0
    """TCP port of syncd's ``/healthz``, ``/readyz`` and Prometheus ``/metrics`` (0 = off). Off by
    default because a laptop needs no scrape target; the Helm chart turns it on. Loop mode only:
    ``syncd --once`` never opens it."""
    metrics_addr: str = "127.0.0.1"
    """Address the metrics server binds to. Loopback by default, so a laptop exposes nothing; the
    chart binds ``0.0.0.0`` so the kubelet's probes and Prometheus reach the pod."""
    liveness_stall_secs: int = 600
    """``/healthz`` fails once syncd's loop has shown no sign of life (no pass started or
    finished, no log event) for this many seconds. Generous because one pass over a large
    backlog logs every segment, so a slow store does not look like a wedged loop."""


@dataclass(frozen=True)
class LakeConfig:
    """The compacted lake (a Delta table per fleet) and what maint deletes (docs/lake.md,
    "Retention", which gives the safety argument for each default)."""

    vacuum_hours: int = 168
    """Table files a newer commit replaced are deleted this many hours after they stopped being
    referenced: the longest query (or time travel) against an old version that keeps working.
    Delta's own default, 7 days."""
    bronze_grace_hours: int = 72
    """A bronze segment is deleted this long after the commit that merged it into the table
    (0 = keep bronze forever). Its rows are in the table by then; the grace leaves time to
    notice a bad commit and re-merge from bronze."""
    snapshot_keep_hours: int = 24
    """Superseded snapshot blobs older than this are deleted; the current blob and the one before
    it are always kept (a syncd mid-download still finds its blob)."""
    checkpoint_every: int = 10
    """A Delta checkpoint every this many commits, so readers replay at most this many JSON
    commit files."""
    log_retention_days: int = 30
    """Delta log entries (commit JSON files) older than this and older than the newest checkpoint
    are deleted after a checkpoint: the horizon of time travel."""


@dataclass(frozen=True)
class Config:
    """Everything a role needs, resolved. Build it with :func:`load`.

    ``store`` is a URL (``file://...`` or ``s3://bucket/prefix``); ``summarize_mode`` is
    ``none | agent | shadow`` (docs/design.md §10); ``source`` names the file read, or ``None``.
    """

    paths: Paths
    store: str
    fleet_id: str = "default"
    agent_id: str = "agent"
    summarize_mode: str = "agent"
    leases: LeaseConfig = field(default_factory=LeaseConfig)
    sync: SyncConfig = field(default_factory=SyncConfig)
    lake: LakeConfig = field(default_factory=LakeConfig)
    source: str | None = None
    configured: bool = False
    """True when a config file was read or ``CTXLAKE_FLEET_ID``/``CTXLAKE_STORE`` is set: else
    every value is a default, and commands that would bake one in (``install``) refuse."""
    warnings: tuple = ()
    """One line each (no prefix) about the file that is not an error: a store URL holding a
    password (the file never should: docs/security.md); printed by :func:`startup_notes`."""
    live_store: str | None = None
    """Backend for the live plane (``live/`` keys: heartbeats, roster, leases), e.g.
    ``redis://host:6379/0``; ``None`` keeps it on ``store``. The documented path past ~50
    concurrently active agents (docs/design.md §8)."""


def default_agent_id() -> str:
    """The short host name (``hostname -s``), or ``agent`` when it cannot be read.

    Read with ``os.uname()`` (the same value ``gethostname`` returns on POSIX), so loading the
    config never imports ``socket``: the hook and the MCP server stay visibly off the network.
    """
    try:
        name = os.uname().nodename.split(".")[0]
    except (AttributeError, OSError):  # no uname (Windows): fall back to the socket module
        import socket

        try:
            name = socket.gethostname().split(".")[0]
        except OSError:
            name = ""
    return name or "agent"


def _section(data: dict, name: str, cls, path: str):
    raw = data.get(name, {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    known = {f for f in cls.__dataclass_fields__}
    kwargs = {}
    _unknown(path, f"[{name}] ", raw, sorted(known))
    for key, value in raw.items():
        default = getattr(cls(), key)
        if isinstance(default, bool) or not isinstance(value, (type(default), int) if isinstance(default, float) else type(default)):
            raise ConfigError(f"{path}: [{name}] {key} must be {type(default).__name__}, got {value!r}")
        kwargs[key] = value
    return cls(**kwargs)


def load(environ=None, path: str | None = None, strict: bool = False) -> Config:
    """Resolve the configuration.

    :param environ: mapping to read (default ``os.environ``); nothing deeper reads it.
    :param path: explicit file (default :func:`config_file_path`).
    :param strict: a ``CTXLAKE_CONFIG`` that names no file is an error (the ``ctxlake`` verbs:
        a user who set the path meant that file); else it reads as no file (the hook, the
        daemons and the MCP server fail open).
    :raises ConfigError: the file exists but is not valid TOML or has wrong types; with
        ``strict``, ``CTXLAKE_CONFIG`` names a file that does not exist. A missing file at the
        default place is not an error.
    """
    env = os.environ if environ is None else environ
    paths = Paths.from_env(env)
    path = path or config_file_path(env)
    data: dict = {}
    source = None
    if strict and env.get("CTXLAKE_CONFIG") and not os.path.exists(path):
        raise ConfigError(f"CTXLAKE_CONFIG names {path}, which does not exist; create it with `ctxlake init` "
                          "or unset CTXLAKE_CONFIG to use the default place")
    if os.path.exists(path):
        import tomllib

        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except UnicodeDecodeError as exc:  # TOML is UTF-8 (toml.io); a binary or Latin-1 file is invalid TOML
            raise ConfigError(f"cannot read config {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8 "
                              "or rewrite it with `ctxlake init`") from exc
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        source = path
    _unknown(path, "", data, TOP_KEYS)
    for key in ("store", "fleet_id", "agent_id", "live_store"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{path}: {key} must be a string")
    if data.get("store"):
        check_store(path, "store", data["store"])
    summarize = data.get("summarize", {})
    if not isinstance(summarize, dict):
        raise ConfigError(f"{path}: [summarize] must be a table")
    _unknown(path, "[summarize] ", summarize, SUMMARIZE_KEYS)
    mode = summarize.get("mode", "agent")
    if mode not in ("none", "agent", "shadow"):
        raise ConfigError(f"{path}: [summarize] mode must be none|agent|shadow, got {mode!r}")
    sync = _section(data, "sync", SyncConfig, path)
    if not 0 <= sync.metrics_port <= 65535:
        raise ConfigError(f"{path}: [sync] metrics_port must be 0 (off) or a TCP port, got {sync.metrics_port}")
    leases = _section(data, "leases", LeaseConfig, path)
    if leases.policy not in ("warn", "block"):
        raise ConfigError(f"{path}: [leases] policy must be warn|block, got {leases.policy!r}")
    lake = _section(data, "lake", LakeConfig, path)
    for name in ("vacuum_hours", "bronze_grace_hours", "snapshot_keep_hours", "log_retention_days"):
        if getattr(lake, name) < 0:
            raise ConfigError(f"{path}: [lake] {name} must be >= 0, got {getattr(lake, name)}")
    if lake.checkpoint_every < 1:
        raise ConfigError(f"{path}: [lake] checkpoint_every must be >= 1, got {lake.checkpoint_every}")
    from lib.sanitize import has_url_password

    warnings = tuple(f"{path}: {key} holds a password in its URL, and the config file is meant to hold no secret; "
                     f"remove it from the URL and export REDIS_PASSWORD instead (docs/security.md)"
                     for key in ("store", "live_store") if has_url_password(data.get(key)))
    cfg = Config(
        warnings=warnings,
        paths=paths,
        store=data.get("store") or paths.default_store_url,
        fleet_id=data.get("fleet_id") or "default",
        agent_id=data.get("agent_id") or default_agent_id(),
        summarize_mode=mode,
        leases=leases,
        sync=sync,
        lake=lake,
        source=source,
        configured=source is not None or bool(env.get("CTXLAKE_FLEET_ID") or env.get("CTXLAKE_STORE")),
        live_store=data.get("live_store") or None,
    )
    overrides = {}
    for var, key in (("CTXLAKE_STORE", "store"), ("CTXLAKE_FLEET_ID", "fleet_id"), ("CTXLAKE_AGENT_ID", "agent_id"),
                     ("CTXLAKE_LIVE_STORE", "live_store")):
        if env.get(var):
            overrides[key] = env[var]
    if "store" in overrides:
        check_store("CTXLAKE_STORE", "store", overrides["store"])
    if env.get("CTXLAKE_LEASE_POLICY") in ("warn", "block"):
        overrides["leases"] = replace(cfg.leases, policy=env["CTXLAKE_LEASE_POLICY"])
    return replace(cfg, **overrides) if overrides else cfg


def startup_notes(cfg: Config, prog: str = "ctxlake") -> str:
    """The stderr lines every command but ``init`` and ``demo`` prints before its work: before
    init, one note that it runs on the defaults (which fleet and store; ``ctxlake init`` chooses
    them: docs/operations.md "Exit codes and error lines"), and one warning per
    :attr:`Config.warnings`. ``""`` when there is nothing to say."""
    lines = [f"{prog}: warning: {w}\n" for w in cfg.warnings]
    if not cfg.configured:
        lines.insert(0, f"{prog}: note: no config at {config_file_path()}: fleet 'default', store {cfg.store}; "
                        "`ctxlake init` chooses them\n")
    return "".join(lines)


def render_toml(store: str, fleet_id: str, agent_id: str | None = None) -> str:
    """Text of a fresh ``ctxlake.toml`` for ``ctxlake init`` (no secrets, ever).

    Values are quoted by a TOML serializer (``tomli_w``), so any string — a ``"``, a ``\\``, a
    control character, a character outside the Basic Multilingual Plane — reads back as itself
    with ``tomllib`` (``tests/cli/test_config_toml.py``).
    """
    import tomli_w

    top = {"store": store, "fleet_id": fleet_id}
    if agent_id:
        top["agent_id"] = agent_id
    header = ("# ctxlake configuration (docs/design.md §3). Environment wins: CTXLAKE_STORE, CTXLAKE_FLEET_ID, "
              "CTXLAKE_AGENT_ID.\n"
              "# Credentials are never stored here: S3 uses boto3's normal chain (env, profile, IRSA).\n")
    body = tomli_w.dumps({**top, "summarize": {"mode": "agent"}, "leases": {"policy": "warn", "ttl_secs": 300}})
    return header + body


def invisible_characters(value: str) -> list:
    """The code points of ``value`` in Unicode's "Other" categories (``Cc`` controls such as ESC
    and BEL, ``Cf`` formats such as zero-width spaces and bidi overrides, ``Co``/``Cs``/``Cn``),
    spelled ``U+001B``, without repeats, in order of first use. ``init`` refuses a fleet or agent
    id holding one: the id is printed on other hosts' terminals and rendered into briefings
    (docs/security.md, "Terminal output"); ``[]`` when there is none."""
    import unicodedata

    seen = []
    for ch in value:
        code = f"U+{ord(ch):04X}"
        if unicodedata.category(ch).startswith("C") and code not in seen:
            seen.append(code)
    return seen


def init(args, cfg, out) -> int:
    """``ctxlake init --store URL --fleet F [--agent-id A] [--force]``: write the config file
    (:func:`render_toml`, no secrets) after proving the store with a real write and read back of
    the fleet marker; the URL is saved absolute (:func:`store_url`). ``cfg`` is the config in
    force (an existing file with another fleet or store is replaced only with ``--force``).
    Writes what it did and the next step to ``out``; returns the exit code.
    :raises lib.failures.Failure: ``usage`` (a bad URL, an empty fleet), ``refused`` (a config
    exists), ``store`` (the write or read back failed: nothing saved)."""
    import json
    import time

    from lib import install, keys
    from lib.failures import Failure
    from lib.store import CREATE, PreconditionFailed, StoreError, open_store

    try:
        url = store_url(args.store)
    except ConfigError as exc:
        raise Failure("usage", f"init: {exc}") from None
    if not args.fleet.strip():
        raise Failure("usage", "init: --fleet is empty; name the fleet every host of the team shares")
    for flag, value in (("--fleet", args.fleet), ("--agent-id", args.agent_id)):
        bad = invisible_characters(value or "")
        if bad:
            raise Failure("usage", f"init: {flag} holds {', '.join(bad)}, a control or invisible character that "
                                   "would reach other hosts' terminals and briefings; choose a name without it")
    try:
        store = open_store(url)
    except ValueError as exc:
        raise Failure("usage", f"init: {exc}") from None
    path = config_file_path()
    text = render_toml(url, args.fleet, args.agent_id)
    old = _read_text(path)
    if old is not None and old != text and not args.force:
        raise Failure("refused", f"init: {path} already exists (fleet {cfg.fleet_id}, store {cfg.store}); "
                                 "pass --force to replace it, then run `ctxlake install` again so the hooks speak "
                                 "the new fleet")
    try:
        key = keys.fleet_marker_key(args.fleet)
        body = json.dumps({"fleet_id": args.fleet, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode()
        try:
            store.put(key, body, CREATE)
        except PreconditionFailed:
            pass
        store.get(key)
    except (StoreError, OSError) as exc:
        raise Failure("store", f"init: the store {url} failed a write and read back: {exc}; "
                               "nothing was saved, fix it and run init again") from None
    os.makedirs(os.path.dirname(path), exist_ok=True)
    from lib.spool import atomic_write

    atomic_write(path, text.encode(), mode=0o644)
    out.write(f"wrote {path}\nstore {store.url} is writable and readable (fleet {args.fleet})\n")
    installed = install.installed_identities()
    stale = sorted({f for f, _ in installed.values()} - {args.fleet})
    if stale:
        out.write(f"note: installed hooks still speak fleet {', '.join(stale)}; run `ctxlake install --all` again\n")
    out.write("next: ctxlake install --all   (hooks + MCP), then: ctxlake sync\n")
    return 0


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None
