"""Several data windows on one stream: the intersection (Esper's default) and
`retain-union` (seed 14.1; esper.md §6).

Each member is a complete window of its own, created with the combined one,
with a timer handle of its own (`timer_handles`): the members' timers fire in
(due time, member order) order, each once per firing of the combined window. A member told that events left elsewhere drops
them without posting (`discard`, Esper's `update(null, oldData)`). An event
a member's Esper view cannot take (a null timestamp, a null `#rank` sort
value: `Spec.unsafe_nulls`) makes the trace invalid, naming the item: Esper's
view throws or misfiles it after the members before it took the event, a
partial state not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from oracle.model import (
    BATCH_WINDOWS,
    Event,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    Intersection,
    RetainUnion,
    null_unsafe_member,
)
from oracle.windows.base import EventError, Post, WindowBase
from oracle.windows.reasons import Reasons, reasons_by_event
from oracle.windows.time import TimeWindow

#: members that may refuse an arrival (Esper's `AsymetricDataWindowViewForge`)
FIRST_X = (FirstLength, FirstTime, FirstUnique, FirstEvent)


def _make(spec, now: int):
    from oracle.windows import make_window  # the table of windows includes this module's

    return make_window(spec, now)


def _ordered(events: Iterable[Event]) -> list[Event]:
    """Each event once, first occurrence first."""
    return list(dict.fromkeys(events))


def _removed(posts: list[Post]) -> list[Event]:
    return [e for post in posts for e in post.remove]


def _label(i: int, spec) -> str:
    """How a reason names member `i`: its place and its Esper text."""
    from oracle.dialects import render
    from oracle.model import spec_kind

    try:
        text = render(spec, "esper")
    except Exception:  # a member Esper does not write (an Apama lot's part): its kind
        text = spec_kind(spec)
    return f"member {i + 1}, {text}"


class _Members(WindowBase):
    def __init__(self, spec: Intersection | RetainUnion, now: int):
        self.spec = spec
        self.members = [_make(member, now) for member in spec.members]
        self.labels = [_label(i, member) for i, member in enumerate(spec.members)]

    def _removals(self, i: int, posts: list[Post]) -> dict[Event, Any]:
        """Each event member `i` removed in `posts`, to why: the member's rule, named."""
        return {event: self.REASONS.member.via(reason, self.labels[i])
                for event, reason in reasons_by_event(posts, "remove").items()}

    def next_timer(self) -> int | None:
        dues = [due for due in (m.next_timer() for m in self.members) if due is not None]
        return min(dues) if dues else None

    def timer_handles(self) -> list[tuple[int, int]]:
        """One timer handle per member with a timer armed: its index."""
        return [(due, i) for i, member in enumerate(self.members) if (due := member.next_timer()) is not None]

    def check_nulls(self, event: Event) -> None:
        """Refuse an event a member's Esper view cannot take (`null_unsafe_member`)."""
        problem = null_unsafe_member(self.spec, event)
        if problem is not None:
            raise EventError(problem)

    def on_timer(self, now: int) -> list[Post]:
        posts: list[Post] = []
        for due, i in sorted(self.timer_handles()):
            if due <= now:
                posts += self.fire(i, now)
        return posts

    def fire(self, handle: int, now: int) -> list[Post]:
        """Member `handle`'s timer, if it is still due (an earlier member's
        firing may have emptied it), and what the combined window posts for it."""
        due = self.members[handle].next_timer()
        return self.fired(handle, self.members[handle].on_timer(now) if due is not None and due <= now else [])

    def fired(self, i: int, posts: list[Post]) -> list[Post]:
        raise NotImplementedError

    def discard_elsewhere(self, source: int | None, gone: list[Event]) -> None:
        if gone:
            gone_set = set(gone)
            for j, member in enumerate(self.members):
                if j != source:
                    member.discard(gone_set)

    def on_set(self, values: Mapping[str, Any], now: int) -> list[Post]:
        return [post for member in self.members for post in member.on_set(values, now)]


