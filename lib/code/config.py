"""ctxctl configuration: defaults, the XDG global file, the project file, ``--config``.

Files, lowest precedence first, each merged key by key over the previous (arrays replace
whole, never concatenate):

1. built-in defaults (the ``FIELDS`` defaults below);
2. ``$XDG_CONFIG_HOME/ctxctl/config.toml`` when that variable is set (then authoritative: no
   fallback), else ``~/.config/ctxctl/config.toml``;
3. the first ``.ctxctl/config.toml`` found walking **up** from the working directory (symlinks,
   file or directory, are followed);
4. the ``--config <path>`` file.

Unknown sections or keys and wrongly typed values are errors, so a typo is never silently
dropped. An explicit ``--config`` that cannot be read or parsed is fatal (exit 1,
``failed to read config <path>: …`` / ``invalid config <path>: …``); a broken *discovered* file
is skipped with one deterministic warning, so a stray file cannot brick the tool.
"""
from __future__ import annotations

import os

from lib.code.errors import READ, ExitError
from lib.code.record import Record

DEFAULT_KEEP = ("error", "warning", "failed", "panic", "fatal")
DEFAULT_IGNORE = ("node_modules", "target", "dist", ".git")
DEFAULT_KEEP_LIMITS = (24, 64)
"""``[exec] full_output_hours`` / ``full_output_mib`` defaults (lib/code/recovery.py)."""


class ExecConfig(Record):
    """``[exec]``: how command output is folded.

    ``keep``: case-insensitive regexes whose matching middle lines survive folding (a configured
    list replaces these defaults; ``--keep`` values are appended to it); ``head_lines`` /
    ``tail_lines``: lines kept from the start / end of the output; ``collapse_threshold``:
    outputs of at most this many lines pass through unfolded. ``full_output_hours`` /
    ``full_output_mib``: kept full outputs (unredacted, ``$TMPDIR/ctxctl-exec-<uid>/``) older than
    this many hours, then the oldest beyond this many MiB in all, are deleted on each ``exec``
    (:mod:`lib.code.recovery`)."""

    FIELDS = (("keep", DEFAULT_KEEP), ("head_lines", 5), ("tail_lines", 5), ("collapse_threshold", 20),
              ("full_output_hours", DEFAULT_KEEP_LIMITS[0]), ("full_output_mib", DEFAULT_KEEP_LIMITS[1]))


class OutlineConfig(Record):
    """``[outline]``: ``fold_threshold`` — text outlines show at most this many rows, then
    ``... [K symbols omitted]`` (JSON lists as many and adds ``"omitted": K``); ``show_doc`` — include ``doc_comment``."""

    FIELDS = (("fold_threshold", 50), ("show_doc", True))


class PathsConfig(Record):
    """``[paths]``: ``ignore`` — globs (``*``, ``?``) marking imports ``ignored``; without ``/``
    a pattern matches one path segment."""

    FIELDS = (("ignore", DEFAULT_IGNORE),)


class LimitsConfig(Record):
    """``[limits]``: ``max_file_bytes`` — largest input file read, in bytes (10 MiB): a huge or
    endless file cannot exhaust memory."""

    FIELDS = (("max_file_bytes", 10 * 1024 * 1024),)


class GeneralConfig(Record):
    """``[general]``: ``show_saved`` — print the saved% metrics (``--no-saved`` turns them off
    per call)."""

    FIELDS = (("show_saved", True),)


class Config(Record):
    """The resolved configuration; ``sources`` lists the files merged, lowest precedence first."""

    FIELDS = (("exec", ExecConfig), ("outline", OutlineConfig), ("paths", PathsConfig), ("limits", LimitsConfig),
              ("general", GeneralConfig), ("sources", ()))


_SECTIONS = {"exec": ExecConfig, "outline": OutlineConfig, "paths": PathsConfig,
             "limits": LimitsConfig, "general": GeneralConfig}


def global_path(env) -> str | None:
    """The XDG global file path (it may not exist); ``None`` when no home can be found."""
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg:
        return os.path.join(xdg, "ctxctl", "config.toml")
    home = env.get("HOME")
    return os.path.join(home, ".config", "ctxctl", "config.toml") if home else None


def project_path(cwd: str) -> str | None:
    """The first ``.ctxctl/config.toml`` walking up from ``cwd`` (followed through symlinks), or ``None``."""
    here = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(here, ".ctxctl", "config.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _check_value(section: str, key: str, value, default):
    where = f"[{section}] {key}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"{where} must be a boolean")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{where} must be a non-negative integer")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{where} must be an array of strings")
        return tuple(value)
    raise ValueError(f"{where}: unsupported value")


def merge(config: Config, data: dict) -> Config:
    """``config`` with the keys of one parsed TOML document applied.

    :raises ValueError: unknown section or key, or a value of the wrong type.
    """
    changes = {}
    for section, values in data.items():
        cls = _SECTIONS.get(section)
        if cls is None:
            raise ValueError(f"unknown section [{section}]")
        if not isinstance(values, dict):
            raise ValueError(f"[{section}] must be a table")
        current = getattr(config, section)
        known = {name: getattr(current, name) for name in cls.field_names()}
        updates = {}
        for key, value in values.items():
            if key not in known:
                raise ValueError(f"unknown key `{key}` in [{section}]")
            updates[key] = _check_value(section, key, value, known[key])
        changes[section] = current.replace(**updates)
    return config.replace(**changes)


def _load_file(config: Config, path: str) -> Config:
    import tomllib

    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ExitError(READ, f"failed to read config {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
        merged = merge(config, data)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as exc:
        raise ExitError(READ, f"invalid config {path}: {exc}") from None
    return merged.replace(sources=config.sources + (path,))


def load(cwd: str, explicit: str | None = None, env=None, warn=None) -> Config:
    """Resolve the configuration for a call made from ``cwd``.

    :param explicit: the ``--config`` path; its failures raise.
    :param env: environment mapping (``XDG_CONFIG_HOME``, ``HOME``); defaults to ``os.environ``.
    :param warn: ``warn(message)`` for a skipped discovered file (stderr in the CLI).
    :raises ExitError: code 1 when the explicit file cannot be read or parsed.
    """
    env = os.environ if env is None else env
    config = Config()
    for path in (global_path(env), project_path(cwd)):
        if path and os.path.isfile(path):
            try:
                config = _load_file(config, path)
            except ExitError as exc:
                if warn:
                    warn(f"ignoring config: {exc.message}")
    if explicit:
        config = _load_file(config, explicit)
    return config
