"""The engines a replay (and a differential run) sends cases to.

An engine takes `(spec, trace)` pairs and returns, per pair and in order, an
`Outcome`: the tuple of updates the window posts, or the exception instance
(a `WindowOracleError`: an invalid trace, an unsupported window; or an
`EngineFailure` wrapping any other exception, an engine's bug) that stopped
that one pair. One bad pair never stops the others.

* `oracle`: `oracle.run` on each pair.
* `spark`: `spark_impl.run_cases(pairs)`, called once for all the pairs, since a
  Spark job costs about a second whatever its size (DESIGN.md, "Batching").
  pyspark and spark_impl are imported only when this engine first runs, after
  checking that Java can be found; a missing Java or a JVM that does not start is
  an `EngineUnavailable` error, one sentence, not a JVM stack.
* `both`: the two above, each on every pair; the caller compares each engine's
  outcomes with the expectation.
* `streaming`: `spark_impl.streaming.run_cases(pairs)`: the traces fed to
  Structured Streaming queries as files, one per micro-batch, each trace cut
  at random points into several micro-batches, each micro-batch run by
  spark_impl's own plans resumed from the state the one before left: a
  second formulation on a stream, checked against the expectation.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, Union

import oracle
from oracle.dialects import IMPLEMENTED, writes
from oracle.errors import WindowOracleError
from oracle.model import Trace, Update, WindowSpec

Pair = tuple[WindowSpec, Trace]
Outcome = Union[tuple[Update, ...], Exception]
RunCases = Callable[[list[Pair]], Sequence[object]]

ENGINE_NAMES = ("oracle", "spark", "both", "streaming")
SPARK_JAVA_VERSIONS = "17 or 21"  # Spark 4 runs on Java 17 and 21


class EngineUnavailable(WindowOracleError):
    """An engine that cannot run at all here: no Java, a JVM that does not start,
    pyspark or spark_impl that cannot be imported."""


class EngineFailure(WindowOracleError):
    """An engine raised an exception that is not a user-input error (a bug): the
    case is an ERROR naming the exception, and the other cases run."""

    @classmethod
    def of(cls, engine: str, exc: BaseException) -> "EngineFailure":
        return cls(f"internal error of the {engine} engine: {type(exc).__name__}: {exc}")


class Engine(Protocol):
    name: str

    def run(self, pairs: Sequence[Pair]) -> list[Outcome]:
        """One outcome per pair, in order."""


class OracleEngine:
    """The executable specification itself."""

    name = "oracle"

    def run(self, pairs: Sequence[Pair]) -> list[Outcome]:
        return [self.run_one(spec, trace) for spec, trace in pairs]

    @staticmethod
    def run_one(spec: WindowSpec, trace: Trace) -> Outcome:
        try:
            return oracle.run(spec, trace)
        except WindowOracleError as exc:
            return exc
        except Exception as exc:  # RecursionError, OverflowError ...: one case's ERROR, not the replay's end
            return EngineFailure.of("oracle", exc)


# --------------------------------------------------------------------------- spark


def check_java() -> None:
    """Raise `EngineUnavailable` unless Spark's launcher can find Java: `$JAVA_HOME/bin/java`
    when JAVA_HOME is set (pyspark's spark-class uses it first), else `java` on PATH.
    A Spark Connect client (`SPARK_REMOTE` set, as `--remote` sets it) starts no JVM:
    nothing to check."""
    if os.environ.get("SPARK_REMOTE"):
        return
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home, "bin", "java")
        if not (java.is_file() and os.access(java, os.X_OK)):
            raise EngineUnavailable(
                f"the spark engine needs Java, but JAVA_HOME is {java_home} and {java} is not an executable file; "
                f"point JAVA_HOME at a Java {SPARK_JAVA_VERSIONS} installation"
            )
    elif shutil.which("java") is None:
        raise EngineUnavailable(
            f"the spark engine needs Java, but there is no `java` on PATH and JAVA_HOME is not set; "
            f"install Java {SPARK_JAVA_VERSIONS} and set JAVA_HOME"
        )


def _is_jvm_start_failure(exc: Exception) -> bool:
    """pyspark's error when the Java gateway dies before it starts (a missing or too
    old Java, a bad JAVA_HOME): a PySparkRuntimeError with condition JAVA_GATEWAY_EXITED."""
    condition = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    return callable(condition) and condition() == "JAVA_GATEWAY_EXITED"


def load_spark(module: str, function: str) -> Callable:
    """`module.function` of spark_impl, imported after checking for Java."""
    check_java()
    try:
        found = getattr(importlib.import_module(module), function, None)
    except ImportError as exc:
        raise EngineUnavailable(f"the spark engine cannot be loaded: {exc}") from None
    if found is None:
        raise EngineUnavailable(f"the spark engine cannot be loaded: {module} has no {function}()")
    return found


class SparkEngine:
    """The Spark implementation, all pairs in one `spark_impl.run_cases` call."""

    name = "spark"

    def __init__(self, run_cases: RunCases | None = None, progress: Callable[[int, int], None] | None = None):
        self._run_cases = run_cases
        self.progress = progress  # (jobs done, jobs in all) after each Spark job

    def run(self, pairs: Sequence[Pair]) -> list[Outcome]:
        if not pairs:
            return []
        run_cases = self._run_cases or load_spark("spark_impl", "run_cases")
        try:
            results = list(run_cases(list(pairs), progress=self.progress) if self.progress else run_cases(list(pairs)))
        except Exception as exc:
            if _is_jvm_start_failure(exc):
                raise EngineUnavailable(
                    f"the spark engine could not start its JVM (the Java gateway exited before sending its port); "
                    f"check that JAVA_HOME or `java` on PATH is Java {SPARK_JAVA_VERSIONS}"
                ) from None
            raise
        if len(results) != len(pairs):
            raise RuntimeError(f"spark_impl.run_cases returned {len(results)} results for {len(pairs)} cases")
        return [r if isinstance(r, Exception) else tuple(r) for r in results]


class StreamingEngine(SparkEngine):
    """The windows on a stream (`spark_impl.streaming.run_cases`): every pair's
    trace cut into `batches` micro-batches at points drawn from `seed`."""

    name = "streaming"

    def __init__(self, batches: int = 3, seed: int = 0, progress: Callable[[int, int], None] | None = None):
        super().__init__(None, progress)
        self.batches, self.seed = batches, seed

    def run(self, pairs: Sequence[Pair]) -> list[Outcome]:
        if not pairs:
            return []
        streamed = load_spark("spark_impl.streaming", "run_cases")
        self._run_cases = lambda chosen, **kw: streamed(chosen, batches=self.batches, seed=self.seed, **kw)
        return super().run(pairs)


class ImplEngine:
    """A user's implementation under test (`--impl MODULE:FUNCTION`, shaped like
    `spark_impl.apply_window`): the cases of each window in one call and one
    collect. A call that raises or returns no usable frame is an error of each of
    those cases (`runner.ImplError`), and the other windows still run. Windows are
    handed over as Esper text, or in the first dialect that writes them (CCL's
    keyed and jumping windows)."""

    def __init__(self, function: Callable, name: str):
        self.function, self.name = function, name

    def run(self, pairs: Sequence[Pair]) -> list[Outcome]:
        from difftest.runner import ImplError, ImplUnderTest, impl_failure

        spark = load_spark("spark_impl.session", "get_spark")()
        impl = ImplUnderTest(self.function, spark, self.name)
        by_spec: dict[WindowSpec, list[int]] = {}
        for index, (spec, _) in enumerate(pairs):
            by_spec.setdefault(spec, []).append(index)
        out: list[Outcome] = [()] * len(pairs)
        for spec, indexes in by_spec.items():
            batch = [(str(i), pairs[i][1]) for i in indexes]
            dialect = next((d for d in IMPLEMENTED if writes(spec, d)), "esper")
            try:
                updates = impl.run(spec, oracle.render(spec, dialect), dialect, batch)
            except WindowOracleError as exc:
                updates = {tid: exc for tid, _ in batch}
            except Exception as exc:  # the implementation failing is a finding about it, named once per case
                error = ImplError(f"the implementation failed: {impl_failure(exc)}")
                updates = {tid: error for tid, _ in batch}
            for tid, _ in batch:
                out[int(tid)] = updates.get(tid, ())
        return out


def make_engines(name: str) -> list[Engine]:
    """The engines an `--engine` option names. Java is checked here already when
    Spark is among them, so a run fails before any work rather than after the oracle's."""
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINE_NAMES)}")
    if name != "oracle":
        check_java()
    return {"oracle": [OracleEngine()], "spark": [SparkEngine()], "both": [OracleEngine(), SparkEngine()],
            "streaming": [StreamingEngine()]}[name]


__all__ = [
    "ENGINE_NAMES", "Engine", "EngineFailure", "EngineUnavailable", "ImplEngine", "OracleEngine", "Outcome", "Pair", "SparkEngine",
    "StreamingEngine",
    "check_java", "load_spark", "make_engines",
]
