"""An Esper statement over a window: what `select ... from E<window>` posts to
its listener (Esper's reference, "Processing Model" and "EPL Reference:
Clauses"; its `ResultSetProcessor*` classes decide what the docs leave open).

The window's posts are its view updates: each post's inserted events are the
new data, its removed events the old data; a derived-value window's rows
(`#uni(price)`: one row of the values after, one of those before) are its
new and old data, their fields the properties a statement reads (`*`: all
of them; a row has no id). For each post, in order:

* The stream filter (`E(c)`) comes first: an event that fails it never
  reaches the window, so it causes no update at all.
* WHERE filters the post's new and old events alike; the aggregates only ever
  see the events that pass it, and a post it leaves without events goes no
  further (Esper's filter view after the window calls its child only with
  events): no rows, even the fully aggregated ones.
* The aggregation state, per group under GROUP BY: each post enters its new
  events, then leaves its old ones, one by one in the post's order, into one
  aggregator per aggregate, which keeps counters, not events (Esper's
  `Aggregator*` classes; for a sliding window they amount to its contents,
  for a batch window to the current batch). A null value is skipped, except
  by `count(*)`:
  - `count(*)`, `count(x)`: a count; a leave takes 1 off unless it is 0
    (`AggregatorCount`);
  - `sum(x)`, `avg(x)`: a count and a total; an enter adds 1 and the value, a
    leave with a count of 1 or less resets both to 0, any other leave takes
    1 and the value off (`AggregatorSumBase`); null at a count of 0, else the
    total (`sum`: an int over ints) or the total over the count (`avg`);
  - `min(x)`, `max(x)`: a count per value; a leave of a value not counted is
    ignored (`SortedRefCountedSet`); the least (greatest) value counted, null
    over none, numbers in `Double.compareTo`'s order (NaN above all);
  - `distinct`: a count per value gates the aggregator: an enter reaches it
    when its value was not counted, a leave when its value is counted once or
    not at all (`RefCountedSet.remove` answers true for both), so
    `count(distinct x)` counts the distinct values. Java's equals: 1 and 1.0
    are two values, every NaN is one, 0.0 and -0.0 are two
    (`Double.equals`); GROUP BY values are told apart the same way.
  A leave of an event that never entered (an intersection posts an arrival it
  turns away as old data) so changes a count and a total: the rule, not the
  window's contents, decides the value.
* The rows, by the statement's shape (Esper's five processors):
  - no aggregate: one row per event, new rows from the new events, old rows
    from the old (`ResultSetProcessorSimple`);
  - fully aggregated, no GROUP BY (every property read inside an aggregate):
    one new row after the post is applied and one old row from before it,
    whatever the post held (`RowForAll`): a batch window's old row is the
    previous batch's, the first one the aggregates of nothing;
  - aggregated, no GROUP BY (a property beside an aggregate): one row per
    event, old rows too, each with the aggregates after the post
    (`RowPerEvent`);
  - fully aggregated with GROUP BY: one new and one old row per group the
    post touched: the new row is the group's state after the post, the old
    row is the group's state before the post (`RowPerGroup`);
    a group seen the first time has the aggregates of nothing as its old row.
    Decided: the groups in the order their events appear in the post (new
    events first); Esper iterates a hash map, which the corpus marks
    `unordered`;
  - aggregated with GROUP BY: one row per event with its group's aggregates
    after the post (`AggregateGrouped`).
* HAVING keeps the rows it is true for, each side judged with the state its
  row reads.
* A row's reason names its rule, then the post: the events that entered and
  left, and the HAVING that held (`oracle.explain`; no part of the output).
* The stream selector: `istream` posts the new rows; `irstream` the new rows
  and the old rows; `rstream` the old rows, delivered as new data.
* A post that yields no rows on the selected sides posts nothing; the rows of
  several posts in one unit of work are one listener call (the driver's).

A CCL aggregation window (its rules post a `store`: `SELECT keys, aggregates FROM s
KEEP ... GROUP BY keys [HAVING h]`) is a window of one row per group, keyed
by the GROUP BY values (PRIMARY KEY DEDUCED: "these columns form the key for
the target"). Its source window posts each input record's inserted rows, then
the rows its retention deletes; they enter and leave the groups' aggregates
as above (the aggregates are "additive": a CCL window deletes only rows it
holds, so they are the group's rows'). Then, for each group the update
touched, in the order of its first row in the update (inserted rows first):

* the group holds rows and HAVING holds (or there is none): its row is
  posted `insert` if the window did not hold the group's row, else `update`
  (the window held the group's row: it is updated) ("an incoming event record with an insert opcode can update the contents
  of the store and thus output an event record with an update opcode");
* otherwise, if the window held the group's row, that stored row is posted
  `delete` and leaves the window; else nothing.

Decided (the documentation is silent; corpus `ccl/aggregation-*`): a group
whose last row leaves is deleted, with the row as last posted (a row with
count 0 would break "one row of output per group"); HAVING filters the
output window: a group that comes to pass it is inserted, one that stops
passing is deleted; without GROUP BY there is no key to deduce, so the model
refuses it.

Rows are objects keyed by the select list's names (`Statement.field_names`);
`*` gives the event's properties. Values follow the table the rules name
(`Rules.values`; Esper's and CCL's `java`, `oracle.windows.values`).
Decided: CCL's arithmetic is not in the seeds; its statements here hold only
GROUP BY keys and aggregates of properties, where Java's rules and CCL's agree.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Mapping
from typing import Any

from oracle.model import Aggregate, DerivedValues, Event, Statement, expression_nodes
from oracle.windows.base import EventError, Post, WindowBase
from oracle.windows.expr import Scope, evaluate
from oracle.windows.reasons import Reasons
from oracle.windows.values import VALUES, is_number, need_number


class StatementWindow(WindowBase):
    """`Statement`: its window's posts, turned into rows (module docstring)."""

    REASONS = Reasons(
        simple_new="new rows from the new events", simple_old="old rows from the old",
        row_for_all_new="one new row after the post is applied", row_for_all_old="one old row from before it",
        row_per_event="one row per event, old rows too, each with the aggregates after the post",
        row_per_group_new="the new row is the group's state after the post",
        row_per_group_old="the old row is the group's state before the post",
        aggregate_grouped="one row per event with its group's aggregates after the post",
        rstream="rstream the old rows, delivered as new data",
        store_insert="posted insert if the window did not hold the group's row",
        store_update="the window held the group's row: it is updated",
        store_delete="that stored row is posted delete and leaves the window",
    )
    #: the rule of a shape's new and old rows
    SHAPE_REASONS = {"simple": ("simple_new", "simple_old"), "row_for_all": ("row_for_all_new", "row_for_all_old"),
                     "row_per_event": ("row_per_event", "row_per_event"),
                     "row_per_group": ("row_per_group_new", "row_per_group_old"),
                     "aggregate_grouped": ("aggregate_grouped", "aggregate_grouped")}

    def __init__(self, spec: Statement, now: int):
        from oracle.windows import make_window  # the table of window classes holds this module's class

        self.spec = spec
        self.window = make_window(spec.window, now)
        self._variables: Mapping[str, Any] = {}
        self.aggregates = _aggregates(spec)
        self.groups: dict[tuple, _Group] = {}  # group key -> its aggregators
        self.stored: dict[tuple, dict[str, Any]] = {}  # an aggregation window's rows, by group key
        self.names = spec.field_names
        self.shape = _shape(spec)
        self.values = VALUES[spec.rules.values]
        self.stores = spec.rules.posted == "store"

    @property
    def variables(self) -> Mapping[str, Any]:
        return self._variables

    @variables.setter
    def variables(self, values: Mapping[str, Any]) -> None:
        self._variables = values
        self.window.variables = values

    def on_event(self, event: Event, now: int) -> list[Post]:
        if self.spec.filter is not None and not self._true(self.spec.filter, event, {}):
            return []
        return self._statement(self.window.on_event(event, now))

    def on_timer(self, now: int) -> list[Post]:
        return self._statement(self.window.on_timer(now))

    def on_set(self, values: Mapping[str, Any], now: int) -> list[Post]:
        return self._statement(self.window.on_set(values, now))

    def next_timer(self) -> int | None:
        return self.window.next_timer()

    def contents(self) -> list[Event]:
        return self.window.contents()

    # ------------------------------------------------------------------ rows

    def _statement(self, posts: list[Post]) -> list[Post]:
        out = []
        for post in posts:
            inserted, removed = _read(post)
            new = [e for e in inserted if self._passes_where(e)]
            old = [e for e in removed if self._passes_where(e)]
            if self.spec.where is not None and not new and not old:
                continue  # Esper's WHERE view passes nothing on when it keeps no event
            if self.stores:
                values = _store(self, new, old)
                if values.insert or values.update or values.remove:
                    held, moved = self._note(new, old), self._note(new, old, having=False)
                    out.append(Post(values=values, why={"values.insert": self.REASONS.store_insert.via(None, held),
                                                        "values.update": self.REASONS.store_update.via(None, held),
                                                        "values.remove": self.REASONS.store_delete.via(None, moved)}))
                continue
            new_rows, old_rows = self.shape(self, new, old)
            note = self._note(new, old)
            new_why, old_why = (getattr(self.REASONS, rule).via(None, note)
                                for rule in self.SHAPE_REASONS[self.spec.shape])
            selector = self.spec.selector
            if selector == "istream":
                old_rows = []
            elif selector == "rstream":
                new_rows, old_rows = old_rows, []
                new_why = self.REASONS.rstream.via(old_why)
            if new_rows or old_rows:
                out.append(Post(values=DerivedValues(insert=new_rows, remove=old_rows),
                                why={"values.insert": new_why, "values.remove": old_why}))
        return out

    def _note(self, new: list, old: list, having: bool = True) -> str | None:
        """What a post's reasons add to the rule: `E3 entered and E1 left;
        HAVING sum(price) > 10 held` (the events by id, derived rows counted)."""
        note = " and ".join(_moved(rows, verb) for rows, verb in ((new, "entered"), (old, "left")) if rows)
        if having and self.spec.having is not None:
            from oracle.dialects import expression_text

            held = f"HAVING {expression_text(self.spec.having, self.spec.rules.engine)} held"
            note = f"{note}; {held}" if note else held
        return note or None

    def _passes_where(self, event: Event) -> bool:
        return self.spec.where is None or self._true(self.spec.where, event, {})

    def _key(self, event: Event) -> tuple:
        return tuple(_hashable(self._value(k, event, {})) for k in self.spec.keys)

    def _apply(self, new: list[Event], old: list[Event]) -> None:
        """The post entered into, then left from, its groups' aggregators."""
        for events, enter in ((new, True), (old, False)):
            for event in events:
                group = self.groups.setdefault(self._key(event), _Group(self.aggregates))
                group.size = group.size + 1 if enter else max(0, group.size - 1)
                for node, aggregator in group.aggregators.items():
                    value = None if node.argument is None else self._value(node.argument, event, {})
                    if node.argument is not None and value is None:
                        continue
                    aggregator.enter(value) if enter else aggregator.leave(value)

    def _state(self, key: tuple) -> dict[Any, Any]:
        """A group's aggregates' values now (those of no event for a group not seen)."""
        return (self.groups.get(key) or _Group(self.aggregates)).values()

    def _row(self, event: Event | None, state: Mapping[Any, Any]) -> dict[str, Any] | None:
        """The output row for `event` (the group's first event for a group row)
        with the aggregates' values `state`; None where HAVING drops it."""
        if self.spec.having is not None and not self._true(self.spec.having, event, state):
            return None
        row: dict[str, Any] = {}
        for item, name in zip(self.spec.select, self.names):
            if item.expression is None:
                row.update(event.as_dict() if event is not None else {})
            else:
                row[name] = self._value(item.expression, event, state)
        return row

    def _value(self, node: Any, event: Event | None, state: Mapping[Any, Any]) -> Any:
        return evaluate(node, Scope(event, {}, None, None, self._variables, (), state, self.values))

    def _true(self, node: Any, event: Event | None, state: Mapping[Any, Any]) -> bool:
        value = self._value(node, event, state)
        if value is not None and not isinstance(value, bool):
            raise EventError(f"the condition gave {value!r}, not true or false")
        return value is True


