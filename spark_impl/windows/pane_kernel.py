"""The sequential pane kernel: eKuiper's sliding and session windows, every
event-time pane window, and the processing-time tumbling and hopping traces
whose ticks re-align (a jump, or a creation at or past its aligned end),
replayed per trace in a grouped Arrow task (`panes.py` plans it). The rules
are kuiper.md §1-§5 and the decisions in oracle/windows/panes.py; this
module states them as its own state and loop, derived below. The clock is
`replay.py`'s: a machine here answers `due()`, `fire(now)`, `arrive(row,
now)`, and leaves what a unit of work posts in `posts`, each a closed pane
`(rows, start, end)` (rows as (time, row) pairs, in pane order) or an error
`("error", message)`.

Why a kernel and not window functions: a tick 50 ms late re-aligns every
later end; OVER (WHEN ...) reads its own earlier hits; where a session ends
decides where the next one's checks and start lie. Each is a fold.

Admission (kuiper.md §5 FILTER). A row enters a window iff its FILTER, then a
pushed-down WHERE, is true for it, read at its time (the arrival clock, or the
event time); the first that errs is posted as an error and the row stays out.
In event time a row meets them as it enters (eKuiper's filter sits behind
the watermark): its error is posted in the unit of the rise that lets it in.
A reported start <= 0 is the end minus the window's length (size; sliding:
size + delay; session: the maximum duration).

Alignment (kuiper.md §2, `aligned_end`). For a unit u and count k the field f
of the time's local wall clock one level below the unit's enclosing unit
(second of the minute, minute of the hour, hour of the day, ms of the second)
gives the gap `k` if f <= k, else `k * (f // k + 1)`; the end is the enclosing
unit's start plus gap * u, an absolute span; days: the local midnight k days
on. The enclosing unit's start is a wall time that Go's `time.Date` turns into
an instant: Go looks up the zone's offset at the wall time read as if it were
UTC, and keeps it when the instant it gives lies in that same offset's
period, else takes the offset in force at that instant (`_wall_to_instant`).

Processing-time ticks (`Ticks`), as arithmetic on the clock. A *run* begins
where a first timer is set, at a clock `a` (the creation, or a re-alignment):
its first end is `E = aligned(a)`. If E > a the first timer is due at E;
else it fires at once at a (kuiper.md §2 quirk (a)). When the first timer
fires at a clock f (its due time on a walk, a jump's target), its pane ends at
E, whatever f is; the ticker then starts at f: its n-th tick is due at
`f + n*i` and expects the end `E + n*i` (i: the interval). A tick fired at a
clock c closes the pane of its expected end when `|c - end| < 50` ms; else it
is skipped and a new run begins at c (`realigned` lists the runs). So on a
walk every tick of a run is on time, or (a run whose first timer fired at
once, `a - E >= 50`) its first tick re-aligns; a jump fires the pending tick
once at its target, and a ticker that was not skipped goes on at the next
multiple of i from f after the target (Go drops the ticks a late receiver
missed). The pane a first timer closes at the creation itself is not posted
(no trace item causes it) but counts as the previous pane.

* Tumbling (`TickedPanes`): pane = the held rows with time < end, which
  leave; reported start = the previous pane's end (the creation before the
  first).
* Hopping (`TickedPanes`): with T the previous trigger (previous pane's end;
  the creation before the first), pane = the held rows in `[T + hop - size,
  end)`, reported start `T - hop`; rows below the left bound leave for good.
* Session (`TimedSessions`): the ticks are checks (interval: the maximum
  duration D). A check at end e cuts the session when rows are held and
  `e - first held row >= D`: the pane of the rows before e, and the next
  reported start is e. A timeout timer: the first row when there is none
  sets it (and the reported start, its time); every row re-arms it at its time
  + timeout; firing at c with rows held it closes the pane of all of them at
  c and is gone; with none held it stays (the next row re-arms it, the start
  kept). A check and a timeout due at one instant fire in the order they were
  scheduled: a check is scheduled at the ticker's previous firing (a first
  timer where its run began), a timeout at its row's arrival.
* Sliding (`TimedSlides`): an admitted row that meets OVER (WHEN ...) (every
  row without one; the condition reads the time and number of its earlier
  hits) triggers at its time t: without a delay the pane of the held rows in
  `[t - size, t]` at once, with a delay d a timer due at t + d whose pane is
  the rows in `[t - size, t + d)`, reported `[t - size, t + d]`.

Event time (`Watermark` in front of an event-time window). The watermark W
starts at 0 and is `max(largest event time seen, tolerance) - tolerance`; a
row below W is late: posted as an error, dropped (Spark's planner drops these
before the kernel; the check stays so the kernel is whole). The others wait,
sorted by (event time, arrival); when an arrival raises W, the waiting rows
with event time <= W are admitted and enter, in that order, and the window
then closes what W reaches, all in that arrival's unit. No timer.

* Tumbling, hopping (`WatermarkPanes`): the first entering row (time r0) fixes
  the ends `e_k = aligned(r0) + k*i`; W closes every e_k <= W not yet closed:
  tumbling the rows before e_k not yet posted, hopping the rows in
  `[e_k - size, e_k)`; reported start: the previous end, r0 before the first
  (tumbling), or that minus the hop (hopping). Empty panes are posted.
* Sliding (`WatermarkSlides`): a row triggers as it enters (OVER WHEN, in
  event-time order). At a rise, first the delayed panes that an earlier rise
  scheduled and W reaches (t + d <= W); then, if an entered row is newer
  than the newest one the last handling reached, every trigger not handled
  yet is handled, in event-time order: without delay the pane of every
  entered row in `[t - size, t]`, with a delay a pane scheduled for t + d.
  (So a trigger tying the newest handled row's time waits for a newer row:
  eKuiper walks the trigger times past the last one it handled.)
* Session (`WatermarkSessions`): over the entered rows r_0 <= r_1 <= ...
  of the open session, the session is one run of gaps at most the timeout:
  it ends at r_j + timeout where `r_{j+1} - r_j > timeout`, or where a check
  cuts it first, or at the last row + timeout once `W - last > timeout`. The
  checks: c starts at aligned(r_0); each row r with r > c passes c, and cuts
  the session at c if `c - D > r_0` (strictly earlier than the gap end it
  would have), else c moves on by one D. The pane holds the rows before the
  end; the next session's start is that end after a cut, else its first row.
"""

