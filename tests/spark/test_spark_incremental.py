"""Windows resumed from their state (`spark_impl.incremental`): a run in two
calls, the first call's state handed to the second, posts the rows of one
call: every corpus case cut after a drawn item, a set of cases cut after
every item, an event table through the public function, the state through
Parquet, and the errors of a wrong resumption."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oracle.cases import corpus_files, load_case
from oracle.dialects import case_spec
from test_spark_corpus import case_failures  # tests/spark is on sys.path (prepend import mode)

ROOT = Path(__file__).resolve().parents[2]
#: cases cut after every one of their items (one per family that keeps less than every item)
EVERY_ITEM = ("esper/observed/groupwin_length-1.json", "esper/observed/time-jump-1.json",
              "esper/observed/query2_grp_minmax_time-1001.json", "esper/observed/query2_grp_distinct_length-1001.json",
              "esper/observed/groupwin_time-jump-1.json", "esper/observed/groupwin_time_batch-jump-1.json",
              "esper/observed/expr_batch_no_trigger-jump-1.json", "ccl/slack-per-group.json",
              "ccl/keyed-rows-per-seed-example.json", "kuiper/session-processing-timer-survives-a-cut.json",
              "apama/within-every-jump-is-one-lot.json", "esper/observed/nulls_groupwin_rank-1001.json",
              "esper/groupwin-time_order-jump-due-then-slot.json")


def _cases():
    from spark_impl import unsupported

    cases = [(c, case_spec(c)) for c in (load_case(p) for p in corpus_files(ROOT / "corpus"))]
    return [(c, spec) for c, spec in cases if unsupported(spec) is None]


#: corpus cases per window kind the drawn-item test cuts (all with INCREMENTAL_ALL_CASES=1): a case's two
#: calls cost about 4 s of the driver planning them, so CI's budget holds one per kind
PER_KIND = 1


def _kind(spec) -> str:
    """The window kind of a case's spec (a statement's: its window's, marked), groupwin apart."""
    from oracle.model import Statement
    from spark_impl.pipeline import split_groupwin

    window = spec.window if isinstance(spec, Statement) else spec
    inner, keys = split_groupwin(window)
    return f"{'statement:' if isinstance(spec, Statement) else ''}{'groupwin:' if keys else ''}{type(inner).__name__}"


def _declares_state(spec) -> bool:
    """Whether the window (a statement's window) has a family that declares its state (`HELD`)."""
    from oracle.model import Statement
    from spark_impl.pipeline import family_of

    return family_of(spec.window if isinstance(spec, Statement) else spec).held is not None


def test_corpus_cases_of_windows_with_a_state_resume_after_a_drawn_item(spark):
    """Every corpus case of a window whose family declares its state (the
    others keep every item, and their second call replays the first's):
    `difftest replay --impl spark_impl.incremental:in_two_calls` runs all."""
    from spark_impl import run_cases
    from spark_impl.incremental import in_two_calls

    cases = [(c, spec) for c, spec in _cases() if _declares_state(spec)]
    assert len(cases) >= 500
    if not os.environ.get("INCREMENTAL_ALL_CASES"):
        # CI's budget: the first PER_KIND cases of each window kind; INCREMENTAL_ALL_CASES=1 runs all
        by_kind: dict[str, list] = {}
        for case, spec in cases:
            by_kind.setdefault(_kind(spec), []).append((case, spec))
        cases = [pair for pairs in by_kind.values() for pair in pairs[:PER_KIND]]
    outcomes = run_cases([(spec, c.trace) for c, spec in cases], spark, plans_per_job=12,
                         plan=lambda frame, spec, jumps: in_two_calls(frame, spec, validate=False, jumps=jumps))
    failures = case_failures(cases, outcomes)
    assert not failures, "\n".join(failures)


