"""Keyed windows: CCL's `PRIMARY KEY (cols) KEEP ...` (apama-ccl.md §2.8), the
operation codes applied per key in seq order, with a retention policy over the
rows. The rules (strict under `KEEP ALL`, lax under a count or time policy;
what each code posts; errors as rows of the output) are stated in
oracle/windows/keyed.py; this module derives each from a key's operations.

Output rows: an insert posts the row (side `insert`) and, in the same update,
the rows its policy pushes out (side `remove`, oldest first); an update posts
the new row (side `update`); a delete posts the stored row, the key's latest
version (side `remove`, by that row's id); an error is one row of side `error`
whose `error` column holds the message (its `id` the rejected event's), and
changes nothing. The pipeline joins each posted row's properties by id.

**Strict, `KEEP ALL`**: nothing but a key's own operations changes it, so each
key is a two-state machine (held or not), and an operation's outcome is a
window function over the key's earlier operations, partitioned by (trace,
key) in seq order. Whatever state it meets, an `insert` or `upsert` leaves the
key held (a duplicate insert is an error that changes nothing: the key was
held), a `delete` or `safedelete` leaves it missing (a delete of a missing key
is an error: it was missing), and an `update` leaves it as it was. So "held
before operation k" is the last of those markers before k (`last(..,
ignorenulls)`, none: missing), and the row stored then is the last operation
before k that wrote one (an insert of a missing key, an update of a held key,
an upsert): a second window function over the first's result.

**Lax, a time policy** (`KEEP t`, `KEEP EVERY t`): every code is an upsert
(insert, update, upsert) or a safedelete (delete, safedelete), and a key's
row also leaves at its expiry: its insert's clock + t (sliding), or the end of
the `[k t, (k+1) t)` interval its insert arrived in (jumping; every row held
arrived in the interval the window's timer closes, `retention.py`). An update
keeps the row's age. The expiry of a row is before an operation of its key iff
the operation's clock reaches the due time (the timer due at an arrival's
clock fires first; any earlier item reaching it fired it before), so a key's
fate depends on its own operations and clocks alone, not on other keys.
Where an expiry fires (the item whose walk stops there, or the jump that
passes it) comes from `clock.hits`, as for every timed family; the rows of
one firing are one post, oldest first (pos: the insert's seq).

* Jumping: a row held at an operation began in the same interval, after the
  key's last delete. So a key's operations fall in segments, (interval,
  number of deletes before): the first upsert of a segment inserts, the
  others update, a delete (always its segment's last operation) removes the
  row iff an upsert came before it in the segment, posting the last one; a
  segment ending in an upsert expires at its interval's end. Window
  functions over (trace, key) in seq order (the deletes before), then over
  the segment (a finer partition of the same shuffle: one more sort).
* Sliding: a chain. Whether an upsert at clock c inserts depends on the
  insert that began the row it meets, at c - t or later, which depends on the
  ones before it (a greedy cover, as `#time_length_batch`'s cut): no bounded
  window function gives it. So each key's operations (one shuffle by
  (trace, key)) go through a small kernel (`_timed_kernel`, `applyInArrow`)
  that walks them once in seq order, holding one row; it emits the
  arrivals' posts and, for each row that expires, its due time, its insert's
  seq and the id of its latest version. Keys spread over the cluster.

**Lax, a count policy** (`KEEP n ROWS`, `SLACK`, `EVERY n ROWS`, each also
`PER(cols)`): a row is pushed out by the count of rows held in its group,
which a delete of any key in the group lowers ("a delete frees a place",
§3 point 14), and whether a later upsert of the pushed-out key inserts or
updates depends on that. So the state is one store per trace, sequential
across keys; under PER a key's row stays in the group its insert put it in,
whatever its later updates say, so the groups share the store too. Each
trace's events (one shuffle by trace) go through `_counted_kernel`, which
replays the store (key -> row) and, per group, the rows in insert order (an
`OrderedDict`: the oldest leave first, a delete takes a row out in O(1)), with
the policy's count rule (`retention.py`'s, applied to the rows held now):
`KEEP n ROWS` pushes out the oldest when an insert makes n + 1, `SLACK s` the
s oldest when it makes n + s, `EVERY n ROWS` all n held when an insert finds
n. A trace is one task: a keyed window under a count policy does not spread
one trace over the cluster (many traces, or a `PER` group, do not help it
either: the store is one).

Error messages name the operation and the key as the model states them:
`duplicate insert: the window holds key (k='A') already (row 'E1')`, `update
of a missing key (k=None)`, `delete of a missing key (...)`. Values are shown
as Python's `repr` shows them (strings quoted, null as None, booleans as
True/False, whole doubles as `2.0`); a double with an exponent, and a list
key (its JSON text), may be written differently from the oracle's message.
"""

