"""Derived-value windows: `#size`, `#uni`, `#linest`, `#correl`, `#weighted_avg`
(esper.md §7; Esper's `view/derived/*View.java` and `BaseStatisticsBean`).

A derived-value window wraps its source (a data window, an intersection or a
union; none: the stream itself, every event new and none removed) and posts
rows of values instead of events. Shared rules (`DerivedWindow`):

* Each post of the source is one `update(newData, oldData)` call of the
  derived view: the new events' points are added first, then the old events'
  points removed. A view posts (at most) one row as new, the current values,
  and one row as old, the row it posted last; the very first time, the values
  before the call (the empty statistics). A unit of work in which the source
  posts several times (an intersection's members' timers in one jump) gives
  one update whose `values` list one row per source post, in posting order
  (the listener dispatch merges the unit's posts).
* An empty source post (a FORCE_UPDATE batch with nothing in it) is a call
  too: every view but `#size` posts its unchanged values.
* Additional properties are read from the last new event of the call and
  kept until a later call has new events (Esper's `lastValuesEventNew`).
  Decided (esper.md is silent; the sources say it): a call without new
  events (an expiry) posts the values of the last new event seen before
  (corpus `size-extra-kept-on-expiry`, and the observed
  `time_size_extra-1`); before any new event, the named additional properties
  are null (Esper's map has no entry; observed: `"symbol": null`).
* Decided: `*` among the additional properties (Esper copies every property
  of the event type) is the last new event's `id` and each of its properties
  that is not null; before any new event it adds nothing. An event with a
  property named like a field the window checks (ignoring case) makes the
  trace invalid, as Esper refuses such an event type
  (corpus `uni-wildcard-extra`).
* Decided: an additional property named like a field Esper does not check
  (every `#linest` field but `slope` and `YIntercept`) replaces that field
  in the row, from the first new event on (Esper puts the additional
  properties into the row's map after the fields;
  corpus `linest-extra-replaces-a-field`).
* A statistic's property that is null (missing) on an event: the event adds
  and removes no point (its size still counts for `#size`). A value that is
  not a number (a string, a boolean) makes the trace invalid: Esper requires
  numeric expressions (`EventError`).
* Arithmetic is Java's double arithmetic: a square root of a negative number
  (rounding) and 0/0 are NaN, x/0 is an infinity; integers are converted to
  doubles first.
* Timers, `set` items and timer handles are the source's.
* Decided: `contents()` is empty: the window posts rows, never events, so
  the events its updates hold are none (Esper's iterator gives one row of
  the current values: `current_row()`). Every NaN in a row is the one
  object `NAN`, so rows compare equal as values.

Grouped statistics (`#groupwin(symbol)#length(10)#uni(price)`): under
`#groupwin` each group has its own derived window; only the arriving event's
group posts, its rows carry the group keys (the first old row too), unless
every key is already a field of the rows (then nothing is added; one key
among the fields beside one that is not is an `InvalidSpec`, as Esper
refuses it); after `#merge` a derived window is `UnsupportedWindow`. Corpus:
`esper/groupwin-uni-*`, `esper/groupwin-size-*`. On Spark
(`spark_impl/windows/derived.py`: running sums over the source's posts, per
segment between resets; a post is a unit of work, or within a timer's unit
of an intersection or union with two timed members or more, one member
timer's firing) a group's source that may post an update of no event (a
FORCE_UPDATE batch, an expression window on a `set` item) is
`UnsupportedWindow` for grouped statistics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from oracle.errors import UnsupportedWindow
from oracle.model import Correl, DerivedValues, Event, Linest, Size, Uni, WeightedAvg
from oracle.windows.base import Delivery, EventError, Post, Window, WindowBase
from oracle.windows.reasons import Reasons

NAN = float("nan")


def _make(spec, now: int) -> Window:
    from oracle.windows import make_window  # the table of window classes holds this module's classes

    return make_window(spec, now)


def java_div(a: float, b: float) -> float:
    """`a / b` as a Java double division: never an exception."""
    if b == 0:
        if a == 0 or math.isnan(a):
            return NAN
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def java_sqrt(a: float) -> float:
    """`Math.sqrt`: NaN for a negative number or NaN."""
    return NAN if math.isnan(a) or a < 0 else math.sqrt(a)


def _number(event: Event, name: str, kind: str) -> float | None:
    """The value of a statistic's property as a double; None if null."""
    value = event.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EventError(f"event {event.id!r}: {kind} reads property {name!r}, which is {value!r}, not a number")
    return float(value)


