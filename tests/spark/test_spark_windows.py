"""The untimed Spark windows (spark_impl/windows/length.py, keep.py, unique.py)
and #groupwin around them, on small hand-made traces; the output's invariance
under the shuffle partition count; the shape of a keyed window's physical plan.

Every expectation is worked out by hand from esper.md §1 and §5, not taken from
the oracle. All cases run through `spark_impl.run_cases` in one batch (one job).

TRACE (k is the key property; `-` means the event has no k, a null key):

    item   0   1   2         3   4   5   6   7         8          9
           E1  E2  adv 1000  E3  E4  E5  E6  jump 2000 E7 @2500   E8
    k      a   b             a   a   b   -             a          None
    clock  0   0   1000      1000 ...                  2500       2500
"""

from __future__ import annotations

import re

import pytest

from oracle.model import (
    Advance,
    Arrive,
    Event,
    FirstEvent,
    FirstLength,
    FirstUnique,
    GroupWin,
    Jump,
    KeepAll,
    LastEvent,
    Length,
    LengthBatch,
    Trace,
    Unique,
)
from oracle import parse, run
from spark_impl import apply_window, frames, run_cases


def ev(event_id, time=None, **props):
    return Arrive(Event(event_id, props), time=time)


TRACE = Trace([
    ev("E1", k="a"), ev("E2", k="b"), Advance(1000), ev("E3", k="a"), ev("E4", k="a"), ev("E5", k="b"), ev("E6"),
    Jump(2000), ev("E7", 2500, k="a"), ev("E8", k=None),
])
# Two keys; 1 and 1.0 are one value (one double column), as in the oracle (1 == 1.0).
TWO_KEYS = Trace([ev("F1", k="a", v=1), ev("F2", k="a", v=1.0), ev("F3", k="a", v=2), ev("F4", k="b", v=1),
                  ev("F5", k="a", v=2.0)])
# The window is created at 5000: events arrive on that clock.
LATE_START = Trace([ev("G1"), ev("G2"), Advance(6000), ev("G3")], start_time=5000)


def by_k(window):
    return GroupWin(("k",), window)


def arrivals(trace, *removed):
    """One update per event, in order, each removing the named event (or none: '')."""
    clock, out, events = trace.start_time, [], iter(removed)
    for index, item in enumerate(trace.items):
        clock = item.time if getattr(item, "time", None) is not None else clock
        if isinstance(item, Arrive):
            gone = next(events)
            out.append((index, clock, [item.event.id], [gone] if gone else []))
    return out


CASES = {
    "length(2)": (Length(2), TRACE, arrivals(TRACE, "", "", "E1", "E2", "E3", "E4", "E5", "E6")),
    "length(1)": (Length(1), TRACE, arrivals(TRACE, "", "E1", "E2", "E3", "E4", "E5", "E6", "E7")),
    "length(9) never full": (Length(9), TRACE, arrivals(TRACE, *[""] * 8)),
    "length_batch(3)": (LengthBatch(3), TRACE, [
        (3, 1000, ["E1", "E2", "E3"], []),
        (6, 1000, ["E4", "E5", "E6"], ["E1", "E2", "E3"]),  # E7, E8: an open batch posts nothing
    ]),
    "length_batch(1)": (LengthBatch(1), TRACE, arrivals(TRACE, "", "E1", "E2", "E3", "E4", "E5", "E6", "E7")),
    "firstlength(2)": (FirstLength(2), TRACE, [(0, 0, ["E1"], []), (1, 0, ["E2"], [])]),
    "keepall": (KeepAll(), TRACE, arrivals(TRACE, *[""] * 8)),
    "firstevent": (FirstEvent(), TRACE, [(0, 0, ["E1"], [])]),
    "lastevent": (LastEvent(), TRACE, arrivals(TRACE, "", "E1", "E2", "E3", "E4", "E5", "E6", "E7")),
    "unique(k)": (Unique(("k",)), TRACE, arrivals(TRACE, "", "", "E1", "E3", "E2", "", "E4", "E6")),
    "firstunique(k)": (FirstUnique(("k",)), TRACE, [(0, 0, ["E1"], []), (1, 0, ["E2"], []), (6, 1000, ["E6"], [])]),
    "unique(k, v)": (Unique(("k", "v")), TWO_KEYS, arrivals(TWO_KEYS, "", "F1", "", "", "F3")),
    "firstunique(k, v)": (FirstUnique(("k", "v")), TWO_KEYS, [(0, 0, ["F1"], []), (2, 0, ["F3"], []),
                                                              (3, 0, ["F4"], [])]),
    "length(1) from 5000": (Length(1), LATE_START, [(0, 5000, ["G1"], []), (1, 5000, ["G2"], ["G1"]),
                                                   (3, 6000, ["G3"], ["G2"])]),
    # groupwin: a: E1 E3 E4 E7, b: E2 E5, null: E6 E8
    "groupwin length(2)": (by_k(Length(2)), TRACE, arrivals(TRACE, "", "", "", "E1", "", "", "E3", "")),
    "groupwin length_batch(2)": (by_k(LengthBatch(2)), TRACE, [
        (3, 1000, ["E1", "E3"], []), (5, 1000, ["E2", "E5"], []), (8, 2500, ["E4", "E7"], ["E1", "E3"]),
        (9, 2500, ["E6", "E8"], []),
    ]),
    "groupwin firstlength(1)": (by_k(FirstLength(1)), TRACE, [(0, 0, ["E1"], []), (1, 0, ["E2"], []),
                                                              (6, 1000, ["E6"], [])]),
    "groupwin firstevent": (by_k(FirstEvent()), TRACE, [(0, 0, ["E1"], []), (1, 0, ["E2"], []), (6, 1000, ["E6"], [])]),
    "groupwin lastevent": (by_k(LastEvent()), TRACE, arrivals(TRACE, "", "", "E1", "E3", "E2", "", "E4", "E6")),
    "groupwin keepall": (by_k(KeepAll()), TRACE, arrivals(TRACE, *[""] * 8)),
    "groupwin(k) unique(v)": (by_k(Unique(("v",))), TWO_KEYS, arrivals(TWO_KEYS, "", "F1", "", "", "F3")),
    "groupwin(v) length(1)": (GroupWin(("v",), Length(1)), TWO_KEYS, arrivals(TWO_KEYS, "", "F1", "", "F2", "F3")),
}


