"""Batched shrinking: a disagreeing trace cut down to a minimal one, a round per Spark job.

Hypothesis's own shrinker tries one candidate per call of the test, which here is
one Spark job (about a second): the hundreds of candidates a trace needs run past
Hypothesis's five-minute shrinking limit and leave the case half shrunk. Spark
runs a batch of candidates for the price of one, so each round here tries every
candidate at once:

1. every trace of the batch that disagrees; the shortest is the start;
2. delta debugging over the trace's items: remove each half, quarter, ... and each
   single item; keep the shortest candidate that still disagrees; repeat until no
   removal does (the result is 1-minimal: removing any one item makes it agree);
3. and drop the event properties the window does not read.

Removing items keeps a trace valid: times stay in order and ids stay unique.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from oracle.model import Arrive, Event, Trace

if TYPE_CHECKING:
    from difftest.runner import TraceResult

Check = Callable[[Sequence[Trace]], Sequence["TraceResult"]]


def _chunks(n: int) -> list[tuple[int, int]]:
    """(start, stop) item ranges to try removing: halves, quarters, ..., single items."""
    spans, size = [], n // 2
    while size >= 1:
        spans += [(start, min(start + size, n)) for start in range(0, n, size)]
        size //= 2
    return list(dict.fromkeys(spans))


def _without(trace: Trace, start: int, stop: int) -> Trace:
    return Trace(trace.items[:start] + trace.items[stop:], trace.start_time, trace.variables)


def _only_properties(trace: Trace, keep: frozenset[str]) -> Trace:
    def slim(item):
        if isinstance(item, Arrive):
            props = {k: v for k, v in item.event.props.items() if k in keep}
            return Arrive(Event(item.event.id, props), item.time, item.op)
        return item

    return Trace(tuple(slim(i) for i in trace.items), trace.start_time, trace.variables)


def _size(trace: Trace) -> tuple[int, int, int]:
    events = trace.events()
    return len(trace.items), len(events), sum(len(e.props) for e in events)


def shrink(failing: Sequence[TraceResult], check: Check, read_properties: frozenset[str],
           max_rounds: int = 200) -> TraceResult:
    """The smallest disagreeing trace reachable from `failing` by batched rounds of `check`."""
    best = min(failing, key=lambda r: _size(r.trace))
    for _ in range(max_rounds):
        trace = best.trace
        candidates = [_without(trace, a, b) for a, b in _chunks(len(trace.items))]
        slim = _only_properties(trace, read_properties)
        if _size(slim) < _size(trace):
            candidates.append(slim)
        if not candidates:
            break
        still = [r for r in check(candidates) if r.mismatch]
        smaller = [r for r in still if _size(r.trace) < _size(trace)]
        if not smaller:
            break
        best = min(smaller, key=lambda r: _size(r.trace))
    return best


__all__ = ["shrink"]
