"""`difftest bench --engine spark [--events N] [--keys K] [--window CLAUSE ...] [--report FILE.json]`:
the Spark implementation's throughput on local[2] (or the session's master:
`--master`, `--remote`), beside the bare Spark plan on
the same data, from Parquet as users' data arrives.

Input: one trace of N events over K keys (default 10,000), one event per ms: an
event table `(n long, t long, k long, id string, price double)` written to Parquet once per
size (in a temporary folder, untimed) and read back by every workload.

* each window (an Esper clause, or `<dialect>: <clause>`, e.g. `apama: partition
  by v.k within 10.0 every 1.0 retain 5`): `spark_impl.apply_window_to_events(events,
  window, order_col="n", time_col="t", dialect=...)`, every column of the output;
* with `--unchecked`, each window also with `validate=False` (its row
  marked so, held to `TARGET_UNCHECKED`): the window's plan without its checks;
* with `--trace-frame`, each window also through `spark_impl.apply_window` with
  its defaults, on the same events as a trace frame (`trace_id`, `seq`,
  `kind`, `time`, `id` and the properties: a projection of the file), as a
  user calls it on recorded traces: the frame's check (one job) finds no
  jump, so the plan is made for input without jumps;
* the checks alone (`spark_impl.event_table.one_pass`: the order scan and,
  since the table has an `id` column, the id hashes, in one job), which every
  window above runs before planning (`validate=True`), so its share shows
  (the exact checks run only where that pass cannot decide, never here);
* bare: what any keyed window costs in Spark at least, `lag(id, 10)` over the
  keys in `n` order (one shuffle and sort), no update identity, no clock.
* bare with the output's rows (`BARE_ROWS`): the same `lag` of the event ten
  back (id and properties), each event then written as a window's output
  is: its insert row and, where the lag found one, the removal of that event,
  every output column (the update key, `side`, a `pos` struct, `id`,
  `error`, the properties). What a count window posts, at the bare
  plan's cost: the bound of the windows that post two rows per event.
* an Esper statement (`STATEMENTS`, written `esper: select ...`) beside its
  window alone in the same run, the ratio printed (target within 1.5x at 10 M);
* an eKuiper query (`KUIPER_QUERIES`; `k` as `color`, `t` each row's
  processing-time arrival): its output rows (`pane_rows=False`), beside
  Spark's own `groupBy(window(ts, size[, slide]), color).count()` of the same
  panes on the same file, the ratio printed; twice: as called by default
  (the table check included) and with `validate=False` (like for like:
  `window()` assumes and checks nothing of the order; target within 1.5x at
  10 M).

Every output is written to Spark's `noop` sink; a window's time counts its
check job. Each workload runs once untimed on the smallest size first (the JVM
compiles a plan's hot code on its first large input: a cold run took twice as
long in measurement), and the bare plan once untimed at each size before its
rounds (the first job of a larger size grows the heap); then `--repeat`
rounds per size (default 2) run every
workload once in turn, so drift (JIT, heap) falls on all alike; the best time
counts (measured: the same 10 M plan took 11.4 s, then 7.3 s).
Printed per window and size: seconds, events/s, the ratio to the bare plan in
the same run, t(largest)/t(smallest), and the exchanges of its physical plan
(shuffles + broadcasts, before adaptive execution changes any). With
`--keys 1` all events share one key (the memory case); the JVM's peak resident
memory is printed at the end. Targets at 10 M: within 1.5x of bare (issue 27);
t(10 M)/t(1 M) at most 10.

**What bounds the windows** (the README's Performance table is the last
run; what follows was measured beside it, on the same two-core machine):

* **The checks.** Measured apart (one process, quiet machine, 10 M events,
  best of 3): `#groupwin(k)#length(10)` through `apply_window_to_events`
  with its defaults 16.65 s, with `validate=False` 9.51 s, through
  `apply_window` on the trace frame 17.78 s, the bare plan 7.93 s. Without
  the table checks a count window is 1.20 x the bare plan, within the
  target and cheaper than the bare plan writing the same rows (1.42 x). The
  rest is the two checks every window runs by default on this table: the
  order scan (`check_events`, the order and time columns through Arrow:
  0.33 to 0.38 x bare) and, because the table has an `id` column, the id
  check: 3.85 s, 0.49 x bare (the hashed pre-check; the exact aggregate it
  replaced took 7.12 s). So with the defaults on a table with ids the
  checks alone were about 0.85 x the bare plan, and a window whose own plan
  is the bare plan's shuffle and sort (every keyed window) cannot be within
  1.5 x. Then fewer and cheaper columns through Arrow (4 M rows of seq,
  time and hash: 0.86 s, 1.04 s with a missing-id flag, now a sentinel
  hash; a trace frame's three flags one small integer) and the buckets'
  sorted runs merged by a stable sort (4 M hashes in one task: 0.04 s, a
  fresh sort 0.49 s): 0.52 x bare in the README's run. Left: the crossing
  itself (3 longs a row, 0.37 x bare at 4 M) and the Parquet read (0.12 x);
  the JVM's own exact aggregates do worse (`groupBy(hash)`: 0.73 x bare
  against the pass's 0.66 x for the ids alone; `count(DISTINCT id)`
  earlier 0.9 x). In that run the defaults' rows cost 0.6 to 0.9 x bare
  over their `validate=False` rows at 10 M, more than the checks alone;
  measured apart, in one process, best of 4, they are the two parts' sum
  (10 M: 10.92 s against 3.20 + 8.21 s; 4 M: 4.34 s against 1.31 + 3.10 s).
* **Count windows** (`#groupwin(k)#length(10)`, CCL `KEEP 10 ROWS SLACK 5
  PER(k)`, Apama's `retain 10 every 5`) are the bare plan's shape (one
  shuffle, one sort by key, window functions, two output rows per event)
  plus the checks.
* **Time windows** (`#time`, `#groupwin(k)#time`, CCL `KEEP EVERY`, the
  intersection `#unique(k)#time`) find each expiry in one window over the
  items partitioned by (trace, time bucket) (`spark_impl.clock`); their
  other exchanges move small tables. The intersection sorts the events
  twice (by key for `#unique`, by time bucket for `#time`).
  `#groupwin(k)#time_batch` carries a due-time row per event through its
  one sort (two rows per event where bare has one).
* **Top-n** (`#sort`, `#rank`): `#sort` is a running `min_by(..., 5)` per
  row (a five-row heap, two five-element arrays of longs written per row:
  the window alone at 2 M in one run, one array of longs 1.46 x bare, the
  two 1.69 x, the one array of (seq, time) structs they replaced 1.89 x);
  `#rank` sorts once by (sub-window, seq) and runs its books as one
  compiled loop (`sort._rank_books`, numba) over Arrow chunks of whole
  sub-windows: 3.13 x bare at 10 M in the README's run, 2.72 x unchecked
  (earlier runs: 3.14 x, 2.77 x; 3.60 x, 2.32 x; 5.08 x before the loop was compiled), of
  which the Arrow crossing alone measured 3.7 to 7 s (0.5 to 0.9 x bare).
* **The expiry scan**: `#expr(sum(price) < 300)` evaluates each group's
  expiry over its held events, afresh at every step (the rule's sum, in
  arrival order). Every event crosses into Python (Arrow) and back, but a
  partition's groups step together as numpy arrays (`windows.expr_scan`)
  where a Python loop walked each group, and the posts carry their events'
  properties, so nothing is joined back by id: 45.73 s, 4.82 x bare at
  10 M in one run (2026-12-03, nothing else running, bare 9.48 s), against
  12.75 x in the twelve-window run then. Then, over an event table
  (no variables: `pipeline.apply(variables=False)`), no group table and only
  the columns that differ between rows through Arrow: 4.08 x (3.13 x
  unchecked) at 10 M in one run; 3.65 x (3.04 x) in the README's run.
  Where the rest goes, at 2 M (one process,
  best of 3): shuffle and sort of the rows 1.5-1.8 s beside bare's 1.45 s;
  the same rows through an identity `mapInArrow` 2.1 s more with 11 columns,
  0.8 s with 5; the scan itself 0.5 s per 1 M rows (in process). So a
  compiled loop (the issue's other way) would save at most that 0.5 s: the
  Arrow crossing, not the loop, is the cost.
* **One trace in order**: `#length(10)#uni(price)` keeps running sums over
  the whole trace in its order (Esper's statistics add and subtract each
  point in turn): one sequence, one task. Its sums are one Arrow table
  through numpy (`derived._statistics_kernel`), the properties carried on
  the source's post rows (no join back by id): 43.45 s, 8.34 x bare at 10 M
  in a twelve-window run (205 s, 25.28 x before); then 40.74 s, 6.48 x (bare
  6.29 s) with the kernel's memory cut (a page first touched costs more here
  than the arithmetic on it: the kernel took 17.4 s in Spark's worker, 6.1 s
  replayed on the same table in a warm process; now 9.4 s) and one event
  table as one partition (`coalesce(1)`, no sort by the constant trace). In
  stages: the source `#length(10)` alone about 12 s (one task), the kernel
  9.4 s, the rest the Arrow transfer of 20 M post rows in and 10 M out.
  Leaving the columns of one value (the trace, the posts' due, slot and
  member without several posts, `#x` without additional properties) in the
  JVM: 5.98 x, 4.52 x unchecked at 10 M in one run (bare 6.72 s); 5.50 x,
  4.31 x in the README's run.
* **eKuiper's queries** against Spark's own `groupBy(window(...), color)`
  of the same panes: like for like (`validate=False`; `window()` checks
  nothing) 1.09 x and 1.10 x at 10 M in the Performance run (target 1.5
  x). With the default check they miss it: the check moves the order, time
  and id-hash columns from the JVM to Python through Arrow.
* **A statement over `#time(10 sec)`** writes four rows per event (its
  arrival's new and old rows, its expiry's new and old rows) where the
  window writes two, and brings each group's events together (one more
  shuffle and sort of 10 M rows). A floor for any plan of that shape,
  measured at 10 M (the project's session, best of 3, the input checks left
  out): the clock's hits, the shuffle by `k`, the sort by (k, time, seq)
  and four output rows per event with a constant text for the values:
  10.97 s beside the window's 8.26 s (1.33 x); with each row's JSON: 16.04 s
  beside 8.51 s (1.89 x). With the checks added back to both, the floor
  with JSON alone is about 1.5 x the window, at the target before any
  aggregate is computed (`spark_impl/windows/statement.py` states the plans).
  Typed rows (issue 44) removed the JSON; what is left is two orders of the
  same 10 M rows. A plan that keeps the clock's time buckets and sorts each
  bucket by (group, time, seq) with no second shuffle was measured in
  stages at 10 M, `validate=False`, the window alone beside it, one run:
  window 6.21 s; the clock's hits 4.43 s; those plus the bucket's sort of
  narrow rows 8.39 s; with the running sums and frames (no rows written)
  about 12.7 s beside a window of 6.9; the whole plan, no NaN bookkeeping,
  16.1 to 18.0 s beside 7.1 to 8.1 (2.2 x). Each of the two sorts costs
  about what the window alone does, so no plan of that shape is within 1.5 x.
* **One key holding every event** (`--events 5000000 --keys 1 --repeat 1`,
  other work on the machine): `#groupwin(k)#time(10 sec)` 25.57 s,
  `#groupwin(k)#sort(5, price)` 24.31 s, the eKuiper tumbling count 6.18 s
  (1.11 s with `validate=False`; Spark's `window()` 0.68 s), bare 3.84 s;
  the JVM's peak resident memory 4.45 GiB (4 GB heap): the one key's window
  partition spills, nothing fails.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from attrs import asdict, frozen

KEYS = 10_000
TICK_MS = 1
SIZES = (1_000_000, 10_000_000)
#: eKuiper queries (processing time: `t` is each row's arrival clock, `k` is the color), each measured beside
#: Spark's own `window()` aggregation of the same panes (the baseline named here, its ratio printed); the
#: query's output rows only (`pane_rows=False`), as the baseline computes, its table check included
KUIPER_QUERIES = {
    "SELECT color, count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 10), color": "spark window(10 s) by color",
    "SELECT color, count(*) FROM demo GROUP BY HOPPINGWINDOW(ss, 10, 5), color": "spark window(10 s, 5 s) by color",
}
TARGET_KUIPER = 1.5
#: Esper statements, each measured beside its window alone (in WINDOWS): what the statement adds
STATEMENTS = {
    "esper: select irstream k, sum(price) as total, count(*) as cnt from E#groupwin(k)#length(10) group by k":
        "#groupwin(k)#length(10)",
    "esper: select irstream k, sum(price) as total, count(*) as cnt from E#time(10 sec) group by k": "#time(10 sec)",
}
#: each statement's target at 10 M, its time over its window's alone (issue 44)
STATEMENT_TARGETS = dict(zip(STATEMENTS, (1.2, 1.5)))
TARGET_STATEMENT = 1.5  # a statement given with --window
#: the suffix of a query's workload run with `validate=False`
UNCHECKED = " (validate=False)"
#: the suffix of a window's workload through `apply_window` on a trace frame (`--trace-frame`)
TRACED = " (apply_window)"
#: the windows of issue 27's table (each within 1.5x of the bare plan at 10 M, or its bound stated above)
WINDOWS = ("#groupwin(k)#length(10)", "#time(10 sec)", "#groupwin(k)#time_batch(10 sec)", "#groupwin(k)#time(10 sec)",
           "#groupwin(k)#sort(5, price)", "#groupwin(k)#rank(price, 5, price)", "#groupwin(k)#expr(sum(price) < 300)",
           "#unique(k)#time(10 sec)", "#length(10)#uni(price)", "ccl: KEEP 10 ROWS SLACK 5 PER(k)",
           "ccl: KEEP EVERY 10 SECONDS", "apama: partition by v.k retain 10 every 5", *KUIPER_QUERIES, *STATEMENTS)
BARE = "bare: lag(id, 10) by key"
BARE_ROWS = "bare with the output's rows (insert, remove)"
CHECK = "the checks alone (in each window: order and ids, one pass)"
#: issue 47: every window within 2x of bare at 10 M with its defaults (the checks included), within 1.5x
#: with `validate=False`; and at most 10x the time at 10 times the events
TARGET_BARE, TARGET_UNCHECKED, TARGET_SCALING = 2.0, 1.5, 10.0


@frozen
class Timing:
    workload: str
    events: int
    seconds: float
    shuffles: int
    broadcasts: int

    @property
    def rate(self) -> float:
        return self.events / self.seconds


def write_events(spark, n: int, keys: int, folder: Path) -> str:
    """N events of one trace as Parquet: n = seq, t = n ms, k a key among `keys` by
    hash, price one of 10,000 values by another hash (for `#sort`)."""
    from pyspark.sql import functions as F

    path = str(folder / f"events-{n}-{keys}")
    spark.range(n).select(
        F.col("id").alias("n"), (F.col("id") * TICK_MS).alias("t"),
        F.pmod(F.xxhash64("id"), F.lit(keys)).alias("k"), F.col("id").cast("string").alias("id"),
        (F.pmod(F.xxhash64("id", F.lit(1)), F.lit(10_000)) / 100).alias("price"),
    ).write.mode("overwrite").parquet(path)
    return path


def bare(events):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    return events.withColumn("removed", F.lag("id", 10).over(Window.partitionBy("k").orderBy("n")))


def bare_rows(events):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    back = Window.partitionBy("k").orderBy("n")
    props = ("k", "price")
    lagged = events.select("n", "t", "id", *props, F.lag(F.struct("id", *props), 10).over(back).alias("old"))

    def row(side: str, id_, values) -> F.Column:
        return F.struct(F.lit(side).alias("side"), F.struct(F.col("t").alias("due"), F.lit(0).alias("slot"),
                                                            F.lit(0).alias("n")).alias("pos"),
                        id_.alias("id"), *(v.alias(name) for name, v in zip(props, values)))

    rows = F.array(row("insert", F.col("id"), [F.col(p) for p in props]),
                   F.when(F.col("old").isNotNull(), row("remove", F.col("old.id"), [F.col(f"old.{p}") for p in props])))
    return lagged.select(F.lit("0").alias("trace_id"), F.col("n").alias("after"), F.lit(1).alias("phase"),
                         F.col("t").alias("time"), F.lit(0).alias("ordinal"), F.explode(rows).alias("r")) \
        .where(F.col("r").isNotNull()) \
        .select("trace_id", "after", "phase", "time", "ordinal", "r.side", "r.pos", "r.id",
                F.lit(None).cast("string").alias("error"),
                *(f"r.{p}" for p in props))


def check(events):
    """The checks every `apply_window_to_events` above runs (their share of
    their times): the one pass over the order and the ids (`one_pass`)."""
    from pyspark.sql import functions as F

    from spark_impl.event_table import ONE_TRACE, one_pass

    rows = events.select(F.lit(ONE_TRACE).alias("trace_id"), F.col("n").alias("seq"), F.col("t").alias("time"), "id")
    return one_pass(rows, traced=False, ids="true")


def dialect_and_clause(window: str) -> tuple[str, str]:
    """A workload's window: an Esper clause, or `<dialect>: <clause>` in another
    dialect (`apama: partition by v.k retain 5`)."""
    from oracle.dialects import IMPLEMENTED

    head, colon, clause = window.partition(": ")
    return (head, clause) if colon and head in IMPLEMENTED else ("esper", window)


def is_query(window: str) -> bool:
    """An eKuiper statement (measured with the kuiper dialect, `k` as `color`):
    a `SELECT` without a dialect, or `kuiper: SELECT ...` (an Esper statement
    is written `esper: select ...`)."""
    head, clause = dialect_and_clause(window)
    return (head == "kuiper" or clause == window) and clause.lstrip().upper().startswith("SELECT")


def spark_window(query: str) -> Callable:
    """Spark's own aggregation of the query's panes: `groupBy(window(ts, size[, slide]), color).count()`."""
    from oracle.dialects import parse

    from oracle.model import Hopping

    spec = parse(query, "kuiper").window
    hop = spec.hop if isinstance(spec, Hopping) else spec.size

    def run(events):
        from pyspark.sql import functions as F

        ts = F.timestamp_millis(F.col("t"))
        panes = F.window(ts, f"{spec.size} milliseconds", f"{hop} milliseconds")
        return events.groupBy(panes.alias("window"), F.col("k").alias("color")).count()

    return run


def as_trace_frame(events):
    """The bench's events as one trace of a trace frame, as `apply_window` reads it."""
    return events.selectExpr("'0' AS trace_id", "n AS seq", "'event' AS kind", "t AS time", "id", "k", "price")


