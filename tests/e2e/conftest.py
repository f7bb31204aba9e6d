"""Fixtures for the e2e tests: the installed CLIs (skipped with the reason when ``make e2e`` has
not installed them; a failure instead under ``CTXLAKE_E2E_REQUIRE=1``, which ``make e2e`` sets
once the install succeeded), a fake model per module, and the wall time of each scenario,
reported at the end of the run and written to ``.cache/e2e/timings.json``."""
from __future__ import annotations

import json
import os
import time

import pytest

from tests.e2e import runtimes
from tests.e2e.fake_model import FakeModel

_TIMINGS: dict[str, float] = {}


def _need(binary: str | None, what: str, version: str) -> str:
    if binary:
        return binary
    msg = f"{what} {version} is not installed in .cache/e2e: run `make e2e` (installs it, then runs these tests)"
    if os.environ.get("CTXLAKE_E2E_REQUIRE") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def claude_bin() -> str:
    return _need(runtimes.claude_bin(), "Claude Code", runtimes.CLAUDE_CODE_VERSION)


@pytest.fixture(scope="session")
def hermes_bin() -> str:
    return _need(runtimes.hermes_bin(), "Hermes", runtimes.HERMES_VERSION)


@pytest.fixture(scope="module")
def model():
    with FakeModel() as fm:
        yield fm


@pytest.fixture(scope="module")
def scenario_timer(request):
    """Adds the wall time of everything inside the ``with`` to this module's scenario."""
    name = request.module.__name__.rsplit(".", 1)[-1]

    class Timer:
        def __enter__(self):
            self.t0 = time.monotonic()

        def __exit__(self, *exc):
            _TIMINGS[name] = _TIMINGS.get(name, 0.0) + time.monotonic() - self.t0

    return Timer()


def pytest_terminal_summary(terminalreporter):
    if not _TIMINGS:
        return
    terminalreporter.write_sep("-", "e2e wall time per scenario")
    for name, secs in sorted(_TIMINGS.items()):
        terminalreporter.write_line(f"{name:<28} {secs:6.1f} s")
    try:
        os.makedirs(runtimes.CACHE, exist_ok=True)
        with open(os.path.join(runtimes.CACHE, "timings.json"), "w") as fh:
            json.dump({"claude_code": runtimes.CLAUDE_CODE_VERSION, "hermes": runtimes.HERMES_VERSION,
                       "scenarios_secs": {k: round(v, 1) for k, v in _TIMINGS.items()}}, fh, indent=1)
    except OSError:
        pass