from __future__ import annotations

from collections import OrderedDict

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.model import GroupWin, JumpingLength, JumpingTime, KeepAll, Keyed, Length, SlackLength, Time
from spark_impl import clock
from spark_impl.frames import JSON_TEXT
from spark_impl.windows import Context
from spark_impl.windows.base import ARRIVAL, events, quoted
from spark_impl.windows.time import TIMER

UPSERTS = ("insert", "update", "upsert")  # under a policy (lax) every one of these is an upsert
OP = "coalesce(op, 'insert')"  # no code: an insert


def keyed(items: DataFrame, spec: Keyed, ctx: Context) -> DataFrame:
    policy = spec.retention
    if isinstance(policy, KeepAll):
        return strict(items, spec, ctx)
    inner = policy.window if isinstance(policy, GroupWin) else policy
    if isinstance(inner, Time):
        return lax_timed(items, spec, inner, ctx)
    if isinstance(inner, JumpingTime):
        return lax_jumping(items, spec, inner, ctx)
    return lax_counted(items, spec, ctx)


POSTS = {Keyed: keyed}


def held(items: DataFrame, spec: Keyed, ctx: Context) -> DataFrame:
    """The state a keyed window's future reads (`spark_impl.incremental`):
    for each key whose row the window holds after `items`, the operation
    that inserted that row and the last one that wrote it (its latest
    version, which a later update, delete or push-out posts; its properties
    joined by its id). Replayed alone, the first inserts the row on a
    missing key (so it has the same insert seq, the same group under PER, the
    same due time) and the second updates it (it met the row held), so the
    resumed run holds the same rows; a key not held is missing in both runs.
    What each policy's rule says is held at the trace's clock C (its items'
    latest time; a row whose expiry is at or before C left in the unit of the
    first item reaching it, at or before the cut):

    * `KEEP ALL`: the last of the key's markers says it is held
      (`strict`); its row began at the last insert or upsert of a missing
      key, and was last written by the last write.
    * `KEEP EVERY t`: the key's last operation is an upsert and its
      segment's interval ends after C; the row began at the segment's first
      upsert. The resumed run counts the key's deletes from 0, one offset for
      all its later operations, so its segments are the same.
    * `KEEP t` and the count policies: as their kernels walk the operations
      (`_timed_kernel`, per key, the row held at the end if its due time is
      after C; `_counted_kernel`, per trace, the rows of its store at the
      end). A count policy's store holds fewer rows than make a push-out
      (at most n + s - 1; `EVERY n ROWS` at most n, where the next insert
      purges), so replaying its rows' inserts pushes nothing out."""
    policy = spec.retention
    inner = policy.window if isinstance(policy, GroupWin) else policy
    if isinstance(policy, KeepAll):
        seqs = _strict_held(items, spec)
    elif isinstance(inner, JumpingTime):
        seqs = _jumping_held(items, spec, inner)
    elif isinstance(inner, Time):
        keys = [quoted(k) for k in spec.keys]
        ops = events(items).selectExpr("trace_id", *keys, "seq", "time", "id", f"{OP} AS op")
        rows = ops.groupBy("trace_id", *spec.keys).applyInArrow(_timed_kernel(inner.span, state_only=True), _HELD_SCHEMA)
        clocks = items.groupBy("trace_id").agg(F.max("time").alias("#clock"))
        seqs = rows.join(F.broadcast(clocks), "trace_id").where(f"{quoted(clock.DUE)} > `#clock`") \
            .select("trace_id", "seq")
    else:
        per = policy.keys if isinstance(policy, GroupWin) else ()
        columns = [f"{quoted(k)} AS `#k{n}`" for n, k in enumerate(spec.keys)]
        columns += [f"{quoted(g)} AS `#g{n}`" for n, g in enumerate(per)]
        ops = events(items).selectExpr("trace_id", "seq", "time", "id", f"{OP} AS op", *columns)
        kernel = _counted_kernel(inner, len(spec.keys), len(per), state_only=True)
        seqs = ops.groupBy("trace_id").applyInArrow(kernel, _COUNTED_SCHEMA).select("trace_id", "seq")
    return events(items).join(seqs.distinct(), ["trace_id", "seq"], "left_semi")