class IntersectionWindow(_Members):
    """Several data windows, an event held while every member holds it
    (esper.md §6 "Intersection").

    Without a batch member:
    * Arrival: the event goes to every member in order. Every event a member
      pushed out is then dropped by all the other members. One post: new = the
      arrival, old = every event pushed out by any member. Decided: Esper keeps
      the old events in a `HashSet` (order unspecified); here they are in
      member order, each member's own order, each once.
    * With a first-X member (`#firstlength`, `#firsttime`, `#firstunique`,
      `#firstevent`): an arrival some member did not take (posted no new data
      for) is dropped by every member and not posted as new. It is posted as
      old only if some member pushed out an event in the same arrival, and then
      first (Esper's `IntersectAsymetricView` adds the refused arrivals to the
      removal set it posts when there is remove-stream data). An arrival a
      member pushes out at once is then posted as old only, not as new.
    * A member's timer post: its old events are dropped by the other members
      and posted as old, one post per member, in (due, member) order. A
      `#time` member's timer is due where `stale_time_timers` puts it
      (`TimeWindow`): with Esper's rule a quiet removal leaves it stale.
    With a batch member (at most one, `IntersectBatchView`):
    * Arrival: the other members take it first; every event they push out is
      dropped by all members (the batch member's open batch included) and is
      not posted. The arrival goes on to the batch member only if no member
      pushed it out and every first-X member took it (Esper compares with each
      first-X member's latest new data: one that has taken nothing yet does
      not refuse).
    * Only the batch member's posts are posted, as they are; the events one
      releases as new are then dropped by every other member, so uniqueness
      and counts start anew with each batch. A timer of another member drops
      its old events from all members and posts nothing.
    * `contents()`: the batch member's (the last released batch); without a
      batch member, the first member's (all members hold the same events).
    """

    REASONS = Reasons(arrival="the event goes to every member in order",
                      member="every event a member pushed out is then dropped by all the other members",
                      refused="an arrival some member did not take")

    def __init__(self, spec: Intersection, now: int):
        super().__init__(spec, now)
        for member in self.members:
            if isinstance(member, TimeWindow):
                member.keeps_stale_timer = spec.stale_time_timers
        self.first_x = [isinstance(m, FIRST_X) for m in spec.members]
        self.batch = next((i for i, m in enumerate(spec.members) if isinstance(m, BATCH_WINDOWS)), None)
        self.latest_new: list[tuple[Event, ...] | None] = [None] * len(self.members)

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.check_nulls(event)
        if self.batch is not None:
            return self.to_batch(event, now)
        refused = []
        pushed: list[list[Event]] = []
        why: dict[Event, Any] = {}
        for i, member in enumerate(self.members):
            posts = member.on_event(event, now)
            if any(self.first_x) and not any(event in post.insert for post in posts):
                refused.append(event)
                why.setdefault(event, self.REASONS.refused.via(None, self.labels[i]))
            pushed.append(_removed(posts))
            why = {**self._removals(i, posts), **why}
        self.discard_elsewhere(None, _ordered(refused))
        for i, gone in enumerate(pushed):
            self.discard_elsewhere(i, gone)
        old = _ordered(e for gone in pushed for e in gone)
        if not any(self.first_x):
            return [Post((event,), old, why={"insert": self.REASONS.arrival, "remove": [why[e] for e in old]})]
        removal = _ordered([*refused, *old])
        new = () if event in removal else (event,)
        posted_old = removal if old else []
        if not new and not posted_old:
            return []
        return [Post(new, posted_old, why={"insert": self.REASONS.arrival, "remove": [why[e] for e in posted_old]})]

    def to_batch(self, event: Event, now: int) -> list[Post]:
        pushed: list[list[Event]] = []
        for i, member in enumerate(self.members):
            if i == self.batch:
                pushed.append([])
                continue
            posts = member.on_event(event, now)
            news = tuple(e for post in posts for e in post.insert)
            if posts and news:
                self.latest_new[i] = news
            pushed.append(_removed(posts))
        for i, gone in enumerate(pushed):
            self.discard_elsewhere(i, gone)
        removed = {e for gone in pushed for e in gone}
        taken = all(latest is None or event in latest
                    for latest, first_x in zip(self.latest_new, self.first_x) if first_x)
        if event in removed or not taken:
            return []
        return self.batch_posts(self.members[self.batch].on_event(event, now))

    def batch_posts(self, posts: list[Post]) -> list[Post]:
        for post in posts:
            self.discard_elsewhere(self.batch, list(post.insert))
        return posts

    def fired(self, i: int, posts: list[Post]) -> list[Post]:
        if i == self.batch:
            return self.batch_posts(posts)
        gone = _removed(posts)
        self.discard_elsewhere(i, gone)
        if not gone or self.batch is not None:
            return []
        why = self._removals(i, posts)
        return [Post((), gone, why={"remove": [why[e] for e in gone]})]

    def contents(self) -> list[Event]:
        return self.members[self.batch if self.batch is not None else 0].contents()


class RetainUnionWindow(_Members):
    """Several data windows, an event held while any member holds it
    (esper.md §6 "Retain-union").

    * Arrival: the event goes to every member in order and counts one
      reference per member; it is posted as new at once, whatever the members
      do with it (a batch member only buffers it).
    * A member's removal (pushed out, expired, a batch member's previous batch
      leaving) takes one reference away; an event is posted as old when its
      last reference goes, in member order, each member's removal order.
    * An event a member never held (a first-X member refused it) keeps that
      member's reference for ever, so it is never posted as old (Esper counts
      every member at arrival). Decided: an arrival is dropped, posted neither
      as new nor as old, only when every member is a first-X member and none
      took it (Esper's rule compares with the last member post seen, which
      comes to the same for any member that takes every arrival).
    * A member's timer post is one post of what lost its last reference (none:
      no post), in (due, member) order. Batch members take part with their old
      data only.
    * `contents()`: the events with references left, in arrival order.
    """

    REASONS = Reasons(arrival="it is posted as new at once",
                      member="an event is posted as old when its last reference goes")

    def __init__(self, spec: RetainUnion, now: int):
        super().__init__(spec, now)
        self.all_first_x = all(isinstance(m, FIRST_X) for m in spec.members)
        self.references: dict[Event, int] = {}

    def release(self, gone: list[Event]) -> list[Event]:
        """The events that lost their last reference with `gone` (in order)."""
        last = []
        for event in gone:
            left = self.references.get(event)
            if left is None:
                continue
            if left == 1:
                del self.references[event]
                last.append(event)
            else:
                self.references[event] = left - 1
        return last

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.check_nulls(event)
        self.references[event] = len(self.members)
        member_posts = [member.on_event(event, now) for member in self.members]
        if self.all_first_x and not any(event in post.insert for posts in member_posts for post in posts):
            del self.references[event]
            return []
        old = self.release([e for posts in member_posts for e in _removed(posts)])
        why: dict[Event, Any] = {}  # the removal that took the last reference
        for i, posts in enumerate(member_posts):
            why.update(self._removals(i, posts))
        return [Post((event,), old, why={"insert": self.REASONS.arrival, "remove": [why[e] for e in old]})]

    def fired(self, i: int, posts: list[Post]) -> list[Post]:
        old = self.release(_removed(posts))
        if not old:
            return []
        why = self._removals(i, posts)
        return [Post((), old, why={"remove": [why[e] for e in old]})]

    def contents(self) -> list[Event]:
        return list(self.references)
