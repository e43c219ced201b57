"""The driver: the only clock logic (CORPUS.md, DESIGN.md "The clock").

* `Advance(T)` walks: it stops at each due time in turn, the window's timers
  firing with `now` equal to their own due time; a timer scheduled on the way can
  fall due later in the same walk. The clock then settles at T.
* `Jump(T)` sets the clock to T, then fires every timer due by T once, seeing T;
  timers scheduled during the jump wait for the next advance or jump.
* `Arrive(event, time=T)` walks to T first, then the event arrives.
* One unit of work (an event, one stop of a walk, one jump) gives at most one
  `Update`: the inserted rows of all its posts in posting order, then the removed
  rows. No post, no update; an empty post gives an empty update.
* End of trace flushes nothing.
"""

from __future__ import annotations

from oracle.errors import InvalidTrace
from oracle.model import Advance, Arrive, Jump, SetVariables, Trace, Update, WindowSpec, check_trace
from oracle.windows import make_window
from oracle.windows.base import EventError, Post, Window


def run(spec: WindowSpec, trace: Trace) -> tuple[Update, ...]:
    """Every update `spec` posts over `trace`, in order."""
    check_trace(trace)
    window = make_window(spec, trace.start_time)
    return tuple(Driver(window, trace.start_time).feed(trace))


class Driver:
    """Feeds trace items to one window, one unit of work at a time, collecting the
    updates in `updates`.

    Kept lean, as it runs once per event: events are tested first, being the
    commonest item, and a unit of one post reuses that post's tuples."""

    def __init__(self, window: Window, start_time: int):
        self.window = window
        self.clock = start_time
        self.updates: list[Update] = []

    def feed(self, trace: Trace) -> list[Update]:
        """Every item of `trace` in turn; the updates posted so far."""
        for index, item in enumerate(trace.items):
            try:
                self.apply(index, item)
            except EventError as exc:
                raise InvalidTrace(str(exc), index) from None
        return self.updates

    def step(self, index: int, item) -> list[Update]:
        """The updates one item posts (kept in `updates` too)."""
        start = len(self.updates)
        self.apply(index, item)
        return self.updates[start:]

    def apply(self, index: int, item) -> None:
        if isinstance(item, Arrive):
            if item.op is not None and item.op != "insert" and not getattr(self.window, "accepts_opcodes", False):
                raise InvalidTrace(f"operation code {item.op!r} is not supported by this window", index)
            if item.time is not None:
                self.walk(index, item.time)
            self.unit(index, self.clock, self.window.on_event(item.event, self.clock))
        elif isinstance(item, Advance):
            self.walk(index, item.time)
        elif isinstance(item, Jump):
            self.clock = item.time
            due = self.window.next_timer()
            if due is not None and due <= item.time:
                self.unit(index, item.time, self.window.on_timer(item.time))
        elif isinstance(item, SetVariables):
            on_set = getattr(self.window, "on_set", None)
            if on_set is not None:
                self.unit(index, self.clock, on_set(dict(item.values), self.clock))
        else:
            raise InvalidTrace(f"unknown trace item {item!r}", index)

    def walk(self, index: int, target: int) -> None:
        due = self.window.next_timer()
        while due is not None and due <= target:
            if due < self.clock:
                raise AssertionError(f"window timer due at {due} is before the clock at {self.clock}")
            self.clock = due
            self.unit(index, due, self.window.on_timer(due))
            fired, due = due, self.window.next_timer()
            if due == fired:
                raise AssertionError(f"window rescheduled a timer at the instant it fired ({fired})")
        self.clock = target

    def unit(self, index: int, time: int, posts: list[Post]) -> None:
        """One unit of work's posts, flattened into at most one update."""
        if not posts:
            return
        if len(posts) == 1:
            inserted, removed = posts[0].insert, posts[0].remove
        else:
            inserted = tuple(e for post in posts for e in post.insert)
            removed = tuple(e for post in posts for e in post.remove)
        self.updates.append(Update.posted(index, time, inserted, removed))
