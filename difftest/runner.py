"""Batched differential runs: the oracle against an implementation under test.

A *batch* is one window and many traces. The oracle runs each trace on its own;
the implementation runs the whole batch once: all traces in one input DataFrame
(built by `spark_impl.frames`, the one place that converts traces), one call of
the implementation, one collect. Results are compared update by update under
CORPUS.md equality (`difftest.compare`).

Hypothesis draws each batch: its window (through `difftest.strategies.windows`)
and the seed its traces are made from (`seeded_traces`: drawing every choice of a
thousand traces from Hypothesis costs more than the Spark job). The run goes in
rounds, a window per kind per round, so every kind gets its share of the budget
(`Runner`). The implementation's job for one batch runs in a worker thread while
the main thread makes the next batch and runs it through the oracle.

When a batch disagrees, the disagreeing trace is shrunk by batched delta
debugging (`difftest.shrink`: each round tries every candidate in one Spark job)
to a minimal case, which the runner saves to `corpus/found/` with the oracle's
output as `expected` and the disagreement in `about`. (Hypothesis's own shrinker
runs one Spark job per candidate and stops at its five-minute limit long before
a Spark-backed case is small.)

The implementation under test is any function with the signature and schemas
of `spark_impl.apply_window(trace_df, window, dialect) -> DataFrame`.
"""

from __future__ import annotations

import contextlib
import copyreg
import gc
import hashlib
import importlib
import inspect
import math
import os
import sys
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from functools import reduce
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import Any

from attrs import define, field, frozen
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisWarning

import oracle
from difftest.compare import Difference, compare, counted
from difftest.shrink import shrink
from difftest.known import KNOWN_DIFFERENCES, KnownDifference, known_difference
from difftest.strategies import implemented_kinds, seeded_traces, trace_shape, windows
from oracle.dialects import IMPLEMENTED, case_fields, settings as case_settings, window_name
from oracle.cases import Case, dump_case
from oracle.errors import UnsupportedWindow, WindowOracleError
from oracle.model import Arrive, Trace, Update, WindowSpec, spec_kind
from oracle.windows import make_window

DEFAULT_IMPL = "spark_impl:apply_window"


class RunnerError(WindowOracleError):
    """A run that cannot start: an --impl that does not load, a bad --window."""


