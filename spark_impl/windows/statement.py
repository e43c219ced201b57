"""Esper statements (`oracle.model.Statement`, Esper's rules: `select ... from
E[(filter)]<window> [where] [group by] [having]`) as relational operations
over the window's own posts (Esper's reference, "Processing Model": the five
shapes of aggregation and grouping; "EPL Reference: Clauses").

The window runs as its own family over the items; its rows are the posts a
statement reads. Derived here from Esper's documented model, in this
module's terms:

* The stream filter `E(c)` keeps an event from the window altogether: an
  event for which `c` is not true becomes an `advance` to its arrival clock
  (its walk still fires the window's timers; it arrives nowhere).
* A post is the rows the window posted together: one unit of work's rows
  (trace, seq, phase, time), split further where a unit holds several posts:
  under `#groupwin` each sub-window's timer fires its own post (`slot_due`,
  `slot`), in an intersection or union of several timed members each member's
  timer (`pos >> MEMBER_SHIFT`). The post key orders the posts of a trace.
* Over a derived-value window the rows are its rows, not events: each post's
  new row (`insert`) and old row (`remove`), its typed fields as columns
  (`derived.fields_of`: the statistics, the additional properties and keys
  with the events' column types), `*` all of them; its posts carry their
  place as is (`slot_due`, `slot`, `pos`).
* WHERE drops the event rows it is not true for; a post left with no row
  (where there is a WHERE) is no post. An empty post (FORCE_UPDATE) is a
  post of no event.
* Each GROUP BY value is a group (no keys: one group per trace). Its rows
  are ordered by post, then within a post inserts first, then the window's
  order: Esper's aggregators enter a post's new events, then leave its old
  ones, one at a time. Over that order, window functions sharing one sort:
  - a count (`count(*)`, `count(x)`, the count inside `sum` and `avg`) is the
    running sum of +1 per entering and -1 per leaving row, clamped at 0
    where the window may post as removed what it never inserted (a leave at
    0 leaves 0: the running sum less its lowest value below 0 so far);
  - a total is reset to 0 by a leave at a count of 1 or less: the running
    sum of the signed values less its value at the last reset row; `sum` and
    `avg` are null at a count of 0;
  - `distinct` gates the rows by the value's own clamped count (a second
    ordering, per group and value);
  - `min` and `max` need the values themselves: a value counted is present
    from the group's post that makes its count positive up to the next post
    that changes it (posts numbered per group by `dense_rank`), exploded
    over those posts, and each (group, post) takes the least and greatest.
  The state after a post is the value on the group's last row of the post.
  Where every leave is of an entered event (most windows), the count never
  dips within a post and reaches 0 only at its end, so a post's rows are
  read together (`_Plan._by_post`).
  Over a window whose every arrival is one post and whose contents are then
  the sub-window's last n events (`spark_impl.windows.Frame`: `#length(n)`,
  `#lastevent`, `#keepall`), where each group is one sub-window (GROUP BY
  the `#groupwin` keys, or neither) and every aggregate is kept by counts,
  the same running sums are read off the events in arrival order, each
  arrival moving them by the event entering and the n-th before it leaving
  (`_Plan.framed`): one sort of the events, the window's posts never built.
  Over `#time` (`spark_impl.windows.TimeFrame`), with any GROUP BY of
  properties, each event's expiry is found by the clock and the state after
  and before each arrival and each expiry post is read off the group's
  events in time order (`_Plan.time_framed`): the clock's sort and one more.
  The state before a post is the state after the group's previous post, or,
  at its first, the aggregators' over nothing (a count 0, the others null):
  so where a post gives a group one new and one old row, the old row is the
  group's previous new row as posted (`lag`), or the row of nothing.
* The rows, by the statement's shape (`Statement.shape`):
  - no aggregate: a row per event row, new rows from inserts, old from removes;
  - aggregates, no GROUP BY, every property inside an aggregate: per post one
    new row (the state after) and one old row (the state before);
  - aggregates, no GROUP BY, a property outside: a row per event row with the
    state after its post;
  - GROUP BY, fully aggregated: per post and group with a row in it one new
    row (after) and one old row (before), read on the group's last row of
    the post; the groups in the order of their first rows in the post (that
    row's place is the output row's: no ranking of the groups);
  - GROUP BY, not fully aggregated: a row per event row with its group's
    state after the post.
* HAVING keeps the rows it is true for, each read with its own state. The
  stream selector keeps the new rows (`istream`), both (`irstream`), or the
  old rows delivered as new (`rstream`).

A CCL aggregation window (`output` "store") is the same state read another
way: per post and group touched, the group's row is in the window when the
group holds rows and HAVING holds; a row that comes in is posted `insert`, one
that stays `update`, one that goes `remove` (CCL's delete) with the values it
was last posted with (`_Plan._store`).

Values are Java's as Esper applies them, in SQL (`JavaSql`): arithmetic and
comparisons of null are null, `and`/`or` three-valued (SQL's own); an int
with an int stays an int for `+ - * %`; `/` is a double, a zero divisor giving
Java's infinities or NaN (Spark's `/` would give null or fail); an int `%`
zero is null (decided in the oracle), a double `%` zero NaN. Kinds Esper
refuses to combine (a string and a number, `min` of a boolean) are refused
before planning, naming the expression.

Rows go out as typed columns, one per field (`StatementFields`: named by
`Statement.field_names`, typed as Esper types each expression; `*` the
event's `id` and its properties, or a derived-value window's row's fields),
built in one struct per posted row and spread into the family contract's
`#field<i>` columns.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.dialects import expression_text
from oracle.errors import UnsupportedWindow
from oracle.model import (
    DERIVED_WINDOWS,
    Aggregate,
    Binary,
    GroupWin,
    Literal,
    Name,
    Negate,
    Not,
    expression_nodes,
    nested_specs,
)
from oracle.model import Statement
from spark_impl.frames import JSON_TEXT, NO_VALUES
from spark_impl.pipeline import output_fields
from spark_impl import clock
from spark_impl.windows import Context, Frame, TimeFrame, family
from spark_impl.windows.base import events, quoted
from spark_impl.windows.derived import fields_of as derived_fields_of
from spark_impl.windows.derived import several_posts
from spark_impl.windows.pane_query import sql_literal
from spark_impl.windows.intersect import MEMBER_SHIFT

CONTRACT = ("trace_id", "seq", "phase", "time", "slot_due", "slot", "side", "pos", "id")
#: a row's place in its post: inserts first, then the window's order
_PLACE = ("`#sr`", "slot_due", "slot", "pos")
_ROW_ORDER = ", ".join(_PLACE)
#: the same, last to first (`_Plan._by_post`)
_REVERSED_ROW_ORDER = ", ".join(f"{c} DESC NULLS LAST" for c in _PLACE)
_NUMBERS = ("long", "double")
_SIZE = Aggregate("count")  # count(*): a group's size
#: a post's one row (no GROUP BY): its place is the post's
_POST_PLACE = ("`#pd` AS slot_due", "`#ps` AS slot", f"shiftleft(`#pm`, {MEMBER_SHIFT}) AS pos")
#: a group's row: the place of the group's first row in the post, inserts first. A post's rows share
#: (slot_due, slot) where it has both sides (an arrival, a batch's release), and the posts of one unit are
#: ordered by them (`#pd`, `#ps`) and by pos's member bits (`#pm`): so no ranking of the groups is needed
_GROUP_PLACE = ("`#fd` AS slot_due", "`#fs` AS slot", "`#fp` AS pos")
_SET_FUNCTIONS = ("min", "max")
_SQL_TYPES = {"long": "BIGINT", "double": "DOUBLE", "string": "STRING", "boolean": "BOOLEAN"}
#: a value kind in a refusal's words
_KIND_WORDS = {"long": "an integer", "double": "a double", "string": "a string", "boolean": "a boolean",
               "null": "null", "other": "a list or an object"}


# --------------------------------------------------------------------------- values: Java's rules in SQL


def _kind_of(data_type: T.DataType) -> str:
    if isinstance(data_type, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return "long"
    if isinstance(data_type, (T.DoubleType, T.FloatType)):
        return "double"
    if isinstance(data_type, T.StringType):
        return "string"
    if isinstance(data_type, T.BooleanType):
        return "boolean"
    return "other"


def _column_kind(field: T.StructField) -> str:
    """A property column's kind: `other` for JSON text (a list or object),
    `null` for a column no event gives a value (`NO_VALUES`)."""
    if field.metadata.get(JSON_TEXT):
        return "other"
    return "null" if field.metadata.get(NO_VALUES) else _kind_of(field.dataType)


def _double(sql: str, kind: str) -> str:
    return sql if kind == "double" else f"CAST({sql} AS DOUBLE)"


class JavaSql:
    """Expression trees as Spark SQL with Java's value rules (module
    docstring). `kinds`: a property's kind (`long`, `double`, `string`,
    `boolean`); `aggregates`: an aggregate node's (SQL, kind) in this context;
    `event`: whether a property outside an aggregate has a row to read (a
    fully aggregated row of no event reads null)."""

    def __init__(self, kinds: dict[str, str], aggregates: dict | None = None, event: bool = True):
        self.kinds, self.aggregates, self.event = kinds, aggregates or {}, event

    def value(self, node: Any) -> tuple[str, str]:
        kind = type(node)
        if kind is Literal:
            return sql_literal(node.value)
        if kind is Name:
            found = self.kinds.get(node.name)
            if found in (None, "null") or not self.event:
                return "NULL", "null"
            if found == "other":
                raise UnsupportedWindow(f"statement: property {node.name!r} holds a list or an object; "
                                        "the Spark statements read numbers, strings and booleans")
            return quoted(node.name), found
        if kind is Aggregate:
            if node not in self.aggregates:
                raise UnsupportedWindow(f"statement: {expression_text(node)} has no value here")
            return self.aggregates[node]
        if kind is Negate:
            a, ka = self.value(node.operand)
            if ka == "null":
                return "NULL", "null"
            self._need(ka in _NUMBERS, "-", node, ka)
            return f"(- {a})", ka
        if kind is Not:
            a, ka = self.value(node.operand)
            if ka == "null":
                return "NULL", "null"
            self._need(ka == "boolean", "not", node, ka)
            return f"(NOT {a})", "boolean"
        if kind is not Binary:
            raise UnsupportedWindow(f"statement: the Spark statements do not evaluate {expression_text(node)} "
                                    f"({type(node).__name__})")
        (a, ka), (b, kb) = self.value(node.left), self.value(node.right)
        op = node.op
        if op in ("and", "or"):
            self._need(ka in ("boolean", "null") and kb in ("boolean", "null"), op, node, ka, kb)
            return f"({a} {op.upper()} {b})", "boolean"
        if "null" in (ka, kb):
            return "NULL", "boolean" if op not in "+-*/%" else "null"
        if op in ("+", "-", "*", "/", "%"):
            self._need(ka in _NUMBERS and kb in _NUMBERS, op, node, ka, kb)
            if op == "/":
                return _java_divide(_double(a, ka), _double(b, kb)), "double"
            if ka == kb == "long":
                if op == "%":
                    return f"(CASE WHEN {b} = 0 THEN NULL ELSE {a} % {b} END)", "long"
                return f"({a} {op} {b})", "long"
            x, y = _double(a, ka), _double(b, kb)
            if op == "%":
                return f"(CASE WHEN {y} = 0 THEN double('NaN') ELSE {x} % {y} END)", "double"
            return f"({x} {op} {y})", "double"
        numbers = ka in _NUMBERS and kb in _NUMBERS
        self._need(numbers or ka == kb == "string" or (ka == kb == "boolean" and op in ("=", "!=")), op, node,
                   ka, kb)
        sql_op = {"=": "=", "!=": "<>"}.get(op, op)
        if numbers and ka != kb:
            a, b = _double(a, ka), _double(b, kb)
        if "double" in (ka, kb):  # Java: a comparison with NaN is false (`!=` true); Spark orders NaN last
            nan = " OR ".join(f"isnan({x})" for x, k in ((a, ka), (b, kb)) if k == "double" or ka != kb)
            return (f"(CASE WHEN {a} IS NULL OR {b} IS NULL THEN NULL WHEN {nan} THEN {str(op == '!=').upper()} "
                    f"ELSE {a} {sql_op} {b} END)"), "boolean"
        return f"({a} {sql_op} {b})", "boolean"

    def truth(self, node: Any) -> str:
        """SQL true exactly where the condition is true (false and null are not)."""
        sql, kind = self.value(node)
        self._need(kind in ("boolean", "null"), "a condition", node, kind)
        return f"coalesce({sql}, false)"

    @staticmethod
    def _need(ok: bool, op: str, node: Any, *kinds: str) -> None:
        """Refuse `node` (written as the statement writes it) unless `ok`: `op` over `kinds` does not compile."""
        if not ok:
            over = " and ".join(_KIND_WORDS.get(kind, kind) for kind in kinds)
            raise UnsupportedWindow(f"statement: {expression_text(node)} is refused by Esper's compiler "
                                    f"({op} over {over})")


def _java_divide(a: str, b: str) -> str:
    """Java's double division: a zero divisor gives a signed infinity, or NaN for 0/0 and NaN/0."""
    negative_zero = f"startswith(CAST({b} AS STRING), '-')"
    infinity = f"double('Infinity') * signum({a}) * CASE WHEN {negative_zero} THEN -1 ELSE 1 END"
    return f"(CASE WHEN {b} = 0 THEN CASE WHEN {a} = 0 OR isnan({a}) THEN double('NaN') ELSE {infinity} END ELSE {a} / {b} END)"


