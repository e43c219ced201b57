"""Windows that emit panes: eKuiper's tumbling, hopping, sliding, session and
count windows (../shared/semantics/kuiper.md, the "v1" window operator
`window_op.go` with `event_window_trigger.go` and `watermark_op.go`).

Seed (kuiper-windows.txt): "All the windowing operations output results at the
end of the window. The output of the window will be single event based on the
aggregate function used."

Every pane is one update of its own (`Delivery.UPDATE_PER_POST`): `insert` the
pane's rows in pane order (arrival order in processing time, event-time order
in event time), `window` its start and end as eKuiper reports them, and with a
query (`oracle.model.Statement`, eKuiper's rules) `values` the query's output rows
(`oracle.windows.query`). Several panes can close in one unit of work (an
event-time row lifting the watermark past several ends, a jump); they are
posted in the order they close.

Rules every kind shares:

* Processing time (`timestamp` None): a row's time is the clock at its arrival.
  Ticks follow eKuiper's timers on the CORPUS clock: a tick fires at its due
  time on a walk ("`advance`"); a jump fires it late, seeing the jump's target
  (`_Ticks`).
* Event time (kuiper.md §1, watermark_op.go): the watermark starts at 0 and is
  `max(largest event time seen, late_tolerance) - late_tolerance`; it moves only
  when a row arrives and lifts it. A row whose event time is below the
  watermark (equal is accepted) is late: it is dropped, counted in `late`, and
  posted as an update with `error` "late row: ..." (the run shows every drop;
  eKuiper drops silently). Accepted rows wait, sorted by event time (ties in
  arrival order), until the watermark reaches them; when it rises, the rows up
  to it enter the window in event-time order, then the window closes every
  pane due by the watermark. The last panes close only when a later row lifts
  the watermark. A row without a whole-millisecond event time is an invalid
  trace (`InvalidTrace` naming the item).
* FILTER(WHERE c) (kuiper.md §5 "FILTER"): a row for which c is not true never
  enters the window (in event time it still lifts the watermark). A query's
  WHERE is pushed into the window filter for processing-time tumbling, hopping
  and session windows; for count and sliding windows, and for every event-time
  window, it filters each pane's rows after the window, and a pane it leaves
  empty is not posted at all (FilterOp returns nothing for an empty
  collection).
* An error a condition or the query raises (eKuiper's `run Where error:
  ...`) is posted as the update's `error`, in the place of the row or the
  pane.
* Empty panes: tumbling and hopping windows post a pane at every end, rows or
  none (processing time: every tick, before the first row too; event time:
  every end from the first aligned end to the watermark). Sessions never post
  an empty pane, count and sliding panes hold at least one row.
* window start: a pane's reported start "<= 0" is replaced by `end - length`
  (window_op.go scan: `if windowStart <= 0`).

Alignment (kuiper.md §2, `getAlignedWindowEndTime`; `aligned_end`): the first
end of a tumbling, hopping (by its hop) or session (by its maximum duration)
window is aligned to natural time in `time_zone`.

Decided (kuiper.md §8 and what the memo leaves open; each pinned by a case in
corpus/kuiper/):

* The alignment quirk (§8 "unit field == k"): the formula's `gap = k` when the
  unit field equals k gives an end at the current unit's start, not after the
  time it is computed from. Event time follows it exactly: the first pane ends
  before the first row, an empty pane whose start (the first row's time) lies
  after its end (`tumbling-event-alignment-quirk-empty-first-pane`). Processing
  time: eKuiper's first timer then fires at once, an empty pane at the
  window's creation that no trace item causes, so it is not posted; the ticker
  then runs from the creation, `start - end` behind the nominal ends; when
  that is under 50 ms the ends go on as `end + k * interval`, else the first
  tick is 50 ms late and eKuiper skips it and aligns again from that tick's
  time (`tumbling-processing-alignment-quirk-realigns`).
* k not dividing 60 (or 24): only the first end is aligned; then ends follow
  at the interval, crossing minute boundaries (`hopping-processing-hop-7s-crosses-minutes`).
* A unit's start in a local hour a DST change repeats (or skips) is the
  instant Go's `time.Date` gives it (`go_date`), as eKuiper computes it, not
  the occurrence the time was read from: in New York's second 01:xx the ends
  lie an hour back, fire at once and re-align on each tick until 02:00
  (`tumbling-processing-new-york-repeated-hour`); in Berlin's first 02:xx the
  first end lies an hour ahead (`tumbling-event-berlin-repeated-hour`).
* A jump (CORPUS.md) is eKuiper's clock jumping: the pending timer fires once,
  late, seeing the jump's target. A tick 50 ms or more late is skipped and the
  ticks are aligned again from the target, so the skipped panes' rows wait for
  the next pane (`tumbling-processing-jump-skips-and-realigns`); the first
  timer has no such check. A session's timeout fires late and closes its
  session at the target.
* Processing-time hopping panes take the left bound eKuiper computes with its
  tick delta: `previous trigger + hop - size` (the previous trigger is the
  creation time before the first pane), which is `end - size` for every
  on-time tick after the first (`hopping-processing-hop-larger-than-size`).
* Rows leave a hopping or sliding window only by falling below its left
  bound. (eKuiper's `handleInputs` drops every buffered row, later ones too,
  when an overlap window's pane comes out empty; the oracle does not copy that
  loss: `hopping-event-gap-keeps-later-rows`.)
* Sessions (§8 "processing >=, event >"): a processing-time check at tick t
  cuts the session when `t - first row >= max_duration`; an event-time check
  needs a later row past the tick and `tick - max_duration > first row`
  (`session-processing-cut-at-equality`, `session-event-no-cut-at-equality`).
  A timeout and a tick due at one instant fire in the order they were
  scheduled (DESIGN.md), the tick first when `max_duration >= timeout`.
* Event-time delayed sliding panes (§8 "no WindowRange"): reported as in
  processing time, `[t - size, t + delay]` (window_op.go `scan` sets the range
  for every scan; the memo's newer operator leaves it unset)
  (`sliding-event-delay-pane-bounds`).
* COUNTWINDOW in event time (§8): eKuiper refuses the rule
  (`NewEventTimeTrigger`: "unsupported window type"); the kuiper dialect
  raises `InvalidSpec` (tests/test_kuiper.py), and a count window is
  never timed.
* The opt-in operators (inc-agg, v2) are not modelled: the default v1
  operator is the spec.
"""