def workloads(windows: Sequence[str], trace_frame: bool = False, unchecked: bool = False) -> dict[str, Callable]:
    from spark_impl import apply_window, apply_window_to_events

    def window_of(window: str, validate: bool = True) -> Callable:
        if is_query(window):
            # the query's output rows, as eKuiper's sink receives them and Spark's window() computes them
            query = dialect_and_clause(window)[1]
            return lambda events: apply_window_to_events(events.withColumnRenamed("k", "color"), query,
                                                         order_col="n", time_col="t", dialect="kuiper",
                                                         pane_rows=False, validate=validate)
        dialect, clause = dialect_and_clause(window)
        return lambda events: apply_window_to_events(events, clause, order_col="n", time_col="t", dialect=dialect,
                                                     validate=validate)

    def traced(window: str) -> Callable:
        dialect, clause = ("kuiper", dialect_and_clause(window)[1]) if is_query(window) else dialect_and_clause(window)
        frame = ((lambda events: as_trace_frame(events).withColumnRenamed("k", "color")) if is_query(window)
                 else as_trace_frame)
        return lambda events: apply_window(frame(events), clause, dialect=dialect,
                                           **({"pane_rows": False} if is_query(window) else {}))

    runs = {}
    for w in windows:
        runs[w] = window_of(w)
        if is_query(w) or unchecked:
            runs[w + UNCHECKED] = window_of(w, validate=False)
        if trace_frame:
            runs[w + TRACED] = traced(w)
    baselines = {baseline_name(w): spark_window(w) for w in windows if is_query(w)}
    return {**runs, **baselines, CHECK: check, BARE_ROWS: bare_rows, BARE: bare}


