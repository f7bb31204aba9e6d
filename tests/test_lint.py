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


def _code_lines(path: str) -> list[str]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        return [line.strip() for line in fh if line.strip() and not line.lstrip().startswith("#")]


def test_slow_tests_are_deselected_by_default_and_ci_still_runs_them():
    """pyproject.toml deselects ``slow`` (the default run keeps its budget) with strict markers,
    ``make test-slow`` runs exactly those with the servers required, and .ci/run runs both targets:
    nothing CI must run is left out, and every ``@pytest.mark.slow`` test is one ``-m slow`` collects."""
    import glob
    import re
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        opts = tomllib.load(fh)["tool"]["pytest"]["ini_options"]
    assert "-m 'not slow'" in opts["addopts"] and "--strict-markers" in opts["addopts"], opts["addopts"]
    assert any(m.startswith("slow:") for m in opts["markers"])
    assert not os.path.exists(os.path.join(ROOT, "pytest.ini")), "pytest.ini would shadow pyproject.toml's options"
    make = _code_lines("Makefile")
    slow_recipe = make[make.index("test-slow: $(DEVSTAMP)") + 1]
    assert "-m slow" in slow_recipe and "CTXLAKE_TEST_REQUIRE_SERVERS=1" in slow_recipe, slow_recipe
    ci = _code_lines(".ci/run")
    assert "make test" in ci and "make test-slow" in ci, ci
    marked = {}
    for path in glob.glob(os.path.join(ROOT, "tests", "**", "test_*.py"), recursive=True):
        n = len(re.findall(r"^@pytest\.mark\.slow\b", open(path, encoding="utf-8").read(), flags=re.M))
        if n:
            marked[os.path.relpath(path, ROOT)] = n
    assert marked, "no test is marked slow: drop the marker and this wiring, or mark the long runs"
    r = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-m", "slow", *sorted(marked)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    collected = [line for line in r.stdout.splitlines() if "::" in line]
    assert len(collected) >= sum(marked.values()), r.stdout + r.stderr
