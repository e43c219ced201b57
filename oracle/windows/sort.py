"""Windows that keep the best events by sort criteria: `#sort(n, criteria)` and
`#rank(keys, n, criteria)`."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from oracle.model import Event, Rank, Sort, SortKey
from oracle.windows.base import EventError, Post, ViewFailure, WindowBase
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

    * Criteria compare in order, each ascending unless `desc`. Esper compares
      with `CollectionUtil.compareValues`: a null sorts before every value
      ascending, after every value descending, and ties with a null (observed:
      corpus/esper/observed/nulls_sort*). Decided: ints and floats compare by
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


class _Bucket:
    """The events filed under one sort key, oldest first. `listed`: Esper holds
    a bucket's first event alone and makes a list of it at the second, a list
    that stays one until the bucket goes; a list is searched by unique key."""

    __slots__ = ("sort", "events", "listed")

    def __init__(self, sort: tuple, event: Event):
        self.sort, self.events, self.listed = sort, [event], False

    def add(self, event: Event) -> None:
        self.events.append(event)
        self.listed = True


class RankWindow(WindowBase):
    """`#rank(keys..., n, criteria)`: the latest event per unique key, and of
    those the `n` that sort first (seed 14.3.20; esper.md §3 `#rank`).

    Kept as Esper keeps it (`RankWindowView`), since with nulls its books
    disagree with "the latest event per key" and what it posts follows the
    books: `buckets`, the held events by sort key (the criteria's values; keys
    that tie share a bucket, its events in arrival order), best key first,
    each a lone event or, once it held two, a list (`_Bucket`); `sort_of`,
    each unique key's sort key (the one its event was filed under); `count`,
    the number of events it believes it holds.

    * Criteria compare as `#sort`'s (nulls first ascending, last descending).
      Unique keys as `#unique`'s (a missing property is the null key).
    * Arrival whose unique key reads as absent from `sort_of` ("add"): if
      `count >= n` and the arrival's sort key sorts strictly after the last
      bucket's, it is posted as new and old at once and nothing changes;
      otherwise it goes to the back of its bucket, `sort_of` files it, `count`
      grows.
    * Arrival whose unique key maps to sort key S, and whose own sort key
      equals S: it takes the place of the event of that key in bucket S, posted
      as old: a lone event is replaced whatever its key; in a list the first
      event of the key leaves and the arrival goes to the back (no event of
      the key: nothing leaves, the arrival still goes in); no bucket S:
      nothing leaves and the arrival is not held. `count` does not change.
    * Arrival whose unique key maps to a sort key S it does not equal: the
      event of that key in bucket S (a lone event whatever its key; in a list
      the first of the key, if any) leaves, posted as old, `count` shrinks,
      and the arrival is added as above (`sort_of` keeps S if the arrival
      passes through).
    * Then, while `count > n`, the oldest event of the last bucket leaves,
      posted as old, and its unique key is struck from `sort_of` (whichever
      event that key now files).
    * One post per arrival: new = [arrival], old = what left, in that order.
      No timer.

    Esper's nulls (Esper 9.0.0's `RankWindowView`; observed:
    corpus/esper/observed/nulls_rank*, query2_aggs_rank*):

    * With one criterion the sort key is the value itself, and a null sort
      key filed in `sort_of` reads as absent there: the next arrival of that
      unique key is added beside the null-sorted event instead of replacing
      it, and the null-sorted event stays until it is the oldest of the last
      bucket (and then strikes the newer event's entry). With several
      criteria a sort key is never null, and sort keys are equal when every
      value is (two nulls too).
    * With one unique key, a null key is a key like any other, except that
      Esper compares each scanned event's key by calling its `equals`: a
      search of a list (a replacement or a leaving by key) that reaches a
      null-keyed event at or before a match throws, and the arrival posts
      nothing and changes nothing (`ViewFailure`).
    """

    REASONS = Reasons(arrival="new = [arrival]",
                      replaced="it takes the place of the event of that key in bucket S, posted as old",
                      taken="the event of that key in bucket S (a lone event whatever its key; in a list the first "
                            "of the key, if any) leaves",
                      worse="sorts strictly after the last bucket's, it is posted as new and old at once",
                      worst="while `count > n`, the oldest event of the last bucket leaves")

    def __init__(self, spec: Rank, now: int):
        self.keys, self.size, self.criteria = spec.keys, spec.size, spec.criteria
        self.buckets: list[_Bucket] = []  # best first
        self.sort_of: dict[tuple, tuple] = {}
        self.count = 0

    def _sort_key(self, event: Event) -> tuple:
        return tuple(event.get(c.property) for c in self.criteria)

    def _compare(self, a: tuple, b: tuple) -> int:
        for criterion, x, y in zip(self.criteria, a, b):
            order = compare_values(x, y)
            if order:
                return -order if criterion.descending else order
        return 0

    def _filed(self, unique: tuple) -> tuple | None:
        """The sort key `sort_of` gives for `unique`; None where it reads as absent."""
        sort = self.sort_of.get(unique)
        return None if sort is None or (len(self.criteria) == 1 and sort[0] is None) else sort

    def _bucket(self, sort: tuple) -> int | None:
        return next((i for i, bucket in enumerate(self.buckets) if self._compare(bucket.sort, sort) == 0), None)

    def _find(self, bucket: _Bucket, unique: tuple) -> int | None:
        """The place of the event keyed `unique` in `bucket`: a lone event
        whatever its key; in a list the first of the key, scanning in order,
        `ViewFailure` where a null one-property key comes at or before it."""
        if not bucket.listed:
            return 0
        for at, held in enumerate(bucket.events):
            key = key_of(held, self.keys)
            if len(self.keys) == 1 and key[0] is None:
                raise ViewFailure(f"event {held.id!r}: null unique key met in a search of tied events")
            if key == unique:
                return at
        return None

    def on_event(self, event: Event, now: int) -> list[Post]:
        check_sortable(self.criteria, event)
        unique, sort = key_of(event, self.keys), self._sort_key(event)
        filed = self._filed(unique)
        removed: list[Event] = []
        why: list[str] = []
        if filed is None:
            self._add(event, unique, sort, removed, why)
        elif self._compare(filed, sort) == 0:  # a filed key is never a lone null: a null arrival differs
            replaced = self._replace(filed, unique, event)
            if replaced is not None:
                removed.append(replaced)
                why.append(self.REASONS.replaced)
        else:
            gone = self._take(filed, unique)
            if gone is not None:
                self.count -= 1
                removed.append(gone)
                why.append(self.REASONS.taken)
            self._add(event, unique, sort, removed, why)
        while self.count > self.size:  # never more than the buckets hold: `count` only counts what went in
            last = self.buckets[-1]
            while self.count > self.size and last.events:
                oldest = last.events.pop(0)
                self.sort_of.pop(key_of(oldest, self.keys), None)
                self.count -= 1
                removed.append(oldest)
                why.append(self.REASONS.worst)
            if not last.events:
                self.buckets.pop()
        return [Post((event,), tuple(removed), why={"insert": self.REASONS.arrival, "remove": why})]

    def _add(self, event: Event, unique: tuple, sort: tuple, removed: list[Event], why: list[str]) -> None:
        if self.count >= self.size and self._compare(self.buckets[-1].sort, sort) < 0:
            removed.append(event)
            why.append(self.REASONS.worse)
            return
        self.sort_of[unique] = sort
        self.count += 1
        at = self._bucket(sort)
        if at is not None:
            self.buckets[at].add(event)
            return
        place = len(self.buckets)  # before the first bucket that sorts after it
        while place > 0 and self._compare(self.buckets[place - 1].sort, sort) > 0:
            place -= 1
        self.buckets.insert(place, _Bucket(sort, event))

    def _take(self, sort: tuple, unique: tuple) -> Event | None:
        """Esper's `removeFromSortedEvents`: bucket `sort`'s event keyed `unique`
        (`_find`), out of the bucket."""
        at = self._bucket(sort)
        if at is None:
            return None
        bucket = self.buckets[at]
        found = self._find(bucket, unique)
        if found is None:
            return None
        gone = bucket.events.pop(found)
        if not bucket.events:
            self.buckets.pop(at)
        return gone

    def _replace(self, sort: tuple, unique: tuple, event: Event) -> Event | None:
        """Esper's `inplaceReplaceSortedEvents`: the arrival in place of bucket
        `sort`'s event keyed `unique` (`_find`): a lone event's place, or the
        back of a list."""
        at = self._bucket(sort)
        if at is None:
            return None
        bucket = self.buckets[at]
        found = self._find(bucket, unique)
        if not bucket.listed:
            replaced, bucket.events[0] = bucket.events[0], event
            return replaced
        replaced = bucket.events.pop(found) if found is not None else None
        bucket.events.append(event)
        return replaced

    def discard(self, gone: Collection[Event]) -> None:
        """Each held event of `gone` out of its bucket and its key out of
        `sort_of`. Decided: by the event itself, as every member drops what
        left elsewhere; Esper's view removes the event filed under `gone`'s
        unique key, another one where an arrival of that key replaced it in
        the same unit of work (not modelled). An intersection never passes a
        null this window's `unsafe_nulls` names (it refuses the event)."""
        for event in gone:
            for at, bucket in enumerate(self.buckets):
                if event in bucket.events:
                    bucket.events.remove(event)
                    if not bucket.events:
                        self.buckets.pop(at)
                    self.count -= 1
                    self.sort_of.pop(key_of(event, self.keys), None)
                    break

    def contents(self) -> list[Event]:
        return [event for bucket in self.buckets for event in bucket.events]
