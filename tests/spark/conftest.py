"""The Spark lane: every test in this folder is marked `spark` (the fast lane runs
`pytest -m "not spark"`), and they share one local SparkSession, started on first
use by the `spark` fixture (spark_impl.session.get_spark). pyspark is imported
only then, so collecting the fast lane never loads it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    from spark_impl.errors import SparkUnavailable
    from spark_impl.session import get_spark

    try:
        return get_spark()
    except SparkUnavailable as exc:
        pytest.skip(str(exc))
