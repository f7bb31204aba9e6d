"""ctxctl's engine: read code and run commands in a fraction of the context (docs/design.md §1).

``ctxctl.py`` only calls :mod:`lib.code.cli`, which parses arguments and prints; everything
it decides lives here, one module per concept:

* :mod:`lib.code.cli` — the command line (the file commands' plain lines without argparse);
* :mod:`lib.code.errors` — the one error type, carrying the process exit code;
* :mod:`lib.code.record` — the value-object base that keeps ``dataclasses`` off the call path;
* :mod:`lib.code.tokens` — cl100k_base token counts (offline vocabulary), the estimate used
  when an exact count is not needed, and the saved% metric;
* :mod:`lib.code.config` — ``.ctxctl/config.toml`` walking up, the XDG global file, ``--config``;
* :mod:`lib.code.source` — the input-file guard (regular file, size limit, UTF-8);
* :mod:`lib.code.languages` — extension routing and tree-sitter parsing (``.h`` routing,
  annotation masking);
* :mod:`lib.code.backends` — per-language extraction rules (definitions and imports);
* :mod:`lib.code.symbols` — the definition query (or walk), whole signatures and doc comments;
* :mod:`lib.code.outline`, :mod:`lib.code.lookup`, :mod:`lib.code.compact`,
  :mod:`lib.code.ranges`, :mod:`lib.code.deps` — the file commands;
* :mod:`lib.code.fold` and :mod:`lib.code.execute` — ``exec``'s streaming compressor and runner;
* :mod:`lib.code.render` — byte-stable JSON and number formatting;
* :mod:`lib.code.mcp` — the MCP adapter's tools, argument rules and workspace pinning.

Stateless by design: no index, cache, daemon or state file; every call reads, parses and
discards. Output depends only on the input bytes and the config (no timestamps, PIDs or
random values; exec's recovery-file names are content hashes). Importing a module here has
no side effects; tree-sitter (only the file's grammar), tiktoken and RE2 are loaded only when
a command needs them.
"""
