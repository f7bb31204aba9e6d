"""ctxctl: read code and run commands in a fraction of the context.

An agent asks for an outline, one symbol, some lines, a file's imports or a command's output,
and gets only what it needs, with the tokens saved reported (cl100k_base). Stateless: every
call reads, parses and discards. ``ctxctl.py mcp`` serves the same five commands as MCP tools
over stdio. The engine is ``lib/code/``; this script parses arguments, loads the config once
and prints. See docs/ctxctl.md. This is the command line; ``ctxctl.py`` at the repository root
only calls :func:`main` (a script is compiled on every run, a module's bytecode is cached).

Exit codes: 0 ok; 1 read, config or exec failure; 2 unsupported extension, bad line range or
usage; 3 parse failure; 4 symbol not found; ``exec`` passes the child's code through.
"""
from __future__ import annotations

import os
import sys

from lib.code import config as _config
from lib.code import render
from lib.code.errors import ExitError

VERSION = "0.3.3"
"""The upstream ctxctl release whose contract this implementation follows."""
KIND_CHOICES = ("class", "struct", "enum", "interface", "function", "method", "module", "const", "var", "trait",
                "type", "heading", "rule", "element")
KIND_ALIASES = {"fn": "function", "mod": "module", "head": "heading", "elem": "element"}


def _global_flags(parser, suppress: bool) -> None:
    import argparse

    d = {"default": argparse.SUPPRESS} if suppress else {}
    parser.add_argument("--config", metavar="PATH", help="extra config file, applied last", **d)
    parser.add_argument("--format", choices=("text", "json"), help="output format", **d)
    parser.add_argument("--json", action="store_true", help="same as --format json", **d)
    parser.add_argument("--no-saved", action="store_true", help="omit the saved%% metrics", **d)
    parser.add_argument("--no-color", action="store_true", help="accepted; output never has colour", **d)
    parser.add_argument("--output", metavar="PATH", help="write stdout's bytes to PATH instead", **d)
    parser.add_argument("--exact-tokens", action="store_true",
                        help="count the saved metric with the cl100k_base tokenizer instead of estimating it", **d)


def build_parser():
    """The argparse parser (global flags are accepted before or after the command); the
    common command lines skip it (:func:`fast_args`)."""
    from lib.failures import Parser

    p = Parser(prog="ctxctl", description=__doc__.split("\n\n")[0])
    p.add_argument("-V", "--version", action="version", version=f"ctxctl {VERSION}")
    _global_flags(p, suppress=False)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p.verbs = {}  # command → its parser: an unknown flag points to `ctxctl <command> --help`

    def command(name, help_text):
        sp = sub.add_parser(name, help=help_text, description=help_text)
        p.verbs[name] = sp
        _global_flags(sp, suppress=True)
        return sp

    sp = command("outline", "List a file's symbols instead of reading it. Example: ctxctl outline src/app.py")
    sp.epilog = ("Python, C, Go, Java, Markdown, CSS and HTML files are read by a header scanner where it can "
                 "vouch for the file, else by tree-sitter; CTXCTL_SCANNERS=off parses every file with tree-sitter.")
    sp.add_argument("file")
    sp.add_argument("--no-doc", action="store_true", help="omit doc comments (JSON)")
    sp.add_argument("--no-lines", action="store_true", help="omit line locations")

    sp = command("symbol", "Print one symbol's source. Example: ctxctl symbol src/app.py --name main")
    sp.add_argument("file")
    sp.add_argument("--name", required=True, help="exact, case-sensitive symbol name")
    sp.add_argument("--kind", type=_kind, help="only symbols of this kind (" + "|".join(KIND_CHOICES) + ")")
    sp.add_argument("--signature", action="store_true", help="the cleaned signature only")
    sp.add_argument("--compact", action="store_true", help="signature plus a fold marker for the body")
    sp.add_argument("--lines", metavar="N-M", help="a sub-range of the symbol's own lines (1-based)")

    sp = command("read", "Print line ranges of any file. Example: ctxctl read src/app.py --lines 10-40,90-")
    sp.add_argument("file")
    sp.add_argument("--lines", required=True, metavar="R[,R...]", help="N, N-M or N- ranges, comma separated")

    sp = command("deps", "List a file's imports as local/external/ignored/unresolved. Example: ctxctl deps src/app.py")
    sp.add_argument("file")

    sp = command("exec", "Run one command (no shell) and fold its output. Example: ctxctl exec \"pytest -q\"")
    sp.add_argument("cmd", metavar="CMD", help="the command line, as one string")
    sp.add_argument("--keep", action="append", default=[], metavar="PAT", help="keep lines matching PAT (repeatable)")
    sp.add_argument("--head", type=_count, help="lines kept from the start")
    sp.add_argument("--tail", type=_count, help="lines kept from the end")
    sp.add_argument("--raw", action="store_true",
                    help="bypass: print the output unfolded, byte for byte (also CTXCTL_EXEC_RAW=1)")

    command("mcp", "Serve the five commands as MCP tools over stdio (workspace = current directory).")
    return p


