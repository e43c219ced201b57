"""The `difftest` command.

    difftest replay [--engine oracle|spark|both|streaming] [--micro-batches N] [--seed S] [--report FILE.json] PATH...
    difftest replay ... [--impl MODULE:FUNCTION]
    difftest bench [--engine oracle|spark|streaming] [--events N] [--keys K] [--window CLAUSE] [--repeat R]
                   [--trace-frame] [--unchecked] [--batch-rows R] [--budget SECONDS] [--no-bare] [--stream-only]
                   [--report FILE.json]
    difftest run [--dialect D] [--window CLAUSE] [--examples N] [--seed S] [--budget SECONDS]
                 [--engine spark|streaming | --impl MODULE:FUNCTION] [--report FILE.json]

    replay, run and bench take [--master URL | --remote sc://HOST:PORT]: where Spark runs
    (default: local[2], or Spark Connect at $SPARK_REMOTE when set)
    difftest expect CASE.json [--write]
    difftest expect --window CLAUSE [--dialect D] [--time FIELD] [--until MS] EVENTS.jsonl|EVENTS.csv
    difftest show CASE.json [--engine oracle|spark|both] [--out FILE.svg|FILE.png]
    difftest explain CASE.json

Each subcommand is a pair of functions: `add_<name>(subparsers)` declares its
arguments and `cmd_<name>(args) -> exit code` runs it; `SUBCOMMANDS` lists the
adders. An error caused by user input (a `WindowOracleError`: a missing Java, an
unreadable report path, a master or Connect server that cannot be reached ...)
prints one sentence to stderr and exits 2.

`--master URL` opens the classic session on that master before any work, and
everything after runs on it; `--remote URL` is `SPARK_REMOTE=URL` for the
command (a Spark Connect client: no Java needed), its session opened first too.

Output is plain text, coloured with rich only when stdout is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from difftest import bench, replay, runner
from difftest.compare import counted
from difftest.engines import ENGINE_NAMES, ImplEngine, SparkEngine, StreamingEngine, load_spark, make_engines
from oracle.dialects import IMPLEMENTED
from oracle.dialects import parse as oracle_parse
from oracle.errors import WindowOracleError


class UsageError(WindowOracleError):
    """A command that cannot be carried out: no case files, a report that cannot be written."""


# --------------------------------------------------------------------------- output


class Printer:
    """Prints (line, style) pairs: styled with rich on a terminal, plain otherwise."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.console = None
        if stream.isatty():
            from rich.console import Console
            from rich.text import Text

            self.console = Console(file=stream, highlight=False, soft_wrap=True)
            self.text = Text

    def lines(self, lines: Sequence[tuple[str, str | None]]) -> None:
        for text, style in lines:
            if self.console is None:
                print(text, file=self.stream)
            else:
                self.console.print(self.text(text, style=style or ""))


def write_report(path: Path | None, report: dict[str, Any]) -> None:
    if path is None:
        return
    try:
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the report {path}: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------- session


def add_session_options(p) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--master", metavar="URL",
                       help="run Spark on this master: spark://HOST:PORT (a standalone cluster), local[N], yarn, ... "
                            "(default: local[2])")
    where.add_argument("--remote", metavar="sc://HOST:PORT",
                       help="run Spark through this Spark Connect server (default: $SPARK_REMOTE when set)")


def open_session(args: argparse.Namespace, spark_used: bool) -> None:
    """The session `--master` or `--remote` names, opened before any work (a bad URL
    or a server that does not answer is one sentence, exit 2); nothing without them."""
    master, remote = getattr(args, "master", None), getattr(args, "remote", None)
    if not (master or remote):
        return
    if not spark_used:
        raise UsageError(f"{'--master' if master else '--remote'} applies where Spark runs: --engine spark or both, "
                         "or --impl")
    if remote:
        os.environ["SPARK_REMOTE"] = remote
    load_spark("spark_impl.session", "get_spark")(master=master, remote=remote)


# --------------------------------------------------------------------------- replay

#: `difftest run --engine streaming`: the batch function's shape, computed on a stream
STREAMING_IMPL = "spark_impl.streaming:apply_window_as_stream"


