"""The Spark lane: every test in this folder is marked `spark` (the fast lane runs
`pytest -m "not spark"`), and they share one local SparkSession, started on first
use by the `spark` fixture (spark_impl.session.get_spark). pyspark is imported
only then, so collecting the fast lane never loads it.

Where Spark cannot start (no Java), the lane is skipped on a developer's machine,
but under CI (the variable `CI` set, as `.ci/run` does) it fails, naming the
cause: a CI run that skipped every Spark test has checked nothing of spark_impl.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.spark)
    # the longest tests first (the streams, then the rest of the Spark lane), each module's tests together
    # (their module fixtures run once): under xdist neither worker is left running them alone at the end
    items.sort(key=lambda item: 0 if item.get_closest_marker("streaming") else 1 if item.get_closest_marker("spark")
               else 2)


#: the test sessions' heap (two test processes on CI's 24 GB machine)
TEST_DRIVER_MEMORY = "6g"


@pytest.fixture(scope="session")
def spark():
    from spark_impl import session
    from spark_impl.errors import SparkUnavailable
    from spark_impl.session import get_spark

    # one JVM per test process runs every family, the corpus in one batched job and
    # the streams' state stores: 4 GB of heap ran out building a broadcast in CI
    session.LOCAL_CONF["spark.driver.memory"] = TEST_DRIVER_MEMORY
    try:
        return get_spark()
    except SparkUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the Spark lane cannot run under CI: {exc}", pytrace=False)
        pytest.skip(str(exc))
