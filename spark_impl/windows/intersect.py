"""Intersections with a member whose next removal depends on what the other
members removed (esper.md §6): every intersection that is not all `ALONE`
members (spark_impl/windows/several.py), as a grouped Arrow kernel per
sub-window.

Why a kernel: a member told that an event left elsewhere drops it quietly
(Esper's `update(null, oldData)`), and that changes what it does next: a
length member's freed slot lets the next arrival in without a push-out, a
batch member's open batch shrinks, a sort member's worst moves, a first-X
member takes an arrival it would have refused. The state is sequential, and
no running aggregate over the members' own posts gives it. So each
sub-window's rows (one shuffle by sub-window) go through a kernel that
replays the members in seq order, each member a small state machine written
here (`_MEMBERS`), and combines their posts by the intersection's rules.

The rules, as the kernel applies them (Esper's `IntersectDefaultView`,
`IntersectAsymetricView`, `IntersectBatchView`):

* Without a batch member, an arrival goes to every member in order; every
  event a member pushed out is dropped by all the others, and so is, when a
  first-X member is there, an arrival some member did not take. One post:
  new = the arrival (none if refused or pushed out at once), old = the pushed
  out events in member order, each once, after the refused arrival (which is
  posted as old only when something was pushed out).
* With one batch member, the other members take the arrival first; what they
  push out is dropped by every member and not posted; the arrival goes on to
  the batch member only if no member pushed it out and every first-X member
  took it (by the member's latest new data). Only the batch member posts, as
  it does alone, and the events it releases as new are dropped by every other
  member.
* A member's timer: its removals are dropped by the others and, without a
  batch member, posted as old (one post per member firing); the batch
  member's timer post is posted as it is.

The clock. A walk stops at each due time in turn, and the members' timers due
then fire in (due, member) order; a jump sets the clock and fires every
member's timer due by its target once, in (due, member) order, each seeing
the target; a firing re-checks that the member is still due (an earlier
firing may have emptied it). Under groupwin the groups' timers interleave by
(due, group first-seen order, member): each group's kernel emits its timer
posts with the due time of the firing member's timer as `slot_due`, the
group's `slot` and `member << 40 | n` as `pos`, which is that order.

Decided how the kernel learns the clock: it replays its own clock from its
sub-window's events and its trace's jumps (each jump with the clock before
it), walking to each event's clock, and at the end to the trace's last clock.
That is all a sub-window's timers depend on: a walk stops at the same due
times whichever item walks (an advance, another group's event), and only a
jump fires at a clock other than the due time. A jump row is copied to every
group of its trace (a few rows per group), not every item. The kernel emits
a timer post with the due time it fired for; the item whose walk or jump
reached that due time, and the clock it fired at, come from `clock.hits`, the
lookup every timed family uses (for a jump, the due time lies between the
clock before it and its target, so the jump is the first item reaching it).
Giving the kernel every clock row of the trace instead would copy a whole
trace to every group.

Values: keys, sort values and timestamps are the input's typed column values,
compared as the model compares them (nulls first ascending, last
descending; a null key is a key). Posts name events by id; the pipeline joins
their properties back.
"""

from __future__ import annotations

