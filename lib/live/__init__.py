"""The live plane (docs/design.md §9): who is working where right now, and who holds which paths.

Everything here lives under ``live/<fleet>/`` on the store and is judged by the store's clock
(invariant 6), never a host's:

- :mod:`lib.live.leases` — advisory leases by compare-and-swap, with a fencing epoch; the pure
  decisions, the I/O shell, ``ctxlake lease``, and the cached view the hook reads;
- :mod:`lib.live.presence` — per-agent heartbeats and the fleet roster (its one editor);
- :mod:`lib.live.activity` — what the agents spooling on this host are doing, from the spool;
- :mod:`lib.live.sync` — syncd's live-plane pass tying the three together once per pass;
- :mod:`lib.live.fleet` — what the Kubernetes operator does: retire an agent whose pod ended,
  and the fleet status it publishes.

Importing the package imports nothing: the hook imports :mod:`lib.live.leases` and
:mod:`lib.live.presence` on a write tool's answer path (docs/design.md §12).
"""