def load_impl(name: str) -> Callable:
    """The function `MODULE:FUNCTION` names, the module found on the path or in
    the current folder."""
    module_name, _, function_name = name.partition(":")
    if not module_name or not function_name:
        raise RunnerError(f"--impl must be MODULE:FUNCTION, got {name!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:  # as pytest and `python -m` do: the user's own folder
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RunnerError(f"--impl {name}: cannot import {module_name}: {exc}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise RunnerError(f"--impl {name}: {module_name} has no function {function_name!r}")
    return function


# --------------------------------------------------------------------------- one batch


@frozen
class TraceResult:
    """One trace of a batch: the oracle's updates and the implementation's (or its error)."""

    trace_id: str
    trace: Trace
    expected: tuple[Update, ...]
    actual: tuple[Update, ...] | None
    error: str | None
    difference: Difference | None
    known: KnownDifference | None = None

    @property
    def disagrees(self) -> bool:
        return self.error is not None or self.difference is not None

    @property
    def mismatch(self) -> bool:
        return self.disagrees and self.known is None

    def describe(self) -> str:
        if self.error is not None:
            return f"the implementation failed: {self.error}"
        return self.difference.render() if self.difference else "no difference"


@frozen
class BatchResult:
    spec: WindowSpec
    window: str
    dialect: str
    results: tuple[TraceResult, ...]

    @property
    def mismatches(self) -> list[TraceResult]:
        return [r for r in self.results if r.mismatch]


def impl_failure(exc: BaseException) -> str:
    """What an implementation's exception says (`spark_impl.errors.cause`): the
    Python or Java exception's own message, not Spark's wrapper around it.
    Called only where an `ImplUnderTest` exists, so spark_impl is loaded."""
    from spark_impl.errors import cause

    return cause(exc)


class ImplUnderTest:
    """Runs a batch through an `apply_window`-shaped function on a SparkSession."""

    def __init__(self, function: Callable, spark: Any, name: str = DEFAULT_IMPL):
        from spark_impl import frames

        self.function, self.spark, self.name, self.frames = function, spark, name, frames
        try:
            takes_validate = "validate" in inspect.signature(function).parameters
        except (TypeError, ValueError):
            takes_validate = False
        self.skip_check = {"validate": False} if takes_validate else {}

    def unsupported(self, spec: WindowSpec) -> str | None:
        """Why the implementation does not run `spec`, where its module says so
        (an `unsupported(spec)` function beside the function under test)."""
        check = getattr(sys.modules.get(getattr(self.function, "__module__", ""), None), "unsupported", None)
        return check(spec) if callable(check) else None

    def run(self, spec: WindowSpec, window: str, dialect: str,
            batch: Sequence[tuple[str, Trace]]) -> dict[str, tuple[Update, ...]]:
        out, reader = self._output(spec, window, dialect, batch)
        return self._collect(out, batch, reader)

    def run_many(self, members: Sequence[Member]) -> list[tuple[dict[str, tuple[Update, ...]] | None, str | None]]:
        """Several batches (each a window and its traces) in one Spark job:
        each window's output, its harness columns and its member's index,
        unioned and collected by one action (a job costs about a second
        whatever it holds). Per member its updates, or its error: a window
        the function refuses, or whose output is not the schema, fails
        alone; where the one job fails, each window runs again alone, so the
        error is its own window's."""
        results: list = [None] * len(members)
        outputs = []
        for index, (spec, window, dialect, batch) in enumerate(members):
            try:
                out, reader = self._output(spec, window, dialect, batch)
            except ImplError as exc:
                results[index] = (None, str(exc))
            except Exception as exc:  # the implementation under test failing is a finding, not a crash
                results[index] = (None, impl_failure(exc))
            else:
                outputs.append((index, out, reader))
        if len(outputs) == 1:
            index, out, reader = outputs[0]
            results[index] = _collected(lambda: self._collect(out, members[index][3], reader))
        elif outputs:
            try:
                union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True),
                               [out.selectExpr("*", f"{index} AS `#member`") for index, out, _ in outputs])
                columns = self.frames.collect_columns(union)
            except Exception:  # noqa: BLE001 - whose window failed is told by running each alone
                for index, out, reader in outputs:
                    results[index] = _collected(lambda: self._collect(out, members[index][3], reader))
            else:
                split: dict[int, list[int]] = {index: [] for index, _, _ in outputs}
                for place, member in enumerate(columns.pop("#member")):
                    split[member].append(place)
                for index, _, reader in outputs:
                    mine = split[index]
                    part = {name: [values[i] for i in mine] for name, values in columns.items()}
                    results[index] = (self._updates(part, members[index][3], reader), None)
        return results

    def _output(self, spec: WindowSpec, window: str, dialect: str, batch: Sequence[tuple[str, Trace]]):
        """The function's output over the batch's frame, its harness columns
        selected (`frames.harness_columns`), and the reader of its rows' fields."""
        frame = self.frames.to_dataframe(self.spark, batch, extra_properties=self.frames.spec_properties(spec),
                                         mixed=spec.MIXED_KINDS)
        # a spec whose case keys go beyond its text (eKuiper's time mode, zone) is handed as the spec itself;
        # the frame holds checked traces, so an implementation that can skip its own table check is asked to
        out = self.function(frame, spec if case_settings(spec, dialect) else window, dialect, **self.skip_check)
        check_output(out, rows=self.frames.posts_rows(spec))
        columns, reader = self.frames.harness_columns(out, spec)
        return out.selectExpr(*columns), reader

    def _collect(self, out, batch: Sequence[tuple[str, Trace]], reader) -> dict[str, tuple[Update, ...]]:
        """The updates of one window's output, collected by a job of its own."""
        return self._updates(self.frames.collect_columns(out), batch, reader)

    def _updates(self, columns, batch: Sequence[tuple[str, Trace]], reader) -> dict[str, tuple[Update, ...]]:
        return self.frames.updates_from_columns(columns, dict(batch),
                                                {tid: reader for tid, _ in batch} if reader else None)


#: one batch of a job: (spec, window clause, dialect, labelled traces)
Member = tuple[WindowSpec, str, str, Sequence[tuple[str, Trace]]]


def _collected(updates: Callable[[], dict]) -> tuple[dict | None, str | None]:
    """(updates(), None), or (None, the implementation's error)."""
    try:
        return updates(), None
    except Exception as exc:  # the implementation under test failing is a finding, not a crash
        return None, impl_failure(exc)


#: the columns the harness reads from an implementation's output, and their types
#: (a type name set: Spark's simpleString of each allowed type); `pos` is any orderable value
OUTPUT_TYPES: dict[str, tuple[str, ...] | None] = {
    "trace_id": ("string",),
    "after": ("bigint", "int"),
    "phase": ("bigint", "int", "smallint", "tinyint"),
    "time": ("bigint",),
    "ordinal": ("bigint", "int", "smallint", "tinyint"),
    "side": ("string",),
    "pos": None,
    "id": ("string",),
}


