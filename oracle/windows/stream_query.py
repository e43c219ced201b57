"""Apama's stream queries (a `Statement` with Apama's rules, posted per
activation): what `select v`, `select rstream v` and an aggregate post for
each activation (apama-ccl.md §1.2).

| Apama | the statement | an update posts |
|---|---|---|
| `select v` | `*`, `istream` | `insert`: the items the lot put in the window |
| `select rstream v` | `*`, `rstream` | `remove`: the items the lot took out |
| `select sum(v.p)` (`avg`, `min`, `max`) | `sum(p)` | `values.insert`: one row `{"sum": ...}` |
| `select count()` | `count(*)` | `values.insert`: one row `{"count": n}` |


* The window's activation is one unit of work; its posts are one lot in and
  one lot out (`oracle.windows.lots`). ADD: a simple projection outputs the
  **istream** ("new items") by default, or with `select rstream` the
  **rstream**, items "that have become obsolete"; one query outputs one of
  them. So `select v` posts the lot's inserted items as `insert` and
  `select rstream v` the lot's removed items as `remove` (the project's sides:
  insert is the istream, remove the rstream). Decided: an activation whose
  lot on that side is empty posts nothing (an empty lot is not delivered).
* An aggregate is evaluated "when the window contents change" (ADD), "at
  most once per activation" (BEHLOT), and a non-grouped aggregate query
  "outputs one item or nothing" (GENLOT): one `values` row per activation in
  which the window posted, over what the window shows after it. Seed: "If no
  items have arrived or expired since the previous window update ... the
  query does not execute": no post, no row.
* Values: `count()` the number of items shown; `sum`, `avg`, `min`, `max` of
  the argument property, as floats. Decided (the documentation gives no
  value for an empty window; apama-ccl.md §1.6 presumes 0.0 for the sum):
  over no items `sum` is 0.0, `count` 0, and `avg`, `min`, `max` NaN (a float
  of nothing). Corpus `apama/query-aggregates-of-an-empty-window`.
* An item whose argument is missing or not a number cannot be aggregated:
  `EventError` naming the event and the property (the trace is invalid),
  never a silently skipped item.
"""

from __future__ import annotations

import math

from oracle.model import DerivedValues, Event, Statement, selection
from oracle.windows.base import EventError, Post, WindowBase
from oracle.windows.reasons import Reasons, row_reasons


class StreamQueryWindow(WindowBase):
    """A `Statement` posted per activation (Apama's rules): its window's
    posts, projected. The one select item is `*` (the item: the lot's
    inserted items, or with `rstream` its removed ones) or an aggregate of
    what the window shows (`Rules.aggregated` "contents"). The lot's rows
    keep the window's reasons."""

    REASONS = Reasons(aggregate="one values row per activation in which the window posted")

    def __init__(self, spec: Statement, now: int):
        from oracle.windows import make_window  # the table of window classes holds this module's class

        self.spec = spec
        self.window = make_window(spec.window, now)
        self.output, self.argument = selection(spec)  # istream, rstream, or the aggregate; its property

    def on_event(self, event: Event, now: int) -> list[Post]:
        return self._project(self.window.on_event(event, now))

    def on_timer(self, now: int) -> list[Post]:
        return self._project(self.window.on_timer(now))

    def next_timer(self) -> int | None:
        return self.window.next_timer()

    def contents(self) -> list[Event]:
        return self.window.contents()

    def _project(self, posts: list[Post]) -> list[Post]:
        output = self.output
        if output == "istream":
            inserted = tuple(e for post in posts for e in post.insert)
            why = [reason for post in posts for reason in row_reasons(post, "insert")]
            return [Post(inserted, why={"insert": why})] if inserted else []
        if output == "rstream":
            removed = tuple(e for post in posts for e in post.remove)
            why = [reason for post in posts for reason in row_reasons(post, "remove")]
            return [Post((), removed, why={"remove": why})] if removed else []
        if not any(post.insert or post.remove for post in posts):
            return []
        return [Post(values=DerivedValues(insert=[{output: self._aggregate()}]), why=self.REASONS.aggregate)]

    def _aggregate(self):
        items = self.window.contents()
        if self.output == "count":
            return len(items)
        values = [self._number(event) for event in items]
        if self.output == "sum":
            return math.fsum(values)
        if not values:
            return math.nan
        if self.output == "avg":
            return math.fsum(values) / len(values)
        return float(min(values) if self.output == "min" else max(values))

    def _number(self, event: Event) -> float:
        name = self.argument
        value = event.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            what = "is missing" if value is None else f"is {value!r}, not a number"
            raise EventError(f"event {event.id!r}: property {name!r} {what}; {self.output}() reads numbers")
        return float(value)