@pytest.fixture(scope="module")
def outcomes(spark):
    names = list(CASES)
    results = run_cases([(CASES[name][0], CASES[name][1]) for name in names])
    return dict(zip(names, results))


@pytest.mark.parametrize("name", list(CASES))
def test_window_posts_the_expected_updates(outcomes, name):
    _, _, expected = CASES[name]
    got = outcomes[name]
    assert not isinstance(got, Exception), got
    assert [(u.after, u.time, [e.id for e in u.insert], [e.id for e in u.remove]) for u in got] == expected


def test_posted_events_are_the_traces_own(outcomes):
    first = outcomes["unique(k, v)"][1]
    assert first.insert[0] is TWO_KEYS.items[1].event and first.remove[0].props == {"k": "a", "v": 1}


# --------------------------------------------------------------------------- partitions


def busy_traces(count=6, events=40):
    """Traces with walks, jumps, bursts at one instant, many keys and groups first seen late."""
    traces = []
    for t in range(count):
        items, clock = [], 0
        for i in range(events):
            if i % 7 == 3:
                clock += 250
                items.append(Advance(clock))
            elif i % 11 == 5:
                clock += 1700
                items.append(Jump(clock))
            elif i % 5 == 1:
                clock += 100
            items.append(Arrive(Event(f"T{t}E{i}", {"k": f"k{(i * (t + 3)) % (2 + t)}", "v": i % 3, "ts": clock}),
                                time=clock))
        traces.append((f"t{t}", Trace(items)))
    return traces


def sorted_rows(frame):
    return sorted(tuple(r) for r in frame.select(*frames.OUTPUT_COLUMNS, "k").collect())


@pytest.fixture(scope="module")
def busy(spark):
    return frames.to_dataframe(spark, busy_traces()).repartition(3)


EVERY_KIND = [
    "#length(3)", "#length_batch(3)", "#keepall", "#firstevent", "#lastevent", "#firstlength(2)", "#unique(v)",
    "#firstunique(v)", "#time(1 sec)", "#ext_timed(ts, 1 sec)", "#firsttime(2 sec)", "#time_batch(700 msec, 100)",
    '#time_batch(1 sec, "FORCE_UPDATE, START_EAGER")', "#ext_timed_batch(ts, 1 sec)", "#groupwin(k)#length(2)",
    "#groupwin(k)#time(1 sec)", "#groupwin(k)#time_batch(1 sec)", '#groupwin(k)#time_batch(1 sec, "FORCE_UPDATE")',
    "#groupwin(k)#unique(v)",
]