# --------------------------------------------------------------------------- the rows' fields and types

#: a value kind's column type; a field that is always null (a `null` literal, a property no event gives) a string
_FIELD_TYPES = {"long": T.LongType(), "double": T.DoubleType(), "string": T.StringType(), "boolean": T.BooleanType(),
                "null": T.StringType()}


def _aggregate_kind(node: Aggregate, argument: str) -> str:
    """Esper's type of an aggregate over an argument of kind `argument`
    ("Aggregation Functions"): `count` a long, `sum` of a double a double
    and of an integer a long, `avg` a double, `min` and `max` the
    argument's type."""
    if node.function == "count":
        return "long"
    if node.function == "sum":
        return "double" if argument == "double" else "long"
    return "double" if node.function == "avg" else argument


class StatementFields:
    """A statement's output fields (`Statement.field_names`) and what each
    reads, typed as Esper types them: a property its column's type (an
    `int` column stays `int`); an expression by Java's rules (`JavaSql`'s
    kinds: an aggregate by `_aggregate_kind`, `+ - * %` of two integers a
    long, of a double a double, `/` a double, comparisons and `and`/`or`
    booleans); `*` the event's `id` and every property column (over a
    derived-value window: its row's fields, `_row_schema`). The rows the
    statement reads are the events' columns, or a derived-value window's
    rows' (`kinds`)."""

    def __init__(self, spec: Statement, columns: dict[str, T.StructField]):
        self.spec = spec
        window = spec.window.window if isinstance(spec.window, GroupWin) else spec.window
        self.derived = window if isinstance(window, DERIVED_WINDOWS) else None
        self.event_columns = columns
        #: a derived-value window's row fields and the index of the window's field each is (`output_fields`)
        self.row_fields = _row_fields(self.derived, spec.window, columns) if self.derived is not None else ()
        self.row_schema = T.StructType([f for f, _ in self.row_fields]) if self.derived is not None else None
        self.columns = columns if self.row_schema is None else {f.name: f for f in self.row_schema.fields}
        self.kinds = {name: _column_kind(f) for name, f in self.columns.items()}

    def aggregate_kinds(self) -> dict:
        """Each aggregate's kind (`_aggregate_kind` of its argument's)."""
        java = JavaSql(self.kinds)
        found = {}
        for node in _aggregate_nodes(self.spec):
            argument = java.value(node.argument)[1] if node.argument is not None else "long"
            found[node] = _aggregate_kind(node, argument)
        return found

    def sources(self) -> list[tuple[T.StructField, Any]]:
        """Each output field and what it reads: a column's name (`*`, a
        property) or an expression node."""
        spec, out = self.spec, []
        for_all = spec.shape == "row_for_all"
        java = JavaSql(self.kinds, {node: ("NULL", kind) for node, kind in self.aggregate_kinds().items()},
                       event=not for_all)
        for item, name in zip(spec.select, spec.field_names):
            node = item.expression
            if node is None:
                named = ([] if self.derived is not None else [T.StructField("id", T.StringType())]) + [
                    f for f in self.columns.values() if f.name != "id" or self.derived is not None]
                out += [(T.StructField(f.name, f.dataType, metadata={JSON_TEXT: True} if f.metadata.get(JSON_TEXT) else {}),
                         f.name) for f in named]
            elif isinstance(node, Name) and not for_all and self.kinds.get(node.name) not in (None, "null", "other"):
                found = self.columns[node.name]
                out.append((T.StructField(name, found.dataType), node))
            else:
                out.append((T.StructField(name, _FIELD_TYPES[java.value(node)[1]]), node))
        return out


