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

import attrs
from hypothesis import HealthCheck, assume, given, settings

from difftest.strategies import GRID, TIMESTAMP, seeded_traces, trace_shape, windows
from oracle import parse, run
from oracle.errors import InvalidSpec
from oracle.model import (
    Aggregate,
    Binary,
    Statement,
    CCL,
    WINDOW_SPECS,
    Intersection,
    Spec,
    WindowSpec,
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

#: traces drawn per row (one seed): the rarest distinction here (an intersection's stale
#: `#time` timers) shows in about 1 trace of 90, so 600 miss it with odds near 1 in 1,000
DRAWS = 600

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


def _kuiper(text: str, **settings) -> WindowSpec:
    return parse(text, "kuiper", settings)


def _esper(text: str) -> WindowSpec:
    return parse(text, "esper")


_EVENT = {"time_mode": "event", "timestamp_field": "ts"}

# one row per spec field no row above changes (`test_every_field_of_every_spec_has_a_row`)
FIELD_ROWS = [
    ("apama retain every: batch", parse("retain 4 every 2", "apama"), parse("retain 4 every 3", "apama")),
    ("apama retain every: size", parse("retain 3 every 2", "apama"), parse("retain 4 every 2", "apama")),
    ("apama retain every: unique", parse("retain 3 every 2", "apama"),
     parse("retain 3 every 2 with unique v.symbol", "apama")),
    ("apama within every retain: size", parse("within 1.0 every 0.5 retain 1", "apama"),
     parse("within 1.0 every 0.5 retain 2", "apama")),
    ("apama within every: unique", parse("within 1.0 every 0.5", "apama"),
     parse("within 1.0 every 0.5 with unique v.symbol", "apama")),
    ("apama within every: partition", parse("partition by v.symbol within 1.0 every 0.5 retain 1", "apama"),
     parse("within 1.0 every 0.5 retain 1", "apama")),
    ("apama retain unique: size", parse("retain 1 with unique v.symbol", "apama"),
     parse("retain 2 with unique v.symbol", "apama")),
    ("apama retain unique: within", parse("retain 2 with unique v.symbol", "apama"),
     parse("within 1.0 retain 2 with unique v.symbol", "apama")),
    ("apama retain unique: key", parse("retain 2 with unique v.symbol", "apama"),
     parse("retain 2 with unique v.feed", "apama")),
    ("apama stream query: output", parse("from v in values retain 2 select sum(v)", "apama"),
     parse("from v in values retain 2 select max(v)", "apama")),
    ("apama stream query: window", parse("from v in values retain 2 select sum(v)", "apama"),
     parse("from v in values retain 3 select sum(v)", "apama")),
    ("apama stream query: argument", parse("from v in values retain 2 select sum(v.value)", "apama"),
     parse("from v in values retain 2 select sum(v.price)", "apama")),
    ("ccl slack: size", parse("KEEP 2 ROWS SLACK 2", "ccl"), parse("KEEP 3 ROWS SLACK 2", "ccl")),
    ("ccl slack: slack", parse("KEEP 2 ROWS SLACK 2", "ccl"), parse("KEEP 2 ROWS SLACK 3", "ccl")),
    ("size: additional property", parse("#size()", "esper"), parse("#size(symbol)", "esper")),
    ("size: *", parse("#size()", "esper"), parse("#size(*)", "esper")),
    ("size: source", parse("#size()", "esper"), parse("#length(2)#size()", "esper")),
    ("uni: x", parse("#uni(price)", "esper"), parse("#uni(ts)", "esper")),
    ("uni: additional property", parse("#uni(price)", "esper"), parse("#uni(price, symbol)", "esper")),
    ("uni: *", parse("#uni(price)", "esper"), parse("#uni(price, *)", "esper")),
    ("uni: source", parse("#uni(price)", "esper"), parse("#length(2)#uni(price)", "esper")),
    ("linest: x", parse("#linest(price, ts)", "esper"), parse("#linest(ts, ts)", "esper")),
    ("linest: y", parse("#linest(price, ts)", "esper"), parse("#linest(price, price)", "esper")),
    ("linest: additional property", parse("#linest(price, ts)", "esper"), parse("#linest(price, ts, feed)", "esper")),
    ("linest: *", parse("#linest(price, ts)", "esper"), parse("#linest(price, ts, *)", "esper")),
    ("linest: source", parse("#linest(price, ts)", "esper"), parse("#time(1 sec)#linest(price, ts)", "esper")),
    ("correl: x", parse("#correl(price, ts)", "esper"), parse("#correl(size, ts)", "esper")),
    ("correl: y", parse("#correl(price, ts)", "esper"), parse("#correl(price, size)", "esper")),
    ("correl: additional property", parse("#correl(price, ts)", "esper"), parse("#correl(price, ts, symbol)", "esper")),
    ("correl: *", parse("#correl(price, ts)", "esper"), parse("#correl(price, ts, *)", "esper")),
    ("correl: source", parse("#correl(price, ts)", "esper"), parse("#length(3)#correl(price, ts)", "esper")),
    ("weighted_avg: x", parse("#weighted_avg(price, ts)", "esper"), parse("#weighted_avg(size, ts)", "esper")),
    ("weighted_avg: weight", parse("#weighted_avg(price, ts)", "esper"), parse("#weighted_avg(price, size)", "esper")),
    ("weighted_avg: additional property", parse("#weighted_avg(price, ts)", "esper"),
     parse("#weighted_avg(price, ts, symbol)", "esper")),
    ("weighted_avg: *", parse("#weighted_avg(price, ts)", "esper"), parse("#weighted_avg(price, ts, *)", "esper")),
    ("weighted_avg: source", parse("#weighted_avg(price, ts)", "esper"),
     parse("#length(2)#weighted_avg(price, ts)", "esper")),
    ("expr: expiry", parse("#expr(current_count <= 2)", "esper"), parse("#expr(current_count <= 3)", "esper")),
    ("expr_batch: expiry", parse("#expr_batch(current_count >= 2)", "esper"),
     parse("#expr_batch(current_count >= 3)", "esper")),
    ("expr_batch: include the trigger", parse("#expr_batch(current_count >= 2)", "esper"),
     parse("#expr_batch(current_count >= 2, false)", "esper")),
    ("ext_timed: timestamp", ExtTimed(TIMESTAMP, GRID), ExtTimed("stamp", GRID)),
    ("ext_timed_batch: timestamp", ExtTimedBatch(TIMESTAMP, GRID), ExtTimedBatch("stamp", GRID)),
    ("time_order: timestamp", TimeOrder(TIMESTAMP, GRID), TimeOrder("stamp", GRID)),
    ("groupwin: window", GroupWin(("symbol",), Length(1)), GroupWin(("symbol",), Length(2))),
    ("retain-union: members", parse("#length(2)#time(1 sec) retain-union", "esper"),
     parse("#length(3)#time(1 sec) retain-union", "esper")),
    ("intersection: stale #time timers", GroupWin(("symbol",), Intersection((Unique(("feed",)), Time(2 * GRID)))),
     GroupWin(("symbol",), Intersection((Unique(("feed",)), Time(2 * GRID)), stale_time_timers=False))),
    ("kuiper count: filter", _kuiper("COUNTWINDOW(2)"), _kuiper("COUNTWINDOW(2) FILTER(WHERE price > 15)")),
    ("kuiper hopping: size", _kuiper("HOPPINGWINDOW(ss, 2, 1)"), _kuiper("HOPPINGWINDOW(ss, 3, 1)")),
    ("kuiper hopping: unit", _kuiper("HOPPINGWINDOW(ss, 2, 1)"), _kuiper("HOPPINGWINDOW(ms, 2000, 1000)")),
    ("kuiper hopping: filter", _kuiper("HOPPINGWINDOW(ss, 2, 1)"),
     _kuiper("HOPPINGWINDOW(ss, 2, 1) FILTER(WHERE price > 15)")),
    ("kuiper hopping: event time", _kuiper("HOPPINGWINDOW(ss, 2, 1)"), _kuiper("HOPPINGWINDOW(ss, 2, 1)", **_EVENT)),
    ("kuiper hopping: late tolerance", _kuiper("HOPPINGWINDOW(ss, 2, 1)", **_EVENT),
     _kuiper("HOPPINGWINDOW(ss, 2, 1)", late_tolerance=1000, **_EVENT)),
    ("kuiper hopping: zone", _kuiper("HOPPINGWINDOW(hh, 1, 1)", time_zone="Asia/Kathmandu"),
     _kuiper("HOPPINGWINDOW(hh, 1, 1)")),
    ("kuiper tumbling: unit", _kuiper("TUMBLINGWINDOW(ss, 2)"), _kuiper("TUMBLINGWINDOW(ms, 2000)")),
    ("kuiper tumbling: event time", _kuiper("TUMBLINGWINDOW(ss, 1)"), _kuiper("TUMBLINGWINDOW(ss, 1)", **_EVENT)),
    ("kuiper tumbling: late tolerance", _kuiper("TUMBLINGWINDOW(ss, 1)", **_EVENT),
     _kuiper("TUMBLINGWINDOW(ss, 1)", late_tolerance=1000, **_EVENT)),
    ("kuiper sliding: trigger", _kuiper("SLIDINGWINDOW(ss, 1)"), _kuiper("SLIDINGWINDOW(ss, 1) OVER(WHEN price > 15)")),
    ("kuiper sliding: filter", _kuiper("SLIDINGWINDOW(ss, 1)"),
     _kuiper("SLIDINGWINDOW(ss, 1) FILTER(WHERE price > 15)")),
    ("kuiper sliding: event time", _kuiper("SLIDINGWINDOW(ss, 1)"), _kuiper("SLIDINGWINDOW(ss, 1)", **_EVENT)),
    ("kuiper sliding: late tolerance", _kuiper("SLIDINGWINDOW(ss, 1)", **_EVENT),
     _kuiper("SLIDINGWINDOW(ss, 1)", late_tolerance=1000, **_EVENT)),
    ("kuiper session: unit", _kuiper("SESSIONWINDOW(ss, 2, 2)"), _kuiper("SESSIONWINDOW(ms, 2000, 2000)")),
    ("kuiper session: filter", _kuiper("SESSIONWINDOW(ss, 10, 1)"),
     _kuiper("SESSIONWINDOW(ss, 10, 1) FILTER(WHERE price > 15)")),
    ("kuiper session: event time", _kuiper("SESSIONWINDOW(ss, 10, 1)"), _kuiper("SESSIONWINDOW(ss, 10, 1)", **_EVENT)),
    ("kuiper session: late tolerance", _kuiper("SESSIONWINDOW(ss, 10, 1)", **_EVENT),
     _kuiper("SESSIONWINDOW(ss, 10, 1)", late_tolerance=1000, **_EVENT)),
    ("kuiper session: zone", _kuiper("SESSIONWINDOW(mi, 1, 1)", time_zone="America/New_York"),
     _kuiper("SESSIONWINDOW(mi, 1, 1)", time_zone="Etc/GMT+5")),
    ("kuiper query: select", _kuiper("SELECT count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)"),
     _kuiper("SELECT sum(price) FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)")),
    ("kuiper query: window", _kuiper("SELECT count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)"),
     _kuiper("SELECT count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 2)")),
    ("kuiper query: where", _kuiper("SELECT count(*) FROM demo GROUP BY COUNTWINDOW(2)"),
     _kuiper("SELECT count(*) FROM demo WHERE price > 15 GROUP BY COUNTWINDOW(2)")),
    ("kuiper query: keys", _kuiper("SELECT count(*) FROM demo GROUP BY COUNTWINDOW(3)"),
     _kuiper("SELECT count(*) FROM demo GROUP BY COUNTWINDOW(3), symbol")),
    ("kuiper query: having", _kuiper("SELECT count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)"),
     _kuiper("SELECT count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 1) HAVING count(*) > 1")),
    ("kuiper query: order", _kuiper("SELECT price FROM demo GROUP BY COUNTWINDOW(3)"),
     _kuiper("SELECT price FROM demo GROUP BY COUNTWINDOW(3) ORDER BY price DESC")),
    ("statement: select", _esper("select irstream sum(price) as t from E#length(3)"),
     _esper("select irstream max(price) as t from E#length(3)")),
    ("statement: window", _esper("select irstream sum(price) as t from E#length(3)"),
     _esper("select irstream sum(price) as t from E#length(2)")),
    ("statement: selector", _esper("select irstream sum(price) as t from E#length(3)"),
     _esper("select rstream sum(price) as t from E#length(3)")),
    ("statement: filter", _esper("select irstream sum(price) as t from E#length(3)"),
     _esper("select irstream sum(price) as t from E(price > 15)#length(3)")),
    ("statement: where", _esper("select irstream sum(price) as t from E#length(3)"),
     _esper("select irstream sum(price) as t from E#length(3) where price > 15")),
    ("statement: group by", _esper("select irstream symbol, sum(price) as t from E#length(3)"),
     _esper("select irstream symbol, sum(price) as t from E#length(3) group by symbol")),
    ("statement: having", _esper("select irstream sum(price) as t from E#length(3)"),
     _esper("select irstream sum(price) as t from E#length(3) having sum(price) > 30")),
    ("statement: a second key", _esper("select irstream symbol, feed, count(*) from E#length(3) group by symbol"),
     _esper("select irstream symbol, feed, count(*) from E#length(3) group by symbol, feed")),
    ("statement: an expression key", _esper("select irstream price > 15 as hi, count(*) from E#length(3) group by symbol"),
     _esper("select irstream price > 15 as hi, count(*) from E#length(3) group by price > 15")),
    ("statement: distinct", _esper("select irstream count(distinct symbol) as n from E#length(3)"),
     _esper("select irstream count(symbol) as n from E#length(3)")),
    ("statement: an operator over aggregates", _esper("select irstream max(price) - min(price) as r from E#length(3)"),
     _esper("select irstream max(price) + min(price) as r from E#length(3)")),
    ("statement: having over arithmetic", _esper("select irstream symbol, count(*) from E#length(3) group by symbol"),
     _esper("select irstream symbol, count(*) from E#length(3) group by symbol having sum(price) / count(*) > 15")),
    # Esper's rows beside CCL's aggregation window over the same window and select list
    ("statement: rules", _esper("select symbol, sum(price) as t from E#length(3) group by symbol"),
     attrs.evolve(_esper("select symbol, sum(price) as t from E#length(3) group by symbol"), rules=CCL)),
]

#: spec fields no row can change the output of, and why
FIELD_EXEMPT = {
    ("Statement", "source"): "the stream's name (`from E`): a case's trace is the one stream the statement reads",
    ("Sliding", "unit"): "a sliding pane is the rows of [T - size, T] at each trigger: no alignment, so the unit "
                         "only scales the size (SLIDINGWINDOW(ss, 1) is SLIDINGWINDOW(ms, 1000))",
    ("Sliding", "time_zone"): "no alignment: the zone (a rule setting every pane window takes) moves nothing",
}


@pytest.mark.parametrize(("what", "spec_a", "spec_b"), FIELD_ROWS, ids=[row[0] for row in FIELD_ROWS])
def test_each_field_matters_on_some_drawn_case(what, spec_a, spec_b):
    assert differs(spec_a, spec_b), f"{what}: no drawn trace tells {spec_a} from {spec_b}"


def changed_fields(a, b) -> set[tuple[str, str]]:
    """The (spec class, field) pairs whose values differ between two specs of
    one shape, nested specs and expressions included; specs of two classes
    change no field."""
    if type(a) is not type(b):
        return set()
    if isinstance(a, tuple):
        return set().union(*map(changed_fields, a, b)) if len(a) == len(b) else set()
    if not attrs.has(type(a)):
        return set()
    changed = set()
    for f in attrs.fields(type(a)):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x != y:
            if isinstance(a, Spec):
                changed.add((type(a).__name__, f.name))
            changed |= changed_fields(x, y)
    return changed


def test_every_field_of_every_spec_has_a_row():
    """A field no row changes could be ignored by an implementation without
    any differential run noticing: each has a row above that changes it alone
    (or with another field), or an exemption that says why it cannot matter."""
    rows = [(a, b) for _, a, b in OPTION_ROWS + FIELD_ROWS]
    rows += [(parse(a, dialect), parse(b, dialect)) for _, dialect, a, b in DIALECT_ROWS]
    covered = set().union(*(changed_fields(a, b) for a, b in rows))
    every = {(cls.__name__, f.name) for cls in WINDOW_SPECS + (Statement,) for f in attrs.fields(cls)}
    missing = sorted(every - covered - set(FIELD_EXEMPT))
    assert not missing, f"spec fields without a strength row: {missing}"
    assert not set(FIELD_EXEMPT) & covered, "an exempt field has a row: drop the exemption"


@pytest.mark.parametrize(("what", "dialect", "text_a", "text_b"), DIALECT_ROWS, ids=[row[0] for row in DIALECT_ROWS])
def test_each_option_of_the_other_dialects_matters_on_some_drawn_case(what, dialect, text_a, text_b):
    spec_a, spec_b = parse(text_a, dialect), parse(text_b, dialect)
    assert differs(spec_a, spec_b), f"{what}: no drawn trace tells {text_a} from {text_b}"


def draws(*specs):
    shape = {key: tuple(dict.fromkeys(v for spec in specs for v in trace_shape(spec)[key]))
             for key in ("properties", "numbers", "stamps", "opcodes")}
    return seeded_traces(2026, DRAWS, **shape, mixed=all(spec.MIXED_KINDS for spec in specs))


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


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(windows("kuiper", "sliding").filter(lambda spec: spec.delay > 0))
def test_a_drawn_sliding_delay_changes_the_output(spec):
    """The drawn specs, not only a chosen one: an implementation that drops
    the delay must be caught by what `difftest run --dialect kuiper` draws
    (issue 25 measured a minute of runs missing it). A spec that posts no
    pane on any drawn trace (its FILTER and trigger exclude each other) has
    nothing a delay could change."""
    undelayed = attrs.evolve(spec, delay=0)
    outputs = [(run(spec, trace), run(undelayed, trace)) for trace in draws(spec)[:100]]
    assume(any(u.window is not None for a, b in outputs for u in a + b))
    assert any(a != b for a, b in outputs), f"no drawn trace tells {spec} from its delay 0"


# --------------------------------------------------------------------------- statements' parts

def _rewritten(node, change):
    """`node` with `change` applied to it and to every expression and spec inside it, bottom up."""
    if isinstance(node, tuple):
        return tuple(_rewritten(n, change) for n in node)
    if attrs.has(type(node)):
        fields = {f.name: _rewritten(getattr(node, f.name), change) for f in attrs.fields(type(node)) if f.init}
        node = attrs.evolve(node, **{k: v for k, v in fields.items() if v != getattr(node, k)})
    return change(node)


_SWAPPED = {"+": "-", "-": "+", "*": "/", "/": "*"}


def _undistinct(node):
    return attrs.evolve(node, distinct=False) if isinstance(node, Aggregate) and node.distinct else node


def _swapped(node):
    return attrs.evolve(node, op=_SWAPPED[node.op]) if isinstance(node, Binary) and node.op in _SWAPPED else node


def _without_last_key(spec: Statement) -> Statement | None:
    """The statement grouped by one key fewer; where the rules make every key
    a select column (CCL), that column goes too; None where no key can go
    (CCL's aggregation window needs one)."""
    if not spec.keys:
        return None
    try:
        return attrs.evolve(spec, keys=spec.keys[:-1])
    except InvalidSpec:
        try:
            return attrs.evolve(spec, keys=spec.keys[:-1],
                                select=tuple(i for i in spec.select if i.expression != spec.keys[-1]))
        except InvalidSpec:
            return None


def _changed(spec: Statement, select=None, having=None) -> Statement | None:
    select = spec.select if select is None else select
    having = spec.having if having is None else having
    return None if (select, having) == (spec.select, spec.having) else attrs.evolve(spec, select=select, having=having)


#: what a mutant implementation might get wrong in a statement, as the statement it would run instead (None: no such part)
STATEMENT_MUTANTS = {
    "the last GROUP BY key dropped": _without_last_key,
    "HAVING dropped": lambda spec: attrs.evolve(spec, having=None) if spec.having is not None else None,
    "an aggregate's distinct dropped": lambda spec: _changed(
        spec, _rewritten(spec.select, _undistinct), _rewritten(spec.having, _undistinct)),
    "a select item's arithmetic operator swapped": lambda spec: _changed(spec, _rewritten(spec.select, _swapped)),
}

#: where fewer can show it: a COUNTWINDOW(1) pane holds one event, so one group, and a
#: FILTER that fixes a key's value (`symbol = "GE"`) leaves one group too
_SHARES = {("query/count", "the last GROUP BY key dropped"): 0.25}
#: (the statement kind, the mutant, how many of the drawn statements that have the part and post must show it)
STATEMENT_ROWS = [
    (kind, mutant, share)
    for kind, mutants in {
        "statement/row_per_group": STATEMENT_MUTANTS,
        "statement/aggregate_grouped": STATEMENT_MUTANTS,
        "statement/row_for_all": {m: STATEMENT_MUTANTS[m] for m in list(STATEMENT_MUTANTS)[1:]},
        "statement/store": STATEMENT_MUTANTS,
        "query/tumbling": {m: STATEMENT_MUTANTS[m] for m in ("the last GROUP BY key dropped", "HAVING dropped")},
        "query/count": {m: STATEMENT_MUTANTS[m] for m in ("the last GROUP BY key dropped", "HAVING dropped")},
    }.items()
    for mutant, share in ((m, _SHARES.get((kind, m), 0.5)) for m in mutants)
]
STATEMENT_DRAWS, STATEMENT_TRACES = 60, 100
#: a query kind is one window class of five drawn (`query/<kind>` filters `_query`'s): more draws, as many held
QUERY_DRAWS = 150


def _posts(updates) -> bool:
    return any(u.insert or u.remove or u.values is not None or u.window is not None for u in updates)


@pytest.mark.parametrize(("kind", "mutant", "share"), STATEMENT_ROWS, ids=[f"{k}: {m}" for k, m, _ in STATEMENT_ROWS])
def test_each_part_of_a_drawn_statement_matters(kind, mutant, share):
    """The harness's own drawn statements, changed in one part: among those
    that hold the part and post on the drawn traces, at least `share` must
    post otherwise on one of them, or a run could miss an implementation
    that ignores the part (issue 46: a mutant that dropped the last GROUP BY
    key survived a 120-second statement run)."""
    from difftest.strategies import SPECS

    told, held = [], []

    draws = QUERY_DRAWS if kind.startswith("query/") else STATEMENT_DRAWS

    @settings(max_examples=draws, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(SPECS[kind])
    def draw(spec):
        changed = STATEMENT_MUTANTS[mutant](spec)
        if changed is None:
            return
        posted = False
        for trace in seeded_traces(2026, STATEMENT_TRACES, **trace_shape(spec)):
            before, after = run(spec, trace), run(changed, trace)
            if before != after:  # told apart: it posts, on one side at least
                held.append(spec)
                told.append(spec)
                return
            posted = posted or _posts(before)
        if posted:
            held.append(spec)

    draw()
    assert len(held) >= 5, f"{kind}: only {len(held)} of {draws} drawn statements hold {mutant!r} and post"
    assert len(told) >= share * len(held), (
        f"{kind}: {mutant} changes the output of {len(told)} of {len(held)} drawn statements, "
        f"fewer than {share:.0%}")
