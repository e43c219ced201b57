"""`#groupwin(keys)<window>`: a copy of a window per group (seed 14.3.15;
esper.md §5)."""

from __future__ import annotations

import heapq
from typing import Any

from oracle.model import DERIVED_WINDOWS, DerivedValues, Event, GroupWin
from oracle.windows.base import Post, Window, WindowBase
from oracle.windows.keys import key_of


class GroupWinWindow(WindowBase):
    """`#groupwin(keys)` around any window: one complete copy of the grouped
    window per distinct key, each with its own state, timers and reference points.

    * A group's window is created on the key's first event, with creation time =
      `now` (so a `#firsttime` or START_EAGER `#time_batch` copy counts from then).
      A missing property is the null key, a group like any other (seed 14.3.15:
      "The runtime treats a null value as any other value"; observed:
      corpus/esper/observed/nulls_groupwin_*). Decided: a group is created by
      its key's first event even when its window then throws on that event
      (`ViewFailure`: a null timestamp), so its slot is that event's place
      (corpus/esper/groupwin-time-order-a-null-timestamp-makes-the-group).
    * Arrival: routed to its group's window; that window's posts pass through
      unchanged (the implicit merge, esper.md §5).
    * Timers: Esper orders timers by (due time, slot), slots handed out in view
      creation order, i.e. group first-seen order (esper.md §0.1). `on_timer(now)`
      fires every timer due by `now` once, in (due time, first-seen, the
      group's own handle order) order; the driver flattens their posts into one
      update. Decided (esper.md leaves it open): a group with several timers (an
      intersection's members) has one slot per timer, so a jump interleaves
      the groups' timers by due time rather than firing each group whole.
      `next_timer()` is the earliest due time over the groups.
    * `contents()`: the groups' contents, group by group in first-seen order.
      Decided: that order (Esper iterates groups in hash order).
    * A `set` item reaches every group, in first-seen order; their posts make
      one update (a group created later reads the variables' values then).
    * Groups are never reclaimed (no `reclaim_group_aged` hint).
    * Bookkeeping, not a rule: each group's next due time is kept in a heap
      (`due`, entries `(time, first-seen, key)`, pushed whenever a group may
      have changed its timers, a stale entry dropped when met), so an item
      costs the groups it touches, not every group.
    * Grouped statistics (a derived-value window per group): each group's
      window posts its own new and old rows, the first old row its
      statistics over nothing; the keys' values are added to every row
      (`AddPropertyValueOptionalView` before Esper's merge view), unless every
      key is already a field of the rows (then the rows pass unchanged; a key
      among the fields beside one that is not is refused by the model).

    Decided: a grouped window the oracle does not implement raises
    `UnsupportedWindow` when the groupwin is created, not at the first event.
    """

    def __init__(self, spec: GroupWin, now: int):
        self.spec = spec
        # an unsupported grouped window fails now, not at its first event
        self.delivery = _make(spec.window, now).delivery
        self.groups: dict[tuple[Any, ...], Window] = {}
        window = spec.window
        self.adds_keys = isinstance(window, DERIVED_WINDOWS) and not all(window.has_field(k) for k in spec.keys)
        self.added: dict[tuple[Any, ...], dict[str, Any]] = {}  # group key -> the keys' values its rows carry
        self.seen: dict[tuple[Any, ...], int] = {}  # group key -> its first-seen place
        self.due: list[tuple[int, int, tuple[Any, ...]]] = []  # (a group's next due time, first-seen, key)

    def on_event(self, event: Event, now: int) -> list[Post]:
        key = key_of(event, self.spec.keys)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _make(self.spec.window, now, self.variables)
            self.added[key] = {name: event.get(name) for name in self.spec.keys}
            self.seen[key] = len(self.seen)
        posts = self._keyed(key, group.on_event(event, now))
        self._track(key)
        return posts

    def on_timer(self, now: int) -> list[Post]:
        keys = self._due_by(now)
        due = [(at, self.seen[key], handle, key) for key in keys
               for at, handle in self.groups[key].timer_handles() if at <= now]
        due.sort(key=lambda entry: entry[:3])
        posts: list[Post] = []
        for _, _, handle, key in due:
            posts += self._keyed(key, self.groups[key].fire(handle, now))
        for key in keys:
            self._track(key)
        return posts

    def _track(self, key: tuple[Any, ...]) -> None:
        """The group's next due time into the heap (after anything that may move it)."""
        at = self.groups[key].next_timer()
        if at is not None:
            heapq.heappush(self.due, (at, self.seen[key], key))

    def _current(self, entry: tuple[int, int, tuple[Any, ...]]) -> bool:
        return self.groups[entry[2]].next_timer() == entry[0]

    def _due_by(self, now: int) -> list[tuple[Any, ...]]:
        """The groups with a timer due by `now`, in first-seen order, taken off the heap."""
        keys: set[tuple[Any, ...]] = set()
        while self.due and self.due[0][0] <= now:
            entry = heapq.heappop(self.due)
            if self._current(entry):
                keys.add(entry[2])
        return sorted(keys, key=self.seen.__getitem__)

    def _keyed(self, key: tuple[Any, ...], posts: list[Post]) -> list[Post]:
        """A statistics group's rows with its keys added (class docstring)."""
        if not self.adds_keys:
            return posts
        added = self.added[key]
        for post in posts:
            if post.values is not None:
                values = post.values
                post.values = DerivedValues([{**row, **added} for row in values.insert],
                                            [{**row, **added} for row in values.remove])
        return posts

    def on_set(self, values, now: int) -> list[Post]:
        posts = [post for key, group in self.groups.items() for post in self._keyed(key, group.on_set(values, now))]
        for key in self.groups:
            self._track(key)
        return posts

    def discard(self, gone) -> None:
        """`gone` left elsewhere (a keyed window's delete): each group drops those it holds."""
        for key, group in self.groups.items():
            group.discard(gone)
            self._track(key)

    def next_timer(self) -> int | None:
        """The earliest due time over the groups."""
        while self.due and not self._current(self.due[0]):
            heapq.heappop(self.due)
        return self.due[0][0] if self.due else None

    def contents(self) -> list[Event]:
        return [event for group in self.groups.values() for event in group.contents()]


def _make(spec, now: int, variables=None) -> Window:
    from oracle.windows import make_window  # the table of window classes holds this module's class

    return make_window(spec, now, variables)