class _ValueRow:
    """A derived-value window's row as a statement reads it: its fields are
    the properties (it has no id), `*` gives them all."""

    __slots__ = ("fields",)

    def __init__(self, fields: Mapping[str, Any]):
        self.fields = fields

    def get(self, name: str) -> Any:
        return self.fields.get(name)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.fields)


def _read(post: Post) -> tuple[list, list]:
    """A post's new and old data: its events, or a derived-value window's rows."""
    if post.values is None:
        return list(post.insert), list(post.remove)
    return [_ValueRow(r) for r in post.values.insert], [_ValueRow(r) for r in post.values.remove]


def _moved(rows: list, verb: str, shown: int = 5) -> str:
    """`E1, E2 entered`, `E1, ..., E5 and 3 more left`, `2 rows entered` (a derived row has no id)."""
    if any(isinstance(row, _ValueRow) for row in rows):
        return f"{len(rows)} row{'s' * (len(rows) != 1)} {verb}"
    ids = ", ".join(row.id for row in rows[:shown]) + (f" and {len(rows) - shown} more" if len(rows) > shown else "")
    return f"{ids} {verb}"


def _java_order(value: Any) -> tuple:
    """A number's place in Java's `Double.compareTo` order (Esper's sorted
    value counts): NaN above every other number."""
    return (1, 0.0) if value != value else (0, value)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return _Number(type(value) is float, value) if is_number(value) else value


