"""Per-test time limits: a hang fails in minutes, naming the test, not at CI's 90-minute limit.

pytest-timeout enforces them (``timeout_method = "signal"`` in pyproject.toml: the test fails
with ``Timeout (>N s) from pytest-timeout``, a stack dump of every thread above it, and the run
goes on). ``tests/conftest.py`` sets the limit of a run from the Hypothesis profile, unless the
command line (``--timeout``) or pytest-timeout's ``PYTEST_TIMEOUT`` sets one:

* ``ci`` and ``dev``: :data:`DEFAULT_LIMIT_S`, more than twice the slowest honest test of a
  full ``-n 2`` run on the loaded 2-core development machine
  (``docs/design/2026-12-06-test-time-limits.md`` has the figures);
* ``deep`` (ten times the examples of ``ci``): :data:`DEEP_LIMIT_S`;
* ``REGISTRE_TEST_TIMEOUT=SECONDS`` replaces the profile's limit (for a slower machine).

A test that honestly needs longer says why beside a ``@pytest.mark.timeout(SECONDS)`` of its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

__all__ = ["DEEP_FACTOR", "DEEP_LIMIT_S", "DEFAULT_LIMIT_S", "ENV_LIMIT", "limit_s"]

DEFAULT_LIMIT_S = 300.0
"""Seconds one test may take (setup, call and teardown) under the ``ci`` and ``dev`` profiles."""

DEEP_FACTOR = 10
"""``deep`` draws ten times the examples of ``ci``: its limits are this many times longer."""

DEEP_LIMIT_S = DEFAULT_LIMIT_S * DEEP_FACTOR
"""Seconds one test may take under ``HYPOTHESIS_PROFILE=deep``."""

ENV_LIMIT = "REGISTRE_TEST_TIMEOUT"
"""Environment variable that replaces the profile's default limit (seconds, > 0)."""


def _factor(environ: Mapping[str, str]) -> int:
    return DEEP_FACTOR if environ.get("HYPOTHESIS_PROFILE") == "deep" else 1


def limit_s(environ: Mapping[str, str] = os.environ) -> float:
    """The default per-test limit for a run with this environment.

    Raises :class:`pytest.UsageError` for a :data:`ENV_LIMIT` that is not a positive number.
    """
    value = environ.get(ENV_LIMIT)
    if value is None:
        return DEFAULT_LIMIT_S * _factor(environ)
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise pytest.UsageError(f"{ENV_LIMIT} must be a positive number of seconds, got {value!r}")
    return seconds
