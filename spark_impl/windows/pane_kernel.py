"""The sequential pane kernel: eKuiper's sliding and session windows, and
the tumbling and hopping traces whose ticks re-align (a jump, or a
creation time that hits the alignment quirk 50 ms or more late), replayed
per trace in a grouped Arrow task (`panes.py` plans it; the rules are stated
there and in kuiper.md §5).

Why a kernel and not window functions:

* processing-time ticks: a tick 50 ms or more late (a jump) is skipped and
  the schedule aligned again from that instant, so every later end depends
  on which earlier ticks were late: a fold over the trace's jumps;
* sliding: `OVER (WHEN ...)` reads `last_hit_time()`/`last_hit_count()`, the
  time and number of the condition's earlier hits, which depend on its
  earlier values: a fold over the rows; without a condition, the rows a
  pane holds were pruned by earlier non-triggering rows (gcInputs);
* session: a session ends at its timeout or at an aligned check, and the
  next one's start and checks depend on where the last one ended.

(Count windows are not sequential: `panes.py` derives their panes from each
row's index. A closed pane's output rows, `pane_output`, are shared.)

A trace is one task; traces spread over the cluster. Output: one row per
pane row (side `insert`), per query output row (`values`), per empty pane
(side null; a query's empty output row list is `values` "[]"), and per late
row (side `error`); each with the unit (seq, phase, time), the pane's
`ordinal` within the unit and its bounds (`wstart`, `wend`).
"""

from __future__ import annotations

import bisect
import json
from datetime import datetime
from zoneinfo import ZoneInfo

from oracle.model import DAY, HOUR, MILLISECOND, MINUTE, SECOND, Hopping, Session, Sliding, Tumbling
from spark_impl.windows.pane_query import Failure, RowEval, evaluate_pane, row_holds, row_passes, to_json, verdict

#: a processing-time tick this many ms late or more is skipped and the ticks re-aligned
LATE_TICK = 50


