"""Expression windows `#expr(expiry)` and `#expr_batch(expiry[, include])`
(esper.md §4; seed 14.3.9, 14.3.10) as a per-sub-window kernel.

Why a kernel: whether an event is still held depends on the expiry evaluated
over the window as every earlier arrival and `set` item left it (the count, the
aggregates, the oldest and newest held, the variables' values at that moment):
the state is truly sequential, and an arbitrary expression has no running
aggregate. Each sub-window's rows (one shuffle by sub-window) go through a
grouped Arrow kernel that replays them in seq order: its events, and its
trace's `start` row (the declared variables' starting values, `vars`) and `set`
items, which under groupwin are copied to every group of the trace (a hash
aggregate of the groups, joined by broadcast). The kernel evaluates the
expression with this module's own evaluator of the spec's expression tree.

The rules, as the kernel applies them:

* `#expr`: an arrival appends (arrival clock, event); then, while events are
  held, the expiry is evaluated for the oldest (stream 0) with current_count =
  held, expired_count = expired so far, the oldest's and the newest's clock
  and event (the newest fixed when the loop starts), aggregates over the held
  events; false or null expires the oldest. One post: new = the arrival, old =
  the expired, in expiry order. A `set` changing a declared variable the
  expiry reads runs the same loop and posts (new none), even when nothing
  expired and even with nothing held; under groupwin every group created by
  then posts, and a trace's ungrouped window exists from its start.
* `#expr_batch`: an arrival is buffered (its clock starts `oldest_timestamp`
  when the buffer was empty; it is `newest`, and `oldest` if none); the expiry
  is evaluated for the arrival; true releases the buffer (without the arrival
  when not `include_trigger`, which then heads the next buffer, keeping
  `oldest_timestamp`): new = released, old = the previous release. A `set`
  evaluates with no stream-0 event and, true, releases the whole buffer.

Values (Java's, as Esper applies them): null propagates through arithmetic and
comparisons; `and`/`or` are three-valued and stop at the first deciding side;
an int with an int stays an int except for `/` (a float, Java's infinities and
NaN on zero); int `%` zero is null; `=` compares numbers with numbers, strings
with strings, booleans with booleans, and ordering numbers or strings, other
mixes fail the job naming the trace; a name is a declared variable, else the
property of stream 0. Aggregates skip nulls; sum/avg/min/max of none are null.

`#expr(current_count <= n)` and `(current_count < n + 1)`, n >= 1, with no
variable, is `#length(n)` exactly (the n + 1-th event pushes out the oldest,
one per arrival) and is planned as `#length`'s window functions.
"""

from __future__ import annotations

import json
import math

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.model import (
    Aggregate,
    Binary,
    Builtin,
    EventProperty,
    Expr,
    ExprBatch,
    Length,
    Literal,
    Name,
    Negate,
    Not,
    expression_nodes,
    spec_expression_names,
)
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import ARRIVAL, constant_columns, events, quoted
from spark_impl.windows.expr_scan import scan_kernel, scannable
from spark_impl.windows.length import held_by_arrival, sliding
from spark_impl.windows.time import group_table, with_group


def _as_length(spec: Expr) -> Length | None:
    """The `#length(n)` an expiry of the form current_count <= n (or < n + 1)
    with a literal n is, or None."""
    node = spec.expiry
    if not (isinstance(node, Binary) and node.op in ("<=", "<") and node.left == Builtin("current_count")
            and isinstance(node.right, Literal) and type(node.right.value) is int):
        return None
    size = node.right.value if node.op == "<=" else node.right.value - 1
    return Length(size) if size >= 1 else None


