"""eKuiper's statements over panes on Spark: row conditions (FILTER, WHERE,
OVER WHEN) and a query's output rows per pane (kuiper.md, "Pipeline order").

Two evaluators of one rule set, each this module's own:

* `RowEval` / `evaluate_pane` (Python, run inside a grouped kernel): a
  pane's rows as dicts, in pane order. Used wherever a pane's rows are already
  in one Python task (the sequential pane kernel of `panes.py`), and for a
  query the Spark compiler does not take.
* `compile_query` (Spark): a query whose select list, keys, HAVING and ORDER BY
  are plain columns, `count(*)`/`count`/`sum`/`avg`/`min`/`max` of typed
  columns, `window_start()`/`window_end()`, literals, arithmetic and
  comparisons becomes one `groupBy(pane, keys)` aggregation with Spark's own
  aggregates (`panes.py` uses it for set-oriented tumbling and hopping panes).
  Only what the column types decide compiles: where a row's values would
  decide between a value and an error (a string column beside a number, a
  divisor that may be 0, a JSON text column), the kernel evaluates instead.

The rules (as eKuiper's operator pipeline runs them, planner.go):

1. Grouping: a query that aggregates (GROUP BY keys, or an aggregate in the
   select list or HAVING) makes one group per distinct key value, in the order
   the keys are first seen in the pane; without keys the whole pane is one
   group, an empty pane too (`count(*)` 0). A query that does not aggregate
   works row by row.
2. HAVING keeps the groups (rows) for which it is true; keeping none, the pane
   is not posted.
3. ORDER BY sorts them stably; null first ascending, last descending; numbers
   before strings.
4. The select list per group (row): a plain column reads the group's first
   row; `*` copies every non-null field of that row; a null value leaves its
   field out. `row_number()` is the 1-based output number after ORDER BY.

Values, as eKuiper's valuer (xsql/valuer.go) computes them: a comparison with
a null side is false, `and`/`or` with a null side false (`null or true`
too: only a true left side decides `or` alone), arithmetic with a null side
null; `+ - *` of two integers an integer, else a float, `/` and `%` of two
integers truncating toward zero (Go), of floats float division and fmod.
Numbers compare with numbers, strings with strings, booleans by `=`/`!=`;
any other pairing, arithmetic on a non-number and a divisor of 0 are errors,
carried as `Failure` values the way eKuiper's valuer returns Go errors: the
first one is the expression's value, and the step that reads it posts it
(a row filter at the row's arrival, a pane's WHERE, GROUP BY, HAVING, ORDER
BY or select for the pane, with eKuiper's `run Where error: ` prefixes); a
trigger that errs does not trigger. A WHERE or HAVING value that is not a
boolean or null is an error too. Aggregates: `count(*)` rows, `count(x)`
non-null values; `sum`, `avg`, `min`, `max` read every value as the kind of
the first non-null one (an integer first: floats truncated, the integer
mean; a float first: floats only; a string first: strings, min and max
only), else an error. `collect(*)` the rows as objects, `collect(x)` the
values; `a[i]` (0-based) and `a->f` null when absent. Output names: the alias, a column's name, a function's name
(`count(*)` is `count`), else `kuiper_field_<n>`.

The fields' kinds (`field_kinds`, which `panes.FIELDS` types as Spark
columns): what eKuiper's valuer gives each field, known from the input
columns' kinds alone (`long`, `double`, `string`, `boolean`; `json`, a JSON
text column: a list or object, or a schemaless stream's mixed kinds; `null`,
a column no event gives a value) without running anything:

* a literal its own kind; a column its column's kind (`id` a string); an
  alias the aliased item's kind (outside an aggregate's argument, as the
  evaluators resolve it); `*` gives `id`, then every property, in column order;
* `+ - * / %`: of two integers an integer (`/` truncates), with a float a
  float, with a `json` operand `json` (the row's values decide), with a null
  operand null, else (a string, a boolean, a list) an error or null: no value;
* comparisons, `and`, `or`, `not`: a boolean; `-x` x's kind if a number;
* `count`, `window_start()`, `window_end()`, `row_number()`, `event_time()`,
  `last_hit_time()`, `last_hit_count()`: an integer; `sum`, `avg`, `min`,
  `max` their argument's kind if a number (`avg` of integers the truncated
  integer mean), `min`/`max` of strings a string, `json` of `json`, else no
  value (an error or null);
* `collect(*)`, `deduplicate(x, true)`: a list of row objects; `collect(x)`
  a list of x's kind; `deduplicate(x, false)` a row object; `a[i]` the
  list's element kind, `a->f` a row object's field f's column kind (`json`
  of `json`; on anything else null).

A field's kind is then one of `long`, `double`, `string`, `boolean`, `null`
(it never has a value), or `json`: a list, a row object, a `json` value, or a
name two items give (a name is one field, eKuiper's output row being a map:
the last item in select order with a non-null value gives it, `*` copying the
non-null ones) in different kinds.
"""