def aligned_end(t: int, count: int, unit: int, zone: ZoneInfo) -> int:
    """eKuiper's getAlignedWindowEndTime in ms, on wall-clock seconds (t's
    local time read as UTC): the enclosing unit's start (the minute for
    seconds, the hour for minutes, the local day for hours, the second for
    ms) plus `gap` units, gap = count when t's count of units into it is at
    most count, else count * (that // count + 1); days: the local midnight
    `count` days after t's local day. The start goes back to an instant as
    Go's time.Date resolves a wall time (`_instant`)."""
    secs, ms = divmod(t, 1000)
    wall = secs + _offset(secs, zone)
    if unit == DAY:
        return _instant(wall - wall % _DAY_S + count * _DAY_S, zone) * 1000
    if unit == MILLISECOND:
        start, into = wall, ms
    else:
        enclosing = _ENCLOSING_S[unit]
        start, into = wall - wall % enclosing, wall % enclosing // (unit // 1000)
    gap = count if into <= count else count * (into // count + 1)
    return _instant(start, zone) * 1000 + gap * unit


_DAY_S = DAY // 1000
#: seconds of the unit a unit's first end is aligned within
_ENCLOSING_S = {SECOND: 60, MINUTE: 3600, HOUR: _DAY_S}


def _offset(instant: int, zone: ZoneInfo) -> int:
    """The zone's UTC offset (s) at an instant (s)."""
    return int(datetime.fromtimestamp(instant, zone).utcoffset().total_seconds())


def _instant(wall: int, zone: ZoneInfo) -> int:
    """Go's time.Date: a wall time (s, read as UTC) less the offset found at
    the wall time less the offset found at the wall time. A repeated or
    skipped wall time resolves by the offset's sign (the first of New York's
    repeated hour, the second of Berlin's), not by the time it came from."""
    return wall - _offset(wall - _offset(wall, zone), zone)


class Schedule:
    """Processing-time ticks: a first timer at the aligned end (fired at once
    when that is not after the time it is set), then a ticker every interval
    from when it fired; a tick's end is the last end + interval; a tick 50 ms
    or more from its end is skipped and the first timer set again from the
    tick's time. A late receiver misses the ticks it slept through."""

    def __init__(self, interval: int, align, now: int):
        self.interval, self.align = interval, align
        self.pending_first: int | None = None
        self.due = now
        self.end = 0
        self.origin = now
        self.at_creation = self._arm(now)

    def _arm(self, now: int) -> list[int]:
        end = self.align(now)
        if end > now:
            self.pending_first = self.due = end
            return []
        return self._start_ticker(end, now)

    def _start_ticker(self, end: int, now: int) -> list[int]:
        self.pending_first = None
        self.end, self.origin, self.due = end, now, now + self.interval
        return [end]

    def fire(self, now: int) -> list[int]:
        if self.pending_first is not None:
            return self._start_ticker(self.pending_first, now)
        self.end += self.interval
        self.due = self.origin + ((now - self.origin) // self.interval + 1) * self.interval
        if abs(now - self.end) < LATE_TICK:
            return [self.end]
        return self._arm(now)


class Machine:
    """One trace's pane window. `props(row)` is a row's fields; `post` collects
    the panes of the current unit."""

    def __init__(self, spec, query, start: int, pushed_where: bool):
        self.spec, self.query = spec, query
        where = query.where if query is not None else None
        self.admit = [c for c in (spec.filter, where if pushed_where else None) if c is not None]
        self.after_where = None if pushed_where else where
        self.event_time = spec.event_time
        self.rows: list = []  # (time, row dict)
        self.trigger: int | None = None if self.event_time else start
        self.watermark = 0
        self.largest: int | None = None
        self.held: list = []  # (ts, arrival no, row)
        self.arrivals = 0
        self.out: list = []  # panes of the current unit: (rows, start, end) or ("error", message)
        zone = ZoneInfo(spec.time_zone)
        self.align = (lambda count: (lambda t: aligned_end(t, count, spec.unit, zone)))

    # -- rows in
    def admitted(self, row, t: int) -> bool:
        """Whether the row enters; a filter that errs posts its error now (the
        row stays out), as eKuiper's window filter operator sends it on."""
        for condition in self.admit:
            passed = row_passes(condition, row, t)
            if isinstance(passed, Failure):
                self.out.append(("error", passed.message))
                return False
            if not passed:
                return False
        return True

    def arrive(self, row, now: int) -> None:
        if not self.event_time:
            if self.admitted(row, now):
                self.take(now, row, now)
            return
        ts = row.get(self.spec.timestamp)
        if isinstance(ts, float) and ts.is_integer():
            ts = int(ts)
        if isinstance(ts, bool) or not isinstance(ts, int):
            raise ValueError(f"event {row['id']!r} has no event time: its property {self.spec.timestamp!r} is "
                             f"{ts!r}, not whole milliseconds")
        if ts < self.watermark:
            self.out.append(("error", f"late row: event time {ts} ms is before the watermark {self.watermark} ms"))
            return
        self.arrivals += 1
        bisect.insort(self.held, (ts, self.arrivals, row), key=lambda h: (h[0], h[1]))
        self.largest = ts if self.largest is None else max(self.largest, ts)
        tol = self.spec.late_tolerance
        mark = max(self.largest, tol) - tol
        if mark <= self.watermark:
            return
        cut = bisect.bisect_right(self.held, mark, key=lambda h: h[0])
        ready, self.held = self.held[:cut], self.held[cut:]
        self.watermark = mark
        for ts, _, r in ready:
            if self.admitted(r, ts):
                if self.trigger is None:
                    self.trigger = ts
                self.take(ts, r, now)
        self.watermark_rose(mark)

    def take(self, t: int, row, now: int) -> None:
        self.rows.append((t, row))

    def watermark_rose(self, mark: int) -> None:
        pass

    def next_due(self) -> int | None:
        return None

    def fire(self, now: int) -> None:
        pass

    def pane(self, rows, start: int, end: int) -> None:
        self.out.append((list(rows), start, end))  # (time, row) pairs: event_time() reads the time


class TumblingMachine(Machine):
    def __init__(self, spec, query, start, pushed_where):
        super().__init__(spec, query, start, pushed_where)
        self.interval = spec.hop if isinstance(spec, Hopping) else spec.size
        self.next_end: int | None = None
        if not self.event_time:
            self.schedule = Schedule(self.interval, self.align(self.interval // spec.unit), start)
            for end in self.schedule.at_creation:
                self.close(end)
            self.out.clear()  # a pane at the creation: no trace item causes it, not posted

    def next_due(self):
        return None if self.event_time else self.schedule.due

    def fire(self, now):
        for end in self.schedule.fire(now):
            self.close(end)

    def close(self, end: int) -> None:
        spec = self.spec
        if isinstance(spec, Hopping):
            trig = self.trigger
            left = end - spec.size if self.event_time else trig + spec.hop - spec.size
            start = (trig if trig is not None else end) - spec.hop
            content = [r for r in self.rows if left <= r[0] < end]
            self.rows = [r for r in self.rows if r[0] >= left]
        else:
            start = self.trigger if self.trigger is not None else end - spec.size
            content = [r for r in self.rows if r[0] < end]
            self.rows = [r for r in self.rows if r[0] >= end]
        if start <= 0:
            start = end - spec.size
        self.trigger = end
        self.pane(content, start, end)

    def watermark_rose(self, mark):
        if self.next_end is None:
            if not self.rows:
                return
            self.next_end = self.align(self.interval // self.spec.unit)(min(t for t, _ in self.rows))
        while self.next_end <= mark:
            self.close(self.next_end)
            self.next_end += self.interval


class SlidingMachine(Machine):
    def __init__(self, spec, query, start, pushed_where):
        super().__init__(spec, query, start, pushed_where)
        self.hits = (0, 0)
        self.delayed: list = []  # (due, order)
        self.order = 0
        self.waiting: list = []  # event time: trigger times
        self.delay_ends: list = []
        self.last_end: int | None = None

    def triggered(self, t, row) -> bool:
        cond = self.spec.trigger
        if cond is None:
            return True
        if row_holds(cond, row, self.hits, time=t):
            self.hits = (t, self.hits[1] + 1)
            return True
        return False

    def take(self, t, row, now):
        self.rows.append((t, row))
        hit = self.triggered(t, row)
        if self.event_time:
            if hit:
                self.waiting.append(t)
            return
        delay = self.spec.delay
        if not hit:
            self.rows = [r for r in self.rows if r[0] >= t - self.spec.size - delay]
        elif delay:
            self.order += 1
            self.delayed.append((t + delay, self.order))
        else:
            self.close(t)

    def close(self, right: int) -> None:
        delay = self.spec.delay
        left = right - self.spec.size - delay
        if delay:
            content = [r for r in self.rows if left <= r[0] < right]
        else:
            content = [r for r in self.rows if left <= r[0] <= right]
        self.rows = [r for r in self.rows if r[0] >= left]
        self.pane(content, left, right)

    def next_due(self):
        return min(self.delayed)[0] if self.delayed else None

    def fire(self, now):
        due = sorted(d for d in self.delayed if d[0] <= now)
        self.delayed = [d for d in self.delayed if d[0] > now]
        for end, _ in due:
            self.close(end)

    def _first_after(self, after, mark):
        ts = [t for t, _ in self.rows if (after is None or t > after) and t <= mark]
        return min(ts) if ts else None

    def watermark_rose(self, mark):
        while self.delay_ends and self.delay_ends[0] <= mark:
            self.close(self.delay_ends.pop(0))
        end = self._first_after(self.last_end, mark)
        while end is not None:
            while self.waiting and self.waiting[0] <= mark:
                t = self.waiting.pop(0)
                if self.spec.delay:
                    self.delay_ends.append(t + self.spec.delay)
                else:
                    self.close(t)
            self.last_end = end
            end = self._first_after(end, mark)


class SessionMachine(Machine):
    def __init__(self, spec, query, start, pushed_where):
        super().__init__(spec, query, start, pushed_where)
        self.order = 0
        self.timer_set = False
        self.timeout_due: int | None = None
        self.timeout_order = 0
        self.cut_last = False
        if not self.event_time:
            self.schedule = Schedule(spec.max_duration, self.align(spec.max_duration // spec.unit), start)
            self.tick_order = 0
            for end in self.schedule.at_creation:
                self.check(end)
            self.out.clear()

    def take(self, t, row, now):
        self.rows.append((t, row))
        if not self.event_time:
            self.order += 1
            self.timeout_due, self.timeout_order = t + self.spec.timeout, self.order
            if not self.timer_set:
                self.timer_set = True
                self.trigger = t

    def close(self, end):
        content = [r for r in self.rows if r[0] < end]
        self.rows = [r for r in self.rows if r[0] >= end]
        start = self.trigger if self.trigger is not None and self.trigger > 0 else end - self.spec.max_duration
        self.trigger = end
        self.pane(content, start, end)

    def check(self, tick):
        if self.rows and tick - self.rows[0][0] >= self.spec.max_duration:
            self.close(tick)

    def next_due(self):
        if self.event_time:
            return None
        return self.schedule.due if self.timeout_due is None else min(self.schedule.due, self.timeout_due)

    def fire(self, now):
        timers = [(self.schedule.due, self.tick_order, 0)]
        if self.timeout_due is not None:
            timers.append((self.timeout_due, self.timeout_order, 1))
        for _, _, which in sorted(t for t in timers if t[0] <= now):
            if which == 0:
                for end in self.schedule.fire(now):
                    self.check(end)
                self.order += 1
                self.tick_order = self.order
            else:
                self.timeout_due = None
                if self.rows:
                    self.close(now)
                    self.timer_set = False

    def _next(self, mark):
        if not self.rows:
            return None, False
        timeout, duration = self.spec.timeout, self.spec.max_duration
        first = self.rows[0][0]
        tick = self.align(duration // self.spec.unit)(first)
        prev = None
        for t, _ in self.rows:
            gap_end = prev + timeout if prev is not None and t - prev > timeout else None
            if t > tick:
                if tick - duration > first and (gap_end is None or tick < gap_end):
                    return tick, True
                tick += duration
            if gap_end is not None:
                return gap_end, False
            prev = t
        if prev is not None and mark - prev > timeout:
            return prev + timeout, False
        return None, False

    def watermark_rose(self, mark):
        end, cut = self._next(mark)
        while end is not None and end <= mark:
            if not self.cut_last:
                self.trigger = self.rows[0][0]
            self.close(end)
            self.cut_last = cut
            end, cut = self._next(mark)


MACHINES = {Tumbling: TumblingMachine, Hopping: TumblingMachine, Sliding: SlidingMachine,
            Session: SessionMachine}


def event_row(id_, properties, json_names: frozenset[str]) -> dict:
    """An event as the evaluators read it: its id and its non-null
    properties ((name, value) pairs; a JSON text column's value decoded)."""
    row = {"id": id_}
    for n, v in properties:
        if v is not None:
            row[n] = json.loads(v) if n in json_names else v
    return row


def pane_output(timed: list, pane: tuple[int, int], query, after_where) -> list[tuple]:
    """A closed pane's output rows, each (side, pos, id, values, error,
    bounds), from its (time, row) pairs in pane order: the rows (`insert`,
    pos 0, 1, ...), the query's rows as JSON (`values`), an empty pane's one
    row (side null; a query's empty output "[]"). A WHERE after the window
    keeps the rows it holds for (an aggregate in it reads every row of the
    pane; no window bounds are in reach, as in eKuiper's filter valuer); the
    first error of the WHERE or the query is the pane's one `error` row; none
    when the WHERE leaves no row or HAVING keeps nothing (not posted)."""
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
        out += [("insert", n, None, text, None, pane) for n, text in enumerate(to_json(values))]
    if not rows and not values:
        out.append((None, None, None, None if values is None else "[]", None, pane))
    return out


KERNEL_COLUMNS = ("trace_id", "seq", "phase", "time", "ordinal", "side", "pos", "id", "values", "error", "wstart", "wend")


def kernel(spec, query, pushed_where: bool, names: tuple[str, ...], json_names: frozenset[str]):
    """The grouped-map function over one trace's items (any order)."""
    after_where = None if (pushed_where or query is None) else query.where

    def run(table):
        import pyarrow as pa

        cols = {c: table.column(c).to_pylist() for c in ("seq", "kind", "time", "id", *names)}  # trace_id: below
        order = sorted(range(table.num_rows), key=lambda i: cols["seq"][i])
        out = {c: [] for c in KERNEL_COLUMNS}
        start = next((cols["time"][i] for i in order if cols["kind"][i] == "start"), 0)
        machine = MACHINES[type(spec)](spec, query, start, pushed_where)
        state = {"clock": start}

        def row_of(i):
            return event_row(cols["id"][i], ((n, cols[n][i]) for n in names), json_names)

        trace = table.column("trace_id")[0].as_py() if table.num_rows else None

        def put(seq, phase, time, ordinal, side, pos, id_, values, error, pane):
            for c, v in zip(KERNEL_COLUMNS, (trace, seq, phase, time, ordinal, side, pos, id_, values, error,
                                            pane[0] if pane else None, pane[1] if pane else None)):
                out[c].append(v)

        def flush(seq, phase, time):
            ordinal = 0
            for post in machine.out:
                if post[0] == "error":
                    put(seq, phase, time, ordinal, "error", 0, None, None, post[1], None)
                    ordinal += 1
                    continue
                timed, wstart, wend = post
                posted = pane_output(timed, (wstart, wend), query, after_where)
                for side, pos, id_, values, error, pane in posted:
                    put(seq, phase, time, ordinal, side, pos, id_, values, error, pane)
                ordinal += bool(posted)
            machine.out.clear()

        def walk(seq, target):
            due = machine.next_due()
            while due is not None and due <= target:
                state["clock"] = due
                machine.fire(due)
                flush(seq, 0, due)
                due = machine.next_due()
            state["clock"] = target

        for i in order:
            kind, seq, time = cols["kind"][i], cols["seq"][i], cols["time"][i]
            if kind == "event":
                walk(seq, time)
                machine.arrive(row_of(i), time)
                flush(seq, 1, time)
            elif kind == "advance":
                walk(seq, time)
            elif kind == "jump":
                state["clock"] = time
                due = machine.next_due()
                if due is not None and due <= time:
                    machine.fire(time)
                    flush(seq, 0, time)
        return pa.table(out, schema=ARROW_SCHEMA)

    return run


def _arrow_schema():
    import pyarrow as pa

    return pa.schema([("trace_id", pa.string()), ("seq", pa.int64()), ("phase", pa.int32()), ("time", pa.int64()), ("ordinal", pa.int32()),
                      ("side", pa.string()), ("pos", pa.int64()), ("id", pa.string()), ("values", pa.string()),
                      ("error", pa.string()), ("wstart", pa.int64()), ("wend", pa.int64())])


try:
    ARROW_SCHEMA = _arrow_schema()
except ImportError:  # pragma: no cover - pyarrow comes with pyspark[sql]
    ARROW_SCHEMA = None