def _aggregate_nodes(spec: Statement) -> list[Aggregate]:
    """The statement's aggregates (its select items' and HAVING's), each once, in order."""
    found = []
    for node in [*(i.expression for i in spec.select if i.expression is not None), spec.having]:
        for inner in expression_nodes(node) if node is not None else ():
            if isinstance(inner, Aggregate) and inner not in found:
                found.append(inner)
    return found


def statement_fields(spec: Statement, columns: dict[str, T.StructField], group_keys=()) -> tuple[T.StructField, ...]:
    """The family contract's `FIELDS` (`StatementFields`)."""
    return tuple(field for field, _ in StatementFields(spec, columns).sources())


# --------------------------------------------------------------------------- the plan


def _window(spec: Statement, ctx: Context):
    """The statement's window and its context (a `GroupWin`: its keys as more partition columns)."""
    window = spec.window
    if isinstance(window, GroupWin):
        keys = tuple(k for k in window.keys if k not in ctx.group_keys)
        ctx = Context(partition=ctx.partition + keys, group_keys=ctx.group_keys + keys, properties=ctx.properties,
                      jumps=ctx.jumps, pane_rows=ctx.pane_rows, one_trace=ctx.one_trace)
        window = window.window
    return window, ctx


def check(spec: Statement) -> None:
    """`UnsupportedWindow` for a statement whose window Spark does not build."""
    family(_window(spec, Context(partition=("trace_id",)))[0])


