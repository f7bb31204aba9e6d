"""ctxctl's engine: read code and run commands in a fraction of the context (DESIGN.md §1).

``ctxctl.py`` parses arguments and prints; everything it decides lives here, one module per
concept:

* :mod:`lib.code.errors` — the one error type, carrying the process exit code;
* :mod:`lib.code.tokens` — cl100k_base token counts (offline vocabulary) and the saved% metric;
* :mod:`lib.code.config` — ``.ctxctl/config.toml`` walking up, the XDG global file, ``--config``;
* :mod:`lib.code.source` — the input-file guard (regular file, size limit, UTF-8);
* :mod:`lib.code.languages` — extension routing and tree-sitter parsing (``.h`` routing,
  annotation masking);
* :mod:`lib.code.backends` — per-language extraction rules (definitions and imports);
* :mod:`lib.code.symbols` — the iterative walk, signatures and doc comments;
* :mod:`lib.code.outline`, :mod:`lib.code.lookup`, :mod:`lib.code.compact`,
  :mod:`lib.code.ranges`, :mod:`lib.code.deps` — the file commands;
* :mod:`lib.code.fold` and :mod:`lib.code.execute` — ``exec``'s streaming compressor and runner;
* :mod:`lib.code.render` — byte-stable JSON and number formatting;
* :mod:`lib.code.mcp` — the MCP adapter's tools, argument rules and workspace pinning.

Stateless by design: no index, cache, daemon or state file; every call reads, parses and
discards. Output depends only on the input bytes and the config (no timestamps, PIDs or
random values). Importing a module here has no side effects; tree-sitter and tiktoken are
imported only when a command needs them.
"""
