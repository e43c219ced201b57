"""The Spark windows with time in them (spark_impl/windows/time.py, time_batch.py)
and the clock they share (spark_impl/clock.py), on small hand-made traces.

Every expectation is worked out by hand from the rules (esper.md §0.1, §0.2, §2;
CORPUS.md "Input items"), not taken from the oracle. All cases run through
`spark_impl.run_cases` in one batch (one Spark job), then each is checked alone.

Timelines read left to right in ms: `X1` an arrival, `|` a timer stop of a walk,
`^` a jump target, `[..]` inserted, `-[..]` removed.
"""

from __future__ import annotations

import pytest

from oracle.model import (
    Advance,
    Arrive,
    Event,
    ExtTimed,
    ExtTimedBatch,
    FirstTime,
    GroupWin,
    Jump,
    Time,
    TimeBatch,
    Trace,
)


def ev(event_id, time=None, **props):
    return Arrive(Event(event_id, props), time=time)


def x(event_id, time=None, **props):
    return ev(event_id, time, symbol="X", **props)


def y(event_id, time=None, **props):
    return ev(event_id, time, symbol="Y", **props)


def z(event_id, time=None, **props):
    return ev(event_id, time, symbol="Z", **props)


def by_symbol(window):
    return GroupWin(("symbol",), window)