#: columns the harness reads where the output has them: a rejected item's
#: message (`error`, a string, on its row of side 'error'; null else), an
#: eKuiper pane's bounds, a query's pane rows' event; every other column of a
#: window posting rows is a field of its rows (`spark_impl.frames.RowFields`)
OPTIONAL_OUTPUT: dict[str, tuple[str, ...]] = {"error": ("string",), "window": ("struct<start:bigint,end:bigint>",),
                                                "pane_event": ("string",)}


class ImplError(RunnerError):
    """An implementation under test that returned no frame, or a frame without
    the output's columns: an error of the implementation, not a mismatch."""


def check_output(out: Any, rows: bool = False) -> None:
    """Raise `ImplError` unless `out` is a Spark DataFrame with the output's
    columns (OUTPUT_TYPES; `rows`, a window posting rows of fields: all but
    `id`), naming what is wrong."""
    schema = getattr(out, "schema", None)
    if out is None or schema is None or not hasattr(out, "collect") or not hasattr(schema, "fields"):
        kind = "None" if out is None else f"a {type(out).__module__}.{type(out).__name__}"
        raise ImplError(f"the implementation returned {kind}, not a Spark DataFrame")
    fields = {f.name: f.dataType.simpleString() for f in schema.fields}
    for name, allowed in OUTPUT_TYPES.items():
        if rows and name == "id":
            continue
        if name not in fields:
            raise ImplError(f"the implementation's output has no column {name!r} (it has {', '.join(fields)}); "
                            "see the README's output schema")
        if allowed is not None and fields[name] not in allowed:
            raise ImplError(f"the implementation's output column {name!r} is {fields[name]}, not {' or '.join(allowed)}")
    for name, allowed in OPTIONAL_OUTPUT.items():
        if name in fields and fields[name] not in allowed:
            raise ImplError(f"the implementation's output column {name!r} is {fields[name]}, not {' or '.join(allowed)}")


def _mapping_proxy(values: dict) -> MappingProxyType:
    return MappingProxyType(values)


# traces and updates hold their properties as read-only mappings: sent to the oracle's processes as dicts
copyreg.pickle(MappingProxyType, lambda proxy: (_mapping_proxy, (dict(proxy),)))


def expected_updates(spec: WindowSpec, batch: Sequence[tuple[str, Trace]]) -> dict[str, tuple[Update, ...]]:
    """The oracle's updates for each trace of a batch, one trace at a time."""
    return {tid: oracle.run(spec, trace) for tid, trace in batch}


def run_impl(impl: ImplUnderTest, spec: WindowSpec, window: str, dialect: str,
             batch: Sequence[tuple[str, Trace]]) -> tuple[dict[str, tuple[Update, ...]] | None, str | None]:
    """The implementation's updates for the batch (one job), or its error."""
    try:
        return impl.run(spec, window, dialect, batch), None
    except ImplError as exc:
        return None, str(exc)
    except Exception as exc:  # the implementation under test failing is a finding, not a crash
        return None, impl_failure(exc)


def run_impl_many(impl, members: Sequence[Member]) -> list[tuple[dict[str, tuple[Update, ...]] | None, str | None]]:
    """`run_impl` of each member, in one job where the implementation runs
    several windows at once (`ImplUnderTest.run_many`)."""
    many = getattr(impl, "run_many", None)
    if many is None:
        return [run_impl(impl, *member) for member in members]
    try:
        return many(members)
    except Exception as exc:  # outside any one window's run (the frames, the session): every member's error
        return [(None, impl_failure(exc))] * len(members)


def judge(spec: WindowSpec, window: str, dialect: str, batch: Sequence[tuple[str, Trace]],
          expected: dict[str, tuple[Update, ...]], actual: dict[str, tuple[Update, ...]] | None,
          error: str | None, known: Sequence[KnownDifference] = KNOWN_DIFFERENCES) -> BatchResult:
    """Compare the implementation's updates with the oracle's, trace by trace."""
    results = []
    for tid, trace in batch:
        got = None if actual is None else actual.get(tid, ())
        difference = None if got is None else compare(expected[tid], got)
        entry = None
        if difference is not None:
            entry = known_difference(spec, trace, expected[tid], got, known)
        results.append(TraceResult(tid, trace, expected[tid], got, error, difference, entry))
    return BatchResult(spec, window, dialect, tuple(results))


def label(batch_traces: Sequence[Trace]) -> list[tuple[str, Trace]]:
    """The batch's traces with their trace ids, `t0`, `t1`, ..."""
    return [(f"t{i}", trace) for i, trace in enumerate(batch_traces)]


