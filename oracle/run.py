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
    """Feeds trace items to one window, one unit of work at a time."""

    def __init__(self, window: Window, start_time: int):
        self.window = window
        self.clock = start_time

    def feed(self, trace: Trace):
        for index, item in enumerate(trace.items):
            try:
                yield from self.step(index, item)
            except EventError as exc:
                raise InvalidTrace(str(exc), index) from None

    def step(self, index: int, item) -> list[Update]:
        updates: list[Update] = []
        if isinstance(item, Advance):
            updates += self.walk(index, item.time)
        elif isinstance(item, Jump):
            self.clock = item.time
            due = self.window.next_timer()
            if due is not None and due <= item.time:
                updates += unit(index, item.time, self.window.on_timer(item.time))
        elif isinstance(item, Arrive):
            if item.op not in (None, "insert") and not getattr(self.window, "accepts_opcodes", False):
                raise InvalidTrace(f"operation code {item.op!r} is not supported by this window", index)
            if item.time is not None:
                updates += self.walk(index, item.time)
            updates += unit(index, self.clock, self.window.on_event(item.event, self.clock))
        elif isinstance(item, SetVariables):
            on_set = getattr(self.window, "on_set", None)
            if on_set is not None:
                updates += unit(index, self.clock, on_set(dict(item.values), self.clock))
        else:
            raise InvalidTrace(f"unknown trace item {item!r}", index)
        return updates

    def walk(self, index: int, target: int) -> list[Update]:
        updates = []
        while (due := self.window.next_timer()) is not None and due <= target:
            if due < self.clock:
                raise AssertionError(f"window timer due at {due} is before the clock at {self.clock}")
            self.clock = due
            updates += unit(index, due, self.window.on_timer(due))
            if self.window.next_timer() == due:
                raise AssertionError(f"window rescheduled a timer at the instant it fired ({due})")
        self.clock = target
        return updates


def unit(index: int, time: int, posts: list[Post]) -> list[Update]:
    """One unit of work's posts, flattened into at most one update."""
    if not posts:
        return []
    inserted = tuple(e for post in posts for e in post.insert)
    removed = tuple(e for post in posts for e in post.remove)
    return [Update(after=index, time=time, insert=inserted, remove=removed)]