from __future__ import annotations

import functools
from decimal import Decimal
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from oracle.dialects import expression_text
from oracle.errors import UnsupportedWindow
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
    Statement,
)


# --------------------------------------------------------------------------- Python values


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Failure:
    """An error value, as eKuiper's valuer returns Go errors as values: an
    operator given one returns it unchanged, so the first error of an
    expression is its result; the step that reads it (a filter, the select)
    turns it into the post's error text."""

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message

    def within(self, clause: str) -> Failure:
        return Failure(f"run {clause} error: {self.message}")


def go_type_name(v: Any) -> str:
    """Go's `%T` of a row value as eKuiper decodes it."""
    return {bool: "bool", int: "int64", float: "float64", str: "string"}.get(
        type(v), "map[string]interface {}" if isinstance(v, Mapping) else "[]interface {}")


def _operation(a: Any, op: str, b: Any) -> Failure:
    return Failure(f"invalid operation {go_type_name(a)}({go_value_text(a)}) {op.upper()} "
                   f"{go_type_name(b)}({go_value_text(b)})")


def _arith(op: str, a: Any, b: Any) -> Any:
    """eKuiper's arithmetic: null in, null out; numbers only; no divisor 0."""
    if a is None or b is None:
        return None
    if not (_is_number(a) and _is_number(b)):
        return _operation(a, op, b)
    if op in "/%" and b == 0:
        return Failure("divided by zero")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return q if op == "/" else a - b * q
    return a / b if op == "/" else math.fmod(a, b)


