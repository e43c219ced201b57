"""The `difftest` command (difftest/__main__.py): `replay` and `bench`.

Run in-process with `main([...])` and capsys; one test runs the installed console
script. The Spark engine is exercised with a fake `spark_impl.run_cases`, so this
file never starts a JVM.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import oracle
from difftest.__main__ import main
from oracle.errors import InvalidTrace

LENGTH_2 = {
    "name": "length-2",
    "dialect": "esper",
    "window": "#length(2)",
    "input": [
        {"event": {"id": "E1", "price": 1.0}},
        {"advance": 1000},
        {"event": {"id": "E2", "price": 2.0}},
        {"event": {"id": "E3", "price": 3.0}, "time": 1500},
    ],
    "expected": [
        {"after": 0, "time": 0, "insert": ["E1"], "remove": []},
        {"after": 2, "time": 1000, "insert": ["E2"], "remove": []},
        {"after": 3, "time": 1500, "insert": ["E3"], "remove": ["E1"]},
    ],
}


def write(folder: Path, name: str, case=None, text: str | None = None, **changes) -> Path:
    """A case file: LENGTH_2 with `changes`, or `case`, or raw `text`."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else json.dumps({**(case or LENGTH_2), **changes}), encoding="utf-8")
    return path


def wrong_remove():
    expected = [dict(u) for u in LENGTH_2["expected"]]
    expected[2]["remove"] = ["E2"]
    return expected


