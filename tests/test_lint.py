"""The tree is lint-clean under the rules ``pyproject.toml`` configures (``[tool.ruff]``: pyflakes
and the pycodestyle errors that are bugs — an unused import, a repeated dictionary key, a name
assigned and never read). ``make lint`` runs the same command."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_ruff_check_passes_over_the_whole_tree():
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    r = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", ROOT], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
