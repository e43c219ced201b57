"""`difftest bench --engine streaming [--events N] [--keys K] [--batch-rows R] [--window CLAUSE ...]
[--budget SECONDS] [--report FILE.json]`: the streaming windows' throughput (issue 28) on local[2] (or the
session's master), beside the batch `apply_window` of the same data.

Input: one trace of N events (default 1 M) over K keys (default 10,000), one
event per ms (`seq` = `time` = n, `id` = n as text), the key `k` of each event
drawn uniformly (numpy, seed 28), as trace items (`spark_impl.frames`' input
schema) in Parquet files of R rows each (default 100,000), written once before
any timing, in `seq` order. An eKuiper query reads `k` as `color`.

Per workload (an Esper clause, `<dialect>: <clause>`, or an eKuiper `SELECT`;
default `WORKLOADS`):

* **the stream**: `spark_impl.streaming.apply_window` on
  `spark.readStream...parquet(folder)` read one file per micro-batch
  (`maxFilesPerTrigger=1`), every output column written to Spark's `noop`
  sink in append mode, `trigger(availableNow=True)`, from a fresh checkpoint.
  Seconds are end to end: from `start()` to the query's end, so the query's
  start (planning, the state store's first open) is in; the steady rate
  leaves out the first micro-batch (events of the later batches over their
  `triggerExecution` durations). With `--budget S` a query still running
  after S seconds is stopped and its figures are those of the micro-batches
  it completed (marked `stopped`): a window too slow to finish still gets a
  measured rate.
* **the state**: read from the query's progress (`lastProgress.stateOperators`
  of the last completed micro-batch, and the largest over all): the rows in
  the store (`numRowsTotal`: one per trace key), `memoryUsedBytes` (what the
  RocksDB provider reports as its memory), and RocksDB's custom metrics
  (`rocksdbSstFileSize`: the store's files on disk; all are in the report).
* **peak memory**: the peak resident memory (`VmHWM`, reset through
  `/proc/PID/clear_refs` before each run) of the JVM (in local mode the
  driver is the executor) and of the Python worker processes under it
  (pyspark's daemon and the workers it forks, each a process whose program
  is a `python*`, sampled every 0.2 s: the
  largest single worker and the sum of their peaks), on Linux; "unknown"
  where /proc does not tell (a Spark Connect session).
* **the batch**: `spark_impl.apply_window` with its defaults on the same
  files read as a recorded trace frame, every output column to `noop`:
  seconds (its table check included), events/s, and the same peaks; then,
  untimed, its rows counted, to print beside the stream's (the sink's
  `numOutputRows`): a stream that went through every event posts as many.

* **the bare stream** (`BARE`, run first unless `--no-bare`): the same files,
  the same operator (`transformWithStateInPandas` on the RocksDB store) and
  output schema, keyed by the trace, with a processor that posts each event
  as one insert row built column-wise (no Python loop) and keeps one counter
  per key (`BareProcessor`): what any Python processor pays before a window
  runs in it. The same keyed by `k` (`BARE_BY_KEY`: 10,000 keys, one call and
  one state read and write each per micro-batch) is the ceiling of a design
  that keys the sub-windows apart. Each workload's stream prints its ratio to
  the bare stream.

* **the oracle alone** (`--no-bare` leaves it out too): the window's state
  machine as the processor runs it (`oracle.driver`'s `step_keyed`, each
  event built first, untimed), in this process with no Spark, over the first
  `ORACLE_EVENTS` events of the same trace: the rate no processor running
  the specification can pass, whatever Spark does around it.

Before the timed runs one tiny stream (a single file of 1,000 events) runs
through the first workload untimed, so the first timed query does not pay the
JVM's first streaming query alone. Each workload runs `--repeat` times
(default 1), the best counts. Target (issue 28): at least `TARGET_RATE`
events/s end to end for each workload at 1 M events over 10,000 keys.

**The last measured run** (issue 28): one trace of 1 M events over 10,000 keys in
micro-batches of 100,000 rows on `local[2]`, every column to the `noop`
sink. Beside each window, in the same run: the **bare stream** (the same
files, operator, key and output schema, with a processor that posts each
event as one row built column-wise and keeps a counter: what any Python
processor pays before a window runs in it), the same **keyed by `k`**
(10,000 keys: the ceiling of a design that keys the sub-windows apart), the
**oracle alone** (the window's state machine as the processor runs it, no
Spark, over the first 200,000 events, CPU time) and the **batch**
`apply_window` of the same files. One run of `difftest bench --engine
streaming` (defaults), nothing else on the machine:

| workload | stream s | events/s | steady/s | x bare stream | oracle alone, events/s | batch s | batch events/s | state (RocksDB files) | JVM peak | worker peak |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| bare stream, keyed by trace | 14.84 | 67,399 | 76,857 | 1.0 | - | - | - | 8.37 KiB | 799 MiB | 161 MiB |
| bare stream, keyed by `k` | 195.74 | 5,109 | 5,179 | 13.2 | - | - | - | 551 KiB | 821 MiB | 156 MiB |
| `#groupwin(k)#time(10 sec)` | 55.90 | 17,890 | 17,938 | 3.8 | 61,876 | 19.29 | 51,834 | 28.37 MiB | 1.70 GiB | 486 MiB |
| `#groupwin(k)#length(10)` | 51.52 | 19,412 | 19,264 | 3.5 | 160,671 | 11.10 | 90,058 | 34.05 MiB | 2.04 GiB | 558 MiB |
| `KEEP 10 ROWS PER(k)` | 50.85 | 19,666 | 19,398 | 3.4 | 150,292 | 10.15 | 98,526 | 34.05 MiB | 2.39 GiB | 547 MiB |
| eKuiper `TUMBLINGWINDOW(ss, 10)` count by color | 37.30 | 26,807 | 27,379 | 2.5 | 106,563 | 12.51 | 79,936 | 19.98 MiB | 3.07 GiB | 465 MiB |

Every stream posted exactly the batch's rows (1,990,000, 1,900,000,
1,900,000 and 1,616,012). The state is one row (one trace); its size is the
pickle of the trace's window plus every event id seen (`validate`), read and
written once per micro-batch.

Target 0.3 M events/s: missed by every workload, and out of reach of a
Python processor on `local[2]`, measured: the bare stream, which runs no
window at all, does 67,399 events/s keyed by trace (the operator's own cost:
the rows to Arrow and back, the state store's commit per micro-batch, the
JVM's sort of each micro-batch by key), and 5,109 keyed by `k`: 10,000 keys
cost a call, a state read and a state write each per micro-batch, so keying
the sub-windows apart would make the stream 13 times slower, not faster.
Per event, a window's stream costs the bare stream's 15 us, the oracle's
(6 to 16 us here), and this module's plumbing (rows to trace items, updates
to rows, the window's pickle read and written once per micro-batch:
measured without a JVM on `#groupwin(k)#length(10)` over 500,000 events,
pickling 26 % of the processor's CPU, building the output frame 12 %,
reading the rows 16 %, the oracle and its item check 30 %). Removing all
of that plumbing would at most double the rate (to about 1 / (15 us + 6 us)
= 48,000 events/s on `#groupwin(k)#length(10)`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from attrs import asdict, define, field

from spark_impl.streaming.traces import _stateful_processor_base

EVENTS = 1_000_000
KEYS = 10_000
BATCH_ROWS = 100_000
TARGET_RATE = 300_000  # events/s end to end (issue 28)
SEED = 28
WORKLOADS = ("#groupwin(k)#time(10 sec)", "#groupwin(k)#length(10)", "ccl: KEEP 10 ROWS PER(k)",
             "SELECT color, count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 10), color")
WARM_EVENTS = 1_000
ORACLE_EVENTS = 200_000  # the oracle-alone figure's events (module docstring)
#: the bare streams' workload names (module docstring)
BARE, BARE_BY_KEY = "bare stream (keyed by trace)", "bare stream (keyed by k)"
#: the state operator's figures printed (every one is in the report)
SHOWN_METRICS = ("rocksdbSstFileSize",)


@define
class Figure:
    """One run of one workload: the stream's or the batch's."""

    workload: str
    mode: str  # "stream", "batch" or "oracle" (the oracle alone, CPU seconds)
    events: int  # events the run went through (the stream's completed micro-batches)
    seconds: float  # end to end
    batches: int = 0
    stopped: bool = False  # the budget ran out before the stream's end
    steady_events_per_s: float | None = None
    first_batch_seconds: float | None = None
    output_rows: int | None = None  # the oracle alone: the updates it posted
    state: dict = field(factory=dict)  # the last micro-batch's state operator figures
    state_peak: dict = field(factory=dict)  # the largest of each over all micro-batches
    jvm_peak_bytes: int | None = None
    worker_peak_bytes: int | None = None
    workers_peak_sum_bytes: int | None = None
    workers: int = 0

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


# --------------------------------------------------------------------------- input


def dialect_and_clause(window: str) -> tuple[str, str]:
    """A workload's dialect and clause: `<dialect>: <clause>`, a bare `SELECT`
    (eKuiper), or an Esper clause."""
    from spark_impl.bench import dialect_and_clause as split, is_query

    return ("kuiper", split(window)[1]) if is_query(window) else split(window)


def key_column(window: str) -> str:
    """The key's property name: `color` for an eKuiper query (its examples' name), else `k`."""
    if window in (BARE, BARE_BY_KEY):
        return "k"
    return "color" if dialect_and_clause(window)[0] == "kuiper" else "k"


def stream_schema(key: str = "k"):
    """The input schema of the bench's trace items: the base columns and the key (long)."""
    from spark_impl.frames import input_schema

    return input_schema({key: "long"})


