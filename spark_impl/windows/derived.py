"""Derived-value windows (`#size`, `#uni`, `#linest`, `#correl`,
`#weighted_avg`; esper.md §7): set-oriented running statistics over the
source's own posts.

The source (a data window, an intersection or a union) runs as its own
family over the same items; without one, every event is a post row of its
own arrival. Each unit of work of the source is one call of the derived view
(the sources built here post at most once per unit; `check` refuses an
intersection or union with two members or more that post on timers, where a
unit may hold several posts). Over one trace, in update order and, within
a unit, inserted rows before removed rows (Esper adds the new points first),
each in the source's posting order:

* A point is a row whose statistic's properties are all not null: it counts
  +1 inserted, -1 removed; `#size` counts every row.
* The running count is a running SUM held at 0 from below: `BaseStatisticsBean`
  sets the count to 0 when a removal takes it to 0 or below, which happens when
  an intersection posts as removed an arrival it never inserted. A sum floored
  at 0 is the plain running sum S less the lowest min(0, S) met so far.
* `BaseStatisticsBean` resets every sum
  to exactly 0 when a removal takes the count to 0 or below, so the rows are cut into
  segments after each such removal, and the sums (x, x², y, y², xy: a
  removed point adds the negated terms) are running SUMs per segment, 0 on
  the resetting row itself. A running SUM over `ROWS UNBOUNDED PRECEDING`
  adds the rows one by one in order, so the doubles are the same as the
  oracle's, bit for bit. `#weighted_avg` keeps its own sums
  (`WeightedAverageView`), never reset to 0, NaN before the first point, and
  restarted by a point added while sum(x*w) is NaN: see below.
* A post's values are the state after its last row; its additional
  properties are those of the last inserted row of the latest post with
  one (carried forward with `last(..., true)`); before it, the named ones are
  null and `*` adds none.
* A post gives a new row (its values) and an old row (the row given before;
  the first time, the values before the post). `#size` gives rows only for
  posts that change the count. The rows of a unit's posts are one update, in
  posting order.

How: the state is sums, whose running values window functions give
directly; only the reset needs care, and a reset happens exactly where the
running count returns to 0, a fact each row computes from the count alone.
But the sums run over a whole sub-window in update order (an ungrouped
window's is the whole trace: one sequence by Esper's rules), and each window
specification sorts and buffers that sequence in one task again, so an
ungrouped `#size`, `#uni`, `#linest` and `#correl` take each trace's rows as
one Arrow table through numpy instead (`_statistics_kernel`: one sort,
cumulative sums that add in the same order, bit for bit the window
functions' doubles). Under `#groupwin` the window functions stay: there a
sub-window is a key's, many small sequences over every core, where a
kernel's cost per group (about a millisecond) would be the larger.
`#weighted_avg` needs grouped Python for its rule too: its sums restart where the running
sum(x*w) itself is NaN (an infinity met its opposite), so where a segment
starts depends on the sums of the segment before, which no window function
can see. Its sums come from a grouped Arrow kernel per trace
(`_weighted_sums`): numpy's cumulative sums (sequential, so bit for bit the
oracle's additions) per segment, a new segment at the first point inserted
after the running sum(x*w) turns NaN; one pass when no NaN occurs.

Rows go out as two post rows per source post (`insert`: the new row,
`remove`: the old one) with `id` null and field i of the row as column
`#field<i>`, typed as `fields_of` (the family's `FIELDS`) declares: each
post carries its state (the sums, the count, the carried properties) and
the old row's state (the previous post's; the first time, the empty
statistics), and the fields are computed from them once, after the two rows
are made, by the same SQL (so the doubles are those of the sums, bit for bit).

The fields (`fields_of`), as Esper types its views' rows (each view's
`createEventType`, in its order; `LONGPRIMITIVE`/`LONGBOXED` a long,
`DOUBLEBOXED` a double):

* `#size`: `size` long. `#uni`: `datapoints` long, `total`, `stddev`,
  `stddevpa`, `variance`, `average` double. `#linest`: its 19 fields,
  `dataPoints` and `n` long, the others double. `#correl`: `correlation`,
  `#weighted_avg`: `average`, double.
* Then the named additional properties, then under `*` `id` (a string) and
  every property column not named, each typed as its column (metadata
  `JSON_TEXT`, `NO_VALUES` kept); `*` leaves out a column named like a field
  the window checks (ignoring case), which no valid trace gives a value.
  Under `#groupwin`, where its keys are added, the keys, typed as their
  columns (`StatViewAdditionalPropsForge`: an additional property's type is
  its expression's).
* An additional property named like a field the window does not check (a
  `#linest` field but `slope` and `YIntercept`; named, or a column `*`
  copies) replaces the field once there are values (oracle). Esper then
  types the field as the property (`addCheckDupProperties` puts the
  property's type over the field's), though the row holds the statistic
  before the first new event. Decided: where the property's column has the
  field's type, one column of that type; otherwise the field is JSON text
  (metadata `JSON_TEXT`: the statistic's number, NaN and the infinities
  bare, then the property's value as JSON), so neither value is lost nor
  converted.

A caller reading the posts (a statement over a derived-value window) gets
the fields' names and types from `fields_of(spec, columns, group_keys)`
with the columns and keys the posts were made with: column `#field<i>` is
its i-th field.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from oracle.errors import UnsupportedWindow
from oracle.model import Correl, Expr, ExprBatch, Intersection, Linest, RetainUnion, Size, Uni, WeightedAvg, TimeBatch, TimeLengthBatch, nested_specs, spec_kind
from spark_impl.frames import JSON_TEXT, NO_VALUES
from spark_impl.windows import Context, family
from spark_impl.windows.base import ARRIVAL, constant_columns, events, quoted
from spark_impl.windows.intersect import MEMBER_SHIFT

CONTRACT = ("trace_id", "seq", "phase", "time", "slot_due", "slot", "side", "pos", "id")
#: a source post: its unit and, within a unit of several posts, the firing timer
_POST = ("seq", "phase", "time", "`#pd`", "`#ps`", "`#pm`")
_POST_ORDER = ", ".join(_POST)
_ORDER = f"{_POST_ORDER}, `#side`, slot_due, slot, pos"
_TRACE = f"PARTITION BY trace_id ORDER BY {_ORDER}"
_RUNNING = f"OVER ({_TRACE} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
_BY_POST = f"PARTITION BY trace_id ORDER BY {_POST_ORDER}"


def check(spec) -> None:
    """`UnsupportedWindow` for a source Spark does not build."""
    if spec.source is not None:
        family(spec.source)


def _posts_empty(source) -> bool:
    """Whether `source` may post an update of no event (a FORCE_UPDATE batch;
    an expression window on a `set` item), whose row says no group."""
    return source is not None and any(
        isinstance(inner, (Expr, ExprBatch)) or (isinstance(inner, (TimeBatch, TimeLengthBatch)) and inner.force_update)
        for inner in nested_specs(source))


def several_posts(source) -> bool:
    """Whether `source` may post several times in one timer's unit: once per
    firing member timer (an intersection or union of two timed members or more)."""
    from spark_impl.windows.several import TIMED

    return isinstance(source, (Intersection, RetainUnion)) and sum(isinstance(m, TIMED) for m in source.members) >= 2


# --------------------------------------------------------------------------- SQL pieces


def _num(expr: str) -> str:
    """JSON text of a double: bare NaN, Infinity, -Infinity for the others."""
    return (f"CASE WHEN isnan({expr}) THEN 'NaN' WHEN {expr} = double('Infinity') THEN 'Infinity' "
            f"WHEN {expr} = double('-Infinity') THEN '-Infinity' ELSE CAST({expr} AS STRING) END")


def _div(a: str, b: str) -> str:
    """Java's double division (Spark's `/` gives null for a zero divisor)."""
    return (f"CASE WHEN ({b}) = 0 THEN CASE WHEN ({a}) = 0 OR isnan({a}) THEN double('NaN') "
            f"ELSE double('Infinity') * signum({a}) * CASE WHEN ({b}) = 0 AND 1 / ({b}) < 0 THEN -1 ELSE 1 END END "
            f"ELSE ({a}) / ({b}) END")


def _bean_fields(spec) -> dict[str, tuple[str, str]]:
    """Field -> (kind, SQL) over the state columns `#n`, `#sx`, `#sxx`, `#sy`, `#syy`, `#sxy`."""
    n = "CAST(`#n` AS DOUBLE)"

    def average(total: str) -> str:
        return f"CASE WHEN `#n` = 0 THEN double('NaN') ELSE {total} / {n} END"

    def variance(total: str, squares: str) -> str:
        return f"CASE WHEN `#n` < 2 THEN double('NaN') ELSE ({squares} - {total} * {total} / {n}) / ({n} - 1) END"

    def pop(total: str, squares: str) -> str:
        return f"CASE WHEN `#n` = 0 THEN double('NaN') ELSE sqrt(({squares} - {total} * {total} / {n}) / {n}) END"

    def sample(total: str, squares: str) -> str:
        return f"CASE WHEN `#n` < 2 THEN double('NaN') ELSE sqrt({variance(total, squares)}) END"

    ssx = f"(`#sxx` - `#sx` * `#sx` / {n})"
    ssy = f"(`#syy` - `#sy` * `#sy` / {n})"
    sp = f"(`#sxy` - `#sx` * `#sy` / {n})"
    slope = f"CASE WHEN `#n` = 0 OR {ssx} = 0 THEN double('NaN') ELSE {sp} / {ssx} END"
    if isinstance(spec, Uni):
        return {"datapoints": ("long", "`#n`"), "total": ("double", "`#sx`"), "average": ("double", average("`#sx`")),
                "variance": ("double", variance("`#sx`", "`#sxx`")), "stddev": ("double", sample("`#sx`", "`#sxx`")),
                "stddevpa": ("double", pop("`#sx`", "`#sxx`"))}
    if isinstance(spec, Correl):
        correl = (f"CASE WHEN `#n` = 0 OR {ssx} = 0 OR {ssy} = 0 THEN double('NaN') "
                  f"ELSE {_div(sp, f'sqrt({ssx} * {ssy})')} END")
        return {"correlation": ("double", correl)}
    intercept = f"CASE WHEN isnan({slope}) THEN double('NaN') ELSE `#sy` / {n} - ({slope}) * `#sx` / {n} END"
    return {
        "slope": ("double", slope), "YIntercept": ("double", intercept),
        "XAverage": ("double", average("`#sx`")), "XStandardDeviationPop": ("double", pop("`#sx`", "`#sxx`")),
        "XStandardDeviationSample": ("double", sample("`#sx`", "`#sxx`")), "XSum": ("double", "`#sx`"),
        "XVariance": ("double", variance("`#sx`", "`#sxx`")),
        "YAverage": ("double", average("`#sy`")), "YStandardDeviationPop": ("double", pop("`#sy`", "`#syy`")),
        "YStandardDeviationSample": ("double", sample("`#sy`", "`#syy`")), "YSum": ("double", "`#sy`"),
        "YVariance": ("double", variance("`#sy`", "`#syy`")),
        "dataPoints": ("long", "`#n`"), "n": ("long", "`#n`"),
        "sumX": ("double", "`#sx`"), "sumXSq": ("double", "`#sxx`"), "sumXY": ("double", "`#sxy`"),
        "sumY": ("double", "`#sy`"), "sumYSq": ("double", "`#syy`"),
    }


def _fields(spec) -> dict[str, tuple[str, str]]:
    if isinstance(spec, Size):
        return {"size": ("long", "`#n`")}
    if isinstance(spec, WeightedAvg):
        return {"average": ("double", "CASE WHEN `#sw` = 0 THEN double('NaN') ELSE `#sxw` / `#sw` END")}
    return _bean_fields(spec)


_LONG, _DOUBLE = T.LongType(), T.DoubleType()
#: each view's fields as Esper types them, in its event type's order (`createEventType` of `SizeView`,
#: `UnivariateStatisticsView`, `RegressionLinestView`, `CorrelationView`, `WeightedAverageView`)
ESPER_FIELDS: dict[type, tuple[tuple[str, T.DataType], ...]] = {
    Size: (("size", _LONG),),
    Uni: (("datapoints", _LONG), ("total", _DOUBLE), ("stddev", _DOUBLE), ("stddevpa", _DOUBLE),
          ("variance", _DOUBLE), ("average", _DOUBLE)),
    Linest: tuple((name, _LONG if name in ("dataPoints", "n") else _DOUBLE) for name in Linest.FIELDS),
    Correl: (("correlation", _DOUBLE),),
    WeightedAvg: (("average", _DOUBLE),),
}
#: the column metadata a field copied from a property column keeps
_KEPT = (JSON_TEXT, NO_VALUES)


def fields_of(spec, columns: dict[str, T.StructField], group_keys=()) -> tuple[T.StructField, ...]:
    """The fields of `spec`'s rows (module docstring), over an input whose
    property columns are `columns`, under `#groupwin` by `group_keys`: the
    family's `FIELDS`. Runs nothing."""
    return tuple(field for field, _ in _row(spec, columns, tuple(group_keys)))


