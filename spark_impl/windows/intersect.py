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
replays the members in seq order and combines their posts by the
intersection's rules.

The formulation. A sub-window (`_SubWindow`) is one set of rows and a table
per member (spark_impl/windows/members.py: which rows the member holds, keyed
how, and when its one timer is due), all behind one contract: `take` an
arrival (the rows the member lets go, or a refusal; a batch member: its
release), `fire` the timer, and `drop`, which forgets rows that left
elsewhere. Every removal, whoever made it, goes through one operation,
`_SubWindow.drop`, which takes the rows out of every member at once; the
rules below only say which rows it is given and what is posted. The clock
walk is `_replay`, a small function over the sub-window's rows.

The rules, as the kernel applies them (Esper's `IntersectDefaultView`,
`IntersectAsymetricView`, `IntersectBatchView`):

* Without a batch member, an arrival goes to every member in order; every
  event a member pushed out is dropped by all the others, and so is, when a
  first-X member is there, an arrival some member did not take. One post:
  new = the arrival (none if refused, or, beside a first-X member, pushed
  out at once), old = the pushed out events in member order, each once,
  after the refused arrival (which is posted as old only when something was
  pushed out).
* With one batch member, the other members take the arrival first; what they
  push out is dropped by every member and not posted; the arrival goes on to
  the batch member only if no member pushed it out and every first-X member
  took it (by the member's latest new data: one that has taken nothing yet
  does not refuse). An arrival held back so stays in the members that took
  it (`#length_batch(2)#firstunique(k)#length(2)`: a refused duplicate still
  fills a `#length` slot). Only the batch member posts, as it does alone, and
  the events it releases as new are dropped by every other member.
* A member's timer: its removals are dropped by the others and, without a
  batch member, posted as old (one post per member firing); the batch
  member's timer post is posted as it is.
* Without a first-X member an arrival is posted as new even when a member
  lets it go at once (a `#sort` it sorts last in): new and old in one post
  (Esper's `IntersectDefaultView` posts the arrivals as they came); with one,
  such an arrival is old only (`IntersectAsymetricView` takes the removed
  events out of the new data).

The clock. A walk stops at each due time in turn, and the members' timers due
then fire in (due, member) order; a jump sets the clock and fires every
member's timer due by its target once, in (due, member) order, each seeing
the target. The next member to fire is picked by the dues as they are after
the firings before it, so a member an earlier firing emptied is skipped.
Under groupwin the groups' timers interleave by (due, group first-seen
order, member): each group's kernel emits its timer
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

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.model import BATCH_WINDOWS, FirstEvent, FirstLength, FirstTime, FirstUnique, Intersection
from spark_impl import clock
from spark_impl.frames import spec_properties
from spark_impl.windows import Context
from spark_impl.windows.base import ARRIVAL, events, quoted
from spark_impl.windows.members import MEMBERS, Facts
from spark_impl.windows.replay import replay
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


# --------------------------------------------------------------------------- one sub-window


