"""The intersection kernel's member tables (spark_impl/windows/members.py), by
themselves: no Spark, rows are row numbers of a small Arrow table."""

import pyarrow as pa
import pytest

from oracle.model import Rank, Sort, SortKey, TimeBatch
from spark_impl.windows.members import (
    MEMBERS,
    Expiring,
    Facts,
    GridBatch,
    Quota,
    next_grid,
    sort_key,
)


def facts(**columns):
    n = len(next(iter(columns.values())))
    return Facts(pa.table(columns), list(range(n)))


def _java_delta(current, reference, interval):
    """esper.md §0.2, `deltaAddWReference`, with Java's truncating long division."""
    n = int((current - reference) / interval)
    if reference > current:
        n -= 1
    delta = reference + (n + 1) * interval - current
    return interval if delta == 0 else delta


@pytest.mark.parametrize("reference", [-2500, -1000, 0, 300, 1000, 7000])
def test_next_grid_is_esper_delta_with_reference(reference):
    for current in range(-3000, 9000, 250):
        for span in (500, 1000, 1500):
            assert next_grid(current, reference, span) == current + _java_delta(current, reference, span)


def test_a_dropped_row_frees_a_length_slot_and_a_first_x_place():
    length = Quota(lambda row: (), 2, evict=True)
    assert [length.take(r, 0) for r in (0, 1, 2)] == [[], [], [0]]
    length.drop({1})
    assert length.take(3, 0) == []  # holds 2, 3: nothing pushed out
    assert length.take(4, 0) == [2]
    first = Quota(facts(k=["a", "a", "a"]).key(("k",)), 1, evict=False)
    assert (first.take(0, 0), first.take(1, 0)) == ([], None)
    first.drop({0})
    assert first.take(2, 0) == []


def test_rank_evicts_the_oldest_of_the_worst_ties_and_lets_a_worse_arrival_go_at_once():
    f = facts(u=["a", "b", "c", "d", "b"], p=[5, 7, 7, 9, 1])
    rank = MEMBERS[Rank](Rank(("u",), 2, (SortKey("p"),)), f, 0, True)
    assert [rank.take(r, 0) for r in (0, 1, 2)] == [[], [], [1]]  # 7 ties: the older (row 1) leaves
    assert rank.take(3, 0) == [3]  # 9 sorts strictly after the worst held (7)
    assert rank.take(4, 0) == [2]  # key b is no longer held: in, and over 2 the worst (row 2) leaves
    assert sorted(e[2] for e in rank.rows) == [0, 4]


def test_sort_keeps_ties_newest_first_so_the_oldest_tie_leaves():
    f = facts(p=[3, 3, 3, 4])
    sort = MEMBERS[Sort](Sort(2, (SortKey("p"),)), f, 0, True)
    assert [sort.take(r, 0) for r in (0, 1, 2, 3)] == [[], [], [0], [3]]


def test_sort_key_puts_nulls_first_ascending_and_last_descending():
    f = facts(p=[2, None, 1])
    up, down = sort_key((SortKey("p"),), f), sort_key((SortKey("p", descending=True),), f)
    assert sorted(range(3), key=up) == [1, 2, 0]
    assert sorted(range(3), key=down) == [0, 2, 1]


def test_a_stale_time_timer_stays_where_it_was_when_its_oldest_row_is_dropped():
    stale, moving = Expiring(lambda now: now + 1000, True), Expiring(lambda now: now + 1000, False)
    for member in (stale, moving):
        member.take(0, 0)
        member.take(1, 400)
        member.drop({0})
    assert (stale.due, moving.due) == (1000, 1400)
    assert stale.fire(1000) == [] and stale.due == 1400  # fires, lets nothing go, re-arms
    assert moving.fire(1400) == [1]


def test_time_batch_keeps_its_grid_after_idling_and_stops_after_an_empty_interval():
    batch = MEMBERS[TimeBatch](TimeBatch(1000), facts(x=[0, 0]), 0, True)
    assert batch.take(0, 1500) is None and batch.due == 2500
    assert batch.fire(2500) == ([0], []) and batch.due == 3500
    assert batch.fire(3500) == ([], [0]) and batch.due == 4500
    assert batch.fire(4500) is None and batch.due is None
    assert batch.take(1, 7700) is None and batch.due == 8500  # the grid 1500 + k * 1000


def test_start_eager_time_batch_posts_empty_batches_from_creation():
    batch = GridBatch(1000, 5, force=True, eager=True, created=300)
    assert batch.due == 1300
    assert batch.fire(1300) == ([], []) and batch.due == 2300