def _row(spec, columns: dict[str, T.StructField], group_keys: tuple[str, ...]) -> list[tuple[T.StructField, str]]:
    """Each field and its SQL over a post row's state (`#n`, the sums), its
    carried properties (`#x`: `n_<name>` named, `w_<name>` copied by `*`;
    null before any new event) and the group keys' columns."""
    named = spec.extra
    checked = {f.lower() for f in spec.CHECKED_FIELDS}
    copied = tuple(n for n in (("id", *columns) if spec.all_properties else ())
                   if n not in named and n.lower() not in checked)

    def column(name: str) -> T.StructField:
        if name == "id":
            return T.StructField("id", T.StringType())
        found = columns[name]
        return T.StructField(name, found.dataType, metadata={k: v for k, v in found.metadata.items() if k in _KEPT})

    def carried(name: str) -> str:
        return f"`#x`.{quoted(('n_' if name in named else 'w_') + name)}"

    sql = _fields(spec)
    row: list[tuple[T.StructField, str]] = []
    for name, kind in ESPER_FIELDS[type(spec)]:
        field, value = T.StructField(name, kind), f"CAST({sql[name][1]} AS {kind.simpleString().upper()})"
        if name in named or name in copied:  # an additional property replaces the field once there are values
            prop = column(name)
            present = "`#x` IS NOT NULL" if name in named else f"{carried(name)} IS NOT NULL"
            if prop.dataType == kind and not prop.metadata.get(JSON_TEXT):
                value = f"CASE WHEN {present} THEN {carried(name)} ELSE {value} END"
            else:  # the statistic or the property: JSON text
                number = _num(value) if kind == _DOUBLE else f"CAST({value} AS STRING)"
                field = T.StructField(name, T.StringType(), metadata={JSON_TEXT: True})
                value = f"CASE WHEN {present} THEN {_json(carried(name), prop)} ELSE {number} END"
        row.append((field, value))
    fields = {name for name, _ in ESPER_FIELDS[type(spec)]}
    row += [(column(name), carried(name)) for name in (*named, *copied) if name not in fields]
    if group_keys and not all(spec.has_field(k) for k in group_keys):  # the keys' values added to the rows
        row += [(column(k), quoted(k)) for k in group_keys]
    return row