def check_batch(impl: ImplUnderTest, spec: WindowSpec, window: str, dialect: str,
                batch_traces: Sequence[Trace], known: Sequence[KnownDifference] = KNOWN_DIFFERENCES) -> BatchResult:
    """Run one batch through the oracle (trace by trace) and `impl` (once), and compare."""
    batch = label(batch_traces)
    expected = expected_updates(spec, batch)
    actual, error = run_impl(impl, spec, window, dialect, batch)
    return judge(spec, window, dialect, batch, expected, actual, error, known)


# --------------------------------------------------------------------------- statistics


@define
class KindStats:
    """What one window kind's part of a run compared."""

    kind: str
    asked: int = 0
    batches: int = 0
    cases: int = 0
    events: int = 0
    updates: int = 0
    rejected: int = 0  # items the window refused, each posted as an `error` update (late rows, keyed errors)
    mismatches: int = 0
    error: str | None = None  # the implementation failed (raised, or returned no usable frame): why
    unsupported: int = 0  # drawn cases of windows the implementation says it does not build
    unsupported_reason: str | None = None  # the first such window's reason
    reasons: list[str] = field(factory=list)  # per saved case: the first differing update
    known: dict[str, int] = field(factory=dict)
    seconds: float = 0.0
    found: list[str] = field(factory=list)
    pictures: list[str] = field(factory=list)  # the saved cases' pictures
    windows: set[str] = field(factory=set)  # the distinct windows drawn

    @property
    def compared_nothing(self) -> bool:
        """No update was compared (every drawn trace posted nothing, or nothing ran):
        not a pass, whatever the mismatch count says."""
        return self.updates == 0 and self.error is None

    def add(self, result: BatchResult) -> None:
        self.batches += 1
        self.windows.add(result.window)
        for r in result.results:
            self.cases += 1
            self.events += sum(isinstance(item, Arrive) for item in r.trace.items)
            self.updates += len(r.expected)
            self.rejected += sum(u.error is not None for u in r.expected)
            if r.known is not None:
                self.known[r.known.name] = self.known.get(r.known.name, 0) + 1

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "asked": self.asked, "batches": self.batches, "windows": len(self.windows),
                "cases": self.cases,
                "error": self.error, "unsupported": self.unsupported, "unsupported_reason": self.unsupported_reason,
                "reasons": self.reasons, "events": self.events,
                "updates_compared": self.updates, "rejected": self.rejected, "mismatches": self.mismatches, "known_differences": self.known,
                "seconds": round(self.seconds, 3), "found": self.found, "pictures": self.pictures}


# --------------------------------------------------------------------------- saving a found case


def save_found(result: TraceResult, batch: BatchResult, folder: Path, impl_name: str, note: str = "") -> Path:
    """Write a minimal disagreeing case to `folder/<dialect>-<window>-<hash>.json`
    (the window named in its dialect's words, `dialects.window_name`; the hash of
    its trace and expectation; `-2`, `-3`, ... where another finding of another
    run holds that name), the oracle's output as `expected`."""
    kind = f"{batch.dialect}-{window_name(batch.spec, batch.dialect)}"
    window, extra = case_fields(batch.spec, batch.dialect)
    case = Case(name="", dialect=batch.dialect, window=window, trace=result.trace, expected=result.expected, extra=extra)
    body = dump_case(case)
    digest = hashlib.sha1(body.encode()).hexdigest()[:10]
    headline = result.error or (result.difference.headline() if result.difference else "")
    case = Case(
        name=f"found-{kind}-{digest}",
        about=f"{impl_name} disagrees with the oracle: {headline}",
        source=f"found by difftest run (Hypothesis-drawn, shrunk by batched delta debugging){note}",
        dialect=batch.dialect, window=window, trace=result.trace, expected=result.expected, extra=extra,
    )
    folder.mkdir(parents=True, exist_ok=True)
    text = dump_case(case)
    path, n = folder / f"{kind}-{digest}.json", 1
    while path.exists() and path.read_text(encoding="utf-8") != text:  # never overwrite another finding
        n += 1
        path = folder / f"{kind}-{digest}-{n}.json"
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the run


@frozen
class Target:
    """What one part of a run draws: a kind of window, or one fixed window clause,
    in a dialect (None: the runner's)."""

    kind: str
    specs: st.SearchStrategy
    dialect: str | None = None


ALL_DIALECTS = "all"


