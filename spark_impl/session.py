"""The SparkSession the implementation runs on: the active one, or a local one
built as a user would run Spark on a laptop.

Settings of the local session, and why:

* `local[2]`: the two cores of the CI box; tests and the benchmark run here.
* `spark.sql.shuffle.partitions=4`: the default 200 would make every small
  differential batch pay 200 empty tasks per shuffle.
* UI off, no progress bar, log level WARN, and `log4j2.properties` (beside this
  module) silencing the two notices every laptop start prints: quiet output.
* `spark.sql.session.timeZone=UTC`: no local-time surprises (time is integer ms
  anyway, but users' timestamp columns are converted with it).
* Arrow on: `createDataFrame` from pandas and `toPandas` go through Arrow.
* `spark.driver.memory=4g`: the default 1 GB heap runs out on a time window over
  one trace of 10 M events (measured); in local mode the driver is the executor.
* The status store keeps the last 20 SQL executions, 50 jobs and stages and
  2,000 tasks (defaults 1,000 and 100,000): with the UI off nothing reads
  them, and a long session of large union plans (a corpus replay) kept
  enough of them to exhaust the 4 GB heap (CI, once).
* `spark.buffer.pageSize=2m`: every sort of a task takes at least one page, 64
  MB by default here; a differential batch runs dozens of small window plans
  in one partition each, whose sorts then exhaust execution memory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spark_impl.errors import SparkUnavailable

LOCAL_CONF = {
    "spark.master": "local[2]",
    "spark.driver.memory": "4g",
    "spark.buffer.pageSize": "2m",
    "spark.app.name": "window-oracle",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.sql.ui.retainedExecutions": "20",
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
    "spark.ui.retainedTasks": "2000",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2.properties').as_uri()}",
}


def check_java() -> None:
    """Raise `SparkUnavailable` unless Spark's launcher can find a `java` to run."""
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise SparkUnavailable("Spark needs Java 17 or 21: no `java` on PATH and JAVA_HOME is not set")


def get_spark():
    """The active SparkSession, or a new local one (settings: module docstring)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    check_java()
    builder = SparkSession.builder
    for key, value in LOCAL_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


# Code generation compiles Java for every operator of a job, about half a second per
# window plan on two cores: far more than running a batch of small traces
# interpreted. `factoryMode` covers the expression projections as well.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@contextmanager
def interpreted(spark) -> Iterator[None]:
    """Plan and run the jobs of the block without code generation, then restore the
    session's settings (for small jobs only: large ones run faster compiled)."""
    saved = {key: spark.conf.get(key, None) for key in INTERPRETED}
    for key, value in INTERPRETED.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