def _json(expr: str, prop: T.StructField) -> str:
    """SQL: a property's value as JSON text (a JSON text column's as is; null stays null)."""
    if prop.metadata.get(JSON_TEXT):
        return expr
    text = f"to_json(named_struct('v', {expr}))"
    return f"CASE WHEN {expr} IS NOT NULL THEN substring({text}, 6, length({text}) - 6) END"


# --------------------------------------------------------------------------- the plan


def _source_rows(items: DataFrame, spec, ctx: Context, wanted: tuple[str, ...]) -> DataFrame:
    """The source's post rows (the contract's columns, the group keys and the
    `wanted` properties), or each event's arrival: a property the source's
    rows lack is joined back by id (a posted row is its event's)."""
    columns = (*ctx.group_keys, *wanted)
    if spec.source is None:
        return events(items).selectExpr(
            "trace_id", "seq", f"{ARRIVAL} AS phase", "time", "time AS slot_due", "CAST(0 AS BIGINT) AS slot",
            "'insert' AS side", "seq AS pos", "id", *(quoted(c) for c in columns))
    posted = family(spec.source).posts(items, spec.source, ctx)
    rows = posted.selectExpr(*CONTRACT, *(quoted(c) for c in columns if c in posted.columns))
    missing = [c for c in columns if c not in posted.columns]
    return rows.join(events(items).select("trace_id", "id", *missing), ["trace_id", "id"], "left") if missing else rows