def write_stream(folder: Path, events: int, keys: int, batch_rows: int, seed: int = SEED) -> int:
    """The bench's trace (module docstring) as Parquet files of `batch_rows`
    rows in `folder`, named and dated in `seq` order (the file source's
    order); the number of files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(stream_schema())
    folder.mkdir(parents=True, exist_ok=True)
    key = np.random.default_rng(seed).integers(0, keys, events, dtype=np.int64)
    stamp = time.time() - 100_000
    files = 0
    for first in range(0, events, batch_rows):
        n = np.arange(first, min(first + batch_rows, events), dtype=np.int64)
        size = len(n)
        table = pa.Table.from_arrays([
            pa.array(["0"] * size, pa.string()), pa.array(n), pa.array(["event"] * size, pa.string()), pa.array(n),
            pa.array(n.astype(str).tolist(), pa.string()), pa.nulls(size, pa.string()), pa.nulls(size, pa.string()),
            pa.array(key[first:first + size])], schema=schema)
        path = folder / f"batch-{files:05d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (stamp + files, stamp + files))
        files += 1
    return files


def _frame(reader, window: str):
    """The files read as the workload's input (the key renamed for an eKuiper query)."""
    key = key_column(window)
    return reader.withColumnRenamed("k", key) if key != "k" else reader


