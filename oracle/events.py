"""The oracle on a user's own events: a window clause and a list of event
records (dicts), each arriving at its time, with the clock walked to `until`
at the end.

    >>> from oracle.events import run_events
    >>> for u in run_events("#length(2)", [{"id": "a", "t": 0}, {"id": "b", "t": 5}, {"id": "c", "t": 9}], time="t"):
    ...     print(u.after, u.time, [e.id for e in u.insert], [e.id for e in u.remove])
    0 0 ['a'] []
    1 5 ['b'] []
    2 9 ['c'] ['a']

Rules: every record has an `id` (text, unique); its other keys are the event's
properties, the `time` key among them (as every column of a Spark event table
is, `spark_impl.apply_window_to_events`, so `*` lists the same fields on both and
`#ext_timed(t, ...)` can read `t`); the `time` key is also the arrival time in
integer ms (the clock walks to it first, firing the timers due on the way, as an
`advance` item does); without `time`, every event arrives at the current clock.
`until` walks the clock on after the last event: a time before the last event's
is refused, naming `until` (no index: it is no record). `after` in the updates is the index
of the record that caused them (the final walk is index `len(events)`). A bad
record is an `InvalidTrace` naming its index and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from oracle.dialects import parse
from oracle.driver import run
from oracle.errors import InvalidTrace
from oracle.model import Advance, Arrive, Event, Trace, TraceItem, Update, WindowSpec


def events_trace(events: Iterable[Mapping[str, Any]], time: str | None = None, until: int | None = None,
                 start_time: int = 0) -> Trace:
    """The trace of `events` (rules: module docstring)."""
    items: list[TraceItem] = []
    last = start_time  # the clock after the records
    for index, record in enumerate(events):
        if not isinstance(record, Mapping):
            raise InvalidTrace(f"an event is a mapping of field names to values, got {type(record).__name__}", index)
        if "id" not in record or record["id"] is None or record["id"] == "":
            raise InvalidTrace("the event has no `id`", index)
        props = {k: v for k, v in record.items() if k != "id"}
        at = None
        if time is not None:
            at = record.get(time)
            if at is None:
                raise InvalidTrace(f"the event has no time (no value in its field {time!r})", index)
            if isinstance(at, bool) or not isinstance(at, int):
                raise InvalidTrace(f"the time field {time!r} must be a whole number of ms, got {at!r}", index)
            last = max(last, at)
        items.append(Arrive(Event(str(record["id"]), props), time=at))
    if until is not None:
        if isinstance(until, bool) or not isinstance(until, int):
            raise InvalidTrace(f"`until` must be a whole number of ms, got {until!r}")
        if until < last:
            raise InvalidTrace(f"`until` is {until} ms, before the last event's time, {last} ms: it walks the clock on "
                               "after the last event, never back")
        items.append(Advance(until))
    return Trace(tuple(items), start_time)


def run_events(window: str | WindowSpec, events: Iterable[Mapping[str, Any]], dialect: str = "esper",
               time: str | None = None, until: int | None = None, start_time: int = 0) -> tuple[Update, ...]:
    """Every update `window` (a clause in `dialect`, or a spec) posts over `events`."""
    spec = parse(window, dialect) if isinstance(window, str) else window
    return run(spec, events_trace(events, time, until, start_time))
