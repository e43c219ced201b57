"""The members of an intersection as small tables, for the kernel of
spark_impl/windows/intersect.py: which rows a member holds, keyed how, and
when its one timer is due. Written from the rules (esper.md §1 to §3, the
summary table §8), not from any engine's view classes.

A row is the event's row number in the kernel's input table; `Facts` reads
its seq and its properties. Every member keeps the same small contract:

* `take(row, now)`: the arrival. A holding member answers the rows it lets go
  because of it, in the order it lets them go (the arrival itself among them
  when it does not keep it), or None when it refuses the arrival (the first-X
  members, which never push anything out). A batch member answers its
  release, a pair (new rows, old rows), or None.
* `due`: the clock at which its timer fires, None without one.
* `fire(now)`: the timer: a holding member answers the rows that leave, a
  batch member its release or None (a release of two empty lists is Esper's
  FORCE_UPDATE post). Only called when `due <= now`.
* `drop(gone)`: the rows of the set `gone` left elsewhere: forget them, post
  nothing (Esper's `update(null, oldData)`). Rows it does not hold are no-ops.

The tables:

* `Quota` is every member that holds events by count alone: at most `limit`
  rows per key, and an arrival finding its key full either pushes out the
  oldest under the key (`evict`) or is refused. `#length(n)`: one key, n,
  evict; `#lastevent`: one key, 1, evict; `#unique(k)`: key k, 1, evict;
  `#firstlength(n)`: one key, n, refuse; `#firstevent`: one key, 1, refuse;
  `#firstunique(k)`: key k, 1, refuse; `#keepall`: no limit. A dropped row
  frees its place, so a freed `#length` slot lets the next arrival in
  without a push-out and a freed first-X place takes the next arrival.
* `Expiring` (`#time(t)`) holds rows in arrival order, each with the clock
  it leaves at, arrival + t; a timer at `now` lets go every row leaving at
  or before `now`, front first (a jump: one firing covers everything due by
  its target). Its timer with `stale_time_timers` (Esper's): armed when an
  empty member takes an arrival (now + t) and after each firing (the oldest
  row left + t, or none); a drop leaves it where it was, so it may fire and
  let nothing go. Without it: always the front row's leave time.
* `Accumulating` (`#time_accum(t)`): rows in arrival order, all let go at
  once, t after the last arrival (a drop does not move that).
* `Closing` (`#firsttime(t)`): holds nothing of its own; takes every arrival
  until its timer, armed at creation + t, has fired, then refuses them all.
* `TimeOrdered` (`#time_order(ts, t)`, `#timetolive(ts)`): rows sorted by
  (ts, seq), each leaving at ts + t; an arrival already due (ts + t <= now)
  is let go at once; the timer is the first row's leave time (a drop moves it).
* `ExtTimedRows` (`#ext_timed(ts, t)`): rows in arrival order with their ts; an
  arrival with ts lets go the front rows with ts' <= ts - t, stopping at the
  first younger one. No timer.
* `Sorted` (`#sort(n, c)`, `#rank(k, n, c)`): rows in a list sorted by a key
  tuple (`sort_key`: nulls first ascending, last descending), with bisect.
  `#sort`: ties newest first, so the key is (criteria, -seq) and the worst
  row is the last; over n rows the last leave. `#rank`: one row per unique
  key, ties oldest first, key (criteria, seq): an arrival whose key is held
  replaces that row (one in, one out); otherwise an arrival into n rows that
  sorts strictly after the last is let go at once, else it goes in and, over
  n rows, the first row of the worst criteria leaves (the oldest of the
  worst ties).
* Batches are (open batch, previous batch, next due); a release posts (open,
  previous) and the open batch becomes the previous one. `#length_batch(n)`
  releases when the open batch holds n. `#time_batch(t[, ref])` releases at
  grid points ref + k*t (`next_grid`, esper.md §0.2), ref the first
  arrival's clock unless given; an arrival arms the next grid point after
  `now` when no timer is armed; a firing with both batches empty posts
  nothing (FORCE_UPDATE: an empty post) and disarms (FORCE_UPDATE: never);
  START_EAGER arms creation + t with ref = creation. `#time_length_batch(t,
  n)` releases when the open batch holds n or at its timer, armed at now + t
  by an arrival when none is armed and after a release that posted.
  `#ext_timed_batch(ts, t[, ref])`: an arrival with ts releases the open batch
  when ts reaches the next grid point after the open batch's first row's ts,
  then opens the next batch itself. A drop takes rows out of the open batch.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict

from oracle.model import (
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    KeepAll,
    LastEvent,
    Length,
    LengthBatch,
    Rank,
    Sort,
    Time,
    TimeAccum,
    TimeBatch,
    TimeLengthBatch,
    TimeOrder,
    Unique,
)


class Facts:
    """What members read of a row: its seq, and its property values from the
    kernel's input table (Arrow columns, turned into lists once)."""

    def __init__(self, table, seq):
        self.table, self.seq, self._lists = table, seq, {}

    def values(self, name):
        if name not in self._lists:
            self._lists[name] = self.table.column(name).to_pylist()
        return self._lists[name]

    def key(self, names):
        lists = [self.values(n) for n in names]
        return lambda row: tuple(values[row] for values in lists)


