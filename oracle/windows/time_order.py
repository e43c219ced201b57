"""Windows that hold events by a timestamp property against the clock:
`#time_order(ts, t)` and `#timetolive(ts)` (its span-0 form)."""

from __future__ import annotations

import bisect
from collections.abc import Collection

from oracle.model import Event, TimeOrder
from oracle.windows.base import Post, WindowBase
from oracle.windows.keys import timestamp_of
from oracle.windows.reasons import Reasons


class TimeOrderWindow(WindowBase):
    """`#time_order(ts, t)`: events held until the clock passes `ts + t`,
    released in timestamp order (seed 14.3.21, 14.3.22; esper.md §2
    `#time_order`). `#timetolive(ts)` is the same with t = 0.

    * Arrival at `now`: every event is posted as new. One whose `ts + t <= now`
      (older than the window's tail, `now - t + 1`) is posted as old in the
      same post and never held (seed: "released immediately in the remove
      stream"); any other is held, ordered by `ts`, equal timestamps in
      arrival order.
    * The one timer is due at the oldest held `ts + t` (an older arrival pulls
      it earlier). Timer at `T`: every held event with `ts + t <= T` is posted
      as old in one post, ascending `ts`, arrival order within a timestamp; the
      timer is re-armed for the new oldest. On a walk that is a stop at each
      distinct `ts + t`; a jump releases everything due by its target once.
    * An event whose `ts` is null (missing) posts nothing and is not held:
      Esper's view throws on it before it changes anything, and the runtime
      goes on (observed; `oracle.windows.keys.timestamp_of`). Decided: a `ts`
      that is not an integer makes the trace invalid, naming the item.
    """

    REASONS = Reasons(arrival="every event is posted as new",
                      too_old="is posted as old in the same post and never held",
                      released="every held event with ts + t <= T is posted as old")

    def __init__(self, spec: TimeOrder, now: int):
        self.timestamp, self.span = spec.timestamp, spec.span
        self.held: list[tuple[int, int, Event]] = []  # (ts, arrival number, event), sorted
        self.arrivals = 0

    def on_event(self, event: Event, now: int) -> list[Post]:
        ts = timestamp_of(event, self.timestamp)
        if ts + self.span <= now:
            return [Post((event,), (event,), why={"insert": self.REASONS.arrival, "remove": self.REASONS.too_old})]
        bisect.insort(self.held, (ts, self.arrivals, event), key=lambda held: held[:2])
        self.arrivals += 1
        return [Post((event,), why=self.REASONS.arrival)]

    def next_timer(self) -> int | None:
        return self.held[0][0] + self.span if self.held else None

    def on_timer(self, now: int) -> list[Post]:
        gone = []
        while self.held and self.held[0][0] + self.span <= now:
            gone.append(self.held.pop(0)[2])
        return [Post((), tuple(gone), why=self.REASONS.released)] if gone else []

    def discard(self, gone: Collection[Event]) -> None:
        self.held = [h for h in self.held if h[2] not in gone]

    def contents(self) -> list[Event]:
        return [event for _, _, event in self.held]