def _kind(value: str) -> str:
    import argparse

    value = KIND_ALIASES.get(value, value)
    if value not in KIND_CHOICES:
        raise argparse.ArgumentTypeError(f"invalid value '{value}' (expected {'|'.join(KIND_CHOICES)})")
    return value


def _count(value: str) -> int:
    import argparse

    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"invalid value '{value}': expected a non-negative integer")
    return int(value)


def _exec_timeout(env) -> float:
    # A test hook only: the contract's limit is 30 s; CTXCTL_EXEC_TIMEOUT_SECS shortens it in tests.
    from lib.code.execute import TIMEOUT_SECS

    try:
        return float(env.get("CTXCTL_EXEC_TIMEOUT_SECS", TIMEOUT_SECS))
    except ValueError:
        return TIMEOUT_SECS


def dispatch(args, cfg, json_mode: bool, show_saved: bool, env):
    """Run one file/exec command; returns a :class:`~lib.code.render.Result`.

    outline, symbol, read and deps estimate their token figures (printed with ``~``, JSON
    ``"estimated": true``) unless ``--exact-tokens``: loading the tokenizer costs more than the
    whole call. exec counts exactly (its figures are the savings a reviewer checks)."""
    from lib.code import tokens

    counter = tokens.EXACT if args.exact_tokens else tokens.ESTIMATED
    if args.command == "outline":
        from lib.code import outline

        return outline.run(args.file, cfg, json_mode=json_mode, show_saved=show_saved,
                           no_doc=args.no_doc, no_lines=args.no_lines, counter=counter)
    if args.command == "symbol":
        from lib.code import lookup

        return lookup.run(args.file, args.name, cfg, kind=args.kind, signature=args.signature, lines=args.lines,
                          compact=args.compact, json_mode=json_mode, show_saved=show_saved, counter=counter)
    if args.command == "read":
        from lib.code import ranges

        return ranges.run(args.file, args.lines, cfg, json_mode=json_mode, show_saved=show_saved, counter=counter)
    if args.command == "deps":
        from lib.code import deps

        return deps.run(args.file, cfg, json_mode=json_mode, show_saved=show_saved, counter=counter)
    from lib.code import execute

    return execute.run(args.cmd, cfg, keep=args.keep, head=args.head, tail=args.tail, json_mode=json_mode,
                       show_saved=show_saved, timeout=_exec_timeout(env),
                       raw=args.raw or env.get("CTXCTL_EXEC_RAW", "") not in ("", "0"))


_GLOBAL_SWITCHES = {"--json": "json", "--no-saved": "no_saved", "--no-color": "no_color",
                    "--exact-tokens": "exact_tokens"}
_GLOBAL_VALUES = {"--config": "config", "--format": "format", "--output": "output"}
_FAST = {  # command → (switches, options taking a value)
    "outline": ({"--no-doc": "no_doc", "--no-lines": "no_lines"}, {}),
    "symbol": ({"--signature": "signature", "--compact": "compact"},
               {"--name": "name", "--kind": "kind", "--lines": "lines"}),
    "read": ({}, {"--lines": "lines"}),
    "deps": ({}, {}),
}


class _Args:
    """The parsed command line (the attributes argparse would set)."""

    def __init__(self, **values):
        self.__dict__.update(values)