class _SubWindow:
    """One sub-window of the intersection: the member tables (members.py)
    over one shared set of rows, and `drop`, which takes rows out of every
    member at once. `arrive` and `fire` answer posts, lists of (new rows, old
    rows), by the rules of the module docstring."""

    def __init__(self, spec: Intersection, facts: Facts, created: int):
        self.members = [MEMBERS[type(m)](m, facts, created, spec.stale_time_timers) for m in spec.members]
        self.batch = next((i for i, m in enumerate(spec.members) if isinstance(m, BATCH_WINDOWS)), None)
        self.first_x = [i for i, m in enumerate(spec.members) if isinstance(m, FIRST_X)]
        self.last_taken: dict[int, int] = {}  # first-X member -> the last row it took

    def drop(self, gone):
        if gone:
            for member in self.members:
                member.drop(gone)

    def _offer(self, row, now):
        """The arrival to every member but the batch one: (the rows they let
        go, in member order, each once; whether a member refused it)."""
        out: dict = {}
        refused = False
        for i, member in enumerate(self.members):
            if i == self.batch:
                continue
            let_go = member.take(row, now)
            if let_go is None:
                refused = True
            else:
                out.update(dict.fromkeys(let_go))
                if i in self.first_x:
                    self.last_taken[i] = row
        return out, refused

    def arrive(self, row, now):
        out, refused = self._offer(row, now)
        if self.batch is None:
            if refused:
                self.drop({row, *out})
                return [([], [row, *(r for r in out if r != row)])] if out else []
            self.drop(out)
            return [([] if self.first_x and row in out else [row], list(out))]
        self.drop(out)
        if row in out or any(self.last_taken.get(i, row) != row for i in self.first_x):
            return []
        return self._released(self.members[self.batch].take(row, now))

    def _released(self, post):
        """A batch member's release, posted as it is; what it lets in as new
        leaves every other member."""
        if post is None:
            return []
        self.drop(set(post[0]))
        return [post]

    def next_due(self):
        dues = [m.due for m in self.members if m.due is not None]
        return min(dues) if dues else None

    def fire(self, now):
        """Every member timer due by `now` fires once, the earliest due first
        (then member order), each seeing `now`: yields (its due, the member,
        its posts). A member is picked by its due as it is after the firings
        before it, so one that nothing is due in any more is skipped."""
        fired: set = set()
        while True:
            due, i = min(((m.due, i) for i, m in enumerate(self.members)
                          if i not in fired and m.due is not None and m.due <= now), default=(None, None))
            if i is None:
                return
            fired.add(i)
            if i == self.batch:
                yield due, i, self._released(self.members[i].fire(now))
                continue
            out = self.members[i].fire(now)
            self.drop(set(out))
            yield due, i, [([], out)] if out and self.batch is None else []


# --------------------------------------------------------------------------- the kernel


def _replay(order, kind, time, before, last, make, on_arrival, on_timer):
    """The sub-window's clock (module docstring), `spark_impl.windows.replay`'s
    loop over what the kernel has of it: in seq order its events and, for each
    jump, a walk to the clock before it and the jump; at the end a walk to the
    trace's last clock. `make(row)` creates the window at the trace's start row
    (ungrouped) or at the group's first event (no item before it can reach a
    timer of the new window: its first due time is after its creation)."""
    created = next((row for row in order if kind[row] in ("event", clock.START)), None)
    if created is None:
        return
    window = make(created)
    items = []
    for row in order:
        if kind[row] == "event":
            items.append((row, "event", time[row], row))  # in seq order already
        elif kind[row] == clock.JUMP:
            items += [(row, "advance", before[row], None), (row, "jump", time[row], None)]
    items.append((None, "advance", last, None))
    replay(items, _Driven(window, on_arrival, on_timer), lambda *unit: None, clock=time[created])


class _Driven:
    """A sub-window as `replay` drives it: its posts go out as they are made."""

    def __init__(self, window, on_arrival, on_timer):
        self.window, self.on_arrival, self.on_timer = window, on_arrival, on_timer

    def due(self):
        return self.window.next_due()

    def fire(self, now):
        self.on_timer(self.window, now)

    def arrive(self, row, now):
        self.on_arrival(self.window, row)


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
        facts = Facts(table, seq)

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

        def make(row):
            # a group's window is created at its first event, the ungrouped one at the
            # trace's start row (`#created`)
            return _SubWindow(spec, facts, time[row])

        def on_arrival(window, row):
            emit_posts(window.arrive(row, time[row]), (seq[row], time[row], None), 0)

        def on_timer(window, now):
            for due, i, posts in window.fire(now):
                emit_posts(posts, (None, None, due), i << MEMBER_SHIFT)

        _replay(order, kind, time, before, last, make, on_arrival, on_timer)
        n = len(out["side"])
        return pa.table({
            "trace_id": pa.array([trace_id] * n, pa.string()), "slot": pa.array(out["slot"], pa.int64()),
            "side": pa.array(out["side"], pa.string()), "pos": pa.array(out["pos"], pa.int64()),
            "id": pa.array(out["id"], pa.string()), "#useq": pa.array(out["#useq"], pa.int64()),
            "#utime": pa.array(out["#utime"], pa.int64()), clock.DUE: pa.array(out[clock.DUE], pa.int64()),
        })

    return kernel
