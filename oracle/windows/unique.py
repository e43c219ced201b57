"""Keyed windows: `#unique(keys)` and `#firstunique(keys)`. No timers.

The key is the tuple of the named properties' values (`oracle.windows.keys.key_of`).
A missing property is a null key value, and null is a key like any other (as
seed 14.3.15 says of `#groupwin` keys): events missing the property share one
key (Esper keys a `HashMap` by the value, or by a null-safe multi-key;
observed: corpus/esper/observed/nulls_unique*, nulls_firstunique*).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from oracle.model import Event, FirstUnique, Unique
from oracle.windows.base import Post, WindowBase
from oracle.windows.keys import key_of
from oracle.windows.reasons import Reasons


class UniqueWindow(WindowBase):
    """`#unique(keys)`: the most recent event per key, a length window of size 1
    per key (seed 14.3.14; esper.md §1 `#unique`).

    * Arrival: one post, new = [arrival], old = [the event held under its key]
      (none if the key is new): the arrival replaces the event held under its key.
    * `contents()`: the held events. Decided: in arrival order (Esper iterates
      in hash order, which matters only for iteration, not for posts).
    """

    REASONS = Reasons(arrival="new = [arrival]", replaced="the arrival replaces the event held under its key")

    def __init__(self, spec: Unique, now: int):
        self.keys = spec.keys
        self.held: dict[tuple[Any, ...], Event] = {}

    def on_event(self, event: Event, now: int) -> list[Post]:
        key = key_of(event, self.keys)
        replaced = self.held.pop(key, None)
        self.held[key] = event
        return [Post((event,), (replaced,) if replaced is not None else (),
                     why={"insert": self.REASONS.arrival, "remove": self.REASONS.replaced})]

    def discard(self, gone: Collection[Event]) -> None:
        self.held = {k: e for k, e in self.held.items() if e not in gone}

    def contents(self) -> list[Event]:
        return list(self.held.values())


class FirstUniqueWindow(WindowBase):
    """`#firstunique(keys)`: the first event per key, kept for ever (seed 14.3.18;
    esper.md §1 `#firstunique`).

    * Arrival with a new key: kept and posted as new.
    * Arrival with a held key: dropped silently (no update). Nothing ever leaves.
    """

    REASONS = Reasons(new_key="arrival with a new key: kept and posted as new")

    def __init__(self, spec: FirstUnique, now: int):
        self.keys = spec.keys
        self.held: dict[tuple[Any, ...], Event] = {}

    def on_event(self, event: Event, now: int) -> list[Post]:
        key = key_of(event, self.keys)
        if key in self.held:
            return []
        self.held[key] = event
        return [Post((event,), why=self.REASONS.new_key)]

    def discard(self, gone: Collection[Event]) -> None:
        self.held = {k: e for k, e in self.held.items() if e not in gone}

    def contents(self) -> list[Event]:
        return list(self.held.values())