def targets(dialect: str, window: str | None, kinds: Iterable[str] | None = None) -> list[Target]:
    """What a run draws. `dialect` "all": every implemented kind of every dialect
    (a kind named by `kinds` in each dialect that has it; `window` read as Esper)."""
    if dialect == ALL_DIALECTS:
        if window is not None:
            return [Target(t.kind, t.specs, "esper") for t in targets("esper", window)]
        wanted = list(kinds or ())
        unknown = [k for k in wanted if not any(k in implemented_kinds(d) for d in IMPLEMENTED)]
        if unknown:
            raise RunnerError(f"unknown or unimplemented window kind {unknown[0]!r} in every dialect")
        return [Target(f"{d}: {t.kind}", t.specs, d) for d in IMPLEMENTED
                for t in targets(d, None, [k for k in wanted if k in implemented_kinds(d)] or None)
                if not wanted or t.kind in wanted]
    if window is not None:
        spec = oracle.parse(window, dialect)
        try:
            make_window(spec, 0)
        except UnsupportedWindow as exc:
            raise RunnerError(f"unsupported window {window!r}: {exc}") from None
        return [Target(spec_kind(spec), st.just(spec))]
    known = implemented_kinds(dialect)
    for kind in kinds or ():
        if kind not in known:
            raise RunnerError(f"unknown or unimplemented window kind {kind!r} in the {dialect} dialect; "
                              f"the oracle runs: {', '.join(known)}")
    return [Target(kind, windows(dialect, [kind])) for kind in (kinds or known)]


def draws(specs: st.SearchStrategy) -> st.SearchStrategy:
    """(spec, seed): a window and the seed its traces are made from (`seeded_traces`)."""
    return st.tuples(specs, st.integers(0, 2**64 - 1))


@define
class KindRun:
    """One target's part of a run: its statistics, the windows Hypothesis drew
    for it and not yet run, the traces handed out, its first disagreeing batch."""

    target: Target
    stats: KindStats
    dialect: str
    draws: deque = field(factory=deque)  # (spec, seed), run in the order drawn
    refills: int = 0  # Hypothesis runs that drew for this kind
    drawn: int = 0
    failed: BatchResult | None = None


@define
class Batch:
    """A window of a kind and its traces, run through the oracle."""

    kind: KindRun
    spec: WindowSpec
    window: str
    batch: list[tuple[str, Trace]]
    expected: dict[str, tuple[Update, ...]] | Future  # a Future where the oracle runs in a process pool


@define
class InFlight:
    """Batches whose implementation job (one for them all) runs in a worker thread."""

    batches: list[Batch]
    job: Future


@contextlib.contextmanager
def fewer_collections(young: int = 50_000):
    """Python's cyclic collector run rarely for the block: the objects present
    at its start frozen (never walked again) and a collection every `young`
    new objects, not 700, then the collector's settings restored. A run makes
    millions of small objects (traces, updates, rows) that live until judged,
    and the default collector walked them again and again: the oracle's and
    the updates' work of 25 windows took 4.0 s with it, 2.4-2.5 s without
    (measured in one process). Reference counting frees what it always did."""
    saved, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.freeze()
    gc.set_threshold(young, saved[1], saved[2])
    try:
        yield
    finally:
        gc.set_threshold(*saved)
        if not frozen:  # a process that froze objects itself keeps them (and ours) frozen
            gc.unfreeze()


#: a kind's traces are spread over at least this many windows (batches)
SPECS_PER_KIND = 10
#: batches (windows) the implementation runs in one job (`ImplUnderTest.run_many`)
WINDOWS_PER_JOB = 8
MIN_BATCH = 20