def expression_window(items: DataFrame, spec: Expr | ExprBatch, ctx: Context) -> DataFrame:
    if isinstance(spec, Expr) and (length := _as_length(spec)) is not None:
        return sliding(items, length, ctx)
    names = [n for n in spec_expression_names(spec) if n in items.columns and n != "id"]
    fields = {f.name: f for f in items.schema.fields}
    types = {n: _SCAN_TYPES[fields[n].dataType.typeName()] for n in names
             if fields[n].dataType.typeName() in _SCAN_TYPES}
    scan = scannable(spec, types, {k: fields[k].dataType.typeName() for k in ctx.group_keys})
    # the scan's posts carry their events' properties, so the pipeline joins nothing back
    carried = tuple(p for p in ctx.properties if p not in ctx.partition) if scan else ()
    kept_keys = tuple(k for k in ctx.group_keys if k in ctx.properties) if scan else ()
    columns = [*(quoted(c) for c in ctx.partition), "slot", "seq", "kind", "time", "id", "vars",
               *(quoted(n) for n in dict.fromkeys([*names, *carried]) if n not in ctx.partition)]
    arrived = events(items)
    variables = _reads_variables(spec, ctx)
    if not variables:
        # no variable can be read: the start and set rows change nothing, and only
        # one sub-window posts in a unit of work (its arrival), so no slot is needed
        rows = arrived.selectExpr("*", "CAST(0 AS BIGINT) AS slot").selectExpr(*columns)
    elif ctx.group_keys:
        groups = group_table(items, ctx)
        arrived = with_group(arrived, groups, ctx)
        # every group replays its trace's start and set rows (the variables), posting only once created
        trace_rows = items.where(f"kind IN ('{clock.START}', 'set')")
        shared = trace_rows.drop(*ctx.group_keys).join(F.broadcast(groups.drop("#first")), "trace_id")
        rows = arrived.selectExpr(*columns).unionByName(shared.selectExpr(*columns))
    else:
        trace_rows = items.where(f"kind IN ('{clock.START}', 'set')")
        rows = arrived.unionByName(trace_rows).selectExpr("*", "CAST(0 AS BIGINT) AS slot").selectExpr(*columns)
    keys = [f for f in rows.schema.fields if f.name in ctx.partition]
    schema = T.StructType([
        *keys, T.StructField("slot", T.LongType()), T.StructField("seq", T.LongType()),
        T.StructField("time", T.LongType()), T.StructField("side", T.StringType()),
        T.StructField("pos", T.LongType()), T.StructField("id", T.StringType()),
    ])
    kernel = _kernel(spec, ctx.partition, tuple(names))
    if scan:
        # many sub-windows' expiry loops stepped together as numpy arrays (`expr_scan`); a column that is one
        # value on every row stays in the JVM (each column crossing into Python and back costs: measured at
        # 2 M events, 11 columns through an identity 2.1-2.6 s, 5 columns 0.8 s)
        from pyspark.sql.pandas.types import to_arrow_schema

        constants = {} if variables else {"slot": 0, "kind": "event", "vars": None}
        if ctx.one_trace is not None:
            constants["trace_id"] = ctx.one_trace
        sent = rows.drop(*constants)
        schema = T.StructType([*(f for f in schema.fields if f.name not in constants),
                               *(rows.schema[p] for p in carried)])
        arrow = to_arrow_schema(rows.schema)
        scanned = scan_kernel(spec, ctx.partition, tuple(names), types, kernel, to_arrow_schema(schema), carried,
                              constants={name: (value, arrow.field(name).type) for name, value in constants.items()})
        keys = [quoted(c) for c in ctx.partition if c not in constants]
        posted = sent.repartition(*keys) if keys else sent.repartition(1)
        posted = posted.sortWithinPartitions(*keys, "seq") \
            .mapInArrow(scanned, schema)
        posted = posted.selectExpr("*", *constant_columns({c: constants[c] for c in ("trace_id", "slot")
                                                            if c in constants}))
    else:
        posted = rows.groupBy(*ctx.partition).applyInArrow(kernel, schema)
    return posted.selectExpr("trace_id", "seq", f"{ARRIVAL} AS phase", "time", "time AS slot_due", "slot", "side",
                             "pos", "id", *(quoted(p) for p in (*kept_keys, *carried)))


#: the property types the scan takes, by Spark type name
_SCAN_TYPES = {"double": "float", "float": "float", "long": "int", "integer": "int", "boolean": "bool"}


def _reads_variables(spec: Expr | ExprBatch, ctx: Context) -> bool:
    """Whether the expiry may read a variable: only a plain name can (a
    declared variable wins over a property of that name), and only where
    the input may declare one (`Context.variables`)."""
    return ctx.variables and any(isinstance(node, Name) for node in expression_nodes(spec.expiry))


POSTS = {Expr: expression_window, ExprBatch: expression_window}


#: a long above every seq: an event not removed by the cut, a sub-window's last event having no next
_NEVER = "9223372036854775807"


def _reads(spec: Expr | ExprBatch, builtin: str) -> bool:
    return any(isinstance(node, Builtin) and node.name == builtin for node in expression_nodes(spec.expiry))


