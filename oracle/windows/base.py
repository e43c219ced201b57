"""The contract every oracle window keeps. The driver (`oracle.run`) owns the clock.

* `on_event(event, now)`: called once per arriving event, `now` the clock at arrival.
* `on_timer(now)`: called when `next_timer()` is due: on a walk at each due time
  (`now` is that due time), on a jump once with `now` the jump target. Fires every
  timer of the window due at or before `now`, once each, in (due time, slot) order.
* `next_timer()`: the earliest due time, or None; always later than the clock at
  which the timer was scheduled.
* `contents()`: the events held now, in the window's own order.

Each call returns the posts made, in posting order: a `Post` is one
`View.update(newData, oldData)` call. `[]` means nothing was posted; `[Post((), ())]`
is an empty post (Esper FORCE_UPDATE).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


from oracle.errors import WindowOracleError
from oracle.model import Event


class Post:
    """One view post: events as inserted (new data) and as removed (old data).

    A plain slotted value class rather than an attrs one: windows make one per
    event, and this is the oracle's hottest allocation."""

    __slots__ = ("insert", "remove")

    def __init__(self, insert: Sequence[Event] = (), remove: Sequence[Event] = ()):
        self.insert: tuple[Event, ...] = insert if type(insert) is tuple else tuple(insert)
        self.remove: tuple[Event, ...] = remove if type(remove) is tuple else tuple(remove)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Post) and (self.insert, self.remove) == (other.insert, other.remove)

    def __hash__(self) -> int:
        return hash((self.insert, self.remove))

    def __repr__(self) -> str:
        return f"Post(insert={self.insert!r}, remove={self.remove!r})"


class EventError(WindowOracleError):
    """An event the window cannot take (a missing timestamp property, say);
    the driver adds the trace item's index."""


class Window(Protocol):
    def on_event(self, event: Event, now: int) -> list[Post]: ...

    def on_timer(self, now: int) -> list[Post]: ...

    def next_timer(self) -> int | None: ...

    def contents(self) -> list[Event]: ...


class UntimedWindow:
    """Base of windows with no timers: `on_timer` is never due."""

    def next_timer(self) -> int | None:
        return None

    def on_timer(self, now: int) -> list[Post]:
        return []
