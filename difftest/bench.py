"""`difftest bench --engine oracle`: the oracle's throughput beside a bare deque loop.

The oracle is written for clarity, not speed (DESIGN.md, "Oracle"), but it must stay
fast enough to check long generated traces: the target is at least 300,000 events/s
on `#length(100)` and `#time(10 sec)`, and no more than 3.5 times slower than a bare
`collections.deque` loop doing the same window work in the same run.

* The events carry five properties besides `id` (symbol, price, volume, ts, feed).
* The `#time` trace moves the clock every `EVENTS_PER_TICK` events by `TICK_MS`, so
  the window holds span / TICK_MS * EVENTS_PER_TICK events and, once full, each tick
  expires the events of one earlier tick.
* The oracle runs through the real driver (`oracle.run`, with its trace check), on a
  `Trace` built before timing. The bare loop reads the same trace items, appends,
  pops from the left when full or expired, and emits one (after, time, inserted,
  removed) tuple per unit of work, as the driver does.
* Each side is timed `repeat` times in CPU time (`time.process_time`: other
  processes on a shared machine do not count); the best time counts. The garbage
  collector stays on, as in real use, but the prepared input is frozen out of it
  (`gc.freeze`), so neither side pays for scanning the harness's own events.
* Both outputs are compared once, untimed, so the loop is known to do the same work.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from attrs import frozen

import oracle
from oracle.model import Arrive, Event, Length, Time, Trace

TARGET_RATE = 300_000  # events/s
TARGET_RATIO = 3.5  # oracle time / bare loop time
LENGTH = 100
SPAN_MS = 10_000
TICK_MS = 100
EVENTS_PER_TICK = 4
SYMBOLS = ("IBM", "MSFT", "ORCL", "SAP", "GE")


def make_events(n: int) -> list[Event]:
    """`n` events with five properties; `ts` is the clock time the time trace gives them."""
    return [
        Event(f"E{i}", {
            "symbol": SYMBOLS[i % len(SYMBOLS)],
            "price": 10.0 + (i * 7 % 100) / 4,
            "volume": 100 * (i % 13 + 1),
            "ts": tick_time(i),
            "feed": "A" if i % 3 else "B",
        })
        for i in range(n)
    ]


def tick_time(i: int) -> int:
    return (i // EVENTS_PER_TICK) * TICK_MS


def length_trace(events: list[Event]) -> Trace:
    return Trace([Arrive(e) for e in events])


def time_trace(events: list[Event]) -> Trace:
    """The clock walks to the next tick before the first event of each tick."""
    return Trace([Arrive(e, time=tick_time(i)) if i % EVENTS_PER_TICK == 0 else Arrive(e) for i, e in enumerate(events)])


# --------------------------------------------------------------------------- the bare loops


def bare_length(trace: Trace, size: int) -> list[tuple]:
    """#length(size): append; past `size`, the oldest leaves in the same update."""
    window: deque = deque()
    out = []
    now = trace.start_time
    for index, item in enumerate(trace.items):
        window.append(item.event)
        removed = (window.popleft(),) if len(window) > size else ()
        out.append((index, now, (item.event,), removed))
    return out


def bare_time(trace: Trace, span: int) -> list[tuple]:
    """#time(span): on the walk to an arrival's time, at each due time (oldest arrival
    + span) the events that arrived at or before due - span leave in one update; then
    the event arrives."""
    window: deque = deque()  # (arrival time, event)
    out = []
    now = trace.start_time
    for index, item in enumerate(trace.items):
        if item.time is not None:
            while window and window[0][0] + span <= item.time:
                due = window[0][0] + span
                expired = []
                while window and window[0][0] <= due - span:
                    expired.append(window.popleft()[1])
                out.append((index, due, (), tuple(expired)))
            now = item.time
        window.append((now, item.event))
        out.append((index, now, (item.event,), ()))
    return out


# --------------------------------------------------------------------------- measuring