_ORDERING = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
             ">=": lambda a, b: a >= b, "=": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _cmp(op: str, a: Any, b: Any) -> Any:
    """eKuiper's comparison: false with a null side; numbers with numbers,
    strings with strings, booleans by = and != only; else an error."""
    if a is None or b is None:
        return False
    booleans = isinstance(a, bool) + isinstance(b, bool)
    if booleans == 2 and op in ("=", "!="):
        return _ORDERING[op](a, b)
    if booleans == 0 and ((_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return _ORDERING[op](a, b)
    return _operation(a, op, b)


def _agg(function: str, values: list[Any] | None, count: int) -> Any:
    """eKuiper's aggregate functions: the first non-null value's kind rules
    the rest (funcs_agg.go, common_array_funcs.go `sliceIntTotal`, ...)."""
    if function == "count":
        return count if values is None else len([v for v in values if v is not None])
    given = [v for v in values if v is not None]
    if not given:
        return None
    lead = given[0]
    totals = function in ("sum", "avg")
    if isinstance(lead, bool) or not isinstance(lead, (int, float, str)) or (totals and isinstance(lead, str)):
        head = f"run {function} function error: " if totals else ""
        return Failure(f"{head}found invalid arg {go_type_name(lead)}({go_value_text(lead)})")
    if type(lead) is int:
        wanted = "int" if totals else "int64"
        bad = next((v for v in given if not _is_number(v)), None)
        if bad is not None:
            return Failure(f"requires {wanted} but found {go_type_name(bad)}({go_value_text(bad)})")
        given = [math.trunc(v) for v in given]
    else:
        bad = next((v for v in given if type(v) is not type(lead)), None)
        if bad is not None:
            wanted = "float64" if type(lead) is float else "string"
            return Failure(f"requires {wanted} but found {go_type_name(bad)}({go_value_text(bad)})")
    if function in ("min", "max"):
        return min(given) if function == "min" else max(given)
    total = sum(given) if type(lead) is int else math.fsum(given)
    if function == "sum":
        return total
    if type(lead) is int:  # Go's int64 division truncates toward zero
        return int(total / len(given)) if abs(total) < 2**52 else (abs(total) // len(given)) * (1 if total >= 0 else -1)
    return total / len(given)


class RowEval:
    """Evaluates an expression tree for a row (dict or None), with the group,
    the pane bounds, the aliases, the output number, a trigger's last hit,
    the row's time (`time`: its arrival, or its event time) and the group
    rows' times (`group_times`, in the group's order).

    `event_time()` (eKuiper's `FuncValue("event_time")`): a row's time where
    a row is evaluated (conditions, a row-by-row select, an aggregate's
    argument); a group's is its window range's trigger, the pane's end."""

    __slots__ = ("row", "group", "pane", "aliases", "number", "hits", "time", "group_times", "busy")

    def __init__(self, row, group=None, pane=None, aliases=None, number=None, hits=(0, 0), time=None,
                 group_times=None):
        self.row, self.group, self.pane = row, group, pane
        self.aliases = aliases or {}
        self.number, self.hits = number, hits
        self.time, self.group_times = time, group_times
        self.busy: set = set()

    def of(self, node: Any) -> Any:
        t = type(node)
        if t is Literal:
            return node.value
        if t is Name:
            name = node.name
            if name in self.aliases and name not in self.busy:
                self.busy.add(name)
                try:
                    return self.of(self.aliases[name])
                finally:
                    self.busy.discard(name)
            return None if self.row is None else self.row.get(name)
        if t is Binary:
            a = self.of(node.left)
            if isinstance(a, Failure):
                return a
            if node.op in ("and", "or") and a is (node.op == "or"):
                return a  # false and ..., true or ...: the left side decides (valuer.go's shortcut)
            b = self.of(node.right)
            if isinstance(b, Failure):
                return b
            if node.op in ("and", "or"):
                if a is None or b is None:
                    return False
                if isinstance(a, bool) and isinstance(b, bool):
                    return (a and b) if node.op == "and" else (a or b)
                return _operation(a, node.op, b)
            return _arith(node.op, a, b) if node.op in "+-*/%" else _cmp(node.op, a, b)
        if t is Not:
            v = self.of(node.operand)
            return v if isinstance(v, Failure) else ((not v) if isinstance(v, bool) else None)
        if t is Negate:
            v = self.of(node.operand)
            return v if isinstance(v, Failure) else (-v if _is_number(v) else None)
        if t is Deduplicate:
            rows, found = self._each_row(node.key)
            if isinstance(found, Failure):
                return found
            keys = [go_value_text(k) for k in found]
            first = {}
            for n, k in enumerate(keys):
                first.setdefault(k, n)  # where each key is first seen
            if node.all:
                return [dict(rows[n]) for n in sorted(first.values())]
            last = len(rows) - 1
            return dict(rows[last]) if rows and first[keys[last]] == last else None
        if t in (Aggregate, Collect):
            if node.argument is None:
                rows = self._rows()
                return len(rows) if t is Aggregate else [dict(r) for r in rows]
            rows, values = self._each_row(node.argument)
            if isinstance(values, Failure):
                return values
            return values if t is Collect else _agg(node.function, values, len(rows))
        if t is Call:
            f = node.function
            if f == "window_start":
                return None if self.pane is None else self.pane[0]
            if f == "window_end":
                return None if self.pane is None else self.pane[1]
            if f == "row_number":
                return self.number
            if f == "event_time":
                if self.time is not None:
                    return self.time
                return self.pane[1] if self.group is not None and self.pane is not None else None
            return self.hits[0] if f == "last_hit_time" else self.hits[1]
        if t is Index:
            v = self.of(node.operand)
            if isinstance(v, Failure):
                return v
            return v[node.index] if isinstance(v, list) and 0 <= node.index < len(v) else None
        if t is Member:
            v = self.of(node.operand)
            if isinstance(v, Failure):
                return v
            return v.get(node.name) if isinstance(v, Mapping) else None
        raise UnsupportedWindow(f"a kuiper query cannot evaluate {expression_text(node, 'kuiper')} on Spark")


    def _rows(self) -> list:
        """The rows an aggregate reads: the group's, else the row alone."""
        return self.group if self.group is not None else ([] if self.row is None else [self.row])

    def _each_row(self, node: Any) -> tuple[list, Any]:
        """(the rows, `node`'s value for each, each with its own time), or the
        first `Failure` in place of the values."""
        rows = self._rows()
        times = [self.time] if self.group is None else (self.group_times or [None] * len(rows))
        values = [RowEval(r, None, self.pane, None, self.number, self.hits, tm).of(node) for r, tm in zip(rows, times)]
        failed = next((v for v in values if isinstance(v, Failure)), None)
        return rows, (failed if failed is not None else values)


def go_value_text(v: Any) -> str:
    """Go's `fmt.Sprintf("%v", v)` for the values a row holds (eKuiper keys
    `deduplicate` by it): `<nil>`, `true`, integers as they are, a float64 by
    strconv's shortest 'g' (%e once the decimal exponent is below -4 or at
    least 6), `[a b]` for a list, `map[k:v]` with sorted keys for an object."""
    if v is None:
        return "<nil>"
    if v is True or v is False:
        return str(v).lower()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if v in (float("inf"), float("-inf")):
            return "+Inf" if v > 0 else "-Inf"
        if v == 0:
            return "-0" if str(v).startswith("-") else "0"
        sign, digits, exp = Decimal(repr(v)).normalize().as_tuple()
        text = "".join(map(str, digits))
        e10 = len(digits) + exp - 1  # the exponent in d.ddd x 10^e10
        head = "-" if sign else ""
        if e10 < -4 or e10 >= 6:
            return f"{head}{text[0]}{'.' + text[1:] if len(text) > 1 else ''}e{'-' if e10 < 0 else '+'}{abs(e10):02d}"
        return head + format(Decimal(repr(abs(v))).normalize(), "f")
    if isinstance(v, list):
        return "[" + " ".join(map(go_value_text, v)) + "]"
    if isinstance(v, Mapping):
        return "map[" + " ".join(f"{k}:{go_value_text(v[k])}" for k in sorted(v)) + "]"
    return str(v)


def row_holds(condition: Any, row: Mapping[str, Any], hits: tuple[int, int] = (0, 0), time: int | None = None) -> bool:
    """Whether a trigger condition is true for a row that arrived at, or
    carries the event time, `time` (an error is not a trigger: eKuiper logs it)."""
    return RowEval(row, hits=hits, time=time).of(condition) is True


def verdict(value: Any, clause: str) -> bool | Failure:
    """A WHERE (`clause` "Where") or HAVING ("Having") condition's value as
    eKuiper's filter and having operators read it: true keeps, false and null
    drop, an error or any other value is the clause's `Failure`."""
    if isinstance(value, Failure):
        return value.within(clause)
    if value is None or isinstance(value, bool):
        return value is True
    return Failure(f"run {clause} error: invalid condition that returns non-bool value "
                   f"{go_type_name(value)}({go_value_text(value)})")


def row_passes(condition: Any, row: Mapping[str, Any], time: int | None) -> bool | Failure:
    """A row filter (FILTER, a pushed-down WHERE): True, False or the `Failure`."""
    return verdict(RowEval(row, time=time).of(condition), "Where")


def _key(v: Any) -> tuple:
    if isinstance(v, bool):
        return ("b", v)
    if _is_number(v):
        return ("n", v)
    if isinstance(v, (list, dict)):
        return ("o", json.dumps(v, sort_keys=True))
    return (type(v).__name__, v)


def _rank(v: Any) -> tuple:
    if v is None:
        return (0, 0)
    if isinstance(v, bool):
        return (1, int(v))
    if _is_number(v):
        return (2, v)
    if isinstance(v, str):
        return (3, v)
    return (4, repr(v))


def evaluate_pane(query: Statement, rows: Sequence[Mapping[str, Any]], pane: tuple[int, int],
                  times: Sequence[int] | None = None) -> list[dict] | None | Failure:
    """The query's output rows over one pane's rows (in pane order, each row's
    time in `times`), None when HAVING keeps nothing (the pane is not posted),
    or the `Failure` of the first step that errs, which the pane posts.
    A unit is (row, group, the row's time, the group rows' times)."""
    aliases = {i.alias: i.expression for i in query.select if i.alias is not None}
    times = list(times) if times is not None else [None] * len(rows)
    if query.groups:
        if query.keys:
            groups: dict[tuple, tuple[list, list]] = {}
            for row, t in zip(rows, times):
                found = [RowEval(row, pane=pane, time=t).of(e) for e in query.keys]
                failed = next((f for f in found if isinstance(f, Failure)), None)
                if failed is not None:
                    return failed.within("Group By")
                k = tuple(_key(v) for v in found)
                members, member_times = groups.setdefault(k, ([], []))
                members.append(row)
                member_times.append(t)
            units = [(g[0], g, None, gt) for g, gt in groups.values()]
        else:
            units = [(rows[0] if rows else None, list(rows), None, times)]
    else:
        units = [(r, None, t, None) for r, t in zip(rows, times)]

    def ev(unit, number=None):
        return RowEval(unit[0], unit[1], pane, aliases, number, time=unit[2], group_times=unit[3])

    if query.having is not None:
        kept = []
        for u in units:
            passed = verdict(ev(u).of(query.having), "Having")
            if isinstance(passed, Failure):
                return passed
            if passed:
                kept.append(u)
        units = kept
        if not units:
            return None
    if query.order:
        sort_keys = [(u, [ev(u).of(k.expression) for k in query.order]) for u in units]
        failed = next((v for _, vs in sort_keys for v in vs if isinstance(v, Failure)), None)
        if failed is not None:
            return failed.within("Order By")

        def order(x, y):
            for n, criterion in enumerate(query.order):
                a, b = _rank(x[1][n]), _rank(y[1][n])
                if a != b:
                    less = -1 if a < b else 1
                    return -less if criterion.descending else less
            return 0

        units = [u for u, _ in sorted(sort_keys, key=functools.cmp_to_key(order))]
    names = query.field_names
    out = []
    for number, unit in enumerate(units, start=1):
        row: dict[str, Any] = {}
        for item, name in zip(query.select, names):
            if item.expression is None:
                row.update({k: v for k, v in (unit[0] or {}).items() if v is not None})
            else:
                value = ev(unit, number).of(item.expression)
                if isinstance(value, Failure):
                    return value.within("Select")
                if value is not None:
                    row[name] = value
        out.append(row)
    return out


# --------------------------------------------------------------------------- the fields' kinds

#: the kinds a column holds; `json` holds any value (as JSON text), `null` none
COLUMN_KINDS = ("long", "double", "string", "boolean")
_NUMBERS = ("long", "double")
#: a row object's kind (its fields: the event's, `id` and the properties); a list's is ("list", element kind)
ROW = ("row",)


def field_sources(query: Statement, properties: Sequence[str]) -> dict[str, list[tuple[str, Any]]]:
    """The query's fields in order (each where its name first appears) and
    what gives each a value, in select order: ("item", expression), or
    ("*", property) where `*` copies `id` and then each of `properties`. A
    name given twice is one field (module docstring)."""
    sources: dict[str, list[tuple[str, Any]]] = {}
    for item, name in zip(query.select, query.field_names):
        if item.expression is None:
            for prop in ("id", *(p for p in properties if p != "id")):
                sources.setdefault(prop, []).append(("*", prop))
        else:
            sources.setdefault(name, []).append(("item", item.expression))
    return sources


def field_kinds(query: Statement, kinds: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Each field of the query's rows and its kind (`COLUMN_KINDS`, `json`
    or `null`; module docstring), from the input's property kinds (in column
    order: `*` copies them so)."""
    kinds = {"id": "string", **kinds}
    aliases = {i.alias: i.expression for i in query.select if i.alias is not None}
    out = []
    for name, sources in field_sources(query, tuple(kinds)).items():
        found = {column_kind(kinds[ref] if how == "*" else value_kind(ref, kinds, aliases)) for how, ref in sources}
        found.discard("null")
        out.append((name, found.pop() if len(found) == 1 else "json" if found else "null"))
    return tuple(out)


def column_kind(kind) -> str:
    """A value kind as a column holds it: a list or a row object as `json`."""
    return kind if kind in (*COLUMN_KINDS, "null") else "json"


def value_kind(node: Any, kinds: Mapping[str, str], aliases: Mapping[str, Any] | None = None,
               busy: frozenset = frozenset()) -> Any:
    """The kind of value `node` gives (module docstring): a column kind,
    `json`, `null`, `ROW` or ("list", element kind). `aliases` are resolved
    as `RowEval` resolves them (not in an aggregate's argument)."""
    t = type(node)
    if t is Literal:
        v = node.value
        return ("null" if v is None else "boolean" if isinstance(v, bool) else "long" if isinstance(v, int)
                else "double" if isinstance(v, float) else "string")
    if t is Name:
        if aliases and node.name in aliases and node.name not in busy:
            return value_kind(aliases[node.name], kinds, aliases, busy | {node.name})
        return kinds.get(node.name, "null")
    if t is Binary:
        if node.op not in ("+", "-", "*", "/", "%"):
            return "boolean"
        a, b = value_kind(node.left, kinds, aliases, busy), value_kind(node.right, kinds, aliases, busy)
        if "null" in (a, b):
            return "null"
        if a in _NUMBERS and b in _NUMBERS:
            return "long" if a == b == "long" else "double"
        return "json" if a in (*_NUMBERS, "json") and b in (*_NUMBERS, "json") else "null"
    if t is Not:
        return "boolean"
    if t is Negate:
        a = value_kind(node.operand, kinds, aliases, busy)
        return a if a in (*_NUMBERS, "json") else "null"
    if t is Aggregate:
        if node.function == "count":
            return "long"
        a = value_kind(node.argument, kinds)
        if a in (*_NUMBERS, "json") or (a == "string" and node.function in ("min", "max")):
            return a
        return "null"
    if t is Collect:
        return ("list", ROW if node.argument is None else value_kind(node.argument, kinds))
    if t is Deduplicate:
        return ("list", ROW) if node.all else ROW
    if t is Call:
        return "long"
    if t is Index:
        a = value_kind(node.operand, kinds, aliases, busy)
        return "json" if a == "json" else a[1] if isinstance(a, tuple) and a[0] == "list" else "null"
    if t is Member:
        a = value_kind(node.operand, kinds, aliases, busy)
        return "json" if a == "json" else kinds.get(node.name, "null") if a == ROW else "null"
    raise UnsupportedWindow(f"a kuiper query cannot evaluate {expression_text(node, 'kuiper')} on Spark")


# --------------------------------------------------------------------------- Spark SQL


class NotCompiled(Exception):
    """An expression the Spark compiler does not take (the Python path runs it)."""


_NUMERIC = ("long", "double")


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: Any) -> tuple[str, str]:
    """A value as a SQL literal and its value kind."""
    if value is None:
        return "NULL", "null"
    if isinstance(value, bool):
        return ("true" if value else "false"), "boolean"
    if isinstance(value, int):
        return f"CAST({value} AS BIGINT)", "long"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotCompiled("a non-finite literal")
        return f"CAST('{value!r}' AS DOUBLE)", "double"
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'", "string"


class SqlCompiler:
    """Compiles expression trees to Spark SQL text with this module's value
    rules, given the column types (`long`, `double`, `string`, `boolean`;
    JSON text columns are not taken). In a group context (`group=True`) a
    plain column is the group's first row (`min_by(col, seq)`) and aggregates
    are Spark's; `pane` names the columns of the pane's bounds."""

    def __init__(self, types: Mapping[str, str], group: bool = False,
                 pane: tuple[str, str] = ("wstart", "wend"), aliases: Mapping[str, Any] | None = None):
        self.types, self.group, self.pane = types, group, pane
        self.aliases = aliases or {}
        self.busy: set = set()

    def value(self, node: Any, in_aggregate: bool = False) -> tuple[str, str]:
        t = type(node)
        if t is Literal:
            return sql_literal(node.value)
        if t is Name:
            if node.name in self.aliases and node.name not in self.busy and not in_aggregate:
                self.busy.add(node.name)
                try:
                    return self.value(self.aliases[node.name], in_aggregate)
                finally:
                    self.busy.discard(node.name)
            kind = self.types.get(node.name)
            if kind is None:
                return "NULL", "null"
            if kind not in ("long", "double", "string", "boolean"):
                raise NotCompiled(f"column {node.name} holds JSON text")
            column = _q(node.name)
            if self.group and not in_aggregate:
                return f"min_by({column}, seq)", kind
            return column, kind
        if t is Binary:
            # eKuiper's rules in SQL where the column types decide them; where a
            # row's values would decide between a result and an error (a string
            # beside a number, a divisor that may be 0), not compiled: the
            # grouped kernel evaluates such rows one by one
            (a, ka), (b, kb) = self.value(node.left, in_aggregate), self.value(node.right, in_aggregate)
            if node.op in ("and", "or"):
                if ka not in ("boolean", "null") or kb not in ("boolean", "null"):
                    raise NotCompiled(f"{node.op} of a non-boolean")
                if node.op == "and":  # false, or a null side: false
                    return f"coalesce(({a} AND {b}), false)", "boolean"
                return f"(CASE WHEN {a} THEN true WHEN {a} IS NULL OR {b} IS NULL THEN false ELSE {b} END)", "boolean"
            if node.op in ("+", "-", "*", "/", "%"):
                if "null" in (ka, kb):
                    return "NULL", "null"
                if ka not in _NUMERIC or kb not in _NUMERIC:
                    raise NotCompiled(f"{node.op} of a non-number")
                kind = "long" if ka == kb == "long" else "double"
                if node.op in "+-*":
                    return f"({a} {node.op} {b})", kind
                divisor = node.right
                if not (isinstance(divisor, Literal) and _is_number(divisor.value) and divisor.value != 0):
                    raise NotCompiled("a divisor that may be 0 (eKuiper's error)")
                op = "div" if (kind == "long" and node.op == "/") else node.op
                return f"({a} {op} {b})", kind
            if "null" in (ka, kb):
                return "false", "boolean"
            same = (ka in _NUMERIC and kb in _NUMERIC) or (ka == kb == "string") or (
                ka == kb == "boolean" and node.op in ("=", "!="))
            if not same:
                raise NotCompiled(f"{node.op} of {ka} and {kb} (eKuiper's error)")
            return f"coalesce(({a} {node.op} {b}), false)", "boolean"
        if t is Not:
            a, ka = self.value(node.operand, in_aggregate)
            return (f"(NOT {a})", "boolean") if ka == "boolean" else ("NULL", "null")
        if t is Negate:
            a, ka = self.value(node.operand, in_aggregate)
            return (f"(- {a})", ka) if ka in _NUMERIC else ("NULL", "null")
        if t is Call:
            if node.function == "window_start":
                return (f"first({self.pane[0]})" if self.group else self.pane[0]), "long"
            if node.function == "window_end":
                return (f"first({self.pane[1]})" if self.group else self.pane[1]), "long"
            raise NotCompiled(f"{node.function}()")
        if t is Aggregate:
            if not self.group or in_aggregate:
                raise NotCompiled("an aggregate outside a group")
            if node.argument is None:
                return "count(seq)", "long"  # the pane's rows (an empty pane's marker row has no seq)
            a, ka = self.value(node.argument, True)
            f = node.function
            if f == "count":
                return f"count({a})", "long"
            if ka == "null":
                return "NULL", "null"
            if f in ("sum", "avg"):
                if ka not in _NUMERIC:
                    raise NotCompiled(f"{f} of a non-number (eKuiper's error)")
                if f == "sum":
                    return f"sum({a})", ka
                if ka == "long":  # eKuiper's avg of integers: the truncated integer mean
                    return f"(CASE WHEN count({a}) = 0 THEN NULL ELSE sum({a}) div count({a}) END)", "long"
                return f"avg({a})", "double"
            if ka not in (*_NUMERIC, "string"):
                raise NotCompiled(f"{f} of a boolean (eKuiper's error)")
            return f"{f}({a})", ka
        raise NotCompiled(type(node).__name__)

    def truth(self, node: Any, in_aggregate: bool = False) -> str:
        """SQL that is true exactly when the node's value is true (a condition
        of another type is eKuiper's error: not compiled)."""
        a, kind = self.value(node, in_aggregate)
        if kind not in ("boolean", "null"):
            raise NotCompiled("a condition that is not a boolean")
        return f"coalesce({a}, false)" if kind == "boolean" else "false"


def sql_condition(node: Any, types: Mapping[str, str], pane: tuple[str, str] = ("wstart", "wend")) -> str | None:
    """A row condition as SQL (true exactly where it holds), or None when the
    compiler does not take it; `pane` names the pane's bounds (`SqlCompiler`)."""
    try:
        return SqlCompiler(types, pane=pane).truth(node)
    except NotCompiled:
        return None


def grouping_key(n: int) -> str:
    """SQL: the column of a grouped plan's n-th key (`#g<n>`: no property's name)."""
    return f"`#g{n}`"


def compile_select(query: Statement, types: Mapping[str, str]) -> dict | None:
    """The Spark plan of a query over pane rows, or None (the Python path):
    {"group": bool, "fields": [(name, [(sql, kind), ...])], "order": [(sql, descending)],
    "keys": [sql]}: each field of `field_sources` with the SQL and value kind
    of each of its sources (the last non-null one gives the field); in a
    grouped plan the n-th key's column is `grouping_key(n)`. Not compiled:
    HAVING, collect, indexing, members, row_number(), a JSON text column, a
    field whose sources differ in kind (JSON text)."""
    if query.having is not None:
        return None
    group = query.groups
    aliases = {i.alias: i.expression for i in query.select if i.alias is not None}
    compiler = SqlCompiler(types, group=group, aliases=aliases)
    try:
        # a select item that is a GROUP BY key (and no alias) is that key's grouping column (no first-row lookup)
        grouped = {key: (grouping_key(n), SqlCompiler(types).value(key)[1])
                   for n, key in enumerate(query.keys)} if group else {}
        fields = []
        for name, sources in field_sources(query, [p for p in types if p != "id"]).items():
            compiled = []
            for how, ref in sources:
                if how == "*":
                    kind = "string" if ref == "id" else types[ref]
                    if kind not in COLUMN_KINDS:
                        return None
                    compiled.append((f"min_by({_q(ref)}, seq)" if group else _q(ref), kind))
                elif ref in grouped and not (isinstance(ref, Name) and ref.name in aliases):
                    compiled.append(grouped[ref])
                else:
                    compiled.append(compiler.value(ref))
            if len({kind for _, kind in compiled if kind != "null"}) > 1:
                return None
            fields.append((name, compiled))
        order_compiler = SqlCompiler(types, group=group, aliases=aliases)
        order = [(order_compiler.value(k.expression)[0], k.descending) for k in query.order]
    except NotCompiled:
        return None
    keys = [SqlCompiler(types).value(k)[0] for k in query.keys] if group else []
    return {"group": group, "fields": fields, "order": order, "keys": keys}