def held_expression(items: DataFrame, spec: Expr | ExprBatch, ctx: Context) -> DataFrame | None:
    """The state an expression window's future reads (`spark_impl.incremental`),
    read off its own posts over `items` (which event was inserted or removed
    where; an event's id is unique in its trace): the kernel evaluates the
    expiry over the events it holds at that moment, each aggregate summed
    afresh over them in arrival order (as the rule says: over the events held),
    so the held events, the variables (`set` items, always kept) and what fixes
    the built-ins are the whole state; no running double sum is carried. Held
    events are replayed from a point where the kernel's state is its first one:

    * `#expr`: the events after the sub-window's last emptying, the last unit
      before the next arrival after which it held nothing. Every evaluation
      after that point reads only events after it (expiry is from the front),
      with the same counts, so the replay posts what one run does. A suffix of
      the held events alone would not do: an evaluation of the oldest held
      event over fewer events (or a smaller expired_count) than one run saw may
      expire it. Exact, but as large as the events since the window last
      emptied. (`current_count <= n` is `#length(n)`: its last n events.)
    * `#expr_batch`: the open buffer and the last batch released with events
      (the next release posts it as removed). Its first event came into an
      empty buffer (with `include_trigger`), or was the trigger heading it,
      which the replay puts alone into the buffer whether or not it releases:
      the replay evaluates the same buffers from there on, and restores the
      oldest and newest events and newest_timestamp.
    None (every item kept) under groupwin where the expiry reads a variable (a
    `set` posts for every group created by then, in slot order: the group's
    first event would have to be replayed), and for `#expr_batch` without the
    trigger where it reads oldest_timestamp (kept from the buffer's last
    emptying, which a trigger heading every batch puts off for ever).
    Decided: an expiry's aggregates are a function of the held events (the
    kernel's and the rule's reading); a kernel carrying Esper's running sums
    (applyEnter/applyLeave, path-dependent over doubles) would need None here."""
    if isinstance(spec, Expr) and (length := _as_length(spec)) is not None:
        return held_by_arrival(items, ctx, last=length.size)
    if ctx.group_keys and _reads_variables(spec, ctx):
        return None
    if isinstance(spec, ExprBatch) and not spec.include_trigger and _reads(spec, "oldest_timestamp"):
        return None
    posted = expression_window(items, spec, ctx).where("side IS NOT NULL").groupBy("trace_id", "id").agg(
        F.expr("min(CASE WHEN side = 'insert' THEN seq END)").alias("#in"),
        F.expr("min(CASE WHEN side = 'remove' THEN seq END)").alias("#out"))
    rows = events(items).join(posted, ["trace_id", "id"], "left")
    order = f"PARTITION BY {', '.join(quoted(c) for c in ctx.partition)}"
    if isinstance(spec, ExprBatch):
        last = rows.selectExpr("*", f"max(`#in`) OVER ({order}) AS `#last_in`")
        kept = last.where("`#in` IS NULL OR `#in` = `#last_in`")
    else:
        so_far = f"OVER ({order} ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        emptied = rows.selectExpr(
            "*", f"max(coalesce(`#out`, {_NEVER})) {so_far} AS `#gone`",
            f"coalesce(lead(seq) OVER ({order} ORDER BY seq), {_NEVER}) AS `#next`")
        # the seq of the last event after which the sub-window emptied, joined back by the sub-window
        resets = emptied.where("`#gone` < `#next`").groupBy(*ctx.partition).agg(F.expr("max(seq)").alias("#reset"))
        on = " AND ".join(f"`__rows`.{quoted(c)} <=> `__resets`.{quoted(c)}" for c in ctx.partition)
        kept = emptied.alias("__rows").join(resets.alias("__resets"), F.expr(on), "left").where(
            "`__resets`.`#reset` IS NULL OR `__rows`.seq > `__resets`.`#reset`").select("__rows.*")
    return kept.selectExpr(*(quoted(c) for c in items.columns))


HELD = {Expr: held_expression, ExprBatch: held_expression}


# --------------------------------------------------------------------------- the evaluator


class ExpressionFailed(ValueError):
    """A value the expression cannot take (a string compared with a number)."""


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_number(op, value):
    if not _number(value):
        raise ExpressionFailed(f"{op} of {value!r}, which is not a number")


def _check_truth(op, value):
    if not isinstance(value, bool):
        raise ExpressionFailed(f"{op} of {value!r}, which is not true or false")


def _divide(left, right):
    left, right = float(left), float(right)
    if right != 0.0:
        return left / right
    if left == 0.0 or math.isnan(left):
        return math.nan
    return math.inf if (left > 0) == (math.copysign(1.0, right) > 0) else -math.inf


def _remainder(left, right):
    if isinstance(left, int) and isinstance(right, int):
        if right == 0:
            return None
        value = abs(left) % abs(right)
        return value if left >= 0 else -value
    return math.fmod(left, right) if right != 0 else math.nan


