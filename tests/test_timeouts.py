"""The per-test time limit (tests/timeouts.py): a test that hangs fails within the limit, names
itself and shows the stack of every thread, and the run goes on."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import timeouts

ROOT = Path(__file__).resolve().parents[1]

# The suite's autouse fixtures import the ledger; importing it at collection keeps that (seconds
# on a loaded machine) out of the first test's limit.
HANGING = """
import threading

import registre.ledger.store.engine


def test_deliberately_hangs_forever():
    released = threading.Event()
    threading.Thread(target=released.wait, name="helper-waiting-too", daemon=True).start()
    released.wait()  # nobody ever sets it: the lock never comes back


def test_after_the_hang_still_runs():
    assert True
"""

LIMIT_S = 5
WAIT_S = 150
"""Ample for two Python processes to start on a loaded machine, and far below the hang."""


def run_hanging(tmp_path: Path, *options: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run HANGING in a subprocess pytest under the suite's settings (pyproject.toml and
    tests/conftest.py as a plugin), with the profile's limit replaced by LIMIT_S seconds."""
    (tmp_path / "test_hang.py").write_text(HANGING)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env.update({timeouts.ENV_LIMIT: str(LIMIT_S), "PYTHONPATH": str(ROOT)})
    command = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml")]
    command += ["--rootdir", str(tmp_path), "-p", "tests.conftest", "-p", "no:cacheprovider"]
    command += ["-q", *options, str(tmp_path / "test_hang.py")]
    start = time.monotonic()
    # Were the hang not cut, this would raise TimeoutExpired (well before this test's own limit).
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WAIT_S
    )
    return done, time.monotonic() - start


@pytest.mark.parametrize("options", [("-p", "no:xdist"), ("-n", "1")], ids=["serial", "xdist"])
def test_hanging_test_fails_within_the_limit_and_names_itself(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    done, _elapsed = run_hanging(tmp_path, *options)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"Timeout (>{float(LIMIT_S)}s) from pytest-timeout" in output
    assert "FAILED test_hang.py::test_deliberately_hangs_forever" in output
    assert "1 failed, 1 passed" in output
    # The stack of every thread: the test's own and the helper it started.
    assert "helper-waiting-too" in output
    assert "released.wait()  # nobody ever sets it" in output


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, timeouts.DEFAULT_LIMIT_S),
        ({"HYPOTHESIS_PROFILE": "ci"}, timeouts.DEFAULT_LIMIT_S),
        ({"HYPOTHESIS_PROFILE": "deep"}, timeouts.DEFAULT_LIMIT_S * timeouts.DEEP_FACTOR),
        ({"HYPOTHESIS_PROFILE": "deep", timeouts.ENV_LIMIT: "42.5"}, 42.5),
    ],
)
def test_limit_by_profile(environ: dict[str, str], expected: float) -> None:
    assert timeouts.limit_s(environ) == expected


@pytest.mark.parametrize("value", ["0", "-5", "soon", "nan", ""])
def test_limit_that_is_not_a_positive_number_fail(value: str) -> None:
    with pytest.raises(pytest.UsageError, match=timeouts.ENV_LIMIT):
        timeouts.limit_s({timeouts.ENV_LIMIT: value})


def test_this_run_has_a_limit(request: pytest.FixtureRequest) -> None:
    limit = request.config.getoption("timeout")
    assert limit is not None and limit > 0
    given = " ".join(request.config.invocation_params.args)
    if "PYTEST_TIMEOUT" not in os.environ and "--timeout" not in given:
        assert limit == timeouts.limit_s()
