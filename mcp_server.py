#!/usr/bin/env python3
"""ctxlake MCP server: fleet and memory tools for one agent session, over stdio (docs/design.md §11).

Usage (as a runtime's MCP config spawns it; ``ctxlake mcp`` dispatches here)::

    CTXLAKE_FLEET_ID=f CTXLAKE_AGENT_ID=a python3 mcp_server.py

Newline-delimited JSON-RPC 2.0 on stdin/stdout until stdin closes, then exit 0. stdout carries
frames only — ``print`` is redirected to stderr while serving — and diagnostics are JSON lines on
stderr. Reads come from ``$CTXLAKE_HOME/cache/<fleet>/``, writes go to
``$CTXLAKE_HOME/spool/mcp/<fleet>.ndjson``; this process never imports a store client or
anything that opens a socket (tests/mcp/test_imports.py). ``CTXLAKE_SESSION_ID``, when the
runtime sets it, is stamped on spooled records. The tools live in :mod:`lib.mcp_tools`, the
protocol in :mod:`lib.jsonrpc`.
"""
import os
import sys

SERVER_NAME = "ctxlake"
SERVER_VERSION = "0.1.0"


def main(argv=None, stdin=None, stdout=None, stderr=None, environ=None) -> int:
    """Serve one MCP session; return the exit code (0 on EOF).

    :param stdin: binary stream of frames (default ``sys.stdin.buffer``).
    :param stdout: binary stream for answers (default ``sys.stdout.buffer``).
    :param stderr: text stream for JSON log lines (default ``sys.stderr``).
    :param environ: environment mapping (default ``os.environ``); read here and nowhere deeper.
    """
    from lib.failures import prog_name

    argv = sys.argv[1:] if argv is None else argv
    prog = prog_name("mcp_server.py")  # `ctxlake mcp` when ctxlake handed the verb over
    if argv:
        import argparse

        p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
        p.parse_args(argv)
    from lib import jsonrpc, logs, mcp_tools

    env = os.environ if environ is None else environ
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        # one BLAS thread: a dense memory_search is one matrix-vector product, and idle BLAS
        # threads spin on cores the agent needs (numpy reads these when a tool first imports it)
        os.environ.setdefault(var, "1")
    err = stderr or sys.stderr
    log = logs.setup("mcp", stream=err, quiet=bool(env.get("CTXLAKE_MCP_QUIET")))
    cwd = os.getcwd()

    def context():
        """Built on the first tool call: ``initialize`` is answered before the config loads."""
        from lib import config

        try:
            cfg = config.load(env)
        except config.ConfigError as exc:  # fail open: defaults plus environment, and say why
            log("config_failed", error=str(exc)[:500])
            cfg = config.load(env, path=os.devnull + ".missing")
        log("mcp_config", fleet_id=cfg.fleet_id, agent_id=cfg.agent_id, cache=cfg.paths.fleet_cache(cfg.fleet_id),
            source=cfg.source)
        return mcp_tools.Context(cfg, session_id=env.get("CTXLAKE_SESSION_ID"), cwd=cwd, log=log)

    tools = mcp_tools.Tools(context)
    server = jsonrpc.Server(SERVER_NAME, SERVER_VERSION, tools.list(), instructions=mcp_tools.INSTRUCTIONS, log=log)
    server.register("notifications/initialized", tools.start_warm_up, notification=True)  # docs/mcp.md "Performance"
    out = stdout if stdout is not None else sys.stdout.buffer
    real_stdout = sys.stdout
    if stdout is None:
        sys.stdout = err  # a stray print() anywhere can never corrupt a frame
    log("mcp_start", pid=os.getpid())
    try:
        return server.serve(stdin if stdin is not None else sys.stdin.buffer, out)
    except KeyboardInterrupt:
        return 0
    finally:
        sys.stdout = real_stdout


if __name__ == "__main__":
    sys.exit(main())