# name -> (spec, items, start_time, expected [(after, time, insert ids, remove ids)])
CASES = {
    # ------------------------------------------------------------------ #time
    # 0 E1  400 E2 E3   1000|-[E1]  1400|-[E2 E3]     (the walk stops at each due time)
    "time-walk-stops-at-each-due-time": (
        Time(1000), [ev("E1"), ev("E2", 400), ev("E3"), Advance(2500)], 0,
        [(0, 0, ["E1"], []), (1, 400, ["E2"], []), (2, 400, ["E3"], []),
         (3, 1000, [], ["E1"]), (3, 1400, [], ["E2", "E3"])],
    ),
    # the same, jumping: 2500^-[E1 E2 E3]             (one post, oldest first)
    "time-jump-fires-once-at-target": (
        Time(1000), [ev("E1"), ev("E2", 400), ev("E3"), Jump(2500)], 0,
        [(0, 0, ["E1"], []), (1, 400, ["E2"], []), (2, 400, ["E3"], []), (3, 2500, [], ["E1", "E2", "E3"])],
    ),
    # 0 E1   1000|-[E1] E2     (due at the arrival: the walk fires first, same item)
    # E3 at 1600 re-arms nothing (not empty); jump 2700^: E2 due 2000, E3 due 2600 -> one post;
    # E4 at 2700 after the jump, due 3700, is reached by the walk to 4000
    "time-due-at-arrival-and-jump-then-walk": (
        Time(1000), [ev("E1"), ev("E2", 1000), ev("E3", 1600), Jump(2700), ev("E4"), Advance(4000)], 0,
        [(0, 0, ["E1"], []), (1, 1000, [], ["E1"]), (1, 1000, ["E2"], []), (2, 1600, ["E3"], []),
         (3, 2700, [], ["E2", "E3"]), (4, 2700, ["E4"], []), (5, 3700, [], ["E4"])],
    ),
    # start 500: 500 E1  1000 E2 (walked to by the event)  1500|-[E1] 2000|-[E2]
    "time-start-time-and-event-walks": (
        Time(1000), [ev("E1"), ev("E2", 1000), Advance(1999), Advance(2000)], 500,
        [(0, 500, ["E1"], []), (1, 1000, ["E2"], []), (2, 1500, [], ["E1"]), (3, 2000, [], ["E2"])],
    ),
    # groups X (slot 0), Y (slot 2): both due at 1500 -> one update, X's post first
    # although Y1 arrived before X2
    "groupwin-time-simultaneous-slot-order": (
        by_symbol(Time(1000)), [x("X1"), Advance(500), y("Y1"), x("X2"), Advance(1500)], 0,
        [(0, 0, ["X1"], []), (2, 500, ["Y1"], []), (3, 500, ["X2"], []),
         (4, 1000, [], ["X1"]), (4, 1500, [], ["X2", "Y1"])],
    ),
    # jump 3000^: Y due 2200 fires before X due 2300 (due order beats slot order),
    # each group's post holding all its expired events
    "groupwin-time-jump-due-order": (
        by_symbol(Time(1000)),
        [x("X1"), y("Y1", 100), Advance(1100), y("Y2", 1200), x("X2", 1300), y("Y3"), Jump(3000)], 0,
        [(0, 0, ["X1"], []), (1, 100, ["Y1"], []), (2, 1000, [], ["X1"]), (2, 1100, [], ["Y1"]),
         (3, 1200, ["Y2"], []), (4, 1300, ["X2"], []), (5, 1300, ["Y3"], []),
         (6, 3000, [], ["Y2", "Y3", "X2"])],
    ),
    # ------------------------------------------------------------------ #ext_timed
    # E2 (ts 1000) is late; E4 (ts 6000) expires ts <= 5000 from the front: E1, E2
    "ext_timed-late-event-leaves-from-front": (
        ExtTimed("ts", 1000), [ev("E1", ts=5000), ev("E2", ts=1000), ev("E3", ts=5500), ev("E4", ts=6000)], 0,
        [(0, 0, ["E1"], []), (1, 0, ["E2"], []), (2, 0, ["E3"], []), (3, 0, ["E4"], ["E1", "E2"])],
    ),
    # E3 (ts 1000) is stuck behind E2 (ts 9000): E4 (ts 6000) cannot expire it; E5
    # (ts 10000) expires E2, E3 and E4 in deque order. Advances expire nothing.
    "ext_timed-out-of-order-blocks": (
        ExtTimed("ts", 1000),
        [ev("E1", ts=5000), ev("E2", ts=9000), ev("E3", ts=1000), Advance(60000), ev("E4", ts=6000),
         ev("E5", ts=10000)], 0,
        [(0, 0, ["E1"], []), (1, 0, ["E2"], ["E1"]), (2, 0, ["E3"], []), (4, 60000, ["E4"], []),
         (5, 60000, ["E5"], ["E2", "E3", "E4"])],
    ),
    # per group: X's deque and Y's deque expire independently
    "groupwin-ext_timed": (
        by_symbol(ExtTimed("ts", 100)),
        [x("X1", ts=0), y("Y1", ts=50), x("X2", ts=100), y("Y2", ts=120), y("Y3", ts=150)], 0,
        [(0, 0, ["X1"], []), (1, 0, ["Y1"], []), (2, 0, ["X2"], ["X1"]), (3, 0, ["Y2"], []),
         (4, 0, ["Y3"], ["Y1"])],
    ),
    # ------------------------------------------------------------------ #firsttime
    # created at 500, closes at 1500: E2 at 1499 kept; E3 walks to 1500 itself -> dropped
    "firsttime-own-walk-closes": (
        FirstTime(1000), [ev("E1"), ev("E2", 1499), ev("E3", 1500), ev("E4")], 500,
        [(0, 500, ["E1"], []), (1, 1499, ["E2"], [])],
    ),
    # a jump past creation + t closes it too
    "firsttime-jump-closes": (
        FirstTime(1000), [ev("E1"), Jump(999), ev("E2"), Jump(5000), ev("E3")], 0,
        [(0, 0, ["E1"], []), (2, 999, ["E2"], [])],
    ),
    # per group from its first event: X until 1000, Y (first at 800) until 1800
    "groupwin-firsttime-from-first-event": (
        by_symbol(FirstTime(1000)),
        [x("X1"), y("Y1", 800), x("X2", 1000), y("Y2", 1700), y("Y3", 1800)], 0,
        [(0, 0, ["X1"], []), (1, 800, ["Y1"], []), (3, 1700, ["Y2"], [])],
    ),
    # ------------------------------------------------------------------ #time_batch
    # ref 200 (first arrival): 1200|[E1 E2]  2200|-[E1 E2]  3200| nothing, timer lapses;
    # E3 at 3500 re-arms on the old grid: 4200|[E3]
    "time_batch-walk-grid-kept": (
        TimeBatch(1000), [ev("E1", 200), ev("E2", 700), Advance(3500), ev("E3"), Advance(4200)], 0,
        [(2, 1200, ["E1", "E2"], []), (2, 2200, [], ["E1", "E2"]), (4, 4200, ["E3"], [])],
    ),
    # the same, jumping to 3500^: one post; re-armed at 4200, then 4200|-[E1 E2]
    "time_batch-jump-posts-once": (
        TimeBatch(1000), [ev("E1", 200), ev("E2", 700), Jump(3500), Advance(5500)], 0,
        [(2, 3500, ["E1", "E2"], []), (3, 4200, [], ["E1", "E2"])],
    ),
    # E2 arrives at 1000 after the walk fired there: next batch
    "time_batch-arrival-on-grid-point": (
        TimeBatch(1000), [ev("E1"), ev("E2", 1000), Advance(2000)], 0,
        [(1, 1000, ["E1"], []), (2, 2000, ["E2"], ["E1"])],
    ),
    # refpoint 5300: grid ..., 300, 1300, ...; E1 at 100 leaves the buffer at 300
    "time_batch-refpoint-before-and-after": (
        TimeBatch(1000, reference=5300), [ev("E1", 100), Advance(1400)], 0,
        [(1, 300, ["E1"], []), (1, 1300, [], ["E1"])],
    ),
    # FORCE_UPDATE: no timer before the first event; then never lapses:
    # 2500 E1  3500|[E1]  4500|-[E1]  jump 8000^ (due 5500): empty  8500| empty
    "time_batch-force-update-empty-batches": (
        TimeBatch(1000, force_update=True),
        [Advance(2500), ev("E1"), Advance(5000), Jump(8000), Advance(9000)], 0,
        [(2, 3500, ["E1"], []), (2, 4500, [], ["E1"]), (3, 8000, [], []), (4, 8500, [], [])],
    ),
    # START_EAGER (with FORCE_UPDATE): armed at creation 300, ref 300, the refpoint unread:
    # 1300| empty  2300| empty  E1 at 2500  3300|[E1]
    "time_batch-start-eager-ignores-refpoint": (
        TimeBatch(1000, reference=0, force_update=True, start_eager=True),
        [Advance(2500), ev("E1"), Advance(3300)], 300,
        [(0, 1300, [], []), (0, 2300, [], []), (2, 3300, ["E1"], [])],
    ),
    # X (ref 0) and Y (first seen at 1500, ref 1500) batch on their own grids; Z, first
    # seen at 3000, shares X's grid: at 4000 one update, X's post before Z's (slot order)
    # although Z1 arrived before X3
    "groupwin-time_batch-late-group-and-simultaneous": (
        by_symbol(TimeBatch(1000)),
        [x("X1"), Advance(1500), y("Y1"), x("X2"), Advance(3000), z("Z1"), x("X3"), Advance(4000)], 0,
        [(1, 1000, ["X1"], []), (4, 2000, ["X2"], ["X1"]), (4, 2500, ["Y1"], []), (4, 3000, [], ["X2"]),
         (7, 3500, [], ["Y1"]), (7, 4000, ["X3", "Z1"], [])],
    ),
    # jump 2600^ fires X (due 1000) and Y (due 1500): one update, X first; each group
    # re-arms at its next grid point after 2600: X 3000, Y 3500
    "groupwin-time_batch-jump": (
        by_symbol(TimeBatch(1000)), [x("X1"), y("Y1", 500), Jump(2600), Advance(3500)], 0,
        [(2, 2600, ["X1", "Y1"], []), (3, 3000, [], ["X1"]), (3, 3500, [], ["Y1"])],
    ),
    # FORCE_UPDATE per group: X empty posts go on; Y (null symbol: a group of its own)
    # starts at 1200
    "groupwin-time_batch-force-update-null-group": (
        by_symbol(TimeBatch(1000, force_update=True)),
        [x("X1"), ev("N1", 1200), Advance(3200)], 0,
        [(1, 1000, ["X1"], []), (2, 2000, [], ["X1"]), (2, 2200, ["N1"], []), (2, 3000, [], []),
         (2, 3200, [], ["N1"])],
    ),
    # ------------------------------------------------------------------ #ext_timed_batch
    # ref 1000 (first ts): E3 (ts 500) joins; E4 (2000 >= 2000) closes [E1 E2 E3] and
    # starts the next batch; E5 (5500 >= 3000) closes [E4]; E7 (6000 >= 6000) closes [E5 E6]
    "ext_timed_batch-closing-event-starts-next": (
        ExtTimedBatch("ts", 1000),
        [ev("E1", ts=1000), ev("E2", ts=1500), ev("E3", ts=500), ev("E4", ts=2000), ev("E5", ts=5500),
         ev("E6", ts=5600), ev("E7", ts=6000)], 0,
        [(3, 0, ["E1", "E2", "E3"], []), (4, 0, ["E4"], ["E1", "E2", "E3"]), (6, 0, ["E5", "E6"], ["E4"])],
    ),
    # refpoint 1500: E1 (ts 1000) is closed by E2 at ts 1500 already
    "ext_timed_batch-refpoint": (
        ExtTimedBatch("ts", 1000, reference=1500),
        [ev("E1", ts=1000), ev("E2", 700, ts=1500), ev("E3", ts=2499), ev("E4", ts=2500)], 0,
        [(1, 700, ["E1"], []), (3, 700, ["E2", "E3"], ["E1"])],
    ),
}


