"""Runtime adapters: parsed hook payload → envelopes + the runtime's answer (docs/design.md §6).

Registered by runtime name in :data:`ADAPTERS` (docs/design.md §14); each adapter module knows its
runtime's event names and payload fields and nothing of the spool. Standard library only.

An adapter module exposes:

- ``EVENTS``: ``{runtime_event_name: event_type}`` — every event the adapter maps;
- ``INSTALL_EVENTS``: the events ``ctxlake install`` wires (each one is in ``EVENTS``);
- ``session_id(payload) -> str | None``;
- ``answer_before_payload(event, ctx) -> dict | None`` — the answer when it needs no payload
  (printed before stdin is read), else ``None``;
- ``answer(event, payload, ctx) -> dict`` — the JSON the runtime reads on stdout;
- ``to_envelopes(event, payload, builder, ctx) -> list[dict]`` — runs in the capture child;
- ``done_marker(event, payload) -> dict | None`` — ``<session>.done`` contents on session end;
- optionally ``runtime_version(payload) -> str | None``;
- optionally ``transcript_path(payload, environ) -> str | None`` — where the runtime keeps the
  session's own record (what the transcript backstop reads, :mod:`lib.backstop`).

``ctx`` is a :class:`HookContext`.
"""
from __future__ import annotations

import os
import sys

ADAPTERS = {
    "claude_code": "lib.adapters.claude_code",
    "cursor": "lib.adapters.cursor",
    "hermes": "lib.adapters.hermes",
}


class UnknownRuntime(ValueError):
    """The runtime name has no adapter."""


def get(runtime: str):
    """The adapter module for ``runtime``. :raises UnknownRuntime:"""
    try:
        name = ADAPTERS[runtime]
    except KeyError:
        raise UnknownRuntime(f"no adapter for runtime {runtime!r}; known: {', '.join(sorted(ADAPTERS))}") from None
    __import__(name)
    return sys.modules[name]


class HookContext:
    """What an adapter may consult: identity, the briefing and lease view from the cache.

    ``paths`` is a :class:`lib.paths.Paths`; ``policy(cached)`` a callable returning the lease
    policy (``warn``/``block``) given the one cached in ``leases.json`` (or ``None``), called only
    when a conflict is found (loading the config file costs time the hook rarely needs). Reads are lazy and fail open (a missing or corrupt cache file
    is "nothing known"). ``injected`` collects claim ids shown to the agent. ``runtime_pid``
    (the hook's parent: the runtime's process, or ``None``) and ``environ`` (the hook's
    environment, or ``None`` for ``os.environ``) go into the session's process record
    (:mod:`lib.idle_seal`).
    """

    def __init__(self, paths, fleet_id: str, agent_id: str, policy=lambda cached=None: cached or "warn",
                 runtime_pid: int | None = None, environ=None):
        self.paths, self.fleet_id, self.agent_id, self.policy = paths, fleet_id, agent_id, policy
        self.runtime_pid, self.environ = runtime_pid, environ
        self.injected: list[str] = []
        self._leases = None
        self._roster = None

    def briefing(self) -> str | None:
        """The fenced briefing text for this fleet, or ``None``; records its claim ids."""
        from lib.briefing import read_for_hook

        text, ids = read_for_hook(self.paths.briefing(self.fleet_id))
        if text:
            self.injected = ids
        return text

    def _lease_view(self) -> dict:
        if self._leases is None:
            from lib.live import leases

            self._leases = leases.read_view(self.paths.leases(self.fleet_id))
        return self._leases

    def lease_conflicts(self, paths: list[str], cwd: str | None) -> list[dict]:
        """Leases held by *other* live agents on any of ``paths`` (:func:`lib.live.leases.conflicts_for_paths`)."""
        from lib.live import leases

        return leases.conflicts_for_paths(self._lease_view(), self.agent_id, paths, cwd)

    def lease_policy(self) -> str:
        """``warn`` or ``block`` (see the class docstring)."""
        return self.policy(self._lease_view().get("policy"))

    def store_now(self) -> float:
        """Store time now, estimated from the cached lease view (:func:`lib.live.leases.view_now`)."""
        from lib.live import leases

        return leases.view_now(self._lease_view())

    def recent_touches(self, paths: list[str], cwd: str | None) -> list[dict]:
        """Recent edits of ``paths`` by other live agents, from the cached roster
        (:func:`lib.live.presence.recent_touches`)."""
        from lib.live import presence

        if self._roster is None:
            self._roster = presence.read_view(self.paths.roster(self.fleet_id))
        return presence.recent_touches(self._roster, self.agent_id, paths, cwd)


def repo_fields(cwd: str | None) -> dict:
    """Envelope location fields for a working directory: ``{"cwd"}`` plus ``repo``, ``branch``,
    ``git_sha`` when ``cwd`` is inside a git repository (read from ``.git``, no subprocess).
    ``{"cwd": None}`` when ``cwd`` is empty."""
    out = {"cwd": cwd if isinstance(cwd, str) and cwd else None}
    if out["cwd"] and os.path.isdir(out["cwd"]):
        from lib import repo

        info = repo.identify(out["cwd"])
        if info:
            out.update(repo=info.get("repo_id"), branch=info.get("branch"), git_sha=info.get("git_sha"))
    return out