def add_replay(subparsers) -> None:
    p = subparsers.add_parser(
        "replay", help="run conformance case files and compare with their expected updates",
        description="Run conformance case files (CORPUS.md) and compare each engine's updates with the "
                    "expected ones. Exit 0 if all pass, 1 if any fails, 2 if any cannot be run.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", type=Path, help="case files, or folders searched recursively")
    p.add_argument("--engine", choices=ENGINE_NAMES, default="oracle", help="engine(s) to run (default: oracle)")
    p.add_argument("--impl", metavar="MODULE:FUNCTION",
                   help="replay against your implementation (shaped like spark_impl.apply_window) instead of "
                        "an engine; with --engine both, beside the oracle")
    p.add_argument("--micro-batches", type=positive_int, default=3, metavar="N",
                   help="--engine streaming: each trace cut into N micro-batches at random points (default: 3)")
    p.add_argument("--seed", type=int, default=0,
                   help="--engine streaming: the seed of the cut points (default: 0)")
    p.add_argument("--report", type=Path, metavar="FILE.json", help="also write the results as JSON")
    add_pictures_option(p, "each failing case's picture (expected above actual) goes to DIR; by default only a "
                           "failing saved finding's (a case in a folder named found), beside it")
    add_session_options(p)
    p.set_defaults(handler=cmd_replay)


def add_pictures_option(p, what: str) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--pictures", type=Path, metavar="DIR", help=what + " (SVG; needs matplotlib)")
    group.add_argument("--no-pictures", action="store_true", help="draw no pictures")


def cmd_replay(args: argparse.Namespace) -> int:
    open_session(args, args.engine != "oracle" or bool(args.impl))
    engines = make_engines(args.engine)
    if args.impl:  # the user's function in the place of spark_impl
        impl = ImplEngine(runner.load_impl(args.impl), args.impl)
        engines = [e for e in engines if not isinstance(e, SparkEngine)] if args.engine == "both" else []
        engines.append(impl)
    for engine in engines:
        if isinstance(engine, StreamingEngine):
            engine.batches, engine.seed = args.micro_batches, args.seed
            engine.progress = lambda done, total: print(
                f"streaming: query {done} of {total} done", file=sys.stderr, flush=True)
        elif isinstance(engine, SparkEngine):  # jobs of bounded size: say how far, on stderr
            engine.progress = lambda done, total: total > 1 and print(
                f"spark: job {done} of {total} done", file=sys.stderr, flush=True)
    results = replay.replay(args.paths, engines)
    if not results:
        raise UsageError(f"no case files (*.json) found in {', '.join(map(str, args.paths))}")
    lines = replay.text_lines(results, [e.name for e in engines])
    if not args.no_pictures:
        drawn = replay.draw_failures(results, args.pictures)
        lines[-1:-1] = [(f"picture of {case}: {picture}", "red") for case, picture in drawn.items()]
    Printer(sys.stdout).lines(lines)
    write_report(args.report, replay.report_json(results, args.engine))
    return replay.Totals.of(results).exit_code()


# --------------------------------------------------------------------------- bench


def add_bench(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="measure an engine's throughput",
        description="Measure the oracle's events/s on #length(100) and #time(10 sec) beside a bare deque loop "
                    "(targets: >= 300,000 events/s, <= 3.5x the loop); --engine spark runs spark_impl.bench, "
                    "--engine streaming spark_impl.streaming.bench (the windows on a stream beside the batch).",
    )
    p.add_argument("--engine", choices=("oracle", "spark", "streaming"), default="oracle",
                   help="engine to measure (default: oracle)")
    p.add_argument("--events", type=positive_int, metavar="N",
                   help="events per trace (default: 200000 for the oracle; 1 M and 10 M for spark; 1 M for streaming)")
    p.add_argument("--keys", type=positive_int, metavar="K",
                   help="spark, streaming: distinct keys of the events (default: 10000; 1 puts every event on one key)")
    p.add_argument("--window", action="append", metavar="CLAUSE",
                   help="spark, streaming: a window to measure (repeatable): an Esper clause, `<dialect>: <clause>`, "
                        "or an eKuiper SELECT (default: spark_impl.bench.WINDOWS, "
                        "spark_impl.streaming.bench.WORKLOADS)")
    p.add_argument("--repeat", type=positive_int, metavar="R",
                   help="timed runs, best counts (default: 3 for the oracle, 2 per size for spark, 1 for streaming)")
    p.add_argument("--trace-frame", action="store_true",
                   help="spark: also measure each window through apply_window on the events as a trace frame")
    p.add_argument("--unchecked", action="store_true",
                   help="spark: also measure each window with validate=False (its plan without the input checks)")
    p.add_argument("--batch-rows", type=positive_int, metavar="R",
                   help="streaming: rows per micro-batch (one Parquet file each; default 100000)")
    p.add_argument("--budget", type=positive_float, metavar="SECONDS",
                   help="streaming: stop a stream still running after this long; its figures are those of the "
                        "micro-batches it completed (default: no limit)")
    p.add_argument("--no-bare", action="store_true",
                   help="streaming: skip the bare streams (a processor posting each event as one row, keyed by "
                        "trace and by k) that the windows' rates are measured against")
    p.add_argument("--stream-only", action="store_true",
                   help="streaming: the windows' streams alone, without the bare streams, the batch beside them "
                        "and the latency runs (tests/cluster/scaling.py measures one and two workers so)")
    p.add_argument("--report", type=Path, metavar="FILE.json", help="also write the figures as JSON")
    add_session_options(p)
    p.set_defaults(handler=cmd_bench)