def baseline_name(query: str) -> str:
    return KUIPER_QUERIES.get(query, f"spark window() of {query}")


def exchanges(frame) -> tuple[int, int]:
    """(shuffles, broadcasts) in the frame's physical plan, as planned (read from
    `explain()`, which a Spark Connect session has too)."""
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        frame.explain()
    return plan_exchanges(printed.getvalue())


def plan_exchanges(plan: str) -> tuple[int, int]:
    """(shuffles, broadcasts) in a printed physical plan: `Exchange
    hashpartitioning`, `rangepartitioning`, `SinglePartition` (a window over
    one partition by a constant) or `RoundRobinPartitioning`; `BroadcastExchange`;
    a reused exchange is not run again."""
    plan = re.sub(r"ReusedExchange.*", "", plan)  # it prints the exchange it reuses
    shuffles = len(re.findall(r"(?<!Broadcast)Exchange (hash|range|single|round)", plan, re.IGNORECASE))
    broadcasts = len(re.findall(r"BroadcastExchange ", plan))
    return shuffles, broadcasts


def run_once(spark, build: Callable, path: str) -> tuple[float, int, int]:
    """Seconds to build the frame (which runs `apply_window_to_events`' check
    job) and write it, not counting the plan's inspection."""
    started = time.perf_counter()
    frame = build(spark.read.parquet(path))
    built = time.perf_counter()
    shuffles, broadcasts = exchanges(frame)
    inspected = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return built - started + time.perf_counter() - inspected, shuffles, broadcasts


