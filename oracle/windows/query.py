"""A query over one pane (eKuiper's statements; kuiper.md, "Pipeline order").

A pane window hands each pane's rows here; the query's output rows are the
pane update's `values` (`insert` side). The order of the steps is eKuiper's
operator pipeline (planner.go): the pane's rows (FILTER and a pushed-down WHERE
already applied by the window; a WHERE that stays after the window applied by
the window before this), then

1. grouping: a query that aggregates (GROUP BY keys, or an aggregate in its
   select list or HAVING) makes one group per distinct key value, in the order
   the keys are first seen in the pane; without keys the whole pane is one
   group, even an empty pane ("GroupRange" calls once on the window). A query
   that does not aggregate works row by row.
2. HAVING keeps the groups (rows) for which it is true; when it keeps none,
   nothing reaches the sink: `evaluate` returns None and the pane is not posted
   (kuiper.md §5: HAVING suppresses an empty result).
3. ORDER BY sorts the groups (rows), stably; null sorts first ascending, last
   descending.
4. The select list is evaluated for each group (row): a plain column of a
   group reads its first row; `*` copies every field of the row (the group's
   first row). A field whose value is null is left out of the output row
   (ProjectOp sets only non-nil values). `rowis_number()` is the output row's
   1-based number after ORDER BY.

Output field names (eKuiper's): the alias; a column's name; a function call's
name (`count(*)` is `count`, `window_end()` is `window_end`); any other
expression `kuiper_field_<n>`, n counting such items from 0.

Values, as eKuiper's valuer computes them (xsql/valuer.go `SimpleDataEval`;
its JSON numbers are float64 unless a stream schema says BIGINT: integers and
floats here are as the events carry them), eKuiper's table of
`oracle.windows.values` (`GO`):

* A comparison with a null operand is false; numbers compare with numbers
  (an integer with a float as floats), strings with strings, booleans with
  booleans by `=` and `!=` only.
* `+ - * / %` with a null operand is null; of two integers an integer (`/`
  and `%` truncate toward zero, as Go's int64), with a float a float (`%` is
  `math.fmod`); a divisor of 0 is the error `divided by zero`.
* `and`: false when the left side is false or either side is null; `or`:
  true when the left side is true, else false when either side is null (so
  `null or true` is false, as eKuiper's); otherwise both sides must be
  booleans.
* Any other pairing is the error `invalid operation T(v) op T(v)` (Go's type
  and value: `string(abc) > int64(2)`): a schemaless stream's property may
  hold a string in one row and a number in the next.
* A WHERE or HAVING condition that gives a value other than a boolean or
  null is the error `invalid condition that returns non-bool value T(v)`.

Where an error stops the statement (the `QueryError` of this module, its text
as eKuiper's operators prefix it): a row condition (FILTER, a WHERE pushed into
the window) posts `run Where error: ...` when the row arrives, and the row does
not enter; a WHERE after the window, GROUP BY keys, HAVING, ORDER BY or the
select list post `run Where error`, `run Group By error`, `run Having error`,
`run Order By error` or `run Select error: ...` for the pane instead of its
rows; a trigger condition (OVER WHEN) that errs does not trigger (eKuiper logs
it). Decided: eKuiper's select error also quotes its own expression tree
(`expr: binaryExpr:{ ... } meet error, err:`); here the message follows the
prefix directly.

Aggregates (eKuiper's funcs_agg.go): `count(*)` counts the group's rows,
`count(x)` the non-null values. `sum`, `avg`, `min`, `max` take their kind
from the first non-null value: an integer first reads the others as integers
(a float truncated toward zero), a float first needs floats (`requires
float64 but found int64(1)`), a string first (min, max) needs strings; `avg`
of integers is the integer mean (truncated). Without values they are null.
`collect(*)` lists the rows as objects, `collect(x)` the values of x, nulls
included. `a[i]` is the i-th element (0-based; null out of
range or on a non-list), `a->f` the field f of an object (null if missing).
Decided: out of range is null, as eKuiper's earlier valuer gives it; its
recent one errs (`out of index: i of n`) and fails the pane's row, so one
short pane would post an error where the rest post rows
(`query-collect-index-out-of-range-is-null`).

The eKuiper functions modelled (both engines; every other eKuiper built-in,
`abs`, `lag`, `last_value`, `last_agg_hit_time`, ..., is refused as
`UnsupportedWindow` naming its column, a name eKuiper lacks is an unknown
function, `InvalidSpec`):

| function | what it gives |
|---|---|
| `count(*)`, `count(x)`, `sum`, `avg`, `min`, `max` | over a group (the pane, or one GROUP BY key's rows); nulls skipped |
| `collect(*)`, `collect(x)` | the group's rows as objects, or x's values; with `[i]` and `->f` |
| `deduplicate(x, true)` | the group's rows whose x (as Go's `%v` text: 1 and 1.0 are one key) was not seen before, as a list |
| `deduplicate(x, false)` | the group's last row if its x is new, else null (an empty output row) |
| `window_start()`, `window_end()` | the pane's bounds as eKuiper reports them |
| `event_time()` | a row's time where a row is evaluated (conditions, a row-by-row select, an aggregate's argument: the arrival time, or the event time); a group's pane end |
| `row_number()` | the output row's number after ORDER BY |
| `last_hit_time()`, `last_hit_count()` | in `OVER(WHEN ...)`: the time and number of the trigger's earlier hits |

An aggregate may stand in a WHERE that eKuiper keeps after the window (count
and sliding windows, any event-time window), where it reads the whole pane
(`count-where-aggregate-reads-the-pane`); over a processing-time tumbling,
hopping or session window the planner pushes WHERE into the window's filter
and such a WHERE is refused.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from oracle.model import (
    Aggregate,
    Binary,
    Call,
    Collect,
    Deduplicate,
    Index,
    Literal,
    Member,
    Name,
    Negate,
    Not,
    Pane,
    Statement,
)
from oracle.windows.values import GO, QueryError, go_text, go_type, is_number


class Scope:
    """What an expression reads: a row (an object of fields, or None), the
    group it belongs to (None outside an aggregating query), the pane, the
    select list's aliases (HAVING and ORDER BY read them), the output row's
    number, a trigger condition's last hit (time, count), and the row's time
    (`time`; or `times`, each row's time by the row object's identity)."""

    __slots__ = ("row", "group", "pane", "aliases", "row_number", "hits", "time", "times", "_resolving")

    def __init__(self, row: Mapping[str, Any] | None, group: Sequence[Mapping[str, Any]] | None = None,
                 pane: Pane | None = None, aliases: Mapping[str, Any] | None = None, row_number: int | None = None,
                 hits: tuple[int, int] = (0, 0), time: int | None = None, times: Mapping[int, int] | None = None):
        self.row, self.group, self.pane = row, group, pane
        self.aliases = aliases or {}
        self.row_number, self.hits = row_number, hits
        self.times = times or {}
        self.time = time
        self._resolving: set[str] = set()


def _aggregate(function: str, values: list[Any], rows: int) -> Any:
    if function == "count":
        return rows if values is None else sum(v is not None for v in values)
    present = [v for v in values if v is not None]
    if not present:
        return None
    first = present[0]
    if isinstance(first, bool) or not isinstance(first, (int, float, str)) or (
            isinstance(first, str) and function in ("sum", "avg")):
        prefix = f"run {function} function error: " if function in ("sum", "avg") else ""
        raise QueryError(f"{prefix}found invalid arg {go_type(first)}({go_text(first)})")
    if isinstance(first, int):
        want, read = ("int" if function in ("sum", "avg") else "int64"), []
        for v in present:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise QueryError(f"requires {want} but found {go_type(v)}({go_text(v)})")
            read.append(int(v))  # a float truncated toward zero, as Go's int64(f)
    else:
        kind = float if isinstance(first, float) else str
        read = []
        for v in present:
            if type(v) is not kind:
                raise QueryError(f"requires {'float64' if kind is float else 'string'} but found "
                                 f"{go_type(v)}({go_text(v)})")
            read.append(v)
    if function == "min":
        return min(read)
    if function == "max":
        return max(read)
    total = sum(read) if isinstance(first, int) else math.fsum(read)
    if function == "sum":
        return total
    count = len(present)
    if isinstance(first, int):
        return abs(total) // count * (1 if total >= 0 else -1)  # Go's int64 division
    return total / count


def evaluate(node: Any, scope: Scope) -> Any:
    """The value of expression `node` in `scope` (null: None)."""
    kind = type(node)
    if kind is Literal:
        return node.value
    if kind is Name:
        if node.name in scope.aliases and node.name not in scope._resolving:
            scope._resolving.add(node.name)
            try:
                return evaluate(scope.aliases[node.name], scope)
            finally:
                scope._resolving.discard(node.name)
        return None if scope.row is None else scope.row.get(node.name)
    if kind is Binary:
        if node.op in ("and", "or"):
            return GO.logical(node.op, evaluate(node.left, scope), lambda: evaluate(node.right, scope))
        return GO.binary(node.op, evaluate(node.left, scope), evaluate(node.right, scope))
    if kind is Not:
        return GO.not_(evaluate(node.operand, scope))
    if kind is Negate:
        return GO.negate(evaluate(node.operand, scope))
    if kind is Aggregate:
        group = scope.group if scope.group is not None else ([] if scope.row is None else [scope.row])
        if node.argument is None:
            return _aggregate("count", None, len(group))  # type: ignore[arg-type]
        values = [evaluate(node.argument, _row_scope(scope, row)) for row in group]
        return _aggregate(node.function, values, len(group))
    if kind is Collect:
        group = scope.group if scope.group is not None else ([] if scope.row is None else [scope.row])
        if node.argument is None:
            return [dict(row) for row in group]
        return [evaluate(node.argument, _row_scope(scope, row)) for row in group]
    if kind is Deduplicate:
        group = scope.group if scope.group is not None else ([] if scope.row is None else [scope.row])
        seen: set[str] = set()
        kept = []
        for n, row in enumerate(group):
            key = go_text(evaluate(node.key, _row_scope(scope, row)))
            if key not in seen:
                seen.add(key)
                if node.all or n == len(group) - 1:
                    kept.append(dict(row))
        return kept if node.all else (kept[0] if kept else None)
    if kind is Call:
        if node.function == "window_start":
            return None if scope.pane is None else scope.pane.start
        if node.function == "window_end":
            return None if scope.pane is None else scope.pane.end
        if node.function == "row_number":
            return scope.row_number
        if node.function == "event_time":
            if scope.time is not None:  # a row's: its arrival (processing time) or its event time
                return scope.time
            # a group's: the pane's trigger, its end (window_op.go NewWindowRange)
            return None if scope.group is None or scope.pane is None else scope.pane.end
        return scope.hits[0] if node.function == "last_hit_time" else scope.hits[1]
    if kind is Index:
        value = evaluate(node.operand, scope)
        if isinstance(value, list) and 0 <= node.index < len(value):
            return value[node.index]
        return None
    if kind is Member:
        value = evaluate(node.operand, scope)
        return value.get(node.name) if isinstance(value, Mapping) else None
    raise TypeError(f"a pane query cannot evaluate {node!r}")


def _row_scope(scope: Scope, row: Mapping[str, Any]) -> Scope:
    return Scope(row, None, scope.pane, None, scope.row_number, scope.hits, scope.times.get(id(row)), scope.times)


def holds(condition: Any, row: Mapping[str, Any], hits: tuple[int, int] = (0, 0), time: int | None = None) -> bool:
    """Whether a row condition (FILTER, WHERE, OVER WHEN) is true for `row`,
    which arrived at (processing time) or carries (event time) `time`; raises
    `QueryError` ("run Where error: ...") where eKuiper's filter errs."""
    return condition_holds(condition, Scope(row, hits=hits, time=time), "Where")