@define
class Runner:
    """Drives Hypothesis over each target and keeps the statistics.

    The run goes in rounds: each round gives every kind that has traces left
    one window (a batch of `window_size` traces), kind after kind, so a costly
    kind delays every kind alike and never starves the ones after it. The
    first round runs whatever the budget; a later one stops where the budget
    ends. Hypothesis draws each kind's windows and trace seeds up front
    (`draws`), with a seed of its own per kind, so a run's windows do not
    depend on its timing. Each batch's traces are made from its seed
    (`seeded_traces`) and run through the oracle in the main thread while the
    implementation's jobs for the batches before it run in worker threads
    (`in_flight` jobs at most, across kinds), so Python and Spark work at
    the same time. A job runs `windows_per_job` batches, of any kinds, at once
    (`ImplUnderTest.run_many`: a Spark job costs about a second whatever it
    holds). A kind's first disagreeing batch ends its drawing; at the
    end of the run its disagreeing trace is shrunk and saved."""

    impl: ImplUnderTest
    dialect: str = "esper"
    batch_size: int = 1000
    max_items: int = 25
    found_dir: Path = Path("corpus/found")
    seed: int | None = None
    in_flight: int = 3
    windows_per_job: int = WINDOWS_PER_JOB
    on_batch: Callable[[str, BatchResult], None] | None = None
    on_target: Callable[[KindStats], None] | None = None  # called for each kind as the run ends
    on_round: Callable[[int, int, float], None] | None = None  # (round, traces judged so far, seconds) after each round
    stats: list[KindStats] = field(factory=list)
    done_log: list[tuple[float, int]] = field(factory=list)  # (clock when judged, traces) per batch
    dialects: list[str] = field(factory=list)  # the dialects the run's targets drew
    pictures: bool = True  # draw each saved case (expected above actual), `difftest.show.picture_file`
    pictures_dir: Path | None = None  # where (None: beside the saved case)
    oracle_processes: int = 0  # > 0: the oracle runs in that many processes, not in the main thread
    _pending: deque = field(factory=deque, init=False)
    _gathered: list = field(factory=list, init=False)  # batches made, waiting for their job
    _last_judged: float = field(default=0.0, init=False)
    _oracles: ProcessPoolExecutor | None = field(default=None, init=False)

    def kind_seed(self, target: Target) -> int:
        """The seed of one target's draws: the run's seed mixed with the dialect and
        kind, so no two kinds draw the same traces."""
        key = f"{self.seed}/{target.dialect or self.dialect}/{target.kind}".encode()
        return int.from_bytes(hashlib.sha1(key).digest()[:8], "big")

    def window_size(self, examples: int) -> int:
        """Traces per window: a kind's `examples` over SPECS_PER_KIND windows, at
        least MIN_BATCH (or all of them) and at most `batch_size`."""
        return max(min(MIN_BATCH, examples), min(self.batch_size, math.ceil(examples / SPECS_PER_KIND)))

    def run(self, targets_: Sequence[Target], examples: int, budget: float | None) -> list[KindStats]:
        """Every target's windows, round by round, until each kind drew `examples`
        traces or found a disagreement, or `budget` seconds are spent."""
        start = self._last_judged = time.perf_counter()
        deadline = math.inf if budget is None else start + budget
        self.dialects += [d for d in dict.fromkeys(t.dialect or self.dialect for t in targets_) if d not in self.dialects]
        kinds = [KindRun(t, KindStats(t.kind, asked=examples), t.dialect or self.dialect) for t in targets_]
        self.stats += [k.stats for k in kinds]
        size = self.window_size(examples)
        with ThreadPoolExecutor(max(1, self.in_flight - 1), thread_name_prefix="impl") as worker, \
                self._oracle_pool() as oracles, fewer_collections():
            self._oracles = oracles
            round_ = 0
            while True:
                live = [k for k in kinds if k.failed is None and k.drawn < examples]
                if not live or (round_ and time.perf_counter() > deadline):
                    break
                for kind in live:
                    if round_ and time.perf_counter() > deadline:
                        break
                    self._launch(worker, kind, min(size, examples - kind.drawn), math.ceil(examples / size))
                round_ += 1
                if self.on_round:
                    self.on_round(round_, sum(s.cases for s in self.stats), time.perf_counter() - start)
            self._submit(worker)
            while self._pending:
                self._settle(self._pending.popleft())
            self._oracles = None
        for kind in kinds:
            if kind.failed is not None:
                self._record(kind.stats, kind.failed)
            if self.on_target:
                self.on_target(kind.stats)
        return self.stats

    def _oracle_pool(self):
        """The processes the oracle runs in (`oracle_processes`; spawned, not forked
        from a process that runs a JVM gateway), or a context giving None."""
        if not self.oracle_processes:
            return contextlib.nullcontext()
        import multiprocessing

        return ProcessPoolExecutor(self.oracle_processes, mp_context=multiprocessing.get_context("spawn"))

    def _next_draw(self, kind: KindRun, windows: int) -> tuple[WindowSpec, int]:
        """The kind's next (spec, seed); `windows` more drawn by Hypothesis when none is left."""
        if not kind.draws:
            found: list[tuple[WindowSpec, int]] = []

            @settings(max_examples=max(1, windows), deadline=None, database=None, phases=[Phase.generate],
                      print_blob=False, verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck))
            @given(draws(kind.target.specs))
            def body(drawn):
                found.append(drawn)

            if self.seed is not None:
                body = hypothesis_seed(self.kind_seed(kind.target) + kind.refills)(body)
            with warnings.catch_warnings():  # Hypothesis notes Spark's recursion-limit change: not ours to fix
                warnings.simplefilter("ignore", HypothesisWarning)
                body()
            kind.refills += 1
            kind.draws.extend(found)
        return kind.draws.popleft()

    def _launch(self, worker: ThreadPoolExecutor, kind: KindRun, count: int, windows: int) -> None:
        """One window of `count` traces for `kind`: its traces made and run through
        the oracle here, its implementation job handed to `worker`."""
        spec, seed = self._next_draw(kind, windows)
        kind.drawn += count
        reason = self.impl.unsupported(spec)
        if reason is not None:  # counted and reported, never compared: not a pass
            kind.stats.unsupported += count
            kind.stats.unsupported_reason = (kind.stats.unsupported_reason
                                             or f"{oracle.render(spec, kind.dialect)}: {reason}")
            return
        batch = label(seeded_traces(seed, count, max_items=self.max_items, **trace_shape(spec)))
        window = oracle.render(spec, kind.dialect)
        if self._oracles is not None:
            expected = self._oracles.submit(expected_updates, spec, batch)
        else:
            expected = expected_updates(spec, batch)
        self._gathered.append(Batch(kind, spec, window, batch, expected))
        if len(self._gathered) >= self.windows_per_job:
            self._submit(worker)

    def _submit(self, worker: ThreadPoolExecutor) -> None:
        """The gathered batches' implementation job handed to `worker` (one
        job for them all, `run_impl_many`); the jobs that ended judged, and
        the oldest waited for while `in_flight` jobs are out."""
        if self._gathered:
            batches, self._gathered = self._gathered, []
            members = [(b.spec, b.window, b.kind.dialect, b.batch) for b in batches]
            self._pending.append(InFlight(batches, worker.submit(run_impl_many, self.impl, members)))
        while len(self._pending) >= self.in_flight or (self._pending and self._pending[0].job.done()):
            self._settle(self._pending.popleft())

    def _settle(self, flight: InFlight) -> None:
        """Judge the batches of a job that ended. The wall time since the job
        judged before it is its batches' kinds', shared by their traces, so
        the kinds' seconds add up to the run's."""
        outcomes = flight.job.result()
        now = time.perf_counter()
        traces = sum(len(b.batch) for b in flight.batches)
        share = (now - self._last_judged) / max(1, traces)
        self._last_judged = now
        for batch, (actual, error) in zip(flight.batches, outcomes):
            kind = batch.kind
            expected = batch.expected.result() if isinstance(batch.expected, Future) else batch.expected
            result = judge(batch.spec, batch.window, kind.dialect, batch.batch, expected, actual, error)
            kind.stats.seconds += share * len(batch.batch)
            self.done_log.append((now, len(batch.batch)))
            kind.stats.add(result)
            if self.on_batch:
                self.on_batch(kind.stats.kind, result)
            if result.mismatches and kind.failed is None:
                kind.failed = result

    def _record(self, stats: KindStats, result: BatchResult) -> None:
        errors = [r.error for r in result.mismatches if r.error is not None]
        if errors:  # the implementation failed: nothing to shrink, one report, naming the window
            stats.error = f"{errors[0]} (window: {result.window})"
            return
        stats.mismatches += 1

        def check(candidates: Sequence[Trace]) -> Sequence[TraceResult]:
            return check_batch(self.impl, result.spec, result.window, result.dialect, candidates).results

        read = frozenset(self.impl.frames.spec_properties(result.spec))
        minimal = shrink(result.mismatches, check, read)
        seed = f", seed {self.seed}" if self.seed is not None else ""
        path = save_found(minimal, result, self.found_dir, self.impl.name, note=seed)
        stats.found.append(str(path))
        stats.reasons.append(minimal.describe())
        if self.pictures and minimal.actual is not None:
            from difftest.show import picture_file

            picture = picture_file(path, [(self.impl.name, minimal.actual)], self.pictures_dir)
            if picture is not None:
                stats.pictures.append(str(picture))

    # ------------------------------------------------------------------ totals

    def totals(self) -> dict[str, Any]:
        cases = sum(s.cases for s in self.stats)
        seconds = sum(s.seconds for s in self.stats)
        # steady state: wall time from the end of the run's first job (which pays for
        # Spark's warm-up) to the end of the last, and the traces judged after it; it
        # covers generation, the oracle, the implementation's jobs and the comparison
        steady = self.done_log
        steady_seconds = steady[-1][0] - steady[0][0] if len(steady) > 1 else 0.0
        steady_cases = sum(n for when, n in steady if when > steady[0][0])
        known: dict[str, int] = {k.name: 0 for k in KNOWN_DIFFERENCES}
        for s in self.stats:
            for name, count in s.known.items():
                known[name] = known.get(name, 0) + count
        return {
            "cases": cases,
            "events": sum(s.events for s in self.stats),
            "updates_compared": sum(s.updates for s in self.stats if not s.error),
            "rejected": sum(s.rejected for s in self.stats),
            "mismatches": sum(s.mismatches for s in self.stats),
            "errors": {s.kind: s.error for s in self.stats if s.error},
            "unsupported": {s.kind: s.unsupported for s in self.stats if s.unsupported},
            "known_differences": known,
            "seconds": round(seconds, 3),
            "traces_per_second": round(steady_cases / steady_seconds, 1) if steady_seconds else None,
            "traces_per_second_overall": round(cases / seconds, 1) if seconds else None,
            "found": [p for s in self.stats for p in s.found],
            "compared_nothing": [s.kind for s in self.stats if s.compared_nothing],
        }


