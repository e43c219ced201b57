"""The differential run: the oracle against spark_impl, window family by family,
and a deliberately broken implementation caught through `--impl`."""

from __future__ import annotations

import json
import re

import pytest

from difftest.__main__ import main
from difftest.runner import ImplUnderTest, Runner, check_batch, load_impl, targets
from difftest.strategies import KIND_EXAMPLES, implemented_kinds, writer
from oracle import parse
from oracle.cases import load_case
from oracle.model import RULES, Arrive, Event, Trace, nested_specs
from spark_impl.windows import FAMILIES as SPARK_FAMILIES
from spark_impl.windows import STATEMENT_FAMILIES
from test_completeness import PENDING  # tests/ is on sys.path (rootdir conftest, prepend import mode)

# family module -> the kinds it runs (spark_impl.windows.FAMILIES, by module; a
# statement's family by its rules' posting, its kinds named by its rules)
FAMILIES: dict[str, list[str]] = {}
for _cls, _module in SPARK_FAMILIES.items():
    FAMILIES.setdefault(_module, []).append(_cls.KIND)
for _rules in RULES:
    FAMILIES.setdefault(STATEMENT_FAMILIES[_rules.posted], []).append(_rules.kind.split("/")[0])


def _family_kind(kind: str) -> str:
    """The kind a drawn kind's family runs: `groupwin/length` -> `length`, and a
    keyed window, whatever its policy (`keyed/groupwin/length`), is `keyed`."""
    kind = kind.removeprefix("groupwin/")
    return kind.split("/")[0]


def _built_kinds() -> list[str]:
    """The kinds the oracle runs in some dialect, but those whose Spark family
    the completeness test lists as pending (its `PENDING` table)."""
    pending = {cls for cls, aspects in PENDING.items() if "spark" in aspects}
    return [kind for kind in implemented_kinds(None)
            if not {type(inner) for inner in nested_specs(KIND_EXAMPLES[kind])} & pending]


def test_families_cover_every_implemented_kind():
    plain = {kind for kinds in FAMILIES.values() for kind in kinds}
    assert {_family_kind(k) for k in _built_kinds()} == plain


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_spark_agrees_with_the_oracle(spark, family, tmp_path):
    """Every kind a family runs, drawn in the dialect that writes it (CCL's
    retention and keyed kinds in ccl, the others in esper)."""
    by_dialect: dict[str, list[str]] = {}
    for kind in _built_kinds():
        if _family_kind(kind) in FAMILIES[family]:
            by_dialect.setdefault(writer(kind), []).append(kind)
    assert by_dialect
    for dialect, kinds in sorted(by_dialect.items()):
        runner = Runner(ImplUnderTest(load_impl("spark_impl:apply_window"), spark), batch_size=40,
                        found_dir=tmp_path, seed=20261122, dialect=dialect)
        stats = runner.run(targets(dialect, None, kinds), examples=40, budget=None)
        totals = runner.totals()
        assert totals["mismatches"] == 0, "\n".join(
            f"{p}:\n{json.dumps(json.loads(open(p).read())['about'])}" for p in totals["found"])
        assert all(s.cases > 0 for s in stats), [(s.kind, s.cases, s.unsupported) for s in stats]
        assert totals["updates_compared"] > 0


@pytest.mark.parametrize("window", ["#unique(symbol)#time(1 sec)", "#groupwin(feed)#lastevent#time_order(ts, 1 sec)",
                                    "#groupwin(symbol)#length_batch(2)#time(1 sec)#time_accum(700 msec)",
                                    "#sort(2, price)#firsttime(2 sec)#time(1500 msec)"])
def test_spark_agrees_with_the_oracle_on_intersections(spark, window, tmp_path):
    """The set plans (members deciding alone) and the kernel (any other member)."""
    runner = Runner(ImplUnderTest(load_impl("spark_impl:apply_window"), spark), batch_size=60,
                    found_dir=tmp_path, seed=20261123)
    stats = runner.run(targets("esper", window), examples=60, budget=None)
    assert runner.totals()["mismatches"] == 0 and stats[0].cases == 60 and stats[0].unsupported == 0