# --------------------------------------------------------------------------- memory


class Peaks:
    """Peak resident memory of the JVM and of the Python processes under it
    (module docstring): `reset()` before a run, `stop()` after it."""

    def __init__(self, jvm_pid: int | None):
        self.jvm_pid = jvm_pid
        self.workers: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def reset(self) -> None:
        self.workers = {}
        for pid in ([self.jvm_pid] if self.jvm_pid else []) + self._python_pids():
            try:
                Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS
            except OSError:
                pass
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def stop(self) -> tuple[int | None, int | None, int | None, int]:
        """(JVM peak, largest worker peak, sum of worker peaks, workers seen), in bytes."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._read_workers()
        jvm = _hwm(self.jvm_pid) if self.jvm_pid else None
        if not self.workers:
            return jvm, None, None, 0
        return jvm, max(self.workers.values()), sum(self.workers.values()), len(self.workers)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self._read_workers()

    def _read_workers(self) -> None:
        for pid in self._python_pids():
            peak = _hwm(pid)
            if peak is not None:
                self.workers[pid] = max(peak, self.workers.get(pid, 0))

    def _python_pids(self) -> list[int]:
        if not self.jvm_pid:
            return []
        parents: dict[int, int] = {}
        names: dict[int, str] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(fields[1])
                names[int(entry.name)] = (entry / "cmdline").read_bytes().decode(errors="replace")
            except (OSError, IndexError, ValueError):
                continue
        below, changed = {self.jvm_pid}, True
        while changed:
            grown = below | {pid for pid, parent in parents.items() if parent in below}
            changed, below = grown != below, grown
        # by the program run (argv[0]): a child the JVM is forking still has the JVM's command line, whose
        # class path names pyspark's folder, and for a moment the JVM's resident memory
        return [pid for pid in below
                if pid != self.jvm_pid and Path(names.get(pid, "").split("\0")[0]).name.startswith("python")]


def _hwm(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def jvm_pid(spark) -> int | None:
    from spark_impl.session import is_connect

    if is_connect(spark):
        return None
    try:
        return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001 - no JVM handle: the peaks are unknown
        return None


# --------------------------------------------------------------------------- runs


def _progress(query) -> list[dict]:
    out = []
    for p in query.recentProgress:
        out.append(p if isinstance(p, dict) else json.loads(p.json))
    return out


def _state_figures(progress: dict) -> dict:
    ops = progress.get("stateOperators") or []
    if not ops:
        return {}
    op = ops[0]
    figures = {name: op.get(name) for name in ("numRowsTotal", "numRowsUpdated", "memoryUsedBytes")}
    figures.update({name: value for name, value in (op.get("customMetrics") or {}).items()})
    return figures


class BareProcessor(_stateful_processor_base()):
    """The bare stream's processor: each input row posted as one insert row
    of the windows' output schema, built column-wise from the input frame, and
    one counter per key (a `ValueState` read and written once per call, as
    the window processors read and write theirs). `text`: the operator's
    text columns of `id` and `k` (`output.Output`)."""

    def __init__(self, text: dict[str, str]):
        self.text = text

    def init(self, handle) -> None:
        self.count = handle.getValueState("count", "n bigint")

    def handleInputRows(self, key, rows, timerValues):
        import pandas as pd

        seen = self.count.get()[0] if self.count.exists() else 0
        for frame in rows:
            n = len(frame)
            seen += n
            yield pd.DataFrame({
                "trace_id": frame["trace_id"], "after": frame["seq"], "phase": pd.array([1] * n, dtype="Int32"),
                "time": frame["time"], "ordinal": pd.array([0] * n, dtype="Int32"), "side": "insert",
                "#due": frame["time"], "#slot": 0, "#n": pd.RangeIndex(n), "error": None,
                "#wstart": pd.array([None] * n, dtype="Int64"), "#wend": pd.array([None] * n, dtype="Int64"),
                self.text["id"]: frame["id"], self.text["k"]: frame["k"]})
        self.count.update((seen,))

    def close(self) -> None:
        pass


def bare_stream(stream, key: str):
    """`BareProcessor` on the bench's stream keyed by `key` (`trace_id` or
    `k`), shaped as a window's output (an event window's: `output.Output`)."""
    from oracle.model import Length
    from spark_impl.streaming import traces
    from spark_impl.streaming.output import Output

    traces.ensure_provider(stream.sparkSession)
    items = stream.selectExpr(*(traces.quoted(c) for c in traces.BASE_COLUMNS), "CAST(k AS STRING) AS k")
    output = Output.of([Length(1)], stream.schema)
    text = {field.name: f"#c{i}" for i, field in enumerate(output.text)}
    posted = items.groupBy(key).transformWithStateInPandas(
        statefulProcessor=BareProcessor(text), outputStructType=output.operator_schema(), outputMode="Append",
        timeMode="None")
    return output.select(posted)


def run_stream(spark, folder: Path, window: str, checkpoint: Path, peaks: Peaks, budget: float | None = None) -> Figure:
    """One workload's stream over the files of `folder` (module docstring)."""
    from spark_impl import streaming

    stream = _frame(spark.readStream.schema(stream_schema()).option("maxFilesPerTrigger", 1).parquet(str(folder)),
                    window)
    if window in (BARE, BARE_BY_KEY):
        out = bare_stream(stream, "trace_id" if window == BARE else "k")
    else:
        dialect, clause = dialect_and_clause(window)
        out = streaming.apply_window(stream, clause, dialect)
    peaks.reset()
    started, started_at = time.perf_counter(), time.time()
    query = (out.writeStream.format("noop").outputMode("append").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    stopped = False
    try:
        finished = query.awaitTermination(budget) if budget else query.awaitTermination()
        if budget and not finished:
            stopped = True
    finally:
        query.stop()
    seconds = time.perf_counter() - started
    jvm, worker, workers_sum, workers = peaks.stop()
    progress = [p for p in _progress(query) if p.get("numInputRows", 0) > 0]
    events = sum(p["numInputRows"] for p in progress)
    if stopped and progress:  # the figures of the completed micro-batches: up to the last one's end
        seconds = _ended(progress[-1], started_at) or seconds
    durations = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress]
    later = sum(p["numInputRows"] for p in progress[1:])
    steady = later / sum(durations[1:]) if later and sum(durations[1:]) > 0 else None
    outputs = [(p.get("sink") or {}).get("numOutputRows", -1) for p in progress]
    states = [_state_figures(p) for p in progress]
    peak = {}
    for state in states:
        for name, value in state.items():
            if isinstance(value, (int, float)):
                peak[name] = max(value, peak.get(name, value))
    return Figure(window, "stream", events, seconds, batches=len(progress), stopped=stopped,
                  steady_events_per_s=steady, first_batch_seconds=durations[0] if durations else None,
                  output_rows=sum(outputs) if outputs and min(outputs) >= 0 else None,
                  state=states[-1] if states else {}, state_peak=peak, jvm_peak_bytes=jvm,
                  worker_peak_bytes=worker, workers_peak_sum_bytes=workers_sum, workers=workers)


