"""Hypothesis profiles: derandomized by default (CI and a plain ``pytest`` give the same cases every
run), a long random search on demand: ``HYPOTHESIS_PROFILE=long python -m pytest -k property``.

Tests size their search with :func:`budget`, so the long profile scales every test at once.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

BASE_EXAMPLES = 100

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=BASE_EXAMPLES,
    print_blob=True,
)
settings.register_profile(
    "long",
    derandomize=False,
    deadline=None,
    max_examples=BASE_EXAMPLES * 20,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def budget(examples: int) -> int:
    """``examples`` in the default profile, scaled by the loaded profile's search size."""
    loaded = settings.default
    assert loaded is not None  # set by load_profile above
    return max(1, examples * loaded.max_examples // BASE_EXAMPLES)