class DerivedWindow(WindowBase):
    """The shared rules (module docstring); a subclass keeps its statistic
    (`add`, `remove`, `fields`) and says whether it `posts` a call."""

    REASONS = Reasons(new="one row as new, the current values",
                      old="one row as old, the row it posted last",
                      first="the very first time, the values before the call")

    def __init__(self, spec, now: int):
        self.spec = spec
        self.source: Window | None = None if spec.source is None else _make(spec.source, now)
        if self.source is not None and self.source.delivery is not Delivery.ONE_UPDATE_PER_UNIT:
            raise UnsupportedWindow(f"{spec.KIND}: a source that posts one update per post is not supported")
        self.last_values: dict[str, Any] | None = None  # the additional properties of the last new event
        self.last_row: Mapping[str, Any] | None = None  # the row posted last as new
        self.reset()

    # -- the statistic ------------------------------------------------------

    def reset(self) -> None:
        raise NotImplementedError

    def add(self, event: Event) -> None:
        raise NotImplementedError

    def remove(self, event: Event) -> None:
        raise NotImplementedError

    def fields(self) -> dict[str, Any]:
        raise NotImplementedError

    def posts(self, before: dict[str, Any], after: dict[str, Any]) -> bool:
        """Whether a call posts (every call, but for `#size`)."""
        return True

    # -- rows ---------------------------------------------------------------

    def row(self) -> dict[str, Any]:
        fields = {name: NAN if isinstance(value, float) and math.isnan(value) else value
                  for name, value in self.fields().items()}
        if self.last_values is None:
            return {**{name: None for name in self.spec.extra}, **fields}
        return {**fields, **self.last_values}

    def take_extras(self, event: Event) -> None:
        values: dict[str, Any] = {}
        if self.spec.all_properties:
            values.update((name, value) for name, value in event.as_dict().items() if value is not None)
        values.update((name, event.get(name)) for name in self.spec.extra)
        self.last_values = values

    def call(self, post: Post) -> Post | None:
        """One `update(newData, oldData)` of the view: the values post, or None."""
        before = self.fields()
        old_row = self.last_row if self.last_row is not None else self.row()
        for event in post.insert:
            self.add(event)
        if post.insert:
            self.take_extras(post.insert[-1])
        for event in post.remove:
            self.remove(event)
        if not self.posts(before, self.fields()):
            return None
        first = self.last_row is None
        new_row = self.row()
        self.last_row = new_row
        return Post(values=DerivedValues([new_row], [old_row]),
                    why={"values.insert": self.REASONS.new,
                         "values.remove": self.REASONS.first if first else self.REASONS.old})

    def derive(self, posts: Sequence[Post]) -> list[Post]:
        return [values for post in posts if (values := self.call(post)) is not None]

    # -- the window contract ------------------------------------------------

    def check(self, event: Event) -> None:
        for name in self.spec.values():
            _number(event, name, self.spec.KIND)
        if self.spec.all_properties:
            checked = {f.lower(): f for f in self.spec.CHECKED_FIELDS}
            clash = next((name for name in event.props if name.lower() in checked), None)
            if clash is not None:
                raise EventError(f"event {event.id!r}: property {clash!r} overlaps the field "
                                 f"{checked[clash.lower()]!r} that {self.spec.KIND} posts, so * cannot copy it")

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.check(event)
        if self.source is None:
            return self.derive([Post((event,))])  # the stream itself: no rule of a window
        return self.derive(self.source.on_event(event, now))

    def next_timer(self) -> int | None:
        return None if self.source is None else self.source.next_timer()

    def on_timer(self, now: int) -> list[Post]:
        return [] if self.source is None else self.derive(self.source.on_timer(now))

    def timer_handles(self) -> list[tuple[int, int]]:
        return [] if self.source is None else self.source.timer_handles()

    def fire(self, handle: int, now: int) -> list[Post]:
        return [] if self.source is None else self.derive(self.source.fire(handle, now))

    def on_set(self, values, now: int) -> list[Post]:
        return [] if self.source is None else self.derive(self.source.on_set(values, now))

    @property
    def variables(self):
        """The source's variables: `make_window` sets them after the source exists."""
        return WindowBase.variables if self.source is None else self.source.variables

    @variables.setter
    def variables(self, value) -> None:
        if self.source is not None:
            self.source.variables = value

    def contents(self) -> list[Event]:
        return []

    def current_row(self) -> dict[str, Any]:
        """The row Esper's iterator gives: the current values."""
        return self.row()


