"""The Spark output rows of a replay, written to a JSON file, so runs on
different masters (local[2], a standalone cluster, a Spark Connect server) can
be compared row for row. Run in a process of its own (one SparkContext per
process; a Connect client cannot share a process with a classic session):

    python tests/cluster/rows.py OUT.json [--master URL | --remote sc://...] \
        [--generated SEED] PATH...

* PATH...: conformance case files or folders (`oracle.cases.case_files`); a
  case Spark does not build (`spark_impl.unsupported`) is left out and counted.
* `--generated SEED`: also a batch of every implemented window kind of every
  dialect, drawn as `difftest run --seed SEED` draws (`runner.targets("all")`):
  one window per kind from Hypothesis under a seed of its own, `TRACES` traces
  from `strategies.seeded_traces`, the oracle's updates as the expectation.
* Everything runs through one `spark_impl.run_cases` call (its jobs of at most
  24 plans), with `get_spark(master, remote)`; each job's collected rows are
  kept (`run_cases(on_rows=...)`), the trace index replaced by the case's name.

The file holds `rows` (each row a JSON object with sorted keys, the list
sorted: Spark returns a frame unsorted), `cases` (names in order), `verdicts`
(per case: PASS, FAIL or the error, against the case's expectation),
`unsupported`, `master` and `seconds`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TRACES = 8  # traces per generated window


def corpus_pairs(paths: list[Path]):
    from oracle.cases import case_files, load_case
    from oracle.dialects import case_spec

    for path in case_files(paths):
        case = load_case(path)
        yield str(path.resolve().relative_to(ROOT.parent)), case_spec(case), case.trace, case.expected


def generated_pairs(seed: int):
    """One window per implemented kind of every dialect and TRACES traces each."""
    from hypothesis import Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    import oracle
    from difftest.runner import targets
    from difftest.strategies import seeded_traces, trace_shape

    for target in targets("all", None):
        key = int.from_bytes(hashlib.sha1(f"{seed}/{target.kind}".encode()).digest()[:8], "big")
        drawn = []

        @hypothesis_seed(key)
        @settings(max_examples=1, database=None, phases=[Phase.generate], deadline=None)
        @given(target.specs)
        def draw(spec):
            drawn.append(spec)

        draw()
        spec = drawn[0]
        for n, trace in enumerate(seeded_traces(key, TRACES, **trace_shape(spec))):
            yield f"generated/{target.kind}/{n}", spec, trace, oracle.run(spec, trace)


def jsonable(row) -> str:
    return json.dumps(row.asDict(recursive=True), sort_keys=True, default=str)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("paths", nargs="*", type=Path)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master")
    where.add_argument("--remote")
    parser.add_argument("--generated", type=int, metavar="SEED")
    args = parser.parse_args(argv)

    from difftest.compare import compare
    from spark_impl import run_cases, unsupported
    from spark_impl.session import active_master, get_spark

    cases = list(corpus_pairs(args.paths)) if args.paths else []
    if args.generated is not None:
        cases += generated_pairs(args.generated)
    left_out = [name for name, spec, _, _ in cases if unsupported(spec)]
    cases = [c for c in cases if not unsupported(c[1])]
    spark = get_spark(master=args.master, remote=args.remote)
    rows: list[str] = []

    def keep(collected) -> None:
        for row in collected:
            data = row.asDict(recursive=True)
            data["trace_id"] = cases[int(data["trace_id"])][0]
            rows.append(json.dumps(data, sort_keys=True, default=str))

    started = time.perf_counter()
    outcomes = run_cases([(spec, trace) for _, spec, trace, _ in cases], spark, on_rows=keep,
                         progress=lambda done, total: print(f"job {done} of {total} done", file=sys.stderr, flush=True))
    seconds = time.perf_counter() - started
    verdicts = {}
    for (name, _, _, expected), outcome in zip(cases, outcomes):
        if isinstance(outcome, Exception):
            verdicts[name] = f"ERROR {type(outcome).__name__}: {outcome}"
        else:
            verdicts[name] = "PASS" if compare(expected, outcome) is None else "FAIL"
    args.out.write_text(json.dumps({
        "master": active_master(spark), "seconds": round(seconds, 1), "cases": [c[0] for c in cases],
        "unsupported": left_out, "verdicts": verdicts, "rows": sorted(rows)}, indent=0) + "\n")
    print(f"{len(cases)} cases, {len(rows)} rows, {seconds:.1f} s on {active_master(spark)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
