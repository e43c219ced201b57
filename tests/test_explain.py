"""`oracle.explain`: a reason for every row the oracle posts, the reasons no
part of the output (issue 30)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from difftest.compare import compare
from oracle import parse, run
from oracle.cases import corpus_files, load_case
from oracle.dialects import case_spec
from oracle.explain import explain
from oracle.model import Advance, Arrive, Event, Jump, Trace

ROOT = Path(__file__).resolve().parent.parent
OBSERVED = ROOT.parent / "shared" / "esper-observed"
CASES = corpus_files(ROOT / "corpus") + (corpus_files(OBSERVED) if OBSERVED.is_dir() else [])


def _explained_cases():
    for path in CASES:
        case = load_case(path)
        yield path, case, explain(case_spec(case), case.trace)


def test_every_row_of_every_case_has_a_reason_and_the_updates_are_runs():
    """A reason for every row of every corpus case (and every observed Esper
    case); the explained updates are exactly `run`'s."""
    rows = 0
    missing = []
    used: Counter = Counter()
    for path, case, explained in _explained_cases():
        assert compare([e.update for e in explained], run(case_spec(case), case.trace)) is None, path
        for e in explained:
            for row in e.rows:
                rows += 1
                if row.reason is None:
                    missing.append(f"{path.name} update after {e.update.after}: {row.side} {row.label}")
                else:
                    used.update(row.reason.rules())
    assert len(CASES) > 500 and rows > 5000
    assert not missing, "\n".join(missing[:20])
    unused = {f"{_owner(table)}.{rule}" for table in _tables() for rule in table.phrases} - {
        f"{_owner(table)}.{rule}" for table, rule in used}
    assert unused == NOT_IN_THE_CORPUS, "a rule no case shows (add a case) or one newly shown (shrink the list)"


#: rules of a window's table that no corpus case posts by (the pane windows share
#: their error phrases; a count window is never timed, so never late; a spec
#: whose items the driver rejects before its window sees them has none in the corpus)
NOT_IN_THE_CORPUS = {"CountWindow.late", "HoppingWindow.late", "HoppingWindow.error", "SlidingWindow.late",
                     "SlidingWindow.error", "SessionWindow.error", "driver.rejected"}


def _owner(table) -> str:
    return table.owner.__name__ if table.owner is not None else "driver"


def _tables():
    import oracle.driver
    from oracle.windows import STATEMENT_WINDOWS, WINDOW_CLASSES, derived, panes

    classes = {c for c in WINDOW_CLASSES.values() if isinstance(c, type)} | set(derived.WINDOWS.values())
    classes |= set(panes.WINDOWS.values()) | {c for c in STATEMENT_WINDOWS.values() if isinstance(c, type)}
    return {c.REASONS for c in classes if hasattr(c, "REASONS")} | {oracle.driver.REASONS}


def test_reasons_name_the_rule():
    spec = parse("#length(2)")
    trace = Trace([Arrive(Event(f"E{i}")) for i in range(1, 4)])
    (first, _, third) = explain(spec, trace)
    assert [(r.side, r.label, r.because) for r in third.rows] == [
        ("insert", "E3", "the event is appended"),
        ("remove", "E1", "holds n + 1 events the oldest is pushed out"),
    ]


def test_an_intersection_names_the_member_that_removed_the_row():
    spec = parse("#length(3)#unique(symbol)")
    trace = Trace([Arrive(Event("E1", {"symbol": "A"})), Arrive(Event("E2", {"symbol": "A"}))])
    last = explain(spec, trace)[-1]
    assert last.rows[1].because == ("every event a member pushed out is then dropped by all the other members "
                                    "(member 2, #unique(symbol)): the arrival replaces the event held under its key")


def test_a_jump_is_named():
    spec = parse("#time_batch(1 sec)")
    trace = Trace([Arrive(Event("E1")), Jump(3500), Arrive(Event("E2")), Advance(5000)])
    explained = explain(spec, trace)
    assert explained[0].rows[0].because == "a jump over several grid points fires once, at the jump target"
    assert explained[1].rows[0].because == "timer at now: one post, new = the open batch"


@pytest.mark.parametrize("text", ["#length(2)", "#groupwin(k)#time(1 sec)", "#time_batch(1 sec)#unique(k)"])
def test_posts_compare_equal_whatever_their_reasons(text):
    """`why` is not part of a post's value."""
    from oracle.windows.base import Post
    from oracle.windows.length import LengthWindow

    e = Event("E1")
    assert Post((e,), why=LengthWindow.REASONS.arrival) == Post((e,))
