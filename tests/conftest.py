"""Suite-wide settings: Hypothesis profiles, and a fresh lock policy for every test.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) runs enough examples to mean something,
derandomized so that a run is reproducible from the commit alone, and prints the
reproduction blob of any failure; ``dev`` (the default) draws fresh random examples on every
run, which is how new counterexamples are found; ``deep`` is ``dev`` with ten times the
examples, for hunting (``HYPOTHESIS_PROFILE=deep pytest tests/tamper``).

Every test has a time limit (pytest-timeout), longer under ``deep``: see :mod:`tests.timeouts`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests import timeouts

settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None, print_blob=True)
settings.register_profile("deep", max_examples=3000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Give the run its per-test limit before pytest-timeout reads its settings, unless
    ``--timeout`` or ``PYTEST_TIMEOUT`` gave one."""
    if config.getoption("timeout", None) is None and "PYTEST_TIMEOUT" not in os.environ:
        config.option.timeout = timeouts.limit_s()


@pytest.fixture(autouse=True)
def _fresh_lock_policy() -> Iterator[None]:
    """Every test starts with the library's lock policy. The command line sets it for its
    process (`--lock-timeout`, the waiting notice); tests run many commands in one process,
    and a 0.6 s timeout left by one of them made later concurrent writers give up under
    load."""
    from registre.ledger.store import engine

    saved = (engine.lock_policy.timeout, engine.lock_policy.on_wait)
    engine.lock_policy.timeout, engine.lock_policy.on_wait = engine.LOCK_TIMEOUT_S, None
    yield
    engine.lock_policy.timeout, engine.lock_policy.on_wait = saved
