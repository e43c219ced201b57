"""Windows that keep the best events by sort criteria: `#sort(n, criteria)` and
`#rank(keys, n, criteria)`."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from oracle.model import Event, Rank, Sort, SortKey
from oracle.windows.base import EventError, Post, WindowBase
from oracle.windows.keys import key_of
from oracle.windows.reasons import Reasons


def compare_values(a: Any, b: Any) -> int:
    """-1, 0 or 1: null before every value; numbers (int or float) by value;
    strings by code point; booleans false before true. Values of two other
    kinds, a list or an object cannot be compared (`EventError`)."""
    if a is None or b is None:
        return (a is not None) - (b is not None)
    if isinstance(a, (Mapping, list)) or isinstance(b, (Mapping, list)):
        raise EventError("a list or object cannot be a sort value")
    numeric_a = isinstance(a, (int, float)) and not isinstance(a, bool)
    numeric_b = isinstance(b, (int, float)) and not isinstance(b, bool)
    if numeric_a != numeric_b or (not numeric_a and type(a) is not type(b)):
        raise EventError(f"sort values {a!r} and {b!r} cannot be compared")
    return (a > b) - (a < b)


def check_sortable(criteria: tuple[SortKey, ...], event: Event) -> None:
    """Raise `EventError` if a sort property of `event` holds a list or object."""
    for criterion in criteria:
        if isinstance(event.get(criterion.property), (Mapping, list)):
            raise EventError(f"event {event.id!r}: sort property {criterion.property!r} holds a list or object, "
                             "which cannot be compared")


def compare_events(criteria: tuple[SortKey, ...], a: Event, b: Event) -> int:
    """-1 if `a` sorts before `b` by `criteria` (each ascending unless
    descending, in order), 1 if after, 0 if they tie."""
    for criterion in criteria:
        order = compare_values(a.get(criterion.property), b.get(criterion.property))
        if order:
            return -order if criterion.descending else order
    return 0


class SortWindow(WindowBase):
    """`#sort(n, criteria)`: the `n` events that sort first (seed 14.3.19;
    esper.md §3 `#sort`).

    * Criteria compare in order, each ascending unless `desc`. Decided (Esper
      compares with `CollectionUtil.compareValues`): a null sorts before every
      value ascending, after every value descending; ints and floats compare by
      value, strings by code point; a list, an object, or a string against a
      number makes the trace invalid, naming the item.
    * Among events that tie on every criterion the newest comes first (Esper
      adds to the front of the tie list).
    * Arrival: posted as new; then, while more than `n` are held, the last one
      (the oldest among those tied at the worst criteria) is removed and posted
      as old in the same post, which may be the arrival itself.
    * No timer; nothing else leaves.
    """

    REASONS = Reasons(arrival="arrival: posted as new",
                      worst="while more than n are held, the last one (the oldest among those tied at the worst "
                            "criteria) is removed")

    def __init__(self, spec: Sort, now: int):
        self.size, self.criteria = spec.size, spec.criteria
        self.held: list[Event] = []  # best first

    def on_event(self, event: Event, now: int) -> list[Post]:
        check_sortable(self.criteria, event)
        at = 0  # before the first held event that sorts strictly after it, or ties (newest first)
        while at < len(self.held) and compare_events(self.criteria, self.held[at], event) < 0:
            at += 1
        self.held.insert(at, event)
        removed = []
        while len(self.held) > self.size:
            removed.append(self.held.pop())
        return [Post((event,), tuple(removed), why={"insert": self.REASONS.arrival, "remove": self.REASONS.worst})]

    def discard(self, gone: Collection[Event]) -> None:
        self.held = [e for e in self.held if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.held)


class RankWindow(WindowBase):
    """`#rank(keys..., n, criteria)`: the latest event per unique key, and of
    those the `n` that sort first (seed 14.3.20; esper.md §3 `#rank`).

    * Criteria compare as `#sort`'s (nulls first ascending; the same decisions).
      Unique keys as `#unique`'s (a missing property is the null key).
    * Arrival whose key is held: the held event is replaced, posted as old; the
      arrival is held (behind every event it ties with). Nothing else leaves:
      the count does not change.
    * Arrival whose key is not held: if `n` are held and the arrival sorts
      strictly after the worst of them, it is posted as new and old at once and
      not held. Otherwise it is held behind every event it ties with, and if
      more than `n` are held, the oldest of those tied at the worst criteria is
      removed (Esper removes index 0 of the worst key's list).
    * One post per arrival: new = [arrival], old = what left. No timer.
    """

    REASONS = Reasons(arrival="new = [arrival]",
                      replaced="arrival whose key is held: the held event is replaced",
                      worse="sorts strictly after the worst of them, it is posted as new and old at once",
                      worst="the oldest of those tied at the worst criteria is removed")

    def __init__(self, spec: Rank, now: int):
        self.keys, self.size, self.criteria = spec.keys, spec.size, spec.criteria
        self.held: list[Event] = []  # by criteria, ties in arrival order (oldest first)

    def _compare(self, a: Event, b: Event) -> int:
        return compare_events(self.criteria, a, b)

    def on_event(self, event: Event, now: int) -> list[Post]:
        check_sortable(self.criteria, event)
        key = key_of(event, self.keys)
        same_key = [held for held in self.held if key_of(held, self.keys) == key]
        if same_key:
            self.held.remove(same_key[0])
            self._hold(event)
            return [Post((event,), (same_key[0],), why={"insert": self.REASONS.arrival, "remove": self.REASONS.replaced})]
        if len(self.held) >= self.size and self._compare(event, self.held[-1]) > 0:
            return [Post((event,), (event,), why={"insert": self.REASONS.arrival, "remove": self.REASONS.worse})]
        self._hold(event)
        removed = []
        while len(self.held) > self.size:
            worst = self.held[-1]
            oldest_tied = next(held for held in self.held if self._compare(held, worst) == 0)
            self.held.remove(oldest_tied)
            removed.append(oldest_tied)
        return [Post((event,), tuple(removed), why={"insert": self.REASONS.arrival, "remove": self.REASONS.worst})]

    def _hold(self, event: Event) -> None:
        at = len(self.held)  # behind every event that does not sort strictly after it
        while at > 0 and self._compare(self.held[at - 1], event) > 0:
            at -= 1
        self.held.insert(at, event)

    def discard(self, gone: Collection[Event]) -> None:
        self.held = [e for e in self.held if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.held)