def whole_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be 0 or above")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} must be above 0")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a number of seconds above 0")
    return value


def cmd_bench(args: argparse.Namespace) -> int:
    open_session(args, args.engine in ("spark", "streaming"))
    streaming_only = (("--batch-rows", args.batch_rows), ("--budget", args.budget), ("--no-bare", args.no_bare or None),
                      ("--stream-only", args.stream_only or None))
    if args.engine != "streaming":
        for option, value in streaming_only:
            if value is not None:
                raise UsageError(f"{option} applies to --engine streaming only")
    if args.engine == "spark":
        return load_spark("spark_impl.bench", "main")(args) or 0
    if args.engine == "streaming":
        if args.unchecked:
            raise UsageError("--unchecked applies to --engine spark only")
        if args.trace_frame:
            raise UsageError("--trace-frame applies to --engine spark only; the streaming bench runs each window "
                             "beside the batch apply_window of the same trace")
        return load_spark("spark_impl.streaming.bench", "main")(args) or 0
    for option, value in (("--keys", args.keys), ("--window", args.window), ("--trace-frame", args.trace_frame or None),
                          ("--unchecked", args.unchecked or None)):
        if value is not None:
            raise UsageError(f"{option} applies to --engine spark only; the oracle's bench measures "
                             "#length(100) and #time(10 sec) on one key")
    repeat = args.repeat or 3
    results = bench.bench_oracle(args.events or 200_000, repeat)
    Printer(sys.stdout).lines(bench.text_lines(results, repeat))
    write_report(args.report, bench.report_json(results, repeat))
    return 0


# --------------------------------------------------------------------------- run