def test_output_is_the_same_under_1_and_200_shuffle_partitions(spark, busy, monkeypatch):
    """Every window kind, on traces with jumps. The clock's bucket count follows
    the partition count (few rows per bucket here, so each setting cuts the
    traces differently); the output must not change, and it is the oracle's."""
    from spark_impl import clock

    monkeypatch.setattr(clock, "ROWS_PER_BUCKET", 8)
    saved = spark.conf.get("spark.sql.shuffle.partitions")
    union = None
    try:
        outputs = []
        for partitions in ("1", "200"):  # the session's own 4 is every other test's
            spark.conf.set("spark.sql.shuffle.partitions", partitions)
            parts = [apply_window(busy, w).selectExpr(f"'{w}' AS clause", *frames.OUTPUT_COLUMNS) for w in EVERY_KIND]
            union = parts[0]
            for part in parts[1:]:
                union = union.unionByName(part)
            outputs.append(sorted(tuple(r) for r in union.collect()))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", saved)
    assert outputs[0] == outputs[1]
    traces = dict(busy_traces())
    for window in EVERY_KIND:
        # `clause`, not `window`: that is the output column of an eKuiper pane's bounds
        rows = [r for r in (dict(zip(("clause", *frames.OUTPUT_COLUMNS), row)) for row in outputs[0])
                if r["clause"] == window]
        got = frames.updates_from_rows(rows, traces)
        spec = parse(window)
        assert got == {tid: run(spec, trace) for tid, trace in traces.items()}, window


def test_numbered_gives_consecutive_update_numbers_and_positions(busy):
    out = apply_window(busy, "#groupwin(k)#time_batch(1 sec)", numbered=True).collect()
    by_trace = {}
    for r in out:
        by_trace.setdefault(r.trace_id, []).append(r)
    for rows in by_trace.values():
        keys = sorted({(r.after, r.phase, r.time, r.ordinal) for r in rows})
        assert sorted({r.update_no for r in rows}) == list(range(len(keys)))
        for r in rows:
            assert keys[r.update_no] == (r.after, r.phase, r.time, r.ordinal)
        sides = {}
        for r in rows:
            sides.setdefault((r.update_no, r.side), []).append(r)
        for side_rows in sides.values():
            ordered = sorted(side_rows, key=lambda r: tuple(r.pos))
            assert [r.pos_no for r in ordered] == list(range(len(ordered)))


# --------------------------------------------------------------------------- plan


def bracket_groups(text: str) -> list[str]:
    """The top-level `[...]` groups of a plan line."""
    groups, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            start = i + 1 if depth == 1 else start
        elif char == "]":
            depth -= 1
            if depth == 0:
                groups.append(text[start:i])
    return groups


def window_partitions(plan: str) -> list[str]:
    """The partition spec of each Window node; a node without one prints two
    groups (expressions, order) instead of three."""
    nodes = [bracket_groups(line.split("Window ", 1)[1]) for line in plan.splitlines()
             if re.search(r"(^|[-+:] )Window \[", line)]
    return [groups[1] if len(groups) == 3 else "" for groups in nodes]


def test_the_plan_reader_sees_a_window_without_partition(spark):
    plan = spark.range(3).selectExpr("lag(id) OVER (ORDER BY id)")._jdf.queryExecution().executedPlan().toString()
    assert window_partitions(plan) == [""]


def test_a_keyed_window_is_planned_by_key_never_on_one_partition(spark, busy, tmp_path):
    """On a frame of unknown size (here: files), the scaling path. (A frame Spark
    knows to be small may share the trace's partitioning across its keys.)"""
    busy.write.parquet(str(tmp_path / "busy"))
    out = apply_window(spark.read.parquet(str(tmp_path / "busy")), "#groupwin(k)#unique(v)")
    plan = out._jdf.queryExecution().executedPlan().toString()
    partitions = window_partitions(plan)
    assert partitions and all(p.startswith("trace_id#") for p in partitions), plan
    assert any(re.fullmatch(r"trace_id#\d+, k#\d+, v#\d+L", p) for p in partitions), plan
    assert "SinglePartition" not in plan, plan
    assert re.search(r"Exchange hashpartitioning\(trace_id#\d+, k#\d+", plan), plan


@pytest.mark.parametrize("window", ["#unique(id)", "#firstunique(id)", "#groupwin(id)#length(1)",
                                    "#groupwin(id)#time(1 sec)"])
def test_a_window_keyed_by_the_event_id_runs_as_on_the_oracle(window):
    """`id` is the event's id, readable as a property on both engines (oracle.model.Event.get)."""
    spec = parse(window)
    traces = busy_traces(count=2, events=12)
    got = run_cases([(spec, trace) for _, trace in traces])
    assert got == [run(spec, trace) for _, trace in traces]
