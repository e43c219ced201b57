"""The harness's own strength: every option of every window, and every shape of
trace the rules care about, must matter on some generated case, or a broken
implementation could ignore it and still pass every differential run.

Each row changes one thing only (a parameter, a flag, the keys, jumps into
walks, missing keys into present ones) and asserts that the oracle's output
differs on at least one of DRAWS traces made by the harness's own generator
(`seeded_traces`, what `difftest run` uses). A row that fails is a hole in the
strategies, to be fixed there.
"""

from __future__ import annotations

import pytest

from difftest.strategies import GRID, TIMESTAMP, seeded_traces, trace_names
from oracle import parse, run
from oracle.model import (
    DAY,
    HOUR,
    MINUTE,
    Advance,
    Arrive,
    Event,
    ExtTimed,
    ExtTimedBatch,
    FirstLength,
    FirstTime,
    FirstUnique,
    GroupWin,
    Jump,
    LastEvent,
    Length,
    LengthBatch,
    Rank,
    Sort,
    SortKey,
    Time,
    TimeAccum,
    TimeBatch,
    TimeLengthBatch,
    TimeOrder,
    Trace,
    Tumbling,
    Unique,
)

DRAWS = 300

OPTION_ROWS = [
    ("length size", Length(2), Length(3)),
    ("length_batch size", LengthBatch(2), LengthBatch(3)),
    ("firstlength size", FirstLength(1), FirstLength(2)),
    ("time span", Time(GRID), Time(2 * GRID)),
    ("ext_timed span", ExtTimed(TIMESTAMP, GRID), ExtTimed(TIMESTAMP, 2 * GRID)),
    ("firsttime span", FirstTime(GRID), FirstTime(3 * GRID)),
    ("time_accum span", TimeAccum(GRID), TimeAccum(2 * GRID)),
    ("groupwin around time_accum", GroupWin(("symbol",), TimeAccum(2 * GRID)), TimeAccum(2 * GRID)),
    ("time_order span", TimeOrder(TIMESTAMP, GRID), TimeOrder(TIMESTAMP, 3 * GRID)),
    ("time_order or timetolive", TimeOrder(TIMESTAMP, 0), TimeOrder(TIMESTAMP, GRID)),
    ("sort size", Sort(2, (SortKey("price"),)), Sort(3, (SortKey("price"),))),
    ("sort ascending or descending", Sort(2, (SortKey("price"),)), Sort(2, (SortKey("price", True),))),
    ("sort criteria", Sort(2, (SortKey("price"),)), Sort(2, (SortKey("symbol"),))),
    ("sort second criterion", Sort(2, (SortKey("symbol"),)), Sort(2, (SortKey("symbol"), SortKey("price", True)))),
    ("sort ties: newest first", Sort(1, (SortKey("symbol"),)), Sort(1, (SortKey("symbol"), SortKey(TIMESTAMP)))),
    ("rank size", Rank(("symbol",), 1, (SortKey("price"),)), Rank(("symbol",), 2, (SortKey("price"),))),
    ("rank keys", Rank(("symbol",), 2, (SortKey("price"),)), Rank(("feed",), 2, (SortKey("price"),))),
    ("rank criteria", Rank(("symbol",), 2, (SortKey("price"),)), Rank(("symbol",), 2, (SortKey("price", True),))),
    ("groupwin around rank", GroupWin(("feed",), Rank(("symbol",), 1, (SortKey("price"),))),
     Rank(("symbol",), 1, (SortKey("price"),))),
    ("groupwin around time_order", GroupWin(("symbol",), TimeOrder(TIMESTAMP, GRID)), TimeOrder(TIMESTAMP, GRID)),
    ("time_batch span", TimeBatch(GRID), TimeBatch(2 * GRID)),
    ("time_batch reference on the grid", TimeBatch(2 * GRID), TimeBatch(2 * GRID, 0)),
    ("time_batch reference off the grid", TimeBatch(GRID, 0), TimeBatch(GRID, 250)),
    ("time_batch FORCE_UPDATE", TimeBatch(GRID), TimeBatch(GRID, force_update=True)),
    ("time_batch START_EAGER", TimeBatch(GRID, force_update=True), TimeBatch(GRID, force_update=True, start_eager=True)),
    ("time_batch START_EAGER ignores the reference", TimeBatch(GRID, 250, True, True), TimeBatch(GRID, 250, True, False)),
    ("time_length_batch span", TimeLengthBatch(GRID, 3), TimeLengthBatch(2 * GRID, 3)),
    ("time_length_batch size", TimeLengthBatch(2 * GRID, 2), TimeLengthBatch(2 * GRID, 3)),
    ("time_length_batch count restarts the timer", TimeLengthBatch(2 * GRID, 2), TimeBatch(2 * GRID)),
    ("time_length_batch FORCE_UPDATE", TimeLengthBatch(GRID, 3), TimeLengthBatch(GRID, 3, True)),
    ("time_length_batch START_EAGER", TimeLengthBatch(GRID, 3, True), TimeLengthBatch(GRID, 3, True, True)),
    ("groupwin around time_length_batch", GroupWin(("symbol",), TimeLengthBatch(GRID, 2)), TimeLengthBatch(GRID, 2)),
    ("ext_timed_batch span", ExtTimedBatch(TIMESTAMP, GRID), ExtTimedBatch(TIMESTAMP, 2 * GRID)),
    ("ext_timed_batch reference", ExtTimedBatch(TIMESTAMP, GRID), ExtTimedBatch(TIMESTAMP, GRID, 250)),
    ("unique keys", Unique(("symbol",)), Unique(("symbol", "feed"))),
    ("firstunique keys", FirstUnique(("symbol",)), FirstUnique(("feed",))),
    ("groupwin or not", GroupWin(("symbol",), Length(2)), Length(2)),
    ("groupwin keys", GroupWin(("symbol",), Time(GRID)), GroupWin(("feed",), Time(GRID))),
    ("groupwin around a batch", GroupWin(("symbol",), TimeBatch(GRID)), TimeBatch(GRID)),
    # eKuiper's alignment in minutes, hours and days (in a zone): ends that fall within a drawn trace
    ("kuiper minutes", Tumbling(MINUTE, MINUTE), Tumbling(2 * MINUTE, MINUTE)),
    ("kuiper days: the zone's midnight", Tumbling(DAY, DAY), Tumbling(DAY, DAY, time_zone="Asia/Shanghai")),
    ("kuiper hours: the zone's hour", Tumbling(HOUR, HOUR, time_zone="Asia/Kathmandu"), Tumbling(HOUR, HOUR)),
    # the same offsets but for a DST change: told apart only by Go's time.Date in the repeated hour
    ("kuiper minutes in New York's repeated hour", Tumbling(MINUTE, MINUTE, time_zone="America/New_York"),
     Tumbling(MINUTE, MINUTE, time_zone="Etc/GMT+5")),
    ("kuiper event-time minutes in Berlin's repeated hour",
     Tumbling(MINUTE, MINUTE, time_zone="Europe/Berlin", timestamp="ts"),
     Tumbling(MINUTE, MINUTE, time_zone="Etc/GMT-1", timestamp="ts")),
]


