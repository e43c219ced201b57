"""The SparkSession the implementation runs on: the active one, a local one built
as a user would run Spark on a laptop, one on a cluster's master, or a Spark
Connect session to a server.

Which session `get_spark(master=None, remote=None)` returns:

1. `remote` (`sc://HOST[:PORT][/;k=v...]`): a Spark Connect session to that server
   (a thin client: the DataFrame API only, no `SparkContext`).
2. `master` (`spark://HOST:PORT`, `local[N]`, `yarn`, `k8s://...`): a classic
   session on that master; the active session when it already runs there.
3. Neither: the active session (the user's own, or the one built before), else a
   Connect session to `SPARK_REMOTE` when that variable is set, else `local[2]`.

Errors are one sentence (`SparkUnavailable`), never a JVM stack: a master or
remote URL of an unknown form, a `spark://` master or Connect server that does
not answer on its port (checked before a JVM starts, so an unreachable master
fails in seconds, not after Spark's minute of retries), a second master in one
process (Spark runs one `SparkContext` per process), a session that fails to start.

**The workers' Python.** A classic session built here runs its Python functions
(the grouped-map kernels) in `spark.pyspark.python` when set, else
`PYSPARK_PYTHON` when set, else the driver's own interpreter (`sys.executable`):
not Spark's default `python3` on PATH, which from a venv that is not activated
is the system's, without pyarrow. A Connect server decides for its sessions
(its environment's `PYSPARK_PYTHON`): start it with that set.

Settings of the sessions built here (a cluster's too; the driver memory and
`local[2]` are the local session's), and why:

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

A Connect session gets none of these: they are the server's (README, "Running
on a cluster", starts one with them).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spark_impl import urls
from spark_impl.errors import SparkUnavailable, cause

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


def get_spark(master: str | None = None, remote: str | None = None):
    """The session to run on (which one, and its errors: module docstring)."""
    from pyspark.sql import SparkSession

    if master and remote:
        raise SparkUnavailable("give a Spark master URL or a Spark Connect URL, not both")
    if master and os.environ.get("SPARK_REMOTE"):
        raise SparkUnavailable(f"SPARK_REMOTE is set ({os.environ['SPARK_REMOTE']}), so pyspark builds Spark Connect "
                               f"sessions only; unset it to run on the master {master}")
    active = SparkSession.getActiveSession() or _built_here()
    if remote is None and master is None and active is not None:
        return active
    remote = remote or (None if master else os.environ.get("SPARK_REMOTE"))
    if remote is not None:
        return _connect(remote, active)
    if active is not None:
        running = active_master(active)
        if running == master.strip():
            return active
        raise SparkUnavailable(f"this process already runs a Spark session on {running}; Spark runs one "
                               f"SparkContext per process, so a session on {master} needs a process of its own")
    return _classic(master)


def is_connect(spark) -> bool:
    """Whether `spark` is a Spark Connect session (no SparkContext, no JVM handle)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def active_master(spark) -> str:
    """The master URL a session runs on (a Connect session: its server's)."""
    return spark.conf.get("spark.master") if is_connect(spark) else spark.sparkContext.master


def workers_python(conf) -> str:
    """The interpreter a classic session's Python workers run: `spark.pyspark.python`,
    else `PYSPARK_PYTHON`, else the driver's own (module docstring)."""
    return conf.get("spark.pyspark.python", None) or os.environ.get("PYSPARK_PYTHON") or sys.executable


_BUILT: list = []  # the last session built here: a Connect session is active in its own thread only


def _built_here():
    """The last session built here while it still runs (a Connect session is
    active only in the thread that built it; other threads find it here)."""
    if not _BUILT:
        return None
    spark = _BUILT[-1]
    if is_connect(spark):
        return None if spark.is_stopped else spark
    from pyspark import SparkContext

    return spark if SparkContext._active_spark_context is not None else None


def _classic(master: str | None):
    from pyspark.sql import SparkSession

    check_java()
    conf = dict(LOCAL_CONF)
    if master is not None:
        conf["spark.master"] = urls.check_master(master)
        if not conf["spark.master"].startswith("local"):
            conf.pop("spark.driver.memory")  # the local session's executor memory; a cluster's driver keeps its own
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        if master is None:  # the local start: pyspark's own errors (a JVM that does not start) as they were
            raise
        raise SparkUnavailable(f"cannot start a Spark session on {master}: {cause(exc)}") from None
    context = spark.sparkContext
    context.pythonExec = workers_python(context.getConf())
    context.setLogLevel("WARN")
    _BUILT.append(spark)
    return spark


def _connect(remote: str, active):
    from pyspark.sql import SparkSession

    url = urls.check_remote(remote)
    if active is not None and not is_connect(active):
        raise SparkUnavailable(f"this process already runs a classic Spark session on {active_master(active)}; "
                               f"a Spark Connect session to {url} needs a process of its own")
    try:
        spark = SparkSession.builder.remote(url).getOrCreate()
        spark.conf.get("spark.sql.shuffle.partitions")  # the first call: fails here when the server does not serve
    except ImportError as exc:
        raise SparkUnavailable(f"Spark Connect needs pyspark's connect extras (pip install 'window-oracle[connect]'): "
                               f"{exc}") from None
    except Exception as exc:
        raise SparkUnavailable(f"cannot open a Spark Connect session at {url}: {cause(exc)}") from None
    _BUILT.append(spark)
    return spark


# Code generation compiles Java for every operator of a job, about half a second per
# window plan on two cores: far more than running a batch of small traces
# interpreted. `factoryMode` covers the expression projections as well. Adaptive
# execution re-optimizes the rest of the plan (and writes it out for the listeners)
# after every stage: a fifth of the corpus replay's time, for nothing to gain on
# inputs this small (the replay: 228-251 s with it, 192 s without, one machine).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
               "spark.sql.adaptive.enabled": "false"}


@contextmanager
def interpreted(spark) -> Iterator[None]:
    """Plan and run the jobs of the block without code generation nor adaptive
    execution, then restore the session's settings (for small jobs only: large ones
    run faster compiled and adapted)."""
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