class _Plan:
    """One statement's plan over the validated items (module docstring)."""

    def __init__(self, items: DataFrame, spec: Statement, ctx: Context):
        self.spec, self.ctx = spec, ctx
        # what the stream filter reads: the events; what the rest reads: the window's rows (events, or a
        # derived-value window's rows, their fields parsed from its `values`)
        columns = {f.name: f for f in items.schema.fields if f.name in ctx.properties}
        self.event_kinds = {name: _column_kind(f) for name, f in columns.items()}
        self.fields = StatementFields(spec, columns)
        self.derived, self.row_schema, self.kinds = self.fields.derived, self.fields.row_schema, self.fields.kinds
        # whether the window may post as removed what it never inserted (`Spec.REMOVES_UNENTERED`)
        self.unentered = any(type(inner).REMOVES_UNENTERED for inner in nested_specs(spec.window))
        self.items = self._filtered(items)
        found = _aggregate_nodes(spec)
        if spec.rules.posted == "store" and _SIZE not in found:
            found.append(_SIZE)  # an aggregation window needs each group's size: is the group empty?
        self.aggregates = tuple(found)
        # a GROUP BY property is its own column (the window's partitioning by it then holds); another key a new
        # one; a double key its text, where Java's equals holds (Spark's grouping takes -0.0 for 0.0; `_key_sql`)
        self.keys = tuple(quoted(k.name) if isinstance(k, Name) and self.kinds.get(k.name) not in (None, "other", "double")
                          else f"`#k{n}`" for n, k in enumerate(spec.keys))

    # -- input

    def _filtered(self, items: DataFrame) -> DataFrame:
        """The stream filter: an event it is not true for is an advance to its arrival clock."""
        if self.spec.filter is None:
            return items
        holds = JavaSql(self.event_kinds).truth(self.spec.filter)
        passes = f"kind <> 'event' OR {holds}"
        columns = [f"CASE WHEN {passes} THEN kind ELSE 'advance' END AS kind",
                   f"CASE WHEN {passes} THEN id END AS id"]
        replaced = {"kind", "id"}
        return items.selectExpr(*(c for c in columns), *(quoted(c) for c in items.columns if c not in replaced))

    def rows(self) -> DataFrame:
        """The window's posts: event rows with their post key, group keys and
        properties (WHERE applied), and one row per empty post."""
        window, inner = _window(self.spec, self.ctx)
        posted = family(window).posts(self.items, window, inner)
        if self.derived is not None:  # a derived-value window's rows: its fields (`#field<i>`) as named columns
            fields = self.fields.row_fields
            posted = posted.select(*(c for c in CONTRACT if c != "id"),
                                   *(F.col(f"`#field{i}`").alias(f.name) for f, i in fields),
                                   *([] if any(f.name == "id" for f, _ in fields)
                                     else [F.lit(None).cast("string").alias("id")]))
        wanted = sorted(self._properties())
        carried = [p for p in wanted if p in posted.columns]  # a family may carry the posted event's properties
        several = isinstance(self.spec.window, GroupWin)
        member = several_posts(window)
        # the post key's columns that vary (the others are the constant 0 here): compared flat, not as a struct
        self.post = ["seq", "phase", "time", *(["`#pd`"] if several or member else []),
                     *(["`#ps`"] if several else []), *(["`#pm`"] if member else [])]
        timer = "phase = 0"
        if self.derived is not None:  # its rows carry their post's place as is (`spark_impl.windows.derived`)
            place = ["slot_due AS `#pd`", "slot AS `#ps`", "pos AS `#pm`"]
            self.post = ["seq", "phase", "time", "`#pd`", "`#ps`", "`#pm`"]
        else:
            place = [f"CASE WHEN {timer} AND {str(several or member).lower()} THEN slot_due ELSE 0 END AS `#pd`",
                     f"CASE WHEN {timer} AND {str(several).lower()} THEN slot ELSE 0 END AS `#ps`",
                     f"CASE WHEN {timer} AND {str(member).lower()} THEN shiftright(pos, {MEMBER_SHIFT}) ELSE 0 END "
                     "AS `#pm`"]
        posted = posted.selectExpr(
            *CONTRACT, *(quoted(p) for p in carried if p != "id"), *place,
            "CASE side WHEN 'insert' THEN 0 WHEN 'remove' THEN 1 ELSE 2 END AS `#sr`")
        missing = [p for p in wanted if p not in carried]
        rows = posted
        if missing:
            events = self.items.where("kind = 'event'").select("trace_id", "id", *(quoted(p) for p in missing))
            rows = posted.join(events, ["trace_id", "id"], "left")
        if self.spec.where is not None:  # with a WHERE, a post of no kept event is no post
            rows = rows.where(f"side IS NOT NULL AND {JavaSql(self.kinds).truth(self.spec.where)}")
        elif self.spec.shape != "row_for_all":  # an empty post is a post of the one group only
            rows = rows.where("side IS NOT NULL")
        computed = [f"{self._key_sql(k)} AS {c}" for k, c in zip(self.spec.keys, self.keys) if c.startswith("`#k")]
        return rows.selectExpr("*", *computed) if computed else rows

    def _key_sql(self, key) -> str:
        """SQL of a GROUP BY value as a group's key: equal where Java's `equals` is
        (`Double.equals`: -0.0 and 0.0 two, every NaN one), so a double by its
        text (each double has its own, NaN one), since Spark groups -0.0 with 0.0."""
        sql, kind = JavaSql(self.kinds).value(key)
        return f"CAST({sql} AS STRING)" if kind == "double" else sql

    @property
    def post_order(self) -> str:
        """The post key's varying columns, in order (`rows` sets them)."""
        return ", ".join(self.post)

    def _properties(self) -> set[str]:
        names = {n.name for node in self._expressions() for n in expression_nodes(node) if isinstance(n, Name)}
        if any(item.expression is None for item in self.spec.select):  # `*`: the event's properties, or the row's fields
            names |= set(self.ctx.properties) if self.derived is None else set(self.kinds)
        return {n for n in names if n in self.kinds}

    def _expressions(self) -> list:
        spec = self.spec
        return [*(i.expression for i in spec.select if i.expression is not None), *spec.keys,
                *(c for c in (spec.where, spec.having) if c is not None)]

    # -- aggregation state

    def _group(self) -> str:
        return ", ".join(["trace_id", *self.keys])

    def state(self, rows: DataFrame, group_rows: bool) -> DataFrame:
        """Each row with every aggregator's state after its post (`#an<i>`, a
        count; `#at<i>`, a sum's total) and, where each (post, group) gives
        one row (`group_rows`), only the group's one row of the post (`#row`),
        with the place of the group's first row in it (`#fd`, `#fs`, `#fp`);
        all flat columns (a struct through a window function costs a third
        more): the aggregators' rules (module docstring) as running values
        over the group's rows in order, window functions sharing one sort.

        A total is reset to 0 by a leave at a count of 1 or less: the running
        sum of the signed values less its value at the last reset. (Esper adds
        and subtracts one value at a time from the reset; the difference of two
        running sums is the same number up to rounding, within the comparison's
        1e-9.) Where every leave is of an entered event, a post's rows are read
        together (`_by_post`); where a leave may meet a count of 0
        (`Spec.REMOVES_UNENTERED`), one by one (`_by_row`)."""
        sign = "CASE side WHEN 'insert' THEN 1 WHEN 'remove' THEN -1 ELSE 0 END"
        staged = [f"{sign} AS `#sign`"]
        arguments = self._arguments()
        for i, (arg, _) in arguments.items():
            staged += [f"{arg} AS `#v{i}`", f"side IN ('insert', 'remove') AND {arg} IS NOT NULL AS `#in{i}`"]
        rows = rows.selectExpr("*", *staged)
        counted, summed, doubles = self._counted(arguments)
        for i in counted:
            if self.aggregates[i].distinct:  # the value's count gates the aggregator (a double's by its text: `_key_sql`)
                value = f"CAST(`#v{i}` AS STRING)" if arguments[i][1] == "double" else f"`#v{i}`"
                rows = _clamped(rows, f"`#in{i}`", f"{self._group()}, {value}", f"{self.post_order}, {_ROW_ORDER}",
                                f"#r{i}")
                rows = rows.selectExpr("*", f"`#in{i}` AND CASE WHEN `#sign` = 1 THEN `#r{i}_before` = 0 "
                                            f"ELSE `#r{i}_before` <= 1 END AS `#gate{i}`")
            else:
                rows = rows.selectExpr("*", f"`#in{i}` AS `#gate{i}`")
        sets = [i for i, node in enumerate(self.aggregates) if node.function in _SET_FUNCTIONS]
        if sets:  # on every row, before a post's rows become one
            rows = self._sets(rows, sets)
        by = self._by_row if self.unentered else self._by_post
        return by(rows, group_rows, counted, summed, doubles)

    def _arguments(self) -> dict[int, tuple[str, str]]:
        """Each aggregate's argument (SQL, kind) by index, `count(*)`'s the
        constant 1, refused where Esper's compiler refuses its kind."""
        java = JavaSql(self.kinds)
        found = {}
        for i, node in enumerate(self.aggregates):
            arg, kind = java.value(node.argument) if node.argument is not None else ("1", "long")
            JavaSql._need(node.function == "count" or kind in ((*_NUMBERS, "null") if node.function in ("sum", "avg")
                                                             else (*_NUMBERS, "string", "null")), node.function, node,
                          kind)
            found[i] = (arg, kind)
        return found

    def _counted(self, arguments: dict) -> tuple[list, list, list]:
        """The indexes of the aggregates kept by counts (all but `min` and
        `max`), of those with a total (`sum`, `avg`), and of the totals of
        doubles (which may meet NaN and infinities: counted apart)."""
        counted = [i for i, node in enumerate(self.aggregates) if node.function not in _SET_FUNCTIONS]
        summed = [i for i in counted if self.aggregates[i].function in ("sum", "avg")]
        return counted, summed, [i for i in summed if arguments[i][1] == "double"]

    def frame(self) -> Frame | TimeFrame | None:
        """The window's `Frame` or `TimeFrame` where the statement aggregates
        the events themselves (`framed`, `time_framed`): a row per post and
        group (`row_per_group`, `row_for_all`), every aggregate kept by counts
        (`sum`, `avg`, `count`, none distinct), grouped by properties. Over a
        `Frame` each group is one sub-window (GROUP BY the `#groupwin` keys,
        or neither). A `TimeFrame` holds each event by its own clock, so any
        grouping reads it; but not under `#groupwin` (its sub-windows' timers
        post apart, each in its own place: read off the posts)."""
        spec = self.spec
        if (spec.rules.posted != "update" or spec.shape not in ("row_per_group", "row_for_all")
                or self.derived is not None or self.unentered
                or any(node.function in _SET_FUNCTIONS or node.distinct for node in self.aggregates)):
            return None
        named = [k.name for k in spec.keys if isinstance(k, Name) and self.kinds.get(k.name) not in (None, "other")]
        declared = family(_window(spec, self.ctx)[0]).frame
        if len(named) != len(spec.keys):
            return None
        sub_windows = spec.window.keys if isinstance(spec.window, GroupWin) else ()
        if isinstance(declared, TimeFrame):
            return None if sub_windows else declared
        return declared if set(named) == set(sub_windows) else None

    def framed(self, frame: Frame) -> DataFrame:
        """The state after each post of a `Frame` window, its group's one row
        (`state`'s columns, `#row` true), from the events in arrival order
        per group (one sort; the window's posts are not built): an arrival
        is its group's post where WHERE keeps its event or the one it pushes
        out, the `size`-th event before it (`lag`). Per aggregator, the
        arrival moves a count by +1 for the event entering and -1 for the one
        leaving, each where counted (kept, its value not null), and a total by
        their values: the running sums of the moves are the state after each
        post, a total less its running sum at the last post that left the
        group empty (as in `state`; Esper enters the new event, then leaves
        the old). The group's row is the inserted event's where it is kept,
        else the removed one's."""
        group = self._group()
        window = f"PARTITION BY {group} ORDER BY seq"
        kept = JavaSql(self.kinds).truth(self.spec.where) if self.spec.where is not None else "true"
        arguments = self._arguments()
        counted, summed, doubles = self._counted(arguments)
        columns = dict.fromkeys(["trace_id", *self.keys, "seq", "time"])
        rows = events(self.items).selectExpr(*columns, f"{kept} AS `#kept`",
                                             *(f"{arg} AS `#v{i}`" for i, (arg, _) in arguments.items()))
        entering = {i: f"`#kept` AND `#v{i}` IS NOT NULL" for i in counted}
        leaving = {}
        if frame.size is not None:  # the event pushed out, if any
            back = f"{frame.size}) OVER ({window})"
            rows = rows.selectExpr("*", f"coalesce(lag(`#kept`, {back}, false) AS `#kept_out`",
                                   f"lag(seq, {back} AS `#seq_out`",
                                   *(f"lag(`#v{i}`, {back} AS `#w{i}`" for i in summed),
                                   *(f"coalesce(lag({entering[i]}, {back}, false) AS `#out{i}`" for i in counted))
            leaving = {i: f"`#out{i}`" for i in counted}
        else:
            rows = rows.selectExpr("*", "false AS `#kept_out`", "CAST(NULL AS BIGINT) AS `#seq_out`")

        def moved(i: int, value: str, side: dict, sign: int) -> str:
            """SQL: the running sum's step of one side's event."""
            if i not in side:
                return "0"
            finite = f"AND {_finite(value)}" if i in doubles else ""
            return f"CASE WHEN {side[i]} {finite} THEN {'' if sign > 0 else '-'}{value} ELSE 0 END"

        steps = {f"#p{i}": f"{moved(i, '1', entering, 1)} + {moved(i, '1', leaving, -1)}" for i in counted}
        steps.update({f"#c{i}": f"{moved(i, f'`#v{i}`', entering, 1)} + {moved(i, f'`#w{i}`', leaving, -1)}"
                      for i in summed})
        for i in doubles:
            codes = [f"CASE WHEN {side[i]} THEN {_non_finite(value, sign)} ELSE 0 END"
                     for side, value, sign in ((entering, f"`#v{i}`", "1"), (leaving, f"`#w{i}`", "-1")) if i in side]
            steps.update({f"#qi{i}": " + ".join(codes)})
        through = f"OVER ({window} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        rows = rows.selectExpr("*", *(f"sum({step}) {through} AS `{name}`" for name, step in steps.items()))
        rows = rows.where("`#kept` OR `#kept_out`").selectExpr(
            *(quoted(c) for c in rows.columns if not c.startswith("#")), *(quoted(c) for c in steps),
            "1 AS phase", "CAST(0 AS BIGINT) AS `#pd`", "CAST(0 AS BIGINT) AS `#ps`", "CAST(0 AS BIGINT) AS `#pm`",
            "time AS `#fd`", "CAST(0 AS BIGINT) AS `#fs`",
            "CASE WHEN `#kept` THEN seq ELSE shiftleft(CAST(1 AS BIGINT), 61) + `#seq_out` END AS `#fp`",
            "true AS `#row`")
        self.post = ["seq"]  # a post is one arrival
        reset = _resets(summed, doubles)
        if reset:  # the running sums at the last post that left the group empty
            rows = rows.selectExpr("*", *(f"last_value(CASE WHEN {empty} THEN `{name}` END, true) {through} AS `{name}r`"
                                          for name, empty in reset.items()))
        after = _states(counted, summed, doubles)
        return rows.selectExpr("*", *(f"{v} AS `#a{name}`" for name, v in after.items()))

    def time_framed(self, frame: TimeFrame) -> DataFrame:
        """The output rows of a statement over a `TimeFrame` window, from the
        events in time order per group (one sort; the window's posts are not
        built). Each event found by the clock its hit (`clock.expiries`: the
        first item reaching its due time `d = t + span`), the rule in time:
        an event's expiry comes before another's arrival exactly when the
        arrival's clock reaches its due time. So, per group, over its events
        kept by WHERE in (time, seq) order, every aggregator's running sums
        (`#n` its count, `#s` its finite values, `#q` a double's NaN and
        infinities) give the state:
        - after an event's arrival: the events through it (`ROWS`), less
          those due by its clock (`RANGE ... span PRECEDING`); before it, the
          same without the event;
        - after an expiry post: the events arrived before its due time
          (`RANGE ... span - 1 FOLLOWING`: no event arrives between the due
          times of one post), less those through the post's last row (the
          group's events of a post are consecutive, having one hit and clock);
          before it, less those before the post's first row.
        A double's NaN and infinities are counted apart (`_NON_FINITE`; the
        codes of a value leaving are its entering codes' halves swapped) and
        restart after a post leaving its count 0 (only an expiry can): their
        running sums less those at the last such post by then (`last_value`
        over the posts due by the arrival's clock, or over the rows before
        the expiry post's last). A finite total needs no such reset: at that
        post the values arrived and those left are the same rows, summed in
        the same order, so their difference is exactly 0. A post's old row is
        the state before it, or the row of nothing at the group's first post."""
        spec, span = self.spec, frame.span
        group, for_all = self._group(), spec.shape == "row_for_all"
        arguments = self._arguments()
        counted, summed, doubles = self._counted(arguments)
        hit = quoted(clock.HIT)
        carry = dict.fromkeys(["trace_id", *(k.name for k in spec.keys), "seq", *sorted(self._properties()), "time"])
        rows = clock.expiries(self.items, span, [quoted(c) for c in carry], jumps=self.ctx.jumps)
        if spec.where is not None:
            rows = rows.where(JavaSql(self.kinds).truth(spec.where))
        rows = rows.selectExpr("trace_id", *self.keys, "seq", "time", f"{hit}.seq AS `#hs`",
                               f"{clock.fire_time(hit, f'(time + {span})')} AS `#ht`",
                               *(f"{arg} AS `#v{i}`" for i, (arg, _) in arguments.items()))
        # each row's moves: its count, its finite value, a double's NaN and infinities entering
        count = {i: f"CASE WHEN `#v{i}` IS NOT NULL THEN 1 ELSE 0 END" for i in counted}
        finite = {i: f"CASE WHEN `#v{i}` IS NOT NULL {'AND ' + _finite(f'`#v{i}`') if i in doubles else ''} "
                     f"THEN `#v{i}` ELSE 0 END" for i in summed}
        codes = {i: f"CASE WHEN `#v{i}` IS NOT NULL THEN {_non_finite(f'`#v{i}`', '1')} ELSE 0 END" for i in doubles}
        in_time = f"PARTITION BY {group} ORDER BY time"
        in_order = f"PARTITION BY {group} ORDER BY time, seq"
        through = f"OVER ({in_order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        before = f"OVER ({in_order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        due = f"OVER ({in_time} RANGE BETWEEN UNBOUNDED PRECEDING AND {span} PRECEDING)"
        arrived = f"OVER ({in_time} RANGE BETWEEN UNBOUNDED PRECEDING AND {span - 1} FOLLOWING)"
        sums = {}
        for i in counted:
            sums.update({f"#nr{i}": f"sum({count[i]}) {through}", f"#ne{i}": f"coalesce(sum({count[i]}) {due}, 0)",
                         f"#na{i}": f"sum({count[i]}) {arrived}"})
        for i in summed:
            sums.update({f"#sr{i}": f"sum({finite[i]}) {through}", f"#sb{i}": f"coalesce(sum({finite[i]}) {before}, 0)",
                         f"#se{i}": f"coalesce(sum({finite[i]}) {due}, 0)", f"#sa{i}": f"sum({finite[i]}) {arrived}"})
        for i in doubles:
            sums.update({f"#qr{i}": f"sum({codes[i]}) {through}", f"#qe{i}": f"coalesce(sum({codes[i]}) {due}, 0)",
                         f"#qa{i}": f"sum({codes[i]}) {arrived}"})
        post = " AND ".join(f"{{0}}({c}) OVER ({in_order}) <=> {c}" for c in ("`#hs`", "`#ht`"))
        rows = rows.selectExpr("*", *(f"{sql} AS `{name}`" for name, sql in sums.items()),
                               f"NOT ({post.format('lag')}) AS `#first`", f"NOT ({post.format('lead')}) AS `#last`")
        # an expiry post's first row (read on its last, one struct): its place, the sums before it
        firsts = {"t": "time", "q": "seq", **{f"n{i}": f"`#nr{i}` - {count[i]}" for i in counted},
                  **{f"s{i}": f"`#sb{i}`" for i in summed}, **{f"q{i}": f"`#qr{i}` - {codes[i]}" for i in doubles}}
        # per state: counts, finite totals, and a double's codes entered and left (the left ones swapped)
        states = {"a": ({i: f"(`#nr{i}` - `#ne{i}`)" for i in counted}, {i: f"(`#sr{i}` - `#se{i}`)" for i in summed},
                        {i: (f"`#qr{i}`", f"`#qe{i}`") for i in doubles}),
                  "x": ({i: f"(`#na{i}` - `#nr{i}`)" for i in counted}, {i: f"(`#sa{i}` - `#sr{i}`)" for i in summed},
                        {i: (f"`#qa{i}`", f"`#qr{i}`") for i in doubles}),
                  "y": ({i: f"(`#na{i}` - `#f`.n{i})" for i in counted}, {i: f"(`#sa{i}` - `#f`.s{i})" for i in summed},
                        {i: (f"`#qa{i}`", f"`#f`.q{i}") for i in doubles})}
        states["b"] = ({i: f"({n} - {count[i]})" for i, n in states["a"][0].items()},
                       {i: f"(`#sb{i}` - `#se{i}`)" for i in summed},
                       {i: (f"(`#qr{i}` - {codes[i]})", f"`#qe{i}`") for i in doubles})

        def met(entered_left: tuple[str, str]) -> str:
            """SQL: the codes of the values entered and of those left (`_NON_FINITE`)."""
            entered, left = entered_left
            return f"({entered} + {_swapped(left)})"

        # the codes at the last expiry post (its last row) that left the count 0
        resets = {}
        for i in doubles:
            found = f"last_value(CASE WHEN `#last` AND `#hs` IS NOT NULL AND {states['x'][0][i]} = 0 " \
                    f"THEN {met(states['x'][2][i])} END, true)"
            resets.update({f"#ra{i}": f"{found} {due}", f"#rx{i}": f"{found} {before}"})
        struct = ", ".join(f"'{name}', {sql}" for name, sql in firsts.items())
        rows = rows.selectExpr("*", f"last_value(CASE WHEN `#first` THEN named_struct({struct}) END, true) {through} "
                                    "AS `#f`", *(f"{sql} AS `{name}`" for name, sql in resets.items()))
        columns = []
        for state, (n, totals, infinite) in states.items():
            reset = "a" if state in "ab" else "x"
            columns += [f"{sql} AS `#{state}n{i}`" for i, sql in n.items()]
            columns += [f"""{_total(sql, f"({met(infinite[i])} - coalesce(`#r{reset}{i}`, 0))" if i in doubles
                                    else None)} AS `#{state}t{i}`""" for i, sql in totals.items()]
        rows = rows.selectExpr("*", *columns)
        arrival = ("seq", "1", "time", *(("time", "0", "seq") if not for_all else ("0", "0", "0")))
        expiry = ("`#hs`", "0", "`#ht`",
                  *((f"`#f`.t + {span}", "0", "shiftleft(CAST(1 AS BIGINT), 61) + `#f`.q") if not for_all
                    else ("0", "0", "0")))
        out = []
        for which, state, key, posts in (("new", "a", arrival, "true"), ("old", "b", arrival, "true"),
                                         ("new", "x", expiry, "`#last` AND `#hs` IS NOT NULL"),
                                         ("old", "y", expiry, "`#last` AND `#hs` IS NOT NULL")):
            rows, found = self._valued(rows, state)
            java = JavaSql(self.kinds, found, event=not for_all)
            typed = tuple(f"CAST({sql} AS {'INT' if n == 1 else 'BIGINT'})" for n, sql in enumerate(key))
            out.append((which, self._kept(posts, java), self.row_struct(java), typed))
        return self._posted(rows, out, None)

    def _by_post(self, rows: DataFrame, group_rows: bool, counted: list, summed: list, doubles: list) -> DataFrame:
        """The state of a post's rows read together: Esper's aggregators enter
        the post's new events, then leave its old ones; every leave is of an
        entered event, so a count never goes below 0 and reaches 0 only at a
        post's end, where the group is empty. One ordering by post, its rows
        peers (`RANGE`): the running sums through the post are the state
        after it on each of its rows. Where `group_rows`, each post's rows
        are ordered last to first by place (`_REVERSED_ROW_ORDER`) and the
        sums run row by row: the post's last row in that order (its next row
        is of another post) is the group's one row, its sums the state after
        the post, its own place the group's first row's (no frame over the
        post's rows finds it). A total is reset where the count after a post
        is 0: its running sum less the sum at the last such post (a second
        pass, over the one rows where `group_rows`)."""
        group = self._group()
        if group_rows:
            window = f"PARTITION BY {group} ORDER BY {self.post_order}, {_REVERSED_ROW_ORDER}"
            through = f"OVER ({window} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        else:
            window = f"PARTITION BY {group} ORDER BY {self.post_order}"
            through = f"OVER ({window} RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        sums = {f"#p{i}": f"CASE WHEN `#gate{i}` THEN `#sign` ELSE 0 END" for i in counted}
        sums.update({f"#c{i}": f"CASE WHEN `#gate{i}` {_FINITE.format(i=i) if i in doubles else ''} "
                               f"THEN `#sign` * `#v{i}` ELSE 0 END" for i in summed})
        sums.update({f"#q{q}{i}": f"CASE WHEN `#gate{i}` THEN {step.format(i=i)} ELSE 0 END"
                     for i in doubles for q, step in _NON_FINITE.items()})
        columns = [f"sum({step}) {through} AS `{name}`" for name, step in sums.items()]
        if group_rows:
            same = " AND ".join(f"lead({c}) OVER ({window}) <=> {c}" for c in self.post)
            columns.append(f"NOT ({same}) AS `#row`")
        rows = rows.selectExpr("*", *columns)
        reset = _resets(summed, doubles)
        after = _states(counted, summed, doubles)
        if not group_rows:
            if reset:  # the sums at the last post that left the group empty
                rows = rows.selectExpr("*", *(f"last_value(CASE WHEN {empty} THEN `{name}` END, true) {through} "
                                              f"AS `{name}r`" for name, empty in reset.items()))
            return rows.selectExpr("*", *(f"{v} AS `#a{name}`" for name, v in after.items()))
        rows = rows.where("`#row`").selectExpr(
            "*", "slot_due AS `#fd`", "slot AS `#fs`", "shiftleft(CAST(`#sr` AS BIGINT), 61) + pos AS `#fp`")
        if reset:  # one row per post now: the sums at the last reset through the post, from the posts before it
            running = f"OVER (PARTITION BY {group} ORDER BY {self.post_order} ROWS BETWEEN UNBOUNDED PRECEDING AND "
            rows = rows.selectExpr("*", *(f"last_value(CASE WHEN {empty} THEN `{name}` END, true) {running}1 PRECEDING) "
                                          f"AS `{name}rb`" for name, empty in reset.items()))
            rows = rows.selectExpr("*", *(f"CASE WHEN {empty} THEN `{name}` ELSE `{name}rb` END AS `{name}r`"
                                          for name, empty in reset.items()))
        return rows.selectExpr("*", *(f"{v} AS `#a{name}`" for name, v in after.items()))

    def _by_row(self, rows: DataFrame, group_rows: bool, counted: list, summed: list, doubles: list) -> DataFrame:
        """The state row by row, in the order Esper's aggregators meet them: a
        count is the running sum clamped at 0 (a leave at 0 leaves 0: the
        running sum less its lowest value below 0 so far); a total is reset by
        a leave at a count of 1 or less, the running sum at that row."""
        group = self._group()
        order = f"{self.post_order}, {_ROW_ORDER}"
        in_order = f"PARTITION BY {group} ORDER BY {order}"
        running = f"OVER ({in_order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        # one pass: the running sums; the next: the lowest so far (the clamps); then the resets' totals
        rows = rows.selectExpr(
            "*", *(f"sum(CASE WHEN `#gate{i}` THEN `#sign` ELSE 0 END) {running} AS `#p{i}`" for i in counted),
            *(f"sum(CASE WHEN `#gate{i}` {_FINITE.format(i=i) if i in doubles else ''} THEN `#sign` * `#v{i}` ELSE 0 END) "
              f"{running} AS `#c{i}`" for i in summed),
            *(f"sum(CASE WHEN `#gate{i}` THEN {step.format(i=i)} ELSE 0 END) {running} AS `#q{q}{i}`"
              for i in doubles for q, step in _NON_FINITE.items()),
            *(f"lead({c}) OVER ({in_order}) AS `#nx{j}`" for j, c in enumerate(self.post)),
            *(f"lag({c}) OVER ({in_order}) AS `#pv{j}`" for j, c in enumerate(self.post)))
        before = f"OVER ({in_order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        rows = rows.selectExpr(
            "*", *(f"`#p{i}` - least(0, min(`#p{i}`) {running}) AS `#n{i}`" for i in counted),
            *(f"`#p{i}` - CASE WHEN `#gate{i}` THEN `#sign` ELSE 0 END - least(0, coalesce(min(`#p{i}`) {before}, 0)) "
              f"AS `#nb{i}`" for i in counted))
        if summed:  # each running sum at the last reset row
            reset = "`#gate{i}` AND `#sign` = -1 AND `#nb{i}` <= 1"
            rows = rows.selectExpr("*", *(
                f"last_value(CASE WHEN {reset.format(i=i)} THEN `{c}{i}` END, true) {running} AS `{c}{i}r`"
                for i in summed for c in ("#c", *(f"#q{q}" for q in _NON_FINITE if i in doubles))))
        # each aggregator's state after the row, flat: its count (`n`) and, for a sum, its total (`t`)
        values = {f"n{i}": f"`#n{i}`" for i in counted}
        values.update({f"t{i}": _total(_since(f"#c{i}"), _since(f"#qi{i}") if i in doubles else None)
                       for i in summed})
        same = " AND ".join(f"`#{{}}{j}` <=> {c}" for j, c in enumerate(self.post))
        rows = rows.selectExpr("*", *(f"{v} AS `#e{name}`" for name, v in values.items()),
                               f"NOT ({same.format(*['nx'] * len(self.post))}) AS `#row`",
                               f"NOT ({same.format(*['pv'] * len(self.post))}) AS `#first`")
        if group_rows:  # on the post's last row of the group: the state after is the row's own
            # the place of the group's first row in the post (event rows all carry their place: CONTRACT)
            place = {"d": "slot_due", "s": "slot", "p": "shiftleft(CAST(`#sr` AS BIGINT), 61) + pos"}
            rows = rows.selectExpr(
                "*", *(f"`#e{name}` AS `#a{name}`" for name in values),
                *(f"last_value(CASE WHEN `#first` THEN {sql} END, true) {running} AS `#f{c}`" for c, sql in place.items()))
            return rows.where("`#row`")
        whole_post = (f"PARTITION BY {group}, {self.post_order} ORDER BY {_ROW_ORDER} "
                      "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING")
        return rows.selectExpr("*", *(f"last_value(`#e{name}`) OVER ({whole_post}) AS `#a{name}`" for name in values))

    def _sets(self, rows: DataFrame, sets: list[int]) -> DataFrame:
        """`min`, `max`: each value counted (a leave of a value not counted
        ignored) is present from the group's post that makes its count
        positive up to the next post that changes it; each (group, post)
        takes the least and greatest present (`#x<i>`)."""
        group = self._group()
        keys = [k.strip("`") for k in self.keys]
        order = f"{self.post_order}, {_ROW_ORDER}"
        rows = rows.selectExpr("*", f"dense_rank() OVER (PARTITION BY {group} ORDER BY {self.post_order}) AS `#k`")
        last = rows.groupBy("trace_id", *keys).agg(F.expr("max(`#k`) AS `#last`"))
        tables = []
        for i in sets:
            counted = _clamped(rows.where(f"`#in{i}`"), "true", f"{group}, `#v{i}`", order, f"#q{i}")
            per_post = counted.groupBy("trace_id", *keys, f"#v{i}", "#k").agg(
                F.expr(f"max_by(`#q{i}`, struct({_ROW_ORDER})) AS `#c`"))
            spans = per_post.selectExpr(
                "*", f"lead(`#k`) OVER (PARTITION BY {group}, `#v{i}` ORDER BY `#k`) AS `#next`").where("`#c` > 0")
            spans = _join_null_safe(spans, last, ("trace_id", *keys), "inner")
            present = spans.selectExpr(
                "trace_id", *self.keys, f"`#v{i}` AS `#v`",
                "explode(sequence(`#k`, coalesce(`#next`, `#last` + 1) - 1)) AS `#k`")
            fn = self.aggregates[i].function
            tables.append((i, present.groupBy("trace_id", *keys, "#k").agg(F.expr(f"{fn}(`#v`) AS `#x{i}`"))))
        for i, table in tables:
            rows = _join_null_safe(rows, table, ("trace_id", *keys, "#k"), "left")
        return rows

    def values(self, state: str = "a") -> dict:
        """Each aggregate's (SQL, kind) from the aggregators' state columns
        `#<state>n<i>` (a count) and `#<state>t<i>` (a sum's total): by
        default the state after the post."""
        java = JavaSql(self.kinds)
        out = {}
        for i, node in enumerate(self.aggregates):
            kind = _aggregate_kind(node, java.value(node.argument)[1] if node.argument is not None else "long")
            n, total = f"coalesce(`#{state}n{i}`, 0)", f"`#{state}t{i}`"
            if node.function in _SET_FUNCTIONS:
                sql = f"`#x{i}`"
            elif node.function == "count":
                sql = n
            elif node.function == "sum":
                sql = f"CASE WHEN {n} = 0 THEN NULL ELSE coalesce({total}, 0) END"
            else:
                sql = f"CASE WHEN {n} = 0 THEN NULL ELSE CAST(coalesce({total}, 0) AS DOUBLE) / {n} END"
            out[node] = (sql, kind)
        return out

    def empty_values(self) -> dict:
        """Each aggregate's (SQL, kind) over nothing: a count 0, the others null."""
        return {node: ("CAST(0 AS BIGINT)" if node.function == "count" else
                       "NULL" if kind == "null" else f"CAST(NULL AS {_SQL_TYPES[kind]})", kind)
                for node, (_, kind) in self.values().items()}

    def _valued(self, rows: DataFrame, state: str = "a") -> tuple[DataFrame, dict]:
        """`rows` with each aggregate's value in a state (`values`) as a
        column of its own, and the aggregates' (column, kind): the rows'
        expressions then read a column, each value computed once."""
        found = self.values(state)
        named = {node: (f"`#o{state}{i}`", kind) for i, (node, (_, kind)) in enumerate(found.items())}
        rows = rows.selectExpr("*", *(f"{sql} AS {named[node][0]}" for node, (sql, _) in found.items()))
        return rows, named

    # -- rows

    def row_struct(self, java: JavaSql) -> str:
        """SQL: the row's fields (`StatementFields`) as a struct, field i `f<i>`
        cast to its declared type, its expressions read with `java`'s
        values; a column (`*`, a property) read as is."""
        parts = []
        for n, (field, source) in enumerate(self.fields.sources()):
            sql = quoted(source) if isinstance(source, str) else java.value(source)[0]
            parts.append(f"'f{n}', CAST({sql} AS {field.dataType.simpleString()})")
        return f"named_struct({', '.join(parts)})"

    def output(self) -> DataFrame:
        spec = self.spec
        grouped_rows, for_all = spec.shape == "row_per_group", spec.shape == "row_for_all"
        frame = self.frame() if spec.aggregates else None
        if isinstance(frame, TimeFrame):
            return self.time_framed(frame)
        if frame is not None:
            rows = self.framed(frame)
        else:
            rows = self.rows()
            if spec.rules.posted == "store":
                return self._store(rows)
            if spec.aggregates:
                rows = self.state(rows, group_rows=grouped_rows or for_all)
        if grouped_rows or for_all:  # one row per (post, group): the rest are done
            rows = rows.where("`#row`")
        wanted = {"istream": ("new",), "irstream": ("new", "old"), "rstream": ("old",)}[spec.selector]
        out = []  # (new or old, SQL: whether the row posts it, SQL: its JSON)
        if not spec.aggregates:
            java = JavaSql(self.kinds)
            out = [("new", self._kept("side = 'insert'", java), self.row_struct(java)),
                   ("old", self._kept("side = 'remove'", java), self.row_struct(java))]
        elif grouped_rows or for_all:
            rows, found = self._valued(rows)
            after = JavaSql(self.kinds, found, event=not for_all)
            empty = JavaSql(self.kinds, self.empty_values(), event=not for_all)
            rows = rows.selectExpr("*", f"{self.row_struct(after)} AS `#jn`", f"{self._kept('true', after)} AS `#hn`")
            out = [("new", "`#hn`", "`#jn`")]
            if "old" in wanted:  # the state before the post: the group's previous post's new row, else nothing's
                previous = f"OVER (PARTITION BY {self._group()} ORDER BY {self.post_order})"
                rows = rows.selectExpr("*", f"lag(`#jn`) {previous} AS `#jp`", f"lag(`#hn`) {previous} AS `#hp`")
                out.append(("old", f"CASE WHEN `#jp` IS NULL THEN {self._kept('true', empty)} ELSE `#hp` END",
                            f"coalesce(`#jp`, {self.row_struct(empty)})"))
        else:
            rows, found = self._valued(rows)
            java = JavaSql(self.kinds, found)
            out = [("new", self._kept("side = 'insert'", java), self.row_struct(java)),
                   ("old", self._kept("side = 'remove'", java), self.row_struct(java))]
        if grouped_rows or for_all:
            place = _GROUP_PLACE if grouped_rows else _POST_PLACE
        else:
            place = ("slot_due", "slot", "pos")
        return self._posted(rows, [(which, keep, text, None) for which, keep, text in out], place)

    def _posted(self, rows: DataFrame, out: list, place: tuple[str, ...] | None) -> DataFrame:
        """The output rows: per row of `rows`, one per entry of `out` (new or
        old, SQL: whether the row posts it, SQL: its `row_struct`, and its
        own update key and place, SQL of seq, phase, time, slot_due, slot,
        pos, where `place` is None) selected and kept; with `place`, every
        entry's key is the row's (seq, phase, time) and `place`. In one plan
        (no union): the kept entries' structs in an array, one row each."""
        wanted = {"istream": ("new",), "irstream": ("new", "old"), "rstream": ("old",)}[self.spec.selector]
        structs = []
        for which, keep, text, key in out:
            if which not in wanted:
                continue
            side = "'remove'" if which == "old" and self.spec.selector == "irstream" else "'insert'"
            fields = [f"'side', {side}", f"'row', CASE WHEN {keep} THEN {text} END"]
            fields += [f"'k{n}', {sql}" for n, sql in enumerate(key if place is None else ())]
            structs.append(f"named_struct({', '.join(fields)})")
        names = ("seq", "phase", "time", "slot_due", "slot", "pos")
        key = list(names) if place is not None else [f"`#o`.k{n} AS {name}" for n, name in enumerate(names)]
        # only what the output reads crosses the explode: each entry's struct (its row, its key) and the row's key
        kept = ["trace_id", *(["seq", "phase", "time", *place] if place is not None else [])]
        posted = rows.selectExpr(*kept, f"explode(filter(array({', '.join(structs)}), o -> o.row IS NOT NULL)) AS `#o`")
        return posted.selectExpr("trace_id", *key, "`#o`.side AS side", *self._field_columns("`#o`.row"))

    def _field_columns(self, struct: str) -> list[str]:
        """SQL: a `row_struct`'s fields as the family contract's `#field<i>` columns."""
        return [f"{struct}.f{n} AS `#field{n}`" for n in range(len(self.fields.sources()))]

    def _kept(self, condition: str, java: JavaSql) -> str:
        """SQL: the condition, and HAVING (where there is one) read with `java`'s values."""
        return condition if self.spec.having is None else f"{condition} AND {java.truth(self.spec.having)}"

    def _store(self, rows: DataFrame) -> DataFrame:
        """A CCL aggregation window (module docstring): per post and touched
        group, on the group's last row of the post, whether its row is in the
        window after the post (`#in`: it holds rows and HAVING holds) and
        before it (the same on the group's previous post's last row); the
        code is what changed, a deleted row the one posted before."""
        spec = self.spec
        rows = self.state(rows, group_rows=True)
        after = JavaSql(self.kinds, self.values())
        size = self.values()[_SIZE][0]
        held = f"{size} > 0" if spec.having is None else f"{size} > 0 AND {after.truth(spec.having)}"
        in_order = f"PARTITION BY {self._group()} ORDER BY {self.post_order}"  # a row per (group, post)
        rows = rows.selectExpr("*", f"{held} AS `#in`", f"{self.row_struct(after)} AS `#rs`")
        before = f"OVER ({in_order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        rows = rows.selectExpr("*", f"coalesce(last_value(CASE WHEN `#row` THEN `#in` END, true) {before}, false) AS `#was`",
                               f"last_value(CASE WHEN `#row` THEN `#rs` END, true) {before} AS `#stored`")
        posted = rows.where("`#row` AND (`#in` OR `#was`)").selectExpr(
            "*", "CASE WHEN NOT `#in` THEN 'remove' WHEN `#was` THEN 'update' ELSE 'insert' END AS `#side`",
            "CASE WHEN `#in` THEN `#rs` ELSE `#stored` END AS `#value`")
        return posted.selectExpr(
            "trace_id", "seq", "phase", "time", *_GROUP_PLACE, "`#side` AS side", *self._field_columns("`#value`"))