class _Reversed:
    """A value that sorts the other way round (a descending criterion)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __lt__(self, other):
        return other.value < self.value

    def __eq__(self, other):
        return self.value == other.value


def sort_key(criteria, facts: Facts):
    """Row -> a tuple that orders rows by `criteria`: ascending, null before
    every value; descending, null after every value."""
    parts = [(facts.values(c.property), c.descending) for c in criteria]

    def key(row):
        out = []
        for values, descending in parts:
            v = values[row]
            if descending:
                out.append((1,) if v is None else (0, _Reversed(v)))
            else:
                out.append((0,) if v is None else (1, v))
        return tuple(out)

    return key


def next_grid(after: int, reference: int, span: int) -> int:
    """The first point of the grid reference + k * span strictly after `after`."""
    return after + ((reference - after) % span or span)


# --------------------------------------------------------------------------- holding members


class _Rows:
    """Rows in arrival order (`rows`, row -> what the member keeps of it); a
    drop forgets them. No timer unless a subclass has one."""

    due = None

    def __init__(self):
        self.rows: OrderedDict = OrderedDict()

    def drop(self, gone):
        for row in gone:
            self.rows.pop(row, None)


class Quota:
    """At most `limit` rows per key (None: no limit); a full key evicts its
    oldest row or refuses the arrival."""

    def __init__(self, key, limit, evict):
        self.key, self.limit, self.evict = key, limit, evict
        self.by_key: dict = {}
        self.key_of: dict = {}
        self.due = None

    def take(self, row, now):
        k = self.key(row)
        rows = self.by_key.get(k)
        if rows is None:
            rows = self.by_key[k] = OrderedDict()
        out = []
        if self.limit is not None and len(rows) >= self.limit:
            if not self.evict:
                return None
            while len(rows) >= self.limit:
                gone, _ = rows.popitem(last=False)
                del self.key_of[gone]
                out.append(gone)
        rows[row] = None
        self.key_of[row] = k
        return out

    def drop(self, gone):
        for row in gone:
            k = self.key_of.pop(row, None)
            if k is not None:
                del self.by_key[k][row]


class Expiring(_Rows):
    """`#time(t)`: rows in arrival order, each with the clock it leaves at
    (`leave(now)` for an arrival at `now`); `stale`: the timer only moves on
    an arrival into an empty member and on a firing (else: the front row's
    leave time)."""

    def __init__(self, leave, stale):
        super().__init__()
        self.leave, self.stale, self._due = leave, stale, None

    @property
    def due(self):
        if self.stale:
            return self._due
        return next(iter(self.rows.values())) if self.rows else None

    def take(self, row, now):
        if not self.rows:
            self._due = self.leave(now)
        self.rows[row] = self.leave(now)
        return []

    def fire(self, now):
        out = []
        while self.rows and next(iter(self.rows.values())) <= now:
            out.append(self.rows.popitem(last=False)[0])
        self._due = next(iter(self.rows.values())) if self.rows else None
        return out


class Accumulating(_Rows):
    """`#time_accum(t)`: every row leaves t after the last arrival."""

    def __init__(self, span):
        super().__init__()
        self.span, self.last = span, None

    @property
    def due(self):
        return self.last + self.span if self.rows else None

    def take(self, row, now):
        self.rows[row] = None
        self.last = now
        return []

    def fire(self, now):
        out = list(self.rows)
        self.rows.clear()
        return out


class Closing:
    """`#firsttime(t)`: takes every arrival until its timer (creation + t) fires, then refuses."""

    def __init__(self, closes):
        self.due = closes

    def take(self, row, now):
        return [] if self.due is not None else None

    def fire(self, now):
        self.due = None
        return []

    def drop(self, gone):
        pass


class TimeOrdered:
    """Rows sorted by (ts + t, seq); the timer is the first row's leave time."""

    def __init__(self, stamp, span, facts):
        self.stamp, self.span, self.seq = stamp, span, facts.seq
        self.rows: list = []  # (leave, seq, row)
        self.held: set = set()

    @property
    def due(self):
        return self.rows[0][0] if self.rows else None

    def take(self, row, now):
        leave = self.stamp(row) + self.span
        if leave <= now:
            return [row]
        bisect.insort(self.rows, (leave, self.seq[row], row))
        self.held.add(row)
        return []

    def fire(self, now):
        k = bisect.bisect_right(self.rows, (now, float("inf")))
        out = [row for _, _, row in self.rows[:k]]
        del self.rows[:k]
        self.held.difference_update(out)
        return out

    def drop(self, gone):
        if not self.held.isdisjoint(gone):
            self.rows = [e for e in self.rows if e[2] not in gone]
            self.held.difference_update(gone)


