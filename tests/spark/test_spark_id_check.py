"""The hashed id pre-check (`spark_impl.event_table.ids_may_repeat`): it says
"no repeat" only where no event lacks an id and no trace holds an id twice,
whichever partitions the rows lie in; the exact aggregate then names what it
found (tests/spark/test_spark_frames.py: the messages)."""

from __future__ import annotations

import random

import pytest

from spark_impl.event_table import ID_BUCKETS, ids_may_repeat


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