def derived(items: DataFrame, spec, ctx: Context) -> DataFrame:
    check(spec)
    if ctx.group_keys and _posts_empty(spec.source):
        raise UnsupportedWindow(f"grouped statistics over {spec_kind(spec.source)} (it may post an update of no "
                                "event, whose row carries no group: FORCE_UPDATE, a set item) are not built on Spark")
    # under #groupwin: statistics per group, its keys added to the rows (unless every key is a field of them)
    part = ", ".join(quoted(c) for c in ctx.partition)
    keys = tuple(ctx.group_keys)
    _TRACE = f"PARTITION BY {part} ORDER BY {_ORDER}"
    _RUNNING = f"OVER ({_TRACE} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    _BY_POST = f"PARTITION BY {part} ORDER BY {_POST_ORDER}"
    props = ctx.properties
    wanted = tuple(dict.fromkeys([*spec.values(), *spec.extra, *(props if spec.all_properties else ())]))
    wanted = tuple(p for p in wanted if p != "id" and p not in keys)  # a group key is on the rows already
    rows = _source_rows(items, spec, ctx, wanted)
    if several_posts(spec.source) or keys:
        timer = "phase = 0"
        rows = rows.selectExpr("*", f"CASE WHEN {timer} THEN slot_due ELSE 0 END AS `#pd`",
                               f"CASE WHEN {timer} THEN slot ELSE 0 END AS `#ps`",
                               f"CASE WHEN {timer} THEN shiftright(pos, {MEMBER_SHIFT}) ELSE 0 END AS `#pm`")
    else:
        rows = rows.selectExpr("*", "CAST(0 AS BIGINT) AS `#pd`", "CAST(0 AS BIGINT) AS `#ps`",
                               "CAST(0 AS BIGINT) AS `#pm`")
    values = [f"CAST({quoted(v)} AS DOUBLE)" for v in spec.values()]
    point = " AND ".join(["side IS NOT NULL", *(f"{v} IS NOT NULL" for v in values)])
    staged = rows.selectExpr(
        "*", "CASE WHEN side = 'remove' THEN 1 ELSE 0 END AS `#side`",
        f"CASE WHEN {point} THEN {_SIGN} ELSE 0 END AS `#d`",
        *(f"{v} AS `#v{i}`" for i, v in enumerate(values)))
    if isinstance(spec, (Uni, Linest, Correl, Size)) and not keys:  # the trace one sequence: `_statistics_kernel`
        posted = _statistics_posts(staged, spec, ctx, len(values), props)
        return _post_rows(posted, spec, items, props, keys)
    # the count never goes below 0 (a point removed from none): the running SUM
    # reflected at 0, S - min(0, lowest S so far)
    staged = staged.selectExpr("*", f"sum(`#d`) {_RUNNING} AS `#S`")
    staged = staged.selectExpr("*", f"`#S` - least(0, min(`#S`) {_RUNNING}) AS `#n`").drop("#S")
    if isinstance(spec, (Uni, Linest, Correl)):
        y = "`#v1`" if len(values) == 2 else "0D"
        terms = {"#sx": "`#v0`", "#sxx": "`#v0` * `#v0`", "#sy": y, "#syy": f"{y} * {y}", "#sxy": f"`#v0` * {y}"}
        staged = staged.selectExpr("*", "side = 'remove' AND `#d` <> 0 AND `#n` <= 0 AS `#reset`")
        staged = staged.selectExpr(
            "*", f"coalesce(sum(CAST(`#reset` AS INT)) OVER ({_TRACE} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS `#seg`")
        segment = f"OVER (PARTITION BY {part}, `#seg` ORDER BY {_ORDER} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        staged = staged.selectExpr("*", *(
            f"CASE WHEN `#reset` THEN 0D ELSE coalesce(sum(CASE WHEN `#d` <> 0 THEN `#d` * ({t}) END) {segment}, 0D) END AS `{name}`"
            for name, t in terms.items()))
        state = ["`#n`", *(f"`{name}`" for name in terms)]
    elif isinstance(spec, WeightedAvg):
        staged = staged.selectExpr("*", f"row_number() OVER ({_TRACE}) AS `#o`")
        schema = T.StructType([*staged.schema.fields, T.StructField("#sxw", T.DoubleType()),
                               T.StructField("#sw", T.DoubleType())])
        staged = staged.groupBy("trace_id", *keys).applyInArrow(_weighted_sums, schema)
        state = ["`#n`", "`#sxw`", "`#sw`"]
    else:
        staged = staged.selectExpr("*", f"sum(CASE WHEN side IS NULL THEN 0 ELSE {_SIGN} END) {_RUNNING} AS `#size`")
        state = ["`#size` AS `#n`"]
    extra_struct = _extra_struct(spec, props)
    ordered = staged.selectExpr(
        "trace_id", *(quoted(k) for k in keys), *_POST, *state,
        f"CASE WHEN side = 'insert' THEN {extra_struct} END AS `#x`",
        f"row_number() OVER ({_TRACE}) AS `#o`")
    units = ordered.groupBy("trace_id", *keys, *(c.strip("`") for c in _POST)).agg(
        _agg(f"max_by(struct({', '.join(_names(state))}), `#o`) AS `#s`"),
        _agg("max_by(`#x`, CASE WHEN `#x` IS NOT NULL THEN `#o` END) AS `#x`"))
    units = units.selectExpr(
        "trace_id", *(quoted(k) for k in keys), *_POST, "`#s`.*",
        f"last(`#x`, true) OVER ({_BY_POST} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS `#x`")
    # each post: its state as new and, as old, the state of the post before (the first time: of the unit
    # before, `#size` posting only where the count changes; of nothing at the start)
    names = [n.strip("`") for n in _names(state)]
    struct = ", ".join(f"'{n}', `{n}`" for n in (*names, "#x"))
    units = units.selectExpr("*", f"named_struct({struct}) AS `#st`",
                             f"lag(named_struct({struct})) OVER ({_BY_POST}) AS `#prior`",
                             f"coalesce(lag(`#n`) OVER ({_BY_POST}), 0) AS `#n_before`")
    if isinstance(spec, Size):
        units = units.where("`#n` <> `#n_before`")
    empty = {"#n": "CAST(0 AS BIGINT)", "#sxw": "double('NaN')", "#sw": "double('NaN')"}
    initial = ", ".join(f"'{n}', {empty.get(n, '0D')}" for n in names)
    initial = f"named_struct({initial}, '#x', CASE WHEN false THEN `#x` END)"
    old = (f"CASE WHEN row_number() OVER ({_BY_POST}) = 1 THEN `#prior` "
           f"ELSE lag(`#st`) OVER ({_BY_POST}) END")
    posted = units.selectExpr(
        "trace_id", *(quoted(k) for k in keys), *_POST, "`#st` AS `#new`", f"coalesce({old}, {initial}) AS `#old`")
    return _post_rows(posted, spec, items, props, keys)