_ARITHMETIC = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
               "/": _divide, "%": _remainder}
_ORDER = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _compare(op, left, right):
    same = (_number(left) and _number(right)) or (isinstance(left, str) and isinstance(right, str))
    if op in ("=", "!="):
        if not same and not (isinstance(left, bool) and isinstance(right, bool)):
            raise ExpressionFailed(f"{left!r} {op} {right!r} compares values that cannot be compared")
        return (left == right) == (op == "=")
    if not same:
        raise ExpressionFailed(f"{left!r} {op} {right!r} orders values that cannot be ordered")
    return _ORDER[op](left, right)


def compile_expression(node):
    """A function of the evaluation state `s` (stream-0 row, built-ins, held
    rows, variables) giving the node's value."""
    if isinstance(node, Literal):
        value = node.value
        return lambda s: value
    if isinstance(node, Name):
        name = node.name
        return lambda s: s.variables[name] if name in s.variables else (s.row[name] if s.row is not None else None)
    if isinstance(node, Builtin):
        name = node.name
        return lambda s: s.builtins[name]
    if isinstance(node, EventProperty):
        which, name = node.event, node.name
        return lambda s: None if s.events[which] is None else s.events[which][name]
    if isinstance(node, Negate):
        operand = compile_expression(node.operand)

        def negate(s):
            value = operand(s)
            if value is None:
                return None
            _check_number("-", value)
            return -value
        return negate
    if isinstance(node, Not):
        operand = compile_expression(node.operand)

        def negation(s):
            value = operand(s)
            if value is None:
                return None
            _check_truth("not", value)
            return not value
        return negation
    if isinstance(node, Aggregate):
        return _compile_aggregate(node)
    left, right = compile_expression(node.left), compile_expression(node.right)
    op = node.op
    if op in ("and", "or"):
        decisive = op == "or"

        def logical(s):
            unknown = False
            for side in (left, right):
                value = side(s)
                if value is None:
                    unknown = True
                    continue
                _check_truth(op, value)
                if value == decisive:
                    return decisive
            return None if unknown else not decisive
        return logical
    if op in _ARITHMETIC:
        apply = _ARITHMETIC[op]

        def arithmetic(s):
            a, b = left(s), right(s)
            if a is None or b is None:
                return None
            _check_number(op, a)
            _check_number(op, b)
            return apply(a, b)
        return arithmetic

    def comparison(s):
        a, b = left(s), right(s)
        if a is None or b is None:
            return None
        return _compare(op, a, b)
    return comparison


def _compile_aggregate(node: Aggregate):
    function = node.function
    if node.argument is None:
        return lambda s: len(s.held)
    argument = compile_expression(node.argument)

    def aggregate(s):
        row = s.row
        values = []
        for held in s.held:
            s.row = held
            value = argument(s)
            if value is not None:
                values.append(value)
        s.row = row
        if function == "count":
            return len(values)
        if not values:
            return None
        if function in ("sum", "avg"):
            total = 0
            for value in values:
                _check_number(function, value)
                total += value
            return total if function == "sum" else total / len(values)
        if not (all(_number(v) for v in values) or all(isinstance(v, str) for v in values)):
            raise ExpressionFailed(f"{function} over values that cannot be ordered: {values!r}")
        return min(values) if function == "min" else max(values)
    return aggregate


class _State:
    """The evaluation state the compiled expression reads."""

    __slots__ = ("row", "builtins", "events", "held", "variables")

    def __init__(self, variables):
        self.row = None
        self.builtins = {}
        self.events = {"oldest_event": None, "newest_event": None}
        self.held = []
        self.variables = variables


# --------------------------------------------------------------------------- the kernel