def measure(spark, sizes: Sequence[int], keys: int, windows: Sequence[str], folder: Path,
            repeat: int = 2, trace_frame: bool = False, unchecked: bool = False) -> list[Timing]:
    """Every workload warmed on the smallest size, and each size opened by an
    untimed bare run, then per size `repeat`
    rounds of one run of each workload in turn: a workload compared with
    another never gains from running after it (the JVM warms its shared code,
    the parquet reader and the hash aggregate, over the whole bench)."""
    paths = {n: write_events(spark, n, keys, folder) for n in sizes}
    builds = workloads(windows, **({"trace_frame": True} if trace_frame else {}),
                       **({"unchecked": True} if unchecked else {}))
    for build in builds.values():
        run_once(spark, build, paths[min(sizes)])
    timings = []
    width = max(34, *(len(name) for name in builds))
    print(f"timed runs, seconds of each of {repeat} rounds (the best counts):", flush=True)
    for n in sizes:
        # untimed: the first job of a larger size grows the JVM's heap (the round's first window took 13.8 to
        # 15.2 s at 10 M where it took 10.9 to 11.3 s after a 10 M job), so no workload pays for it
        run_once(spark, builds[BARE], paths[n])
        runs = {name: [] for name in builds}
        for _ in range(repeat):
            for name, build in builds.items():
                runs[name].append(run_once(spark, build, paths[n]))
        for name, done in runs.items():
            seconds, shuffles, broadcasts = min(done)
            timings.append(Timing(name, n, seconds, shuffles, broadcasts))
            print(f"  {name:{width}s} {n:>11,d} events {' '.join(f'{r[0]:7.2f}' for r in done)} s", flush=True)
    return timings