def _post_rows(posted: DataFrame, spec, items: DataFrame, props, keys) -> DataFrame:
    """Each post's two rows (`insert`: its state `#new`, `remove`: `#old`), their fields computed from the states."""
    # a post's rows keep its place in the unit: (due, slot, member) order the posts
    exploded = posted.selectExpr(
        "trace_id", *(quoted(k) for k in keys), "seq", "phase", "time", "`#pd` AS slot_due", "`#ps` AS slot",
        "`#pm`", "explode(array(named_struct('side', 'insert', 's', `#new`), "
        "named_struct('side', 'remove', 's', `#old`))) AS `#p`",
    ).selectExpr("*", "`#p`.side AS side", "`#p`.s.*")
    columns = {f.name: f for f in items.schema.fields if f.name in props}
    return exploded.selectExpr(
        *CONTRACT[:7], "CAST(`#pm` AS BIGINT) AS pos", "CAST(NULL AS STRING) AS id",
        *(f"{value} AS `#field{i}`" for i, (_, value) in enumerate(_row(spec, columns, keys))))


def _extra_struct(spec, props) -> str:
    """SQL: a row's additional properties, named ones as `n_<name>`, the wildcard's as `w_<name>`."""
    extras = [f"'n_{name}', {quoted(name) if name != 'id' else 'id'}" for name in spec.extra]
    if spec.all_properties:
        extras += [f"'w_{name}', {quoted(name) if name != 'id' else 'id'}" for name in ("id", *props)]
    return f"named_struct({', '.join(extras)})" if extras else "named_struct('n_', 0)"


