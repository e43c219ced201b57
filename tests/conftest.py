"""Shared test configuration.

Hypothesis profiles (pick one with the environment variable HYPOTHESIS_PROFILE):

* `dev` (the default): 100 examples per property test, no deadline (the
  README's test command runs as written on a loaded two-core machine, where
  a Spark worker beside the oracle's examples makes their timing noise).
* `ci`: bounded and reproducible for the CI lane (2 cores, < 30 min in all):
  30 examples, no deadline (a shared runner's timing is noise), derandomized so
  a run is repeatable, and a failure prints the blob that reproduces it
  (`@reproduce_failure`). Chosen automatically when the variable CI is set and
  HYPOTHESIS_PROFILE is not.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=30, deadline=None, derandomize=True, print_blob=True)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)


def pytest_report_header(config) -> str:
    return f"hypothesis profile: {PROFILE}"

# The SparkSession fixture is in tests/spark/conftest.py, so the fast lane
# (`pytest -m "not spark"`) never imports pyspark.