def _strict_held(items: DataFrame, spec: Keyed) -> DataFrame:
    """`KEEP ALL`'s kept operations (`held`): (trace_id, seq)."""
    keys = ", ".join(quoted(k) for k in spec.keys)
    key = f"PARTITION BY trace_id, {keys}"
    before = f"OVER ({key} ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    marker = ("CASE WHEN `#op` IN ('insert', 'upsert') THEN true "
              "WHEN `#op` IN ('delete', 'safedelete') THEN false END")
    writes = "(`#op` = 'upsert' OR (`#op` = 'insert' AND NOT `#held`) OR (`#op` = 'update' AND `#held`))"
    ops = events(items).selectExpr("trace_id", "seq", *(quoted(k) for k in spec.keys), f"{OP} AS `#op`")
    marked = ops.selectExpr("*", f"coalesce(last({marker}, true) {before}, false) AS `#held`")
    looked = marked.selectExpr(
        "trace_id", "seq",
        f"max_by(coalesce({marker}, `#held`), seq) OVER ({key}) AS `#held_at_end`",
        f"max(CASE WHEN NOT `#held` AND `#op` IN ('insert', 'upsert') THEN seq END) OVER ({key}) AS `#began`",
        f"max(CASE WHEN {writes} THEN seq END) OVER ({key}) AS `#written`")
    return looked.where("`#held_at_end` AND (seq = `#began` OR seq = `#written`)").select("trace_id", "seq")


def _jumping_held(items: DataFrame, spec: Keyed, policy: JumpingTime) -> DataFrame:
    """`KEEP EVERY t`'s kept operations (`held`): (trace_id, seq)."""
    keys = ", ".join(quoted(k) for k in spec.keys)
    span = policy.span
    upsert = f"`#op` IN ({', '.join(repr(code) for code in UPSERTS)})"
    by_key = f"OVER (PARTITION BY trace_id, {keys} ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    ops = events(items).selectExpr("trace_id", "seq", "time", *(quoted(k) for k in spec.keys), f"{OP} AS `#op`")
    segmented = ops.selectExpr(
        "*", f"{clock.floor_div('time', span)} AS `#interval`",
        f"coalesce(sum(CASE WHEN NOT {upsert} THEN 1 END) {by_key}, 0) AS `#deletes`")
    key = f"PARTITION BY trace_id, {keys}"
    last = segmented.selectExpr(
        "*", f"max_by(named_struct('interval', `#interval`, 'deletes', `#deletes`, 'upsert', {upsert}), seq) "
             f"OVER ({key}) AS `#end`")
    clocks = items.groupBy("trace_id").agg(F.max("time").alias("#clock"))
    ended = last.join(F.broadcast(clocks), "trace_id").where(
        f"`#end`.upsert AND `#interval` = `#end`.interval AND `#deletes` = `#end`.deletes "
        f"AND (`#interval` + 1) * {span} > `#clock`")
    # the rows left are one segment per key: its first upsert began the row, its last wrote it
    return ended.selectExpr(
        "trace_id", "seq", f"min(seq) OVER ({key}) AS `#first`", f"max(seq) OVER ({key}) AS `#last`") \
        .where("seq = `#first` OR seq = `#last`").select("trace_id", "seq")


