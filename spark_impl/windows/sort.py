"""`#sort(n, criteria)` as one window function, and `#rank(keys, n, criteria)`
as a compiled loop per sub-window (esper.md §3; seed 14.3.19, 14.3.20).

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
`min_by(seq, seq, n)` (and `min_by(time, seq, n)`, their clocks) over the
frame from the first row to the row before gives the `n` earliest of them,
and the last of those is the arrival that pushes `e` out. One shuffle by sub-window, one sort, one window
whose aggregate keeps `n` rows: the bare plan's shape. Each arrival pushes out
at most one event, so a removal is the only row of its side.

`#rank`: an arrival replaces the event held under its unique key, or, if its
key is not held, may push out the worst. Which keys are held depends on every
earlier push-out, and which event is pushed out depends on the keys held: no
order of the events gives the answer to a running aggregate, so the state is
truly sequential. Each sub-window's events (one shuffle by sub-window, one
sort by sub-window and seq) go through a loop over the events in seq order
(`_rank_books`), compiled (`spark_impl.compiled`: its steps run once per
event), over each partition's rows in chunks of
whole sub-windows (`mapInArrow`; only the columns the posts read go through
Arrow). The loop compares integers only: the criteria and the unique keys are
first replaced by their dense rank within the sub-window (`dense_ranks`, an
Arrow sort of the chunk: SQL's ordering, nulls first ascending, last
descending, NaN above every number; equal keys, nulls included, share a
rank: Spark's `dense_rank()`, which a nested column, which Arrow cannot sort,
takes instead). It adds to each event the arrival that removed it (replaced, pushed
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

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from oracle.model import Rank, Sort
from spark_impl.compiled import jit, whole_runs
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, constant_columns, events, quoted


def _order(spec: Sort) -> str:
    return ", ".join(f"{quoted(c.property)} DESC NULLS LAST" if c.descending else f"{quoted(c.property)} ASC NULLS FIRST"
                     for c in spec.criteria)


def sorted_window(items: DataFrame, spec: Sort, ctx: Context) -> DataFrame:
    partition = ", ".join(quoted(c) for c in ctx.partition)
    better = (f"OVER (PARTITION BY {partition} ORDER BY {_order(spec)}, seq DESC "
              "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
    # the n earliest better arrivals' seqs and, in the same order, their clocks: two arrays of longs
    # (one array of (seq, time) structs cost 0.3 s more per 2 M events, measured)
    ranked = events(items).selectExpr(
        "*", f"min_by(seq, seq, {spec.size}) {better} AS `#better`", f"min_by(time, seq, {spec.size}) {better} AS `#at`"
    )
    # the n-th better arrival (the latest of the n earliest), or the event's own if it came later
    pusher = (f"CASE WHEN size(`#better`) = {spec.size} THEN greatest(named_struct('seq', element_at(`#better`, -1), "
              "'time', element_at(`#at`, -1)), named_struct('seq', seq, 'time', time)) END")
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
    removed = _ranked(items, spec, ctx, carried=items.columns)
    partition = ", ".join(quoted(c) for c in ctx.partition)
    columns = [quoted(c) for c in items.columns]
    return removed.selectExpr(
        *columns, "`#out_seq`", "`#posted`",
        f"max(`#s_unfiled` OR `#u_null`) OVER (PARTITION BY {partition}) AS `#apart`") \
        .where("`#apart` OR (`#out_seq` IS NULL AND `#posted`)").selectExpr(*columns)


def _ranked(items: DataFrame, spec: Rank, ctx: Context, carried: list[str] | None = None) -> DataFrame:
    """Each event of `items` with the kernel's `#out_seq`, `#out_time` (the
    arrival that removed it, null while held) and `#posted`, its columns
    `carried` (default: those the posts read; every column goes through
    Arrow to the kernel and back, a string's cost the most, but the one
    trace's id, `Context.one_trace`, put back after)."""
    if carried is None:
        carried = list(dict.fromkeys([*ctx.partition, "seq", "time", "id", *ctx.properties]))
    partition = ", ".join(quoted(c) for c in ctx.partition)
    one_sort = f"{quoted(spec.criteria[0].property)} IS NULL" if len(spec.criteria) == 1 else "false"
    one_key = f"{quoted(spec.keys[0])} IS NULL" if len(spec.keys) == 1 else "false"
    arrived = events(items)
    # a nested column (a struct, an array, a map) has no Arrow sort: its order is ranked by Spark first
    nested = {f.name for f in arrived.schema.fields if not isinstance(f.dataType, T.AtomicType)}
    by_spark = [c for c in dict.fromkeys([*(c.property for c in spec.criteria), *spec.keys]) if c in nested]
    ranked_columns = {c: f"#rank_{i}" for i, c in enumerate(by_spark)}
    prepared = arrived.selectExpr(
        "*", f"{one_sort} AS `#s_unfiled`", f"{one_key} AS `#u_null`",
        *(f"dense_rank() OVER (PARTITION BY {partition} ORDER BY {quoted(c)} ASC NULLS FIRST) AS {quoted(r)}"
          for c, r in ranked_columns.items()))
    criteria = [(ranked_columns.get(c.property, c.property), c.descending) for c in spec.criteria]
    keys = [(ranked_columns.get(k, k), False) for k in spec.keys]
    # the window sorts each partition by (sub-window, seq), as the kernel reads it (the sort
    # asked for after it is that order already: Spark plans none), and marks each sub-window's first row
    ordered = prepared.selectExpr("*", f"row_number() OVER (PARTITION BY {partition} ORDER BY seq) = 1 AS `#first`") \
        .sortWithinPartitions(*(quoted(c) for c in ctx.partition), "seq")
    # the one trace's id (an event table's), the same on every row, stays in the JVM
    constants = {"trace_id": ctx.one_trace} if ctx.one_trace is not None else {}
    kept = [*(c for c in carried if c not in constants), "#s_unfiled", "#u_null"]
    ordered = ordered.select(*(quoted(c) for c in dict.fromkeys([*kept, *(name for name, _ in criteria + keys), "#first"])))
    fields = {f.name: f for f in prepared.schema.fields}
    schema = T.StructType([*(fields[c] for c in kept), T.StructField("#out_seq", T.LongType()),
                           T.StructField("#out_time", T.LongType()), T.StructField("#posted", T.BooleanType())])
    return ordered.mapInArrow(_rank_scan(spec.size, kept, criteria, keys), schema) \
        .selectExpr("*", *constant_columns(constants))


#: rows a kernel call takes at once (whole sub-windows)
CHUNK_ROWS = 1_000_000


def last_first(table) -> int:
    """The row where the last sub-window of `table` (rows with `#first`) begins."""
    import numpy as np

    return int(np.flatnonzero(np.asarray(table.column("#first").to_numpy(zero_copy_only=False), bool))[-1])


def _rank_scan(size: int, columns: list[str], criteria: list[tuple[str, bool]], keys: list[tuple[str, bool]]):
    """The `mapInArrow` function: chunks of whole sub-windows, their sort and
    key ranks (`dense_ranks`), through `_rank_books`."""

    def books(table):
        import numpy as np
        import pyarrow as pa

        def flags(name):
            return np.asarray(table.column(name).to_numpy(zero_copy_only=False), np.bool_)

        def ints(name):
            return np.asarray(table.column(name).to_numpy(zero_copy_only=False), np.int64)

        n = table.num_rows
        first = flags("#first")
        sub = np.cumsum(first) - 1
        out_seq, out_time = np.zeros(n, np.int64), np.zeros(n, np.int64)
        removed, posted = np.zeros(n, np.bool_), np.ones(n, np.bool_)
        _rank_books(first, ints("seq"), ints("time"), dense_ranks(table, sub, criteria), dense_ranks(table, sub, keys),
                    flags("#s_unfiled"), flags("#u_null"), size, out_seq, out_time, removed, posted)
        return pa.Table.from_arrays(
            [*(table.column(c) for c in columns), pa.array(out_seq, mask=~removed), pa.array(out_time, mask=~removed),
             pa.array(posted)], names=[*columns, "#out_seq", "#out_time", "#posted"])

    def kernel(batches):
        for table in whole_runs(batches, last_first, CHUNK_ROWS):
            yield from books(table).to_batches()

    return kernel


def dense_ranks(table, sub, order: list[tuple[str, bool]]):
    """Each row's `dense_rank()` within its sub-window (`sub`, rising) by the
    columns `order` (name, descending), as Spark's window function gives it:
    SQL's ordering (nulls first ascending, last descending, NaN above every
    number) and its equality (nulls equal, NaN equal to NaN, -0.0 to 0.0);
    ranks from 1."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    arrays, sort_keys, compared = {"#sub": pa.array(sub)}, [("#sub", "ascending")], []
    for i, (name, descending) in enumerate(order):
        column = table.column(name).combine_chunks()
        direction = "descending" if descending else "ascending"
        # a null below every value both ways, NaN above every number: keys of their own ahead of the value
        arrays[f"v{i}"] = pc.is_valid(column)
        sort_keys.append((f"v{i}", direction))
        if pa.types.is_floating(column.type):
            arrays[f"nan{i}"] = pc.fill_null(pc.is_nan(column), False)
            sort_keys.append((f"nan{i}", direction))
        arrays[f"x{i}"] = column
        sort_keys.append((f"x{i}", direction))
        compared.append(column)
    at = pc.sort_indices(pa.table(arrays), sort_keys=sort_keys)
    sorted_sub = sub[at.to_numpy()]
    new = np.ones(n, np.bool_)
    if n > 1:
        same = sorted_sub[1:] == sorted_sub[:-1]
        for column in compared:
            values = column.take(at)
            before, after = values.slice(0, n - 1), values.slice(1)
            equal = pc.equal(before, after)
            if pa.types.is_floating(column.type):
                equal = pc.or_kleene(equal, pc.and_(pc.is_nan(before), pc.is_nan(after)))
            both_null = pc.and_(pc.is_null(before), pc.is_null(after))
            same &= np.asarray(pc.fill_null(pc.or_kleene(equal, both_null), False).to_numpy(zero_copy_only=False))
        new[1:] = ~same
    running = np.cumsum(new)
    starts = np.flatnonzero(np.r_[True, sorted_sub[1:] != sorted_sub[:-1]]) if n else np.empty(0, np.int64)
    base = np.repeat(running[starts], np.diff(np.r_[starts, n]))  # the rank of each sub-window's first row
    ranks = np.empty(n, np.int64)
    ranks[at.to_numpy()] = running - base + 1
    return ranks


@jit
def _rank_books(first, seq, time, tier, key, unfiled, null_key, size, out_seq, out_time, removed, posted):
    """Esper's books for `#rank` (module docstring), over rows sorted by
    sub-window and seq (`first`: a sub-window's first row). Per row: the
    arrival that removed it (`out_seq`, `out_time` where `removed`), and
    whether its arrival was posted. `tier` and `key` are the row's sort and
    unique ranks (from 1). Each sub-window's tiers are kept as the rows they
    hold, in the order they entered (`held`, with each row's tier): a tier's
    rows in arrival order are its entries in that order, the worst tier is
    the highest rank held; at most `size` + 1 rows are held but for the
    arrivals a stale ledger entry puts in a list tier beside the count."""
    n = seq.shape[0]
    start = 0
    while start < n:
        end = start + 1
        while end < n and not first[end]:
            end += 1
        length = end - start
        top_tier, top_key = 0, 0
        for i in range(start, end):
            top_tier = max(top_tier, tier[i])
            top_key = max(top_key, key[i])
        is_list = np.zeros(top_tier + 1, np.bool_)
        ledger = np.zeros(top_key + 1, np.int64)  # key -> the tier its event went to; 0: none (ranks start at 1)
        held = np.empty(length + 1, np.int64)  # the rows in the tiers, in the order they entered
        held_tier = np.empty(length + 1, np.int64)
        h = 0
        count = 0
        for i in range(start, end):
            k, r = key[i], tier[i]
            filed = ledger[k]
            if filed != 0:
                # the tier's row of key k: its place in `held`, -1 none found, -2 the search throws
                first_at, at, found_tier = -1, -1, False
                for j in range(h):
                    if held_tier[j] == filed:
                        found_tier = True
                        if not is_list[filed]:
                            at = j
                            break
                        if null_key[held[j]]:
                            at = -2
                            break
                        if key[held[j]] == k:
                            at = j
                            break
                if found_tier and at == -2:
                    posted[i] = False
                    continue
                if filed == r:
                    if found_tier:
                        if not is_list[r]:
                            gone = held[at]
                            out_seq[gone], out_time[gone], removed[gone] = seq[i], time[i], True
                            held[at] = i
                        else:
                            if at >= 0:
                                gone = held[at]
                                out_seq[gone], out_time[gone], removed[gone] = seq[i], time[i], True
                                for j in range(at, h - 1):
                                    held[j], held_tier[j] = held[j + 1], held_tier[j + 1]
                                h -= 1
                            held[h], held_tier[h] = i, r
                            h += 1
                    continue
                if found_tier and at >= 0:
                    gone = held[at]
                    out_seq[gone], out_time[gone], removed[gone] = seq[i], time[i], True
                    for j in range(at, h - 1):
                        held[j], held_tier[j] = held[j + 1], held_tier[j + 1]
                    h -= 1
                    count -= 1
                    still = False
                    for j in range(h):
                        if held_tier[j] == filed:
                            still = True
                            break
                    if not still:
                        is_list[filed] = False
            worst = 0
            for j in range(h):
                worst = max(worst, held_tier[j])
            if count >= size and r > worst:
                out_seq[i], out_time[i], removed[i] = seq[i], time[i], True
            else:
                same = 0
                for j in range(h):
                    if held_tier[j] == r:
                        same += 1
                held[h], held_tier[h] = i, r
                h += 1
                if same == 0:
                    is_list[r] = False
                elif same == 1:
                    is_list[r] = True
                count += 1
                ledger[k] = 0 if unfiled[i] else r
            while count > size:
                worst = 0
                for j in range(h):
                    worst = max(worst, held_tier[j])
                at = 0
                while held_tier[at] != worst:
                    at += 1
                gone = held[at]
                for j in range(at, h - 1):
                    held[j], held_tier[j] = held[j + 1], held_tier[j + 1]
                h -= 1
                ledger[key[gone]] = 0
                count -= 1
                out_seq[gone], out_time[gone], removed[gone] = seq[i], time[i], True
                still = False
                for j in range(h):
                    if held_tier[j] == worst:
                        still = True
                        break
                if not still:
                    is_list[worst] = False
        start = end


POSTS = {Sort: sorted_window, Rank: ranked_window}
#: the state each window's future reads (`spark_impl.incremental`): the events each holds
HELD = {Sort: best, Rank: ranked_held}