def _ended(last: dict, started_at: float) -> float | None:
    """Seconds from `started_at` (epoch seconds) to the end of the micro-batch
    `last` (its progress timestamp plus its duration)."""
    from datetime import datetime

    try:
        begin = datetime.fromisoformat(last["timestamp"].replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError):
        return None
    return begin + last["durationMs"].get("triggerExecution", 0) / 1000 - started_at


def run_oracle(window: str, events: int, keys: int, seed: int = SEED) -> Figure:
    """The oracle alone over the first `events` events of the bench's trace
    (module docstring): the same keys, ids and times as `write_stream`'s."""
    import numpy as np

    from oracle.dialects import parse
    from oracle.driver import start
    from oracle.model import Arrive, Event, Trace

    dialect, clause = dialect_and_clause(window)
    name = key_column(window)
    drawn = np.random.default_rng(seed).integers(0, keys, events, dtype=np.int64).tolist()
    items = [Arrive(Event(str(n), {name: k}), time=n) for n, k in enumerate(drawn)]
    driver = start(parse(clause, dialect), Trace((), 0, {}))
    step, posted = driver.step_keyed, 0
    started = time.process_time()
    for n, item in enumerate(items):
        posted += len(step(n, item))
    return Figure(window, "oracle", events, time.process_time() - started, output_rows=posted)


