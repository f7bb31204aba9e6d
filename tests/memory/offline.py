"""Run an embedder in a fresh interpreter with every socket call refused and the Hugging Face
caches pointed nowhere: what it prints proves it loaded from installed files alone."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

NETWORK_CLIENTS = ("requests", "urllib3", "httpx", "huggingface_hub")


def vector_offline(call: str, forbidden: tuple = ()) -> str:
    """Stdout of ``from lib.memory import embed; v = <call>`` run offline: ``"<len(v)> <|v|²> <bad>"``,
    ``bad`` the imported top-level modules among :data:`NETWORK_CLIENTS` and ``forbidden``.
    :raises subprocess.CalledProcessError: the call failed (a network attempt raises)."""
    code = ("import socket, sys\n"
            "def no(*a, **k): raise RuntimeError('network used')\n"
            "socket.socket.connect = no; socket.create_connection = no; socket.getaddrinfo = no\n"
            f"sys.path.insert(0, {ROOT!r})\n"
            "from lib.memory import embed\n"
            f"v = {call}\n"
            f"bad = [m for m in sys.modules if m.split('.')[0] in {NETWORK_CLIENTS + tuple(forbidden)!r}]\n"
            "print(len(v), round(sum(x * x for x in v), 4), bad)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME="/nonexistent", XDG_CACHE_HOME="/nonexistent", HF_HUB_OFFLINE="1", OPENBLAS_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=600)
    return r.stdout.strip()