#: a double sum's values apart from the finite ones, counted since the last reset (`_total`), as they move the
#: sum: an entering +Inf or leaving -Inf counted in the high 32 bits, an entering -Inf or leaving +Inf in the low
#: 32, a NaN in both (Java's sum is NaN once a NaN met it or both infinities did: a NaN is both). Two counts in one
#: running sum; below 2^31 each, and counts only grow, so a difference of two such sums is the two differences
def _non_finite(value: str, sign: str) -> str:
    """SQL: the count of a value moving a double sum by `sign` (`_NON_FINITE`)."""
    return (f"CASE WHEN isnan({value}) THEN 4294967297 WHEN {sign} * {value} = double('Infinity') THEN 4294967296 "
            f"WHEN {sign} * {value} = double('-Infinity') THEN 1 ELSE 0 END")


_NON_FINITE = {"i": _non_finite("`#v{i}`", "`#sign`")}
_LOW_32 = 4294967295


def _swapped(codes: str) -> str:
    """SQL: `_NON_FINITE` codes with their halves swapped: those of the same
    values moving the sum the other way (leaving, not entering)."""
    return f"(shiftleft({codes} & {_LOW_32}, 32) + shiftright({codes}, 32))"


def _finite(value: str) -> str:
    """SQL: a double value that is neither NaN nor infinite."""
    return f"NOT isnan({value}) AND abs({value}) <> double('Infinity')"


