"""Count-based windows: `#length(n)`, `#length_batch(n)`, `#firstlength(n)`.

None of them has a timer. Events arrive one at a time (the driver never hands a
window an upstream batch), so esper.md's multi-event rules reduce to one event.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

from oracle.model import Event, FirstLength, Length, LengthBatch
from oracle.windows.base import Post, WindowBase
from oracle.windows.reasons import Reasons


class LengthWindow(WindowBase):
    """`#length(n)`: a sliding window of the last n events (seed 14.3.1;
    esper.md §1 `#length(n)`).

    * Arrival: the event is appended; if the window now holds n + 1 events the
      oldest is pushed out. One post: new = [arrival], old = [pushed out] (or none).
    * No timers; nothing leaves except by being pushed out.
    """

    REASONS = Reasons(arrival="the event is appended", pushed="holds n + 1 events the oldest is pushed out")

    def __init__(self, spec: Length, now: int):
        self.size = spec.size
        self.events: deque[Event] = deque()

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.events.append(event)
        if len(self.events) > self.size:
            return [Post((event,), (self.events.popleft(),),
                         why={"insert": self.REASONS.arrival, "remove": self.REASONS.pushed})]
        return [Post((event,), why=self.REASONS.arrival)]

    def discard(self, gone: Collection[Event]) -> None:
        self.events = deque(e for e in self.events if e not in gone)

    def contents(self) -> list[Event]:
        return list(self.events)


class LengthBatchWindow(WindowBase):
    """`#length_batch(n)`: a tumbling window of n events (seed 14.3.2;
    esper.md §1 `#length_batch(n)`).

    * Arrival: the event joins the open batch. When the batch holds n events, one
      post: new = the batch, old = the previous batch (arrival order each); the
      batch becomes the previous batch and a new one opens.
    * An arrival that does not complete a batch posts nothing. No timers.
    * `contents()`: the last released batch, the events a subscriber holds as
      inserted and not yet removed. Decided: the open batch is buffered, not yet
      in the window, so replaying the updates reproduces `contents()`.
    """

    REASONS = Reasons(full="when the batch holds n events", previous="old = the previous batch")

    def __init__(self, spec: LengthBatch, now: int):
        self.size = spec.size
        self.batch: list[Event] = []
        self.previous: list[Event] = []

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.batch.append(event)
        if len(self.batch) < self.size:
            return []
        post = Post(self.batch, self.previous, why={"insert": self.REASONS.full, "remove": self.REASONS.previous})
        self.previous, self.batch = self.batch, []
        return [post]

    def discard(self, gone: Collection[Event]) -> None:
        self.batch = [e for e in self.batch if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.previous)


class FirstLengthWindow(WindowBase):
    """`#firstlength(n)`: the first n events, kept for ever (seed 14.3.10;
    esper.md §1 `#firstlength(n)`).

    * Arrival while fewer than n are held: kept and posted as new.
    * Arrival into a full window: dropped silently (no update at all).
    * Nothing ever leaves. No timers.
    """

    REASONS = Reasons(kept="arrival while fewer than n are held")

    def __init__(self, spec: FirstLength, now: int):
        self.size = spec.size
        self.events: list[Event] = []

    def on_event(self, event: Event, now: int) -> list[Post]:
        if len(self.events) >= self.size:
            return []
        self.events.append(event)
        return [Post((event,), why=self.REASONS.kept)]

    def discard(self, gone: Collection[Event]) -> None:
        self.events = [e for e in self.events if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.events)

