"""The Spark families of CCL's kinds (spark_impl/windows/retention.py, keyed.py)
on small hand-made traces: SLACK, EVERY n ROWS, EVERY t (also per group), and
keyed windows under every operation code, strict (KEEP ALL) and lax (a time
or count policy, PER). Every expectation is worked out by hand from
apama-ccl.md §2 and the CCL rules (oracle/dialects/ccl.py, oracle/windows/keyed.py), not taken from the oracle. All
cases run through `spark_impl.run_cases` in one batch.

ROWS (every event at clock 0; k is the PER column):

    item  0   1   2   3   4   5   6
          E1  E2  E3  E4  E5  E6  E7
    k     a   a   b   a   a   b   a
"""

from __future__ import annotations

import pytest

from oracle import run
from oracle.model import (
    Advance,
    Arrive,
    Event,
    GroupWin,
    Jump,
    JumpingLength,
    JumpingTime,
    KeepAll,
    Keyed,
    Length,
    SlackLength,
    Time,
    Trace,
)
from spark_impl import apply_window, frames, run_cases


def ev(event_id, time=None, op=None, **props):
    return Arrive(Event(event_id, props), time=time, op=op)


def inserts(trace, *removed):
    """One update per event at its arrival, inserting it and removing the listed ids."""
    out, gone = [], iter(removed)
    for index, item in enumerate(trace.items):
        out.append((index, 0, [item.event.id], next(gone), [], None))
    return out


ROWS = Trace([ev(f"E{n}", k=k) for n, k in enumerate("aabaaba", 1)])

# JumpingTime: E1@0 a, E2@400 b, walk to 1000, E3@1500 b, E4@1999 a, jump to 3500, E5 a, walk to 4000
TIMED = Trace([ev("E1", 0, k="a"), ev("E2", 400, k="b"), Advance(1000), ev("E3", 1500, k="b"),
               ev("E4", 1999, k="a"), Jump(3500), ev("E5", k="a"), Advance(4000)])

STRICT = Trace([
    ev("E1", Sym="A"),                   # 0 insert
    ev("E2", Sym="A"),                   # 1 duplicate insert: error
    ev("E3", op="update", Sym="B"),      # 2 update of a missing key: error
    ev("E4", op="update", Sym="A"),      # 3 update
    ev("E5", op="delete", Sym="B"),      # 4 delete of a missing key: error
    ev("E6", op="safedelete", Sym="B"),  # 5 nothing
    ev("E7", op="delete", Sym="A"),      # 6 posts the stored row, E4
    ev("E8", op="upsert"),               # 7 the null key: insert
    ev("E9", op="upsert"),               # 8 update
    ev("E10", Sym="A"),                  # 9 insert again after the delete
    ev("E11", op="safedelete"),          # 10 posts E9
    ev("E12", op="insert", Sym="A"),     # 11 duplicate of E10
    ev("E13", op="delete"),              # 12 the null key is missing now: error
])

# A time policy: whether an upsert inserts depends on the insert that began the row it meets.
LAX_TIMED = Trace([
    ev("E1", 0, Sym="A"),                 # 0 insert, due 1000
    ev("E2", 600, Sym="A"),               # 1 a held key: update (the row keeps its age)
    ev("E3", 1100, Sym="A"),              # 2 the walk stops at 1000 (E2 leaves), then insert, due 2100
    ev("E4", 1500, op="update", Sym="A"),  # 3 update
    ev("E5", 1600, Sym="B"),              # 4 insert, due 2600
    Jump(3000),                           # 5 one firing: E4 and E5, oldest first
    ev("E6", op="delete", Sym="A"),       # 6 lax: a missing key's delete is nothing
    ev("E7", op="update", Sym="A"),       # 7 lax: an update of a missing key inserts, due 4000
    ev("E8", 3200, op="delete", Sym="A"),  # 8 posts E7
    Advance(5000),                        # 9 nothing left
])

LAX_ROWS = Trace([
    ev("E1", Sym="A"), ev("E2", Sym="B"),
    ev("E3", op="delete", Sym="A"),       # frees a place
    ev("E4", Sym="C"),                    # B, C: no push
    ev("E5", Sym="D"),                    # pushes B
    ev("E6", op="update", Sym="B"),       # inserts, pushes C
    ev("E7", op="insert", Sym="D"),       # a held key: update
    ev("E8", Sym="E"),                    # pushes D, as its latest version E7
])

