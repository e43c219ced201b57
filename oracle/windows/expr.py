"""Expression windows: `#expr(expiry)` and `#expr_batch(expiry[, include])`
(seed 14.3.9/14.3.10; esper.md §4), and the evaluation of their expressions.

Values follow the engine's table (`oracle.windows.values`; `Scope.values`,
Java's rules as Esper applies them unless a statement's rules name another):
null propagation, an int with an int an int, `/` a float, Java's infinities
and remainder; a mix Esper refuses when it compiles the statement is found
here at run time: `EventError`, which the driver reports naming the trace item.
* A name is the declared variable of that name (the trace's `variables`,
  changed by `set` items), else the property of the event the expression is
  evaluated for (a missing property, or no event, is null).
* Aggregations run over the events the window holds at that moment (a
  statement: its aggregation state): `sum` (an int when every value is an
  int), `avg` (a float), `count(x)` (non-null values), `count(distinct x)`
  (distinct non-null values), `count(*)`, `min`, `max`; null values are
  skipped, and with none left `sum`, `avg`, `min`, `max` are null.
* The expiry's value must be true, false or null; anything else is an `EventError`.

What an expiry expression may hold (esper.md §4): properties, literals
(numbers, strings, `true`, `false`, `null`), `+ - * / %`, `= != <> < <= > >=`,
`and`, `or`, `not`, parentheses, the built-ins `current_count`,
`expired_count`, `oldest_timestamp`, `newest_timestamp`, `oldest_event.p`,
`newest_event.p`, and `sum`, `count` (also `count(*)`), `avg`, `min`, `max`
over the events held. A name is a variable when the case declares it (the
case key `variables`, corpus/README.md; a `set` item of an undeclared
variable is an invalid trace). A bad expression is a `WindowSyntaxError` or
`InvalidSpec` naming its column; `view_reference` and expression windows
inside an intersection or union are `UnsupportedWindow`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from oracle.model import (
    Aggregate,
    Binary,
    Builtin,
    Event,
    EventProperty,
    Expr,
    ExprBatch,
    Expression,
    Literal,
    Name,
    Negate,
    Not,
    expression_names,
)
from oracle.windows.base import EventError, Post, WindowBase
from oracle.windows.reasons import Reasons
from oracle.windows.values import JAVA, Values, is_number, need_number


@frozen
class Scope:
    """What an expression sees: `event`, the event it is evaluated for (stream
    0; None for none), the window's built-in values and events, the variables,
    and the events held (for aggregations), or the aggregates' values where a
    state keeps them (`aggregates`)."""

    event: Event | None
    builtins: Mapping[str, Any]
    oldest_event: Event | None
    newest_event: Event | None
    variables: Mapping[str, Any]
    held: Sequence[Event]
    aggregates: Mapping[Any, Any] | None = None  # each aggregate's value, where a state keeps them (a statement)
    values: Values = JAVA  # the engine's value rules (`oracle.windows.values`)


def evaluate(node: Expression, scope: Scope) -> Any:
    """The value of `node` in `scope` (module docstring)."""
    kind = type(node)
    if kind is Literal:
        return node.value
    if kind is Name:
        if node.name in scope.variables:
            return scope.variables[node.name]
        return scope.event.get(node.name) if scope.event is not None else None
    if kind is Builtin:
        return scope.builtins[node.name]
    if kind is EventProperty:
        event = scope.oldest_event if node.event == "oldest_event" else scope.newest_event
        return event.get(node.name) if event is not None else None
    if kind is Negate:
        return scope.values.negate(evaluate(node.operand, scope))
    if kind is Not:
        return scope.values.not_(evaluate(node.operand, scope))
    if kind is Aggregate:
        return scope.aggregates[node] if scope.aggregates is not None else _aggregate(node, scope)
    assert kind is Binary
    if node.op in ("and", "or"):
        return scope.values.logical(node.op, evaluate(node.left, scope), lambda: evaluate(node.right, scope))
    return scope.values.binary(node.op, evaluate(node.left, scope), evaluate(node.right, scope))


def _aggregate(node: Aggregate, scope: Scope) -> Any:
    if node.argument is None:
        return len(scope.held)
    values = [evaluate(node.argument, Scope(event, scope.builtins, scope.oldest_event, scope.newest_event,
                                            scope.variables, ())) for event in scope.held]
    values = [v for v in values if v is not None]
    if node.distinct:  # Java's equals: 1 and 1.0 are two values
        values = list({(type(v), v): v for v in values}.values())
    if node.function == "count":
        return len(values)
    if not values:
        return None
    if node.function in ("sum", "avg"):
        total: Any = 0
        for value in values:
            need_number(node.function, value)
            total += value
        return total if node.function == "sum" else total / len(values)
    if not (all(is_number(v) for v in values) or all(type(v) is str for v in values)):
        raise EventError(f"{node.function} over values that cannot be ordered: {values!r}")
    return min(values) if node.function == "min" else max(values)


def holds(expiry: Expression, scope: Scope) -> bool:
    """Whether the expiry expression is true (false and null are not)."""
    value = evaluate(expiry, scope)
    if value is not None and not isinstance(value, bool):
        raise EventError(f"the expiry expression gave {value!r}, not true or false")
    return value is True


class _ExpressionWindow(WindowBase):
    """What both expression windows share: the expiry, and which variables it
    reads (only a change of one of those re-evaluates it)."""

    def __init__(self, expiry: Expression):
        self.expiry = expiry
        self.names = frozenset(expression_names(expiry))

    def reads_changed(self, values: Mapping[str, Any]) -> bool:
        return any(name in self.variables for name in self.names & set(values))


class ExprWindow(_ExpressionWindow):
    """`#expr(expiry)`: events held while the expiry holds for the oldest
    (esper.md §4 `#expr`; `ExpressionWindowView`).

    * Arrival at `now`: the event is appended with timestamp `now`. Then, while
      the window is not empty, the expiry is evaluated for the oldest event
      (stream 0 is the oldest) with `current_count` = events held now,
      `expired_count` = events expired so far in this evaluation,
      `oldest_timestamp` / `oldest_event` the oldest's, `newest_timestamp` /
      `newest_event` the newest's (fixed when the evaluation starts), and the
      aggregations over the events held now. True: stop. False or null: the
      oldest expires and the loop goes on, so the arrival itself can expire.
      One post: new = [arrival], old = the expired, oldest first; posted even
      when nothing expired.
    * No timers: time passing alone expires nothing (`oldest_timestamp >
      newest_timestamp - 2000` waits for the next arrival).
    * A `set` item that changes a variable the expiry reads: the same
      evaluation, then one post: new = none, old = the expired. Posted even
      when nothing expired and when the window is empty (the view posts
      `update(null, expired)` unconditionally; esper-observed/expr_variable-*).
      A `set` of other variables posts nothing.
    """

    REASONS = Reasons(arrival="new = [arrival]",
                      expired="false or null: the oldest expires",
                      set="a set item that changes a variable the expiry reads")

    def __init__(self, spec: Expr, now: int):
        super().__init__(spec.expiry)
        self.held: deque[tuple[int, Event]] = deque()

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.held.append((now, event))
        return [Post((event,), self._expire(), why={"insert": self.REASONS.arrival, "remove": self.REASONS.expired})]

    def on_set(self, values: Mapping[str, Any], now: int) -> list[Post]:
        if not self.reads_changed(values):
            return []
        return [Post((), self._expire(), why=self.REASONS.expired.via(self.REASONS.set))]

    def _expire(self) -> tuple[Event, ...]:
        expired: list[Event] = []
        if not self.held:
            return ()
        newest_time, newest = self.held[-1]
        while self.held:
            oldest_time, oldest = self.held[0]
            builtins = {"current_count": len(self.held), "expired_count": len(expired),
                        "oldest_timestamp": oldest_time, "newest_timestamp": newest_time}
            scope = Scope(oldest, builtins, oldest, newest, self.variables, [e for _, e in self.held])
            if holds(self.expiry, scope):
                break
            expired.append(self.held.popleft()[1])
        return tuple(expired)

    def contents(self) -> list[Event]:
        return [event for _, event in self.held]


class ExprBatchWindow(_ExpressionWindow):
    """`#expr_batch(expiry[, include_trigger])`: events buffered until the
    expiry holds, then released as one batch (esper.md §4 `#expr_batch`;
    `ExpressionBatchView`).

    * Arrival at `now`: if the buffer is empty, `oldest_timestamp` becomes
      `now`; `newest_timestamp` becomes `now`; the event is appended (it is
      `oldest_event` if there is none, and `newest_event`). The expiry is
      evaluated for the arrival (stream 0 is the arriving event) with
      `current_count` = buffered events (the arrival included),
      `expired_count` 0 and the aggregations over the buffer.
    * True: the batch is released. One post: new = the whole buffer (with
      `include_trigger`, the default) or the buffer without the arrival, old =
      the previous released batch. With the trigger, the buffer empties and
      `oldest_event`/`newest_event` are reset; without it the trigger stays
      as the next batch's first event and `oldest_event`, while
      `oldest_timestamp` keeps the released batch's start (Esper resets it
      only when an arrival finds the buffer empty). False or null: nothing
      is posted.
    * A `set` item changing a variable the expiry reads: evaluated with no
      event (stream 0 null); true releases the whole buffer, even an empty
      one (an update with no new rows, the previous batch as old).
    * No timers. `contents()`: the last released batch (as `#length_batch`).
    """

    REASONS = Reasons(released="true: the batch is released",
                      previous="old = the previous released batch",
                      set="a set item changing a variable the expiry reads")

    def __init__(self, spec: ExprBatch, now: int):
        super().__init__(spec.expiry)
        self.include_trigger = spec.include_trigger
        self.buffer: list[Event] = []
        self.last_batch: tuple[Event, ...] = ()
        self.oldest_time = self.newest_time = 0
        self.oldest_event: Event | None = None
        self.newest_event: Event | None = None

    def on_event(self, event: Event, now: int) -> list[Post]:
        if not self.buffer:
            self.oldest_time = now
        self.newest_time = now
        if self.oldest_event is None:
            self.oldest_event = event
        self.buffer.append(event)
        self.newest_event = event
        if not self._holds(event):
            return []
        return self._release(len(self.buffer) if self.include_trigger else len(self.buffer) - 1)

    def on_set(self, values: Mapping[str, Any], now: int) -> list[Post]:
        if self.reads_changed(values) and self._holds(None):
            return self._release(len(self.buffer), self.REASONS.set)
        return []

    def _holds(self, event: Event | None) -> bool:
        builtins = {"current_count": len(self.buffer), "expired_count": 0,
                    "oldest_timestamp": self.oldest_time, "newest_timestamp": self.newest_time}
        scope = Scope(event, builtins, self.oldest_event, self.newest_event, self.variables, self.buffer)
        return holds(self.expiry, scope)

    def _release(self, count: int, cause=None) -> list[Post]:
        batch = tuple(self.buffer[:count])
        del self.buffer[:count]
        post = Post(batch, self.last_batch, why={"insert": self.REASONS.released.via(cause),
                                                 "remove": self.REASONS.previous.via(cause)})
        self.last_batch = batch
        if self.buffer:
            self.oldest_event = self.buffer[0]
        else:
            self.oldest_event = self.newest_event = None
        return [post]

    def contents(self) -> list[Event]:
        return list(self.last_batch)