class SizeWindow(DerivedWindow):
    """`#size([props])` (`SizeView`): `size`, a long, the number of events in
    the source: + the new events, - the old ones, whatever their properties.
    Posts only when a call changes the count; the first old row is then
    `size` as before the call (0) with the additional properties as they
    were (null before any new event)."""

    def reset(self) -> None:
        self.size = 0

    def add(self, event: Event) -> None:
        self.size += 1

    def remove(self, event: Event) -> None:
        self.size -= 1

    def fields(self) -> dict[str, Any]:
        return {"size": self.size}

    def posts(self, before: dict[str, Any], after: dict[str, Any]) -> bool:
        return before["size"] != after["size"]


class _Bean(DerivedWindow):
    """The sums of `BaseStatisticsBean`: n, sum x, sum x², sum y, sum y², sum xy,
    over the points (x, y) whose values are all not null (y is 0 for `#uni`).
    Removing a point when n drops to 0 or below resets every sum to exactly
    0 (no drift is left behind)."""

    def reset(self) -> None:
        self.n = 0
        self.sum_x = self.sum_x_sq = self.sum_y = self.sum_y_sq = self.sum_xy = 0.0

    def point(self, event: Event) -> tuple[float, float] | None:
        values = [_number(event, name, self.spec.KIND) for name in self.spec.values()]
        if any(v is None for v in values):
            return None
        return (values[0], values[1]) if len(values) == 2 else (values[0], 0.0)

    def add(self, event: Event) -> None:
        point = self.point(event)
        if point is None:
            return
        x, y = point
        self.n += 1
        self.sum_x += x
        self.sum_x_sq += x * x
        self.sum_y += y
        self.sum_y_sq += y * y
        self.sum_xy += x * y

    def remove(self, event: Event) -> None:
        point = self.point(event)
        if point is None:
            return
        x, y = point
        self.n -= 1
        if self.n <= 0:
            self.reset()
            return
        self.sum_x -= x
        self.sum_x_sq -= x * x
        self.sum_y -= y
        self.sum_y_sq -= y * y
        self.sum_xy -= x * y

    # the bean's getters, NaN where Esper returns NaN
    def average(self, total: float) -> float:
        return NAN if self.n == 0 else java_div(total, self.n)

    def stddev_pop(self, total: float, squares: float) -> float:
        if self.n == 0:
            return NAN
        return java_sqrt(java_div(squares - java_div(total * total, self.n), self.n))

    def variance(self, total: float, squares: float) -> float:
        if self.n < 2:
            return NAN
        return java_div(squares - java_div(total * total, self.n), self.n - 1)

    def stddev_sample(self, total: float, squares: float) -> float:
        return NAN if self.n < 2 else java_sqrt(self.variance(total, squares))

    def slope(self) -> float:
        if self.n == 0:
            return NAN
        ssx = self.sum_x_sq - java_div(self.sum_x * self.sum_x, self.n)
        if ssx == 0:
            return NAN
        return java_div(self.sum_xy - java_div(self.sum_x * self.sum_y, self.n), ssx)

    def y_intercept(self) -> float:
        slope = self.slope()
        if math.isnan(slope):
            return NAN
        return java_div(self.sum_y, self.n) - java_div(slope * self.sum_x, self.n)

    def correlation(self) -> float:
        if self.n == 0:
            return NAN
        dx = self.sum_x_sq - java_div(self.sum_x * self.sum_x, self.n)
        dy = self.sum_y_sq - java_div(self.sum_y * self.sum_y, self.n)
        if dx == 0 or dy == 0:
            return NAN
        return java_div(self.sum_xy - java_div(self.sum_x * self.sum_y, self.n), java_sqrt(dx * dy))