def add_run(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="differential run: generated windows and traces, the oracle against an implementation",
        description="Draw windows and batches of traces with Hypothesis, run each trace through the oracle and "
                    "each batch through the implementation under test (one Spark job), compare every update. "
                    "A disagreement is shrunk to a minimal case and saved. Exit 1 on any mismatch.",
    )
    p.add_argument("--dialect", default=runner.ALL_DIALECTS, choices=(runner.ALL_DIALECTS, *IMPLEMENTED),
                   help="the windows' dialect (default: all, every implemented kind of the four)")
    p.add_argument("--window", metavar="CLAUSE",
                   help="check only this window clause, in --dialect (Esper's under the default `all`)")
    p.add_argument("--kind", action="append", metavar="KIND",
                   help="check only this window kind, drawn as in a full run (repeatable; e.g. intersection, "
                        "groupwin/time_batch; default: every implemented kind)")
    p.add_argument("--examples", type=positive_int, default=2000, metavar="N",
                   help="traces per window kind (default: 2000), spread over 10 windows at least, run in rounds "
                        "of a window per kind: the budget may stop a kind sooner, every kind alike")
    p.add_argument("--batch-size", type=positive_int, default=1000, metavar="B",
                   help="at most B traces per window, one Spark job (default: 1000)")
    p.add_argument("--in-flight", type=positive_int, default=3, metavar="J",
                   help="batches in flight: the implementation's jobs run in J-1 worker threads while the next "
                        "batch is made and run through the oracle; 1 runs one thing at a time (default: 3)")
    p.add_argument("--windows-per-job", type=positive_int, default=runner.WINDOWS_PER_JOB, metavar="W",
                   help="windows (batches) the implementation runs in one Spark job, of any kinds "
                        f"(default: {runner.WINDOWS_PER_JOB})")
    p.add_argument("--oracle-processes", type=whole_int, default=0, metavar="P",
                   help="run the oracle in P processes of its own rather than in the main thread (default: 0)")
    p.add_argument("--seed", type=int,
                   help="the run's seed (default: drawn at random and printed, so a run can be repeated)")
    p.add_argument("--budget", type=positive_float, default=300.0, metavar="SECONDS",
                   help="stop drawing new batches after this long (default: 300)")
    p.add_argument("--impl", default=None, metavar="MODULE:FUNCTION",
                   help=f"the implementation under test, shaped like spark_impl.apply_window (default: "
                        f"{runner.DEFAULT_IMPL}; with --engine streaming, {STREAMING_IMPL})")
    p.add_argument("--engine", choices=("spark", "streaming"), default="spark",
                   help="spark: the batch plans; streaming: each batch of traces fed to a Structured Streaming "
                        "query as files, 3 micro-batches per trace at random cut points (default: spark)")
    p.add_argument("--found-dir", type=Path, default=Path("corpus/found"), metavar="DIR",
                   help="where minimal disagreeing cases are saved (default: corpus/found)")
    p.add_argument("--report", type=Path, metavar="FILE.json", help="also write the results as JSON")
    add_pictures_option(p, "each saved case's picture (the oracle's output above the implementation's) goes to "
                           "DIR (default: beside the saved case)")
    add_session_options(p)
    p.set_defaults(handler=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    if args.impl is not None and args.engine == "streaming":
        raise UsageError("--engine streaming runs spark_impl.streaming; --impl names another implementation: "
                         "give one of them")
    args.impl = args.impl or (STREAMING_IMPL if args.engine == "streaming" else runner.DEFAULT_IMPL)
    if args.window is not None and args.kind:
        raise UsageError("--kind draws windows of a kind and --window checks one given window: give one of them")
    targets = runner.targets(args.dialect, args.window, args.kind)
    open_session(args, True)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    dialects = sorted({t.dialect or args.dialect for t in targets}, key=(runner.ALL_DIALECTS, *IMPLEMENTED).index)
    print(f"difftest run: {counted(len(targets), 'window kind')} of {', '.join(dialects)}, "
          f"{counted(args.examples, 'trace')} per kind, "
          f"budget {args.budget:g} s, seed {seed} (repeat with --seed {seed})", flush=True)
    session = load_spark("spark_impl.session", "get_spark")()
    impl = runner.ImplUnderTest(runner.load_impl(args.impl), session, args.impl)
    run = runner.Runner(impl, dialect=dialects[0], batch_size=args.batch_size, found_dir=args.found_dir,
                        seed=seed, in_flight=args.in_flight, windows_per_job=args.windows_per_job,
                        oracle_processes=args.oracle_processes,
                        pictures=not args.no_pictures, pictures_dir=args.pictures)
    # the run's jobs are small (windows of at most --batch-size traces of at most 25 items): planned and run
    # without code generation nor adaptive execution, which cost more than their rows (`session.interpreted`;
    # a two-core run of seed 2408: 505 -> 607 traces/s); a stream's queries keep their own settings
    small = load_spark("spark_impl.session", "interpreted")(session) if args.engine == "spark" else contextlib.nullcontext()
    with small, progress_bar(sys.stdout, len(targets) * args.examples) as advance:
        run.on_batch = lambda kind, result: advance(kind, len(result.results))
        if not sys.stdout.isatty():  # a log or CI: a line per kind as it finishes, not silence
            run.on_target = lambda stats: print(runner.kind_line(stats), flush=True)
            run.on_round = lambda n, judged, seconds: print(
                f"round {n}: a window for each kind left; {judged:,} traces judged in {seconds:.0f} s", flush=True)
        run.run(targets, args.examples, args.budget)
    totals = run.totals()
    Printer(sys.stdout).lines(runner.table_lines(run.stats, totals))
    write_report(args.report, runner.report_json(run, args.impl, totals))
    return 1 if totals["mismatches"] or totals["errors"] else 0


@contextlib.contextmanager
def progress_bar(stream: TextIO, total: int):
    """A live progress bar on a terminal (cases compared); nothing otherwise."""
    if not stream.isatty():
        yield lambda kind, n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description:<24}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=stream), transient=True) as progress:
        task = progress.add_task("starting Spark", total=total)

        def advance(kind: str, n: int) -> None:
            progress.update(task, advance=n, description=kind)

        yield advance


# --------------------------------------------------------------------------- expect