_FINITE = "AND " + _finite("`#v{i}`")


def _resets(summed: list, doubles: list) -> dict[str, str]:
    """Per running sum of a total (`#c<i>`, and a double's `#qi<i>`), SQL
    true on a post that leaves the group empty: the total restarts after it."""
    return {f"{c}{i}": f"`#p{i}` = 0" for i in summed for c in ("#c", *(f"#q{q}" for q in _NON_FINITE if i in doubles))}


def _states(counted: list, summed: list, doubles: list) -> dict[str, str]:
    """SQL of each aggregator's state after a post, from the running count
    `#p<i>` and the totals less their value at the last reset (`_resets`):
    `n<i>` its count, `t<i>` a sum's total."""
    return {**{f"n{i}": f"`#p{i}`" for i in counted},
            **{f"t{i}": _total(_since(f"#c{i}"), _since(f"#qi{i}") if i in doubles else None) for i in summed}}


def _since(name: str) -> str:
    """SQL: a running sum less its value at the last reset (`#<name>r`, null before any)."""
    return f"(`{name}` - coalesce(`{name}r`, 0))"


def _total(finite: str, codes: str | None = None) -> str:
    """SQL: a sum's total since the last reset, from its finite values' sum
    since then and, for a double, its NaN and infinities counted apart
    (`codes`: a difference of running sums cannot take out a NaN,
    `_NON_FINITE`): Java's sum is NaN once a NaN met it or both infinities
    did, else the infinity it met, else the finite values' sum."""
    if codes is None:
        return finite
    plus, minus = f"(shiftright({codes}, 32) > 0)", f"(({codes} & {_LOW_32}) > 0)"
    return (f"CASE WHEN {plus} AND {minus} THEN double('NaN') "
            f"WHEN {plus} THEN double('Infinity') WHEN {minus} THEN double('-Infinity') ELSE {finite} END")