class UniWindow(_Bean):
    """`#uni(x[, props])` (`UnivariateStatisticsView`): `datapoints` (a long),
    `total`, `average`, `variance` (sample, n-1), `stddev` (sample),
    `stddevpa` (population). Posts on every call. Empty: 0, 0.0, then NaN;
    one point: variance and stddev NaN, stddevpa 0."""

    def fields(self) -> dict[str, Any]:
        x, xx = self.sum_x, self.sum_x_sq
        return {"datapoints": self.n, "total": x, "average": self.average(x), "variance": self.variance(x, xx),
                "stddev": self.stddev_sample(x, xx), "stddevpa": self.stddev_pop(x, xx)}


class LinestWindow(_Bean):
    """`#linest(x, y[, props])` (`RegressionLinestView`): the regression of y
    on x, x the first parameter (slope = d(y)/d(x), esper.md §7). `slope`
    is NaN without points or when the sum of squares of x is 0, and then so
    is `YIntercept`. `dataPoints` and `n` are the same long."""

    def fields(self) -> dict[str, Any]:
        x, xx, y, yy = self.sum_x, self.sum_x_sq, self.sum_y, self.sum_y_sq
        return {
            "slope": self.slope(), "YIntercept": self.y_intercept(),
            "XAverage": self.average(x), "XStandardDeviationPop": self.stddev_pop(x, xx),
            "XStandardDeviationSample": self.stddev_sample(x, xx), "XSum": x, "XVariance": self.variance(x, xx),
            "YAverage": self.average(y), "YStandardDeviationPop": self.stddev_pop(y, yy),
            "YStandardDeviationSample": self.stddev_sample(y, yy), "YSum": y, "YVariance": self.variance(y, yy),
            "dataPoints": self.n, "n": self.n,
            "sumX": x, "sumXSq": xx, "sumXY": self.sum_xy, "sumY": y, "sumYSq": yy,
        }


class CorrelWindow(_Bean):
    """`#correl(x, y[, props])` (`CorrelationView`): `correlation`, NaN
    without points or when the sum of squares of x or of y is 0."""

    def fields(self) -> dict[str, Any]:
        return {"correlation": self.correlation()}


class WeightedAvgWindow(DerivedWindow):
    """`#weighted_avg(x, w[, props])` (`WeightedAverageView`): `average` =
    sum(x*w) / sum(w), NaN when sum(w) is 0.

    Decided from the source (esper.md §7 is silent): this view keeps sums of
    its own, not `BaseStatisticsBean`'s. They start as NaN, and a point added
    while sum(x*w) is NaN sets both sums to it; points removed are subtracted,
    and the sums are never reset, so after every point has left, rounding
    may leave sum(w) a little off 0 and the average far off (corpus
    `weighted_avg-no-reset-when-empty`). Each posted value is computed after
    the call's adds and removes."""

    def reset(self) -> None:
        self.sum_xw = NAN
        self.sum_w = NAN

    def point(self, event: Event) -> tuple[float, float] | None:
        x = _number(event, self.spec.x, self.spec.KIND)
        w = _number(event, self.spec.weight, self.spec.KIND)
        return None if x is None or w is None else (x, w)

    def add(self, event: Event) -> None:
        point = self.point(event)
        if point is None:
            return
        x, w = point
        if math.isnan(self.sum_xw):
            self.sum_xw, self.sum_w = x * w, w
        else:
            self.sum_xw += x * w
            self.sum_w += w

    def remove(self, event: Event) -> None:
        point = self.point(event)
        if point is None:
            return
        x, w = point
        self.sum_xw -= x * w
        self.sum_w -= w

    def fields(self) -> dict[str, Any]:
        return {"average": NAN if self.sum_w == 0 else java_div(self.sum_xw, self.sum_w)}


WINDOWS = {Size: SizeWindow, Uni: UniWindow, Linest: LinestWindow, Correl: CorrelWindow, WeightedAvg: WeightedAvgWindow}