#: a row's side as a sign: +1 inserted, -1 removed, 0 an empty post
_SIGN = "CASE side WHEN 'insert' THEN 1 WHEN 'remove' THEN -1 ELSE 0 END"
#: the running state of the statistics' sums (`#uni`, `#linest`, `#correl`) and the size's count
_SUMS = ("#sx", "#sxx", "#sy", "#syy", "#sxy")
#: the sums `#uni`'s fields read (`_bean_fields`)
_UNI_SUMS = ("#sx", "#sxx")


def _statistics_posts(staged: DataFrame, spec, ctx: Context, n_values: int, props) -> DataFrame:
    """Each post of a sub-window with its state after it (`#new`) and the state
    the view posted before (`#old`), from `_statistics_kernel`: the same rules
    as the window functions of `derived` (module docstring), as one ordered
    pass of numpy over the sub-window's rows. Why Python: the sums run in
    update order over a whole trace (one sequence by Esper's rules), which
    Spark's window functions sort and buffer in one task once per window
    specification; numpy's cumulative sums add in the same order, so the
    doubles are the same, bit for bit."""
    keys = tuple(ctx.group_keys)
    size = isinstance(spec, Size)
    extra_struct = _extra_struct(spec, props)
    # a column of one value on every row stays in the JVM, put back after the kernel (each column crossing into
    # Python and back costs: measured at 2 M rows, 11 columns through an identity 2.1-2.6 s, 5 columns 0.8 s)
    constants = {} if several_posts(spec.source) else {"#pd": 0, "#ps": 0, "#pm": 0}
    if ctx.one_trace is not None:
        constants["trace_id"] = ctx.one_trace
    partition = tuple(c for c in ctx.partition if c not in constants)
    posts_by = [c for c in (c.strip("`") for c in _POST) if c not in constants]
    order = [*posts_by, *(c for c in ("#side", "slot_due", "slot", "pos") if c not in constants)]
    carried = bool(spec.extra or spec.all_properties)  # else no field reads `#x` (`_row`)
    rows = staged.selectExpr(
        *(quoted(c) for c in partition), *(quoted(c) for c in order if c not in partition),
        f"CAST({_SIGN} AS TINYINT) AS `#sg`",
        "`#d`", *(f"`#v{i}`" for i in range(n_values)),
        f"CASE WHEN side = 'insert' THEN {extra_struct} END AS `#x`")
    fields = {f.name: f for f in rows.schema.fields}
    if not carried:
        rows = rows.drop("#x")
    sums = () if size else _UNI_SUMS if isinstance(spec, Uni) else _SUMS
    state = ["#n", *sums]
    kinds = {name: (T.LongType() if name == "#n" else T.DoubleType()) for name in state}
    schema = T.StructType([
        *(fields[c] for c in partition), *(fields[c] for c in posts_by if c not in partition),
        *(T.StructField(f"{side}{name}", kinds[name]) for side in ("new", "old") for name in state),
        *(T.StructField(f"{side}#x", fields["#x"].dataType) for side in (("new", "old") if carried else ()))])
    kernel = _statistics_kernel(partition, order, len(posts_by), n_values, sums, carried)
    if ctx.one_trace is not None:
        # one trace, one sequence: its rows as one partition without a shuffle or a sort by the constant
        # trace (measured at 10 M, #length(10) source: 36.7 s executor, against 50.5 grouped and sorted and
        # 46.8 shuffled to one partition; a source partitioned by key runs its last stage in this task too)
        posted = rows.coalesce(1).mapInArrow(_whole_partition(kernel), schema)
    else:
        posted = rows.groupBy(*partition).applyInArrow(kernel, schema)
    # without carried properties no field reads `#x` (`_row`): null, of its type, rather than through the kernel
    posted = posted.selectExpr("*", *constant_columns(constants),
                               *(f"CASE WHEN false THEN {extra_struct} END AS `{side}#x`"
                                 for side in (() if carried else ("new", "old"))))
    new, old = ([f"'{name}', `{side}{name}`" for name in state] + [f"'#x', `{side}#x`"] for side in ("new", "old"))
    return posted.selectExpr("trace_id", *(quoted(k) for k in keys), *_POST,
                             f"named_struct({', '.join(new)}) AS `#new`", f"named_struct({', '.join(old)}) AS `#old`")