def summary(timings: list[Timing], windows: Sequence[str]) -> list[dict]:
    """Per window and size: rate, ratio to bare, scaling, exchanges; a query
    or statement also its ratio to its baseline (a window's variant through
    `apply_window` beside its baseline's same variant where there is one)."""
    by = {(t.workload, t.events): t for t in timings}
    sizes = sorted({t.events for t in timings})
    traced = [w for w in windows if (w + TRACED, sizes[0]) in by]
    rows = []
    baselines = {w: baseline_name(w) for w in windows if is_query(w)}
    baselines.update({w + UNCHECKED: name for w, name in baselines.items()})
    baselines.update({w: STATEMENTS[w] for w in windows if w in STATEMENTS and STATEMENTS[w] in windows})
    baselines.update({w + TRACED: (b + TRACED if (b + TRACED, sizes[0]) in by else b)
                      for w, b in list(baselines.items()) if w in traced})
    measured = [name for w in windows
                for name in ((w, w + UNCHECKED) if is_query(w) or (w + UNCHECKED, sizes[0]) in by else (w,))]
    measured += [w + TRACED for w in traced]
    for window in (*measured, *(b for b in dict.fromkeys(baselines.values()) if b not in measured), CHECK, BARE_ROWS,
                   BARE):
        for n in sizes:
            if (window, n) not in by:  # a baseline left out of the run
                continue
            t = by[(window, n)]
            row = {"window": window, "events": n, "seconds": round(t.seconds, 3), "events_per_s": round(t.rate),
                   "vs_bare": round(t.seconds / by[(BARE, n)].seconds, 2), "shuffles": t.shuffles,
                   "broadcasts": t.broadcasts}
            if window in baselines:
                row["baseline"] = baselines[window]
                row["vs_baseline"] = round(t.seconds / by[(baselines[window], n)].seconds, 2)
            if n != sizes[0]:
                row["scaling"] = round(t.seconds / by[(window, sizes[0])].seconds, 2)
            rows.append(row)
    return rows