PER_ROWS = Trace([
    ev("E1", Tid=1, g="x"), ev("E2", Tid=2, g="y"),
    ev("E3", op="update", Tid=1, g="y"),   # update: the row stays in group x
    ev("E4", Tid=3, g="x"),                # pushes x's oldest: Tid 1, as E3
    ev("E5", Tid=4, g="y"),                # pushes y's oldest: Tid 2
])

EVERY_ROWS = Trace([ev("E1", Sym="A"), ev("E2", Sym="B"), ev("E3", op="upsert", Sym="A"), ev("E4", Sym="C")])


def u(after, time, insert=(), remove=(), update=(), error=None):
    return (after, time, list(insert), list(remove), list(update), error)


CASES = {
    "slack(2, 2)": (SlackLength(2, 2), ROWS, inserts(ROWS, [], [], [], ["E1", "E2"], [], ["E3", "E4"], [])),
    "every 3 rows": (JumpingLength(3), ROWS, inserts(ROWS, [], [], [], ["E1", "E2", "E3"], [], [], ["E4", "E5", "E6"])),
    "every 1 row": (JumpingLength(1), ROWS, inserts(ROWS, [], ["E1"], ["E2"], ["E3"], ["E4"], ["E5"], ["E6"])),
    # a: E1 E2 E4 E5 E7, b: E3 E6
    "per(k) every 2 rows": (GroupWin(("k",), JumpingLength(2)), ROWS,
                            inserts(ROWS, [], [], [], ["E1", "E2"], [], [], ["E4", "E5"])),
    "per(k) slack(1, 2)": (GroupWin(("k",), SlackLength(1, 2)), ROWS,
                           inserts(ROWS, [], [], [], ["E1", "E2"], [], [], ["E4", "E5"])),
    "every 1 sec": (JumpingTime(1000), TIMED, [
        u(0, 0, ["E1"]), u(1, 400, ["E2"]), u(2, 1000, [], ["E1", "E2"]), u(3, 1500, ["E3"]), u(4, 1999, ["E4"]),
        u(5, 3500, [], ["E3", "E4"]), u(6, 3500, ["E5"]), u(7, 4000, [], ["E5"]),
    ]),
    # per group, a jump fires the groups' timers in first-seen order: a (E1) before b (E2)
    "per(k) every 1 sec": (GroupWin(("k",), JumpingTime(1000)), TIMED, [
        u(0, 0, ["E1"]), u(1, 400, ["E2"]), u(2, 1000, [], ["E1", "E2"]), u(3, 1500, ["E3"]), u(4, 1999, ["E4"]),
        u(5, 3500, [], ["E4", "E3"]), u(6, 3500, ["E5"]), u(7, 4000, [], ["E5"]),
    ]),
    "keyed keep all": (Keyed(("Sym",), KeepAll()), STRICT, [
        u(0, 0, ["E1"]),
        u(1, 0, error="duplicate insert: the window holds key (Sym='A') already (row 'E1')"),
        u(2, 0, error="update of a missing key (Sym='B')"),
        u(3, 0, update=["E4"]),
        u(4, 0, error="delete of a missing key (Sym='B')"),
        u(6, 0, remove=["E4"]),
        u(7, 0, ["E8"]), u(8, 0, update=["E9"]), u(9, 0, ["E10"]), u(10, 0, remove=["E9"]),
        u(11, 0, error="duplicate insert: the window holds key (Sym='A') already (row 'E10')"),
        u(12, 0, error="delete of a missing key (Sym=None)"),
    ]),
    "keyed keep 1 sec": (Keyed(("Sym",), Time(1000)), LAX_TIMED, [
        u(0, 0, ["E1"]), u(1, 600, update=["E2"]), u(2, 1000, remove=["E2"]), u(2, 1100, ["E3"]),
        u(3, 1500, update=["E4"]), u(4, 1600, ["E5"]), u(5, 3000, remove=["E4", "E5"]), u(7, 3000, ["E7"]),
        u(8, 3200, remove=["E7"]),
    ]),
    "keyed keep every 2 sec": (Keyed(("Sym",), JumpingTime(2000)), LAX_TIMED, [
        # intervals [0, 2000), [2000, 4000): E2..E5 update or join the first, all leave at the jump
        u(0, 0, ["E1"]), u(1, 600, update=["E2"]), u(2, 1100, update=["E3"]), u(3, 1500, update=["E4"]),
        u(4, 1600, ["E5"]), u(5, 3000, remove=["E4", "E5"]), u(7, 3000, ["E7"]), u(8, 3200, remove=["E7"]),
    ]),
    "keyed keep 2 rows": (Keyed(("Sym",), Length(2)), LAX_ROWS, [
        u(0, 0, ["E1"]), u(1, 0, ["E2"]), u(2, 0, remove=["E1"]), u(3, 0, ["E4"]), u(4, 0, ["E5"], ["E2"]),
        u(5, 0, ["E6"], ["E4"]), u(6, 0, update=["E7"]), u(7, 0, ["E8"], ["E7"]),
    ]),
    "keyed keep 1 row per(g)": (Keyed(("Tid",), GroupWin(("g",), Length(1))), PER_ROWS, [
        u(0, 0, ["E1"]), u(1, 0, ["E2"]), u(2, 0, update=["E3"]), u(3, 0, ["E4"], ["E3"]), u(4, 0, ["E5"], ["E2"]),
    ]),
    "keyed keep every 2 rows": (Keyed(("Sym",), JumpingLength(2)), EVERY_ROWS, [
        u(0, 0, ["E1"]), u(1, 0, ["E2"]), u(2, 0, update=["E3"]), u(3, 0, ["E4"], ["E3", "E2"]),
    ]),
    "keyed keep 1 row slack 2": (Keyed(("Sym",), SlackLength(1, 2)), LAX_ROWS, [
        # limit 3, purge 2: A B; A deleted; B C; B C D makes 3: B and C leave
        u(0, 0, ["E1"]), u(1, 0, ["E2"]), u(2, 0, remove=["E1"]), u(3, 0, ["E4"]), u(4, 0, ["E5"], ["E2", "E4"]),
        u(5, 0, ["E6"]), u(6, 0, update=["E7"]), u(7, 0, ["E8"], ["E7", "E6"]),
    ]),
}


