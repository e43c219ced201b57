"""CCL's retention policies that are no other kind's rule: `KEEP n ROWS SLACK s`,
`KEEP EVERY n ROWS`, `KEEP EVERY t` (apama-ccl.md §2.3, §2.4, §2.6).

The policies that are another kind's rule run as that kind: `KEEP n ROWS` is
`#length(n)` (`LengthWindow`), `KEEP t` is `#time(t)` (`TimeWindow`), `KEEP
ALL` is `#keepall` (`KeepAllWindow`); `PER(cols)` around a count policy is a
`#groupwin(cols)` (`GroupWinWindow`). `oracle.dialects.ccl` states why.

What all three share (ccl-retention.txt, "Retention Semantics"): "When the
insertion of one or more new rows into a window triggers deletion of
preexisting rows (due to retention), the window propagates the inserted and
deleted rows downstream ... However, the inserted rows are placed before the
deleted rows, since the inserts trigger the deletes." So an insert is one post,
new = [the row], old = the rows it pushed out, oldest first.

Decided (apama-ccl.md §3 point 9): the rows one purge deletes are posted oldest
first (arrival order). Decided (§3 point 14): "would exceed" and "reaches" are
measured on the rows held now, so a row deleted by its key (a keyed window's
`delete`, through `discard`) frees its place.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

from oracle.model import Event, JumpingLength, JumpingTime, SlackLength
from oracle.windows.base import Post, WindowBase
from oracle.windows.reasons import Reasons


class SlackLengthWindow(WindowBase):
    """`KEEP n ROWS SLACK s` (s >= 2): the last n rows, cleaned s at a time.

    ccl-retention.txt, Count-based Retention: "A SLACK value accomplishes this
    by ensuring that there are no more than N + S rows in the window, where N
    is the retention size and S is the SLACK value. When the window reaches
    N + S rows, the system purges S rows." ccl-keep-clause.txt: "Specifying a
    SLACK value causes the retention mechanism to get triggered when the number
    of stored rows equals (count+slackcount) as opposed to count."

    * Insert: the row is appended. If the window now holds n + s rows, the s
      oldest leave: one post, new = [the row], old = those s, oldest first. The
      arriving row stays; at rest the window holds n to n + s - 1 rows.
    * No timer.

    Decided (§3 point 10): the trigger is N + S rows and S rows leave, as the
    CCL Reference and the Programmers Guide say; the Studio's wording ("the
    number of rows to delete when the maximum number of rows is reached")
    would trigger at N + 1 and is not followed. Slack 1, the default, is the
    length window's rule ("every new record inserted deletes the oldest
    record") and is parsed as `Length`. Case `ccl/slack-purges-s-rows-at-n-plus-s`.
    Decided (§3 point 9): the S rows are the oldest, deleted oldest first.
    """

    REASONS = Reasons(insert="the row is appended",
                      purge="if the window now holds n + s rows, the s oldest leave")

    def __init__(self, spec: SlackLength, now: int):
        self.limit = spec.size + spec.slack
        self.slack = spec.slack
        self.rows: deque[Event] = deque()

    def on_event(self, event: Event, now: int) -> list[Post]:
        self.rows.append(event)
        if len(self.rows) < self.limit:
            return [Post((event,), why=self.REASONS.insert)]
        return [Post((event,), tuple(self.rows.popleft() for _ in range(self.slack)),
                     why={"insert": self.REASONS.insert, "remove": self.REASONS.purge})]

    def discard(self, gone: Collection[Event]) -> None:
        self.rows = deque(e for e in self.rows if e not in gone)

    def contents(self) -> list[Event]:
        return list(self.rows)


class JumpingLengthWindow(WindowBase):
    """`KEEP EVERY n ROWS`: a jumping window of n rows.

    ccl-retention.txt: "This window will retain a maximum of ten rows, and
    delete all ten retained rows on the arrival of a new row."
    ccl-keep-clause.txt: a jumping window "deletes all of the retained rows
    when ... a row arrives that would exceed the maximum number of rows."

    * Insert into a window holding fewer than n rows: appended, posted as new.
    * Insert into a window holding n rows (the row would exceed the maximum):
      the row is inserted and kept, and the n rows held before it are deleted.
      One post: new = [the row], old = the n rows, oldest first. The window
      then holds the arriving row alone.
    * No timer.

    Decided (apama-ccl.md §2.4): the purge fires on the (n+1)th row, which
    starts the next group; Esper's `#length_batch(n)` differs (it posts at the
    n-th event and holds nothing): case `ccl/every-rows-purges-on-row-n-plus-1`
    and its Esper twin `esper/length_batch-beside-ccl-keep-every-rows`.
    """

    REASONS = Reasons(insert="the row is inserted and kept",
                      purge="the n rows held before it are deleted")

    def __init__(self, spec: JumpingLength, now: int):
        self.size = spec.size
        self.rows: list[Event] = []

    def on_event(self, event: Event, now: int) -> list[Post]:
        if len(self.rows) < self.size:
            self.rows.append(event)
            return [Post((event,), why=self.REASONS.insert)]
        purged, self.rows = tuple(self.rows), [event]
        return [Post((event,), purged, why={"insert": self.REASONS.insert, "remove": self.REASONS.purge})]

    def discard(self, gone: Collection[Event]) -> None:
        self.rows = [e for e in self.rows if e not in gone]

    def contents(self) -> list[Event]:
        return list(self.rows)


class JumpingTimeWindow(WindowBase):
    """`KEEP EVERY t`: a jumping time window.

    ccl-retention.txt: "In a Jumping Window time-based retention policy, all
    the rows produced in the specified time interval are deleted after the
    interval has expired." "This example creates a Jumping Window named Win1
    that keeps every row that arrives within the 100 second interval. When the
    time interval expires, all of the rows retained are deleted."

    * Intervals are `[k*t, (k+1)*t)` of the clock, for every whole k.
    * Insert at `now`: appended and posted as new, at once (a row is in the
      window from its arrival; nothing is held back as in a batch).
    * Timer at the end of the interval the oldest held row arrived in: every
      row held leaves, in one post of old rows, oldest first. An interval in
      which nothing arrived posts nothing (no rows, no delete records).
    * A row arriving exactly at `k*t` belongs to the interval starting then:
      the timer due at `k*t` fires before the arrival (DESIGN.md, the clock).
    * A jump past several interval ends fires once and deletes every row held
      (they all arrived in one interval: the earlier one's end came first).

    Decided (§3 point 11): intervals are anchored at clock 0 (the epoch), not
    at the window's creation (`start_time`) nor at the first row: the CCL
    Reference gives no anchor, and Sybase CEP 4, CCL's predecessor, "begins
    its intervals offset from January 1, 1970 at midnight". Case
    `ccl/every-interval-anchored-at-the-epoch` (created at 250 ms, purged at
    1000). With PER, every group shares this one grid ("Time based windows
    retain data for a specified time regardless of their grouping"), so PER
    changes nothing and the dialect drops it: case
    `ccl/every-interval-per-purges-every-group-together`.
    Esper's `#time_batch(t, 0L)` differs (events enter at the batch end and
    leave a batch later): case `ccl/every-interval-inserts-at-once` and its
    Esper twin `esper/time_batch-beside-ccl-keep-every-interval`.
    """

    REASONS = Reasons(insert="appended and posted as new, at once",
                      purge="timer at the end of the interval the oldest held row arrived in: every row held leaves")

    def __init__(self, spec: JumpingTime, now: int):
        self.span = spec.span
        self.rows: list[Event] = []
        self.due: int | None = None

    def on_event(self, event: Event, now: int) -> list[Post]:
        if not self.rows:
            self.due = (now // self.span + 1) * self.span
        self.rows.append(event)
        return [Post((event,), why=self.REASONS.insert)]

    def on_timer(self, now: int) -> list[Post]:
        if self.due is None or self.due > now:
            return []
        purged, self.rows, self.due = tuple(self.rows), [], None
        return [Post((), purged, why=self.REASONS.purge)]

    def next_timer(self) -> int | None:
        return self.due

    def discard(self, gone: Collection[Event]) -> None:
        self.rows = [e for e in self.rows if e not in gone]
        if not self.rows:
            self.due = None

    def contents(self) -> list[Event]:
        return list(self.rows)