def _row_fields(derived, window, columns: dict[str, T.StructField]) -> tuple[tuple[T.StructField, int], ...]:
    """The rows of a derived-value window as a statement reads them: the
    window's own fields (`derived.fields_of`: its statistics, additional
    properties and, under `#groupwin`, the keys), each with the index of
    its `#field<i>`. An additional property named like a statistic replaces
    it from the first event on, which no one column type holds: refused."""
    for name in derived.extra:
        if name in derived.FIELDS and name not in derived.CHECKED_FIELDS:
            raise UnsupportedWindow(f"statement: the additional property {name!r} replaces a field of "
                                    f"{derived.KIND}'s rows from the first event on; a statement over it is not "
                                    "built on Spark")
    keys = window.keys if isinstance(window, GroupWin) else ()
    return output_fields(derived_fields_of(derived, columns, keys))


def _join_null_safe(left: DataFrame, right: DataFrame, on: tuple[str, ...], how: str) -> DataFrame:
    """`left` joined with `right` where the `on` columns are equal or both null
    (a null GROUP BY value is a group); the right side's copies dropped."""
    renamed = right.selectExpr(*(f"{quoted(c)} AS {quoted('#j' + c)}" if c in on else quoted(c) for c in right.columns))
    condition = " AND ".join(f"{quoted(c)} <=> {quoted('#j' + c)}" for c in on)
    return left.join(renamed, F.expr(condition), how).drop(*(f"#j{c}" for c in on))


