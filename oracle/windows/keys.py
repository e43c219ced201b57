"""Reading the values a window keys or times events by, shared by several families.

* `key_of(event, names)`: the key of `#unique`, `#firstunique` and `#groupwin`
  (seed 14.3.14, 14.3.15, 14.3.18): the tuple of the named properties' values.
  A missing property is null (`Event.get` gives None), and "the runtime treats a
  null value as any other value" (seed 14.3.15), so it is a key like any other.
  Lists (JSON arrays) compare by content, as Esper's array keys do (seed 5.2.13,
  cited in 14.3.14); they are frozen into tuples so the key can index a dict.
* `timestamp_of(event, name)`: the long-typed timestamp of `#ext_timed`,
  `#ext_timed_batch` (seed 14.3.4, 14.3.6), `#time_order` and `#timetolive`.

Decided: values compare as Python compares them (1 == 1.0 == True), as they
would in one typed column; an object (JSON object) cannot be a key and raises
`EventError` naming the event and the property.
A timestamp that is missing or null raises `ViewFailure`: Esper's view reads
it as a `Long` and unboxes it (`TimeOrderView`: `timestamp < windowTailTime`;
the externally timed views: `((Number) value).longValue()`), a
NullPointerException the runtime logs before the view changed anything, so
the event posts nothing and the trace goes on (observed on Esper 9.0.0:
corpus/esper/observed/nulls_*time*).
Decided: a timestamp that is not an integer (a bool, a float, even 1000.0, a
string) raises `EventError` naming the event and the property (a typed event
cannot hold one); the driver turns it into `InvalidTrace` with the item's index.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oracle.model import Event
from oracle.windows.base import EventError, ViewFailure


def _frozen(value: Any, event: Event, name: str) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v, event, name) for v in value)
    if isinstance(value, Mapping):
        raise EventError(f"event {event.id!r}: property {name!r} is an object, which cannot be a key")
    return value


def key_of(event: Event, names: tuple[str, ...]) -> tuple[Any, ...]:
    """The event's key: the values of `names`, None where a property is missing."""
    return tuple(_frozen(event.get(name), event, name) for name in names)


def timestamp_of(event: Event, name: str) -> int:
    """The event's timestamp property, in ms: `ViewFailure` where it is null,
    `EventError` where it is not an integer."""
    value = event.get(name)
    if value is None:
        raise ViewFailure(f"event {event.id!r}: timestamp property {name!r} is null")
    if isinstance(value, bool) or not isinstance(value, int):
        raise EventError(f"event {event.id!r}: timestamp property {name!r} is {value!r}, not an integer")
    return value