# --------------------------------------------------------------------------- reporting

COLUMNS = ("window kind", "windows", "cases", "events", "updates", "rejected", "mismatches", "known", "seconds")
VERDICT = COLUMNS.index("mismatches")


def cases_cell(stats: KindStats) -> str:
    """The cases a kind compared; `run/asked` where the budget or a mismatch
    stopped it before the cases asked for."""
    return str(stats.cases) if stats.cases >= stats.asked else f"{stats.cases}/{stats.asked}"


def kind_line(stats: KindStats) -> str:
    """One line for a finished kind, printed as it finishes when the output is not a terminal."""
    if stats.error:
        return f"{stats.kind}: ERROR, the implementation failed: nothing compared (the reason follows the table)"
    short = "" if stats.cases >= stats.asked else f" (stopped at {stats.cases} of {stats.asked} asked)"
    rejected = f" ({counted(stats.rejected, 'rejected item')}: error updates)" if stats.rejected else ""
    return (f"{stats.kind}: {counted(len(stats.windows), 'window')}, {counted(stats.cases, 'case')}{short}, "
            f"{counted(stats.updates, 'update')} compared{rejected}, "
            f"{counted(stats.mismatches, 'mismatch', 'mismatches')}, {stats.seconds:.1f} s")


def table_lines(stats: Sequence[KindStats], totals: dict[str, Any]) -> list[tuple[str, str | None]]:
    """The end-of-run table, one row per window kind, as (text, style) lines."""
    # a kind whose implementation failed compared nothing: its updates are "-" and its verdict ERROR
    rows = [(s.kind, len(s.windows), cases_cell(s), s.events, "-" if s.error else s.updates, s.rejected,
             "ERROR" if s.error else s.mismatches, sum(s.known.values()), f"{s.seconds:.1f}") for s in stats]
    rows.append(("total", sum(len(s.windows) for s in stats), totals["cases"], totals["events"], totals["updates_compared"], totals["rejected"],
                 totals["mismatches"],
                 sum(totals["known_differences"].values()), f"{totals['seconds']:.1f}"))
    widths = [max(len(str(r[i])) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]

    def fmt(row):
        return "  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(row, widths)))

    lines: list[tuple[str, str | None]] = [(fmt(COLUMNS), "bold")]
    for row in rows:
        lines.append((fmt(row), "red" if row[VERDICT] else None))
    steady, overall = totals["traces_per_second"], totals["traces_per_second_overall"]
    lines.append((f"throughput: {steady if steady is not None else '-'} traces/s compared in steady state "
                  f"({overall if overall is not None else '-'} traces/s overall, Spark's warm-up included)", None))
    known = totals["known_differences"]
    lines.append(("known differences: " + (", ".join(f"{k}: {v}" for k, v in known.items()) or "none listed"), None))
    nothing = [s.kind for s in stats if s.compared_nothing]
    if nothing:
        lines.append((f"NOT CHECKED: {counted(len(nothing), 'kind')} compared no update at all (not a pass): "
                      + ", ".join(nothing), "red"))
    for s in stats:
        if s.error:
            lines.append((f"{s.kind}: the implementation failed (not a mismatch, nothing saved): {s.error}", "red"))
        if s.unsupported:
            lines.append((f"{s.kind}: {s.unsupported} drawn cases not compared, windows the implementation does not "
                          f"build (e.g. {s.unsupported_reason})", "yellow"))
        for path, reason in zip(s.found, s.reasons):
            lines.append((f"{s.kind}: saved the minimal disagreeing case to {path}", "red"))
            lines.extend((f"  {line}", "red") for line in reason.splitlines())
        for picture in s.pictures:
            lines.append((f"{s.kind}: its picture (expected above actual): {picture}", "red"))
    return lines


def report_json(runner: Runner, impl_name: str, totals: dict[str, Any]) -> dict[str, Any]:
    return {"impl": impl_name, "dialects": runner.dialects or [runner.dialect], "batch_size": runner.batch_size,
            "batches_in_flight": runner.in_flight, "seed": runner.seed,
            "kinds": [s.to_json() for s in runner.stats], **totals,
            "known_difference_list": [{"name": k.name, "kinds": list(k.kinds), "reason": k.reason}
                                      for k in KNOWN_DIFFERENCES]}
