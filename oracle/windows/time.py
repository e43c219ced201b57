"""Time-based sliding windows: `#time(t)`, `#ext_timed(ts, t)`, `#firsttime(t)`, `#time_accum(t)`."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

from oracle.model import Event, ExtTimed, FirstTime, Time, TimeAccum
from oracle.windows.base import Post, WindowBase
from oracle.windows.keys import timestamp_of
from oracle.windows.reasons import Reasons


class TimeWindow(WindowBase):
    """`#time(t)`: the events of the last t ms of runtime time (seed 14.3.3;
    esper.md §2 `#time(t)`).

    * Arrival at `now`: the event is stamped `now` and appended, and posted as new.
      If the window was empty, a timer is armed at `now + t`.
    * Timer at `now`: every event stamped `<= now - t` leaves, oldest first
      (arrival order among equal stamps), in one post of old data; an event that
      arrived at `a` leaves at exactly `a + t`, and ties leave together. Then, if
      events remain, the timer is re-armed at `oldest stamp + t` (always after `now`).
    * A jump fires the timer once, at the jump target: one post covers every
      event stamped `<= target - t` (esper.md §0.1).
    * A quiet removal (`discard`: another member of an intersection removed
      the events): with `keeps_stale_timer` (an intersection's
      `stale_time_timers`, Esper's rule) the timer stays where it was, as
      Esper's `TimeWindowView.update(null, oldData)` removes the events and
      schedules nothing; the stale timer fires at its old due time, removes
      what is due by then (often nothing: no post) and re-arms at the oldest
      stamp + t. An arrival into a window emptied that way arms it anew at
      `now + t` (Esper schedules when an empty window takes an arrival,
      replacing the stale callback). Without it (Apama's lots) the timer moves
      to the new oldest stamp + t. The two differ only in the order of the
      timers one jump fires, which is (due, slot): a sub-window whose stale
      timer is due first posts first, though its own events fall due later
      (`groupwin-unique-time-stale-timer-orders-a-jump`).
    """

    REASONS = Reasons(arrival="the event is stamped now and appended, and posted as new",
                      expired="an event that arrived at a leaves at exactly a + t",
                      jump="a jump fires the timer once, at the jump target")

    def __init__(self, spec: Time, now: int):
        self.span = spec.span
        self.stamped: deque[tuple[int, Event]] = deque()
        self.armed: int | None = None  # the timer's due time
        self.keeps_stale_timer = False

    def on_event(self, event: Event, now: int) -> list[Post]:
        if not self.stamped:
            self.armed = now + self.span
        self.stamped.append((now, event))
        return [Post((event,), why=self.REASONS.arrival)]

    def on_timer(self, now: int) -> list[Post]:
        expired, late = [], False
        while self.stamped and self.stamped[0][0] <= now - self.span:
            late = late or self.stamped[0][0] < now - self.span
            expired.append(self.stamped.popleft()[1])
        self._rearm()
        return [Post((), expired, why=self.REASONS.jump if late else self.REASONS.expired)] if expired else []

    def _rearm(self) -> None:
        self.armed = self.stamped[0][0] + self.span if self.stamped else None

    def next_timer(self) -> int | None:
        return self.armed

    def discard(self, gone: Collection[Event]) -> None:
        self.stamped = deque(s for s in self.stamped if s[1] not in gone)
        if not self.keeps_stale_timer:
            self._rearm()

    def contents(self) -> list[Event]:
        return [event for _, event in self.stamped]


class ExtTimedWindow(WindowBase):
    """`#ext_timed(ts, t)`: a sliding window over the events' own timestamps
    (seed 14.3.4; esper.md §2 `#ext_timed(tsExpr, t)`).

    * No runtime timers: nothing leaves unless an event arrives.
    * Arrival: the event is appended **in arrival order** (not sorted) with its
      timestamp `ts`. Then every event at the front whose timestamp is
      `<= ts - t` leaves, front first, stopping at the first younger one. One
      post: new = [arrival], old = the expired events.
    * Out-of-order timestamps: an old event behind a younger one stays until
      everything in front of it has left, and a late arrival expires nothing
      newer than `its ts - t`. (An arrival never expires itself: events come one
      at a time, and its own timestamp is after `ts - t`.)

    * An event whose timestamp is null (missing) posts nothing and changes
      nothing: Esper's view throws on it and the runtime goes on (observed;
      `oracle.windows.keys.timestamp_of`). Decided: a timestamp that is not
      an integer makes the trace invalid, naming the item.
    """

    REASONS = Reasons(arrival="new = [arrival]",
                      expired="every event at the front whose timestamp is <= ts - t leaves")

    def __init__(self, spec: ExtTimed, now: int):
        self.timestamp = spec.timestamp
        self.span = spec.span
        self.stamped: deque[tuple[int, Event]] = deque()

    def on_event(self, event: Event, now: int) -> list[Post]:
        ts = timestamp_of(event, self.timestamp)
        self.stamped.append((ts, event))
        expired = []
        while self.stamped and self.stamped[0][0] <= ts - self.span:
            expired.append(self.stamped.popleft()[1])
        return [Post((event,), expired, why={"insert": self.REASONS.arrival, "remove": self.REASONS.expired})]

    def discard(self, gone: Collection[Event]) -> None:
        self.stamped = deque(s for s in self.stamped if s[1] not in gone)

    def contents(self) -> list[Event]:
        return [event for _, event in self.stamped]


class FirstTimeWindow(WindowBase):
    """`#firsttime(t)`: the events that arrive within t ms of the window's
    creation, kept for ever (seed 14.3.11; esper.md §2 `#firsttime(t)`).

    * The timer is armed at creation, for `creation + t` (not at the first event).
    * Until it fires, every arrival is kept and posted as new. When it fires it
      posts nothing; afterwards arrivals are dropped silently. An event arriving
      at exactly `creation + t` is dropped: the trace's advance fired the timer first.
    * Nothing ever leaves.
    """

    REASONS = Reasons(kept="until it fires, every arrival is kept and posted as new")

    def __init__(self, spec: FirstTime, now: int):
        self.due: int | None = now + spec.span
        self.events: list[Event] = []

    def on_event(self, event: Event, now: int) -> list[Post]:
        if self.due is None:
            return []
        self.events.append(event)
        return [Post((event,), why=self.REASONS.kept)]

    def on_timer(self, now: int) -> list[Post]:
        self.due = None
        return []

    def next_timer(self) -> int | None:
        return self.due

    def discard(self, gone: Collection[Event]) -> None:
        self.events = [e for e in self.events if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.events)


class TimeAccumWindow(WindowBase):
    """`#time_accum(t)`: events accumulate until none has arrived for `t`
    (seed 14.3 table: "accumulates events until no more events arrive within a
    given time interval"; esper.md §2 `#time_accum`).

    * Arrival: kept and posted as new at once; the window's one timer is
      (re)armed at `now + t`.
    * Timer: every kept event is posted as old, in arrival order, in one post;
      the window is empty and no timer is armed. A jump past the due time posts
      them once, at the jump's target.
    * A timer due at an arrival's instant fires before the event arrives (the
      clock rule), so an event arriving exactly `t` after the last one starts a
      new accumulation.
    """

    REASONS = Reasons(arrival="kept and posted as new at once",
                      quiet="every kept event is posted as old")

    def __init__(self, spec: TimeAccum, now: int):
        self.span = spec.span
        self.events: list[Event] = []
        self.due: int | None = None

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.events.append(event)
        self.due = now + self.span
        return [Post((event,), why=self.REASONS.arrival)]

    def next_timer(self) -> int | None:
        return self.due if self.events else None

    def on_timer(self, now: int) -> list[Post]:
        gone, self.events, self.due = tuple(self.events), [], None
        return [Post((), gone, why=self.REASONS.quiet)] if gone else []

    def discard(self, gone: Collection[Event]) -> None:
        self.events = [e for e in self.events if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.events)