class ExtTimedRows(_Rows):
    """`#ext_timed(ts, t)`: rows in arrival order with their ts; no timer."""

    def __init__(self, stamp, span):
        super().__init__()
        self.stamp, self.span = stamp, span

    def take(self, row, now):
        ts = self.stamp(row)
        self.rows[row] = ts
        out = []
        while next(iter(self.rows.values())) <= ts - self.span:
            out.append(self.rows.popitem(last=False)[0])
        return out


class Sorted:
    """`#sort` (`unique` None) and `#rank` (`unique` the unique key): rows in a
    list sorted by (criteria, tie), `tie` -seq (newest first) or seq."""

    def __init__(self, size, criteria, unique, tie):
        self.size, self.criteria, self.unique, self.tie = size, criteria, unique, tie
        self.rows: list = []  # (criteria, tie, row)
        self.entry: dict = {}  # row -> its entry
        self.by_key: dict = {}  # rank: unique key -> row
        self.due = None

    def _remove(self, row):
        entry = self.entry.pop(row)
        del self.rows[bisect.bisect_left(self.rows, entry)]
        if self.unique is not None:
            del self.by_key[self.unique(row)]

    def _insert(self, row):
        entry = self.entry[row] = (self.criteria(row), self.tie(row), row)
        bisect.insort(self.rows, entry)
        if self.unique is not None:
            self.by_key[self.unique(row)] = row

    def take(self, row, now):
        if self.unique is None:
            self._insert(row)
            out = []
            while len(self.rows) > self.size:
                out.append(self.rows[-1][2])
                self._remove(out[-1])
            return out
        held = self.by_key.get(self.unique(row))
        if held is not None:
            self._remove(held)
            self._insert(row)
            return [held]
        if len(self.rows) >= self.size and self.rows[-1][0] < self.criteria(row):
            return [row]
        self._insert(row)
        out = []
        while len(self.rows) > self.size:
            worst = self.rows[-1][0]
            out.append(self.rows[bisect.bisect_left(self.rows, (worst,))][2])
            self._remove(out[-1])
        return out

    def drop(self, gone):
        for row in gone:
            if row in self.entry:
                self._remove(row)


# --------------------------------------------------------------------------- batch members


class Batch(_Rows):
    """The open batch (`rows`) and the previous one; `release` posts (open,
    previous). A drop takes rows out of the open batch."""

    def __init__(self, force=False):
        super().__init__()
        self.previous: list = []
        self.force = force

    def release(self):
        new, old = list(self.rows), self.previous
        if not new and not old and not self.force:
            return None
        self.previous = new
        self.rows.clear()
        return new, old