def best_time(work: Callable[[], Any], repeat: int) -> float:
    """The shortest of `repeat` runs of `work`, in CPU seconds."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def _as_tuples(updates) -> list[tuple]:
    return [(u.after, u.time, tuple(u.insert), tuple(u.remove)) for u in updates]


@frozen
class Measurement:
    window: str
    events: int
    oracle_seconds: float
    bare_seconds: float
    same_output: bool

    @property
    def oracle_rate(self) -> float:
        return self.events / self.oracle_seconds

    @property
    def bare_rate(self) -> float:
        return self.events / self.bare_seconds

    @property
    def ratio(self) -> float:
        """How many times slower the oracle is than the bare loop."""
        return self.oracle_seconds / self.bare_seconds

    def missed_targets(self) -> list[str]:
        """`rate` below TARGET_RATE events/s, `ratio` above TARGET_RATIO."""
        return [name for name, met in (("rate", self.oracle_rate >= TARGET_RATE), ("ratio", self.ratio <= TARGET_RATIO))
                if not met]

    def meets_targets(self) -> bool:
        return not self.missed_targets()

    def to_json(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "events": self.events,
            "oracle_events_per_s": round(self.oracle_rate),
            "bare_events_per_s": round(self.bare_rate),
            "ratio": round(self.ratio, 2),
            "same_output": self.same_output,
            "missed_targets": self.missed_targets(),
        }


def measure(window: str, spec, trace: Trace, bare: Callable[[Trace], list], repeat: int) -> Measurement:
    same = _as_tuples(oracle.run(spec, trace)) == bare(trace)
    return Measurement(
        window=window,
        events=len(trace.events()),
        oracle_seconds=best_time(lambda: oracle.run(spec, trace), repeat),
        bare_seconds=best_time(lambda: bare(trace), repeat),
        same_output=same,
    )


def bench_oracle(n: int, repeat: int) -> list[Measurement]:
    events = make_events(n)
    by_length, by_time = length_trace(events), time_trace(events)
    gc.collect()
    gc.freeze()
    try:
        return [
            measure(f"#length({LENGTH})", Length(LENGTH), by_length, lambda t: bare_length(t, LENGTH), repeat),
            measure(f"#time({SPAN_MS // 1000} sec)", Time(SPAN_MS), by_time, lambda t: bare_time(t, SPAN_MS), repeat),
        ]
    finally:
        gc.unfreeze()


def text_lines(results: list[Measurement], repeat: int) -> list[tuple[str, str | None]]:
    """The table the command prints, as (line, style) pairs."""
    n = results[0].events if results else 0
    out: list[tuple[str, str | None]] = [
        (f"oracle throughput, {n:,} events with 5 properties, CPU time, best of {repeat}", "bold"),
        (f"targets: >= {TARGET_RATE:,} events/s and <= {TARGET_RATIO}x the bare deque loop", None),
        (f"{'window':<16}{'oracle ev/s':>14}{'deque ev/s':>14}{'ratio':>9}  verdict", "bold"),
    ]
    for m in results:
        verdict = "meets targets" if m.meets_targets() else f"misses target: {' and '.join(m.missed_targets())}"
        if not m.same_output:
            verdict += "; OUTPUTS DIFFER (the oracle and the loop disagree)"
        out.append((
            f"{m.window:<16}{m.oracle_rate:>14,.0f}{m.bare_rate:>14,.0f}{m.ratio:>8.2f}x  {verdict}",
            "green" if m.meets_targets() and m.same_output else "red",
        ))
    return out


def report_json(results: list[Measurement], repeat: int) -> dict[str, Any]:
    return {
        "engine": "oracle",
        "repeat": repeat,
        "targets": {"events_per_s": TARGET_RATE, "ratio": TARGET_RATIO},
        "results": [m.to_json() for m in results],
    }


__all__ = ["Measurement", "bench_oracle", "bare_length", "bare_time", "make_events", "report_json", "text_lines"]