def test_check_batch_reports_an_implementation_error(spark):
    def failing(trace_df, window, dialect):
        raise RuntimeError("boom\nsecond line")

    trace = Trace([Arrive(Event("E1"))])
    result = check_batch(ImplUnderTest(failing, spark, "failing"), parse("#length(1)"), "#length(1)", "esper", [trace])
    assert [r.error for r in result.mismatches] == ["RuntimeError: boom"]


def test_a_broken_implementation_is_caught_and_shrunk(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    report = tmp_path / "report.json"
    found = tmp_path / "found"
    code = main(["run", "--impl", "broken_impl:apply_window", "--window", "#length_batch(2)",
                 "--examples", "40", "--seed", "7", "--found-dir", str(found), "--report", str(report)])
    out = capsys.readouterr().out
    assert code == 1, out
    saved = sorted(found.glob("*.json"))
    assert len(saved) == 1, out
    case = load_case(saved[0])
    assert case.window == "#length_batch(2)"
    assert len(case.trace.items) <= 6, case.trace
    assert "disagrees with the oracle" in case.about
    # the saved case is a real disagreement: the oracle's expectation has an update
    # removing two events, which the broken implementation cuts to one
    assert any(len(u.remove) >= 2 for u in case.expected)
    data = json.loads(report.read_text())
    assert data["mismatches"] == 1 and data["found"] == [str(saved[0])]
    assert str(saved[0]) in out
    # its picture, expected above actual, beside it and named in the table (issue 30)
    picture = saved[0].with_suffix(".svg")
    assert picture.is_file() and f"its picture (expected above actual): {picture}" in out
    assert data["kinds"][0]["pictures"] == [str(picture)]


def test_a_mismatch_with_batches_in_flight_ends_the_search_after_them(spark, tmp_path, monkeypatch):
    """Small batches, two jobs in flight: the first disagreeing batch stops the
    drawing; the batches already in flight are still judged and counted."""
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    calls = []

    def broken_from_the_third_job(trace_df, window, dialect):
        calls.append(window)
        function = load_impl("broken_impl:apply_window" if len(calls) >= 3 else "spark_impl:apply_window")
        return function(trace_df, window, dialect)

    runner = Runner(ImplUnderTest(broken_from_the_third_job, spark, "broken"), batch_size=8, found_dir=tmp_path,
                    seed=3, in_flight=3, windows_per_job=1)
    [stats] = runner.run(targets("esper", "#length_batch(2)"), examples=400, budget=None)
    assert stats.mismatches == 1 and len(stats.found) == 1
    jobs_before_shrinking = stats.batches
    assert 3 <= jobs_before_shrinking <= 3 + 2  # the failing job and at most the two in flight behind it
    assert stats.cases < 400
    assert len(load_case(stats.found[0]).trace.items) <= 6


def test_windows_of_one_job_are_judged_each_as_its_own(spark):
    """Four windows in one job (`run_many`): one the function refuses, one whose
    rows fail the job when collected; each fails alone and names its error,
    the other two match the oracle."""
    from pyspark.sql import functions as F

    from difftest.runner import label
    from difftest.strategies import seeded_traces

    def picky(trace_df, window, dialect):
        if window == "#length(2)":
            raise ValueError("no #length(2) here")
        out = load_impl("spark_impl:apply_window")(trace_df, window, dialect)
        if window == "#time(1 sec)":  # fails only when its rows are computed, in the one job of the four
            return out.withColumn("id", F.when(F.col("time") >= 0, F.raise_error(F.lit("late failure"))).otherwise(F.col("id")))
        return out

    members = [(parse(w), w, "esper", label(seeded_traces(n, 12))) for n, w in
               enumerate(["#length(2)", "#length_batch(2)", "#time(1 sec)", "#firstlength(2)"])]
    outcomes = ImplUnderTest(picky, spark, "picky").run_many(members)
    assert outcomes[0] == (None, "ValueError: no #length(2) here")
    assert outcomes[2][0] is None and "late failure" in outcomes[2][1]
    for (spec, _, _, batch), (actual, error) in zip([members[1], members[3]], [outcomes[1], outcomes[3]]):
        assert error is None and actual == {tid: __import__("oracle").run(spec, trace) for tid, trace in batch}
        assert any(actual.values())


# what users' implementations did, and what the run must say (issue 10): an error of the
# implementation is named once and nothing is saved; a mismatch is saved with its reason
USER_IMPLS = [
    ("returns_none", "error", "the implementation returned None, not a Spark DataFrame"),
    ("returns_its_input", "error", "the implementation's output has no column 'after'"),
    ("returns_pandas", "error", "the implementation returned a pandas.core.frame.DataFrame, not a Spark DataFrame"),
    ("raises", "error", "RuntimeError: my window is not ready"),
    # a Python worker's exception by its own line, not "PythonException: An exception was thrown from the Python worker"
    ("fails_in_a_worker", "error", "ValueError: no price for any event (window: #length(2))"),
    ("two_arguments", "error", "TypeError: two_arguments() takes 2 positional arguments but 3 were given"),
    ("time_as_string", "error", "the implementation's output column 'time' is string, not bigint"),
    ("off_by_one_in_time", "mismatch", "differs in time"),
    ("drops_removes", "mismatch", "differs in remove"),
    ("posts_an_unknown_id", "mismatch", "BOGUS]"),
    ("posts_a_row_twice", "mismatch", "differs in insert"),
]


@pytest.mark.parametrize(("function", "outcome", "words"), USER_IMPLS, ids=[row[0] for row in USER_IMPLS])
def test_a_users_implementation_is_judged_with_its_reason(spark, tmp_path, monkeypatch, capsys, function, outcome,
                                                          words):
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    report, found = tmp_path / "report.json", tmp_path / "found"
    code = main(["run", "--impl", f"broken_impl:{function}", "--window", "#length(2)", "--examples", "30",
                 "--batch-size", "15", "--seed", "3", "--found-dir", str(found), "--report", str(report)])
    out = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert code == 1, out
    assert words in out, out
    saved = sorted(found.glob("*.json"))
    if outcome == "error":
        assert saved == [] and data["mismatches"] == 0, out
        assert words in data["errors"]["length"]
        assert out.count(words) == 1, out  # reported once, not per batch or per trace
    else:
        assert len(saved) == 1 and data["mismatches"] == 1 and not data["errors"]
        assert words in data["kinds"][0]["reasons"][0]
        assert re.search(r"of \d+ updates? expected", load_case(saved[0]).about)


def test_replay_impl_replays_a_found_case_against_the_users_function(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    found = tmp_path / "found"
    assert main(["run", "--impl", "broken_impl:drops_removes", "--window", "#length(2)", "--examples", "30",
                 "--batch-size", "15", "--seed", "3", "--found-dir", str(found)]) == 1
    [case] = found.glob("*.json")
    capsys.readouterr()
    assert main(["replay", "--impl", "broken_impl:drops_removes", str(case)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == f"FAIL {case}"
    assert main(["replay", "--impl", "spark_impl:apply_window", str(case)]) == 0
    assert main(["replay", "--engine", "both", "--impl", "broken_impl:raises", str(case)]) == 2
    assert "RuntimeError: my window is not ready" in capsys.readouterr().out


def test_a_finding_never_overwrites_another(tmp_path):
    from difftest.runner import BatchResult, TraceResult, save_found
    from oracle.model import Length

    trace = Trace([Arrive(Event("E1"))])
    batch = BatchResult(Length(1), "#length(1)", "esper", ())
    first = save_found(TraceResult("t0", trace, (), (), None, None), batch, tmp_path, "impl-a")
    again = save_found(TraceResult("t0", trace, (), (), None, None), batch, tmp_path, "impl-a")
    other = save_found(TraceResult("t0", trace, (), (), None, None), batch, tmp_path, "impl-b")
    assert first == again and other != first and other.name.endswith("-2.json")
    assert first.name.startswith("esper-length-")  # named in the dialect's words
    assert "impl-a" in first.read_text() and "impl-b" in other.read_text()