from __future__ import annotations

import bisect
import json
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from oracle.errors import InvalidTrace
from oracle.model import DAY, HOUR, MILLISECOND, MINUTE, SECOND, Hopping, Session, Sliding, Tumbling
from spark_impl.windows.pane_query import Failure, RowEval, evaluate_pane, go_type_name, row_holds, row_passes, verdict
from spark_impl.windows.replay import replay

#: eKuiper skips a tick whose clock is this many ms or more away from its expected end
SKIP_AT_MS = 50

# --------------------------------------------------------------------------- alignment (kuiper.md §2)


def _offset_s(instant_s: int, zone: ZoneInfo) -> int:
    """The zone's UTC offset in force at an instant, in seconds."""
    return int(datetime.fromtimestamp(instant_s, zone).utcoffset().total_seconds())


def _wall_to_instant(zone: ZoneInfo, year: int, month: int, day: int, hour: int = 0, minute: int = 0,
                     second: int = 0) -> int:
    """Go's `time.Date(year, month, day, hour, minute, second, 0, zone)` in ms
    (a day past the month's end runs on into the next month)."""
    wall = datetime(year, month, 1, tzinfo=timezone.utc) + timedelta(days=day - 1, hours=hour, minutes=minute,
                                                                      seconds=second)
    read_as_utc = int(wall.timestamp())
    guess = _offset_s(read_as_utc, zone)
    # Go keeps the guess when read_as_utc - guess lies in the guessed offset's period; else the offset in force there
    return (read_as_utc - _offset_s(read_as_utc - guess, zone)) * 1000


#: the local field a unit counts in, and the wall fields its enclosing unit's start keeps
_COUNTED = {MILLISECOND: ("ms", 6), SECOND: ("second", 5), MINUTE: ("minute", 4), HOUR: ("hour", 3)}
#: 10000-01-01 UTC, the latest end the calendar the ends are aligned in gives
_CALENDAR_END_MS = 253_402_300_800_000