def run_batch(spark, folder: Path, window: str, peaks: Peaks, events: int) -> Figure:
    """The batch `apply_window` (its defaults) of the same files, every output column to `noop`."""
    from spark_impl import apply_window

    dialect, clause = dialect_and_clause(window)
    peaks.reset()
    started = time.perf_counter()
    frame = apply_window(_frame(spark.read.schema(stream_schema()).parquet(str(folder)), window), clause,
                         dialect=dialect)
    frame.write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - started
    jvm, worker, workers_sum, workers = peaks.stop()
    return Figure(window, "batch", events, seconds, output_rows=frame.count(), jvm_peak_bytes=jvm,
                  worker_peak_bytes=worker, workers_peak_sum_bytes=workers_sum, workers=workers)


def measure(spark, events: int, keys: int, batch_rows: int, windows: Sequence[str], folder: Path, *,
            repeat: int = 1, budget: float | None = None, batch: bool = True, bare: bool = True) -> list[Figure]:
    """Every workload's stream (and, with `batch`, its batch) over one
    written trace, after the bare streams (with `bare`); per workload and mode
    the best of `repeat` runs (the most events, then the fewest seconds)."""
    data = folder / "in"
    files = write_stream(data, events, keys, batch_rows)
    print(f"input: {events:,d} events over {keys:,d} keys in {files} files of up to {batch_rows:,d} rows", flush=True)
    peaks = Peaks(jvm_pid(spark))
    warm = folder / "warm"
    write_stream(warm, WARM_EVENTS, keys, WARM_EVENTS)
    run_stream(spark, warm, windows[0], folder / "warm-checkpoint", peaks)
    figures = []
    for n, window in enumerate(((BARE, BARE_BY_KEY) if bare else ()) + tuple(windows)):
        runs = []
        for r in range(repeat):
            runs.append(run_stream(spark, data, window, folder / f"checkpoint-{n}-{r}", peaks, budget))
            print(f"  stream {window}: {_line(runs[-1])}", flush=True)
        figures.append(max(runs, key=lambda f: (f.events, -f.seconds)))
        if bare and window not in (BARE, BARE_BY_KEY):
            figures.append(run_oracle(window, min(events, ORACLE_EVENTS), keys))
            print(f"  oracle {window}: {_line(figures[-1])} (CPU, no Spark)", flush=True)
        if batch and window not in (BARE, BARE_BY_KEY):
            runs = []
            for _ in range(repeat):
                runs.append(run_batch(spark, data, window, peaks, events))
                print(f"  batch  {window}: {_line(runs[-1])}", flush=True)
            figures.append(min(runs, key=lambda f: f.seconds))
    return figures


