"""One replay loop for the grouped kernels that walk a trace's clock
(DESIGN.md "The clock", CORPUS.md "Input items"), so each kernel states its
window's state and leaves the clock to this module.

A kernel hands `replay` one trace's items in seq order, each a tuple
`(seq, kind, time, payload)` (`time`: an event's arrival clock, an advance's
or a jump's target), a *machine* (`Clocked`) and a callback `on_unit(seq,
phase, time)`. The loop is the clock rule, item by item:

* `event`: the clock walks to `time` (below), then the machine takes the
  event, `arrive(payload, time)`: the unit (seq, ARRIVAL, time);
* `advance`: the clock walks to `time`;
* `jump`: the clock is set to `time`; if a timer is due by then, `fire(time)`
  is called once: the machine fires every timer due by `time` as the call
  finds them, in (due time, scheduling) order, each seeing `time`; timers it
  schedules meanwhile wait for a later item. The unit (seq, TIMER, time);
* any other kind (`start`, `set`) is not the clock's: skipped (a kernel that
  reads one handles it around the loop).

A walk to T stops at each due instant in turn: while the machine's earliest
due time d is at most T, `fire(d)` fires the timers due then, each seeing d,
and the unit (seq, TIMER, d) follows; a timer scheduled at a stop that falls
due by T is met later in the same walk (at its own instant; one due at the
stop's own instant makes another stop there, with the same unit key: the
callback sees the key twice and continues that unit). A due time before the
clock (a timer set in the past) fires at the clock.

`on_unit` is called after every unit of work, whether or not the machine
posted anything in it; the machine keeps what it posted and the kernel drains
it there. The loop returns the final clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

#: a unit's phase: a timer firing during an item's walk or jump, or an event's arrival
TIMER, ARRIVAL = 0, 1


class Clocked(Protocol):
    """What `replay` asks of a machine."""

    def due(self) -> int | None:
        """The earliest due time of its pending timers (None: no timer)."""

    def fire(self, now: int) -> None:
        """Fire every timer due by `now` (as found at the call), each seeing `now`."""

    def arrive(self, payload: Any, now: int) -> None:
        """Take an event arriving at clock `now`."""


def replay(items: Iterable[tuple[int, str, int, Any]], machine: Clocked,
           on_unit: Callable[[int, int, int], None], clock: int = 0) -> int:
    """Run `items` (seq order) through `machine` from `clock` (module docstring)."""

    def walk(seq: int, target: int) -> int:
        now = clock
        while (due := machine.due()) is not None and due <= target:
            now = max(due, now)
            machine.fire(now)
            on_unit(seq, TIMER, now)
        return target

    for seq, kind, time, payload in items:
        if kind == "event":
            clock = walk(seq, time)
            machine.arrive(payload, time)
            on_unit(seq, ARRIVAL, time)
        elif kind == "advance":
            clock = walk(seq, time)
        elif kind == "jump":
            clock = time
            due = machine.due()
            if due is not None and due <= time:
                machine.fire(time)
                on_unit(seq, TIMER, time)
    return clock