def aligned_end(t: int, count: int, unit: int, zone: ZoneInfo) -> int:
    """eKuiper's `getAlignedWindowEndTime` of the time t (ms) for `count`
    units in `zone` (module docstring, "Alignment"); an end past the year
    9999 is an `InvalidTrace`."""
    try:
        local = datetime.fromtimestamp(t // 1000, zone)
        wall = (local.year, local.month, local.day, local.hour, local.minute, local.second)
        if unit == DAY:
            end = _wall_to_instant(zone, wall[0], wall[1], wall[2] + count)
        else:
            name, kept = _COUNTED[unit]
            field = t % 1000 if name == "ms" else getattr(local, name)
            gap = count if field <= count else count * (field // count + 1)
            end = _wall_to_instant(zone, *wall[:kept]) + gap * unit
    except (OverflowError, ValueError, OSError):
        end = None
    if end is None or end > _CALENDAR_END_MS:
        raise InvalidTrace(f"eKuiper aligns window ends to the calendar, which ends with the year 9999: "
                           f"no end after {t} ms")
    return end


# --------------------------------------------------------------------------- processing-time ticks


class Ticks:
    """eKuiper's processing-time ticks over one interval (module docstring,
    "Processing-time ticks"). State: the pending tick, `due` (its clock),
    `expects` (its pane end), `first` (whether it is a run's first timer) and
    `since` (the clock it was scheduled at); `realigned`, the runs so far as
    (clock, first end). `fire(now)` returns the pane ends a firing closes."""

    __slots__ = ("interval", "align", "due", "expects", "first", "since", "realigned", "at_creation")

    def __init__(self, interval: int, align, created: int):
        self.interval, self.align = interval, align
        self.realigned: list[tuple[int, int]] = []
        self.at_creation = self._begin(created)

    def _begin(self, at: int) -> list[int]:
        """A run from clock `at`: its first timer, or its pane at once."""
        end = self.align(at)
        self.realigned.append((at, end))
        if end > at:
            self.due, self.expects, self.first, self.since = end, end, True, at
            return []
        self._tick_from(at, end)
        return [end]

    def _tick_from(self, clock: int, end: int) -> None:
        self.due, self.expects, self.first, self.since = clock + self.interval, end + self.interval, False, clock

    def fire(self, now: int) -> list[int]:
        end = self.expects
        if self.first:
            self._tick_from(now, end)
            return [end]
        if abs(now - end) < SKIP_AT_MS:
            missed = (now - self.due) // self.interval
            self.due, self.expects, self.since = self.due + (missed + 1) * self.interval, end + self.interval, now
            return [end]
        return self._begin(now)


def _ticks(spec, interval: int, created: int) -> Ticks:
    zone, count = ZoneInfo(spec.time_zone), interval // spec.unit
    return Ticks(interval, lambda t: aligned_end(t, count, spec.unit, zone), created)


# --------------------------------------------------------------------------- what every window shares


class _Window:
    """Admission and posting (module docstring): `conditions`, the FILTER then a
    pushed-down WHERE; `length`, what a start <= 0 is replaced from."""

    def __init__(self, conditions: tuple, length: int):
        self.conditions, self.length = conditions, length
        self.posts: list[tuple] = []

    def admits(self, row: dict, time: int) -> bool:
        for condition in self.conditions:
            passed = row_passes(condition, row, time)
            if passed is not True:
                if isinstance(passed, Failure):
                    self.posts.append(("error", passed.message))
                return False
        return True

    def post(self, rows: list, start: int, end: int) -> None:
        self.posts.append((rows, start if start > 0 else end - self.length, end))


class _Trigger:
    """OVER (WHEN c): whether an admitted row triggers, its hits so far as
    (time of the last, count) (none: every row triggers)."""

    def __init__(self, condition):
        self.condition, self.hits = condition, (0, 0)

    def __call__(self, row: dict, time: int) -> bool:
        if self.condition is None:
            return True
        if not row_holds(self.condition, row, self.hits, time):
            return False
        self.hits = (time, self.hits[1] + 1)
        return True


# --------------------------------------------------------------------------- processing time


class TickedPanes(_Window):
    """Processing-time TUMBLINGWINDOW / HOPPINGWINDOW (module docstring):
    `held`, the admitted rows in arrival order; `trigger`, the previous pane's
    end (the creation before the first)."""

    def __init__(self, spec, conditions: tuple, created: int):
        super().__init__(conditions, spec.size)
        self.size, self.hop = spec.size, spec.hop if isinstance(spec, Hopping) else None
        self.held: list[tuple[int, dict]] = []
        self.trigger = created
        self.ticks = _ticks(spec, self.hop or spec.size, created)
        for end in self.ticks.at_creation:
            self._close(end)
        self.posts.clear()  # the pane at the creation: no item causes it

    def due(self) -> int:
        return self.ticks.due

    def fire(self, now: int) -> None:
        for end in self.ticks.fire(now):
            self._close(end)

    def arrive(self, row: dict, now: int) -> None:
        if self.admits(row, now):
            self.held.append((now, row))

    def _close(self, end: int) -> None:
        if self.hop is None:
            start, low = self.trigger, None
        else:
            start, low = self.trigger - self.hop, self.trigger + self.hop - self.size
            self.held = [tr for tr in self.held if tr[0] >= low]
        pane = [tr for tr in self.held if tr[0] < end]
        if self.hop is None:
            self.held = self.held[len(pane):]
        self.trigger = end
        self.post(pane, start, end)


class TimedSessions(_Window):
    """Processing-time SESSIONWINDOW (module docstring): `held` rows, the
    reported `start`, the timeout timer `timeout_at` (None: none; `SPENT`: it
    fired with no row held and stays) with `timeout_since`."""

    SPENT = -1

    def __init__(self, spec, conditions: tuple, created: int):
        super().__init__(conditions, spec.max_duration)
        self.longest, self.timeout = spec.max_duration, spec.timeout
        self.held: list[tuple[int, dict]] = []
        self.start = created
        self.timeout_at: int | None = None
        self.timeout_since = created
        self.ticks = _ticks(spec, spec.max_duration, created)  # a check at the creation finds no row

    def due(self) -> int:
        pending = self.timeout_at if self.timeout_at is not None and self.timeout_at != self.SPENT else None
        return self.ticks.due if pending is None else min(self.ticks.due, pending)

    def fire(self, now: int) -> None:
        timers = []
        if self.ticks.due <= now:
            timers.append((self.ticks.due, self.ticks.since, 0))
        if self.timeout_at is not None and self.timeout_at != self.SPENT and self.timeout_at <= now:
            timers.append((self.timeout_at, self.timeout_since, 1))
        for _, _, which in sorted(timers):
            if which == 0:
                for end in self.ticks.fire(now):
                    self._check(end)
            elif self.held:
                self.post(self.held, self.start, now)
                self.held, self.timeout_at = [], None
            else:
                self.timeout_at = self.SPENT

    def arrive(self, row: dict, now: int) -> None:
        if not self.admits(row, now):
            return
        if self.timeout_at is None:
            self.start = now
        self.timeout_at, self.timeout_since = now + self.timeout, now
        self.held.append((now, row))

    def _check(self, end: int) -> None:
        if self.held and end - self.held[0][0] >= self.longest:
            cut = [tr for tr in self.held if tr[0] < end]
            self.held = self.held[len(cut):]
            self.post(cut, self.start, end)
            self.start = end


class TimedSlides(_Window):
    """Processing-time SLIDINGWINDOW (module docstring): `held` rows (those
    no pending or later pane can reach are dropped), `delayed` panes as
    (due, trigger time) in due order."""

    def __init__(self, spec, conditions: tuple, created: int):
        super().__init__(conditions, spec.size + spec.delay)
        self.size, self.delay = spec.size, spec.delay
        self.triggers = _Trigger(spec.trigger)
        self.held: list[tuple[int, dict]] = []
        self.delayed: list[tuple[int, int]] = []

    def due(self) -> int | None:
        return self.delayed[0][0] if self.delayed else None

    def fire(self, now: int) -> None:
        n = bisect.bisect_right(self.delayed, (now, float("inf")))
        fired, self.delayed = self.delayed[:n], self.delayed[n:]
        for due, t in fired:  # every held row is older than `due`: it would have fired before a later one came
            self.post(self.held[self._first_at(t - self.size):], t - self.size, due)

    def _first_at(self, time: int) -> int:
        return bisect.bisect_left(self.held, time, key=lambda tr: tr[0])

    def arrive(self, row: dict, now: int) -> None:
        if not self.admits(row, now):
            return
        # a pending pane's trigger is later than now - delay: nothing older than this is read again
        del self.held[:self._first_at(now - self.size - self.delay)]
        self.held.append((now, row))
        if self.triggers(row, now):
            if self.delay:
                self.delayed.append((now + self.delay, now))
            else:
                self.post(self.held[self._first_at(now - self.size):], now - self.size, now)


# --------------------------------------------------------------------------- event time


class Watermark:
    """Event time in front of a window (module docstring, "Event time"):
    `waiting` rows as (event time, arrival number, row), `mark` the watermark,
    `top` the largest event time seen. The window (`WatermarkPanes`, ...)
    takes `enter(row, time)` per admitted row and `close(mark)` per rise."""

    def __init__(self, window, timestamp: str, tolerance: int):
        self.window, self.timestamp, self.tolerance = window, timestamp, tolerance
        self.waiting: list[tuple[int, int, dict]] = []
        self.mark, self.top, self.arrived = 0, None, 0

    @property
    def posts(self) -> list:
        return self.window.posts

    def due(self) -> None:
        return None

    def fire(self, now: int) -> None:  # pragma: no cover - no timer is ever due
        pass

    def arrive(self, row: dict, now: int) -> None:
        ts = row.get(self.timestamp)
        if isinstance(ts, float) and ts.is_integer():
            ts = int(ts)
        if not isinstance(ts, int) or isinstance(ts, bool):
            raise InvalidTrace(f"event {row['id']!r}: timestamp property {self.timestamp!r} is {ts!r}, "
                               "not a whole number of ms")
        if ts < self.mark:
            self.window.posts.append(("error", f"late row: event time {ts} ms is before the watermark {self.mark} ms"))
            return
        self.arrived += 1
        bisect.insort(self.waiting, (ts, self.arrived, row), key=lambda w: (w[0], w[1]))
        self.top = ts if self.top is None else max(self.top, ts)
        mark = max(self.top, self.tolerance) - self.tolerance
        if mark <= self.mark:
            return
        self.mark = mark
        n = bisect.bisect_right(self.waiting, mark, key=lambda w: w[0])
        released, self.waiting = self.waiting[:n], self.waiting[n:]
        for t, _, r in released:
            if self.window.admits(r, t):
                self.window.enter(r, t)
        self.window.close(mark)


class WatermarkPanes(_Window):
    """Event-time TUMBLINGWINDOW / HOPPINGWINDOW (module docstring): `rows`
    entered in event-time order, `first` (r0) and `k`, the next pane's index."""

    def __init__(self, spec, conditions: tuple, created: int):
        super().__init__(conditions, spec.size)
        self.size, self.hop = spec.size, spec.hop if isinstance(spec, Hopping) else None
        self.interval = self.hop or spec.size
        zone, count = ZoneInfo(spec.time_zone), self.interval // spec.unit
        self.align = lambda t: aligned_end(t, count, spec.unit, zone)
        self.rows: list[tuple[int, dict]] = []
        self.first: int | None = None
        self.k = 0

    def enter(self, row: dict, time: int) -> None:
        if self.first is None:
            self.first, self.e0 = time, self.align(time)
        self.rows.append((time, row))

    def close(self, mark: int) -> None:
        if self.first is None:
            return
        while (end := self.e0 + self.k * self.interval) <= mark:
            trigger = self.first if self.k == 0 else end - self.interval
            if self.hop is None:
                n = bisect.bisect_left(self.rows, end, key=lambda tr: tr[0])
                pane, self.rows = self.rows[:n], self.rows[n:]
                self.post(pane, trigger, end)
            else:
                low = bisect.bisect_left(self.rows, end - self.size, key=lambda tr: tr[0])
                high = bisect.bisect_left(self.rows, end, key=lambda tr: tr[0])
                self.post(self.rows[low:high], trigger - self.hop, end)
                # the next pane starts at end + hop - size
                self.rows = self.rows[bisect.bisect_left(self.rows, end + self.hop - self.size, key=lambda tr: tr[0]):]
            self.k += 1


class WatermarkSlides(_Window):
    """Event-time SLIDINGWINDOW (module docstring): `rows` entered,
    `pending` triggers not handled yet, `reached` the newest row the last
    handling saw, `scheduled` delayed panes as (due, t)."""

    def __init__(self, spec, conditions: tuple, created: int):
        super().__init__(conditions, spec.size + spec.delay)
        self.size, self.delay = spec.size, spec.delay
        self.triggers = _Trigger(spec.trigger)
        self.rows: list[tuple[int, dict]] = []
        self.pending: list[int] = []
        self.reached: int | None = None
        self.scheduled: list[tuple[int, int]] = []

    def enter(self, row: dict, time: int) -> None:
        self.rows.append((time, row))
        if self.triggers(row, time):
            self.pending.append(time)

    def _rows(self, low: int, high: int, closed: bool) -> list:
        key = lambda tr: tr[0]  # noqa: E731
        a = bisect.bisect_left(self.rows, low, key=key)
        b = (bisect.bisect_right if closed else bisect.bisect_left)(self.rows, high, key=key)
        return self.rows[a:b]

    def close(self, mark: int) -> None:
        while self.scheduled and self.scheduled[0][0] <= mark:
            due, t = self.scheduled.pop(0)
            self.post(self._rows(t - self.size, due, False), t - self.size, due)
        if not self.rows or (self.reached is not None and self.rows[-1][0] <= self.reached):
            return  # no row newer than those the last handling reached: the triggers wait
        for t in self.pending:
            if self.delay:
                self.scheduled.append((t + self.delay, t))
            else:
                self.post(self._rows(t - self.size, t, True), t - self.size, t)
        self.pending, self.reached = [], self.rows[-1][0]
        # a later pane's trigger is a scheduled one or no older than `reached`: older rows are read no more
        oldest = min([self.reached, *(t for _, t in self.scheduled)]) - self.size
        del self.rows[:bisect.bisect_left(self.rows, oldest, key=lambda tr: tr[0])]


class WatermarkSessions(_Window):
    """Event-time SESSIONWINDOW (module docstring): `rows`, the open
    session's entered rows; `cut_at`, the previous pane's end when a check
    cut it (its start then), else None; `scanned`, how far `_end` read."""

    def __init__(self, spec, conditions: tuple, created: int):
        super().__init__(conditions, spec.max_duration)
        self.longest, self.timeout = spec.max_duration, spec.timeout
        zone, count = ZoneInfo(spec.time_zone), spec.max_duration // spec.unit
        self.align = lambda t: aligned_end(t, count, spec.unit, zone)
        self.rows: list[tuple[int, dict]] = []
        self.cut_at: int | None = None
        self.scanned: tuple[int, int, int] | None = None

    def enter(self, row: dict, time: int) -> None:
        self.rows.append((time, row))

    def _end(self, mark: int) -> tuple[int, bool] | None:
        """Where the open session ends, and whether a check cuts it; None: open.
        The scan goes on from `scanned` (rows seen, check, last row's time):
        rows that entered later cannot move an end found among earlier ones."""
        first = self.rows[0][0]
        seen, check, previous = self.scanned or (0, self.align(first), None)
        for t, _ in self.rows[seen:]:
            gap_end = previous + self.timeout if previous is not None and t - previous > self.timeout else None
            if t > check:
                if check - self.longest > first and (gap_end is None or check < gap_end):
                    return check, True
                check += self.longest
            if gap_end is not None:
                return gap_end, False
            seen, previous = seen + 1, t
            self.scanned = (seen, check, previous)
        if mark - previous > self.timeout:
            return previous + self.timeout, False
        return None

    def close(self, mark: int) -> None:
        while self.rows and (found := self._end(mark)) is not None:
            end, cut = found
            n = bisect.bisect_left(self.rows, end, key=lambda tr: tr[0])
            pane, self.rows = self.rows[:n], self.rows[n:]
            self.post(pane, self.cut_at if self.cut_at is not None else pane[0][0], end)
            self.cut_at, self.scanned = (end if cut else None), None


#: per kind: (processing-time machine, event-time window)
MACHINES = {Tumbling: (TickedPanes, WatermarkPanes), Hopping: (TickedPanes, WatermarkPanes),
            Sliding: (TimedSlides, WatermarkSlides), Session: (TimedSessions, WatermarkSessions)}


def machine_for(spec, conditions: tuple, created: int):
    """The replay machine of a pane window created at `created`."""
    timed, watermarked = MACHINES[type(spec)]
    if spec.timestamp is None:
        return timed(spec, conditions, created)
    return Watermark(watermarked(spec, conditions, created), spec.timestamp, spec.late_tolerance)


# --------------------------------------------------------------------------- the grouped-map function


def event_row(id_, properties, json_names: frozenset[str]) -> dict:
    """An event as the evaluators read it: its id and its non-null
    properties ((name, value) pairs; a JSON text column's value decoded)."""
    row = {"id": id_}
    for n, v in properties:
        if v is not None:
            row[n] = json.loads(v) if n in json_names else v
    return row


def pane_output(timed: list, pane: tuple[int, int], query, after_where) -> list[tuple]:
    """A closed pane's output rows, each (side, pos, id, row, error, bounds),
    from its (time, row) pairs in pane order: the rows (`insert`, pos 0, 1,
    ...), the query's output rows (`row`, a dict of its fields; `id` None),
    an empty pane's one row (side null; a query's pane of no output row too).
    A WHERE after the window keeps the rows it holds for (an aggregate in it
    reads every row of the pane; no window bounds are in reach, as in
    eKuiper's filter valuer); the first error of the WHERE or the query is
    the pane's one `error` row; none when the WHERE leaves no row or HAVING
    keeps nothing (not posted)."""
    def failed(message):
        return [("error", 0, None, None, message, None)]

    if after_where is not None:
        whole, whole_times = [r for _, r in timed], [t for t, _ in timed]
        tests = [verdict(RowEval(r, group=whole, time=t, group_times=whole_times).of(after_where), "Where")
                 for t, r in timed]
        failure = next((f for f in tests if isinstance(f, Failure)), None)
        if failure is not None:
            return failed(failure.message)
        timed = [tr for tr, keep in zip(timed, tests) if keep]
        if not timed:
            return []
    rows = [r for _, r in timed]
    values = None
    if query is not None:
        values = evaluate_pane(query, rows, pane, [t for t, _ in timed])
        if isinstance(values, Failure):
            return failed(values.message)
        if values is None:
            return []
    out = [("insert", n, r["id"], None, None, pane) for n, r in enumerate(rows)]
    if values:
        out += [("insert", n, None, row, None, pane) for n, row in enumerate(values)]
    if not rows and not values:
        out.append((None, None, None, None, None, pane))
    return out


#: the kernel's columns before the fields (`field_column`) of a query's rows
KERNEL_COLUMNS = ("trace_id", "seq", "phase", "time", "ordinal", "side", "pos", "id", "error", "wstart", "wend")


def field_column(n: int) -> str:
    """The column of a query's n-th field (the family contract's `#field<n>`)."""
    return f"#field{n}"


class FieldCells:
    """A query's output rows as its fields' cells (`fields`: (name, kind)
    pairs, `pane_query.field_kinds`): a `json` field's value as JSON text,
    an integer in a `double` field as a float; a value of another kind than
    its field's is an error naming the field (the declared types and the
    evaluator disagree), never a null."""

    _TAKES = {"long": (int,), "double": (float, int), "string": (str,), "boolean": (bool,), "null": ()}

    def __init__(self, fields: tuple[tuple[str, str], ...]):
        self.fields = fields

    def cells(self, row: dict | None) -> list:
        if row is None:
            return [None] * len(self.fields)
        return [self._cell(name, kind, row.get(name)) for name, kind in self.fields]

    def _cell(self, name: str, kind: str, value):
        if value is None:
            return None
        if kind == "json":
            return json.dumps(value, sort_keys=True, separators=(",", ":"))
        if type(value) not in self._TAKES[kind]:
            raise TypeError(f"the query's field {name!r} is declared {kind}, but a row gives it "
                            f"{go_type_name(value)} {value!r}")
        return float(value) if kind == "double" else value


class KernelRows:
    """Rows in the kernel's columns (`KERNEL_COLUMNS`, then a query's fields),
    as an Arrow table (`arrow_schema`)."""

    def __init__(self, fields: tuple[tuple[str, str], ...] = ()):
        self.fields, self.cells = fields, FieldCells(fields)
        self.columns = {c: [] for c in KERNEL_COLUMNS}
        self.by_field: list[list] = [[] for _ in fields]

    def add(self, trace, seq, phase, time, ordinal, side, pos, id_, row, error, bounds) -> None:
        for c, v in zip(KERNEL_COLUMNS, (trace, seq, phase, time, ordinal, side, pos, id_, error,
                                         bounds[0] if bounds else None, bounds[1] if bounds else None)):
            self.columns[c].append(v)
        for column, cell in zip(self.by_field, self.cells.cells(row)):
            column.append(cell)

    def table(self):
        import pyarrow as pa

        data = {**self.columns, **{field_column(n): v for n, v in enumerate(self.by_field)}}
        return pa.table(data, schema=arrow_schema(self.fields))


class _Output:
    """The kernel's output rows, filled unit by unit: a unit's posts get
    ordinals 0, 1, ... in posting order (a unit met twice goes on counting)."""

    def __init__(self, trace, query, after_where, fields):
        self.trace, self.query, self.after_where = trace, query, after_where
        self.rows = KernelRows(fields)
        self.unit, self.ordinal = None, 0

    def drain(self, posts: list, seq: int, phase: int, time: int) -> None:
        if not posts:
            return
        if self.unit != (seq, phase, time):
            self.unit, self.ordinal = (seq, phase, time), 0
        for post in posts:
            if post[0] == "error":
                self.rows.add(self.trace, seq, phase, time, self.ordinal, "error", 0, None, None, post[1], None)
                self.ordinal += 1
                continue
            rows, start, end = post
            out = pane_output(rows, (start, end), self.query, self.after_where)
            for side, pos, id_, row, error, pane in out:
                self.rows.add(self.trace, seq, phase, time, self.ordinal, side, pos, id_, row, error, pane)
            self.ordinal += bool(out)
        posts.clear()


def kernel(spec, query, pushed_where: bool, names: tuple[str, ...], json_names: frozenset[str],
           fields: tuple[tuple[str, str], ...] = ()):
    """The grouped-map function over one trace's items (any order): the
    trace's window (`machine_for`) replayed on its clock (`replay.replay`);
    `fields`, a query's fields and kinds (`pane_query.field_kinds`)."""
    after_where = None if (pushed_where or query is None) else query.where
    conditions = tuple(c for c in (spec.filter, query.where if pushed_where else None) if c is not None)

    def run(table):
        cols = {c: table.column(c).to_pylist() for c in ("seq", "kind", "time", "id", *names)}
        order = sorted(range(table.num_rows), key=cols["seq"].__getitem__)
        created = next((cols["time"][i] for i in order if cols["kind"][i] == "start"), 0)
        machine = machine_for(spec, conditions, created)
        out = _Output(table.column("trace_id")[0].as_py() if table.num_rows else None, query, after_where, fields)
        items = ((cols["seq"][i], cols["kind"][i], cols["time"][i],
                  event_row(cols["id"][i], ((n, cols[n][i]) for n in names), json_names)
                  if cols["kind"][i] == "event" else None) for i in order)
        replay(items, machine, lambda seq, phase, time: out.drain(machine.posts, seq, phase, time), created)
        return out.rows.table()

    return run


#: a field kind's Arrow type (Spark's: `panes.FIELD_TYPES`); JSON text and a field of no value: strings
_ARROW_KINDS = {"long": "int64", "double": "float64", "string": "string", "boolean": "bool_", "json": "string",
                "null": "string"}


def arrow_schema(fields: tuple[tuple[str, str], ...] = ()):
    """The kernel's Arrow schema: `KERNEL_COLUMNS`, then a query's fields."""
    import pyarrow as pa

    return pa.schema([("trace_id", pa.string()), ("seq", pa.int64()), ("phase", pa.int32()), ("time", pa.int64()),
                      ("ordinal", pa.int32()), ("side", pa.string()), ("pos", pa.int64()), ("id", pa.string()),
                      ("error", pa.string()), ("wstart", pa.int64()), ("wend", pa.int64()),
                      *((field_column(n), getattr(pa, _ARROW_KINDS[kind])()) for n, (_, kind) in enumerate(fields))])
