"""Real text the redactor must leave alone, taken from this machine's installed software.

Nothing here is written for the tests: every item is a file (or a deterministic derivation of
one) that an agent's tool output really shows.

* :func:`package_source_lines` — lines of the installed packages' Python sources (the
  virtualenv's ``site-packages``), as ``cat``/``Read`` would show them;
* :func:`ca_certificates` — every certificate PEM of the ``certifi`` bundle (a dependency of
  botocore, pinned in ``requirements.lock``);
* :func:`ssh_public_keys` — OpenSSH public keys (RSA, Ed25519, ECDSA) made by ``cryptography``,
  as ``authorized_keys`` and ``known_hosts`` lines;
* :func:`image_base64` — ``base64`` output (wrapped at 76 columns, as GNU ``base64`` prints it,
  and unwrapped) of image files installed with the packages (PNG, GIF, JPEG, SVG, ICO);
* :func:`checksums_uuids_paths` — ``sha256sum`` / ``md5sum`` lines and paths of installed files,
  and ``uuid.uuid5`` identifiers (no keyword near them);
* :func:`conversation_strings` — LoCoMo's long chat conversations (the shared datasets folder,
  read in place), the URLs people share in them included.
"""
from __future__ import annotations

import base64
import hashlib
import os
import sysconfig
import uuid

IMAGE_EXT = (".png", ".gif", ".jpg", ".jpeg", ".svg", ".ico", ".webp")


def site_packages() -> str:
    """The running interpreter's ``purelib`` directory."""
    return sysconfig.get_paths()["purelib"]


def _files(exts, limit: int, roots=None) -> list[str]:
    """Up to ``limit`` files under ``roots`` (default: site-packages) ending in ``exts``, in
    walk order with sorted names."""
    out = []
    for root in roots or (site_packages(),):
        for d, dirs, names in os.walk(root):
            dirs.sort()
            for n in sorted(names):
                if n.lower().endswith(exts):
                    out.append(os.path.join(d, n))
                    if len(out) >= limit:
                        return out
    return out


def package_source_lines(max_files: int = 4000, stride: int = 7) -> list[str]:
    """Lines (≥ 8 characters) of every ``stride``-th ``.py`` file of site-packages, in path order."""
    lines = []
    for i, p in enumerate(_files((".py",), max_files * stride)):
        if i % stride:
            continue
        try:
            with open(p, encoding="utf-8") as fh:
                lines += [ln.rstrip("\n") for ln in fh if len(ln) >= 9]
        except (OSError, UnicodeDecodeError):
            continue
    return lines


def ca_certificates() -> list[str]:
    """Every ``-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----`` block of certifi."""
    import certifi

    with open(certifi.where()) as fh:
        text = fh.read()
    out, pos = [], 0
    while True:
        s = text.find("-----BEGIN CERTIFICATE-----", pos)
        if s < 0:
            return out
        e = text.index("-----END CERTIFICATE-----", s) + len("-----END CERTIFICATE-----")
        out.append(text[s:e] + "\n")
        pos = e


def ssh_public_keys(n: int = 12) -> list[str]:
    """``n`` OpenSSH public-key lines (RSA 2048/3072, Ed25519, ECDSA P-256/P-384), half as
    ``authorized_keys`` lines with a comment, half as ``known_hosts`` lines; the public PEM of
    each key too."""
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    makers = [lambda: rsa.generate_private_key(65537, 2048), ed25519.Ed25519PrivateKey.generate,
              lambda: ec.generate_private_key(ec.SECP256R1()), lambda: rsa.generate_private_key(65537, 3072),
              lambda: ec.generate_private_key(ec.SECP384R1())]
    out = []
    for i in range(n):
        pub = makers[i % len(makers)]().public_key()
        line = pub.public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH).decode()
        out.append(f"{line} dev@workstation-{i}" if i % 2 == 0 else f"github.com,140.82.121.{i} {line}")
        out.append(pub.public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo).decode())
    return out


def image_files(limit: int = 60) -> list[str]:
    """Image files installed with site-packages and the interpreter's standard library (IDLE's
    and tkinter's icons, test images)."""
    return _files(IMAGE_EXT, limit, (site_packages(), sysconfig.get_paths()["stdlib"]))


def image_base64(limit: int = 60) -> list[tuple[str, str]]:
    """``[(label, text)]``: each image file's base64, wrapped at 76 columns and unwrapped."""
    out = []
    for p in image_files(limit):
        with open(p, "rb") as fh:
            raw = fh.read(256 * 1024)
        name = os.path.basename(p)
        out.append((name + " wrapped", base64.encodebytes(raw).decode()))
        out.append((name + " one line", base64.b64encode(raw).decode()))
    return out


def checksums_uuids_paths(limit: int = 3000) -> list[str]:
    """``sha256sum``/``md5sum`` output lines (of each file's first 64 KiB), bare
    paths of installed files, and UUIDs (``uuid5`` of the path) after ``id:``."""
    out = []
    for i, p in enumerate(_files((".py", ".so", ".pyi", ".typed", ".txt", ".json", ".pem"), limit)):
        rel = os.path.relpath(p, site_packages())
        with open(p, "rb") as fh:
            data = fh.read(1 << 16)
        digest = hashlib.sha256(data).hexdigest() if i % 3 else hashlib.md5(data).hexdigest()
        out.append(f"{digest}  {rel}")
        out.append(rel)
        out.append(f"id: {uuid.uuid5(uuid.NAMESPACE_URL, rel)}")
    return out


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCOMO = os.environ.get("CTXLAKE_LOCOMO") or next(
    (c for c in (os.path.join(up, "shared", "datasets", "locomo", "locomo10.json")
                 for up in (os.path.dirname(_ROOT), os.path.dirname(os.path.dirname(_ROOT)))) if os.path.exists(c)), "")
"""LoCoMo conversations (CC BY-NC 4.0, evaluation-only: read in place from the shared datasets
folder next to the checkout or its parent, or ``$CTXLAKE_LOCOMO``; never copied into the
repository; see its NOTICE.md)."""


def conversation_strings(path: str = LOCOMO) -> list[str]:
    """Every string of 8+ characters in the LoCoMo file (dialog turns, image URLs and captions,
    observations, questions): real chat text with the URLs people share. Empty when the file is
    not on this machine."""
    import json

    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    out: list = []
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if len(v) >= 8:
                out.append(v)
        elif isinstance(v, list):
            stack.extend(reversed(v))
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
    return out
