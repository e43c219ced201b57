"""The hashed id pre-check (`spark_impl.event_table.ids_may_repeat`): it says
"no repeat" only where no event lacks an id and no trace holds an id twice,
whichever partitions the rows lie in; the exact aggregate then names what it
found (tests/spark/test_spark_frames.py: the messages). And the one-pass scan
of the order and the ids (`scan_and_hash`, `scan_decides`), which decides a
frame passes only where the exact checks would pass it; and the batch's
one-pass check (`passes_checks`: the same scan, its hashes merged by a
shuffle rather than on the driver), likewise."""

from __future__ import annotations

import random

import pytest

from spark_impl.errors import InvalidFrame
from spark_impl.event_table import ID_BUCKETS, ids_may_repeat, passes_checks, scan_and_hash, scan_decides


def _rows(spark, pairs, partitions):
    frame = spark.createDataFrame(pairs, "trace_id string, id string")
    return frame.repartition(partitions) if partitions else frame.coalesce(1)


@pytest.mark.parametrize("seed", range(4))
def test_a_repeat_is_found_in_one_partition_or_across_partitions_and_a_clean_frame_passes(spark, seed):
    rng = random.Random(seed)
    pairs = [(f"t{rng.randrange(3)}", f"e{n}") for n in range(3_000)]
    # the same id in two traces is no repeat
    pairs += [("t0", "shared"), ("t1", "shared"), ("t2", "shared")]
    cases = []
    for partitions in (0, 3, 7):
        cases.append((pairs, partitions, False))
        twice = pairs + [(pairs[rng.randrange(len(pairs))][0], None)]  # an event without an id
        cases.append((twice, partitions, True))
        trace, id_ = pairs[rng.randrange(len(pairs))]
        cases.append((pairs + [(trace, id_)], partitions, True))
    got = [ids_may_repeat(_rows(spark, rows, partitions)) for rows, partitions, _ in cases]
    assert got == [expected for _, _, expected in cases]


def test_an_empty_frame_and_partitions_with_no_rows_pass(spark):
    assert ids_may_repeat(_rows(spark, [], 0)) is False
    assert ids_may_repeat(_rows(spark, [("t", "a"), ("t", "b")], ID_BUCKETS + 5)) is False
    assert ids_may_repeat(_rows(spark, [("t", "a"), ("t", "a")], ID_BUCKETS + 5)) is True


def _items(spark, rows, partitions):
    frame = spark.createDataFrame(rows, "trace_id string, seq long, kind string, time long, id string")
    # in order across partitions, as a frame written in order lies: the scan decides it (runs that overlap
    # it leaves to the exact checks)
    return frame.repartitionByRange(partitions, "trace_id", "seq") if partitions else frame.coalesce(1)