def verdict(row: dict, largest: int) -> str:
    """A window's row against the targets: at the largest size only (`TARGET_BARE`
    on `vs_bare`, `TARGET_UNCHECKED` for a row with `validate=False`,
    `TARGET_SCALING` on `scaling`); "" for the baselines' rows and
    smaller sizes; a query's own verdict is its line against its baseline."""
    baselines = (BARE, BARE_ROWS, CHECK, *KUIPER_QUERIES.values())
    if row["events"] != largest or row["window"] in baselines:
        return ""
    window = row["window"].removesuffix(TRACED)
    if is_query(window.removesuffix(UNCHECKED)) or window in STATEMENTS:
        return "see below"
    misses = []
    target = TARGET_UNCHECKED if window.endswith(UNCHECKED) else TARGET_BARE
    if row["vs_bare"] > target:
        misses.append(f"x bare {row['vs_bare']:.2f} > {target}")
    if row.get("scaling") is not None and row["scaling"] > TARGET_SCALING:
        misses.append(f"scaling {row['scaling']:.2f} > {TARGET_SCALING}")
    return "MISSES: " + ", ".join(misses) if misses else "meets"


def table(rows: list[dict]) -> list[str]:
    """The figures, one row per workload and size, each window's verdict at the
    largest size; `t/t(min)` is the time over the time at the smallest size."""
    largest = max((r["events"] for r in rows), default=0)
    width = max(34, *(len(r["window"]) for r in rows))
    lines = ["figures (best run per size):",
             f"{'workload':{width}s} {'events':>11s} {'s':>8s} {'events/s':>11s} {'x bare':>7s} {'t/t(min)':>8s} "
             f"{'exchanges':>12s}  verdict"]
    for r in rows:
        exchanges_ = f"{r['shuffles']} + {r['broadcasts']} bc"
        scaling = f"{r['scaling']:.2f}" if r.get("scaling") is not None else "-"
        lines.append(f"{r['window']:{width}s} {r['events']:>11,d} {r['seconds']:>8.2f} {r['events_per_s']:>11,d} "
                     f"{r['vs_bare']:>7.2f} {scaling:>8} {exchanges_:>12s}  {verdict(r, largest)}".rstrip())
    for r in rows:
        if "vs_baseline" in r and r["window"].removesuffix(TRACED) in STATEMENTS:
            goal = STATEMENT_TARGETS.get(r["window"].removesuffix(TRACED), TARGET_STATEMENT)
            met = "meets" if r["vs_baseline"] <= goal else "MISSES"
            target = f"target <= {goal} at 10 M: {met}" if r["events"] == largest else "no target"
            lines.append(f"{r['window']} at {r['events']:,d}: {r['vs_baseline']:.2f} x the window alone, "
                         f"{r['baseline']} ({target})")
        elif "vs_baseline" in r:
            met = "meets" if r["vs_baseline"] <= TARGET_KUIPER else "MISSES"
            target = (f"target <= {TARGET_KUIPER}: {met}" if r["window"].endswith(UNCHECKED)
                      else "the table check included, which window() does not do")
            lines.append(f"{r['window']} at {r['events']:,d}: {r['vs_baseline']:.2f} x {r['baseline']} ({target})")
    lines.append(f"targets: x bare <= {TARGET_BARE} at 10 M ({TARGET_UNCHECKED} with validate=False), "
                 f"t(10 M)/t(1 M) <= {TARGET_SCALING}; "
                 "exchanges: shuffles + broadcasts as planned")
    return lines


