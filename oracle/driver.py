"""The driver: the only clock logic (CORPUS.md, DESIGN.md "The clock").

* `Advance(T)` walks: it stops at each due time in turn, the window's timers
  firing with `now` equal to their own due time; a timer scheduled on the way can
  fall due later in the same walk. The clock then settles at T.
* `Jump(T)` sets the clock to T, then fires every timer due by T once, seeing T;
  timers scheduled during the jump wait for the next advance or jump.
* `Arrive(event, time=T)` walks to T first, then the event arrives.
* One unit of work (an event, one stop of a walk, one jump, a set item) gives
  updates by the window's `delivery` rule: Esper's, at most one `Update`, the
  inserted rows of all its posts in posting order, then the removed rows; or
  one update per post. No post, no update; an empty post gives an empty update.
* An event with an operation code goes to `on_operation`, one without to `on_event`.
* An item the window cannot take (`oracle.model.item_problem`) makes the trace
  invalid, or, where the spec rejects bad items, is one update with its
  `error`; the window does not see it.
* A `set` item changes the shared variables, then the window handles the
  change (`on_set`) as one unit of work at the current clock.
* An event on which Esper's view throws (`ViewFailure`: a null timestamp, say)
  posts nothing; the trace goes on (Esper logs the exception and goes on).
* End of trace flushes nothing.

Fed one item at a time (`Driver.step_keyed`, what a stream processor runs per
trace), each update comes with its phase (0: a stop of the item's walk or its
jump; 1: the item itself) and its ordinal among the updates of one unit of
work: with the item's index and the update's time, the update key of
spark_impl's output. A driver and its window pickle, so its state can be kept
between one item and the next anywhere (a state store).
"""

from __future__ import annotations

from oracle.errors import InvalidTrace
from oracle.model import (
    Advance,
    Arrive,
    DerivedValues,
    Jump,
    SetVariables,
    Trace,
    Update,
    WindowSpec,
    check_properties,
    check_trace,
    item_problem,
    rejects_bad_items,
)
from oracle.windows import make_window
from oracle.windows.base import Delivery, EventError, Post, ViewFailure, Window
from oracle.windows.reasons import Reasons

#: the driver's own rule: an item the window never sees
REASONS = Reasons(rejected="where the spec rejects bad items, is one update with its error")


#: the phase of an update: a timer's stop on an item's walk or jump, or the item itself
TIMER, ARRIVAL = 0, 1


def run(spec: WindowSpec, trace: Trace) -> tuple[Update, ...]:
    """Every update `spec` posts over `trace`, in order."""
    return tuple(start(spec, trace).feed(trace))


def start(spec: WindowSpec, trace: Trace) -> Driver:
    """A driver of a fresh window of `spec`, ready to feed `trace` (checked
    first), its variables at the trace's starting values."""
    check_trace(trace, spec.MIXED_KINDS)
    check_properties(spec, trace)
    variables = dict(trace.variables)
    return Driver(make_window(spec, trace.start_time, variables), trace.start_time, spec, variables)