def test_cases_resume_after_every_item(spark):
    from spark_impl import run_cases
    from spark_impl.incremental import in_two_calls

    chosen = {c.path.relative_to(ROOT / "corpus").as_posix(): (c, spec) for c, spec in _cases()}
    assert set(EVERY_ITEM) <= set(chosen), set(EVERY_ITEM) - set(chosen)
    cases, cuts = [], []
    for name in EVERY_ITEM:
        case, spec = chosen[name]
        for cut in range(-1, len(case.trace.items)):
            cases.append((case, spec))
            cuts.append(cut)
    table = ", ".join(f"'{i}', {cut}" for i, cut in enumerate(cuts))
    outcomes = run_cases([(spec, c.trace) for c, spec in cases], spark, plans_per_job=12,
                         plan=lambda frame, spec, jumps: in_two_calls(
                             frame, spec, validate=False, jumps=jumps, cut=f"element_at(map({table}), trace_id)"))
    failures = case_failures(cases, outcomes)
    assert not failures, "\n".join(failures)


def _table(spark, rows):
    return spark.createDataFrame(rows, "n long, t long, k string, price double")


EVENTS = [(n, 1000 * n + (n % 3) * 100, "ab"[n % 2], float(n % 5)) for n in range(40)]


#: per window: the events its state holds after n = 0..22, and whether it replays every item
STATES = {"#groupwin(k)#length(3)": (6, False), "#time(5 sec)": (6, False), "#length_batch(4)": (7, False),
          "#unique(k)": (2, False), "#firstlength(3)": (3, False),
          "select k, count(*) as n, max(price) as top from E#length(4) group by k": (4, False),
          "select sum(price) as total from E#length(4)": (23, True), "#groupwin(k)#time(5 sec)": (8, False),
          "#time_batch(5 sec)": (9, False), "#length(4)#uni(price)": (23, True)}


@pytest.mark.parametrize("window", list(STATES))
def test_an_event_table_in_two_calls_gives_one_calls_rows(spark, tmp_path, window):
    from spark_impl import apply_window_to_events
    from spark_impl.incremental import apply_window_incrementally

    whole = apply_window_to_events(_table(spark, EVENTS), window, order_col="n", time_col="t")
    first = apply_window_incrementally(_table(spark, EVENTS[:23]), window, order_col="n", time_col="t")
    first.state.write.parquet(str(tmp_path / "state"))
    second = apply_window_incrementally(_table(spark, EVENTS[23:]), window, order_col="n", time_col="t",
                                        state=spark.read.parquet(str(tmp_path / "state")))
    order = ["trace_id", "after", "phase", "time", "ordinal", "side", "pos"]
    got = first.updates.unionByName(second.updates).orderBy(*order).collect()
    assert list(map(repr, got)) == list(map(repr, whole.orderBy(*order).collect()))  # repr: NaN equals NaN
    assert second.updates.where("after < 23").count() == 0
    # what the state holds: a family's declared events, or every item where it declares none
    assert (first.state.where("kind = 'event'").count(), first.replays) == STATES[window]


def test_a_state_is_refused_by_another_window_and_old_items_are_refused(spark):
    from spark_impl.errors import InvalidFrame
    from spark_impl.incremental import apply_window_incrementally

    first = apply_window_incrementally(_table(spark, EVENTS[:10]), "#length(3)", order_col="n", time_col="t")
    other = apply_window_incrementally(_table(spark, EVENTS[10:]), "#length(4)", order_col="n", time_col="t",
                                       state=first.state)
    with pytest.raises(Exception, match="written by another window"):
        other.updates.collect()
    again = apply_window_incrementally(_table(spark, EVENTS[8:]), "#length(3)", order_col="n", time_col="t",
                                       state=first.state)
    with pytest.raises(Exception, match="trace 0 seq 8: the state already holds this trace up to seq 9"):
        again.updates.collect()
    with pytest.raises(InvalidFrame, match="state has no column 'state_of'"):
        apply_window_incrementally(_table(spark, EVENTS[10:]), "#length(3)", order_col="n", time_col="t",
                                   state=_table(spark, EVENTS[:3]))
    with pytest.raises(InvalidFrame, match="give both order_col and time_col"):
        apply_window_incrementally(_table(spark, EVENTS), "#length(3)", order_col="n")
