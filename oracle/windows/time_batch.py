"""Time-based tumbling windows: `#time_batch(t[, ref][, flags])`,
`#time_length_batch(t, n[, flags])` and `#ext_timed_batch(ts, t[, ref])`.

Both release batches on a grid `ref + k*t`. The next grid point strictly after
a time `c` is Esper's `deltaAddWReference` (esper.md §0.2): `c + ((ref - c) mod t)`,
or `c + t` where that distance is 0.
"""

from __future__ import annotations

from collections.abc import Collection

from oracle.model import Event, ExtTimedBatch, TimeBatch, TimeLengthBatch
from oracle.windows.base import Post, WindowBase
from oracle.windows.keys import timestamp_of
from oracle.windows.reasons import Reasons


def next_grid_point(current: int, reference: int, span: int) -> int:
    """The first point of the grid `reference + k*span` strictly after `current`."""
    return current + ((reference - current) % span or span)


class _TimedBatch(WindowBase):
    """What `#time_batch` and `#time_length_batch` share: an open batch, the
    previous batch, one timer, and the release rule: one post, new = the open
    batch, old = the previous one; both empty posts nothing unless
    FORCE_UPDATE (an empty post); the timer re-armed only when it posted."""

    def __init__(self, force_update: bool, due: int | None):
        self.force_update = force_update
        self.batch: list[Event] = []
        self.previous: list[Event] = []
        self.due = due

    def release(self, next_due: int, why) -> list[Post]:
        """Release the open batch (`why`: the reasons of its rows); the timer
        is re-armed at `next_due` if it posted."""
        released, previous = self.batch, self.previous
        posts = [Post(released, previous, why=why)] if released or previous or self.force_update else []
        self.due = next_due if posts else None
        self.previous, self.batch = released, []
        return posts

    def next_timer(self) -> int | None:
        return self.due

    def discard(self, gone: Collection[Event]) -> None:
        self.batch = [e for e in self.batch if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.previous)


class TimeBatchWindow(_TimedBatch):
    """`#time_batch(t[, ref][, "FORCE_UPDATE, START_EAGER"])`: batches released
    every t ms of runtime time (seed 14.3.5; esper.md §2 `#time_batch`).

    * Reference point: `ref` if given, else the runtime time of the first arrival
      ever; it is set once and kept for the life of the window, so batches stay on
      the grid `ref + k*t` even after the window went idle.
    * Arrival: buffered, nothing posted. If no timer is armed, one is armed at the
      next grid point strictly after `now` (an arrival exactly on a grid point,
      after that point's batch fired, goes into the next batch).
    * Timer at `now`: one post, new = the open batch, old = the previous batch
      (arrival order each). If both are empty nothing is posted, unless
      FORCE_UPDATE: then an empty post. The timer is re-armed at the next grid point
      after `now` only if either batch was non-empty, or FORCE_UPDATE; so without
      it the timer stops after the first interval where both were empty, and the
      next arrival re-arms it on the original grid.
    * START_EAGER (which implies FORCE_UPDATE, seed 14.3.5) arms the timer at
      creation, with the reference = the creation time; the `ref` parameter is then
      not consulted (esper.md §2, [src]).
    * A jump over several grid points fires once, at the jump target; the next
      timer is the next grid point after the target (esper.md §0.1).
    * `contents()`: the last released batch (see `LengthBatchWindow`).
    """

    REASONS = Reasons(batch="timer at now: one post, new = the open batch",
                      previous="old = the previous batch",
                      jump="a jump over several grid points fires once, at the jump target")

    def __init__(self, spec: TimeBatch, now: int):
        self.span = spec.span
        self.reference = now if spec.start_eager else spec.reference
        super().__init__(spec.force_update,
                         next_grid_point(now, self.reference, self.span) if spec.start_eager else None)

    def on_event(self, event: Event, now: int) -> list[Post]:
        if self.reference is None:
            self.reference = now
        if self.due is None:
            self.due = next_grid_point(now, self.reference, self.span)
        self.batch.append(event)
        return []

    def on_timer(self, now: int) -> list[Post]:
        reasons = self.REASONS
        if self.due is not None and self.due < now:  # a jump past the grid point
            why = {"insert": reasons.jump, "remove": reasons.previous.via(None, "released by a jump")}
        else:
            why = {"insert": reasons.batch, "remove": reasons.previous}
        return self.release(next_grid_point(now, self.reference, self.span), why)


