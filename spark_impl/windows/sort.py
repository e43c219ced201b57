"""`#sort(n, criteria)` as one window function, and `#rank(keys, n, criteria)`
as a per-sub-window kernel (esper.md §3; seed 14.3.19, 14.3.20).

`#sort`:

Every event is inserted at its own arrival (phase 1). The window after each
arrival holds the `n` best events so far: an event leaves only by being pushed
past the `n`-th place, and an event once pushed out never returns, since only
arrivals change the ranking. "Better" is the order of the sub-window's events
by the criteria (nulls first ascending, last descending), then newest first:
so an event `e` is held exactly while fewer than `n` events better than it have
arrived, and it leaves at the arrival of the `n`-th better event, or at its
own arrival if `n` better ones were there before it (new and old at once).

In a window over the sub-window ordered that way (criteria, then seq
descending), the events better than `e` are the rows before it:
`min_by(struct(seq, time), seq, n)` over the frame from the first row to the
row before gives the `n` earliest of them, and the last of those is the
arrival that pushes `e` out. One shuffle by sub-window, one sort, one window
whose aggregate keeps `n` rows: the bare plan's shape. Each arrival pushes out
at most one event, so a removal is the only row of its side.

`#rank`: an arrival replaces the event held under its unique key, or, if its
key is not held, may push out the worst. Which keys are held depends on every
earlier push-out, and which event is pushed out depends on the keys held: no
order of the events gives the answer to a running aggregate, so the state is
truly sequential. Each sub-window's events (one shuffle by sub-window) go
through a grouped Arrow kernel (`_rank_kernel`), a loop over the events in seq
order. The kernel compares integers only: the criteria and the unique keys are
first replaced by their `dense_rank` within the sub-window (SQL's ordering,
nulls first ascending, last descending; equal keys, nulls included, share a
rank). It adds to each event the arrival that removed it (replaced, pushed
out, or its own arrival if it came in worse than the worst of a full window),
and whether its arrival was posted at all.

The kernel keeps Esper's books for `#rank`, since with nulls they part from
"the latest event per key" (esper.md §3, the rules of
`oracle.windows.sort.RankWindow`'s docstring, observed on Esper 9.0.0): events
in tiers by sort rank (a tier's events in arrival order), a ledger from each
unique key to the tier its event went to, and a count. A null sort value under
one criterion files nothing in the ledger (Esper files a null, which its
ledger reads as absent): the next event of that key is a newcomer, and the
null-sorted event stays until it is the oldest of the worst tier. A ledger
entry names a tier, not an event: a leaving or a replacement looks in that
tier for the event of the key, and an event pushed out strikes its key's
entry, whoever filed it last. Esper keeps a tier's first event alone and makes
it a list at the second, and a list stays one while the tier lasts: a lone
event is the one found, whatever its key; a list is looked through for the
first event of the key. Looking through a list, with one unique property, and
reaching an event whose key is null at or before a match: Esper's search
throws, and the arrival is not posted and changes nothing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from oracle.model import Rank, Sort
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, quoted


def _order(spec: Sort) -> str:
    return ", ".join(f"{quoted(c.property)} DESC NULLS LAST" if c.descending else f"{quoted(c.property)} ASC NULLS FIRST"
                     for c in spec.criteria)


def sorted_window(items: DataFrame, spec: Sort, ctx: Context) -> DataFrame:
    partition = ", ".join(quoted(c) for c in ctx.partition)
    better = (f"OVER (PARTITION BY {partition} ORDER BY {_order(spec)}, seq DESC "
              "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
    ranked = events(items).selectExpr(
        "*", f"min_by(named_struct('seq', seq, 'time', time), seq, {spec.size}) {better} AS `#better`"
    )
    # the n-th better arrival (the latest of the n earliest), or the event's own if it came later
    pusher = (f"CASE WHEN size(`#better`) = {spec.size} THEN "
              "greatest(element_at(`#better`, -1), named_struct('seq', seq, 'time', time)) END")
    pushed = ranked.selectExpr("*", f"{pusher} AS `#pusher`")
    return arrival_posts(pushed, ctx, Emit("insert", "seq", "time"),
                         Emit("remove", "`#pusher`.seq", "`#pusher`.time"))


def best(items: DataFrame, spec: Sort, ctx: Context) -> DataFrame:
    """`#sort(n)`'s state (`spark_impl.incremental`): what it holds, each
    sub-window's n best events (the first n rows in the order of
    `sorted_window`'s window). Enough: an event pushed out never returns,
    and for a later event the events better than it that came before are
    either n or more, the n held ones among them (it comes in and leaves at
    once), or fewer, all held; so every later pusher is the same."""
    partition = ", ".join(quoted(c) for c in ctx.partition)
    return events(items).selectExpr(
        "*", f"row_number() OVER (PARTITION BY {partition} ORDER BY {_order(spec)}, seq DESC) AS `#place`") \
        .where(f"`#place` <= {spec.size}").drop("#place")


def ranked_window(items: DataFrame, spec: Rank, ctx: Context) -> DataFrame:
    removed = _ranked(items, spec, ctx)
    return arrival_posts(removed, ctx, Emit("insert", "CASE WHEN `#posted` THEN seq END", "time"),
                         Emit("remove", "`#out_seq`", "`#out_time`"))


def ranked_held(items: DataFrame, spec: Rank, ctx: Context) -> DataFrame:
    """`#rank`'s state (`spark_impl.incremental`): what it holds, the events
    the kernel has not removed, whose arrival was posted; but a sub-window
    with a null its books treat apart (`#s_unfiled`, `#u_null`: a null sort
    value under one criterion, a null key under one unique property) among
    its events so far keeps them all. Without one the books are those of
    "each key's latest event": one event per held key, its ledger entry
    naming its tier, a tier's events in arrival order; the held events
    replayed (each a newcomer) rebuild them, all but whether a tier of one
    event was once a list. That is read only by a search of the tier for
    the key of its one event, which is not null: the same answer either
    way, until an event enters the tier and makes it a list in both runs.
    With one the books depend on the path (an unfiled event beside its
    key's next one, a stale entry, a search that throws at a null key).
    Decided: the whole history of such a sub-window, not None for the spec."""
    removed = _ranked(items, spec, ctx)
    partition = ", ".join(quoted(c) for c in ctx.partition)
    columns = [quoted(c) for c in items.columns]
    return removed.selectExpr(
        *columns, "`#out_seq`", "`#posted`",
        f"max(`#s_unfiled` OR `#u_null`) OVER (PARTITION BY {partition}) AS `#apart`") \
        .where("`#apart` OR (`#out_seq` IS NULL AND `#posted`)").selectExpr(*columns)


def _ranked(items: DataFrame, spec: Rank, ctx: Context) -> DataFrame:
    """Each event of `items` with the kernel's `#out_seq`, `#out_time` (the
    arrival that removed it, null while held) and `#posted`."""
    partition = ", ".join(quoted(c) for c in ctx.partition)
    unique = ", ".join(f"{quoted(k)} ASC NULLS FIRST" for k in spec.keys)
    one_sort = f"{quoted(spec.criteria[0].property)} IS NULL" if len(spec.criteria) == 1 else "false"
    one_key = f"{quoted(spec.keys[0])} IS NULL" if len(spec.keys) == 1 else "false"
    prepared = events(items).selectExpr(
        "*", f"dense_rank() OVER (PARTITION BY {partition} ORDER BY {_order(spec)}) AS `#s`",
        f"dense_rank() OVER (PARTITION BY {partition} ORDER BY {unique}) AS `#u`",
        f"{one_sort} AS `#s_unfiled`", f"{one_key} AS `#u_null`",
    )
    schema = T.StructType([*prepared.schema.fields, T.StructField("#out_seq", T.LongType()),
                           T.StructField("#out_time", T.LongType()), T.StructField("#posted", T.BooleanType())])
    return prepared.groupBy(*ctx.partition).applyInArrow(_rank_kernel(spec.size), schema)


def _rank_kernel(size: int):
    """The grouped-map function for `#rank` with `size` (module docstring)."""

    def kernel(table):
        import bisect

        import pyarrow as pa

        seq, time = table.column("seq").to_pylist(), table.column("time").to_pylist()
        tier_of, key = table.column("#s").to_pylist(), table.column("#u").to_pylist()
        unfiled, null_key = table.column("#s_unfiled").to_pylist(), table.column("#u_null").to_pylist()
        out_seq: list = [None] * len(seq)
        out_time: list = [None] * len(seq)
        posted = [True] * len(seq)
        tiers: dict[int, list[int]] = {}  # sort rank -> rows, oldest first
        lists: set[int] = set()  # the tiers that held two rows at once since they began
        ranks: list[int] = []  # the sort ranks with a tier, best first
        ledger: dict[int, int] = {}  # unique key -> the tier its event went to
        count = 0

        class Throws(Exception):
            """Esper's search met a null key first."""

        def leave(row: int, by: int) -> None:
            out_seq[row], out_time[row] = seq[by], time[by]

        def search(rank: int, wanted: int) -> int | None:
            rows = tiers[rank]
            if rank not in lists:
                return 0
            for at, row in enumerate(rows):
                if null_key[row]:
                    raise Throws
                if key[row] == wanted:
                    return at
            return None

        def drop_tier(rank: int) -> None:
            del tiers[rank]
            lists.discard(rank)
            ranks.pop(bisect.bisect_left(ranks, rank))

        def place(row: int) -> None:
            rank = tier_of[row]
            if rank not in tiers:
                tiers[rank] = []
                bisect.insort(ranks, rank)
            tiers[rank].append(row)
            if len(tiers[rank]) == 2:
                lists.add(rank)

        for row in sorted(range(len(seq)), key=seq.__getitem__):
            k, rank = key[row], tier_of[row]
            filed = ledger.get(k)
            try:
                if filed is not None and filed == rank:  # an unfiled (null) rank is never in the ledger
                    rows = tiers.get(rank)  # the same tier: the arrival takes the place of the key's event
                    if rows is not None:
                        at = search(rank, k)
                        if rank not in lists:
                            leave(rows[0], row)
                            rows[0] = row
                        else:
                            if at is not None:
                                leave(rows.pop(at), row)
                            rows.append(row)
                    continue
                if filed is not None:  # another tier: the key's event there leaves first
                    rows = tiers.get(filed)
                    if rows is not None:
                        at = search(filed, k)
                        if at is not None:
                            leave(rows.pop(at), row)
                            count -= 1
                            if not rows:
                                drop_tier(filed)
            except Throws:
                posted[row] = False
                continue
            if count >= size and rank > ranks[-1]:
                leave(row, row)  # worse than the worst of a full window: in and out at once
            else:
                place(row)
                count += 1
                if unfiled[row]:
                    ledger.pop(k, None)
                else:
                    ledger[k] = rank
            while count > size:
                worst = ranks[-1]
                gone = tiers[worst].pop(0)
                ledger.pop(key[gone], None)
                count -= 1
                leave(gone, row)
                if not tiers[worst]:
                    drop_tier(worst)
        return (table.append_column("#out_seq", pa.array(out_seq, pa.int64()))
                .append_column("#out_time", pa.array(out_time, pa.int64()))
                .append_column("#posted", pa.array(posted, pa.bool_())))

    return kernel


POSTS = {Sort: sorted_window, Rank: ranked_window}
#: the state each window's future reads (`spark_impl.incremental`): the events each holds
HELD = {Sort: best, Rank: ranked_held}