from collections import deque

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.model import (
    BATCH_WINDOWS,
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    Intersection,
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
from spark_impl import clock
from spark_impl.frames import spec_properties
from spark_impl.windows import Context
from spark_impl.windows.base import ARRIVAL, events, quoted
from spark_impl.windows.time import TIMER

FIRST_X = (FirstLength, FirstTime, FirstUnique, FirstEvent)
MEMBER_SHIFT = 40  # pos of a timer post: member << 40 | the row's place in the member's post


def sequential_intersection(items: DataFrame, spec: Intersection, ctx: Context) -> DataFrame:
    names = [n for n in dict.fromkeys(p for m in spec.members for p in spec_properties(m))
             if n not in ctx.partition]
    per_trace = items.groupBy("trace_id").agg(
        F.expr("max(time)").alias("#last"),
        F.expr(f"CAST(coalesce(min(CASE WHEN kind = '{clock.START}' THEN time END), 0) AS BIGINT)").alias("#created"),
    )
    keys = [quoted(c) for c in ctx.partition]
    columns = [*keys, "seq", "kind", "time", "id", "`#before`", *(quoted(n) for n in names)]
    rows = events(items).selectExpr("*", "CAST(NULL AS BIGINT) AS `#before`").selectExpr(*columns)
    if ctx.jumps:
        before = "coalesce(lag(time) OVER (PARTITION BY trace_id ORDER BY seq), 0)"
        jumps = (items.selectExpr("trace_id", "seq", "kind", "time", "id", f"{before} AS `#before`")
                 .where(f"kind = '{clock.JUMP}'"))
        if ctx.group_keys:
            groups = events(items).groupBy(*ctx.partition).agg(F.expr("count(1)").alias("#n")).drop("#n")
            jumps = jumps.join(F.broadcast(groups), "trace_id")
        rows = rows.unionByName(jumps, allowMissingColumns=True)
    if not ctx.group_keys:
        # the ungrouped window exists from the trace's start, events or not
        rows = rows.unionByName(per_trace.selectExpr(
            "trace_id", "CAST(-1 AS BIGINT) AS seq", f"'{clock.START}' AS kind", "`#created` AS time"),
            allowMissingColumns=True)
    rows = rows.join(F.broadcast(per_trace), "trace_id")
    schema = T.StructType([
        T.StructField("trace_id", T.StringType()), T.StructField("slot", T.LongType()),
        T.StructField("side", T.StringType()), T.StructField("pos", T.LongType()),
        T.StructField("id", T.StringType()), T.StructField("#useq", T.LongType()),
        T.StructField("#utime", T.LongType()), T.StructField(clock.DUE, T.LongType()),
    ])
    kernel = _kernel(spec, bool(ctx.group_keys), tuple(names))
    posted = rows.groupBy(*ctx.partition).applyInArrow(kernel, schema)
    at_arrival = posted.where("`#useq` IS NOT NULL").selectExpr(
        "trace_id", "`#useq` AS seq", f"{ARRIVAL} AS phase", "`#utime` AS time", "`#utime` AS slot_due", "slot",
        "side", "pos", "id")
    timed = posted.where("`#useq` IS NULL").drop("#useq", "#utime")
    reach = max([getattr(m, "span", 1) for m in spec.members] + [1])
    found = clock.hits(items, timed, reach=reach, jumps=ctx.jumps)
    hit, due = quoted(clock.HIT), quoted(clock.DUE)
    at_timer = found.where(f"{hit} IS NOT NULL").selectExpr(
        "trace_id", f"{hit}.seq AS seq", f"{TIMER} AS phase", f"{clock.fire_time(hit, due)} AS time",
        f"{due} AS slot_due", "slot", "side", "pos", "id")
    return at_arrival.unionByName(at_timer)


# --------------------------------------------------------------------------- the members
#
# Each member: `arrive(row, now)` and `fire(now)` return its posts, a list of
# (new rows, old rows) (an empty pair is an empty post, FORCE_UPDATE); `due()`
# is its timer's due time or None; `discard(gone)` drops the rows of the set
# `gone` quietly. A row is the event's row number in the kernel's table.


def _compare_values(a, b) -> int:
    if a is None or b is None:
        return (a is not None) - (b is not None)
    return (a > b) - (a < b)


class _Member:
    def due(self):
        return None

    def fire(self, now):
        return []


class _Length(_Member):
    def __init__(self, spec, env):
        self.size, self.held = spec.size, deque()

    def arrive(self, row, now):
        self.held.append(row)
        return [([row], [self.held.popleft()] if len(self.held) > self.size else [])]

    def discard(self, gone):
        self.held = deque(r for r in self.held if r not in gone)


class _LengthBatch(_Member):
    def __init__(self, spec, env):
        self.size, self.batch, self.previous = spec.size, [], []

    def arrive(self, row, now):
        self.batch.append(row)
        if len(self.batch) < self.size:
            return []
        post = (self.batch, self.previous)
        self.previous, self.batch = self.batch, []
        return [post]

    def discard(self, gone):
        self.batch = [r for r in self.batch if r not in gone]  # the released batch stays until replaced


class _FirstLength(_Member):
    def __init__(self, spec, env):
        self.size, self.held = spec.size, []

    def arrive(self, row, now):
        if len(self.held) >= self.size:
            return []
        self.held.append(row)
        return [([row], [])]

    def discard(self, gone):
        self.held = [r for r in self.held if r not in gone]


class _KeepAll(_Member):
    def __init__(self, spec, env):
        self.held = []

    def arrive(self, row, now):
        self.held.append(row)
        return [([row], [])]

    def discard(self, gone):
        self.held = [r for r in self.held if r not in gone]


class _FirstEvent(_Member):
    def __init__(self, spec, env):
        self.first = None

    def arrive(self, row, now):
        if self.first is not None:
            return []
        self.first = row
        return [([row], [])]

    def discard(self, gone):
        if self.first in gone:
            self.first = None


class _LastEvent(_Member):
    def __init__(self, spec, env):
        self.last = None

    def arrive(self, row, now):
        replaced, self.last = self.last, row
        return [([row], [] if replaced is None else [replaced])]

    def discard(self, gone):
        if self.last in gone:
            self.last = None


class _Unique(_Member):
    def __init__(self, spec, env):
        self.key, self.held = env.key(spec.keys), {}

    def arrive(self, row, now):
        key = self.key(row)
        replaced = self.held.pop(key, None)
        self.held[key] = row
        return [([row], [] if replaced is None else [replaced])]

    def discard(self, gone):
        self.held = {k: r for k, r in self.held.items() if r not in gone}


class _FirstUnique(_Unique):
    def arrive(self, row, now):
        key = self.key(row)
        if key in self.held:
            return []
        self.held[key] = row
        return [([row], [])]


class _Time(_Member):
    """The member holds one schedule callback (`callback`, the clock it is due
    at), as Esper's `TimeWindowView` does: booked by a row that finds the
    member empty, and after each firing at the oldest held row's due. Under an
    intersection with `stale_time_timers`, a quiet drop leaves the booking
    alone, so the callback may fire early, drop nothing, and order a jump by
    its stale clock; otherwise a drop books it anew at the oldest row's due."""

    def __init__(self, spec, env):
        self.span, self.held, self.callback = spec.span, deque(), None  # held: (arrival clock, row)
        self.stale = False

    def arrive(self, row, now):
        if not self.held:
            self.callback = now + self.span
        self.held.append((now, row))
        return [([row], [])]

    def due(self):
        return self.callback

    def _book(self):
        self.callback = self.held[0][0] + self.span if self.held else None

    def fire(self, now):
        gone = []
        while self.held and self.held[0][0] <= now - self.span:
            gone.append(self.held.popleft()[1])
        self._book()
        return [([], gone)] if gone else []

    def discard(self, gone):
        self.held = deque(h for h in self.held if h[1] not in gone)
        if not self.stale:
            self._book()


class _ExtTimed(_Member):
    def __init__(self, spec, env):
        self.span, self.stamp, self.held = spec.span, env.column(spec.timestamp), deque()

    def arrive(self, row, now):
        ts = self.stamp[row]
        self.held.append((ts, row))
        gone = []
        while self.held and self.held[0][0] <= ts - self.span:
            gone.append(self.held.popleft()[1])
        return [([row], gone)]

    def discard(self, gone):
        self.held = deque(h for h in self.held if h[1] not in gone)


class _FirstTime(_Member):
    def __init__(self, spec, env):
        self.until, self.held = env.created + spec.span, []

    def arrive(self, row, now):
        if self.until is None:
            return []
        self.held.append(row)
        return [([row], [])]

    def due(self):
        return self.until

    def fire(self, now):
        self.until = None
        return []

    def discard(self, gone):
        self.held = [r for r in self.held if r not in gone]


class _TimeAccum(_Member):
    def __init__(self, spec, env):
        self.span, self.held, self.until = spec.span, [], None

    def arrive(self, row, now):
        self.held.append(row)
        self.until = now + self.span
        return [([row], [])]

    def due(self):
        return self.until if self.held else None

    def fire(self, now):
        gone, self.held, self.until = self.held, [], None
        return [([], gone)] if gone else []

    def discard(self, gone):
        self.held = [r for r in self.held if r not in gone]


class _TimeOrder(_Member):
    def __init__(self, spec, env):
        self.span, self.stamp = spec.span, env.column(spec.timestamp)
        self.held = []  # (ts, arrival number, row), sorted
        self.arrivals = 0

    def arrive(self, row, now):
        import bisect

        ts = self.stamp[row]
        if ts + self.span <= now:
            return [([row], [row])]
        bisect.insort(self.held, (ts, self.arrivals, row))
        self.arrivals += 1
        return [([row], [])]

    def due(self):
        return self.held[0][0] + self.span if self.held else None

    def fire(self, now):
        gone = []
        while self.held and self.held[0][0] + self.span <= now:
            gone.append(self.held.pop(0)[2])
        return [([], gone)] if gone else []

    def discard(self, gone):
        self.held = [h for h in self.held if h[2] not in gone]


class _Sorted(_Member):
    """What `#sort` and `#rank` share: the criteria's comparison of two rows."""

    def __init__(self, spec, env):
        self.size, self.held = spec.size, []
        self.criteria = [(env.column(c.property), c.descending) for c in spec.criteria]

    def compare(self, a, b) -> int:
        for values, descending in self.criteria:
            order = _compare_values(values[a], values[b])
            if order:
                return -order if descending else order
        return 0

    def discard(self, gone):
        self.held = [r for r in self.held if r not in gone]


class _Sort(_Sorted):
    def arrive(self, row, now):
        at = 0  # ahead of the first held row it does not sort strictly after (the newest of ties first)
        while at < len(self.held) and self.compare(self.held[at], row) < 0:
            at += 1
        self.held.insert(at, row)
        gone = []
        while len(self.held) > self.size:
            gone.append(self.held.pop())
        return [([row], gone)]


class _Rank(_Sorted):
    def __init__(self, spec, env):
        super().__init__(spec, env)
        self.key = env.key(spec.keys)

    def arrive(self, row, now):
        key = self.key(row)
        same = next((r for r in self.held if self.key(r) == key), None)
        if same is not None:
            self.held.remove(same)
            self.hold(row)
            return [([row], [same])]
        if len(self.held) >= self.size and self.compare(row, self.held[-1]) > 0:
            return [([row], [row])]
        self.hold(row)
        gone = []
        while len(self.held) > self.size:
            worst = self.held[-1]
            oldest = next(r for r in self.held if self.compare(r, worst) == 0)
            self.held.remove(oldest)
            gone.append(oldest)
        return [([row], gone)]

    def hold(self, row):
        at = len(self.held)  # behind every row that does not sort strictly after it
        while at > 0 and self.compare(self.held[at - 1], row) > 0:
            at -= 1
        self.held.insert(at, row)


def _next_grid(current, reference, span):
    return current + ((reference - current) % span or span)


class _TimedBatch(_Member):
    """`#time_batch` and `#time_length_batch`: the open batch, the previous one, one timer."""

    def __init__(self, spec, env, due):
        self.force, self.batch, self.previous, self.until = spec.force_update, [], [], due

    def release(self, next_due):
        released, previous = self.batch, self.previous
        posts = [(released, previous)] if released or previous or self.force else []
        self.until = next_due if posts else None
        self.previous, self.batch = released, []
        return posts

    def due(self):
        return self.until

    def discard(self, gone):
        self.batch = [r for r in self.batch if r not in gone]


class _TimeBatch(_TimedBatch):
    def __init__(self, spec, env):
        self.span = spec.span
        self.reference = env.created if spec.start_eager else spec.reference
        super().__init__(spec, env, _next_grid(env.created, self.reference, self.span) if spec.start_eager else None)

    def arrive(self, row, now):
        if self.reference is None:
            self.reference = now
        if self.until is None:
            self.until = _next_grid(now, self.reference, self.span)
        self.batch.append(row)
        return []

    def fire(self, now):
        return self.release(_next_grid(now, self.reference, self.span))


class _TimeLengthBatch(_TimedBatch):
    def __init__(self, spec, env):
        self.span, self.size = spec.span, spec.size
        super().__init__(spec, env, env.created + self.span if spec.start_eager else None)

    def arrive(self, row, now):
        self.batch.append(row)
        if len(self.batch) >= self.size:
            return self.release(now + self.span)
        if self.until is None:
            self.until = now + self.span
        return []

    def fire(self, now):
        return self.release(now + self.span)


class _ExtTimedBatch(_Member):
    def __init__(self, spec, env):
        self.span, self.reference, self.stamp = spec.span, spec.reference, env.column(spec.timestamp)
        self.batch, self.previous, self.oldest = [], [], None

    def arrive(self, row, now):
        ts = self.stamp[row]
        if self.reference is None:
            self.reference = ts
        posts = []
        if self.batch and ts >= _next_grid(self.oldest, self.reference, self.span):
            posts.append((self.batch, self.previous))
            self.previous, self.batch = self.batch, []
        if not self.batch:
            self.oldest = ts
        self.batch.append(row)
        return posts

    def discard(self, gone):
        self.batch = [r for r in self.batch if r not in gone]
        if self.batch:
            self.oldest = self.stamp[self.batch[0]]


_MEMBERS = {
    Length: _Length, LengthBatch: _LengthBatch, FirstLength: _FirstLength, KeepAll: _KeepAll,
    FirstEvent: _FirstEvent, LastEvent: _LastEvent, Unique: _Unique, FirstUnique: _FirstUnique,
    Time: _Time, ExtTimed: _ExtTimed, FirstTime: _FirstTime, TimeAccum: _TimeAccum, TimeOrder: _TimeOrder,
    Sort: _Sort, Rank: _Rank, TimeBatch: _TimeBatch, TimeLengthBatch: _TimeLengthBatch,
    ExtTimedBatch: _ExtTimedBatch,
}


class _Env:
    """What a member reads besides its spec: property columns by row, the creation clock."""

    def __init__(self, table, names, created):
        self.table, self.names, self.created = table, names, created
        self.columns: dict = {}

    def column(self, name):
        if name not in self.columns:
            self.columns[name] = self.table.column(name).to_pylist()
        return self.columns[name]

    def key(self, names):
        columns = [self.column(n) for n in names]
        return lambda row: tuple(c[row] for c in columns)


def _ordered(rows):
    return list(dict.fromkeys(rows))


class _Intersection:
    """The members of one sub-window and the intersection's rules (module docstring)."""

    def __init__(self, spec: Intersection, env: _Env):
        self.members = [_MEMBERS[type(m)](m, env) for m in spec.members]
        for member in self.members:
            if isinstance(member, _Time):
                member.stale = spec.stale_time_timers
        self.first_x = [isinstance(m, FIRST_X) for m in spec.members]
        self.any_first_x = any(self.first_x)
        self.batch = next((i for i, m in enumerate(spec.members) if isinstance(m, BATCH_WINDOWS)), None)
        self.latest_new = [None] * len(self.members)

    def elsewhere(self, source, gone):
        if gone:
            gone = set(gone)
            for j, member in enumerate(self.members):
                if j != source:
                    member.discard(gone)

    def arrive(self, row, now):
        if self.batch is not None:
            return self.to_batch(row, now)
        refused, pushed = [], []
        for member, first_x in zip(self.members, self.first_x):
            posts = member.arrive(row, now)
            if self.any_first_x and not any(row in new for new, _ in posts):
                refused.append(row)
            pushed.append([r for _, old in posts for r in old])
        self.elsewhere(None, refused)
        for i, gone in enumerate(pushed):
            self.elsewhere(i, gone)
        old = _ordered(r for gone in pushed for r in gone)
        if not self.any_first_x:
            return [([row], old)]
        removal = _ordered([*refused, *old])
        new = [] if row in removal else [row]
        posted_old = removal if old else []
        return [(new, posted_old)] if new or posted_old else []

    def to_batch(self, row, now):
        pushed = []
        for i, member in enumerate(self.members):
            if i == self.batch:
                pushed.append([])
                continue
            posts = member.arrive(row, now)
            new = [r for n, _ in posts for r in n]
            if posts and new:
                self.latest_new[i] = new
            pushed.append([r for _, old in posts for r in old])
        for i, gone in enumerate(pushed):
            self.elsewhere(i, gone)
        removed = {r for gone in pushed for r in gone}
        taken = all(latest is None or row in latest
                    for latest, first_x in zip(self.latest_new, self.first_x) if first_x)
        if row in removed or not taken:
            return []
        return self.batch_posts(self.members[self.batch].arrive(row, now))

    def batch_posts(self, posts):
        for new, _ in posts:
            self.elsewhere(self.batch, new)
        return posts

    def next_due(self):
        return min((d for m in self.members if (d := m.due()) is not None), default=None)

    def fire_all(self, now):
        """Every member's timer due by `now`, once, in (due, member) order:
        [(the due time it fired for, member, posts)]."""
        fired = []
        for due, i in sorted((d, i) for i, m in enumerate(self.members) if (d := m.due()) is not None and d <= now):
            still = self.members[i].due()
            if still is None or still > now:
                continue
            posts = self.members[i].fire(now)
            if i == self.batch:
                posts = self.batch_posts(posts)
            else:
                gone = [r for _, old in posts for r in old]
                self.elsewhere(i, gone)
                posts = [([], gone)] if gone and self.batch is None else []
            fired.append((due, i, posts))
        return fired


def _kernel(spec: Intersection, grouped: bool, names: tuple[str, ...]):
    """The grouped-map function: one row per posted event (side, pos, id) or
    empty post (side, id, pos null), with its unit: `#useq`/`#utime` for an
    arrival, `#due` for a timer (module docstring)."""

    def kernel(table):
        import pyarrow as pa

        seq, kind, time = (table.column(c).to_pylist() for c in ("seq", "kind", "time"))
        ids, before = table.column("id").to_pylist(), table.column("#before").to_pylist()
        last = table.column("#last")[0].as_py()
        trace_id = table.column("trace_id")[0].as_py()
        order = sorted(range(table.num_rows), key=seq.__getitem__)
        event_rows = [r for r in order if kind[r] == "event"]
        out = {"slot": [], "side": [], "pos": [], "id": [], "#useq": [], "#utime": [], clock.DUE: []}
        slot = seq[event_rows[0]] if grouped and event_rows else 0
        window = None

        def emit(side, row, pos, unit):
            out["slot"].append(slot)
            out["side"].append(side)
            out["id"].append(None if row is None else ids[row])
            out["pos"].append(pos)
            out["#useq"].append(unit[0])
            out["#utime"].append(unit[1])
            out[clock.DUE].append(unit[2])

        def emit_posts(posts, unit, shift):
            for new, old in posts:
                for n, row in enumerate(new):
                    emit("insert", row, shift + n, unit)
                for n, row in enumerate(old):
                    emit("remove", row, shift + n, unit)
                if not new and not old:
                    emit(None, None, None, unit)

        def fire(now):
            for due, i, posts in window.fire_all(now):
                emit_posts(posts, (None, None, due), i << MEMBER_SHIFT)

        def walk(target):
            while (due := window.next_due()) is not None and due <= target:
                fire(due)

        if not grouped:
            window = _Intersection(spec, _Env(table, names, table.column("#created")[0].as_py()))
        for row in order:
            if kind[row] == "event":
                if window is None:
                    window = _Intersection(spec, _Env(table, names, time[row]))
                walk(time[row])
                emit_posts(window.arrive(row, time[row]), (seq[row], time[row], None), 0)
            elif kind[row] == clock.JUMP and window is not None:
                walk(before[row])
                due = window.next_due()
                if due is not None and due <= time[row]:
                    fire(time[row])
        if window is not None:
            walk(last)
        n = len(out["side"])
        return pa.table({
            "trace_id": pa.array([trace_id] * n, pa.string()), "slot": pa.array(out["slot"], pa.int64()),
            "side": pa.array(out["side"], pa.string()), "pos": pa.array(out["pos"], pa.int64()),
            "id": pa.array(out["id"], pa.string()), "#useq": pa.array(out["#useq"], pa.int64()),
            "#utime": pa.array(out["#utime"], pa.int64()), clock.DUE: pa.array(out[clock.DUE], pa.int64()),
        })

    return kernel
