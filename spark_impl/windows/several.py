"""Several data windows on one stream (esper.md §6): `retain-union`, and the
intersections whose members decide alone, as relational operations over the
members' own posts.

Each member runs as its own family over the same items and context: its rows
are what it would post standing alone. A member's row order within a unit is
kept, behind the member's index: `pos` becomes `member << 40 | pos` (a member's
`pos` is a seq or a rank, far below 2**40), so a side's rows sort by (due,
slot, member, the member's own order), the order in which the members post.

`retain-union`: no member ever learns what another did, so each runs exactly
as alone. Every arrival is posted as new at once (when every member is a
first-X window, only an arrival some member took). An event leaves the union
when its last reference goes: when every member has removed it, at the latest
of those removals (by unit, then due time, then member). A member that never
removes it (a first-X member that refused it, or one that never lets go) keeps
it in the union for ever. One aggregate per event: the count of members
removing it and the latest removal (`max_by`).

Intersection: a member drops quietly what another removed, which changes what
a length, sort, first-X or batch member does next (a freed slot, a moved
front): those are sequential, and an intersection with any member not in
`ALONE` replays its members in a kernel per sub-window
(spark_impl/windows/intersect.py). The members in `ALONE` remove an event at
a moment that depends on that event and the arrivals alone (its expiry, the
next arrival under its key, the next arrival at all, the end of its
accumulation), so a quiet removal elsewhere only means they have nothing left
to remove then: an intersection of those only is the fast plan here, an
event leaving at the earliest of its members' removals, inserted at its own
arrival. Without groupwin and with `#time`, `#unique`, `#lastevent` and
`#keepall` members only (one `#time` at most), each member's removal of an
event is a column of the event's own row (`removed_on_row`): its expiry's hit
(`clock.expiries`) or the next arrival under its key (`lead`), so the earliest
is a `least` of structs, with no member posts to union and aggregate.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle.model import (
    Intersection,
    KeepAll,
    LastEvent,
    RetainUnion,
    Time,
    TimeAccum,
    TimeBatch,
    TimeLengthBatch,
    TimeOrder,
    Unique,
    nested_specs,
)
from spark_impl import clock
from spark_impl.windows import Context, family
from spark_impl.windows.base import ARRIVAL, events, quoted
from spark_impl.windows.intersect import FIRST_X, sequential_intersection

#: members that may post in a timer's unit
TIMED = (Time, TimeBatch, TimeLengthBatch, TimeAccum, TimeOrder)
#: members whose removal of an event does not depend on what other members removed
ALONE = (Time, TimeAccum, TimeOrder, Unique, LastEvent, KeepAll)
#: members whose removal of an event is a column of the event's row (`removed_on_row`)
ON_ROW = (Time, Unique, LastEvent, KeepAll)
CONTRACT = ("trace_id", "seq", "phase", "time", "slot_due", "slot", "side", "pos", "id")
_KEY = "named_struct('seq', seq, 'phase', phase, 'time', time, 'due', slot_due, 'member', `#m`, 'pos', pos)"
_ROW = "named_struct('seq', seq, 'phase', phase, 'time', time, 'slot_due', slot_due, 'slot', slot, 'pos', pos)"


def member_rows(items: DataFrame, members: tuple, ctx: Context, *, firing_due: bool = True) -> DataFrame:
    """Every member's posts as alone, with `#m`, the member's index, and the
    event's properties where every member's rows carry them (else the
    pipeline joins them back).

    Each member's timer is a slot of its own: in a jump the members' timers
    post in (due, member) order, each member's post whole. A family's timer
    rows may carry each row's own due time (an ungrouped `#time`), so where two
    members or more have timers, a member's rows of one timer unit take the
    due time it fired at (their smallest) and their order as `pos`
    (`firing_due=False` leaves them, for a caller that works the due out)."""
    posted = [family(member).posts(items, member, ctx) for member in members]
    props = [quoted(p) for p in ctx.properties if all(p in rows.columns for rows in posted)]
    if len(props) < len(ctx.properties):
        props = []
    rows = None
    # at an arrival one sub-window posts (the arriving event's group), so its slot orders
    # nothing; families write it differently there (a timed one its group's, others 0): 0
    arrival_slot = f"CASE WHEN phase = {ARRIVAL} THEN CAST(0 AS BIGINT) ELSE slot END AS slot"
    for index, member_posts in enumerate(posted):
        member_posts = member_posts.selectExpr(*(c if c != "slot" else arrival_slot for c in CONTRACT),
                                               f"{index} AS `#m`", *props)
        rows = member_posts if rows is None else rows.unionByName(member_posts)
    if firing_due and sum(isinstance(m, TIMED) for m in members) >= 2:
        unit = "PARTITION BY trace_id, slot, seq, phase, time, `#m`"
        rows = rows.selectExpr(
            *(c for c in CONTRACT if c not in ("slot_due", "pos")), "`#m`", *props,
            f"CASE WHEN phase = 0 THEN min(slot_due) OVER ({unit}) ELSE slot_due END AS slot_due",
            f"CASE WHEN phase = 0 THEN row_number() OVER ({unit} ORDER BY slot_due, pos) ELSE pos END AS pos")
    return rows


def _props(rows: DataFrame) -> list[str]:
    """The property columns `rows` carries (`member_rows`)."""
    return [quoted(c) for c in rows.columns if c not in CONTRACT and c != "#m"]


def arrivals(rows: DataFrame, props: list[str]) -> DataFrame:
    """Each event of `rows` inserted at its own arrival (a post of its own
    unit), with the property columns `props`."""
    return rows.selectExpr("trace_id", "seq", f"{ARRIVAL} AS phase", "time", "time AS slot_due",
                           "CAST(0 AS BIGINT) AS slot", "'insert' AS side", "seq AS pos", "id", *props)


def removals(rows: DataFrame, pick: str, members: int | None) -> DataFrame:
    """Per event, the member removal `pick` (`min_by` or `max_by` over (unit: item, phase, clock;
    due, member, pos)); with `members`, only events that many members remove."""
    props = _props(rows)
    carried = "".join(f", '{p.strip('`')}', {p}" for p in props)  # property names are identifiers
    removed = rows.where("side = 'remove'").selectExpr(
        "trace_id", "id", f"named_struct('row', {_ROW}, 'member', `#m`{carried}) AS `#v`", f"{_KEY} AS `#k`")
    aggregates = [f"{pick}(`#v`, `#k`) AS `#r`"] + ([] if members is None else ["count(1) AS `#n`"])
    picked = removed.groupBy("trace_id", "id").agg(*(F.expr(a) for a in aggregates))
    if members is not None:
        picked = picked.where(f"`#n` = {members}")
    return picked.selectExpr(
        "trace_id", "`#r`.row.seq AS seq", "`#r`.row.phase AS phase", "`#r`.row.time AS time",
        "`#r`.row.slot_due AS slot_due", "`#r`.row.slot AS slot", "'remove' AS side",
        "shiftleft(CAST(`#r`.member AS BIGINT), 40) + `#r`.row.pos AS pos", "id",
        *(f"`#r`.{p} AS {p}" for p in props),
    )


def retain_union(items: DataFrame, spec: RetainUnion, ctx: Context) -> DataFrame:
    rows = member_rows(items, spec.members, ctx)
    if all(isinstance(m, FIRST_X) for m in spec.members):
        # a first-X member inserts an event only at its own arrival: the taken arrivals
        taken = rows.where("side = 'insert'").select("trace_id", "id").distinct()
        arrived = events(items).join(taken, ["trace_id", "id"], "left_semi")
    else:
        arrived = events(items)
    return arrivals(arrived, _props(rows)).unionByName(removals(rows, "max_by", len(spec.members)))


def _own_due(member, index: int) -> str:
    """SQL: the due time of the removal of the row's event by timed member
    `index` (`#at`: the event's arrival clock, `#ts`: its timestamp)."""
    if isinstance(member, Time):
        return f"`#at` + {member.span}"
    if isinstance(member, TimeOrder):
        return f"`#ts_{index}` + {member.span}"
    return "slot_due"


def stale_callbacks_order_jumps(spec: Intersection, ctx: Context) -> bool:
    """Whether a `#time` member's stale callback can order posts. With
    `stale_time_timers` the callback stays where it was when another member
    drops the member's oldest rows; it then drops nothing in a walk and in a
    jump drops what the fresh one would, so it shows only in the order of the
    several timer handles one jump fires (groups, or several timed members)
    and only where a member other than `#keepall` drops rows beside the `#time`
    one. That clock is no row's own due: the kernel (intersect.py) keeps it."""
    several = bool(ctx.group_keys) or sum(isinstance(m, TIMED) for m in spec.members) > 1
    timed = any(isinstance(m, Time) for m in spec.members)
    dropping = sum(not isinstance(m, KeepAll) for m in spec.members) > 1
    return spec.stale_time_timers and several and timed and dropping


def intersection(items: DataFrame, spec: Intersection, ctx: Context) -> DataFrame:
    """An event leaves in the first unit any member removes it in. Within that
    unit the members fire in (due, member) order, each member's timer due at
    the oldest due time among the events it still holds (a stale `#time`
    callback that could order them runs in the kernel instead),
    so among the members removing the event there, the one whose removals of
    still-held events start earliest posts it. Without groupwin and with at
    most one timed member, that is the first removal by (unit, member): one
    aggregate per event."""
    if not all(isinstance(m, ALONE) for m in spec.members) or stale_callbacks_order_jumps(spec, ctx):
        return sequential_intersection(items, spec, ctx)
    if (not ctx.group_keys and all(isinstance(m, ON_ROW) for m in spec.members)
            and sum(isinstance(m, Time) for m in spec.members) <= 1):
        return removed_on_row(items, spec, ctx)
    if not ctx.group_keys and sum(isinstance(m, TIMED) for m in spec.members) <= 1:
        # one sub-window, at most one member posting in timer units: the members'
        # own due times order nothing, and the first removal by (unit, member) is it
        rows = member_rows(items, spec.members, ctx)
        return arrivals(events(items), _props(rows)).unionByName(removals(rows, "min_by", None))
    rows = member_rows(items, spec.members, ctx, firing_due=False).where("side = 'remove'")
    props = _props(rows)
    stamps = [f"CAST({quoted(m.timestamp)} AS BIGINT) AS `#ts_{i}`" for i, m in enumerate(spec.members)
              if isinstance(m, TimeOrder)]
    arrived = events(items).selectExpr("trace_id", "id", "time AS `#at`", *stamps)
    own = " ".join(f"WHEN {i} THEN {_own_due(m, i)}" for i, m in enumerate(spec.members))
    dued = rows.join(arrived, ["trace_id", "id"]).selectExpr(
        *CONTRACT, "`#m`", *props, f"CASE WHEN phase = 0 THEN CASE `#m` {own} END ELSE slot_due END AS `#own`")
    unit = "named_struct('seq', seq, 'phase', phase, 'time', time)"
    first = dued.selectExpr("*", f"{unit} = min({unit}) OVER (PARTITION BY trace_id, id) AS `#first`").where("`#first`")
    # a member's firing: its rows take the due time it fired at, and their order in its post as `pos` (a
    # `#time_order` member posts by due time, not by arrival)
    firing = "OVER (PARTITION BY trace_id, slot, seq, phase, time, `#m`"
    fired = first.selectExpr(
        *(c for c in CONTRACT if c not in ("slot_due", "pos")), "`#m`", *props, f"min(`#own`) {firing}) AS slot_due",
        f"CASE WHEN phase = 0 THEN row_number() {firing} ORDER BY slot_due, pos) ELSE pos END AS pos")
    picked = fired.selectExpr("*", "row_number() OVER (PARTITION BY trace_id, id ORDER BY slot_due, `#m`) AS `#r`")
    removed = picked.where("`#r` = 1").selectExpr(
        *(c for c in CONTRACT if c != "pos"), "shiftleft(CAST(`#m` AS BIGINT), 40) + pos AS pos", *props)
    return arrivals(events(items), props).unionByName(removed)


def refusing_unsafe_nulls(posts):
    """`posts` over items whose events are checked first: an event with a null
    a member cannot take (`Spec.unsafe_nulls`: a null timestamp, a null
    `#rank` sort value or key) fails the job naming the trace and seq, as the
    oracle refuses the trace (`null_unsafe_member`)."""

    def checked(items: DataFrame, spec, ctx: Context) -> DataFrame:
        names = list(dict.fromkeys(n for member in spec.members for part in nested_specs(member)
                                   for n in part.unsafe_nulls()))
        if not names:
            return posts(items, spec, ctx)
        null = " OR ".join(f"{quoted(n)} IS NULL" for n in names)
        message = (f"concat('trace ', trace_id, ' seq ', seq, ': event ', coalesce(id, 'null'), ': a property of "
                   f"{', '.join(names)} is null, which a member of the {spec.KIND} cannot take (not modelled)')")
        kind = f"CASE WHEN kind = 'event' AND ({null}) THEN raise_error({message}) ELSE kind END"
        return posts(items.withColumn("kind", F.expr(kind)), spec, ctx)

    return checked


POSTS = {Intersection: refusing_unsafe_nulls(intersection), RetainUnion: refusing_unsafe_nulls(retain_union)}


def removed_on_row(items: DataFrame, spec: Intersection, ctx: Context) -> DataFrame:
    """The intersection of `ON_ROW` members (at most one `#time`) over one
    sub-window: per event, each member's removal as a struct (unit: seq, phase,
    clock; the timer's due; the member; its place in the member's post), the
    first of them by `least`, and two post rows from the event's own row.

    `#time(t)`: the hit of arrival + t (`clock.expiries`), a timer post due at
    arrival + t, in arrival order. `#unique(keys)`, `#lastevent`: the next
    arrival under the key (none: of the sub-window), in that arrival's post.
    `#keepall`: never."""
    props = [quoted(p) for p in ctx.properties]
    carry = [c for c in dict.fromkeys(["trace_id", "seq", "id", "time", *props])]
    hit = quoted(clock.HIT)
    removal = ("named_struct('seq', CAST({seq} AS BIGINT), 'phase', {phase}, 'time', CAST({time} AS BIGINT), "
               "'due', CAST({due} AS BIGINT), 'member', {member}, 'pos', seq)")
    timed = [(i, m) for i, m in enumerate(spec.members) if isinstance(m, Time)]
    if timed:
        index, member = timed[0]
        due = f"(time + {member.span})"
        rows = clock.expiries(items, member.span, carry, jumps=ctx.jumps).selectExpr(
            *carry, f"CASE WHEN {hit} IS NOT NULL THEN "
            + removal.format(seq=f"{hit}.seq", phase=0, time=clock.fire_time(hit, due), due=due, member=index)
            + f" END AS `#r{index}`")
    else:
        rows = events(items).selectExpr(*carry)
    for index, member in enumerate(spec.members):
        if isinstance(member, (Unique, LastEvent)):
            keys = member.keys if isinstance(member, Unique) else ()
            order = f"OVER (PARTITION BY {', '.join(['trace_id', *(quoted(k) for k in keys)])} ORDER BY seq)"
            rows = rows.selectExpr("*", f"lead(seq) {order} AS `#ns`", f"lead(time) {order} AS `#nt`").selectExpr(
                *(quoted(c) for c in rows.columns), "CASE WHEN `#ns` IS NOT NULL THEN "
                + removal.format(seq="`#ns`", phase=ARRIVAL, time="`#nt`", due="`#nt`", member=index)
                + f" END AS `#r{index}`")
    found = [f"`#r{i}`" for i, m in enumerate(spec.members) if not isinstance(m, KeepAll)]
    if not found:
        return arrivals(events(items), props)
    first = f"least({', '.join(found)})" if len(found) > 1 else found[0]
    inserted = f"named_struct('seq', seq, 'phase', {ARRIVAL}, 'time', time, 'due', time, 'side', 'insert', 'pos', seq)"
    removed = ("CASE WHEN `#f` IS NOT NULL THEN named_struct('seq', `#f`.seq, 'phase', `#f`.phase, 'time', `#f`.time, "
               "'due', `#f`.due, 'side', 'remove', 'pos', shiftleft(CAST(`#f`.member AS BIGINT), 40) + `#f`.pos) END")
    posted = rows.selectExpr("trace_id", "id", *props, f"{first} AS `#f`", "seq", "time").selectExpr(
        "trace_id", "id", *props, f"explode(array({inserted}, {removed})) AS `#p`").where("`#p` IS NOT NULL")
    return posted.selectExpr(
        "trace_id", "`#p`.seq AS seq", "`#p`.phase AS phase", "`#p`.time AS time", "`#p`.due AS slot_due",
        "CAST(0 AS BIGINT) AS slot", "`#p`.side AS side", "`#p`.pos AS pos", "id", *props)
