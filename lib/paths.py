"""Every local path ctxlake uses, resolved in one place (docs/design.md §3).

Layout under ``CTXLAKE_HOME`` (default ``~/.ctxlake``)::

    spool/<runtime>/<session_id>.ndjson[.<n>]   hook output, one envelope per line
    spool/<runtime>/<session_id>.done           session ended marker (JSON)
    spool/mcp/<fleet_id>.ndjson[.<n>]            MCP write-tool records
    spool/.state/                               upload watermarks (keyed by dev:inode)
    spool/.state/live/<fleet_id>.json           syncd's live-plane state
    cache/<fleet_id>/{roster,leases,briefing}.json, snapshot.bin
    cache/<fleet_id>/snapshot.bin.vectors          the snapshot's vector index, mappable
    hook-errors.log, hook-lost.bin              hook failures; losses on a full disk

Nothing else in the project joins these names; callers ask this module. Standard library
only: the hook imports it.
"""
from __future__ import annotations

import os

RUNTIMES = ("claude_code", "cursor", "hermes", "import")
MCP_CONSUMERS = ("leases", "claims", "handoffs")
"""syncd's consumers of the MCP spool, each with its own offsets (:meth:`Paths.mcp_consumer_state`):
lease requests and releases (:mod:`lib.live.sync`), proposals and handoffs (``syncd.py``). A file
is reclaimed once all of them have read it to its end."""
_SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def safe_segment(value: str) -> str:
    """Return ``value`` usable as one path segment or key segment (docs/design.md §4).

    Characters outside ``[A-Za-z0-9._-]`` are percent-encoded (UTF-8 bytes), and the
    segments ``.``/``..`` and the empty string are encoded so they can never walk a tree.

    >>> safe_segment("a b/c")
    'a%20b%2Fc'
    """
    if value in ("", ".", ".."):
        return "".join("%%%02X" % b for b in value.encode()) or "%00"
    if _SAFE_CHARS.issuperset(value):
        return value
    out = []
    for ch in value:
        if ch in _SAFE_CHARS:
            out.append(ch)
        else:
            out.extend("%%%02X" % b for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def hooks_lock_path(state_dir: str) -> str:
    """``<state_dir>/hooks.lock``: the lock every detached hook capture holds shared while it
    appends, and ``lib.spool.wait_for_hooks`` takes exclusively to wait for them."""
    return os.path.join(state_dir, "hooks.lock")


def snapshot_pointer_path(snapshot_path: str) -> str:
    """``<snapshot>.pointer.json``: the pointer record kept beside a cached snapshot."""
    return snapshot_path + ".pointer.json"


def snapshot_vectors_path(snapshot_path: str) -> str:
    """``<snapshot>.vectors``: the snapshot's vector index as a mappable file (:mod:`lib.memory.vector_file`),
    written beside the cached snapshot by syncd."""
    return snapshot_path + ".vectors"


def config_file_path(environ=None) -> str:
    """Where the config file is looked for (it may not exist): ``$CTXLAKE_CONFIG``, else
    ``$XDG_CONFIG_HOME/ctxlake/ctxlake.toml``, else ``~/.config/ctxlake/ctxlake.toml``."""
    env = os.environ if environ is None else environ
    if env.get("CTXLAKE_CONFIG"):
        return os.path.expanduser(env["CTXLAKE_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "ctxlake", "ctxlake.toml")


class HomeError(ValueError):
    """No directory to put ``~/.ctxlake`` in: ``HOME`` is empty or relative and the password
    database gives none either (or gives ``/``)."""


def user_home(environ) -> str:
    """The user's home directory: ``HOME`` when it is an absolute path other than ``/``, else
    the password database's entry for this user (``pwd``). A ``HOME`` that is empty (``HOME=""``,
    as some service managers and ``env -i`` runs leave it) must not put the spool in
    ``/.ctxlake``. :raises HomeError: neither gives a usable directory; set ``CTXLAKE_HOME``.
    """
    home = environ.get("HOME") or ""
    if os.path.isabs(home) and home.rstrip("/"):
        return home
    try:
        import pwd

        entry = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):
        entry = ""
    if os.path.isabs(entry) and entry.rstrip("/"):
        return entry
    raise HomeError(f"cannot place ~/.ctxlake: HOME is {home!r} and the password database gives "
                    f"{entry or 'no home directory'!r}; set CTXLAKE_HOME to a directory")


class Paths:
    """Resolved local directories for one ``CTXLAKE_HOME``.

    ``home`` is absolute; ``spool_dir`` and ``cache_dir`` may be overridden by
    ``CTXLAKE_SPOOL_DIR`` / ``CTXLAKE_CACHE_DIR`` (docs/design.md §3). Pure value (a plain class, not a dataclass, to keep the hook's imports
    minimal): building it creates nothing on disk.
    """

    __slots__ = ("home", "spool_dir", "cache_dir")

    def __init__(self, home: str, spool_dir: str, cache_dir: str):
        self.home, self.spool_dir, self.cache_dir = home, spool_dir, cache_dir

    def __repr__(self) -> str:
        return f"Paths(home={self.home!r}, spool_dir={self.spool_dir!r}, cache_dir={self.cache_dir!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Paths) and (self.home, self.spool_dir, self.cache_dir) == (other.home, other.spool_dir, other.cache_dir)

    @classmethod
    def from_env(cls, environ=None) -> "Paths":
        """Resolve from an environment mapping (default ``os.environ``).

        ``~`` is the user's home directory (:func:`user_home`), never the filesystem root.
        :raises HomeError: ``CTXLAKE_HOME`` is unset and there is no usable home directory.
        """
        env = os.environ if environ is None else environ

        def expand(p: str) -> str:
            if p == "~" or p.startswith("~/"):
                p = user_home(env) + p[1:]
            elif p.startswith("~"):  # ~user/...: that user's entry in the password database
                p = os.path.expanduser(p)
            return os.path.abspath(p)

        home = expand(env.get("CTXLAKE_HOME") or "~/.ctxlake")
        spool = env.get("CTXLAKE_SPOOL_DIR") or os.path.join(home, "spool")
        cache = env.get("CTXLAKE_CACHE_DIR") or os.path.join(home, "cache")
        return cls(home, expand(spool), expand(cache))

    LOCATION_VARS = ("CTXLAKE_HOME", "CTXLAKE_SPOOL_DIR", "CTXLAKE_CACHE_DIR")
    """The variables that move the local directories away from ``~/.ctxlake``."""

    @classmethod
    def default(cls, environ=None) -> "Paths":
        """The directories with none of :data:`LOCATION_VARS` set (``~/.ctxlake``): where a hook
        or MCP server started without them writes. :raises HomeError: as :meth:`from_env`."""
        env = os.environ if environ is None else environ
        return cls.from_env({k: v for k, v in env.items() if k not in cls.LOCATION_VARS})

    # -- spool ---------------------------------------------------------------
    def runtime_spool(self, runtime: str) -> str:
        """``spool/<runtime>/``: one directory per runtime (or ``mcp``)."""
        return os.path.join(self.spool_dir, safe_segment(runtime))

    def session_spool(self, runtime: str, session_id: str) -> str:
        """``spool/<runtime>/<session_id>.ndjson``: the live (unrotated) spool file."""
        return os.path.join(self.runtime_spool(runtime), safe_segment(session_id) + ".ndjson")

    def session_done(self, runtime: str, session_id: str) -> str:
        """``spool/<runtime>/<session_id>.done``: written once the session has ended."""
        return os.path.join(self.runtime_spool(runtime), safe_segment(session_id) + ".done")

    def mcp_spool(self, fleet_id: str) -> str:
        """``spool/mcp/<fleet_id>.ndjson``: MCP write-tool records for one fleet."""
        return os.path.join(self.runtime_spool("mcp"), safe_segment(fleet_id) + ".ndjson")

    def mcp_spool_lock(self, fleet_id: str) -> str:
        """``spool/mcp/<fleet_id>.lock``: held shared by each MCP append, exclusively by syncd
        while it deletes consumed MCP spool files."""
        return os.path.join(self.runtime_spool("mcp"), safe_segment(fleet_id) + ".lock")

    def mcp_consumer_state(self, fleet_id: str, consumer: str) -> str:
        """``spool/.state/consumers/<consumer>-<fleet_id>.json``: one consumer's offsets in this
        fleet's MCP spool files, keyed by file identity (:func:`lib.spool.consume_records`)."""
        return os.path.join(self.state_dir, "consumers", f"{safe_segment(consumer)}-{safe_segment(fleet_id)}.json")

    def claims_tally(self, fleet_id: str) -> str:
        """``spool/.state/consumers/claims-<fleet_id>-tally.json``: the proposal consumer's
        per-day tally (:func:`lib.memory.claims.ingest`)."""
        return os.path.join(self.state_dir, "consumers", f"claims-{safe_segment(fleet_id)}-tally.json")

    def mcp_last_write(self, fleet_id: str, agent_id: str, session_id: str | None) -> str:
        """``spool/.state/mcp-last/<fleet_id>/<agent_id>/<session_id or ->.json``: the last record
        this agent session queued through the MCP server (how a retried call is recognised)."""
        return os.path.join(self.state_dir, "mcp-last", safe_segment(fleet_id), safe_segment(agent_id),
                            (safe_segment(session_id) if session_id else "-") + ".json")

    @property
    def state_dir(self) -> str:
        """``spool/.state/``: upload watermarks."""
        return os.path.join(self.spool_dir, ".state")

    def watermark(self, runtime: str, stem: str) -> str:
        """``spool/.state/<runtime>/<stem>.json``: the upload watermark of one spooled session
        (``stem``: the spool file name without ``.ndjson``, already a safe segment)."""
        return os.path.join(self.state_dir, safe_segment(runtime), stem + ".json")

    def reconciled(self, runtime: str, stem: str) -> str:
        """``spool/.state/<runtime>/<stem>.reconciled``: the event ids a seal's transcript
        backstop reconciled (:mod:`lib.backstop`), so a resumed session is not filled twice."""
        return os.path.join(self.state_dir, safe_segment(runtime), stem + ".reconciled")

    def session_process(self, runtime: str, stem: str) -> str:
        """``spool/.state/<runtime>/<stem>.proc``: the session's runtime process and transcript
        path as the hooks saw them (:mod:`lib.idle_seal`), so syncd can seal a session that
        never sent its end event."""
        return os.path.join(self.state_dir, safe_segment(runtime), stem + ".proc")

    def unmapped_marker(self, runtime: str, event: str) -> str:
        """``spool/.state/unmapped/<runtime>-<event>``: an event the adapter does not map was
        logged once (the hook does not log it again)."""
        return os.path.join(self.state_dir, "unmapped", safe_segment(f"{runtime}-{event}"))

    @property
    def hooks_lock(self) -> str:
        """``spool/.state/hooks.lock``: held shared by every detached hook capture (:func:`hooks_lock_path`)."""
        return hooks_lock_path(self.state_dir)

    def live_state(self, fleet_id: str) -> str:
        """``spool/.state/live/<fleet_id>.json``: syncd's live-plane memory (sessions seen,
        heartbeats written, leases it renews for its agents, lease request outcomes)."""
        return os.path.join(self.state_dir, "live", safe_segment(fleet_id) + ".json")

    @property
    def quarantine_spool(self) -> str:
        """``spool/quarantine/``: quarantine records waiting for syncd (never values)."""
        return os.path.join(self.spool_dir, "quarantine")

    def quarantine_spool_file(self, fleet_id: str) -> str:
        """``spool/quarantine/<fleet_id>.ndjson``: where the hook, the MCP server and the importers
        append one fleet's quarantine records."""
        return os.path.join(self.quarantine_spool, safe_segment(fleet_id) + ".ndjson")

    # -- cache ---------------------------------------------------------------
    def fleet_cache(self, fleet_id: str) -> str:
        """``cache/<fleet_id>/``."""
        return os.path.join(self.cache_dir, safe_segment(fleet_id))

    def roster(self, fleet_id: str) -> str:
        return os.path.join(self.fleet_cache(fleet_id), "roster.json")

    def leases(self, fleet_id: str) -> str:
        return os.path.join(self.fleet_cache(fleet_id), "leases.json")

    def snapshot(self, fleet_id: str) -> str:
        return os.path.join(self.fleet_cache(fleet_id), "snapshot.bin")

    def snapshot_pointer(self, fleet_id: str) -> str:
        """``cache/<fleet_id>/snapshot.bin.pointer.json`` (:func:`snapshot_pointer_path`)."""
        return snapshot_pointer_path(self.snapshot(fleet_id))

    def briefing(self, fleet_id: str) -> str:
        return os.path.join(self.fleet_cache(fleet_id), "briefing.json")

    def lake_cache(self, fleet_id: str) -> str:
        """``cache/<fleet_id>/lake/``: ``ctxlake query``'s local copy of the table's files."""
        return os.path.join(self.fleet_cache(fleet_id), "lake")

    def sync_status(self, fleet_id: str) -> str:
        """``cache/<fleet_id>/sync.json``: when syncd last ran and what it did."""
        return os.path.join(self.fleet_cache(fleet_id), "sync.json")

    @property
    def hook_errors(self) -> str:
        """``hook-errors.log``: one line per hook failure (stdout belongs to the runtime)."""
        return os.path.join(self.home, "hook-errors.log")

    @property
    def home_config(self) -> str:
        """``ctxlake.toml`` inside ``CTXLAKE_HOME``: the config of a self-contained home
        (``ctxlake demo``'s temporary one); a user's config lives at :func:`config_file_path`."""
        return os.path.join(self.home, "ctxlake.toml")

    @property
    def hook_lost(self) -> str:
        """``hook-lost.bin``: the lost-events ledger a hook overwrites in place when even
        ``hook-errors.log`` cannot be written (:mod:`lib.lost_events`)."""
        return os.path.join(self.home, "hook-lost.bin")

    @property
    def default_store_url(self) -> str:
        """``file://$CTXLAKE_HOME/lake``: the embedded store when nothing is configured."""
        return "file://" + os.path.join(self.home, "lake")