class TimeLengthBatchWindow(_TimedBatch):
    """`#time_length_batch(t, n[, "FORCE_UPDATE, START_EAGER"])`: a batch released
    when it holds n events or when its timer fires, whichever comes first (seed
    14.3.7; esper.md §2 `#time_length_batch`).

    * The timer is never on a grid: it is always armed at `now + t`.
    * Arrival: buffered. If the buffer now holds n events, it is released at once
      (the pending timer cancelled); otherwise a timer is armed at `now + t` if
      none is pending.
    * Release at `now` (count or timer): one post, new = the buffer, old = the
      previous batch (arrival order each); both empty posts nothing, unless
      FORCE_UPDATE: an empty post. Then the timer is re-armed at `now + t` if
      either batch was non-empty, or FORCE_UPDATE; so a count-triggered batch
      restarts the clock.
    * START_EAGER (implies FORCE_UPDATE) arms the timer at creation; without it,
      FORCE_UPDATE does nothing until the first arrival.
    * A jump fires the timer once, at the jump target, and re-arms it at the
      target + t: the schedule drifts.
    * `contents()`: the last released batch (see `LengthBatchWindow`).
    """

    REASONS = Reasons(count="if the buffer now holds n events, it is released at once",
                      timer="release at now (count or timer)",
                      previous="old = the previous batch")

    def __init__(self, spec: TimeLengthBatch, now: int):
        self.span, self.size = spec.span, spec.size
        super().__init__(spec.force_update, now + self.span if spec.start_eager else None)

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.batch.append(event)
        if len(self.batch) >= self.size:
            return self.release(now + self.span, {"insert": self.REASONS.count, "remove": self.REASONS.previous})
        if self.due is None:
            self.due = now + self.span
        return []

    def on_timer(self, now: int) -> list[Post]:
        return self.release(now + self.span, {"insert": self.REASONS.timer, "remove": self.REASONS.previous})


class ExtTimedBatchWindow(WindowBase):
    """`#ext_timed_batch(ts, t[, ref])`: batches cut by the events' own timestamps
    (seed 14.3.6; esper.md §2 `#ext_timed_batch`).

    * No runtime timers: batches are released only by arrivals.
    * Reference point: `ref` if given, else the first event's timestamp.
    * Arrival with timestamp `ts`: if the open batch is non-empty, let `oldest` be
      the timestamp of its first event (Esper's `determineOldestTimestamp`: the
      first in arrival order, not the smallest) and `close` the next grid point
      strictly after `oldest`. If `ts >= close` (inclusive), one post: new = the open batch,
      old = the previous batch; the open batch becomes the previous one. Then the
      arrival joins the (new) open batch: the event that closes a batch starts the
      next one.
    * An out-of-order event (`ts` before `oldest`) just joins the open batch. No
      empty batch is ever posted: after a gap, one late event closes the batch
      however many intervals old it is.
    * `contents()`: the last released batch (see `LengthBatchWindow`).

    * An event whose timestamp is null (missing) posts nothing and changes
      nothing: Esper's view throws on it and the runtime goes on (observed;
      `oracle.windows.keys.timestamp_of`). Decided: a timestamp that is not
      an integer makes the trace invalid, naming the item.
    """

    REASONS = Reasons(closed="if ts >= close (inclusive), one post: new = the open batch",
                      previous="old = the previous batch")

    def __init__(self, spec: ExtTimedBatch, now: int):
        self.timestamp = spec.timestamp
        self.span = spec.span
        self.reference = spec.reference
        self.batch: list[Event] = []
        self.oldest: int | None = None
        self.previous: list[Event] = []

    def on_event(self, event: Event, now: int) -> list[Post]:
        ts = timestamp_of(event, self.timestamp)
        if self.reference is None:
            self.reference = ts
        posts = []
        if self.batch and ts >= next_grid_point(self.oldest, self.reference, self.span):
            posts.append(Post(self.batch, self.previous,
                              why={"insert": self.REASONS.closed, "remove": self.REASONS.previous}))
            self.previous, self.batch = self.batch, []
        if not self.batch:
            self.oldest = ts
        self.batch.append(event)
        return posts

    def discard(self, gone: Collection[Event]) -> None:
        self.batch = [e for e in self.batch if e not in gone]
        if self.batch:
            self.oldest = timestamp_of(self.batch[0], self.timestamp)

    def contents(self) -> list[Event]:
        return list(self.previous)