class CountBatch(Batch):
    """`#length_batch(n)`."""

    def __init__(self, size):
        super().__init__()
        self.size = size

    def take(self, row, now):
        self.rows[row] = None
        return self.release() if len(self.rows) >= self.size else None


class GridBatch(Batch):
    """`#time_batch(t[, ref][, flags])`: releases at the grid's points."""

    def __init__(self, span, reference, force, eager, created):
        super().__init__(force)
        self.span, self.reference = span, reference
        if eager:
            self.reference, self.due = created, created + span

    def take(self, row, now):
        if self.reference is None:
            self.reference = now
        self.rows[row] = None
        if self.due is None:
            self.due = next_grid(now, self.reference, self.span)
        return None

    def fire(self, now):
        post = self.release()
        self.due = None if post is None else next_grid(now, self.reference, self.span)
        return post


class CountOrTimerBatch(Batch):
    """`#time_length_batch(t, n[, flags])`: releases at n rows or at its timer."""

    def __init__(self, span, size, force, eager, created):
        super().__init__(force)
        self.span, self.size = span, size
        if eager:
            self.due = created + span

    def take(self, row, now):
        self.rows[row] = None
        if len(self.rows) >= self.size:
            return self.fire(now)
        if self.due is None:
            self.due = now + self.span
        return None

    def fire(self, now):
        post = self.release()
        self.due = None if post is None else now + self.span
        return post


class StampBatch(Batch):
    """`#ext_timed_batch(ts, t[, ref])`: cut by the rows' own timestamps; no timer."""

    def __init__(self, stamp, span, reference):
        super().__init__()
        self.stamp, self.span, self.reference = stamp, span, reference

    def take(self, row, now):
        ts = self.stamp(row)
        if self.reference is None:
            self.reference = ts
        post = None
        if self.rows:
            first = self.stamp(next(iter(self.rows)))
            if ts >= next_grid(first, self.reference, self.span):
                post = self.release()
        self.rows[row] = None
        return post


# --------------------------------------------------------------------------- the table of members


def _one(row):
    """The one key of a member without keys."""
    return ()


#: member spec class -> its table, from (spec, facts, creation clock, `stale_time_timers`)
MEMBERS = {
    Length: lambda s, f, c, stale: Quota(_one, s.size, evict=True),
    LastEvent: lambda s, f, c, stale: Quota(_one, 1, evict=True),
    Unique: lambda s, f, c, stale: Quota(f.key(s.keys), 1, evict=True),
    FirstLength: lambda s, f, c, stale: Quota(_one, s.size, evict=False),
    FirstEvent: lambda s, f, c, stale: Quota(_one, 1, evict=False),
    FirstUnique: lambda s, f, c, stale: Quota(f.key(s.keys), 1, evict=False),
    KeepAll: lambda s, f, c, stale: Quota(_one, None, evict=False),
    Time: lambda s, f, c, stale: Expiring(lambda now: now + s.span, stale),
    TimeAccum: lambda s, f, c, stale: Accumulating(s.span),
    FirstTime: lambda s, f, c, stale: Closing(c + s.span),
    TimeOrder: lambda s, f, c, stale: TimeOrdered(f.values(s.timestamp).__getitem__, s.span, f),
    ExtTimed: lambda s, f, c, stale: ExtTimedRows(f.values(s.timestamp).__getitem__, s.span),
    Sort: lambda s, f, c, stale: Sorted(s.size, sort_key(s.criteria, f), None, lambda row: -f.seq[row]),
    Rank: lambda s, f, c, stale: Sorted(s.size, sort_key(s.criteria, f), f.key(s.keys), f.seq.__getitem__),
    LengthBatch: lambda s, f, c, stale: CountBatch(s.size),
    TimeBatch: lambda s, f, c, stale: GridBatch(s.span, s.reference, s.force_update, s.start_eager, c),
    TimeLengthBatch: lambda s, f, c, stale: CountOrTimerBatch(s.span, s.size, s.force_update, s.start_eager, c),
    ExtTimedBatch: lambda s, f, c, stale: StampBatch(f.values(s.timestamp).__getitem__, s.span, s.reference),
}