@pytest.fixture(scope="module")
def outcomes(spark):
    import spark_impl

    names = list(CASES)
    pairs = [(CASES[n][0], Trace(CASES[n][1], CASES[n][2])) for n in names]
    return dict(zip(names, spark_impl.run_cases(pairs, spark=spark)))


def short(updates):
    return [(u.after, u.time, [e.id for e in u.insert], [e.id for e in u.remove]) for u in updates]


@pytest.mark.parametrize("name", list(CASES))
def test_hand_made_case(outcomes, name):
    got = outcomes[name]
    assert not isinstance(got, Exception), got
    assert short(got) == CASES[name][3]


# ---------------------------------------------------------------------- the clock itself
#
# start 100 | E0 at 100 | advance 2500 | E2 walks to 3000 | jump 6000 | E4 at 6000 | advance 9000
CLOCK_TRACE = Trace([ev("E0"), Advance(2500), ev("E2", 3000), Jump(6000), ev("E4"), Advance(9000)], 100)
# due time -> (firing item, clock it fires at); a walk stops at the due time itself, a
# jump fires at its target, a due time at an event's own walk fires in that event's
# unit, a due time past the last clock never fires
CLOCK_FIRES = {
    101: (1, 101), 2500: (1, 2500), 2501: (2, 2501), 3000: (2, 3000), 3001: (3, 6000), 6000: (3, 6000),
    6001: (5, 6001), 9000: (5, 9000), 9001: None,
}