def add_expect(subparsers) -> None:
    p = subparsers.add_parser(
        "expect", help="the oracle's updates for a case file, or for a window over your own events",
        description="Print the updates the oracle posts, one JSON object per line in the case format's `expected` "
                    "shape: for a case file (its input; --write fills its `expected` in place), or for --window "
                    "over an events file (JSON lines, or CSV; every event has an `id`, the --time "
                    "column is its arrival time in ms). " + CSV_RULES + ".",
    )
    p.add_argument("path", type=Path, metavar="CASE.json|EVENTS.jsonl|EVENTS.csv")
    p.add_argument("--window", metavar="CLAUSE", help="the window (or statement) to run over an events file")
    p.add_argument("--dialect", default="esper", choices=IMPLEMENTED, help="the window's dialect (default: esper)")
    p.add_argument("--time", metavar="FIELD", help="events file: the field holding each event's arrival time, ms")
    p.add_argument("--until", type=int, metavar="MS", help="events file: walk the clock to MS after the last event")
    p.add_argument("--write", action="store_true", help="case file: write the updates into its `expected`")
    p.set_defaults(handler=cmd_expect)


#: the suffixes of an events file: never a case file
EVENTS_SUFFIXES = (".jsonl", ".ndjson", ".csv")
NEEDS_WINDOW = "an events file needs --window CLAUSE, the window to run over it"


