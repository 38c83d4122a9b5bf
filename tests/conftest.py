"""Suite-wide settings: Hypothesis profiles.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) runs enough examples to mean something and
prints the reproduction blob of any failure; ``dev`` (the default) keeps local runs quick.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
