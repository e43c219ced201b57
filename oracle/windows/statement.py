"""An Esper statement over a window: what `select ... from E<window>` posts to
its listener (Esper's reference, "Processing Model" and "EPL Reference:
Clauses"; its `ResultSetProcessor*` classes decide what the docs leave open).

The window's posts are its view updates: each post's inserted events are the
new data, its removed events the old data. For each post, in order:

* The stream filter (`E(c)`) comes first: an event that fails it never
  reaches the window, so it causes no update at all.
* WHERE filters the post's new and old events alike; the aggregates only ever
  see the events that pass it, and a post it leaves without events goes no
  further (Esper's filter view after the window calls its child only with
  events): no rows, even the fully aggregated ones.
* The aggregation state is the events entered (new data) minus those left
  (old data), per group under GROUP BY: for a sliding window the window's
  contents, for a batch window the current batch. Aggregates read it: `sum`,
  `avg` (a float), `min`, `max` over the non-null values (null over none),
  `count(*)` the events, `count(x)` the non-null values, `count(distinct x)`
  the distinct ones.
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
    post touched, the old from before, the new from after (`RowPerGroup`);
    a group seen the first time has the aggregates of nothing as its old row.
    Decided: the groups in the order their events appear in the post (new
    events first); Esper iterates a hash map, which the corpus marks
    `unordered`;
  - aggregated with GROUP BY: one row per event with its group's aggregates
    after the post (`AggregateGrouped`).
* HAVING keeps the rows it is true for, each side judged with the state its
  row reads.
* The stream selector: `istream` posts the new rows; `irstream` the new rows
  and the old rows; `rstream` the old rows, delivered as new data.
* A post that yields no rows on the selected sides posts nothing; the rows of
  several posts in one unit of work are one listener call (the driver's).

Rows are objects keyed by the select list's names (`Statement.field_names`);
`*` gives the event's properties. Values follow the expression windows' rules
(`oracle.windows.expr`: Java's, as Esper applies them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oracle.model import DerivedValues, Event
from oracle.statement import Statement
from oracle.windows.base import EventError, Post, WindowBase
from oracle.windows.expr import Scope, evaluate


class StatementWindow(WindowBase):
    """`Statement`: its window's posts, turned into rows (module docstring)."""

    def __init__(self, spec: Statement, now: int):
        from oracle.windows import make_window  # the table of window classes holds this module's class

        self.spec = spec
        self.window = make_window(spec.window, now)
        self._variables: Mapping[str, Any] = {}
        self.held: dict[tuple, list[Event]] = {}  # group key -> the events aggregated, in arrival order
        self.names = spec.field_names
        self.shape = _shape(spec)

    @property
    def variables(self) -> Mapping[str, Any]:
        return self._variables

    @variables.setter
    def variables(self, values: Mapping[str, Any]) -> None:
        self._variables = values
        self.window.variables = values

    def on_event(self, event: Event, now: int) -> list[Post]:
        if self.spec.filter is not None and not self._true(self.spec.filter, event, ()):
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
            new = [e for e in post.insert if self._passes_where(e)]
            old = [e for e in post.remove if self._passes_where(e)]
            if self.spec.where is not None and not new and not old:
                continue  # Esper's WHERE view passes nothing on when it keeps no event
            new_rows, old_rows = self.shape(self, new, old)
            selector = self.spec.selector
            if selector == "istream":
                old_rows = []
            elif selector == "rstream":
                new_rows, old_rows = old_rows, []
            if new_rows or old_rows:
                out.append(Post(values=DerivedValues(insert=new_rows, remove=old_rows)))
        return out

    def _passes_where(self, event: Event) -> bool:
        return self.spec.where is None or self._true(self.spec.where, event, ())

    def _key(self, event: Event) -> tuple:
        return tuple(_hashable(self._value(k, event, ())) for k in self.spec.keys)

    def _apply(self, new: list[Event], old: list[Event]) -> None:
        """The post entered into and left from the aggregation state."""
        for event in new:
            self.held.setdefault(self._key(event), []).append(event)
        for event in old:
            group = self.held.get(self._key(event), [])
            if event in group:
                group.remove(event)

    def _row(self, event: Event | None, group: Sequence[Event]) -> dict[str, Any] | None:
        """The output row for `event` (the group's first event for a group row)
        over `group`'s aggregates; None where HAVING drops it."""
        if self.spec.having is not None and not self._true(self.spec.having, event, group):
            return None
        row: dict[str, Any] = {}
        for item, name in zip(self.spec.select, self.names):
            if item.expression is None:
                row.update(event.as_dict() if event is not None else {})
            else:
                row[name] = self._value(item.expression, event, group)
        return row

    def _value(self, node: Any, event: Event | None, group: Sequence[Event]) -> Any:
        return evaluate(node, Scope(event, {}, None, None, self._variables, group))

    def _true(self, node: Any, event: Event | None, group: Sequence[Event]) -> bool:
        value = self._value(node, event, group)
        if value is not None and not isinstance(value, bool):
            raise EventError(f"the condition gave {value!r}, not true or false")
        return value is True


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return (type(value) is float, value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _rows(rows: list) -> list[dict[str, Any]]:
    return [row for row in rows if row is not None]


def _simple(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    return _rows([window._row(e, [e]) for e in new]), _rows([window._row(e, [e]) for e in old])


def _row_for_all(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    before = list(window.held.get((), []))
    window._apply(new, old)
    after = window.held.get((), [])
    return _rows([window._row(None, after)]), _rows([window._row(None, before)])


def _row_per_event(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    window._apply(new, old)
    after = window.held.get((), [])
    return _rows([window._row(e, after) for e in new]), _rows([window._row(e, after) for e in old])


def _row_per_group(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    touched: dict[tuple, Event] = {}
    for event in [*new, *old]:
        touched.setdefault(window._key(event), event)
    before = {key: list(window.held.get(key, [])) for key in touched}
    window._apply(new, old)
    new_rows = [window._row(event, window.held.get(key, [])) for key, event in touched.items()]
    old_rows = [window._row(event, before[key]) for key, event in touched.items()]
    return _rows(new_rows), _rows(old_rows)


def _aggregate_grouped(window: StatementWindow, new: list[Event], old: list[Event]) -> tuple[list, list]:
    window._apply(new, old)
    return (_rows([window._row(e, window.held.get(window._key(e), [])) for e in new]),
            _rows([window._row(e, window.held.get(window._key(e), [])) for e in old]))


def _shape(spec: Statement):
    """The statement's processor (module docstring)."""
    if not spec.aggregates:
        return _simple
    if spec.keys:
        return _row_per_group if spec.fully_aggregated else _aggregate_grouped
    return _row_for_all if spec.fully_aggregated else _row_per_event