def _statistics_kernel(partition: tuple[str, ...], order: list[str], n_post: int, n_values: int, sums: tuple[str, ...],
                       carried: bool):
    """Grouped-map kernel over one sub-window's staged rows (`_statistics_posts`):
    rows in update order (`order`, nulls first as Spark sorts them), then

    * `#size` (no `sums`): the count is the running sum of the signs of the
      rows that post an event; a post is posted where it changes the count;
    * the statistics: the count is the running sum of the points' signs
      floored at 0 (S less the lowest min(0, S) so far); a removed point that
      takes it to 0 or below resets every sum to 0 on its row, and the sums
      of a segment (after each reset) are the cumulative sums, from 0.0, of
      the points' signed terms (x, x², y, y², xy: those in `sums`), each
      row holding the sums after the segment's last point at or before it;
    * per post (a run of equal values of `order`'s first `n_post` columns:
      `_POST`'s, less those of one value): the state on its last row;
      the carried properties `#x` of the last inserted row so far; the old
      state the previous (posted) post's, the empty statistics (0, 0.0, no
      properties) before the first.

    `#sg` is the row's side as a sign; the carried properties come as `#x`,
    and go out as `new#x` and `old#x`, only where the view has some
    (`carried`). Memory is the cost here (a page first
    touched costs more than the arithmetic on it): no column is put in
    update order whole where its points or the posts' last rows are all a
    step reads, a constant key orders nothing, and the state is kept at the
    posts' last rows only."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    posts_by = order[:n_post]

    def sort_key(column):
        if column.null_count:  # nulls first, as Spark orders them
            return pc.fill_null(pc.cast(column, pa.int64()), -2**63).to_numpy()
        return column.to_numpy()

    def run(table):
        n = table.num_rows
        keys = [(c in posts_by, sort_key(table.column(c))) for c in order]
        keys = [(post, k) for post, k in keys if k.min() != k.max()]  # a constant key orders nothing
        ranked = np.lexsort([k for _, k in keys][::-1]) if keys else np.arange(n)
        change = np.zeros(n, bool)
        for post, k in keys:
            if post:
                k = k[ranked]
                change[1:] |= k[1:] != k[:-1]
        del keys
        ends = np.append(np.flatnonzero(change[1:]), n - 1)  # each post's last row
        del change

        def ordered(column, at=None):
            values = table.column(column).to_numpy(zero_copy_only=False)
            return values[ranked if at is None else ranked[at]]

        sign = ordered("#sg")
        state: dict[str, np.ndarray] = {}
        if not sums:
            state["#n"] = np.cumsum(sign, dtype=np.int64)[ends]
        else:
            d = ordered("#d")
            running = np.cumsum(d, dtype=np.int64)
            count = running - np.minimum(0, np.minimum.accumulate(running))
            del running
            reset = (sign < 0) & (d != 0) & (count <= 0)
            state["#n"] = count[ends]
            del count
            segment = np.cumsum(reset) - reset  # the resets before each row
            points = np.flatnonzero(d != 0)
            signed = d[points].astype(float)
            del d
            starts = np.flatnonzero(np.diff(segment[points])) + 1  # where a segment's points begin
            last = np.searchsorted(points, ends, side="right") - 1  # each post's last point so far
            held = last >= 0
            held[held] = segment[points[last[held]]] == segment[ends[held]]  # ... within its segment
            zeroed = reset[ends]
            del segment, reset
            x = ordered("#v0", points)
            y = ordered("#v1", points) if n_values == 2 else None
            terms = {"#sx": lambda: x, "#sxx": lambda: x * x, "#sy": lambda: y, "#syy": lambda: y * y,
                     "#sxy": lambda: x * y}
            bounds = np.append(0, starts) if len(points) else starts
            for name in sums:
                with np.errstate(all="ignore"):  # infinities and NaN are values here, as in Java
                    after = _segmented_sums(signed * terms[name](), bounds)
                total = np.zeros(len(ends))
                total[held] = after[last[held]]
                total[zeroed] = 0.0
                state[name] = total
        inserts = np.flatnonzero(sign > 0)
        del sign
        found = np.searchsorted(inserts, ends, side="right") - 1  # each post's last inserted row so far
        last_insert = np.where(found >= 0, inserts[np.maximum(found, 0)] if len(inserts) else -1, -1)
        previous = np.arange(len(ends)) - 1  # the post whose state the old row is
        kept = np.ones(len(ends), bool)
        if not sums:  # posted where the count changes; the old row is the posted post's before, the first's the post's before
            kept = state["#n"] != np.append(0, state["#n"][:-1])
            shown = np.flatnonzero(kept)
            previous[shown[1:]] = shown[:-1]
        chosen = np.flatnonzero(kept)
        prior = previous[chosen]
        rows = pa.array(ranked[ends[chosen]])
        columns = {c: table.column(c).take(rows) for c in (*partition, *(c for c in posts_by if c not in partition))}
        for label in ("new", "old"):  # the schema's order: every new state, then every old one
            for name, at in state.items():
                kind = pa.int64() if name == "#n" else pa.float64()
                chosen_at = at[chosen] if label == "new" else np.where(prior >= 0, at[np.maximum(prior, 0)], 0)
                columns[f"{label}{name}"] = pa.array(chosen_at, kind)
        for label, which in ((("new#x", last_insert[chosen]),
                              ("old#x", np.where(prior >= 0, last_insert[np.maximum(prior, 0)], -1)))
                             if carried else ()):
            taken = table.column("#x").take(pa.array(ranked[np.maximum(which, 0)]))
            columns[label] = pc.if_else(pa.array(which >= 0), taken, pa.nulls(len(which), taken.type))
        # in batches of Arrow's usual size: one batch of a whole trace's posts is more than the JVM's reader holds
        posted = pa.table(columns)
        return pa.Table.from_batches(posted.to_batches(max_chunksize=_OUT_BATCH), schema=posted.schema)

    return run


def _whole_partition(kernel):
    """A `mapInArrow` function: `kernel` over all of a partition's rows as one table."""
    def run(batches):
        import pyarrow as pa

        batches = list(batches)
        if batches:
            yield from kernel(pa.Table.from_batches(batches)).to_batches()

    return run