def condition_holds(condition: Any, scope: Scope, clause: str) -> bool:
    """A WHERE (`clause` "Where") or HAVING ("Having") condition: true, or
    false for false and null; another value, or an error in it, is the
    clause's `QueryError`, prefixed as eKuiper's filter and having operators do."""
    try:
        value = evaluate(condition, scope)
    except QueryError as exc:
        raise QueryError(f"run {clause} error: {exc}") from None
    if value is None or isinstance(value, bool):
        return value is True
    raise QueryError(f"run {clause} error: invalid condition that returns non-bool value "
                     f"{go_type(value)}({go_text(value)})")


def _step(clause: str, compute):
    """`compute()`, its `QueryError` prefixed with eKuiper's operator for `clause`."""
    try:
        return compute()
    except QueryError as exc:
        raise QueryError(f"run {clause} error: {exc}") from None


def _group_key(value: Any) -> tuple:
    """A hashable key under which equal values group (a boolean is not a number)."""
    if isinstance(value, bool):
        return ("bool", value)
    if is_number(value):
        return ("number", value)
    if isinstance(value, (list, dict)):
        return ("other", repr(value))
    return (type(value).__name__, value)


def _order_value(a: Any, b: Any) -> int:
    """Ascending order of two sort values: null first, numbers, then strings,
    then anything else by its text."""
    def rank(v):
        if v is None:
            return 0, 0
        if isinstance(v, bool):
            return 1, int(v)
        if is_number(v):
            return 2, v
        if isinstance(v, str):
            return 3, v
        return 4, repr(v)
    ra, rb = rank(a), rank(b)
    return (ra > rb) - (ra < rb)


