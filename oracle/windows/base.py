"""The contract every oracle window keeps. The driver (`oracle.run`) owns the clock.

* `on_event(event, now)`: called once per arriving event, `now` the clock at arrival.
* `on_operation(op, event, now)`: instead of `on_event`, for an event that
  carries an operation code (`oracle.model.OPCODES`), one the spec accepts
  (`accepted_opcodes`; the driver rejects the others first). By default an
  `insert` is `on_event`; a window that applies the codes (a keyed window)
  overrides it.
* `on_timer(now)`: called when `next_timer()` is due: on a walk at each due time
  (`now` is that due time), on a jump once with `now` the jump target. Fires every
  timer of the window due at or before `now`, once each, in (due time, slot) order.
* `next_timer()`: the earliest due time, or None; always later than the clock at
  which the timer was scheduled.
* `timer_handles()` and `fire(handle, now)`: a window with several timers
  (the members of an intersection) names each, as (due time, handle) with
  handles in slot order, and fires one; a grouping fires its groups' timers
  one by one in (due time, group, handle) order, Esper's (due, slot) order.
  By default a window has one handle, its `next_timer()`.
* `variables`: the trace's variables, name to current value, a mapping the
  driver shares with every window (`make_window` sets it) and changes on a
  `set` item before calling `on_set`.
* `on_set(values, now)`: a `set` item changed `values` (name to new value); a
  window whose expressions read none of them ignores it.
* `discard(gone)`: the events `gone` left the stream elsewhere (another member
  of an intersection): the window drops those it holds, posting nothing
  (Esper's `update(null, oldData)`); a data window's only.
* `contents()`: the events held now, in the window's own order.
* `delivery`: how the driver turns one unit of work's posts into updates.

A window whose Esper view throws on an event raises `ViewFailure` from
`on_event`: the unit of work posts nothing, the trace goes on.

Each call returns the posts made, in posting order: a `Post` is one
`View.update(newData, oldData)` call. `[]` means nothing was posted; `[Post()]`
is an empty post (Esper FORCE_UPDATE).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from oracle.errors import WindowOracleError
from oracle.model import DerivedValues, Event, Pane


class Post:
    """One view post: events as inserted (new data) and as removed (old data);
    `update`, rows posted with CCL's update code; `values`, the rows a
    derived-value window posts instead of events (or a query's output rows
    over a pane); `error`, the message of an item the window rejected (then
    nothing else); `window`, the bounds of the pane a pane window emits (its
    rows are `insert`); `why`, the rule that posted the rows
    (`oracle.windows.reasons`: the oracle's explanation, not part of the
    post's value, so equality ignores it).

    A plain slotted value class rather than an attrs one: windows make one per
    event, and this is the oracle's hottest allocation."""

    __slots__ = ("insert", "remove", "update", "values", "error", "window", "why")

    def __init__(self, insert: Sequence[Event] = (), remove: Sequence[Event] = (), update: Sequence[Event] = (),
                 values: DerivedValues | None = None, error: str | None = None, window: Pane | None = None,
                 why: Any = None):
        self.insert: tuple[Event, ...] = insert if type(insert) is tuple else tuple(insert)
        self.remove: tuple[Event, ...] = remove if type(remove) is tuple else tuple(remove)
        self.update: tuple[Event, ...] = update if type(update) is tuple else tuple(update)
        self.values = values
        self.error = error
        self.window = window
        self.why = why

    def _fields(self) -> tuple:
        return self.insert, self.remove, self.update, self.values, self.error, self.window

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Post) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((self.insert, self.remove, self.update, self.error))

    def __repr__(self) -> str:
        extra = "".join(f", {name}={value!r}" for name, value in
                        (("update", self.update), ("values", self.values), ("error", self.error),
                         ("window", self.window)) if value)
        return f"Post(insert={self.insert!r}, remove={self.remove!r}{extra})"


class Delivery(enum.Enum):
    """How one unit of work's posts reach a subscriber."""

    #: one update: the inserted rows of every post in posting order, then the
    #: removed rows (Esper's listener dispatch, esper.md §0.1); nothing posted,
    #: no update
    ONE_UPDATE_PER_UNIT = "one update per unit of work"
    #: each post its own update, in posting order (an eKuiper pane)
    UPDATE_PER_POST = "one update per post"


class EventError(WindowOracleError):
    """An event the window cannot take (a missing timestamp property, say);
    the driver adds the trace item's index."""


class ViewFailure(Exception):
    """Esper's view throws on the event (a NullPointerException on a null it
    reads: `Spec.unsafe_nulls`). Esper's runtime logs it and goes on: the
    statement posts nothing for the event and keeps whatever the view changed
    before the throw (nothing, for every view that raises this: each raises
    before it changes its state; a `#groupwin` has made the event's group by
    then, as Esper's does). The driver ends the unit of work with no
    update; the clock still walked to the event's arrival. Not a user error:
    the trace goes on."""


class Window(Protocol):
    delivery: Delivery
    variables: Mapping[str, Any]

    def on_event(self, event: Event, now: int) -> list[Post]: ...

    def on_operation(self, op: str, event: Event, now: int) -> list[Post]: ...

    def on_timer(self, now: int) -> list[Post]: ...

    def next_timer(self) -> int | None: ...

    def on_set(self, values: Mapping[str, Any], now: int) -> list[Post]: ...

    def timer_handles(self) -> list[tuple[int, int]]: ...

    def fire(self, handle: int, now: int) -> list[Post]: ...

    def discard(self, gone: Collection[Event]) -> None: ...

    def contents(self) -> list[Event]: ...


class _NoVariables(Mapping):
    """The variables of a window no driver gave any: empty and read-only, like
    a `MappingProxyType({})`, but a window holding it pickles (a stream
    processor keeps windows in a state store, `oracle.driver`)."""

    def __getitem__(self, name: str) -> Any:
        raise KeyError(name)

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def __reduce__(self) -> str:
        return "NO_VARIABLES"  # the module's one instance


NO_VARIABLES = _NoVariables()


class WindowBase:
    """The contract's defaults: one update per unit of work, no timer, no
    variables read, one timer handle."""

    delivery = Delivery.ONE_UPDATE_PER_UNIT
    variables: Mapping[str, Any] = NO_VARIABLES

    def next_timer(self) -> int | None:
        return None

    def on_operation(self, op: str, event: Event, now: int) -> list[Post]:
        """An event with an operation code: a window that takes inserts only
        is handed `insert` alone (the driver rejects the other codes)."""
        if op != "insert":
            raise AssertionError(f"a window that takes inserts only was handed operation code {op!r}")
        return self.on_event(event, now)

    def on_timer(self, now: int) -> list[Post]:
        return []

    def timer_handles(self) -> list[tuple[int, int]]:
        due = self.next_timer()
        return [] if due is None else [(due, 0)]

    def fire(self, handle: int, now: int) -> list[Post]:
        """Timer `handle`, if it is still due by `now` (another firing may have
        moved it)."""
        due = self.next_timer()
        return self.on_timer(now) if due is not None and due <= now else []

    def on_set(self, values: Mapping[str, Any], now: int) -> list[Post]:
        return []
