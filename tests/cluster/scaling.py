"""How the stream spreads over workers: one window's stream on a standalone
cluster of one worker, then of two, in one run (issue 45: two workers at least
1.7x one worker's events/s).

    python tests/cluster/scaling.py [--events N] [--batch-rows R] [--keys K] [--window CLAUSE]
                                    [--cores C] [--memory M] [--report FILE.json]

For each worker count (1, then 2) it starts a master and that many workers of
`--cores` cores (default 1) and `--memory` (default 3g) each (`standalone.Cluster`,
this machine, free ports), runs `difftest bench --engine streaming --stream-only`
on it in a process of its own (the executors get `--memory` less 1 GB), and stops
the cluster. The input is the bench's: one trace of N events over K keys in
Parquet files of R rows, one per micro-batch, read one file per trigger. Printed:
per worker count the stream's seconds, events/s end to end and steady (the
first micro-batch left out), both of the events written, the rows the source
read (more than the events where a micro-batch's items were read again), and
the ratio of two workers to one of each.

Default: `#groupwin(k)#length(10)`, 2 M events in micro-batches of 500,000
rows, 10,000 keys. The cluster lane runs it small (`test_scaling.py`) to
check it prints both runs; its figures are measured by running it, not asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
ROOT = HERE.parents[1]

from standalone import Cluster  # noqa: E402

WINDOW, EVENTS, BATCH_ROWS, KEYS = "#groupwin(k)#length(10)", 2_000_000, 500_000, 10_000
WORKERS = (1, 2)


def executor_memory(worker_memory: str) -> str:
    """The executors' heap: the worker's memory less 1 GB for its off-heap needs (at least 1 GB)."""
    number, unit = int(worker_memory[:-1]), worker_memory[-1].lower()
    gigabytes = number if unit == "g" else number / 1024 if unit == "m" else None
    if gigabytes is None:
        raise SystemExit(f"--memory {worker_memory}: give it in g or m (3g, 3072m)")
    return f"{max(1, int(gigabytes) - 1)}g"


def measure(workers: int, args, folder: Path) -> dict:
    """The stream's figure on a cluster of `workers` workers: the bench's report's stream figure."""
    report = folder / f"workers-{workers}.json"
    (folder / f"cluster-{workers}").mkdir(parents=True, exist_ok=True)
    with Cluster(workers=workers, cores=args.cores, memory=args.memory, folder=folder / f"cluster-{workers}") as cluster:
        argv = [sys.executable, "-m", "difftest", "bench", "--engine", "streaming", "--stream-only",
                "--master", cluster.url, "--events", str(args.events), "--batch-rows", str(args.batch_rows),
                "--keys", str(args.keys), "--window", args.window, "--report", str(report)]
        env = dict(cluster.env, PYSPARK_SUBMIT_ARGS=f"--conf spark.executor.memory={executor_memory(args.memory)} "
                                                    "pyspark-shell")
        env["PYTHONPATH"] = ":".join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout)
        if done.returncode != 0:
            raise SystemExit(f"the bench on {workers} worker(s) failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    figure = [f for f in json.loads(report.read_text())["figures"] if f["mode"] == "stream"][0]
    return rates(figure, args.events, args.batch_rows) | {"workers": workers, "cores": workers * args.cores}


def rates(figure: dict, events: int, batch_rows: int) -> dict:
    """The stream's figure with its rates taken from the events written (`events`, the first micro-batch
    `batch_rows` of them), not from the source's count of the rows it read: on two executors a micro-batch's
    items can be read twice (the source counted 25,000 rows for 20,000 events), which would overstate the
    rate. `source_rows`: that count."""
    later = sum(figure["latencies"])
    return figure | {"source_rows": figure["events"], "events": events,
                     "events_per_s": round(events / figure["seconds"]) if figure["seconds"] else 0,
                     "steady_events_per_s": (events - batch_rows) / later if later and events > batch_rows else None}


def lines(results: list[dict]) -> list[str]:
    out = [f"{'workers':>7s} {'cores':>5s} {'events':>10s} {'s':>8s} {'events/s':>10s} {'steady/s':>10s} "
           f"{'micro-batches':>13s} {'rows read':>10s}"]
    for r in results:
        steady = r.get("steady_events_per_s")
        out.append(f"{r['workers']:7d} {r['cores']:5d} {r['events']:10,d} {r['seconds']:8.2f} "
                   f"{r['events_per_s']:10,d} {'-' if steady is None else f'{steady:,.0f}':>10s} {r['batches']:13d} "
                   f"{r['source_rows']:10,d}")
    one, two = results[0], results[-1]
    if len(results) > 1 and one["events_per_s"]:
        ratio = two["events_per_s"] / one["events_per_s"]
        steady = (two["steady_events_per_s"] / one["steady_events_per_s"]
                  if two.get("steady_events_per_s") and one.get("steady_events_per_s") else None)
        out.append(f"{two['workers']} workers over {one['workers']}: {ratio:.2f}x end to end"
                   + (f", {steady:.2f}x steady" if steady else "") + " (target: 1.7x)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--window", default=WINDOW)
    p.add_argument("--events", type=int, default=EVENTS)
    p.add_argument("--batch-rows", type=int, default=BATCH_ROWS)
    p.add_argument("--keys", type=int, default=KEYS)
    p.add_argument("--cores", type=int, default=1, help="cores per worker (default 1)")
    p.add_argument("--memory", default="3g", help="memory per worker (default 3g)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per run before it is stopped")
    p.add_argument("--report", type=Path)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="window-oracle-scaling-") as tmp:
        results = []
        for workers in WORKERS:
            results.append(measure(workers, args, Path(tmp)))
            print(f"{workers} worker(s): {results[-1]['events']:,d} events in {results[-1]['seconds']:.2f} s",
                  flush=True)
    print(f"{args.window}, {args.events:,d} events over {args.keys:,d} keys, micro-batches of {args.batch_rows:,d} "
          f"rows, workers of {args.cores} core(s) and {args.memory}")
    print("\n".join(lines(results)))
    if args.report:
        args.report.write_text(json.dumps({"window": args.window, "events": args.events, "batch_rows": args.batch_rows,
                                           "keys": args.keys, "runs": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
