#!/usr/bin/env python3
"""ctxctl: read code and run commands in a fraction of the context (docs/ctxctl.md).

The command line lives in :mod:`lib.code.cli`; this entry script stays small because Python
compiles a script on every run but caches a module's bytecode.
"""
import sys

from lib.code.cli import KIND_CHOICES, VERSION, build_parser, dispatch, fast_args, main

__all__ = ["KIND_CHOICES", "VERSION", "build_parser", "dispatch", "fast_args", "main"]

if __name__ == "__main__":
    sys.exit(main())
