"""Windows that keep events by position alone: `#keepall`, `#firstevent`,
`#lastevent`. None has a timer."""

from __future__ import annotations

from collections.abc import Collection

from oracle.model import Event, FirstEvent, KeepAll, LastEvent
from oracle.windows.base import Post, WindowBase
from oracle.windows.reasons import Reasons


class KeepAllWindow(WindowBase):
    """`#keepall`: every event, kept for ever (seed 14.3.9; esper.md §1 `#keepall`).

    * Arrival: kept and posted as new, with no old data. Nothing ever leaves.
    """

    REASONS = Reasons(arrival="kept and posted as new")

    def __init__(self, spec: KeepAll, now: int):
        self.events: list[Event] = []

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.events.append(event)
        return [Post((event,), why=self.REASONS.arrival)]

    def discard(self, gone: Collection[Event]) -> None:
        self.events = [e for e in self.events if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.events)


class FirstEventWindow(WindowBase):
    """`#firstevent`: the very first event, kept for ever (seed 14.3.17;
    esper.md §1 `#firstevent`).

    * The first arrival is kept and posted as new; every later arrival is
      dropped silently (no update).
    """

    REASONS = Reasons(first="the first arrival is kept and posted as new")

    def __init__(self, spec: FirstEvent, now: int):
        self.first: Event | None = None

    def on_event(self, event: Event, now: int) -> list[Post]:
        if self.first is not None:
            return []
        self.first = event
        return [Post((event,), why=self.REASONS.first)]

    def discard(self, gone: Collection[Event]) -> None:
        if self.first in gone:
            self.first = None

    def contents(self) -> list[Event]:
        return [self.first] if self.first is not None else []


class LastEventWindow(WindowBase):
    """`#lastevent`: the last event, a length window of size 1 (seed 14.3.16;
    esper.md §1 `#lastevent`).

    * Arrival: one post, new = [arrival], old = [the previous last event] (none
      the first time).
    """

    REASONS = Reasons(arrival="new = [arrival]", replaced="old = [the previous last event]")

    def __init__(self, spec: LastEvent, now: int):
        self.last: Event | None = None

    def on_event(self, event: Event, now: int) -> list[Post]:
        replaced = (self.last,) if self.last is not None else ()
        self.last = event
        return [Post((event,), replaced, why={"insert": self.REASONS.arrival, "remove": self.REASONS.replaced})]

    def discard(self, gone: Collection[Event]) -> None:
        if self.last in gone:
            self.last = None

    def contents(self) -> list[Event]:
        return [self.last] if self.last is not None else []