from __future__ import annotations

import bisect
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from oracle.model import (
    DAY,
    HOUR,
    MILLISECOND,
    MINUTE,
    SECOND,
    CountPanes,
    DerivedValues,
    Event,
    Hopping,
    Pane,
    Statement,
    Session,
    Sliding,
    Tumbling,
)
from oracle.errors import InvalidTrace
from oracle.windows.base import Delivery, EventError, Post, WindowBase
from oracle.windows.query import QueryError, Scope, condition_holds, evaluate_query, holds
from oracle.windows.reasons import Reasons

#: a processing-time tick this late (ms) or more is skipped and the ticks re-aligned
#: (window_op.go: "If the deviation is less than 50ms, then process it")
LATE_TICK = 50

def aligned_end(t: int, count: int, unit: int, zone: ZoneInfo) -> int:
    """eKuiper's `getAlignedWindowEndTime(t, count, unit)` in ms: for a unit of
    seconds, the start of t's minute plus `gap` seconds, where `gap = count` if
    the second of the minute is at most `count`, else `count * (second // count
    + 1)`; minutes within the hour, hours within the local day and
    milliseconds within the second alike; days: local midnight `count` days
    after t's day. Local fields in `zone`; the unit's start is a wall time
    turned into an instant as Go's `time.Date` does (`go_date`).
    Decided: the calendar ends with the year 9999 (`CALENDAR_END`); a time whose
    aligned end lies past it is an invalid trace, not an overflow."""
    try:
        return _aligned_end(t, count, unit, zone)
    except (OverflowError, ValueError):
        raise InvalidTrace(f"eKuiper aligns window ends to calendar dates, and the end after {t} ms lies past the "
                           f"year 9999 ({CALENDAR_END} ms)") from None