HELD = {Keyed: held}


def _at_arrival(rows: DataFrame, side: str, id_: str, error: str = "CAST(NULL AS STRING)", pos: str = "0") -> DataFrame:
    """Post rows of the contract (and `error`) at each row's own arrival."""
    return rows.selectExpr(
        "trace_id", "seq", f"{ARRIVAL} AS phase", "time", "time AS slot_due", "CAST(0 AS BIGINT) AS slot",
        f"{side} AS side", f"CAST({pos} AS BIGINT) AS pos", f"{id_} AS id", f"{error} AS error",
    )


# --------------------------------------------------------------------------- strict


def strict(items: DataFrame, spec: Keyed, ctx: Context) -> DataFrame:
    keys = [quoted(k) for k in spec.keys]
    before = (f"OVER (PARTITION BY trace_id, {', '.join(keys)} ORDER BY seq "
              "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
    marker = ("CASE WHEN `#op` IN ('insert', 'upsert') THEN true "
              "WHEN `#op` IN ('delete', 'safedelete') THEN false END")
    writes = "(`#op` = 'upsert' OR (`#op` = 'insert' AND NOT `#held`) OR (`#op` = 'update' AND `#held`))"
    ops = events(items).selectExpr("trace_id", "seq", "time", "id", *keys, f"{OP} AS `#op`")
    held = ops.selectExpr("*", f"coalesce(last({marker}, true) {before}, false) AS `#held`")
    stored = held.selectExpr("*", f"last(CASE WHEN {writes} THEN id END, true) {before} AS `#stored`")
    side = ("CASE `#op` WHEN 'insert' THEN CASE WHEN `#held` THEN 'error' ELSE 'insert' END "
            "WHEN 'update' THEN CASE WHEN `#held` THEN 'update' ELSE 'error' END "
            "WHEN 'upsert' THEN CASE WHEN `#held` THEN 'update' ELSE 'insert' END "
            "WHEN 'delete' THEN CASE WHEN `#held` THEN 'remove' ELSE 'error' END "
            "WHEN 'safedelete' THEN CASE WHEN `#held` THEN 'remove' END END")
    fields = {f.name: f for f in items.schema.fields}
    shown = _shown_key([fields[k] for k in spec.keys])
    message = (F.when(F.col("`#op`") == "insert",
                      F.concat(F.lit("duplicate insert: the window holds key "), shown, F.lit(" already (row "),
                               _repr(F.col("`#stored`"), T.StringType()), F.lit(")")))
               .when(F.col("`#op`") == "update", F.concat(F.lit("update of a missing key "), shown))
               .otherwise(F.concat(F.lit("delete of a missing key "), shown)))
    sided = stored.selectExpr("*", f"{side} AS side").where("side IS NOT NULL")
    sided = sided.select("*", F.when(F.col("side") == "error", message).alias("#error"))
    return _at_arrival(sided, "side", "CASE WHEN side = 'remove' THEN `#stored` ELSE id END", "`#error`")


def _shown_key(fields: list[T.StructField]) -> Column:
    """The key as the model's messages show it: `(name=repr, ...)`."""
    parts: list[Column] = [F.lit("(")]
    for n, f in enumerate(fields):
        parts += [F.lit(("" if n == 0 else ", ") + f.name + "="), _repr(F.col(quoted(f.name)), f.dataType,
                                                                        bool(f.metadata.get(JSON_TEXT)))]
    return F.concat(*parts, F.lit(")"))


def _repr(c: Column, dtype: T.DataType, json_text: bool = False) -> Column:
    """Python's `repr` of a column value (module docstring: what differs)."""
    if isinstance(dtype, T.StringType) and not json_text:
        escaped = c
        for plain, shown in (("\\", "\\\\"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
            escaped = F.replace(escaped, F.lit(plain), F.lit(shown))
        double = F.concat(F.lit('"'), escaped, F.lit('"'))
        single = F.concat(F.lit("'"), F.replace(escaped, F.lit("'"), F.lit("\\'")), F.lit("'"))
        shown = F.when((F.instr(c, "'") > 0) & (F.instr(c, '"') == 0), double).otherwise(single)
    elif isinstance(dtype, T.BooleanType):
        shown = F.when(c, F.lit("True")).otherwise(F.lit("False"))
    elif isinstance(dtype, (T.DoubleType, T.FloatType)):
        whole = (c == F.floor(c)) & (F.abs(c) < 1e16)
        shown = (F.when(F.isnan(c), F.lit("nan")).when(c == float("inf"), F.lit("inf"))
                 .when(c == float("-inf"), F.lit("-inf"))
                 .when(whole, F.concat(c.cast("decimal(17,0)").cast("string"), F.lit(".0")))
                 .otherwise(c.cast("string")))
    else:
        shown = c.cast("string")
    return F.when(c.isNull(), F.lit("None")).otherwise(shown)


# --------------------------------------------------------------------------- lax, a time policy


_TIMED_SCHEMA = T.StructType([
    T.StructField("trace_id", T.StringType()), T.StructField("seq", T.LongType()),
    T.StructField("time", T.LongType()), T.StructField("side", T.StringType()),
    T.StructField("pos", T.LongType()), T.StructField("id", T.StringType()),
    T.StructField(clock.DUE, T.LongType()),
])


def lax_timed(items: DataFrame, spec: Keyed, policy: Time, ctx: Context) -> DataFrame:
    keys = [quoted(k) for k in spec.keys]
    ops = events(items).selectExpr("trace_id", *keys, "seq", "time", "id", f"{OP} AS op")
    posted = ops.groupBy("trace_id", *spec.keys).applyInArrow(_timed_kernel(policy.span), _TIMED_SCHEMA)
    at_arrival = _at_arrival(posted.where("seq IS NOT NULL"), "side", "id", pos="pos")
    expiring = posted.where("seq IS NULL").select("trace_id", clock.DUE, "pos", "id")
    return at_arrival.unionByName(_expiries(items, expiring, policy.span, ctx))


def lax_jumping(items: DataFrame, spec: Keyed, policy: JumpingTime, ctx: Context) -> DataFrame:
    keys = ", ".join(quoted(k) for k in spec.keys)
    span = policy.span
    upsert = f"`#op` IN ({', '.join(repr(code) for code in UPSERTS)})"
    by_key = f"OVER (PARTITION BY trace_id, {keys} ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    ops = events(items).selectExpr("trace_id", "seq", "time", "id", *(quoted(k) for k in spec.keys), f"{OP} AS `#op`")
    segmented = ops.selectExpr(
        "*", f"{clock.floor_div('time', span)} AS `#interval`",
        f"coalesce(sum(CASE WHEN NOT {upsert} THEN 1 END) {by_key}, 0) AS `#deletes`")
    segment = f"PARTITION BY trace_id, {keys}, `#interval`, `#deletes` ORDER BY seq"
    before = f"OVER ({segment} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    looked = segmented.selectExpr(
        "*", f"count(CASE WHEN {upsert} THEN 1 END) {before} > 0 AS `#held`",
        f"last(CASE WHEN {upsert} THEN id END, true) {before} AS `#stored`",
        f"min(CASE WHEN {upsert} THEN seq END) OVER ({segment} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS `#start`",
        f"lead(seq) OVER ({segment}) IS NULL AS `#last`")
    side = (f"CASE WHEN {upsert} THEN CASE WHEN `#held` THEN 'update' ELSE 'insert' END "
            "WHEN `#held` THEN 'remove' END")
    sided = looked.selectExpr("*", f"{side} AS side").where("side IS NOT NULL")
    at_arrival = _at_arrival(sided, "side", "CASE WHEN side = 'remove' THEN `#stored` ELSE id END")
    expiring = looked.where(f"`#last` AND {upsert}").selectExpr(
        "trace_id", f"(`#interval` + 1) * {span} AS {quoted(clock.DUE)}", "`#start` AS pos", "id")
    return at_arrival.unionByName(_expiries(items, expiring, span, ctx))


def _expiries(items: DataFrame, expiring: DataFrame, span: int, ctx: Context) -> DataFrame:
    """Post rows removing each expiring row (`trace_id`, `#due`, `pos`: its
    insert's seq, `id`: its latest version) in the unit of the first item
    reaching its due time (`clock.hits`), at the due time on a walk, at the
    target on a jump; one firing's rows by (due, insert)."""
    due, hit = quoted(clock.DUE), quoted(clock.HIT)
    found = clock.hits(items, expiring, reach=span, jumps=ctx.jumps).where(f"{hit} IS NOT NULL")
    return found.selectExpr(
        "trace_id", f"{hit}.seq AS seq", f"{TIMER} AS phase", f"{clock.fire_time(hit, due)} AS time",
        f"{due} AS slot_due", "CAST(0 AS BIGINT) AS slot", "'remove' AS side", "pos", "id",
        "CAST(NULL AS STRING) AS error")


#: `held`'s rows of a kernel: an operation to keep, and (`KEEP t`) the due time of the row it wrote
_HELD_SCHEMA = T.StructType([T.StructField("trace_id", T.StringType()), T.StructField("seq", T.LongType()),
                             T.StructField(clock.DUE, T.LongType())])


def _timed_kernel(span: int, *, state_only: bool = False):
    """The grouped-map function over one key's operations (module docstring):
    rows `(seq, time, side, pos, id)` posted at arrivals, and `(#due, pos, id)`
    for each row that expires, `pos` its insert's seq. `state_only`: instead, the
    row held at the end, as its insert's and its last write's seqs, each with
    its due time (`_HELD_SCHEMA`)."""

    def kernel(table):
        import pyarrow as pa

        seq, time, op, ids = (table.column(c).to_pylist() for c in ("seq", "time", "op", "id"))
        trace_id = table.column("trace_id")[0].as_py()
        out: dict[str, list] = {"seq": [], "time": [], "side": [], "pos": [], "id": [], clock.DUE: []}

        def emit(at_seq, at_time, side, pos, id_, due=None):
            for name, value in (("seq", at_seq), ("time", at_time), ("side", side), ("pos", pos), ("id", id_),
                                (clock.DUE, due)):
                out[name].append(value)

        row = None  # the key's row held now: [its insert's seq, its due time, its latest version's id, its seq]
        for r in sorted(range(table.num_rows), key=seq.__getitem__):
            if row is not None and time[r] >= row[1]:  # it expired before this operation
                emit(None, None, "remove", row[0], row[2], row[1])
                row = None
            if op[r] in UPSERTS:
                if row is None:
                    row = [seq[r], time[r] + span, ids[r], seq[r]]
                    emit(seq[r], time[r], "insert", 0, ids[r])
                else:
                    row[2], row[3] = ids[r], seq[r]
                    emit(seq[r], time[r], "update", 0, ids[r])
            elif row is not None:  # a delete or safedelete of the held row
                emit(seq[r], time[r], "remove", 0, row[2])
                row = None
        if state_only:
            kept = [] if row is None else [row[0], row[3]]
            return pa.table({"trace_id": pa.array([trace_id] * len(kept), pa.string()),
                             "seq": pa.array(kept, pa.int64()),
                             clock.DUE: pa.array([row[1]] * len(kept) if kept else [], pa.int64())})
        if row is not None:
            emit(None, None, "remove", row[0], row[2], row[1])
        n = len(out["side"])
        return pa.table({
            "trace_id": pa.array([trace_id] * n, pa.string()), "seq": pa.array(out["seq"], pa.int64()),
            "time": pa.array(out["time"], pa.int64()), "side": pa.array(out["side"], pa.string()),
            "pos": pa.array(out["pos"], pa.int64()), "id": pa.array(out["id"], pa.string()),
            clock.DUE: pa.array(out[clock.DUE], pa.int64()),
        })

    return kernel


# --------------------------------------------------------------------------- lax, a count policy


_COUNTED_SCHEMA = T.StructType([
    T.StructField("trace_id", T.StringType()), T.StructField("seq", T.LongType()),
    T.StructField("time", T.LongType()), T.StructField("side", T.StringType()),
    T.StructField("pos", T.LongType()), T.StructField("id", T.StringType()),
])


def lax_counted(items: DataFrame, spec: Keyed, ctx: Context) -> DataFrame:
    policy = spec.retention
    per = policy.keys if isinstance(policy, GroupWin) else ()
    inner = policy.window if isinstance(policy, GroupWin) else policy
    columns = [f"{quoted(k)} AS `#k{n}`" for n, k in enumerate(spec.keys)]
    columns += [f"{quoted(g)} AS `#g{n}`" for n, g in enumerate(per)]
    ops = events(items).selectExpr("trace_id", "seq", "time", "id", f"{OP} AS op", *columns)
    kernel = _counted_kernel(inner, len(spec.keys), len(per))
    posted = ops.groupBy("trace_id").applyInArrow(kernel, _COUNTED_SCHEMA)
    return _at_arrival(posted, "side", "id", pos="pos")


def _counted_kernel(policy: Length | SlackLength | JumpingLength, n_keys: int, n_groups: int, *,
                   state_only: bool = False):
    """The grouped-map function over one trace's operations (module docstring):
    one row `(seq, time, side, pos, id)` per posted row, all at arrivals.
    `state_only`: instead, for each row of the store at the end, its
    insert's seq and its last write's (the other columns null)."""
    size = policy.size
    slack = policy.slack if isinstance(policy, SlackLength) else 1
    jumping = isinstance(policy, JumpingLength)

    def kernel(table):
        import pyarrow as pa

        seq, time, op, ids = (table.column(c).to_pylist() for c in ("seq", "time", "op", "id"))
        key_columns = [table.column(f"#k{n}").to_pylist() for n in range(n_keys)]
        group_columns = [table.column(f"#g{n}").to_pylist() for n in range(n_groups)]
        trace_id = table.column("trace_id")[0].as_py()
        out: dict[str, list] = {"seq": [], "time": [], "side": [], "pos": [], "id": []}
        store: dict[tuple, list] = {}  # key -> [its insert's seq, its group, its latest version's id, its seq]
        groups: dict[tuple, OrderedDict] = {}  # group -> its rows' insert seqs -> keys, oldest first

        for r in sorted(range(table.num_rows), key=seq.__getitem__):
            key = tuple(c[r] for c in key_columns)

            def emit(side, pos, id_):
                for name, value in (("seq", seq[r]), ("time", time[r]), ("side", side), ("pos", pos), ("id", id_)):
                    out[name].append(value)

            row = store.get(key)
            if op[r] not in UPSERTS:  # a delete or safedelete: of a held key, the stored row leaves
                if row is not None:
                    del store[key]
                    del groups[row[1]][row[0]]
                    emit("remove", 0, row[2])
                continue
            if row is not None:
                row[2], row[3] = ids[r], seq[r]
                emit("update", 0, ids[r])
                continue
            group = tuple(c[r] for c in group_columns)
            held = groups.setdefault(group, OrderedDict())
            pushed = []
            if jumping and len(held) >= size:
                pushed, held = list(held.values()), OrderedDict()
                groups[group] = held
            held[seq[r]] = key
            store[key] = [seq[r], group, ids[r], seq[r]]
            if not jumping and len(held) >= size + slack:
                pushed = [held.popitem(last=False)[1] for _ in range(slack)]
            emit("insert", 0, ids[r])
            for n, gone in enumerate(pushed):
                emit("remove", n, store.pop(gone)[2])
        if state_only:
            out = {"seq": sorted({s for row in store.values() for s in (row[0], row[3])})}
            out.update({name: [None] * len(out["seq"]) for name in ("time", "side", "pos", "id")})
        n = len(out["seq"])
        return pa.table({
            "trace_id": pa.array([trace_id] * n, pa.string()), "seq": pa.array(out["seq"], pa.int64()),
            "time": pa.array(out["time"], pa.int64()), "side": pa.array(out["side"], pa.string()),
            "pos": pa.array(out["pos"], pa.int64()), "id": pa.array(out["id"], pa.string()),
        })

    return kernel