def _clamped(rows: DataFrame, counts: str, partition: str, order: str, name: str) -> DataFrame:
    """`rows` with `name`: a count that each row where `counts` holds moves by
    its sign, and that never goes below 0 (a leave at 0 leaves it 0), after
    the row; and `name_before`, the count before it. Such a count is the
    running sum less the lowest running sum below 0 so far."""
    window = f"PARTITION BY {partition} ORDER BY {order}"
    step = f"CASE WHEN {counts} THEN `#sign` ELSE 0 END"
    rows = rows.selectExpr("*", f"sum({step}) OVER ({window} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS `{name}_sum`")
    lowest = ("least(0, coalesce(min(`{name}_sum`) OVER ({window} ROWS BETWEEN UNBOUNDED PRECEDING AND {end}), 0))")
    return rows.selectExpr(
        "*", f"`{name}_sum` - {lowest.format(name=name, window=window, end='CURRENT ROW')} AS `{name}`",
        f"`{name}_sum` - {step} - {lowest.format(name=name, window=window, end='1 PRECEDING')} AS `{name}_before`")


def statement(items: DataFrame, spec: Statement, ctx: Context) -> DataFrame:
    check(spec)
    return _Plan(items, spec, ctx).output()


def held(items: DataFrame, spec: Statement, ctx: Context) -> DataFrame | None:
    """The state a statement's future reads (`spark_impl.incremental`): the
    events its window holds (its family's `HELD`, over the events its stream
    filter passes), where its rows read nothing else: Esper's rows
    (`Rules.posted` "update") whose aggregates are `count`, `min`, `max`, or
    `sum` and `avg` of integers. A sum of doubles is not: Java's sum stays
    NaN once a NaN met it, until its group empties, after the NaN has left;
    nor is a derived-value window's rows, or a CCL aggregation window's
    stored rows. None there: every item is kept."""
    plan = _Plan(items, spec, ctx)
    if spec.rules.posted != "update" or plan.derived is not None:
        return None
    if any(node.function in ("sum", "avg") and kind != "long" for node, (_, kind) in
           zip(plan.aggregates, plan._arguments().values())):
        return None
    window, inner = _window(spec, ctx)
    keep = family(window).held
    return None if keep is None else keep(plan.items, window, inner)


POSTS = {Statement: statement}
CHECKS = {Statement: check}
FIELDS = {Statement: statement_fields}
HELD = {Statement: held}