class Driver:
    """Feeds trace items to one window, one unit of work at a time, collecting the
    updates in `updates`.

    Kept lean, as it runs once per event: events are tested first, being the
    commonest item, and a unit of one post reuses that post's tuples."""

    def __init__(self, window: Window, start_time: int, spec: WindowSpec | None = None,
                 variables: dict | None = None):
        self.window = window
        self.variables = variables if variables is not None else {}  # the window's, shared
        self.clock = start_time
        self.updates: list[Update] = []
        self.spec = spec  # None: every item is taken (a bare window under test)
        self.rejects = spec is not None and rejects_bad_items(spec)
        self.one_per_unit = window.delivery is Delivery.ONE_UPDATE_PER_UNIT
        self.units: list[tuple[int, int]] | None = None  # while `step_keyed` runs: (phase, first update) per unit

    def feed(self, trace: Trace) -> list[Update]:
        """Every item of `trace` in turn; the updates posted so far."""
        for index, item in enumerate(trace.items):
            self.checked(index, item)
        return self.updates

    def checked(self, index: int, item) -> None:
        """`apply`, a window's refusal of the item raised as `InvalidTrace` naming `index`."""
        try:
            self.apply(index, item)
        except EventError as exc:
            raise InvalidTrace(str(exc), index) from None
        except InvalidTrace as exc:
            if exc.index is not None:
                raise
            raise InvalidTrace(exc.reason, index) from None  # a window's refusal: named by the item

    def step(self, index: int, item) -> list[Update]:
        """The updates one item posts (kept in `updates` too)."""
        start = len(self.updates)
        self.apply(index, item)
        return self.updates[start:]

    def step_keyed(self, index: int, item) -> list[tuple[int, int, Update]]:
        """The updates one item posts, each as (phase, ordinal, update): phase 0
        for a stop of the item's walk or its jump, 1 for the item itself (an
        arrival, a set, a rejected item); ordinal, the update's order among
        those of its unit of work (0 unless the window posts an update per
        post). Nothing is kept in `updates`, so a driver fed this way for
        ever holds only its window. A refused item raises `InvalidTrace`
        naming `index` (`checked`)."""
        start = len(self.updates)
        self.units = []
        try:
            self.checked(index, item)
            units = self.units
        finally:
            self.units = None
        posted = self.updates[start:]
        del self.updates[start:]
        keyed = []
        for n, (phase, first) in enumerate(units):
            last = units[n + 1][1] if n + 1 < len(units) else start + len(posted)
            keyed += [(phase, ordinal, update) for ordinal, update in enumerate(posted[first - start:last - start])]
        return keyed

    def apply(self, index: int, item) -> None:
        if isinstance(item, Arrive):
            problem = item_problem(self.spec, item) if item.op is not None and self.spec is not None else None
            if problem is not None:
                if not self.rejects:
                    raise InvalidTrace(problem, index)
                if item.time is not None:
                    self.walk(index, item.time)
                self.unit(index, self.clock, [Post(error=problem, why=REASONS.rejected)])
                return
            if item.time is not None:
                self.walk(index, item.time)
            try:
                posts = (self.window.on_event(item.event, self.clock) if item.op is None
                         else self.window.on_operation(item.op, item.event, self.clock))
            except ViewFailure:
                return  # Esper logs the view's exception and goes on: nothing posted
            self.unit(index, self.clock, posts)
        elif isinstance(item, Advance):
            self.walk(index, item.time)
        elif isinstance(item, Jump):
            self.clock = item.time
            due = self.window.next_timer()
            if due is not None and due <= item.time:
                self.unit(index, item.time, self.window.on_timer(item.time), TIMER)
        elif isinstance(item, SetVariables):
            self.variables.update(item.values)
            self.unit(index, self.clock, self.window.on_set(dict(item.values), self.clock))
        else:
            raise InvalidTrace(f"unknown trace item {item!r}", index)

    def walk(self, index: int, target: int) -> None:
        due = self.window.next_timer()
        while due is not None and due <= target:
            if due < self.clock:
                raise AssertionError(f"window timer due at {due} is before the clock at {self.clock}")
            self.clock = due
            self.unit(index, due, self.window.on_timer(due), TIMER)
            fired, due = due, self.window.next_timer()
            if due == fired:
                raise AssertionError(f"window rescheduled a timer at the instant it fired ({fired})")
        self.clock = target

    def unit(self, index: int, time: int, posts: list[Post], phase: int = ARRIVAL) -> None:
        """One unit of work's posts, as updates by the window's delivery rule."""
        if not posts:
            return
        if self.units is not None:
            self.units.append((phase, len(self.updates)))
        if len(posts) == 1 or not self.one_per_unit:
            for post in posts:
                if post.update or post.values is not None or post.error is not None or post.window is not None:
                    self.updates.append(_update(index, time, [post]))
                else:  # the fast path: an update of events only, the post's own tuples
                    self.updates.append(Update.posted(index, time, post.insert, post.remove))
        else:
            self.updates.append(_update(index, time, posts))


def _update(index: int, time: int, posts: list[Post]) -> Update:
    """Posts flattened into one update: each field's rows in posting order."""
    values = [post.values for post in posts if post.values is not None]
    errors = [post.error for post in posts if post.error is not None]
    panes = [post.window for post in posts if post.window is not None]
    return Update(
        index, time,
        insert=tuple(e for post in posts for e in post.insert),
        remove=tuple(e for post in posts for e in post.remove),
        update=tuple(e for post in posts for e in post.update),
        values=DerivedValues([r for v in values for r in v.insert], [r for v in values for r in v.remove],
                             update=[r for v in values for r in v.update]) if values else None,
        error="; ".join(errors) if errors else None,
        window=panes[0] if panes else None,
    )