@pytest.fixture(scope="module")
def outcomes(spark):
    names = list(CASES)
    results = run_cases([(CASES[name][0], CASES[name][1]) for name in names])
    return dict(zip(names, results))


def shown(update):
    return (update.after, update.time, [e.id for e in update.insert], [e.id for e in update.remove],
            [e.id for e in update.update], update.error)


@pytest.mark.parametrize("name", list(CASES))
def test_window_posts_the_expected_updates(outcomes, name):
    _, _, expected = CASES[name]
    got = outcomes[name]
    assert not isinstance(got, Exception), got
    assert [shown(x) for x in got] == expected


def test_a_keyed_message_shows_each_key_value_as_the_model_does(spark):
    spec = Keyed(("s", "n", "f", "b"))
    trace = Trace([ev("E1", op="update", s="it's", n=3, f=2.0, b=True),
                   ev("E2", op="delete", s="a\\b", n=-4, f=0.5, b=False)])
    words = ["update of a missing key (s=\"it's\", n=3, f=2.0, b=True)",
             "delete of a missing key (s='a\\\\b', n=-4, f=0.5, b=False)"]
    (got,) = run_cases([(spec, trace)])
    assert [x.error for x in got] == words
    assert [x.error for x in run(spec, trace)] == words  # the model's own words


def test_update_and_error_rows_in_apply_windows_output(spark):
    frame = frames.to_dataframe(spark, [("t", STRICT)])
    rows = apply_window(frame, "PRIMARY KEY (Sym) KEEP ALL", "ccl").where("after <= 3").collect()
    got = sorted((r.after, r.side, r.id, r.error, r.Sym) for r in rows)
    assert got == [
        (0, "insert", "E1", None, "A"),
        (1, "error", "E2", "duplicate insert: the window holds key (Sym='A') already (row 'E1')", "A"),
        (2, "error", "E3", "update of a missing key (Sym='B')", "B"),
        (3, "update", "E4", None, "A"),
    ]
    assert frames.OUTPUT_COLUMNS == tuple(apply_window(frame, "KEEP 2 ROWS", "ccl").columns[:len(frames.OUTPUT_COLUMNS)])


@pytest.mark.parametrize("window, code, words", [
    ("PRIMARY KEY (Sym) KEEP ALL", "replace", "trace t seq 1: operation code replace is not an operation code"),
    ("KEEP 2 ROWS", "update", "trace t seq 1: operation code update is not supported by this window"),
])
def test_an_operation_code_the_window_does_not_take_fails_naming_the_row(spark, window, code, words):
    frame = frames.to_dataframe(spark, [("t", Trace([ev("E1", Sym="A"), ev("E2", Sym="A")]))])
    frame = frame.selectExpr("trace_id", "seq", "kind", "time", "id", f"CASE WHEN seq = 1 THEN '{code}' END AS op",
                             "vars", "Sym")
    with pytest.raises(Exception, match=words):
        apply_window(frame, window, "ccl").collect()