def replay(capsys, *args):
    code = main(["replay", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


# --------------------------------------------------------------------------- replay on the oracle


def test_a_passing_case(tmp_path, capsys):
    path = write(tmp_path, "ok.json")
    code, lines, err = replay(capsys, path)
    assert (code, lines, err) == (0, [f"PASS {path}", "1 passed, 0 failed"], "")


def test_a_failing_case_shows_the_first_difference(tmp_path, capsys):
    path = write(tmp_path, "bad.json", expected=wrong_remove())
    code, lines, _ = replay(capsys, path)
    assert code == 1
    assert lines[0] == f"FAIL {path}"
    assert lines[1] == "  update 2 differs in remove (of 3 updates expected, 3 posted)"
    remove = next(line for line in lines if "remove" in line and "!" in line)
    assert remove.split() == ["!", "remove", "[E2]", "[E1]"]
    assert any(line.split() == ["time", "1500", "1500"] for line in lines)
    assert lines[-1] == "0 passed, 1 failed"


def test_folders_are_searched_recursively_and_every_case_runs(tmp_path, capsys):
    ok = write(tmp_path, "a/ok.json")
    bad = write(tmp_path, "b/deeper/bad.json", expected=LENGTH_2["expected"][:2])
    write(tmp_path, "b/notes.txt", text="not a case")
    code, lines, _ = replay(capsys, tmp_path)
    assert code == 1
    assert lines[0] == f"PASS {ok}" and lines[1] == f"FAIL {bad}"
    assert lines[2] == "  update 2 is extra (of 2 updates expected, 3 posted)"
    assert lines[-1] == "1 passed, 1 failed"


ERRORS = [
    ("bad-json.json", dict(text='{"dialect": "esper",\n  "window": }'), "not valid JSON: Expecting value at line 2 column 13"),
    ("no-expected.json", dict(case={k: v for k, v in LENGTH_2.items() if k != "expected"}), "the case has no 'expected'"),
    ("dialect.json", dict(dialect="flink"), "unknown dialect 'flink'; known: esper, ccl, apama, kuiper"),
    ("unsupported.json", dict(window="#time(1 year)"), "calendar time periods (year) are not supported (column 9)"),
    ("syntax.json", dict(window="#length(2"), "at column 10"),
    ("backwards.json", dict(input=[{"event": {"id": "E1"}, "time": 500}, {"advance": 100}]),
     "trace item 1: time goes backwards: 100 ms is before the clock at 500 ms"),
    ("duplicate.json", dict(input=[{"event": {"id": "E1"}}, {"advance": 100}, {"event": {"id": "E1"}}]),
     "trace item 2: duplicate event id 'E1' (first at item 0)"),
    ("bad-item.json", dict(input=[{"event": {"id": "E1"}}, {"wait": 100}]), "trace item 1: unknown item"),
    ("string-ts.json", dict(window="#ext_timed(ts, 1 sec)", input=[{"event": {"id": "E1", "ts": "late"}}]),
     "trace item 0: event 'E1': timestamp property 'ts' is 'late', not an integer"),
    ("huge-advance.json", dict(input=[{"event": {"id": "E1"}}, {"advance": 10**30}]),
     f"trace item 1: the time {10**30} ms is further than 2**62 ms from 0"),
    ("huge-start.json", dict(start_time=2**63), f"the start time {2**63} ms is further than 2**62 ms from 0"),
    # `expected` as strict as the input: the update's index and the field are named
    ("after-text.json", dict(expected=[{"after": "x", "time": 0, "insert": ["E1"]}]),
     "expected[0].after must be a whole number, got 'x'"),
    ("after-null.json", dict(expected=[{"after": None, "time": 0, "insert": ["E1"]}]),
     "expected[0].after must be a whole number, not null"),
    ("after-half.json", dict(expected=[{"after": 0.5, "time": 0, "insert": ["E1"]}]),
     "expected[0].after must be a whole number, got 0.5"),
    ("time-text.json", dict(expected=[{"after": 0, "time": "0", "insert": ["E1"]}]),
     "expected[0].time must be a whole number, got '0'"),
    ("pane-start.json", dict(expected=[{"after": 0, "time": 0, "insert": ["E1"], "window": {"start": "a", "end": 5}}]),
     "expected[0].window.start must be a whole number, got 'a'"),
    ("values-rows.json", dict(expected=[{"after": 0, "time": 0, "insert": ["E1"], "values": {"insert": [1, 2]}}]),
     "expected[0].values.insert must be a list of objects"),
    ("error-type.json", dict(expected=[{"after": 0, "time": 0, "error": 5}]), "expected[0].error must be a message"),
    # a null is said as one (JSON's word), not as Python's None (issue 43, item 11)
    ("advance-null.json", dict(input=[{"advance": None}], expected=[]),
     "trace item 0: 'advance' must be whole milliseconds, not null"),
    ("id-null.json", dict(input=[{"event": {"id": None}}], expected=[]), "trace item 0: the event id must be a string, not null"),
    ("query-null.json", dict(query=None), "'query' must be a string, not null"),
    # one rule of what a case may hold, for both engines (oracle.model.TraceProperties)
    ("seq-property.json", dict(input=[{"event": {"id": "E1", "seq": 1}}]),
     "trace item 0: property 'seq' is named like the trace frame's own column 'seq'"),
    ("case-twins.json", dict(input=[{"event": {"id": "E1", "symbol": "A"}}, {"event": {"id": "E2", "Symbol": "B"}}]),
     "trace item 1: properties 'symbol' (item 0) and 'Symbol' differ only in case"),
    ("mixed-kinds.json", dict(input=[{"event": {"id": "E1", "size": 3}}, {"event": {"id": "E2", "size": None}},
                                     {"event": {"id": "E3", "size": "big"}}]),
     "trace item 2: property 'size' holds a string here but a number at item 0"),
    ("dotted-name.json", dict(input=[{"event": {"id": "E1", "a.b": 3}}]),
     "trace item 0: property name 'a.b' is not an identifier"),
    # eKuiper aligns window ends to calendar dates, which end with the year 9999
    ("kuiper-days.json", dict(dialect="kuiper", window="TUMBLINGWINDOW(dd, 3000000)", expected=[]),
     "TUMBLINGWINDOW: the size at column 20 must be at most 253,402,300,800,000 ms"),
    ("kuiper-far-start.json", dict(dialect="kuiper", window="TUMBLINGWINDOW(ss, 10)", start_time=3 * 10**14,
                                   input=[{"event": {"id": "E1"}}], expected=[]),
     "the end after 300000000000000 ms lies past the year 9999"),
]


@pytest.mark.parametrize(("name", "content", "reason"), ERRORS, ids=[e[0] for e in ERRORS])
def test_a_case_that_cannot_run_is_an_error_and_the_others_still_run(tmp_path, capsys, name, content, reason):
    bad = write(tmp_path, name, **content)
    ok = write(tmp_path, "zz-ok.json")
    code, lines, err = replay(capsys, bad, ok)
    assert code == 2
    assert lines[0].startswith(f"ERROR {bad}: ") and reason in lines[0]
    assert f"PASS {ok}" in lines
    assert lines[-1] == "1 passed, 0 failed, 1 error"
    assert "Traceback" not in err


def test_an_engine_bug_is_an_error_of_its_case_only(tmp_path, capsys, monkeypatch):
    """An exception that is not a user-input error (an engine's bug) makes its case
    an ERROR naming the exception; the other cases run, no traceback."""
    real = oracle.run

    def buggy(spec, trace):
        if len(trace.items) == 1:
            raise OverflowError("date value out of range")
        return real(spec, trace)

    monkeypatch.setattr(oracle, "run", buggy)
    bad = write(tmp_path, "bad.json", input=[{"event": {"id": "E1"}}], expected=[])
    ok = write(tmp_path, "ok.json")
    code, lines, err = replay(capsys, bad, ok)
    assert code == 2
    assert lines[0] == f"ERROR {bad}: internal error of the oracle engine: OverflowError: date value out of range"
    assert f"PASS {ok}" in lines and "Traceback" not in err


def test_a_missing_file_is_an_error(tmp_path, capsys):
    code, lines, _ = replay(capsys, tmp_path / "nowhere.json")
    assert code == 2 and lines[0].startswith(f"ERROR {tmp_path / 'nowhere.json'}: cannot read:")


def test_a_folder_without_cases_is_a_user_error(tmp_path, capsys):
    code, lines, err = replay(capsys, tmp_path)
    assert code == 2 and lines == []
    assert err.strip() == f"difftest replay: no case files (*.json) found in {tmp_path}"


def test_the_json_report(tmp_path, capsys):
    ok = write(tmp_path, "1-ok.json")
    bad = write(tmp_path, "2-bad.json", expected=wrong_remove())
    err = write(tmp_path, "3-err.json", window="#time(1 year)")
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    code, _, _ = replay(capsys, "--report", report, tmp_path / "1-ok.json", bad, err)
    assert code == 2
    data = json.loads(report.read_text())
    assert data["engine"] == "oracle"
    assert data["totals"] == {"cases": 3, "passed": 1, "failed": 1, "errors": 1}
    first, second, third = data["cases"]
    assert first == {"path": str(ok), "name": "length-2", "window": "#length(2)", "status": "PASS",
                     "engine": "oracle", "difference": None, "error": None}
    assert second["status"] == "FAIL" and second["error"] is None
    assert second["difference"]["index"] == 2 and second["difference"]["fields"] == ["remove"]
    assert second["difference"]["expected"]["remove"] == ["E2"]
    assert second["difference"]["actual"]["remove"] == ["E1"]
    assert third["status"] == "ERROR" and third["difference"] is None
    assert third["error"] == "calendar time periods (year) are not supported (column 9); Esper computes years and months on the calendar"


def test_an_unwritable_report_is_a_user_error(tmp_path, capsys):
    path = write(tmp_path, "ok.json")
    code, _, err = replay(capsys, "--report", tmp_path / "no" / "such" / "dir.json", path)
    assert code == 2 and err.startswith("difftest replay: cannot write the report") and "Traceback" not in err


def test_plain_output_has_no_escape_codes(tmp_path, capsys):
    write(tmp_path, "bad.json", expected=wrong_remove())
    _, lines, _ = replay(capsys, tmp_path)
    assert not any("\x1b" in line for line in lines)


# --------------------------------------------------------------------------- the spark engine, faked


@pytest.fixture
def java_home(tmp_path, monkeypatch):
    """A JAVA_HOME whose bin/java exists, for the Java check; the fake never runs it."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\nexit 1\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))


@pytest.fixture
def fake_spark(monkeypatch, java_home):
    """A `spark_impl` module whose run_cases runs the oracle, records its calls, and
    lets a test change the outcome per case (by the first event's id)."""
    module = types.ModuleType("spark_impl")
    module.calls = []
    module.tamper = {}

    def run_cases(pairs, progress=None):
        module.calls.append(list(pairs))
        if progress:
            progress(1, 1)
        out = []
        for spec, trace in pairs:
            first = trace.events()[0].id if trace.events() else None
            change = module.tamper.get(first)
            out.append(change(spec, trace) if change else oracle.run(spec, trace))
        return out

    module.run_cases = run_cases
    monkeypatch.setitem(sys.modules, "spark_impl", module)
    return module


def events_from(first: str) -> list[dict]:
    return [{"event": {"id": first}}, {"event": {"id": first + "b"}}, {"event": {"id": first + "c"}}]


def expected_from(first: str) -> list[dict]:
    return [
        {"after": 0, "time": 0, "insert": [first], "remove": []},
        {"after": 1, "time": 0, "insert": [first + "b"], "remove": []},
        {"after": 2, "time": 0, "insert": [first + "c"], "remove": [first]},
    ]


def three_cases(tmp_path):
    return [write(tmp_path, f"{n}.json", input=events_from(n), expected=expected_from(n)) for n in ("A", "B", "C")]


def test_spark_runs_all_cases_in_one_call(tmp_path, capsys, fake_spark):
    paths = three_cases(tmp_path)
    write(tmp_path, "D-bad.json", dialect="flink")
    code, lines, _ = replay(capsys, "--engine", "spark", tmp_path)
    assert len(fake_spark.calls) == 1 and len(fake_spark.calls[0]) == 3
    assert lines[:3] == [f"PASS {p}" for p in paths]
    assert code == 2 and lines[-1] == "3 passed, 0 failed, 1 error"


def test_spark_failures_and_per_case_errors(tmp_path, capsys, fake_spark):
    a, b, c = three_cases(tmp_path)
    fake_spark.tamper["B"] = lambda spec, trace: oracle.run(spec, trace)[:2]
    fake_spark.tamper["C"] = lambda spec, trace: InvalidTrace("the spark engine refuses this", 1)
    code, lines, _ = replay(capsys, "--engine", "spark", tmp_path)
    assert code == 2
    assert lines[0] == f"PASS {a}"
    assert lines[1] == f"FAIL {b}" and lines[2] == "  update 2 is missing (of 3 updates expected, 2 posted)"
    assert f"ERROR {c}: trace item 1: the spark engine refuses this" in lines
    assert lines[-1] == "1 passed, 1 failed, 1 error"


def test_both_engines_report_a_line_per_engine(tmp_path, capsys, fake_spark):
    a, b, c = three_cases(tmp_path)
    fake_spark.tamper["B"] = lambda spec, trace: oracle.run(spec, trace)[:2]
    fake_spark.tamper["C"] = lambda spec, trace: InvalidTrace("no such thing", 0)
    report = tmp_path / "r.json"
    code, lines, _ = replay(capsys, "--engine", "both", "--report", report, a, b, c)
    assert code == 2
    i = lines.index(f"FAIL {b}")
    assert lines[i + 1:i + 3] == ["  oracle: PASS", "  spark: update 2 is missing (of 3 updates expected, 2 posted)"]
    assert lines[i + 3].startswith("    ")
    assert lines[0] == f"PASS {a}"
    j = lines.index(f"ERROR {c}: spark: trace item 0: no such thing")
    assert lines[j + 1] == "  oracle: PASS"
    cases = json.loads(report.read_text())["cases"]
    assert cases[1]["engine"] == "spark" and cases[1]["engines"] == {"oracle": "PASS", "spark": "FAIL"}
    assert cases[1]["difference"]["index"] == 2 and cases[1]["difference"]["actual"] is None
    assert cases[2]["error"] == "trace item 0: no such thing"


def test_both_fails_when_only_the_oracle_fails(tmp_path, capsys, fake_spark):
    path = write(tmp_path, "x.json", input=events_from("X"), expected=expected_from("X")[:2])
    fake_spark.tamper["X"] = lambda spec, trace: oracle.run(spec, trace)[:2]
    code, lines, _ = replay(capsys, "--engine", "both", path)
    assert code == 1 and lines[:2] == [f"FAIL {path}", "  oracle: update 2 is extra (of 2 updates expected, 3 posted)"]
    assert "  spark: PASS" in lines


def test_no_java_is_one_sentence(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, lines, err = replay(capsys, "--engine", "spark", write(tmp_path, "ok.json"))
    assert code == 2 and lines == []
    assert err == ("difftest replay: the spark engine needs Java, but there is no `java` on PATH and JAVA_HOME "
                   "is not set; install Java 17 or 21 and set JAVA_HOME\n")


def test_a_java_home_without_java_is_one_sentence(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojdk"))
    code, _, err = replay(capsys, "--engine", "both", write(tmp_path, "ok.json"))
    assert code == 2 and err.count("\n") == 1
    assert f"JAVA_HOME is {tmp_path / 'nojdk'}" in err and "is not an executable file" in err


def test_a_jvm_that_does_not_start_is_one_sentence(tmp_path, capsys, fake_spark):
    from pyspark.errors import PySparkRuntimeError

    def run_cases(pairs, progress=None):
        raise PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={})

    fake_spark.run_cases = run_cases
    code, _, err = replay(capsys, "--engine", "spark", write(tmp_path, "ok.json"))
    assert code == 2 and err.count("\n") == 1 and "could not start its JVM" in err


@pytest.mark.parametrize("module", [None, types.ModuleType("spark_impl")], ids=["not importable", "no run_cases"])
def test_a_spark_impl_that_cannot_be_loaded_is_one_sentence(tmp_path, capsys, monkeypatch, java_home, module):
    monkeypatch.setitem(sys.modules, "spark_impl", module)
    code, _, err = replay(capsys, "--engine", "spark", write(tmp_path, "ok.json"))
    assert code == 2 and err.count("\n") == 1 and err.startswith("difftest replay: the spark engine cannot be loaded: ")


# what an implementation's failure says (issue 43, item 3): the exception's own cause, not Spark's wrapper
PYTHON_WORKER = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/home/me/impl.py", line 10, in price_of
    raise ValueError(f"price {x} is not a price")
ValueError: price 3 is not a price
"""
JAVA_WRAPPED_PYTHON = """An error occurred while calling o30376.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times, most recent \
failure: Lost task 0.0 in stage 3.0 (TID 3) (10.0.0.1 executor driver): org.apache.spark.api.python.PythonException: \
Traceback (most recent call last):
  File "/home/me/impl.py", line 4, in check
    raise KeyError("symbol")
KeyError: 'symbol'

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:581)
""".replace("\\\n", "")
JAVA_CRASH = """An error occurred while calling o217.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 23.0 failed 1 times, most recent \
failure: Lost task 0.0 in stage 23.0 (TID 31) (192.0.2.2 executor driver): org.apache.spark.SparkException: Python \
worker exited unexpectedly (crashed).
\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator$$anonfun$1.applyOrElse(PythonRunner.scala:1136)
Caused by: java.io.EOFException
\tat java.base/java.io.DataInputStream.readInt(DataInputStream.java:386)

Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.$anonfun$abortStage$3(DAGScheduler.scala:4568)
Caused by: org.apache.spark.SparkException: Python worker exited unexpectedly (crashed).
""".replace("\\\n", "")
JAVA_CAUSED_BY = """An error occurred while calling o12.collectToPython.
: org.apache.spark.SparkException: Job aborted.
\tat org.apache.spark.sql.execution.SparkPlan.executeCollect(SparkPlan.scala:480)
Caused by: java.lang.IllegalStateException: the state store of partition 3 is closed
\tat org.apache.spark.sql.execution.streaming.state.StateStore.get(StateStore.scala:10)
"""
ANALYSIS = """[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `nosuch` cannot \
be resolved. Did you mean one of the following? [`id`]. SQLSTATE: 42703;
'Project ['nosuch]
+- Range (0, 5, step=1, splits=Some(4))
""".replace("\\\n", "")


@pytest.mark.parametrize("name, text, said", [
    ("PythonException", PYTHON_WORKER, "ValueError: price 3 is not a price"),
    ("Py4JJavaError", JAVA_WRAPPED_PYTHON, "KeyError: 'symbol'"),
    ("Py4JJavaError", JAVA_CRASH, "SparkException: Python worker exited unexpectedly (crashed)."),
    ("Py4JJavaError", JAVA_CAUSED_BY, "IllegalStateException: the state store of partition 3 is closed"),
    ("AnalysisException", ANALYSIS, "AnalysisException: [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or "
                                    "function parameter with name `nosuch` cannot be resolved. Did you mean one of "
                                    "the following? [`id`]."),
    ("RuntimeError", "my window is not ready\nsecond line", "RuntimeError: my window is not ready"),
    ("RuntimeError", "", "RuntimeError"),
])
def test_an_implementations_error_is_told_by_its_cause(name, text, said):
    from spark_impl.errors import cause

    exc = type(name, (Exception,), {})(text)
    assert cause(exc) == said


# --------------------------------------------------------------------------- bench


def test_bench_prints_figures_and_a_report(tmp_path, capsys):
    report = tmp_path / "bench.json"
    assert main(["bench", "--events", "2000", "--repeat", "1", "--report", str(report)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "oracle throughput, 2,000 events with 5 properties, CPU time, best of 1"
    row = re.compile(r"(#length\(100\)|#time\(10 sec\)) +([\d,]+) +([\d,]+) +([\d.]+)x  (meets targets|misses target: .+)")
    found = [row.fullmatch(line) for line in lines[3:]]
    assert all(found) and [m[1] for m in found] == ["#length(100)", "#time(10 sec)"], lines
    assert all(int(m[2].replace(",", "")) > 0 and float(m[4]) > 0 for m in found)
    data = json.loads(report.read_text())
    assert [r["window"] for r in data["results"]] == ["#length(100)", "#time(10 sec)"]
    assert all(r["events"] == 2000 and r["oracle_events_per_s"] > 0 and r["same_output"] for r in data["results"])
    assert all(set(r["missed_targets"]) <= {"rate", "ratio"} for r in data["results"])


def test_bench_spark_hands_over_to_spark_impl_bench(monkeypatch, java_home):
    seen = []
    module = types.ModuleType("spark_impl.bench")
    module.main = lambda args: seen.append((args.engine, args.events)) or 0
    monkeypatch.setitem(sys.modules, "spark_impl.bench", module)
    assert main(["bench", "--engine", "spark", "--events", "10"]) == 0
    assert main(["bench", "--engine", "spark"]) == 0  # no --events: spark_impl.bench's own sizes, 1 M and 10 M
    assert seen == [("spark", 10), ("spark", None)]


def test_bench_streaming_hands_over_to_the_streaming_bench(monkeypatch, java_home):
    seen = []
    module = types.ModuleType("spark_impl.streaming.bench")
    module.main = lambda args: seen.append((args.engine, args.events, args.keys, args.batch_rows, args.budget,
                                            args.window, args.no_bare, args.stream_only)) or 0
    monkeypatch.setitem(sys.modules, "spark_impl.streaming.bench", module)
    assert main(["bench", "--engine", "streaming", "--events", "3000", "--keys", "50", "--batch-rows", "1000",
                 "--budget", "2.5", "--window", "ccl: KEEP 10 ROWS PER(k)", "--no-bare"]) == 0
    assert main(["bench", "--engine", "streaming"]) == 0  # the module's own defaults: 1 M events, 10,000 keys
    assert main(["bench", "--engine", "streaming", "--stream-only"]) == 0
    assert seen == [("streaming", 3000, 50, 1000, 2.5, ["ccl: KEEP 10 ROWS PER(k)"], True, False),
                    ("streaming", None, None, None, None, None, False, False),
                    ("streaming", None, None, None, None, None, False, True)]


def test_no_bare_applies_to_the_streaming_bench_only(capsys):
    assert main(["bench", "--engine", "spark", "--no-bare"]) == 2
    assert "--no-bare applies to --engine streaming only" in capsys.readouterr().err


def test_bench_rejects_a_bad_event_count(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--events", "0"])
    assert exit_.value.code == 2 and "must be above 0" in capsys.readouterr().err


# --------------------------------------------------------------------------- the console script


def test_the_installed_console_script(tmp_path):
    script = shutil.which("difftest", path=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    assert script, "the difftest console script is not installed (pip install -e .)"
    ok = write(tmp_path, "ok.json")
    bad = write(tmp_path, "bad.json", expected=wrong_remove())
    done = subprocess.run([script, "replay", str(ok), str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"PASS {ok}" and lines[1] == f"FAIL {bad}" and lines[-1] == "1 passed, 1 failed"


# --------------------------------------------------------------------------- run: usage errors before any work

RUN_USAGE_ERRORS = [
    (["--budget", "-5"], "must be a number of seconds above 0"),
    (["--budget", "0"], "must be a number of seconds above 0"),
    (["--budget", "soon"], "is not a number"),
    (["--examples", "0"], "must be above 0"),
    (["--oracle-processes", "-1"], "must be 0 or above"),
]


@pytest.mark.parametrize(("args", "words"), RUN_USAGE_ERRORS, ids=[" ".join(a) for a, _ in RUN_USAGE_ERRORS])
def test_run_rejects_bad_options(capsys, args, words):
    with pytest.raises(SystemExit) as caught:
        main(["run", *args])
    assert caught.value.code == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("window", ["#length(1)#length(2)", "#length(2)#unique(k) retain-union"])
def test_run_names_a_window_the_oracle_does_not_run_before_starting_spark(capsys, window, monkeypatch):
    """A window the oracle does not run yet: one sentence, exit 2,
    no Spark started (it would fail inside Hypothesis with a FlakyFailure)."""
    from difftest import __main__ as cli
    from oracle.model import Intersection, RetainUnion
    from oracle.windows import WINDOW_CLASSES

    for cls in (Intersection, RetainUnion):
        monkeypatch.delitem(WINDOW_CLASSES, cls)
    monkeypatch.setattr(cli, "load_spark", lambda *a: pytest.fail("Spark was started"))
    assert main(["run", "--window", window]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"difftest run: unsupported window {window!r}") and "Traceback" not in err


def test_a_kind_stopped_early_says_so():
    from difftest.runner import KindStats, cases_cell, kind_line

    stopped = KindStats("time", asked=2000, cases=700, updates=900, seconds=3.25, windows={"#time(1)", "#time(2)"})
    whole = KindStats("length", asked=2000, cases=2000)
    assert cases_cell(stopped) == "700/2000" and cases_cell(whole) == "2000"
    assert kind_line(stopped) == ("time: 2 windows, 700 cases (stopped at 700 of 2000 asked), 900 updates compared, "
                                  "0 mismatches, 3.2 s")
    one = KindStats("length", asked=1, cases=1, updates=1, mismatches=1, seconds=1.0, windows={"#length(1)"})
    assert kind_line(one) == "length: 1 window, 1 case, 1 update compared, 1 mismatch, 1.0 s"  # not "1 windows"


def test_a_kind_that_compared_nothing_is_said_loudly():
    """0 updates compared is not a pass: the table ends with a NOT CHECKED line and the report lists the kind."""
    from difftest.runner import KindStats, Runner, table_lines

    silent = KindStats("esper: firstlength", asked=20, cases=20, windows={"#firstlength(1)"})
    busy = KindStats("esper: length", asked=20, cases=20, updates=31, windows={"#length(1)"})
    failed = KindStats("esper: time", asked=20, cases=20, error="RuntimeError: no")
    totals = Runner(impl=None, stats=[silent, busy, failed]).totals()
    assert totals["compared_nothing"] == ["esper: firstlength"] and totals["updates_compared"] == 31
    lines = [line for line, _ in table_lines([silent, busy, failed], totals)]
    assert "NOT CHECKED: 1 kind compared no update at all (not a pass): esper: firstlength" in lines
    failed_row = next(line for line in lines if line.startswith("esper: time "))
    assert failed_row.split()[5] == "-" and failed_row.split()[7] == "ERROR"


def test_each_kind_draws_its_own_traces_and_several_windows():
    """Kinds of one run never share a seed, and a kind's batches are sized for 10 windows at least."""
    from difftest.runner import Runner, Target

    runner = Runner(impl=None, seed=7, batch_size=1000)
    seeds = {runner.kind_seed(Target(kind, None, dialect)) for kind in ("length", "time") for dialect in ("esper", "ccl")}
    assert len(seeds) == 4
    assert runner.window_size(2000) == 200 and runner.window_size(200) == 20
    assert runner.window_size(40) == 20 and runner.window_size(7) == 7  # MIN_BATCH, or all the traces asked
    assert Runner(impl=None, batch_size=100).window_size(2000) == 100


def test_the_run_counts_the_items_a_window_rejected():
    """A late eKuiper row is dropped and posted as an error update: the run's
    table and the kind's line say how many there were, never hiding them."""
    from difftest.runner import BatchResult, KindStats, Runner, TraceResult, expected_updates, kind_line, table_lines
    from oracle.cases import load_case
    from oracle.dialects import case_spec

    case = load_case(Path(__file__).resolve().parent.parent / "corpus" / "kuiper" / "tumbling-event-empty-panes-and-late-row.json")
    spec = case_spec(case)
    expected = expected_updates(spec, [("t0", case.trace)])["t0"]
    late = sum(u.error is not None and "late row" in u.error for u in expected)
    assert late >= 1
    stats = KindStats("tumbling", asked=1)
    stats.add(BatchResult(spec, case.window, "kuiper", (TraceResult("t0", case.trace, expected, expected, None, None),)))
    assert stats.rejected == late and stats.to_json()["rejected"] == late
    assert f"({late} rejected item{'s' * (late != 1)}: error updates)" in kind_line(stats)
    runner = Runner(impl=None, dialect="kuiper", stats=[stats])
    header, row = [line for line, _ in table_lines([stats], runner.totals())][:2]
    assert header.split()[6] == "rejected" and row.split()[5] == str(late)  # "window kind": two words


def test_spark_bench_rates_each_query_twice_against_its_window_baseline():
    from spark_impl import bench

    query = next(iter(bench.KUIPER_QUERIES))
    seconds = {query: 9.0, query + bench.UNCHECKED: 6.0, bench.KUIPER_QUERIES[query]: 4.0, bench.CHECK: 2.0,
               bench.BARE: 3.0}
    rows = bench.summary([bench.Timing(name, 1000, s, 1, 0) for name, s in seconds.items()], [query])
    ratios = {r["window"]: r.get("vs_baseline") for r in rows}
    assert ratios == {query: 2.25, query + bench.UNCHECKED: 1.5, bench.KUIPER_QUERIES[query]: None,
                      bench.CHECK: None, bench.BARE: None}
    verdicts = [line for line in bench.table(rows) if " x spark window" in line]
    assert len(verdicts) == 2 and verdicts[0].endswith("(the table check included, which window() does not do)")
    assert verdicts[1].startswith(query + bench.UNCHECKED) and verdicts[1].endswith(f"(target <= {bench.TARGET_KUIPER}: meets)")


def test_spark_bench_gives_each_window_a_verdict_at_the_largest_size():
    """Figures beside their targets: a verdict per window at the largest size,
    every block labelled, no empty column."""
    from spark_impl import bench

    seconds = {"#length(10)": (2.0, 24.0), "#time(10 sec)": (2.0, 11.0), bench.BARE: (1.0, 10.0),
               bench.CHECK: (0.5, 5.0)}
    timings = [bench.Timing(name, n, s[i], 1, 0) for name, s in seconds.items() for i, n in enumerate((10, 100))]
    lines = bench.table(bench.summary(timings, ["#length(10)", "#time(10 sec)"]))
    assert lines[0] == "figures (best run per size):" and lines[1].split()[-1] == "verdict"
    rows = {(name, n): line for line in lines[2:] for name in seconds for n in (10, 100)
            if line.startswith(name) and line[len(name):].split()[0] == str(n)}
    assert len(rows) == 8
    assert rows[("#length(10)", 100)].endswith("MISSES: x bare 2.40 > 2.0, scaling 12.00 > 10.0")
    assert rows[("#time(10 sec)", 100)].endswith("meets")
    assert rows[("#time(10 sec)", 10)].split()[-5] == "-"  # t/t(min) at the smallest size: "-", not blank
    assert not rows[(bench.BARE, 100)].endswith(("meets", "10.0"))  # the baseline has no verdict


def test_spark_bench_runs_its_workloads_in_turn_so_none_is_measured_warmer(monkeypatch, tmp_path):
    from spark_impl import bench

    calls = []
    monkeypatch.setattr(bench, "write_events", lambda spark, n, keys, folder: f"events-{n}")
    monkeypatch.setattr(bench, "workloads", lambda windows: {"a": "A", "b": "B", bench.BARE: "Z"})
    monkeypatch.setattr(bench, "run_once", lambda spark, build, path: calls.append((build, path)) or (len(calls), 1, 0))
    timings = bench.measure(None, (10, 100), 5, ("w",), tmp_path, repeat=2)
    warm, rounds = calls[:3], calls[3:]
    assert warm == [("A", "events-10"), ("B", "events-10"), ("Z", "events-10")]
    # each size opens with an untimed bare run (the heap grows on the first job of a larger size), then its rounds
    assert rounds == [call for n in (10, 100) for call in
                      [("Z", f"events-{n}")] + [(w, f"events-{n}") for _ in range(2) for w in "ABZ"]]
    assert [(t.workload, t.events, t.seconds) for t in timings] == [
        ("a", 10, 5), ("b", 10, 6), (bench.BARE, 10, 7), ("a", 100, 12), ("b", 100, 13), (bench.BARE, 100, 14)]


@pytest.mark.parametrize(("args", "words"), [
    (["run", "--window", "#length(2)", "--kind", "length"], "give one of them"),
    (["bench", "--keys", "5"], "--keys applies to --engine spark only"),
    (["bench", "--window", "#length(3)"], "--window applies to --engine spark only"),
    (["bench", "--batch-rows", "10"], "--batch-rows applies to --engine streaming only"),
    (["bench", "--engine", "spark", "--budget", "10"], "--budget applies to --engine streaming only"),
    (["bench", "--engine", "streaming", "--trace-frame"], "--trace-frame applies to --engine spark only"),
    (["bench", "--engine", "spark", "--stream-only"], "--stream-only applies to --engine streaming only"),
    (["bench", "--engine", "streaming", "--unchecked"], "--unchecked applies to --engine spark only"),
    (["bench", "--unchecked"], "--unchecked applies to --engine spark only"),
])
def test_options_that_do_not_apply_are_refused(capsys, monkeypatch, args, words):
    from difftest import __main__ as cli

    monkeypatch.setattr(cli, "load_spark", lambda *a: pytest.fail("Spark was started"))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_impl_is_found_in_the_current_folder(tmp_path, monkeypatch):
    """`--impl mymod:f` from the folder holding mymod.py, as pytest and `python -m` find it."""
    from difftest.runner import load_impl

    (tmp_path / "my_window_impl_here.py").write_text("def apply(df, window, dialect):\n    return df\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load_impl("my_window_impl_here:apply").__name__ == "apply"


def test_expect_prints_and_writes_a_cases_expected_updates(tmp_path, capsys):
    case = {k: v for k, v in LENGTH_2.items() if k != "expected"}
    path = write(tmp_path, "new.json", case=case)
    assert main(["expect", str(path)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == LENGTH_2["expected"]
    assert main(["expect", str(path), "--write"]) == 0
    assert json.loads(path.read_text())["expected"] == LENGTH_2["expected"]
    capsys.readouterr()
    assert replay(capsys, path)[0] == 0


@pytest.mark.parametrize("suffix, text", [
    (".csv", "id,t,price\na,0,1.5\nb,500,2\nc,1200,3\n"),
    (".jsonl", '{"id": "a", "t": 0, "price": 1.5}\n{"id": "b", "t": 500, "price": 2}\n\n{"id": "c", "t": 1200}\n'),
])
def test_expect_runs_a_window_over_an_events_file(tmp_path, capsys, suffix, text):
    path = tmp_path / f"events{suffix}"
    path.write_text(text)
    assert main(["expect", "--window", "#time(1 sec)", "--time", "t", "--until", "3000", str(path)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(u["after"], u["time"], u["insert"], u["remove"]) for u in printed] == [
        (0, 0, ["a"], []), (1, 500, ["b"], []), (2, 1000, [], ["a"]), (2, 1200, ["c"], []),
        (3, 1500, [], ["b"]), (3, 2200, [], ["c"])]


@pytest.mark.parametrize("args, text, words", [
    (["--window", "#length(2)", "--time", "t"], '{"id": "a", "t": 0}\n{"id": "b", "t": "x"}\n',
     "events.jsonl line 2: the time field 't' must be a whole number of ms, got 'x'"),
    (["--window", "#length(2)"], '{"id": "a"}\n[1, 2]\n', "line 2: an event is a JSON object, got list"),
    (["--window", "#length(2)"], '{"id": "a"}\n{"id": \n', "line 2: not valid JSON"),
    (["--window", "#length(2)"], '\n{"price": 1}\n', "events.jsonl line 2: the event has no `id`"),
    (["--window", "#length(2)", "--write"], '{"id": "a"}\n', "--write fills a case file's `expected`"),
    (["--time", "t"], '{"id": "a"}\n', "--time applies to an events file with --window"),
    # issue 43, item 11: the option named, what is missing said in words
    (["--window", "#time(1 sec)", "--time", "t", "--until", "1000"], '{"id": "a", "t": 0}\n{"id": "b", "t": 5000}\n',
     "--until is 1000 ms, before the last event's time, 5000 ms: it walks the clock on after the last event"),
    (["--window", "#length(2)", "--time", "t"], '{"id": "a", "t": 0}\n{"id": "b"}\n',
     "events.jsonl line 2: the event has no time (no value in its field 't')"),
    # an events file's refusals name the file's line (a CSV's header is line 1), not the item's index
    (["--window", "#ext_timed(t, 1 sec)", "--time", "n"], "id,n,t\na,0,0\nb,5,x\n",
     "events.csv line 2: event 'a': timestamp property 't' is '0', not an integer"),  # a text column: 'x' in it
    (["--window", "select nosuch from E#length(2)"], '{"id": "a"}\n',
     "events.jsonl: the statement reads property 'nosuch', which no event of the trace has"),
    ([], '{"id": "a", "t": 0}\n{"id": "b", "t": 5}\n',
     "events.jsonl: an events file needs --window CLAUSE, the window to run over it"),
    # item 8: a CSV row without a cell for every column
    (["--window", "#length(2)", "--time", "t"], "id,t,sym\na,0,X\nb,500\nc,900,Y\n",
     "events.csv line 3: 2 cells, the header has 3 (no cell for sym); leave a cell empty for a missing value"),
    (["--window", "#length(2)"], "id,sym\na,X,Y\n", "events.csv line 2: 3 cells, the header has 2 (1 more than"),
    (["--window", "#length(2)"], "", "events.csv: no header line naming the columns"),
])
def test_expect_names_what_is_wrong(tmp_path, capsys, args, text, words):
    path = tmp_path / ("events.csv" if "csv" in words else "events.jsonl")
    path.write_text(text)
    assert main(["expect", *args, str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


@pytest.mark.parametrize("name, text", [
    ("events.json", '{"id": "a", "t": 0}\n{"id": "b", "t": 5}\n'),  # JSON lines: "Extra data" before
    ("one-event.json", '{"id": "a", "t": 0}\n'),  # one event: "the case has no 'dialect'" before
])
def test_expect_without_a_window_says_an_events_file_needs_one(tmp_path, capsys, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert main(["expect", str(path)]) == 2
    assert "an events file needs --window CLAUSE" in capsys.readouterr().err


def test_expect_types_a_csv_column_by_all_its_cells(tmp_path, capsys):
    """A column of whole numbers is integers, of numbers doubles, else text (`007`
    stays text beside `abc`); `id` is text; an empty cell is a missing property."""
    path = tmp_path / "events.csv"
    path.write_text("id,t,code,n,price\n007,0,007,1,1\n8,500,abc,2,2.5\n9,900,,3,\n")
    assert main(["expect", "--window", "select code, n, price from E#length(5)", "--time", "t", str(path)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    rows = [row for u in printed for row in u["values"]["insert"]]
    assert rows == [{"code": "007", "n": 1, "price": 1.0}, {"code": "abc", "n": 2, "price": 2.5},
                    {"code": None, "n": 3, "price": None}]
    assert [type(row["n"]) for row in rows] == [int] * 3 and type(rows[0]["price"]) is float
    from difftest.__main__ import read_events

    assert [e["id"] for e in read_events(path)] == ["007", "8", "9"]
    with pytest.raises(SystemExit):
        main(["expect", "--help"])
    assert "a column's type is decided from all its cells" in " ".join(capsys.readouterr().out.split())


@pytest.fixture
def fake_streaming(monkeypatch, java_home):
    """A `spark_impl.streaming` whose run_cases runs the oracle and records the
    micro-batch count and seed it was asked for."""
    module = types.ModuleType("spark_impl.streaming")
    module.calls = []

    def run_cases(pairs, batches=3, seed=0, progress=None):
        module.calls.append((len(pairs), batches, seed))
        if progress:
            progress(1, 1)
        return [oracle.run(spec, trace) if "B" not in trace.events()[0].id else oracle.run(spec, trace)[:1]
                for spec, trace in pairs]

    module.run_cases = run_cases
    monkeypatch.setitem(sys.modules, "spark_impl.streaming", module)
    return module


def test_replay_on_the_streaming_engine_passes_the_micro_batches_and_seed(tmp_path, capsys, fake_streaming):
    a, b, c = three_cases(tmp_path)
    code, lines, err = replay(capsys, "--engine", "streaming", "--micro-batches", "5", "--seed", "9", tmp_path)
    assert fake_streaming.calls == [(3, 5, 9)]
    assert lines[:3] == [f"PASS {a}", f"FAIL {b}", "  update 1 is missing (of 3 updates expected, 1 posted)"]
    assert f"PASS {c}" in lines and lines[-1] == "2 passed, 1 failed"
    assert code == 1 and "streaming: query 1 of 1 done" in err


def test_run_on_the_streaming_engine_takes_no_other_implementation(capsys):
    assert main(["run", "--engine", "streaming", "--impl", "mypkg:apply_window"]) == 2
    assert "give one of them" in capsys.readouterr().err


def test_a_session_that_cannot_start_is_told_by_its_cause(monkeypatch):
    """A cluster session that fails to start names the Java exception's own
    message, not the Py4J wrapper's first line."""
    import pyspark.sql

    from spark_impl import session
    from spark_impl.errors import SparkUnavailable

    class Builder:
        def config(self, *_):
            return self

        def getOrCreate(self):  # noqa: N802 (pyspark's name)
            raise RuntimeError("An error occurred while calling None.None.\n: java.lang.IllegalStateException: "
                               "bad memory setting\n\tat org.apache.spark.SparkConf.validate(SparkConf.scala:1)")

    monkeypatch.setattr(pyspark.sql.SparkSession, "builder", Builder())
    monkeypatch.setattr(session, "check_java", lambda: None)
    with pytest.raises(SparkUnavailable, match=r"on yarn: IllegalStateException: bad memory setting$"):
        session._classic("yarn")
