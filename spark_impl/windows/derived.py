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

Why set-oriented: the state is sums, whose running values window functions
give directly; only the reset needs care, and a reset happens exactly where
the running count returns to 0, a fact each row computes from the count
alone. No row needs the previous row's output, so no grouped Python is
needed, except for `#weighted_avg`: its sums restart where the running
sum(x*w) itself is NaN (an infinity met its opposite), so where a segment
starts depends on the sums of the segment before, which no window function
can see. Its sums come from a grouped Arrow kernel per trace
(`_weighted_sums`): numpy's cumulative sums (sequential, so bit for bit the
oracle's additions) per segment, a new segment at the first point inserted
after the running sum(x*w) turns NaN; one pass when no NaN occurs.

Rows go out as two post rows per source post (`insert`: the new row,
`remove`: the old one) with `id` null and `values` the row as a JSON object
(doubles written by hand, so NaN and infinities are bare `NaN`,
`Infinity`, which Python's json reads as floats).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from oracle.errors import UnsupportedWindow
from oracle.model import Correl, Expr, ExprBatch, Intersection, Linest, RetainUnion, Size, Uni, WeightedAvg, TimeBatch, TimeLengthBatch, nested_specs, spec_kind
from spark_impl.frames import JSON_TEXT
from spark_impl.windows import Context, family
from spark_impl.windows.base import ARRIVAL, events, quoted
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


def _fragment(name: str, kind: str, expr: str) -> str:
    value = _num(expr) if kind == "double" else f"CAST({expr} AS STRING)"
    return f"concat('\"{name}\":', {value})"


def _json_fragment(name: str, expr: str, raw: bool = False) -> str:
    """`"name":value` through to_json (strings escaped), null kept; `raw`: the
    value is JSON text already (a list or object property), embedded as is."""
    if raw:
        return f"concat('\"{name}\":', coalesce({expr}, 'null'))"
    text = f"to_json(named_struct('{name}', {expr}), map('ignoreNullFields', 'false'))"
    return f"substring({text}, 2, length({text}) - 2)"


def _row_json(spec, props: tuple[str, ...], json_text: frozenset[str] = frozenset()) -> str:
    """SQL: the row as a JSON object, from the state columns and `#x`, the
    carried additional properties (a struct, null before any new event);
    `json_text`: the properties whose column holds JSON text."""
    named = spec.extra
    wildcard = ("id", *props) if spec.all_properties else ()
    pieces: list[str] = []
    for name, (kind, expr) in _fields(spec).items():
        # an additional property replaces a field of the same name once there are values
        replaced = (["TRUE"] if name in named else []) + ([f"`#x`.`w_{name}` IS NOT NULL"] if name in wildcard else [])
        piece = _fragment(name, kind, expr)
        if replaced:
            piece = f"CASE WHEN `#x` IS NULL OR NOT ({' OR '.join(replaced)}) THEN {piece} END"
        pieces.append(piece)
    for name in named:
        if name not in _fields(spec):
            pieces.append(f"CASE WHEN `#x` IS NULL THEN '\"{name}\":null' END")
    for name in wildcard:
        if name not in named:
            pieces.append(f"CASE WHEN `#x`.`w_{name}` IS NOT NULL THEN {_json_fragment(name, f'`#x`.`w_{name}`', name in json_text)} END")
    for name in named:
        pieces.append(f"CASE WHEN `#x` IS NOT NULL THEN {_json_fragment(name, f'`#x`.`n_{name}`', name in json_text)} END")
    return f"concat('{{', concat_ws(',', {', '.join(pieces)}), '}}')"


# --------------------------------------------------------------------------- the plan


def _source_rows(items: DataFrame, spec, ctx: Context) -> DataFrame:
    """The source's post rows (the contract's columns and the group keys), or
    each event's arrival."""
    keys = [quoted(k) for k in ctx.group_keys]
    if spec.source is None:
        return events(items).selectExpr(
            "trace_id", "seq", f"{ARRIVAL} AS phase", "time", "time AS slot_due", "CAST(0 AS BIGINT) AS slot",
            "'insert' AS side", "seq AS pos", "id", *keys)
    posted = family(spec.source).posts(items, spec.source, ctx)
    if all(k in posted.columns for k in ctx.group_keys):
        return posted.selectExpr(*CONTRACT, *keys)
    return posted.selectExpr(*CONTRACT).join(events(items).select("trace_id", "id", *keys), ["trace_id", "id"], "left")


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
    rows = _source_rows(items, spec, ctx)
    if several_posts(spec.source) or keys:
        timer = "phase = 0"
        rows = rows.selectExpr("*", f"CASE WHEN {timer} THEN slot_due ELSE 0 END AS `#pd`",
                               f"CASE WHEN {timer} THEN slot ELSE 0 END AS `#ps`",
                               f"CASE WHEN {timer} THEN shiftright(pos, {MEMBER_SHIFT}) ELSE 0 END AS `#pm`")
    else:
        rows = rows.selectExpr("*", "CAST(0 AS BIGINT) AS `#pd`", "CAST(0 AS BIGINT) AS `#ps`",
                               "CAST(0 AS BIGINT) AS `#pm`")
    if wanted:
        rows = rows.join(events(items).select("trace_id", "id", *wanted), ["trace_id", "id"], "left")
    values = [f"CAST({quoted(v)} AS DOUBLE)" for v in spec.values()]
    point = " AND ".join(["side IS NOT NULL", *(f"{v} IS NOT NULL" for v in values)])
    sign = "CASE side WHEN 'insert' THEN 1 WHEN 'remove' THEN -1 ELSE 0 END"
    staged = rows.selectExpr(
        "*", "CASE WHEN side = 'remove' THEN 1 ELSE 0 END AS `#side`",
        f"CASE WHEN {point} THEN {sign} ELSE 0 END AS `#d`",
        *(f"{v} AS `#v{i}`" for i, v in enumerate(values)))
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
        staged = staged.selectExpr("*", f"sum(CASE WHEN side IS NULL THEN 0 ELSE {sign} END) {_RUNNING} AS `#size`")
        state = ["`#size` AS `#n`"]
    # the additional properties of a row: named ones as `n_<name>`, the wildcard's as `w_<name>`
    extras = [f"'n_{name}', {quoted(name) if name != 'id' else 'id'}" for name in spec.extra]
    if spec.all_properties:
        extras += [f"'w_{name}', {quoted(name) if name != 'id' else 'id'}" for name in ("id", *props)]
    extra_struct = f"named_struct({', '.join(extras)})" if extras else "named_struct('n_', 0)"
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
    json_text = frozenset(f.name for f in items.schema.fields if f.metadata.get(JSON_TEXT))
    new_json = _row_json(spec, props, json_text)
    units = units.selectExpr("*", f"{new_json} AS `#new`")
    initial = _initial(spec, props)
    units = units.selectExpr(
        "*", f"coalesce(lag(`#new`) OVER ({_BY_POST}), {initial}) AS `#before`",
        f"coalesce(lag(`#n`) OVER ({_BY_POST}), 0) AS `#n_before`")
    if isinstance(spec, Size):
        units = units.where("`#n` <> `#n_before`")
    posted = units.selectExpr(
        "trace_id", *(quoted(k) for k in keys), *_POST, "`#new`",
        f"coalesce(lag(`#new`) OVER ({_BY_POST}), `#before`) AS `#old`")
    if keys and not all(spec.has_field(k) for k in keys):  # the keys' values added to the group's rows
        added = ", ',', ".join(_json_fragment(k, quoted(k), k in json_text) for k in keys)
        posted = posted.selectExpr(
            "*", *(f"concat(substring({c}, 1, length({c}) - 1), ',', {added}, '}}') AS `{c.strip('`')}k`"
                   for c in ("`#new`", "`#old`"))
        ).selectExpr(*(quoted(c) for c in posted.columns if c not in ("#new", "#old")),
                     "`#newk` AS `#new`", "`#oldk` AS `#old`")
    # a post's rows keep its place in the unit: (due, slot, member) order the posts
    return posted.selectExpr(
        "trace_id", "seq", "phase", "time", "`#pd` AS slot_due", "`#ps` AS slot",
        "explode(array(named_struct('side', 'insert', 'values', `#new`), "
        "named_struct('side', 'remove', 'values', `#old`))) AS `#p`", "`#pm` AS `#pm`",
    ).selectExpr(*(c for c in CONTRACT[:6]), "`#p`.side AS side", "CAST(`#pm` AS BIGINT) AS pos",
                 "CAST(NULL AS STRING) AS id", "`#p`.values AS `values`")


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


def _initial(spec, props: tuple[str, ...]) -> str:
    """SQL: the row of the empty statistics, before any new event (no
    additional properties: a null `#x`)."""
    zero = {"#n": "CAST(0 AS BIGINT)", "#sx": "0D", "#sxx": "0D", "#sy": "0D", "#syy": "0D", "#sxy": "0D",
            "#sxw": "double('NaN')", "#sw": "double('NaN')"}
    text = _row_json(spec, props)
    for name, value in zero.items():
        text = text.replace(f"`{name}`", f"({value})")
    extras = [f"'n_{name}', CAST(NULL AS STRING)" for name in spec.extra]
    extras += [f"'w_{name}', CAST(NULL AS STRING)" for name in (("id", *props) if spec.all_properties else ())]
    struct = f"named_struct({', '.join(extras)})" if extras else "named_struct('n_', 0)"
    return text.replace("`#x`", f"(CASE WHEN false THEN {struct} END)")


POSTS = {Size: derived, Uni: derived, Linest: derived, Correl: derived, WeightedAvg: derived}
CHECKS = {cls: check for cls in POSTS}
