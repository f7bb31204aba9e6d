"""The one error type of ctxctl's commands: a message plus the process exit code.

Exit codes (the contract): 1 read/config/exec failures, 2 unsupported extension, bad line range
or usage, 3 parse failure, 4 symbol not found. The CLI prints ``error: <message>`` on stderr (or
``{"error":{"code":N,"message":…}}`` on stdout in JSON mode) and exits with ``code``; the MCP
adapter returns ``message`` as an ``isError`` result.
"""
from __future__ import annotations

READ = 1
USAGE = 2
PARSE = 3
NOT_FOUND = 4


class ExitError(Exception):
    """A command failed; ``code`` is the process exit code, ``message`` the text shown."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message