#: rows per Arrow batch a kernel returns (`spark.sql.execution.arrow.maxRecordsPerBatch`'s default)
_OUT_BATCH = 10_000
#: a segment longer than this is summed by one `cumsum` of its own; shorter ones position by position together
_LONG_SEGMENT = 64


def _segmented_sums(values, starts):
    """Each segment's running sums (segments begin at `starts`, the first at
    0), from 0.0 and one addition per value left to right, as Java's
    `sum += v` adds: bit for bit, never a difference of prefix sums. Long
    segments by numpy's sequential `cumsum` each; the short ones all at once,
    one position at a time (as many steps as the longest of them)."""
    import numpy as np

    out = np.empty(len(values))
    bounds = np.append(starts, len(values)).astype(np.int64)
    lengths = np.diff(bounds)
    with np.errstate(all="ignore"):
        for i in np.flatnonzero(lengths > _LONG_SEGMENT):
            a, b = bounds[i], bounds[i + 1]
            out[a:b] = np.cumsum(np.concatenate([[0.0], values[a:b]]))[1:]
        short = np.flatnonzero(lengths <= _LONG_SEGMENT)
        first, size = bounds[short], lengths[short]
        running = np.zeros(len(short))
        for j in range(int(size.max()) if len(short) else 0):
            live = size > j
            at = first[live] + j
            running[live] = running[live] + values[at]
            out[at] = running[live]
    return out


def _weighted_sums(table):
    """Grouped-map kernel (one trace's staged rows, `#o` their order): appends
    `#sxw` and `#sw`, `#weighted_avg`'s sums after each row (module docstring)."""
    import numpy as np
    import pyarrow as pa

    order = np.argsort(table.column("#o").to_numpy(zero_copy_only=False), kind="stable")
    table = table.take(pa.array(order))
    sign = table.column("#d").to_numpy(zero_copy_only=False)
    points = np.flatnonzero(sign != 0)
    x = table.column("#v0").to_numpy(zero_copy_only=False)[points].astype(float)
    w = table.column("#v1").to_numpy(zero_copy_only=False)[points].astype(float)
    signs = sign[points].astype(float)
    with np.errstate(all="ignore"):  # infinities and NaN are values here, as in Java
        xw, ww = signs * (x * w), signs * w
    inserted = np.flatnonzero(signs > 0)
    sxw, sw = np.full(len(points), np.nan), np.full(len(points), np.nan)
    start = inserted[0] if len(inserted) else len(points)
    while start < len(points):
        # a segment from a point added while sum(x*w) was NaN to the next such point
        with np.errstate(all="ignore"):
            run = np.cumsum(xw[start:])
        nan = np.flatnonzero(np.isnan(run))
        later = inserted[inserted > start + nan[0]] if len(nan) else ()
        end = later[0] if len(later) else len(points)
        with np.errstate(all="ignore"):
            sxw[start:end], sw[start:end] = run[:end - start], np.cumsum(ww[start:end])
        start = end
    # every row holds the sums after the last point row at or before it
    last = np.searchsorted(points, np.arange(len(sign)), side="right") - 1
    held = last >= 0
    row_sxw, row_sw = np.full(len(sign), np.nan), np.full(len(sign), np.nan)
    row_sxw[held], row_sw[held] = sxw[last[held]], sw[last[held]]
    return table.append_column("#sxw", pa.array(row_sxw, pa.float64())).append_column(
        "#sw", pa.array(row_sw, pa.float64()))


def _names(columns: list[str]) -> list[str]:
    """The column names of select expressions (`x AS y` -> `y`)."""
    return [c.split(" AS ")[-1] for c in columns]


def _agg(text: str):
    from pyspark.sql import functions as F

    return F.expr(text)


POSTS = {Size: derived, Uni: derived, Linest: derived, Correl: derived, WeightedAvg: derived}
FIELDS = {cls: fields_of for cls in POSTS}
CHECKS = {cls: check for cls in POSTS}
