"""`difftest bench --engine spark [--events N] [--report FILE.json]`: the Spark
implementation's throughput on local[2], beside two references on the same data.

Workloads, each over one trace of N events on 10,000 keys, one event per ms
(generated in Spark with `spark.range`, never in Python), output written to the
`noop` sink:

* `#groupwin(k)#length(10)`, `#time(10 sec)`, `#groupwin(k)#time_batch(10 sec)`:
  `spark_impl.apply_window`, every column of the output.
* bare: what any keyed sliding window costs in Spark, `lag(id, 10)` over the keys
  sorted by seq (one shuffle and sort), no update numbering.
* naive: a per-key Python event loop in `applyInPandas` (sort the key's rows, walk
  them with a deque, emit insert and remove rows), the grouped-Python formulation.

Each workload runs once untimed on a small input first (JIT and code generation
warm-up), then once per N. Targets: >= 1.5 M events/s at 10 M, within 1.3x of
the bare time, >= 3x the naive loop, t(10 M) / t(1 M) <= 10.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from attrs import asdict, frozen

KEYS = 10_000
TICK_MS = 1
SIZES = (1_000_000, 10_000_000)
WARMUP = 100_000
WINDOWS = ("#groupwin(k)#length(10)", "#time(10 sec)", "#groupwin(k)#time_batch(10 sec)")
TARGET_RATE, TARGET_BARE, TARGET_NAIVE, TARGET_SCALING = 1_500_000, 1.3, 3.0, 10.0


@frozen
class Timing:
    workload: str
    events: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.events / self.seconds


def events(spark, n: int):
    """N events of one trace: seq = id, time = id ms, a key among KEYS by hash."""
    from pyspark.sql import functions as F

    return spark.range(n).select(
        F.lit("0").alias("trace_id"), F.col("id").alias("seq"), F.lit("event").alias("kind"),
        (F.col("id") * TICK_MS).alias("time"), F.col("id").cast("string").alias("id"),
        F.pmod(F.xxhash64("id"), F.lit(KEYS)).alias("k"),
    )


def bare(frame):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    return frame.withColumn("removed", F.lag("id", 10).over(Window.partitionBy("trace_id", "k").orderBy("seq")))


def naive(frame):
    """#groupwin(k)#length(10) as a Python loop per key."""
    from collections import deque

    import pandas as pd

    def loop(rows: pd.DataFrame) -> pd.DataFrame:
        held, out = deque(), []
        for seq, event_id in zip(*rows.sort_values("seq")[["seq", "id"]].to_numpy().T):
            held.append(event_id)
            out.append((seq, "insert", event_id))
            if len(held) > 10:
                out.append((seq, "remove", held.popleft()))
        return pd.DataFrame(out, columns=["after", "side", "id"])

    return frame.groupBy("trace_id", "k").applyInPandas(loop, "after long, side string, id string")


def workloads() -> dict[str, Callable]:
    from spark_impl import apply_window

    return {
        **{window: (lambda w: lambda frame: apply_window(frame, w))(window) for window in WINDOWS},
        "bare: lag(10) by key": bare,
        "naive: Python loop per key": naive,
    }


def run_once(spark, build: Callable, n: int) -> float:
    started = time.perf_counter()
    build(events(spark, n)).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def measure(spark, sizes: Sequence[int]) -> list[Timing]:
    timings = []
    for name, build in workloads().items():
        run_once(spark, build, WARMUP)
        for n in sizes:
            timings.append(Timing(name, n, run_once(spark, build, n)))
            print(f"  {name:34s} {n:>11,d} events {timings[-1].seconds:8.2f} s", flush=True)
    return timings


def summary(timings: list[Timing]) -> list[dict]:
    """Per window and size: rate, ratio to bare, speed-up over naive, scaling."""
    by = {(t.workload, t.events): t for t in timings}
    sizes = sorted({t.events for t in timings})
    rows = []
    for window in WINDOWS:
        for n in sizes:
            t = by[(window, n)]
            row = {
                "window": window, "events": n, "seconds": round(t.seconds, 3), "events_per_s": round(t.rate),
                "vs_bare": round(t.seconds / by[("bare: lag(10) by key", n)].seconds, 2),
                "vs_naive": round(by[("naive: Python loop per key", n)].seconds / t.seconds, 2),
            }
            if n != sizes[0]:
                row["scaling"] = round(t.seconds / by[(window, sizes[0])].seconds, 2)
            rows.append(row)
    return rows


def table(rows: list[dict], timings: list[Timing]) -> list[str]:
    lines = [f"{'window':34s} {'events':>11s} {'s':>8s} {'events/s':>11s} {'x bare':>7s} {'naive/x':>8s} {'t/t(min)':>8s}"]
    for r in rows:
        lines.append(f"{r['window']:34s} {r['events']:>11,d} {r['seconds']:>8.2f} {r['events_per_s']:>11,d} "
                     f"{r['vs_bare']:>7.2f} {r['vs_naive']:>8.2f} {r.get('scaling', ''):>8}")
    for t in timings:
        if t.workload not in WINDOWS:
            lines.append(f"{t.workload:34s} {t.events:>11,d} {t.seconds:>8.2f} {round(t.rate):>11,d}")
    lines.append(f"targets: >= {TARGET_RATE:,d} events/s at 10 M, x bare <= {TARGET_BARE}, naive/x >= {TARGET_NAIVE}, "
                 f"t(10 M)/t(1 M) <= {TARGET_SCALING}")
    return lines


def main(args) -> int:
    """Entry point of `difftest bench --engine spark`: `args.events` (None: 1 M and
    10 M) and `args.report` (a path for the JSON figures, or None)."""
    from spark_impl.session import get_spark

    sizes = SIZES if getattr(args, "events", None) is None else (args.events,)
    spark = get_spark()
    print(f"spark {spark.version}, {spark.sparkContext.master}, "
          f"{spark.conf.get('spark.sql.shuffle.partitions')} shuffle partitions, {KEYS:,d} keys", flush=True)
    timings = measure(spark, sizes)
    rows = summary(timings)
    print("\n".join(table(rows, timings)))
    if getattr(args, "report", None):
        report = {"keys": KEYS, "master": spark.sparkContext.master, "windows": rows,
                  "timings": [asdict(t) | {"events_per_s": round(t.rate)} for t in timings]}
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0