CLOCK_ITEMS = [(0, "event", 100), (1, "advance", 2500), (2, "event", 3000), (3, "jump", 6000), (4, "event", 6000),
               (5, "advance", 9000)]


def first_reaching(due):
    """The rule, stated directly: the first item whose clock reaches `due`, and
    the clock the timer fires at (the due time on a walk, the target on a jump)."""
    for seq, kind, time in CLOCK_ITEMS:
        if time >= due:
            return seq, time if kind == "jump" else due
    return None


def test_the_rule_as_stated_gives_the_documented_firings():
    assert {due: first_reaching(due) for due in CLOCK_FIRES} == CLOCK_FIRES


def fired(row, hit, due):
    return None if row[hit] is None else (row[hit]["seq"], row[hit]["time"] if row[hit]["jump"] else due)


BUCKETINGS = {"one bucket": 65_536, "three buckets": 2, "six buckets, some empty": 1}


@pytest.mark.parametrize("rows_per_bucket", BUCKETINGS.values(), ids=BUCKETINGS.keys())
def test_hits_whatever_the_buckets(spark, monkeypatch, rows_per_bucket):
    """Narrow buckets leave some empty, so due times are reached through the
    fallback table and the copies of the next bucket; the answers must not change."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from spark_impl import clock, frames

    monkeypatch.setattr(clock, "ROWS_PER_BUCKET", rows_per_bucket)
    monkeypatch.setattr(clock, "BUCKETS_PER_PARTITION", 1000)
    items = frames.to_dataframe(spark, [("t", CLOCK_TRACE)])
    dues = sorted(set(CLOCK_FIRES) | set(range(0, 9600, 97)))
    schema = StructType([StructField("trace_id", StringType()), StructField(clock.DUE, LongType())])
    points = spark.createDataFrame([("t", due) for due in dues], schema)
    rows = clock.hits(items, points, after=1000).collect()
    assert len(rows) == len(dues)
    for row in rows:
        due = row[clock.DUE]
        assert fired(row, clock.HIT, due) == first_reaching(due), due
        assert fired(row, clock.HIT_AFTER, due + 1000) == first_reaching(due + 1000), due


@pytest.mark.parametrize("rows_per_bucket", BUCKETINGS.values(), ids=BUCKETINGS.keys())
@pytest.mark.parametrize("span", [1, 400, 2900, 2901, 5900, 8900, 8901])
def test_expiries_whatever_the_buckets(spark, monkeypatch, rows_per_bucket, span):
    from spark_impl import clock, frames

    monkeypatch.setattr(clock, "ROWS_PER_BUCKET", rows_per_bucket)
    monkeypatch.setattr(clock, "BUCKETS_PER_PARTITION", 1000)
    items = frames.to_dataframe(spark, [("t", CLOCK_TRACE)])
    rows = clock.expiries(items, span, ["trace_id", "seq", "time"]).collect()
    assert {row["seq"]: fired(row, clock.HIT, row["time"] + span) for row in rows} == {
        seq: first_reaching(time + span) for seq, kind, time in CLOCK_ITEMS if kind == "event"
    }


def test_timer_posts_carry_properties_and_an_empty_update_is_one_null_row(spark):
    # time_batch(1000, FORCE_UPDATE): 0 E1  1000|[E1]  2000|-[E1]  3000| empty
    import spark_impl
    from spark_impl import frames

    trace = Trace([ev("E1", price=2.5, symbol="X"), Advance(3000)])
    out = spark_impl.apply_window(frames.to_dataframe(spark, [("t", trace)]), TimeBatch(1000, force_update=True))
    rows = sorted(tuple(r) for r in out.select("after", "phase", "time", "side", "pos", "id", "price", "symbol").collect())
    assert rows == [
        (1, 0, 1000, "insert", (1000, 0, 0), "E1", 2.5, "X"),
        (1, 0, 2000, "remove", (2000, 0, 0), "E1", 2.5, "X"),
        (1, 0, 3000, None, None, None, None, None),
    ]