def peak_memory(spark) -> str:
    """The driver JVM's peak resident memory (VmHWM), where /proc tells it (in
    local mode the driver is the executor; over Spark Connect it is unknown)."""
    from spark_impl.session import is_connect

    if is_connect(spark):
        return "unknown (a Spark Connect session)"
    try:
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return f"{int(line.split()[1]) / 1024**2:.2f} GiB"
    except Exception:  # noqa: BLE001 - not Linux, or no JVM handle: say so
        pass
    return "unknown"


def main(args) -> int:
    """Entry point of `difftest bench --engine spark`: `args.events` (None: 1 M and
    10 M), `args.keys`, `args.window` (None: WINDOWS), `args.repeat`
    (runs per size, the best counts), `args.report`."""
    from spark_impl.session import active_master, get_spark

    sizes = SIZES if getattr(args, "events", None) is None else (args.events,)
    keys = getattr(args, "keys", None) or KEYS
    windows = tuple(getattr(args, "window", None) or WINDOWS)
    spark = get_spark()  # the session `difftest bench --master/--remote` opened, or local[2]
    master = active_master(spark)
    print(f"spark {spark.version}, {master}, "
          f"{spark.conf.get('spark.sql.shuffle.partitions')} shuffle partitions, {keys:,d} keys, input from Parquet, "
          f"best of {getattr(args, 'repeat', None) or 2}",
          flush=True)
    folder = Path(tempfile.mkdtemp(prefix="window-oracle-bench-"))
    try:
        timings = measure(spark, sizes, keys, windows, folder, repeat=getattr(args, "repeat", None) or 2,
                          trace_frame=bool(getattr(args, "trace_frame", False)),
                          unchecked=bool(getattr(args, "unchecked", False)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = summary(timings, windows)
    print("\n".join(table(rows)))
    memory = peak_memory(spark)
    print(f"peak JVM resident memory: {memory}")
    if getattr(args, "report", None):
        report = {"keys": keys, "master": master, "input": "parquet", "rows": rows,
                  "peak_jvm_memory": memory, "timings": [asdict(t) | {"events_per_s": round(t.rate)} for t in timings]}
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0