#: 10000-01-01T00:00Z in ms: eKuiper's aligned windows end before it (`aligned_end`)
CALENDAR_END = 253_402_300_800_000


def _aligned_end(t: int, count: int, unit: int, zone: ZoneInfo) -> int:
    seconds, milli = divmod(t, 1000)
    local = datetime.fromtimestamp(seconds, zone)
    y, m, d = local.year, local.month, local.day
    if unit == DAY:
        return go_date(zone, y, m, d + count) * 1000
    if unit == HOUR:
        field, base = local.hour, go_date(zone, y, m, d)
    elif unit == MINUTE:
        field, base = local.minute, go_date(zone, y, m, d, local.hour)
    elif unit == SECOND:
        field, base = local.second, go_date(zone, y, m, d, local.hour, local.minute)
    else:
        assert unit == MILLISECOND
        field, base = milli, go_date(zone, y, m, d, local.hour, local.minute, local.second)
    gap = count if field <= count else count * (field // count + 1)
    return base * 1000 + gap * unit


def go_date(zone: ZoneInfo, year: int, month: int, day: int, hour: int = 0, minute: int = 0,
            second: int = 0) -> int:
    """The instant (s) of a wall time in `zone` as Go's `time.Date` gives it
    (the day may run past the month's end): read the wall time as UTC, L;
    take the zone's offset p at L, then its offset o at L - p; the instant is
    L - o.
    Where a DST change repeats the wall time or skips it, this picks by the
    sign of the offset, not by the time it was read from: in a repeated hour,
    the first occurrence west of Greenwich (New York's 01:00-02:00 EDT) and
    the second east of it (Berlin's 02:00-03:00 CET). So a unit's start read
    from a time in New York's second 01:xx (EST) lies an hour before that
    time's own unit start, and the first end with it
    (`tumbling-processing-new-york-repeated-hour`)."""
    wall = datetime(year, month, 1, hour, minute, second, tzinfo=timezone.utc) + timedelta(days=day - 1)
    wall_seconds = int(wall.timestamp())

    def offset(instant: int) -> int:
        return int(datetime.fromtimestamp(instant, zone).utcoffset().total_seconds())

    return wall_seconds - offset(wall_seconds - offset(wall_seconds))


class _Ticks:
    """eKuiper's processing-time tick schedule (window_op.go
    `execProcessingWindow`): a first timer at the aligned end, then a ticker
    every `interval` started when the first timer fires; each tick's pane end
    is the previous end plus `interval`, and a tick 50 ms or more away from it
    is skipped and the first timer set again (aligned from the tick's time).
    A first timer whose aligned end is not after the time it is set fires at
    once. Go's ticker drops the ticks a late receiver missed."""

    def __init__(self, interval: int, align, now: int):
        self.interval, self.align = interval, align
        self.first: int | None = None  # the pending first timer's end
        self.due: int = now
        self.nominal = 0  # the end of the last tick
        self.ticker_start = now
        self.immediate = self._set_first(now)  # ends fired at once at creation

    def _set_first(self, now: int) -> list[int]:
        end = self.align(now)
        if end > now:
            self.first, self.due = end, end
            return []
        return self._first_fires(end, now)

    def _first_fires(self, end: int, now: int) -> list[int]:
        self.first = None
        self.nominal, self.ticker_start, self.due = end, now, now + self.interval
        return [end]

    def fire(self, now: int) -> list[int]:
        """The pane ends of the firing due by `now` (on a walk `now` is the due time)."""
        if self.first is not None:
            return self._first_fires(self.first, now)
        self.nominal += self.interval
        missed = (now - self.ticker_start) // self.interval + 1
        self.due = self.ticker_start + missed * self.interval
        if abs(now - self.nominal) < LATE_TICK:
            return [self.nominal]
        return self._set_first(now)


class PaneWindowBase(WindowBase):
    """What the pane windows share: admission (FILTER, pushed-down WHERE), the
    event-time watermark, and turning a pane into a post (post-window WHERE,
    the query)."""

    #: the phrases every pane window's table holds (with its own `pane`)
    SHARED = dict(late="a row whose event time is below the watermark (equal is accepted) is late",
                  error="posted as the update's error, in the place of the row or the pane",
                  query="values the query's output rows")
    REASONS = Reasons(**SHARED)

    delivery = Delivery.UPDATE_PER_POST

    def __init__(self, spec: Any, now: int, query: Statement | None = None):
        self.spec, self.query = spec, query
        where = query.where if query is not None else None
        pushed = query is not None and query.where_in_window
        self.admit = [c for c in (spec.filter, where if pushed else None) if c is not None]
        self.after_where = None if pushed else where
        self.rows: list[tuple[int, Event]] = []  # (row time, event), in pane order
        self.trigger_time: int | None = None if spec.event_time else now
        # event time
        self.watermark = 0
        self.held: list[tuple[int, int, Event]] = []  # (event time, arrival number, event), sorted
        self.arrivals = 0
        self.largest: int | None = None
        self.late = 0

    # ------------------------------------------------------------------ rows in

    def _admitted(self, event: Event, t: int) -> bool | str:
        """True if the row passes the FILTER (and a pushed-down WHERE), False if
        not, or the error text where a condition errs (the row does not enter)."""
        row = event.as_dict()
        try:
            return all(holds(condition, row, time=t) for condition in self.admit)
        except QueryError as exc:
            return str(exc)

    def on_event(self, event: Event, now: int) -> list[Post]:
        if not self.spec.event_time:
            admitted = self._admitted(event, now)
            if isinstance(admitted, str):
                return [Post(error=admitted, why=self.REASONS.error)]
            return self.take(now, event, now) if admitted else []
        ts = self._event_time(event)
        if ts < self.watermark:
            self.late += 1
            return [Post(error=f"late row: event time {ts} ms is before the watermark {self.watermark} ms",
                         why=self.REASONS.late)]
        self.arrivals += 1
        bisect.insort(self.held, (ts, self.arrivals, event), key=lambda h: h[:2])
        self.largest = ts if self.largest is None else max(self.largest, ts)
        tolerance = self.spec.late_tolerance
        watermark = max(self.largest, tolerance) - tolerance
        if watermark <= self.watermark:
            return []
        cut = bisect.bisect_right(self.held, watermark, key=lambda h: h[0])
        released, self.held = self.held[:cut], self.held[cut:]
        self.watermark = watermark
        posts: list[Post] = []
        for ts, _, row in released:
            admitted = self._admitted(row, ts)
            if isinstance(admitted, str):
                posts.append(Post(error=admitted, why=self.REASONS.error))
            elif admitted:
                if self.trigger_time is None:  # the first row reaching the window
                    self.trigger_time = ts
                posts += self.take(ts, row, now)
        return posts + self.on_watermark(watermark)

    def _event_time(self, event: Event) -> int:
        name = self.spec.timestamp
        value = event.get(name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value is None:
            raise EventError(f"event {event.id!r} has no event time: its property {name!r} is missing")
        if isinstance(value, bool) or not isinstance(value, int):
            raise EventError(f"event {event.id!r} has no event time: its property {name!r} is {value!r}, "
                             "not whole milliseconds")
        return value

    def take(self, t: int, event: Event, now: int) -> list[Post]:
        """A row (time t) enters the window; what it posts (count and sliding
        windows post on rows in processing time)."""
        self.rows.append((t, event))
        return []

    def on_watermark(self, watermark: int) -> list[Post]:
        return []

    # ------------------------------------------------------------------ panes out

    def emit(self, rows: list[tuple[int, Event]], start: int, end: int, why=None) -> Post | None:
        """The post of one pane, or None where nothing reaches the sink; `why`
        the rule that closed it (default: the window's `pane`)."""
        why = why if why is not None else self.REASONS.pane
        if self.after_where is not None:
            # each row's condition, an aggregate in it reading the whole pane (eKuiper's
            # filter valuer has the row and the pane's aggregates, no window bounds)
            pane_rows = [(t, event.as_dict()) for t, event in rows]
            whole = [row for _, row in pane_rows]
            times = {id(row): t for t, row in pane_rows}
            try:
                rows = [r for r, (t, row) in zip(rows, pane_rows)
                        if condition_holds(self.after_where, Scope(row, whole, time=t, times=times), "Where")]
            except QueryError as exc:
                return Post(error=str(exc), why=self.REASONS.error.via(why))
            if not rows:
                return None
        events = [event for _, event in rows]
        pane = Pane(start, end)
        values = None
        if self.query is not None:
            try:
                out = evaluate_query(self.query, [e.as_dict() for e in events], pane, [t for t, _ in rows])
            except QueryError as exc:
                return Post(error=str(exc), why=self.REASONS.error.via(why))
            if out is None:
                return None
            values = DerivedValues(insert=out)
        return Post(insert=tuple(events), window=pane, values=values,
                    why={"insert": why, "values.insert": self.REASONS.query.via(why)})

    def contents(self) -> list[Event]:
        return [event for _, event in self.rows] + [event for _, _, event in self.held]

    def _align(self, count: int) -> _Align:
        return _Align(count, self.spec.unit, ZoneInfo(self.spec.time_zone))


class _Align:
    """`aligned_end` for one count and unit: a function of `t` that pickles (a
    lambda would not, and windows are kept in a stream's state store)."""

    __slots__ = ("count", "unit", "zone")

    def __init__(self, count: int, unit: int, zone: ZoneInfo):
        self.count, self.unit, self.zone = count, unit, zone

    def __call__(self, t: int) -> int:
        return aligned_end(t, self.count, self.unit, self.zone)

    def __getstate__(self) -> tuple:
        return self.count, self.unit, self.zone

    def __setstate__(self, state: tuple) -> None:
        self.count, self.unit, self.zone = state


def _posted(posts: list[Post | None]) -> list[Post]:
    return [p for p in posts if p is not None]


class TumblingWindow(PaneWindowBase):
    """TUMBLINGWINDOW(unit, n) (kuiper.md §5): a pane at every end, the rows
    with time before it ("ts < right", end exclusive), which then leave; rows
    at or after the end stay for the next pane. Ends: the aligned end, then
    every `size`. Reported start: the previous end; before the first pane the
    creation time (processing) or the first row's time (event time)."""

    REASONS = Reasons(**PaneWindowBase.SHARED, pane="a pane at every end, the rows with time before it")

    def __init__(self, spec: Tumbling, now: int, query: Statement | None = None):
        super().__init__(spec, now, query)
        self.interval = self._interval()
        self.next_end: int | None = None
        if not spec.event_time:
            self.ticks = _Ticks(self.interval, self._align(self.interval // spec.unit), now)
            for end in self.ticks.immediate:
                self.scan(end)  # at creation: an empty pane no item causes, not posted

    def _interval(self) -> int:
        return self.spec.size

    def length(self) -> int:
        return self.spec.size

    def next_timer(self) -> int | None:
        return None if self.spec.event_time else self.ticks.due

    def on_timer(self, now: int) -> list[Post]:
        return _posted([self.scan(end) for end in self.ticks.fire(now)])

    def bounds(self, end: int) -> tuple[int, int]:
        """(left bound of the content, reported start) of the pane ending at `end`."""
        start = self.trigger_time if self.trigger_time is not None else end - self.length()
        return start, start

    def scan(self, end: int) -> Post | None:
        left, start = self.bounds(end)
        if start <= 0:
            start = end - self.length()
        content = [r for r in self.rows if left <= r[0] < end] if self.overlaps() else [r for r in self.rows if r[0] < end]
        self.rows = [r for r in self.rows if r[0] >= (left if self.overlaps() else end)]
        self.trigger_time = end
        return self.emit(content, start, end)

    def overlaps(self) -> bool:
        return False

    def on_watermark(self, watermark: int) -> list[Post]:
        if self.next_end is None:
            if not self.rows:
                return []
            self.next_end = self._align(self.interval // self.spec.unit)(min(t for t, _ in self.rows))
        posts = []
        while self.next_end <= watermark:
            posts.append(self.scan(self.next_end))
            self.next_end += self.interval
        return _posted(posts)


class HoppingWindow(TumblingWindow):
    """HOPPINGWINDOW(unit, size, hop) (kuiper.md §5): a pane every `hop`, ends
    aligned by the hop, of the rows in `[end - size, end)`; rows stay while a
    later pane may hold them. A hop larger than the size skips rows. Reported
    start: the previous end minus the hop (eKuiper's `triggerTime - interval`,
    which is the content's start only when size is twice the hop). Processing
    time's left bound carries eKuiper's tick delta: `previous trigger + hop -
    size`."""

    REASONS = Reasons(**PaneWindowBase.SHARED, pane="a pane every hop")

    def _interval(self) -> int:
        return self.spec.hop

    def overlaps(self) -> bool:
        return True

    def bounds(self, end: int) -> tuple[int, int]:
        trigger = self.trigger_time
        if self.spec.event_time:
            left = end - self.spec.size
        else:
            left = trigger + self.spec.hop - self.spec.size
        return left, (trigger if trigger is not None else end) - self.spec.hop


class SlidingWindow(PaneWindowBase):
    """SLIDINGWINDOW(unit, size[, delay]) [OVER (WHEN cond)] (kuiper.md §5):
    a row that passes the FILTER and meets the trigger condition (every row
    without one) triggers a pane. Without delay: the pane of `[t - size, t]`
    (both ends closed, the triggering row included) at once (processing) or
    when the watermark reaches t (event time). With delay D: a pane of
    `[t - size, t + D)` when the clock (processing) or the watermark (event
    time) reaches t + D. Reported bounds `[t - size, t + D]`. The trigger
    condition sees rows in event-time order in event time; `last_hit_time()`
    and `last_hit_count()` read the time and number of its earlier hits (0
    before the first); they change only when it holds.

    Rows older than a pane's left bound leave at that pane; in processing time
    a row that does not trigger drops the rows older than `t - size - D`
    (gcInputs). Event time (event_window_trigger.go): at each watermark, the
    delayed panes due by it close first (only those scheduled by an earlier
    watermark); then, while a row newer than the last such row and at most the
    watermark exists, every trigger up to the watermark is handled (a pane, or
    with a delay one scheduled)."""

    REASONS = Reasons(**PaneWindowBase.SHARED, pane="meets the trigger condition (every row without one) triggers a pane",
                      delayed="with delay D: a pane of [t - size, t + D)")

    def __init__(self, spec: Sliding, now: int, query: Statement | None = None):
        super().__init__(spec, now, query)
        self.hits = (0, 0)  # (time of the last hit, number of hits)
        self.delayed: list[tuple[int, int]] = []  # processing: (due, order) of delayed panes
        self.order = 0
        self.triggers: list[int] = []  # event time: trigger times waiting for the watermark
        self.delay_due: list[int] = []  # event time: delayed pane ends
        self.previous_end: int | None = None

    def _triggers(self, t: int, event: Event) -> bool:
        if self.spec.trigger is None:
            return True
        try:
            hit = holds(self.spec.trigger, event.as_dict(), self.hits, time=t)
        except QueryError:  # eKuiper logs the error; the row does not trigger
            hit = False
        if hit:
            self.hits = (t, self.hits[1] + 1)
            return True
        return False

    def take(self, t: int, event: Event, now: int) -> list[Post]:
        self.rows.append((t, event))
        triggered = self._triggers(t, event)
        if self.spec.event_time:
            if triggered:
                self.triggers.append(t)
            return []
        delay = self.spec.delay
        if not triggered:
            self.rows = [r for r in self.rows if r[0] >= t - self.spec.size - delay]
            return []
        if delay:
            self.order += 1
            self.delayed.append((t + delay, self.order))
            return []
        return _posted([self.scan(t)])

    def scan(self, right: int) -> Post | None:
        """The pane ending at `right` (the trigger time, or trigger + delay)."""
        delay = self.spec.delay
        left = right - self.spec.size - delay
        if delay:
            content = [r for r in self.rows if left <= r[0] < right]
        else:
            content = [r for r in self.rows if left <= r[0] <= right]
        self.rows = [r for r in self.rows if r[0] >= left]
        return self.emit(content, left, right, self.REASONS.delayed if delay else None)

    def next_timer(self) -> int | None:
        return min(self.delayed)[0] if self.delayed else None

    def on_timer(self, now: int) -> list[Post]:
        due = sorted(d for d in self.delayed if d[0] <= now)
        self.delayed = [d for d in self.delayed if d[0] > now]
        return _posted([self.scan(end) for end, _ in due])

    def _earliest(self, after: int | None, watermark: int) -> int | None:
        times = [t for t, _ in self.rows if (after is None or t > after) and t <= watermark]
        return min(times) if times else None

    def on_watermark(self, watermark: int) -> list[Post]:
        posts = []
        while self.delay_due and self.delay_due[0] <= watermark:
            posts.append(self.scan(self.delay_due.pop(0)))
        end = self._earliest(self.previous_end, watermark)
        while end is not None:
            while self.triggers and self.triggers[0] <= watermark:
                t = self.triggers.pop(0)
                if self.spec.delay:
                    self.delay_due.append(t + self.spec.delay)
                else:
                    posts.append(self.scan(t))
            self.previous_end = end
            end = self._earliest(end, watermark)
        return _posted(posts)


class SessionWindow(PaneWindowBase):
    """SESSIONWINDOW(unit, max_duration, timeout) (kuiper.md §5; the second
    parameter is the maximum duration, the third the timeout). A pane holds
    the rows before its end; sessions never post an empty pane.

    Processing time: the first row after a closed session starts a timeout
    timer (and the session's reported start, its time); each row resets the
    timer to its time + timeout; when it fires with rows held, the pane of all
    of them closes at the firing time and the timer is gone (with no rows held
    it stays, so the next row only resets it and keeps the start). Checks at
    the aligned ticks of `max_duration`: a tick t cuts the session when rows
    are held and `t - first row >= max_duration`; after a cut the next pane's
    start is the tick (the timer is still there).

    Event time (`getNextSessionWindow`): the session ends at the first gap
    `> timeout` between consecutive rows (at the earlier row + timeout), or at
    a check tick passed by a later row with `tick - max_duration > first row`
    (the ticks start at the aligned end of the first row and advance one
    `max_duration` per row), or when `watermark - last row > timeout`. Its
    start is its first row's time, or after a cut the tick."""

    REASONS = Reasons(**PaneWindowBase.SHARED,
                      pane="the session ends at the first gap > timeout between consecutive rows",
                      timeout="when it fires with rows held, the pane of all of them closes at the firing time",
                      cut="a tick t cuts the session when rows are held and t - first row >= max_duration",
                      event_cut="or at a check tick passed by a later row")

    def __init__(self, spec: Session, now: int, query: Statement | None = None):
        super().__init__(spec, now, query)
        self.order = 0
        self.timer = False  # eKuiper's timeoutTicker is set
        self.timeout_due: int | None = None
        self.timeout_order = 0
        self.last_ticked = False
        if not spec.event_time:
            self.ticks = _Ticks(spec.max_duration, self._align(spec.max_duration // spec.unit), now)
            self.tick_order = 0  # scheduled at creation: before any reset
            for end in self.ticks.immediate:
                self.check(end)

    def take(self, t: int, event: Event, now: int) -> list[Post]:
        self.rows.append((t, event))
        if not self.spec.event_time:
            self.order += 1
            self.timeout_due, self.timeout_order = t + self.spec.timeout, self.order
            if not self.timer:
                self.timer = True
                self.trigger_time = t
        return []

    def scan(self, end: int, why=None) -> Post | None:
        content = [r for r in self.rows if r[0] < end]
        self.rows = [r for r in self.rows if r[0] >= end]
        start = self.trigger_time if self.trigger_time is not None and self.trigger_time > 0 else end - self.spec.max_duration
        self.trigger_time = end
        return self.emit(content, start, end, why)

    def check(self, tick: int) -> Post | None:
        if self.rows and tick - self.rows[0][0] >= self.spec.max_duration:
            return self.scan(tick, self.REASONS.cut)
        return None

    def next_timer(self) -> int | None:
        if self.spec.event_time:
            return None
        dues = [self.ticks.due] + ([self.timeout_due] if self.timeout_due is not None else [])
        return min(dues)

    def on_timer(self, now: int) -> list[Post]:
        timers = [(self.ticks.due, self.tick_order, "tick")]
        if self.timeout_due is not None:
            timers.append((self.timeout_due, self.timeout_order, "timeout"))
        posts = []
        for due, _, which in sorted(t for t in timers if t[0] <= now):
            if which == "tick":
                posts += [self.check(end) for end in self.ticks.fire(now)]
                self.order += 1
                self.tick_order = self.order
            else:
                self.timeout_due = None
                if self.rows:
                    posts.append(self.scan(now, self.REASONS.timeout))
                    self.timer = False
        return _posted(posts)

    def _next_session(self, watermark: int) -> tuple[int | None, bool]:
        if not self.rows:
            return None, False
        timeout, duration = self.spec.timeout, self.spec.max_duration
        first = self.rows[0][0]
        tick = self._align(duration // self.spec.unit)(first)
        previous = None
        for t, _ in self.rows:
            end = None
            if previous is not None and t - previous > timeout:
                end = previous + timeout
            if t > tick:
                if tick - duration > first and (end is None or tick < end):
                    return tick, True
                tick += duration
            if end is not None:
                return end, False
            previous = t
        if previous is not None and watermark - previous > timeout:
            return previous + timeout, False
        return None, False

    def on_watermark(self, watermark: int) -> list[Post]:
        posts = []
        end, ticked = self._next_session(watermark)
        while end is not None and end <= watermark:
            if not self.last_ticked:
                self.trigger_time = self.rows[0][0]
            posts.append(self.scan(end, self.REASONS.event_cut if ticked else None))
            self.last_ticked = ticked
            end, ticked = self._next_session(watermark)
        return _posted(posts)


class CountWindow(PaneWindowBase):
    """COUNTWINDOW(n[, m]) (kuiper.md §5; seed "Count window"): rows after the
    FILTER are counted; at every m-th row (m defaults to n) the count starts
    again and, if at least n rows are held, one pane of the last n rows (in
    arrival order) is posted and the last n - 1 stay; with fewer than n rows
    nothing is posted. Seed: "When event 6 is received, currently totally has
    6 events, which is great than window size 5, it produces a window that
    include latest 5 events." Start and end are both the clock at the pane.
    Processing time only."""

    REASONS = Reasons(**PaneWindowBase.SHARED, pane="one pane of the last n rows")

    def __init__(self, spec: CountPanes, now: int, query: Statement | None = None):
        super().__init__(spec, now, query)
        self.count = 0

    def take(self, t: int, event: Event, now: int) -> list[Post]:
        self.rows.append((t, event))
        self.count += 1
        if self.count % self.spec.every:
            return []
        self.count = 0
        size = self.spec.size
        if len(self.rows) < size:
            return []
        pane = self.rows[-size:]
        self.rows = self.rows[len(self.rows) - size + 1:]
        return _posted([self.emit(pane, now, now)])


#: spec class -> pane window class
WINDOWS: dict[type, type] = {
    Tumbling: TumblingWindow,
    Hopping: HoppingWindow,
    Sliding: SlidingWindow,
    Session: SessionWindow,
    CountPanes: CountWindow,
}


def query_window(spec: Statement, now: int):
    """The window of a query: its pane window, posting the query's rows."""
    return WINDOWS[type(spec.window)](spec.window, now, spec)