# --------------------------------------------------------------------------- report


def _size(n: int | float | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def _count(n: int | None) -> str:
    return "unknown" if n is None else f"{n:,d}"


def _line(f: Figure) -> str:
    stopped = f" (stopped by the budget after {f.batches} micro-batches)" if f.stopped else ""
    return f"{f.events:,d} events in {f.seconds:.2f} s: {f.rate:,.0f} events/s{stopped}"


def verdict(f: Figure, events: int) -> str:
    """The stream's figure against the target: only a run that went through
    every event is a verdict; a stopped run misses by its measured rate."""
    if f.mode != "stream" or f.workload in (BARE, BARE_BY_KEY):
        return ""
    if f.rate >= TARGET_RATE and not f.stopped and f.events == events:
        return "meets"
    return f"MISSES (< {TARGET_RATE:,d} events/s)" if f.rate < TARGET_RATE else "incomplete"


def table(figures: list[Figure], events: int) -> list[str]:
    """One line per workload and mode: events, seconds, events/s, the steady
    rate, state (rows, memory, files), peak memory (JVM, largest worker)."""
    width = max(24, *(len(f.workload) for f in figures))
    lines = [f"{'workload':{width}s} {'mode':6s} {'events':>10s} {'s':>8s} {'events/s':>10s} {'steady/s':>10s} "
             f"{'state rows':>10s} {'state mem':>10s} {'state sst':>10s} {'JVM peak':>10s} {'worker peak':>11s}  "
             "verdict"]
    for f in figures:
        steady = f"{f.steady_events_per_s:,.0f}" if f.steady_events_per_s else "-"
        rows = f.state_peak.get("numRowsTotal")
        lines.append(
            f"{f.workload:{width}s} {f.mode:6s} {f.events:>10,d} {f.seconds:>8.2f} {f.rate:>10,.0f} {steady:>10s} "
            f"{rows if rows is not None else '-':>10} {_size(f.state_peak.get('memoryUsedBytes')):>10s} "
            f"{_size(f.state_peak.get('rocksdbSstFileSize')):>10s} {_size(f.jvm_peak_bytes):>10s} "
            f"{_size(f.worker_peak_bytes):>11s}  {verdict(f, events)}".rstrip())
    bare = next((f for f in figures if f.workload == BARE and f.rate > 0), None)
    if bare is not None:
        for f in figures:
            if f.mode == "stream" and f.workload not in (BARE, BARE_BY_KEY) and f.rate > 0:
                alone = next((o for o in figures if o.workload == f.workload and o.mode == "oracle"), None)
                lines.append(f"{f.workload}: {bare.rate / f.rate:.1f}x the bare stream's time per event "
                             f"({f.rate:,.0f} vs {bare.rate:,.0f} events/s)"
                             + (f"; the oracle alone {alone.rate:,.0f} events/s" if alone and alone.rate else ""))
    rows = {(f.workload, f.mode): f.output_rows for f in figures}
    for f in figures:
        if f.mode == "stream" and (f.workload, "batch") in rows:
            lines.append(f"{f.workload}: output rows, stream {_count(f.output_rows)}, batch "
                         f"{_count(rows[(f.workload, 'batch')])}"
                         + (" (the stream stopped early)" if f.stopped else ""))
    lines.append(f"target: >= {TARGET_RATE:,d} events/s end to end per workload (issue 28); state: the largest "
                 "over the micro-batches; peaks: resident (VmHWM), the largest Python worker")
    return lines


def main(args) -> int:
    """Entry point of `difftest bench --engine streaming`: `args.events`
    (default 1 M), `args.keys`, `args.batch_rows`, `args.window` (default
    `WORKLOADS`), `args.repeat`, `args.budget`, `args.report`."""
    from spark_impl.session import active_master, get_spark

    events = getattr(args, "events", None) or EVENTS
    keys = getattr(args, "keys", None) or KEYS
    batch_rows = getattr(args, "batch_rows", None) or BATCH_ROWS
    windows = tuple(getattr(args, "window", None) or WORKLOADS)
    repeat = getattr(args, "repeat", None) or 1
    budget = getattr(args, "budget", None)
    spark = get_spark()
    master = active_master(spark)
    print(f"spark {spark.version}, {master}, {spark.conf.get('spark.sql.shuffle.partitions')} shuffle (state) "
          f"partitions, micro-batches of {batch_rows:,d} rows, best of {repeat}"
          + (f", budget {budget:g} s per stream" if budget else ""), flush=True)
    folder = Path(tempfile.mkdtemp(prefix="window-oracle-stream-bench-"))
    try:
        figures = measure(spark, events, keys, batch_rows, windows, folder, repeat=repeat, budget=budget,
                          bare=not getattr(args, "no_bare", False))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("\n".join(table(figures, events)))
    if getattr(args, "report", None):
        report = {"engine": "streaming", "master": master, "events": events, "keys": keys, "batch_rows": batch_rows,
                  "target_events_per_s": TARGET_RATE, "budget": budget,
                  "figures": [asdict(f) | {"events_per_s": round(f.rate), "verdict": verdict(f, events)}
                              for f in figures]}
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0
