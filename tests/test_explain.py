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


HAVING = {"name": "having", "dialect": "esper", "window": "#length(2)",
          "query": "select irstream symbol, sum(price) as total from E#length(2) group by symbol "
                   "having sum(price) > 10",
          "input": [{"event": {"id": f"E{i}", "symbol": "X", "price": p}} for i, p in ((1, 6.0), (2, 7.0), (3, 8.0))]}


def test_explain_prints_a_statements_rows_once_braced_with_the_post_and_the_having(tmp_path, capsys):
    """Issue 43, item 4: `{symbol: 'X', ...}`, not `{{'symbol': 'X', ...}}`; the
    reason names the events that entered and left and the HAVING that held."""
    from difftest.__main__ import main

    path = tmp_path / "having.json"
    path.write_text(__import__("json").dumps(HAVING))
    assert main(["explain", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "#0 after item 1, at 0",
        "  + {symbol: 'X', total: 13.0}   why: the new row is the group's state after the post "
        "(E2 entered; HAVING sum(price) > 10 held)",
        "#1 after item 2, at 0",
        "  + {symbol: 'X', total: 15.0}   why: the new row is the group's state after the post "
        "(E3 entered and E1 left; HAVING sum(price) > 10 held)",
        "  - {symbol: 'X', total: 13.0}   why: the old row is the group's state before the post "
        "(E3 entered and E1 left; HAVING sum(price) > 10 held)",
    ]


@pytest.mark.parametrize("text, dialect, because", [
    # no HAVING: the post alone; a derived window's rows (no id) counted
    ("select count(*) as n from E#length(1)", "esper", "one new row after the post is applied (E2 entered and E1 left)"),
    ("select sum(average) as s from E#length(2)#uni(price)", "esper",
     "one new row after the post is applied (1 row entered and 1 row left)"),
    # CCL's HAVING as CCL writes it
    ("SELECT symbol, sum(price) AS total FROM s KEEP 2 ROWS GROUP BY symbol HAVING sum(price) > 1", "ccl",
     "posted insert if the window did not hold the group's row (E2 entered; HAVING sum(price) > 1 held)"),
])
def test_a_statements_reason_names_the_post(text, dialect, because):
    trace = Trace([Arrive(Event("E1", {"symbol": "X", "price": 1.0})), Arrive(Event("E2", {"symbol": "X", "price": 2.0}))])
    last = explain(parse(text, dialect), trace)[-1]
    assert last.rows[0].because == because