def cmd_expect(args: argparse.Namespace) -> int:
    from oracle import cases, run
    from oracle.dialects import case_spec
    from oracle.errors import InvalidTrace
    from oracle.events import events_trace

    if args.window is None:
        for option, value in (("--time", args.time), ("--until", args.until)):
            if value is not None:
                raise UsageError(f"{option} applies to an events file with --window, not to a case file")
        if args.path.suffix.lower() in EVENTS_SUFFIXES:
            raise UsageError(f"{args.path}: {NEEDS_WINDOW} (without it, the path is a case file: one JSON object)")
        try:
            raw = json.loads(args.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {args.path}: {exc}") from None
        except json.JSONDecodeError as exc:
            lines = f" (JSON lines? {NEEDS_WINDOW})" if exc.msg == "Extra data" else ""
            raise UsageError(f"{args.path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
                             f"{lines}") from None
        if isinstance(raw, dict) and not {"window", "input"} & set(raw):
            raise UsageError(f"{args.path}: not a case file (no 'window', no 'input'); {NEEDS_WINDOW}")
        if isinstance(raw, dict):
            raw.setdefault("expected", [])  # a case being written has none yet
        case = cases.case_from_json(raw, args.path)
        updates = run(case_spec(case), case.trace)
        if args.write:
            text = cases.dump_case(cases.Case(case.name, case.dialect, case.window, case.trace, updates, case.about,
                                              case.source, case.path, case.extra))
            args.path.write_text(text, encoding="utf-8")
    else:
        if args.write:
            raise UsageError("--write fills a case file's `expected`; an events file has none")
        spec = oracle_parse(args.window, args.dialect)
        lines: list[int] = []
        events = read_events(args.path, lines)
        try:
            updates = run(spec, events_trace(events, args.time, args.until))
        except InvalidTrace as exc:
            raise UsageError(_where_in_file(args, lines, exc)) from None
    for update in updates:
        print(json.dumps(cases.update_to_json(update)))
    return 0


def _where_in_file(args: argparse.Namespace, lines: list[int], exc) -> str:
    """An events file's refused item told by its place: the file's line of an
    event (`lines`: each event's line), `--until` for the final walk, or the
    whole trace (a statement reading a property no event has)."""
    if exc.index is None:
        return "--until" + exc.reason.removeprefix("`until`") if exc.reason.startswith("`until`") else \
            f"{args.path}: {exc.reason}"
    if exc.index < len(lines):
        return f"{args.path} line {lines[exc.index]}: {exc.reason}"
    return f"--until {args.until}: {exc.reason}"


def read_events(path: Path, lines: list[int] | None = None) -> list[dict[str, Any]]:
    """The events of a JSON-lines or CSV file (by its suffix, `read_csv_events`
    for CSV). A line that is not an event names its number; `lines`, where
    given, gets each event's line number."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if path.suffix.lower() == ".csv":
        return read_csv_events(path, text, lines)
    events: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path} line {number}: not valid JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise UsageError(f"{path} line {number}: an event is a JSON object, got {type(record).__name__}")
        events.append(record)
        if lines is not None:
            lines.append(number)
    return events


#: how `expect` reads a CSV events file (its --help says so)
CSV_RULES = ("CSV: a header line names the columns and every row has a cell for each; a column's type is decided "
             "from all its cells: all whole numbers, integers; all numbers, doubles; else text (`id` is always "
             "text); an empty cell is a missing property (null)")
_WHOLE = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def read_csv_events(path: Path, text: str, lines: list[int] | None = None) -> list[dict[str, Any]]:
    """The events of a CSV file by `CSV_RULES`. A row with more or fewer cells
    than the header is refused, naming its line and the columns it lacks;
    `lines`, where given, gets each event's line number."""
    import csv

    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header:
        raise UsageError(f"{path}: no header line naming the columns")
    rows: list[tuple[int, list[str]]] = []
    for row in reader:
        if not row:
            continue  # a blank line
        if len(row) != len(header):
            lacking = f"no cell for {', '.join(header[len(row):])}" if len(row) < len(header) else \
                f"{len(row) - len(header)} more than the header's columns"
            raise UsageError(f"{path} line {reader.line_num}: {len(row)} cells, the header has {len(header)} "
                             f"({lacking}); leave a cell empty for a missing value")
        rows.append((reader.line_num, row))
    convert = {name: _column_type(name, [row[n] for _, row in rows]) for n, name in enumerate(header)}
    if lines is not None:
        lines += [number for number, _ in rows]
    return [{name: convert[name](cell) for name, cell in zip(header, row) if cell != ""} for _, row in rows]


def _column_type(name: str, cells: list[str]) -> Callable[[str], Any]:
    """How a CSV column's cells are read: one type for the whole column."""
    values = [cell for cell in cells if cell != ""]
    if name != "id" and values and all(_WHOLE.fullmatch(v) for v in values):
        return int
    if name != "id" and values and all(_NUMBER.fullmatch(v) for v in values):
        return float
    return str


# --------------------------------------------------------------------------- show, explain


def add_show(subparsers) -> None:
    p = subparsers.add_parser(
        "show", help="a case as a timeline picture: expected above actual, the first difference marked",
        description="Draw a case: the clock with the trace's advance and jump items, a lane per event (grouped by "
                    "sub-window; a lane per key for a CCL keyed window; panes for eKuiper), a bar from the update "
                    "that inserted each event to the one that removed it, rows that are not events as a table, "
                    "the case's expected output above each engine's, the first difference highlighted. SVG (hover: "
                    "the oracle's reason for each row) or PNG with --out; printed to the terminal without.",
    )
    p.add_argument("path", type=Path, metavar="CASE.json")
    p.add_argument("--engine", choices=ENGINE_NAMES, default="oracle", help="engine(s) to run (default: oracle)")
    p.add_argument("--out", type=Path, metavar="FILE.svg|FILE.png", help="write the picture here (needs matplotlib)")
    p.set_defaults(handler=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from difftest import show

    if args.out is not None and args.out.suffix.lower() not in (".svg", ".png"):
        raise UsageError(f"--out {args.out}: the picture's file must end in .svg or .png")
    case, has_expected = show.check_case(args.path)
    picture = show.case_picture(case, has_expected, args.engine)
    if args.out is None:
        Printer(sys.stdout).lines(show.picture_lines(picture))
    else:
        from difftest import draw

        draw.render(picture, args.out)
        print(f"wrote {args.out}")
    return 1 if any(p.difference is not None for p in picture.panels) else 0


def add_explain(subparsers) -> None:
    p = subparsers.add_parser(
        "explain", help="the oracle's updates for a case, each row with the rule that posted it",
        description="Print each update the oracle posts for a case's input, each row with its reason: the rule "
                    "of the window that posted it, a phrase of the window's docstring. Reasons are the oracle's "
                    "and no part of any comparison.",
    )
    p.add_argument("path", type=Path, metavar="CASE.json")
    p.set_defaults(handler=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    from difftest import show

    case, _ = show.check_case(args.path)
    Printer(sys.stdout).lines(show.explain_lines(case))
    return 0


# --------------------------------------------------------------------------- main

SUBCOMMANDS = (add_replay, add_bench, add_run, add_expect, add_show, add_explain)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="difftest", description="Differential conformance runs, case replay and benchmarks for window-oracle.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except WindowOracleError as exc:
        print(f"difftest {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader stopped early (`| head`): nothing more to say
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
