"""Apama stream-query windows: activations and lots (apama-ccl.md §1.2 to §1.8;
../shared/seeds/apama-batched-windows.txt).

One class, `LotsWindow`, runs every Apama window rule from a `LotRule`: a
time retention (`within d`), a count retention (`retain n`), batching by time
(`every p` seconds) or by count (`every m` items), a uniqueness after the rest
(`with unique k`) and partitions (`partition by`). The model's lot kinds
(`BatchedTime`, `BatchedLength`, `LengthUnique`) run on it; the Apama forms
that are another kind's rule run as that kind (`oracle.dialects.apama`), and
`tests/test_apama_windows.py` runs this class on those forms' rules beside
the other kinds, on generated traces, to show the rules are one.

The rules, for one window:

* **An activation posts one lot.** Apama's glossary: a lot is "the items
  produced by a single activation of a stream query". An activation is one
  unit of work of the driver: an arrival, one stop of a walk, one jump. Its
  lot is the change of what the window shows: `insert` the items that show
  now and did not before, `remove` those that showed and do not now.
* **No change, no post.** Seed: "If no items have arrived or expired since the
  previous window update, the window content is unchanged and consequently
  the query does not execute. The correlator executes the query only when
  the window content changes." Decided: the content is what the window shows,
  after `with unique`; an activation that changes only hidden items posts
  nothing (corpus `apama/retain-unique-hidden-item-leaves-quietly`).
* **When items enter.** Unbatched: at arrival. Batched by time: seed, "the
  window content changes only every second. Nothing appears on any insert or
  remove stream between those points"; "the items 10.0, 20.0 and 40.0 are not
  in the window at the moment they arrive, but are kept until the next
  multiple of 1.0 second." So an item arriving at `a` enters at the first grid
  point at or after `a`, the grid being `creation + k * p`.
  Decided (apama-ccl.md §3 point 1): the grid starts at the window's creation
  (the case's `start_time`; seed: "The correlator creates the query at t=0.0"
  and "the next multiple of 1.0 second"), not at the epoch nor at the first
  item (corpus `apama/within-every-grid-from-creation`). Decided: k counts
  from 0, so an item arriving at the creation instant is on the grid and
  enters at once (`apama/within-every-arrival-at-creation-enters-at-once`).
  Batched by count: seed, "size-based windows can be controlled to update only
  after every m events"; "items always arrive in the window as a multiple of
  the batch size": the m-th item since the last batch lets the m in, as one
  activation.
* **An item arriving exactly on the grid** (§3 point 2). The seed's 30.0 is
  contrasted with the items "not in the window at the moment they arrive", so
  it is in the window at once. The clock fires the grid point's timer before
  an event at the same instant (DESIGN.md, the clock), so decided: the grid
  point's own lot is posted first (what entered and left then), and the item
  enters in its own activation, a second update at the same time, with what
  its entry displaces (`apama/within-every-boundary-arrival-beside-a-leaving-item`,
  `apama/within-1.5-every-1.0-boundary-arrival`).
* **Lifetimes count from arrival.** Seed: "Item lifetimes are calculated from
  the item arrival time, not the point at which the batching allows the item
  into the window." An item leaves a time window at exactly `a + d` (it is in
  for `[a, a + d)`, apama-ccl.md §1.4); batched, at the first grid point at or
  after `a + d` ("the item with the value 30.0 remains in the window for 2.0
  seconds because after 1.5 seconds the batching has not occurred"), so an
  expiry on a grid point leaves there.
* **Items that never enter.** Seed: "If the batch period is larger than the
  duration of the window, then some items can never enter the window, if they
  would have already expired by the time the next batch arrives": an item
  whose exit grid point is its entry grid point is never in the window and is
  posted on neither side (`apama/within-every-period-longer-than-duration`).
  So is an item of a count batch displaced by newer items of the same batch
  (SIZELOT: they "disappear – never having been in the window"; §3 point 4,
  `apama/retain-every-fewer-than-the-batch`).
* **Same-instant expiries form one lot** (GENLOT: "when items with the same
  timestamp expire, they all leave the window at the same time"), listed in
  arrival order.
* **Count retention** keeps the newest n of a partition's entered items that
  have not expired (COMB: "The window contains the last n items received in
  the last d seconds"); with `every`, n applies at batch time.
* **`with unique` after the rest.** UNIQ: "the with unique clause processing
  happens after the rest of the window processing." Of the items the rest
  keeps, only the latest per key shows; a hidden duplicate still holds one of
  the n places ("the arrival of c,5 causes the removal of c,3 even though it
  was one of the last three items received"), and a hidden item that drops
  out posts nothing (`apama/retain-unique-hidden-duplicate-takes-a-slot`).
  A missing key property is the null key (`oracle.windows.keys`).
* **Partitions.** PART: "as if the window operators had been applied
  separately to each partition"; the time grid is the window's, one for all
  partitions. Decided (order inside a lot, §1.2 [INFER]): partition by
  partition in the order partitions were first seen, each in arrival order,
  as `#groupwin` posts its groups (`apama/partition-within-every-retain-lot-by-partition`).
* **A jump** past several grid points (or expiries) is one activation: the
  content moves to what it is at the last grid point passed (unbatched: at
  the jump's time), and its lot is the change; an item that entered and left
  in between is posted on neither side (`apama/within-every-jump-is-one-lot`).
* The end of the trace flushes nothing: items waiting for their batch stay
  out.

What the window shows at an instant is a function of the arrivals alone
(entered, not expired, the newest n, the latest per key): the state is the
list of items that can still show, and each activation recomputes that
function and posts the difference.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from oracle.model import BatchedLength, BatchedTime, Event, LengthUnique
from oracle.windows.base import Post, WindowBase
from oracle.windows.keys import key_of
from oracle.windows.reasons import Reasons


@frozen
class LotRule:
    """Everything an Apama window is: `span` (ms, `within`), `size` (`retain`),
    `period` (ms, `every` with `within`) or `batch` (items, `every` with
    `retain`), `unique` and `partition` keys. None/() leaves a part out."""

    span: int | None = None
    size: int | None = None
    period: int | None = None
    batch: int | None = None
    unique: tuple[str, ...] = ()
    partition: tuple[str, ...] = ()


#: spec class -> its rule (one table: the lot kinds of the model)
RULES = {
    BatchedTime: lambda s: LotRule(span=s.span, size=s.size, period=s.period, unique=s.unique, partition=s.partition),
    BatchedLength: lambda s: LotRule(size=s.size, batch=s.batch, unique=s.unique),
    LengthUnique: lambda s: LotRule(span=s.span, size=s.size, unique=s.unique),
}


class _Item:
    """An arrived item: its arrival order, time, partition and whether it has entered."""

    __slots__ = ("seq", "time", "event", "part", "entered")

    def __init__(self, seq: int, time: int, event: Event, part: tuple[Any, ...], entered: bool):
        self.seq, self.time, self.event, self.part, self.entered = seq, time, event, part, entered


class LotsWindow(WindowBase):
    """An Apama window by its `LotRule` (the module docstring states the rules)."""

    REASONS = Reasons(
        arrival="unbatched: at arrival",
        grid="an item arriving at a enters at the first grid point at or after a",
        on_grid="an item arriving exactly on the grid",
        count_batch="the m-th item since the last batch lets the m in",
        expired="an item leaves a time window at exactly a + d",
        expired_grid="batched, at the first grid point at or after a + d",
        displaced="count retention keeps the newest n of a partition's entered items",
        hidden="of the items the rest keeps, only the latest per key shows",
    )

    def __init__(self, spec, now: int):
        self._setup(RULES[type(spec)](spec), now)

    @classmethod
    def from_rule(cls, rule: LotRule, now: int) -> LotsWindow:
        window = cls.__new__(cls)
        window._setup(rule, now)
        return window

    def _setup(self, rule: LotRule, now: int) -> None:
        self.rule = rule
        self.created = now
        self.items: list[_Item] = []  # arrived and able to show, in arrival order
        self.shown: list[_Item] = []  # what the window shows, partition by partition
        self.parts: dict[tuple[Any, ...], int] = {}  # partition -> first-seen order
        self.waiting: dict[tuple[Any, ...], int] = {}  # count batching: items waiting per partition
        self.seq = 0

    # ----------------------------------------------------------------- the grid

    def _grid_at_or_after(self, t: int) -> int:
        """The first grid point at or after `t` (batched by time)."""
        p = self.rule.period
        return self.created + -((self.created - t) // p) * p

    def _grid_at_or_before(self, t: int) -> int:
        p = self.rule.period
        return self.created + ((t - self.created) // p) * p

    def _entry(self, item: _Item) -> int:
        return self._grid_at_or_after(item.time) if self.rule.period else item.time

    def _exit(self, item: _Item) -> int | None:
        """When the item leaves by time (None: never)."""
        if self.rule.span is None:
            return None
        due = item.time + self.rule.span
        return self._grid_at_or_after(due) if self.rule.period else due

    # ----------------------------------------------------------------- activations

    def on_event(self, event: Event, now: int) -> list[Post]:
        rule = self.rule
        part = key_of(event, rule.partition)
        self.parts.setdefault(part, len(self.parts))
        item = _Item(self.seq, now, event, part, entered=rule.period is None and rule.batch is None)
        self.seq += 1
        self.items.append(item)
        if rule.batch is not None:
            self.waiting[part] = self.waiting.get(part, 0) + 1
            if self.waiting[part] < rule.batch:
                return []
            self.waiting[part] = 0
            for waiting in self.items:
                if waiting.part == part:
                    waiting.entered = True
        elif rule.period is not None:
            if self._entry(item) != now:
                return []  # waits for the next grid point
            item.entered = True
        return self._activate(now)

    def on_timer(self, now: int) -> list[Post]:
        at = self._grid_at_or_before(now) if self.rule.period else now
        if self.rule.period:
            for item in self.items:
                if not item.entered and self._entry(item) <= at:
                    item.entered = True
        return self._activate(at)

    def next_timer(self) -> int | None:
        dues = []
        for item in self.items:
            if not item.entered and self.rule.period:
                dues.append(self._entry(item))
            elif item.entered and (leaves := self._exit(item)) is not None:
                dues.append(leaves)
        return min(dues, default=None)

    def _activate(self, at: int) -> list[Post]:
        """Recompute what shows at `at`; post the change, if any, in lot order."""
        self.items = self._kept(at)
        shown = self._shown(self.items)
        before, after = {item.event for item in self.shown}, {item.event for item in shown}
        inserted = [item for item in shown if item.event not in before]
        removed = [item for item in self.shown if item.event not in after]
        self.shown = shown
        if not inserted and not removed:
            return []
        # a partition's place in the lot: the earliest instant the lot changes it (a
        # jump passes several expiries), then first seen
        first: dict[tuple[Any, ...], int] = {}
        for item in inserted + removed:
            leaves = self._exit(item)
            when = leaves if item in removed and leaves is not None and leaves <= at else at
            first[item.part] = min(first.get(item.part, when), when)

        def order(item: _Item):
            return first[item.part], self.parts[item.part], item.seq

        inserted.sort(key=order)
        removed.sort(key=order)
        return [Post(tuple(i.event for i in inserted), tuple(i.event for i in removed),
                     why={"insert": [self._entered_why(i, at) for i in inserted],
                          "remove": [self._left_why(i, at) for i in removed]})]

    def _entered_why(self, item: _Item, at: int):
        """The rule that let `item` in at `at`."""
        if self.rule.batch is not None:
            return self.REASONS.count_batch
        if self.rule.period is None:
            return self.REASONS.arrival
        return self.REASONS.on_grid if item.time == at else self.REASONS.grid

    def _left_why(self, item: _Item, at: int):
        """The rule that took `item` out at `at`."""
        leaves = self._exit(item)
        if leaves is not None and leaves <= at:
            return self.REASONS.expired_grid if self.rule.period else self.REASONS.expired
        return self.REASONS.hidden if item in self.items else self.REASONS.displaced

    def _kept(self, at: int) -> list[_Item]:
        """The items that can still show after `at`: waiting ones (that will
        enter later), and entered ones not expired and among their partition's
        newest `size`."""
        alive = []
        for item in self.items:
            leaves = self._exit(item)
            if leaves is not None and leaves <= at:
                continue  # expired, or (waiting) would leave where it enters: never in
            alive.append(item)
        if self.rule.size is None:
            return alive
        room: dict[tuple[Any, ...], int] = {}
        kept = []
        for item in reversed(alive):
            if not item.entered:
                kept.append(item)
            elif room.get(item.part, 0) < self.rule.size:
                room[item.part] = room.get(item.part, 0) + 1
                kept.append(item)
        return kept[::-1]

    def _shown(self, items: list[_Item]) -> list[_Item]:
        """Entered items, the latest per unique key of each partition,
        partition by partition (first seen first), then in arrival order."""
        entered = [item for item in items if item.entered]
        if self.rule.unique:
            latest = {(item.part, key_of(item.event, self.rule.unique)): item for item in entered}
            entered = sorted(latest.values(), key=lambda item: item.seq)
        entered.sort(key=lambda item: self.parts[item.part])  # stable: arrival order within a partition
        return entered

    def contents(self) -> list[Event]:
        return [item.event for item in self.shown]
