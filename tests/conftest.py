"""Suite-wide settings: Hypothesis profiles.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) runs enough examples to mean something,
derandomized so that a run is reproducible from the commit alone, and prints the
reproduction blob of any failure; ``dev`` (the default) draws fresh random examples on every
run, which is how new counterexamples are found; ``deep`` is ``dev`` with ten times the
examples, for hunting (``HYPOTHESIS_PROFILE=deep pytest tests/tamper``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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