class _Number(tuple):
    """A number as a key, equal as Java's `equals` has it: 1 and 1.0 are two;
    a double by its bits (`Double.doubleToLongBits`), so every NaN is one key
    and 0.0 and -0.0 are two."""

    def __new__(cls, is_float: bool, value: Any):
        if is_float:
            value = _CANONICAL_NAN if value != value else struct.unpack(">q", struct.pack(">d", value))[0]
        return super().__new__(cls, (is_float, value))

    def __getnewargs__(self) -> tuple[bool, Any]:
        return self[0], _unhashable(self)  # pickled as its two arguments (a tuple's own would be one)


_CANONICAL_NAN = 0x7FF8000000000000  # doubleToLongBits of every NaN


def _unhashable(key: Any) -> Any:
    if not isinstance(key, _Number):
        return key
    return struct.unpack(">d", struct.pack(">q", key[1]))[0] if key[0] else key[1]


def _rows(rows: list) -> list[dict[str, Any]]:
    return [row for row in rows if row is not None]


def _simple(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    return _rows([window._row(e, {}) for e in new]), _rows([window._row(e, {}) for e in old])


def _row_for_all(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    before = window._state(())
    window._apply(new, old)
    return _rows([window._row(None, window._state(()))]), _rows([window._row(None, before)])


def _row_per_event(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    window._apply(new, old)
    after = window._state(())
    return _rows([window._row(e, after) for e in new]), _rows([window._row(e, after) for e in old])


def _row_per_group(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    touched: dict[tuple, Event] = {}
    for event in [*new, *old]:
        touched.setdefault(window._key(event), event)
    before = {key: window._state(key) for key in touched}
    window._apply(new, old)
    new_rows = [window._row(event, window._state(key)) for key, event in touched.items()]
    old_rows = [window._row(event, before[key]) for key, event in touched.items()]
    return _rows(new_rows), _rows(old_rows)


def _aggregate_grouped(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    window._apply(new, old)
    return (_rows([window._row(e, window._state(window._key(e))) for e in new]),
            _rows([window._row(e, window._state(window._key(e))) for e in old]))


def _store(window: StatementWindow, new: list[Event], old: list[Event]) -> DerivedValues:
    """A CCL aggregation window's codes for one update (module docstring)."""
    touched: dict[tuple, Event] = {}
    for event in [*new, *old]:
        touched.setdefault(window._key(event), event)
    window._apply(new, old)
    inserted, updated, deleted = [], [], []
    for key, event in touched.items():
        row = window._row(event, window._state(key)) if window.groups[key].size else None
        if row is not None:
            (updated if key in window.stored else inserted).append(row)
            window.stored[key] = row
        elif key in window.stored:
            deleted.append(window.stored.pop(key))
    return DerivedValues(insert=inserted, remove=deleted, update=updated)


# ---------------------------------------------------------------- aggregators (module docstring)


class _Count:
    """`count(*)`, `count(x)`."""

    def __init__(self, function: str):
        self.n = 0

    def enter(self, value: Any) -> None:
        self.n += 1

    def leave(self, value: Any) -> None:
        if self.n > 0:
            self.n -= 1

    def value(self) -> Any:
        return self.n


class _Sum:
    """`sum(x)`, `avg(x)`."""

    def __init__(self, function: str):
        self.function, self.n, self.total = function, 0, 0

    def enter(self, value: Any) -> None:
        need_number(self.function, value)
        self.n += 1
        self.total += value

    def leave(self, value: Any) -> None:
        need_number(self.function, value)
        if self.n <= 1:
            self.n, self.total = 0, 0
        else:
            self.n -= 1
            self.total -= value

    def value(self) -> Any:
        if self.n == 0:
            return None
        return self.total if self.function == "sum" else self.total / self.n


class _MinMax:
    """`min(x)`, `max(x)`."""

    def __init__(self, function: str):
        self.function, self.counted = function, Counter()

    def enter(self, value: Any) -> None:
        self.counted[_hashable(value)] += 1

    def leave(self, value: Any) -> None:
        key = _hashable(value)
        if key in self.counted:
            self.counted[key] -= 1
            if not self.counted[key]:
                del self.counted[key]

    def value(self) -> Any:
        values = [_unhashable(key) for key in self.counted]
        if not values:
            return None
        if not (all(is_number(v) for v in values) or all(type(v) is str for v in values)):
            raise EventError(f"{self.function} over values that cannot be ordered: {values!r}")
        order = _java_order if is_number(values[0]) else None
        return min(values, key=order) if self.function == "min" else max(values, key=order)


class _Distinct:
    """`f(distinct x)`: the values' counts gate `inner`."""

    def __init__(self, inner):
        self.inner, self.counted = inner, Counter()

    def enter(self, value: Any) -> None:
        key = _hashable(value)
        self.counted[key] += 1
        if self.counted[key] == 1:
            self.inner.enter(value)

    def leave(self, value: Any) -> None:
        key = _hashable(value)
        if self.counted[key] > 1:
            self.counted[key] -= 1
            return
        self.counted.pop(key, None)
        self.inner.leave(value)

    def value(self) -> Any:
        return self.inner.value()


_AGGREGATORS = {"count": _Count, "sum": _Sum, "avg": _Sum, "min": _MinMax, "max": _MinMax}


class _Group:
    """One group's aggregators, one per aggregate of the statement."""

    def __init__(self, aggregates: tuple[Aggregate, ...]):
        self.size = 0  # the events in the group (entered less left, never below 0)
        self.aggregators = {}
        for node in aggregates:
            aggregator = _AGGREGATORS[node.function](node.function)
            self.aggregators[node] = _Distinct(aggregator) if node.distinct else aggregator

    def values(self) -> dict[Any, Any]:
        return {node: aggregator.value() for node, aggregator in self.aggregators.items()}


def _aggregates(spec: Statement) -> tuple[Aggregate, ...]:
    """The statement's aggregates (select list and HAVING), each once."""
    found: dict[Aggregate, None] = {}
    for item in spec.select:
        for node in expression_nodes(item.expression) if item.expression is not None else ():
            if isinstance(node, Aggregate):
                found.setdefault(node)
    for node in expression_nodes(spec.having) if spec.having is not None else ():
        if isinstance(node, Aggregate):
            found.setdefault(node)
    return tuple(found)


#: Esper's five processors, by `Statement.shape`
_SHAPES = {"simple": _simple, "row_for_all": _row_for_all, "row_per_event": _row_per_event,
           "row_per_group": _row_per_group, "aggregate_grouped": _aggregate_grouped}


def _shape(spec: Statement):
    """The statement's processor (module docstring)."""
    return _SHAPES[spec.shape]