# the other dialects' options, written in their own syntax: (what, dialect, window, the window changed in one option)
DIALECT_ROWS = [
    ("ccl slack", "ccl", "KEEP 2 ROWS SLACK 1", "KEEP 2 ROWS SLACK 2"),
    ("ccl slack size", "ccl", "KEEP 2 ROWS SLACK 1", "KEEP 3 ROWS SLACK 1"),
    ("ccl jumping rows", "ccl", "KEEP EVERY 2 ROWS", "KEEP EVERY 3 ROWS"),
    ("ccl jumping time", "ccl", "KEEP EVERY 1 SECONDS", "KEEP EVERY 2 SECONDS"),
    ("ccl keyed keys", "ccl", "PRIMARY KEY (symbol) KEEP 2 ROWS", "PRIMARY KEY (feed) KEEP 2 ROWS"),
    ("ccl keyed retention", "ccl", "PRIMARY KEY (symbol) KEEP 1 ROWS", "PRIMARY KEY (symbol) KEEP 2 ROWS"),
    ("ccl PER", "ccl", "KEEP 1 ROWS PER(symbol)", "KEEP 1 ROWS"),
    ("apama within", "apama", "within 1.0 every 0.5", "within 1.5 every 0.5"),
    ("apama every", "apama", "within 1.0 every 0.5", "within 1.0 every 1.0"),
    ("apama retain", "apama", "retain 2", "retain 3"),
    ("apama retain every", "apama", "retain 2 every 2", "retain 2 every 1"),
    ("apama within retain", "apama", "within 1.0 retain 2", "within 1.0 retain 3"),
    ("apama partition", "apama", "partition by v.symbol retain 1", "retain 1"),
    ("kuiper tumbling size", "kuiper", "TUMBLINGWINDOW(ss, 1)", "TUMBLINGWINDOW(ss, 2)"),
    ("kuiper hopping hop", "kuiper", "HOPPINGWINDOW(ss, 2, 1)", "HOPPINGWINDOW(ss, 2, 2)"),
    ("kuiper sliding size", "kuiper", "SLIDINGWINDOW(ss, 1)", "SLIDINGWINDOW(ss, 2)"),
    ("kuiper sliding delay", "kuiper", "SLIDINGWINDOW(ss, 1)", "SLIDINGWINDOW(ss, 1, 1)"),
    ("kuiper session timeout", "kuiper", "SESSIONWINDOW(ss, 10, 1)", "SESSIONWINDOW(ss, 10, 2)"),
    ("kuiper session max duration", "kuiper", "SESSIONWINDOW(ss, 2, 1)", "SESSIONWINDOW(ss, 4, 1)"),
    ("kuiper count size", "kuiper", "COUNTWINDOW(2)", "COUNTWINDOW(3)"),
    ("kuiper count every", "kuiper", "COUNTWINDOW(3)", "COUNTWINDOW(3, 1)"),
    ("kuiper filter", "kuiper", "TUMBLINGWINDOW(ss, 2)", "TUMBLINGWINDOW(ss, 2) FILTER(WHERE price > 15)"),
]


