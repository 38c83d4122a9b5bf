"""How many Hypothesis examples a costly database-backed property test runs.

Such a test commits tens of signed transactions per example, on SQLite and on PostgreSQL.
``make test`` (the ``ci`` and ``dev`` profiles) runs it at most ``cap`` examples, enough to
exercise every step kind several times in each run; ``HYPOTHESIS_PROFILE=deep`` runs the
profile's full count, for hunting.
"""

from __future__ import annotations

import os

from hypothesis import settings


def examples(cap: int) -> int:
    """``cap`` (or fewer, if the profile asks for fewer); the profile's count under ``deep``."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "deep":
        return settings.default.max_examples
    return min(cap, settings.default.max_examples)