def fast_args(argv) -> _Args | None:
    """The four file commands' plain command lines parsed without argparse, whose import
    (``re``, ``gettext``, ``shutil``…) costs a cold call more than its parse; ``None`` for
    anything else — help, exec, mcp, a usage error, an unusual spelling — which argparse then
    handles (and words) exactly as before."""
    if not argv or argv[0] not in _FAST:
        return None
    command = argv[0]
    switches, options = _FAST[command]
    values = {"command": command, "config": None, "format": None, "output": None, "json": False,
              "no_saved": False, "no_color": False, "exact_tokens": False}
    values.update({name: False for name in switches.values()})
    values.update({name: None for name in options.values()})
    positional = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in _GLOBAL_SWITCHES or arg in switches:
            values[_GLOBAL_SWITCHES.get(arg) or switches[arg]] = True
        elif arg in _GLOBAL_VALUES or arg in options:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            values[_GLOBAL_VALUES.get(arg) or options[arg]] = argv[i + 1]
            i += 1
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
        i += 1
    if len(positional) != 1 or values["format"] not in (None, "text", "json"):
        return None
    values["file"] = positional[0]
    if command == "symbol":
        if values["name"] is None or (values["compact"] and (values["signature"] or values["lines"])):
            return None
        if values["kind"] is not None:
            values["kind"] = KIND_ALIASES.get(values["kind"], values["kind"])
            if values["kind"] not in KIND_CHOICES:
                return None
    return _Args(**values)


def main(argv=None, stdin=None, stdout=None, stderr=None, cwd=None, env=None) -> int:
    """Entry point: parse ``argv``, run the command, print, and return the exit code. Runs
    under :func:`lib.failures.run`: a closed stdout (``| head``) exits 141 without a traceback,
    an unexpected exception is one line (``--debug`` adds the traceback)."""
    from lib import failures

    stderr = stderr or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    return failures.run("ctxctl", lambda a: _main(a, stdin or sys.stdin, stdout or sys.stdout, stderr,
                                                  cwd or os.getcwd(), os.environ if env is None else env),
                        argv, stderr)


def _main(argv: list, stdin, stdout, stderr, cwd: str, env) -> int:
    from lib.failures import Failure

    args = fast_args(argv)
    if args is None:
        parser = build_parser()
        try:
            args = _parse(parser, argv)
        except Failure as exc:  # one line naming the fix (lib.failures.Parser), exit 2
            return _fail(ExitError(exc.code, str(exc)), False, stdout, stderr)
    json_mode = bool(args.json) or args.format == "json"

    def warn(message):
        stderr.write(f"warning: {message}\n")

    try:
        cfg = _config.load(cwd, args.config, env, warn)
    except ExitError as exc:
        return _fail(exc, json_mode, stdout, stderr)
    if args.command == "mcp":
        from lib.code import mcp

        return mcp.serve(stdin.buffer if hasattr(stdin, "buffer") else stdin,
                         stdout.buffer if hasattr(stdout, "buffer") else stdout,
                         root=cwd, config=cfg, version=VERSION, exec_timeout=_exec_timeout(env), log=warn)
    show_saved = cfg.general.show_saved and not args.no_saved
    try:
        result = dispatch(args, cfg, json_mode, show_saved, env)
    except ExitError as exc:
        return _fail(exc, json_mode, stdout, stderr)
    if not json_mode:
        for w in result.warnings:
            warn(w)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as fh:
            fh.write(result.out)
        stderr.write(f"wrote {args.output}\n")
    else:
        stdout.write(result.out)
        stdout.flush()
    return result.code


def _parse(parser, argv: list):
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.verbs.get(args.command, parser).error(f"unrecognized arguments: {' '.join(extra)}")
    for name in ("config", "format", "output"):
        if not hasattr(args, name):
            setattr(args, name, None)
    for name in ("json", "no_saved", "no_color", "exact_tokens"):
        if not hasattr(args, name):
            setattr(args, name, False)
    if args.command == "symbol" and args.compact and (args.signature or args.lines):
        parser.error("argument --compact: not allowed with argument --signature or --lines")
    return args


def _fail(exc: ExitError, json_mode: bool, stdout, stderr) -> int:
    if json_mode:
        stdout.write(render.error_json(exc.code, exc.message) + "\n")
    else:
        stderr.write(f"error: {exc.message}\n")
    return exc.code