@pytest.mark.parametrize(("what", "dialect", "text_a", "text_b"), DIALECT_ROWS, ids=[row[0] for row in DIALECT_ROWS])
def test_each_option_of_the_other_dialects_matters_on_some_drawn_case(what, dialect, text_a, text_b):
    spec_a, spec_b = parse(text_a, dialect), parse(text_b, dialect)
    assert differs(spec_a, spec_b), f"{what}: no drawn trace tells {text_a} from {text_b}"


def draws(*specs):
    properties = tuple(dict.fromkeys(p for spec in specs for p in trace_names(spec)))
    return seeded_traces(2026, DRAWS, properties)


def differs(spec_a, spec_b, change=lambda trace: trace) -> bool:
    for trace in draws(spec_a, spec_b):
        if run(spec_a, trace) != run(spec_b, change(trace)):
            return True
    return False


@pytest.mark.parametrize(("what", "spec_a", "spec_b"), OPTION_ROWS, ids=[row[0] for row in OPTION_ROWS])
def test_each_option_matters_on_some_drawn_case(what, spec_a, spec_b):
    assert differs(spec_a, spec_b), f"{what}: no drawn trace tells {spec_a} from {spec_b}"


def walks_for_jumps(trace: Trace) -> Trace:
    return Trace(tuple(Advance(i.time) if isinstance(i, Jump) else i for i in trace.items), trace.start_time)


def nulls_apart(trace: Trace) -> Trace:
    """Every missing `symbol` given a value of its own: what an implementation that
    took each null key for a group of its own would compute (null is one key)."""
    def fill(item):
        if isinstance(item, Arrive) and item.event.get("symbol") is None:
            return Arrive(Event(item.event.id, {**item.event.props, "symbol": f"null-{item.event.id}"}), item.time,
                          item.op)
        return item
    return Trace(tuple(fill(i) for i in trace.items), trace.start_time)


TRACE_ROWS = [
    ("jumps versus walks, time", Time(GRID), walks_for_jumps),
    ("jumps versus walks, time_batch", TimeBatch(GRID), walks_for_jumps),
    ("jumps versus walks, grouped time", GroupWin(("symbol",), Time(GRID)), walks_for_jumps),
    ("null keys, unique", Unique(("symbol",)), nulls_apart),
    ("null keys, grouped length", GroupWin(("symbol",), LastEvent()), nulls_apart),
]


@pytest.mark.parametrize(("what", "spec", "change"), TRACE_ROWS, ids=[row[0] for row in TRACE_ROWS])
def test_each_trace_shape_matters_on_some_drawn_case(what, spec, change):
    """The same window on the drawn trace and on it changed one way; the change
    keeps ids and order, so only the rule that reads it can tell them apart."""
    found = any(_ids(run(spec, trace)) != _ids(run(spec, change(trace))) for trace in draws(spec))
    assert found, f"{what}: no drawn trace shows the difference"


def _ids(updates):
    return [(u.after, u.time, [e.id for e in u.insert], [e.id for e in u.remove]) for u in updates]


def test_several_groups_fire_at_one_instant_in_some_drawn_case():
    """Slot order (esper.md §0.1) only shows when one unit posts for two groups."""
    spec = GroupWin(("symbol",), Time(GRID))
    for trace in draws(spec):
        for update in run(spec, trace):
            if len({e.get("symbol") for e in update.remove}) >= 2:
                return
    pytest.fail("no drawn trace has two groups' timers post in one update")
