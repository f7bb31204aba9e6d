"""The credential-file denylist (docs/security.md, Redaction; reference bug 12.2 #8): a tool call
that touches ``~/.aws/credentials``, ``.env``, a key file … has both its input and its result
withheld, whatever they hold."""
from __future__ import annotations

from lib.redact.outcome import Outcome
from lib.redact.scan import _Lazy


_DENY_SUBSTR = ("/.aws/credentials", "/.aws/config", "/.ssh/id_", "/.netrc", "/.npmrc", "/.pypirc",
                "/.docker/config.json", "/.kube/config", "/secrets/", "/vault/", "/.git-credentials",
                "/.config/gh/hosts.yml", "/.config/gcloud/", "/.azure/", "/.gnupg/", "/terraform.tfstate",
                "/id_rsa", "/id_ed25519", "/id_ecdsa", "/id_dsa", "/.pgpass", "/.my.cnf", "/.s3cfg",
                "/.boto", "/.vault-token", "/.cargo/credentials", "/.gem/credentials", "/.password-store/",
                "/.config/rclone/", "/credentials.tfrc.json", "/.terraform.d/credentials", "/etc/shadow",
                "/.htpasswd", "/.hermes/.env")
_DENY_SUFFIX = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx", ".tfstate",
                ".tfstate.backup")
_CMD_SPLIT = _Lazy(r"[\s\"'`;|&<>()=]+")


def denied_path(paths) -> str | None:
    """The first path in ``paths`` on the credential-file denylist, or ``None``.

    Substring match (``/.aws/credentials``, ``/.ssh/id_``, ``/.pgpass`` ...; a leading ``/`` is
    implied so relative paths match), any ``.env`` / ``.env.*`` / ``.envrc`` file (templates such
    as ``.env.example`` included: docs/design.md §7 says ``.env*``, and they are often filled in), and
    the key-file suffixes ``.pem .key .p12 .pfx .jks .keystore .ppk .kdbx .tfstate``. Backslashes
    count as ``/``; matching is case-insensitive. Source: docs/security.md, Redaction plus the credential
    files of common CLIs.
    """
    for p in paths or ():
        s = str(p).replace("\\", "/")
        low = s.lower()
        base = low.rstrip("/").rsplit("/", 1)[-1]
        if any(d in "/" + low for d in _DENY_SUBSTR) or low.endswith(_DENY_SUFFIX):
            return s
        if base.startswith(".env") and (len(base) == 4 or base[4] in ".-_r"):
            return s
    return None


def denied_in_command(command: str) -> str | None:
    """The first denylisted path named in a shell ``command`` (``cat ~/.aws/credentials``,
    ``source .env``), or ``None``. Words are split on whitespace, quotes and shell operators;
    each word is checked with :func:`denied_path`. Used for Bash-like tools, which carry no
    ``file_path`` but read or write credential files all the same."""
    if not command or not isinstance(command, str):
        return None
    words = [w for w in _CMD_SPLIT.split(command) if "/" in w or "." in w]
    return denied_path(words)


def withhold_path(path: str, text: str) -> tuple[str, Outcome]:
    """Withhold a tool value because the call touched ``path`` on the denylist.

    Returns ``("[ctxlake: withheld, denied path <path>]", Outcome("quarantined",
    ("denied_path",)))``; ``text`` is ignored — nothing of it is kept.
    """
    return f"[ctxlake: withheld, denied path {path}]", Outcome("quarantined", ("denied_path",))