def _kernel(spec: Expr | ExprBatch, partition: tuple[str, ...], names: tuple[str, ...]):
    """The grouped-map function: one row per posted event (side, pos) or per
    empty post (side, id and pos null), with the unit's seq and clock."""
    expiry = compile_expression(spec.expiry)
    batch = isinstance(spec, ExprBatch)
    include = spec.include_trigger if batch else True
    read = frozenset(spec_expression_names(spec))
    aggregates = any(isinstance(node, Aggregate) for node in expression_nodes(spec.expiry))

    def kernel(table):
        import pyarrow as pa

        n = table.num_rows
        seq, kind, time = (table.column(c).to_pylist() for c in ("seq", "kind", "time"))
        ids, var_text = table.column("id").to_pylist(), table.column("vars").to_pylist()
        values = {name: table.column(name).to_pylist() for name in names}
        slot = table.column("slot")[0].as_py()
        out = {"seq": [], "time": [], "side": [], "pos": [], "id": []}

        def post(at, side, row, pos):
            out["seq"].append(seq[at])
            out["time"].append(time[at])
            out["side"].append(side)
            out["id"].append(None if row is None else ids[row])
            out["pos"].append(pos)

        def props(row):
            found = {name: values[name][row] for name in names}
            found["id"] = ids[row]  # `id` is readable as a property
            return found

        def holds(state):
            value = expiry(state)
            if value is not None and not isinstance(value, bool):
                raise ExpressionFailed(f"the expiry expression gave {value!r}, not true or false")
            return value is True

        variables: dict = {}
        state = _State(variables)
        created = not partition[1:]  # an ungrouped window exists from the start; a group from its first event
        held: list = []  # #expr: (clock, row index, properties); #expr_batch: the buffer, in the same form
        previous: list = []  # #expr_batch: the last released batch's row indexes
        oldest_time = newest_time = 0
        ends = {"oldest_event": None, "newest_event": None}  # #expr_batch's oldest and newest

        def expire(at, arriving):
            """#expr: the expiry loop; posts arrival and expired at row `at`."""
            expired = []
            if held:
                newest = held[-1]
                while held:
                    first = held[0]
                    state.row = first[2]
                    if aggregates:
                        state.held = [h[2] for h in held]
                    state.builtins = {"current_count": len(held), "expired_count": len(expired),
                                      "oldest_timestamp": first[0], "newest_timestamp": newest[0]}
                    state.events = {"oldest_event": first[2], "newest_event": newest[2]}
                    if holds(state):
                        break
                    expired.append(held.pop(0)[1])
            if arriving is not None:
                post(at, "insert", arriving, seq[arriving])
            for number, row in enumerate(expired):
                post(at, "remove", row, number)
            if arriving is None and not expired:
                post(at, None, None, None)

        def release(at, count):
            """#expr_batch: post the first `count` buffered events and the previous batch."""
            nonlocal previous
            released = [h[1] for h in held[:count]]
            del held[:count]
            for row in released:
                post(at, "insert", row, seq[row])
            for row in previous:
                post(at, "remove", row, seq[row])
            if not released and not previous:
                post(at, None, None, None)
            previous = released
            if held:
                ends["oldest_event"] = held[0][2]
            else:
                ends["oldest_event"] = ends["newest_event"] = None

        def batch_holds(stream0):
            state.row = stream0
            if aggregates:
                state.held = [h[2] for h in held]
            state.builtins = {"current_count": len(held), "expired_count": 0,
                              "oldest_timestamp": oldest_time, "newest_timestamp": newest_time}
            state.events = dict(ends)
            return holds(state)

        def step(at):
            """One row of the sub-window: the start, a set item or an arrival."""
            nonlocal created, oldest_time, newest_time
            if kind[at] in (clock.START, "set"):
                changed = json.loads(var_text[at]) if var_text[at] else {}
                if kind[at] == clock.START:
                    variables.update(changed)
                    return
                variables.update(changed)
                if not created or not (read & set(changed) & set(variables)):
                    return
                if not batch:
                    expire(at, None)
                elif batch_holds(None):
                    release(at, len(held))
                return
            created = True
            if not batch:
                held.append((time[at], at, props(at)))
                expire(at, at)
                return
            if not held:
                oldest_time = time[at]
            newest_time = time[at]
            entry = (time[at], at, props(at))
            if ends["oldest_event"] is None:
                ends["oldest_event"] = entry[2]
            held.append(entry)
            ends["newest_event"] = entry[2]
            if batch_holds(entry[2]):
                release(at, len(held) if include else len(held) - 1)

        trace = table.column("trace_id")[0].as_py()
        for at in sorted(range(n), key=seq.__getitem__):
            try:
                step(at)
            except ExpressionFailed as exc:
                raise ExpressionFailed(f"trace {trace} seq {seq[at]}: the expiry expression failed: {exc}") from None
        first = table.slice(0, 1)
        count = len(out["seq"])
        keys = {name: pa.array([first.column(name)[0].as_py()] * count, first.schema.field(name).type)
                for name in partition}
        return pa.table({
            **keys, "slot": pa.array([slot] * count, pa.int64()),
            "seq": pa.array(out["seq"], pa.int64()), "time": pa.array(out["time"], pa.int64()),
            "side": pa.array(out["side"], pa.string()), "pos": pa.array(out["pos"], pa.int64()),
            "id": pa.array(out["id"], pa.string()),
        })

    return kernel