def evaluate_query(query: Statement, rows: Sequence[Mapping[str, Any]], pane: Pane,
                   times: Sequence[int] | None = None) -> list[dict[str, Any]] | None:
    """The output rows of `query` over one pane's `rows` (objects of fields, in
    pane order, each row's time in `times`); None when HAVING keeps nothing
    (the pane is not posted). Raises `QueryError` where a step errs (module
    docstring): the pane then posts the error."""
    aliases = {item.alias: item.expression for item in query.select if item.alias is not None}
    by_row = {id(row): t for row, t in zip(rows, times or ())}
    if query.groups:
        if query.keys:
            groups: dict[tuple, list] = {}
            for row in rows:
                key = _step("Group By", lambda: tuple(
                    _group_key(evaluate(k, Scope(row, pane=pane, times=by_row))) for k in query.keys))
                groups.setdefault(key, []).append(row)
            contexts = [(group[0], group) for group in groups.values()]
        else:
            contexts = [(rows[0] if rows else None, list(rows))]
    else:
        contexts = [(row, None) for row in rows]

    def scope(context, number=None) -> Scope:
        time = by_row.get(id(context[0])) if context[1] is None else None  # a row's own, not a group's
        return Scope(context[0], context[1], pane, aliases, number, time=time, times=by_row)

    if query.having is not None:
        contexts = [c for c in contexts if condition_holds(query.having, scope(c), "Having")]
        if not contexts:
            return None
    if query.order:
        keyed = [(c, _step("Order By", lambda c=c: [evaluate(k.expression, scope(c)) for k in query.order]))
                 for c in contexts]

        def compare(x, y):
            for n, key in enumerate(query.order):
                result = _order_value(x[1][n], y[1][n])
                if result:
                    return -result if key.descending else result
            return 0

        contexts = [c for c, _ in sorted(keyed, key=functools.cmp_to_key(compare))]
    names = query.field_names
    out = []
    for number, context in enumerate(contexts, start=1):
        row: dict[str, Any] = {}
        for item, name in zip(query.select, names):
            if item.expression is None:
                row.update({k: v for k, v in (context[0] or {}).items() if v is not None})
                continue
            value = _step("Select", lambda: evaluate(item.expression, scope(context, number)))
            if value is not None:
                row[name] = value
        out.append(row)
    return out