#: a frame in order whose checks pass (a start row, advances, one id in two traces), and the frames of one
#: problem each
CLEAN = [("t0", -1, "start", 0, None)] + [(f"t{n % 3}", n // 3, "event", 10 * (n // 3), f"e{n // 3}")
                                          for n in range(600)]
CLEAN += [("t1", 200, "advance", 5_000, None), ("t2", 200, "event", 5_000, "e0x")]
PROBLEMS = {
    "an id twice in a trace": CLEAN + [("t0", 300, "event", 9_000, "e5")],
    "an event without an id": CLEAN + [("t0", 300, "event", 9_000, None)],
    "a seq twice": CLEAN + [("t0", 150, "event", 9_000, "new")],
    "a time going back": CLEAN + [("t0", 300, "event", 1, "new")],
    "a negative seq": CLEAN + [("t0", -3, "event", 0, "new")],
    "a null time": CLEAN + [("t0", 300, "event", None, "new")],
    "a null seq": CLEAN + [("t0", None, "event", 9_000, "new")],
    "a null trace": CLEAN + [(None, 0, "event", 0, "new")],
}


def test_the_one_pass_scan_passes_a_clean_frame_and_no_frame_with_a_problem(spark):
    cases = [("clean", CLEAN, p, True) for p in (0, 4)]
    cases += [(name, rows, p, False) for name, rows in PROBLEMS.items() for p in (0, 4)]
    got = [(name, scan_decides(scan_and_hash(_items(spark, rows, p)).collect())) for name, rows, p, _ in cases]
    assert got == [(name, expected) for name, _, _, expected in cases]


def test_the_batch_one_pass_check_passes_a_clean_frame_and_no_frame_with_a_problem(spark):
    """As above through `passes_checks` (the start rows left out as `check_trace_frame` leaves them), and an
    event table's `until` and `start`; a frame whose partitions' runs overlap is left to the exact checks."""
    cases = [("clean", CLEAN, p, {}, True) for p in (0, 4)]
    cases += [(name, rows, p, {}, False) for name, rows in PROBLEMS.items() for p in (0, 4)]
    cases += [("until at the last event", CLEAN, 4, {"until": 5_000}, True),
              ("until before the last event", CLEAN, 4, {"until": 4_999}, False),
              ("start at the first event", CLEAN, 4, {"start": 0}, True),
              ("start after the first event", CLEAN, 4, {"start": 1}, False)]
    got = [(name, passes_checks(_items(spark, rows, p).where("kind <> 'start'"), traced=True, ids="kind = 'event'",
                                **bounds))
           for name, rows, p, bounds, _ in cases]
    assert got == [(name, expected) for name, _, _, _, expected in cases]
    overlapping = spark.createDataFrame(CLEAN[1:], "trace_id string, seq long, kind string, time long, id string")
    assert passes_checks(overlapping.repartition(4), traced=True, ids="kind = 'event'") is False
    # without ids the ids are not read; one trace is scanned without its name
    one = spark.createDataFrame([("0", n, 10 * n, None) for n in range(500)], "trace_id string, seq long, time long, id string")
    assert passes_checks(one.repartitionByRange(3, "seq"), traced=False, ids=None) is True
    assert passes_checks(one.repartitionByRange(3, "seq"), traced=False, ids="true") is False  # ids missing


#: problems of the per-trace aggregate (`trace_checks`), which the order and id scan alone does not see
TRACE_PROBLEMS = {
    "a null kind": CLEAN + [("t0", 300, None, 9_000, "new")],
    "an unknown kind": CLEAN + [("t0", 300, "tick", 9_000, "new")],
    "a clock past 2^62": CLEAN + [("t0", 300, "advance", 2**62 + 1, None)],
    "two start rows": CLEAN + [("t0", -1, "start", 0, None)],
    "a start after the first item": [("t1", -1, "start", 1, None)] + CLEAN,
    "a start row of another seq": [("t1", 700, "start", 0, None)] + CLEAN,
    "a start row without a trace": CLEAN + [(None, -1, "start", 0, None)],
}


def test_the_scans_summary_is_the_exact_aggregates_on_a_clean_frame_and_gives_way_on_any_problem(spark):
    """`scanned_summary` (the stream's survey without its aggregate job): on a clean frame, per trace the
    figures the exact aggregate (`WindowStream._per_item`) gives, and whether an item jumps; None on a frame
    with any problem `check_trace_frame` finds, so the survey runs the aggregate that names it."""
    from pyspark.sql import functions as F

    from spark_impl.event_table import scanned_summary
    from spark_impl.streaming.micro_batch import WindowStream

    jumping = CLEAN + [("t1", 201, "jump", 6_000, None)]
    only_start = CLEAN + [("t9", -1, "start", 0, None)]  # a trace of nothing but its start row
    for rows, jumps in ((CLEAN, False), (jumping, True), (only_start, False)):
        for partitions in (0, 4):
            frame = _items(spark, rows, partitions)
            summary = scanned_summary(scan_and_hash(frame).collect())
            exact = {row["trace_id"]: {"n": row["n"], "lo": row["lo"], "hi": row["hi"], "start_rows": row["start_rows"],
                                       "early": row["early"] and row["early"].asDict(), "clock": row["clock"]}
                     for row in WindowStream._per_item(frame, checks=False).drop("part").collect()}
            assert summary is not None and summary.traces == exact and summary.jumps is jumps
            assert frame.where(F.col("kind") == "jump").count() == int(jumps)
    problems = {**PROBLEMS, **TRACE_PROBLEMS}
    got = {(name, p): scanned_summary(scan_and_hash(_items(spark, rows, p)).collect())
           for name, rows in problems.items() for p in (0, 4)}
    assert {key: value for key, value in got.items() if value is not None} == {}


def test_the_batch_check_of_a_trace_frame_decides_in_one_job_what_the_stream_survey_decides(spark):
    """`trace_frame_summary` (`check_trace_frame`'s one job: `one_pass` with the start rows and flags) gives
    the summary `scanned_summary` gives on clean frames, and None on every problem frame; a frame whose
    partitions' runs overlap is left to the exact checks."""
    from spark_impl.event_table import check_trace_frame, scanned_summary, trace_frame_summary

    jumping = CLEAN + [("t1", 201, "jump", 6_000, None)]
    for rows in (CLEAN, jumping, CLEAN + [("t9", -1, "start", 0, None)]):
        for partitions in (0, 4):
            frame = _items(spark, rows, partitions)
            assert trace_frame_summary(frame) == scanned_summary(scan_and_hash(frame).collect()) is not None
    assert check_trace_frame(_items(spark, jumping, 4)) is True and check_trace_frame(_items(spark, CLEAN, 4)) is False
    problems = {**PROBLEMS, **TRACE_PROBLEMS}
    got = {(name, p): trace_frame_summary(_items(spark, rows, p)) for name, rows in problems.items() for p in (0, 4)}
    assert {key: value for key, value in got.items() if value is not None} == {}
    overlapping = spark.createDataFrame(CLEAN, "trace_id string, seq long, kind string, time long, id string")
    assert trace_frame_summary(overlapping.repartition(4)) is None
    assert check_trace_frame(overlapping.repartition(4)) is False  # the exact order check passes it
    back = spark.createDataFrame(PROBLEMS["a time going back"], "trace_id string, seq long, kind string, time long, id string")
    with pytest.raises(InvalidFrame, match="goes back"):
        check_trace_frame(back.repartition(4))
