"""The Apama dialect and windows.

* The dialect: every form to its spec (table-driven, other spellings to the
  same spec), errors with their columns, `parse(render(s)) == s` on drawn
  specs and queries.
* Where an Apama form is another kind's rule, the one class that runs every
  Apama rule (`LotsWindow`, from a `LotRule`) posts what that other kind's
  window posts, on generated traces: two implementations of different kinds,
  so a difference in either shows.
* Lots: a drawn lot window never posts an empty update, and each update is one
  activation's change.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from difftest.strategies import GRID, LOT_SPECS, STREAM_QUERY_SPECS, seeded_traces
from oracle import parse, render, run
from oracle.driver import Driver
from oracle.errors import InvalidSpec, UnsupportedWindow, WindowSyntaxError
from oracle.model import (
    BatchedLength, BatchedTime, GroupWin, Intersection, KeepAll, Length, LengthBatch, LengthUnique, Time, Unique,
)
from oracle.dialects.apama import stream_query
from oracle.windows.lots import LotRule, LotsWindow

# --------------------------------------------------------------------------- the dialect

FORMS = [
    ("retain all", KeepAll()),
    ("retain 3", Length(3)),
    ("retain 3 every 1", Length(3)),
    ("retain 3 every 3", LengthBatch(3)),
    ("retain 2 every 3", BatchedLength(2, 3)),
    ("retain 3 with unique p.letter", LengthUnique(3, ("letter",))),
    ("retain 2 every 2 with unique v.k", BatchedLength(2, 2, ("k",))),
    ("within 1.5", Time(1500)),
    ("within 2.5 retain 2", Intersection((Time(2500), Length(2)), stale_time_timers=False)),
    ("within 1.5 with unique a.x", Intersection((Unique(("x",)), Time(1500)), stale_time_timers=False)),
    ("within 2.5 retain 2 with unique a.x", LengthUnique(2, ("x",), 2500)),
    ("within 1.5 every 1.0", BatchedTime(1500, 1000)),
    ("within 1.5 every 0.001", Time(1500)),
    ("within 1.5 every 1.0 retain 2 with unique v.k", BatchedTime(1500, 1000, 2, ("k",))),
    ("partition by a.x retain 2", GroupWin(("x",), Length(2))),
    ("partition by a.x, a.y within 1.5", Time(1500)),
    ("partition by a.x within 1.5 every 1.0", BatchedTime(1500, 1000)),
    ("partition by a.x within 1.5 every 1.0 retain 2", BatchedTime(1500, 1000, 2, (), ("x",))),
    ("partition by a.x within 1.0 retain 1", GroupWin(("x",), Intersection((Time(1000), Length(1)), stale_time_timers=False))),
    ("partition by a.x retain 2 every 3 with unique a.y", GroupWin(("x",), BatchedLength(2, 3, ("y",)))),
    ("  within   0.25\tretain 1 ", Intersection((Time(250), Length(1)), stale_time_timers=False)),
    ("from v in values within 1.5 every 1.0 select sum(v)", stream_query(BatchedTime(1500, 1000), "sum", "value")),
    ("from t in ticks retain 2 select rstream t", stream_query(Length(2), "rstream")),
    ("from t in ticks partition by t.sym retain 2 select avg(t.price)", stream_query(GroupWin(("sym",), Length(2)), "avg", "price")),
    ("from v in values retain all select count()", stream_query(KeepAll(), "count")),
    ("from v in values within 1.0 select v", stream_query(Time(1000), "istream")),
    ("from v in values retain 2 select max(v.value)", stream_query(Length(2), "max", "value")),
]


@pytest.mark.parametrize("text, spec", FORMS, ids=[text for text, _ in FORMS])
def test_each_form_parses_to_its_spec_and_renders_back(text, spec):
    assert parse(text, "apama") == spec
    assert parse(render(spec, "apama"), "apama") == spec


ERRORS = [
    ("within 1", InvalidSpec, "float literal", 8),
    ("retain 2.0", InvalidSpec, "integer literal", 8),
    ("within 0.0005", InvalidSpec, "not whole milliseconds", 8),
    ("within 0.0", InvalidSpec, "above 0", 8),
    ("retain 0", InvalidSpec, "1 or more", 8),
    ("retain 2 every 0", InvalidSpec, "1 or more", 16),
    ("within 1.5 every 1.0 retain 2 every 3", WindowSyntaxError, "unexpected 'every'", 31),
    ("retain all every 2", WindowSyntaxError, "unexpected 'every'", 12),
    ("partition by a.x retain all", WindowSyntaxError, "unexpected 'all'", 25),
    ("retain 2 where x", WindowSyntaxError, "unexpected 'where'", 10),
    ("Retain 2", WindowSyntaxError, "unexpected", 1),
    ("partition by x retain 2", WindowSyntaxError, "unexpected 'retain'", 16),
    ("partition by a.x retain 2 with unique b.y", InvalidSpec, "'b' at column 39 is not the item", None),
    ("partition by a.x, a.x retain 1", InvalidSpec, "named twice (columns 16 and 21)", None),
    ("retain 2 with unique a.time", InvalidSpec, "reserved name", 24),
    ("from v in values retain all select rstream v", InvalidSpec, "cannot be combined with retain all", 36),
    ("from v in values retain 2 select sum(w.x)", InvalidSpec, "'w' at column 38 is not the item", None),
    ("from v in values retain 2 select rstream w", InvalidSpec, "'w' at column 42", None),
    ("from v in values retain 2 select mean(v)", WindowSyntaxError, "unexpected '('", 38),
    ("from v in values retain 2 select count(v)", InvalidSpec, "count takes no argument", 40),
    ("from v in values retain 2 select sum()", InvalidSpec, "needs an argument", 34),
    ("from v in values retain 2 select v group by v.x", WindowSyntaxError, "unexpected 'group'", 36),
    ("from v in values select v", WindowSyntaxError, "unexpected 'select'", 18),
]


@pytest.mark.parametrize("text, error, message, column", ERRORS, ids=[text for text, *_ in ERRORS])
def test_errors_name_the_column(text, error, message, column):
    with pytest.raises(error) as caught:
        parse(text, "apama")
    assert message in str(caught.value)
    if column is not None:
        where = caught.value.column if isinstance(caught.value, WindowSyntaxError) else None
        assert where == column or f"column {column}" in str(caught.value)


@pytest.mark.parametrize("spec", [
    Intersection((Length(2), Time(1000))), GroupWin(("x",), Time(1000)), Unique(("x",)),
    Intersection((Time(1000), Length(2))),  # Esper's stale #time timer: not Apama's within window
    LengthUnique(2, ("a", "b")), stream_query(GroupWin(("x",), Time(1000)), "istream"),
])
def test_what_apama_cannot_write_is_unsupported(spec):
    with pytest.raises(UnsupportedWindow):
        render(spec, "apama")


@given(st.one_of(*LOT_SPECS.values(), *STREAM_QUERY_SPECS.values()))
def test_render_then_parse_is_the_identity(spec):
    assert parse(render(spec, "apama"), "apama") == spec


def test_durations_render_with_the_fewest_decimals():
    assert [render(Time(ms), "apama") for ms in (1500, 1000, 1, 250, 60000)] == [
        "within 1.5", "within 1.0", "within 0.001", "within 0.25", "within 60.0"]


# --------------------------------------------------------------------------- one rule, two kinds

seeds = st.integers(0, 2**64 - 1)
sizes = st.integers(1, 4)
spans = st.integers(1, 6).map(lambda k: k * GRID)
TRACES = 40


def _lots(rule: LotRule, trace):
    driver = Driver(LotsWindow.from_rule(rule, trace.start_time), trace.start_time)
    return tuple(driver.feed(trace))


def _same_updates(rule: LotRule, other: str, dialect: str, seed: int, properties=("symbol",)):
    spec = parse(other, dialect)
    for n, trace in enumerate(seeded_traces(seed, TRACES, properties)):
        assert _lots(rule, trace) == run(spec, trace), f"{rule} and {other} differ on seeded_traces({seed})[{n}]"


@given(sizes, seeds)
def test_retain_n_is_length_n(n, seed):
    _same_updates(LotRule(size=n), f"#length({n})", "esper", seed)


@given(seeds)
def test_retain_1_is_lastevent(seed):
    _same_updates(LotRule(size=1), "#lastevent", "esper", seed)


@given(spans, seeds)
def test_within_d_is_time_d(span, seed):
    _same_updates(LotRule(span=span), f"#time({span} msec)", "esper", seed)


@given(spans, seeds)
def test_within_d_is_ccl_keep_interval(span, seed):
    _same_updates(LotRule(span=span), f"KEEP {span} MILLISECONDS", "ccl", seed)


@given(seeds)
def test_retain_all_is_keepall(seed):
    _same_updates(LotRule(), "KEEP ALL", "ccl", seed)


@given(spans, sizes, seeds)
def test_within_d_retain_n_is_the_intersection_of_time_and_length(span, n, seed):
    _same_updates(LotRule(span=span, size=n), f"#time({span} msec)#length({n})", "esper", seed)


@given(spans, seeds)
def test_within_d_with_unique_is_the_intersection_of_unique_and_time(span, seed):
    _same_updates(LotRule(span=span, unique=("symbol",)), f"#unique(symbol)#time({span} msec)", "esper", seed)


@given(sizes, seeds)
def test_retain_n_every_n_is_length_batch(n, seed):
    _same_updates(LotRule(size=n, batch=n), f"#length_batch({n})", "esper", seed)


@given(sizes, seeds)
def test_partition_retain_n_is_groupwin_length_and_ccl_per(n, seed):
    _same_updates(LotRule(size=n, partition=("symbol",)), f"#groupwin(symbol)#length({n})", "esper", seed)
    _same_updates(LotRule(size=n, partition=("symbol",)), f"KEEP {n} ROWS PER(symbol)", "ccl", seed)


@given(spans, sizes, seeds)
def test_partition_within_retain_is_groupwin_of_the_intersection(span, n, seed):
    """The intersection whose #time timer follows its oldest item: Esper's
    own (`#groupwin(symbol)#time#length`) keeps a stale timer, which orders a
    jump's partitions differently (corpus: groupwin-unique-time-stale-timer-*)."""
    spec = GroupWin(("symbol",), Intersection((Time(span), Length(n)), stale_time_timers=False))
    _same_updates(LotRule(span=span, size=n, partition=("symbol",)), render(spec, "apama"), "apama", seed)


@given(spans, sizes, seeds)
def test_a_1_ms_batch_period_is_the_unbatched_rule(span, n, seed):
    _same_updates(LotRule(span=span, size=n, period=1), f"#time({span} msec)#length({n})", "esper", seed)


@given(seeds)
def test_the_tests_above_can_fail_where_the_rules_differ(seed):
    """A hidden duplicate keeps its place (Apama), a unique removal frees it
    (Esper): some trace tells them apart, so the comparisons above are not
    vacuous."""
    spec = parse("#unique(symbol)#length(3)", "esper")
    traces = seeded_traces(seed, 200, ("symbol",))
    assert any(_lots(LotRule(size=3, unique=("symbol",)), t) != run(spec, t) for t in traces)


# --------------------------------------------------------------------------- lots


@settings(max_examples=50)
@given(st.one_of(*LOT_SPECS.values()), seeds)
def test_a_lot_window_posts_only_changes(spec, seed):
    """No activation posts an empty lot, and nothing is both in and out of one."""
    for trace in seeded_traces(seed, 20, ("symbol", "feed")):
        for update in run(spec, trace):
            assert update.insert or update.remove
            assert not set(update.insert) & set(update.remove)


def test_a_partitioned_batched_time_window_shares_its_grid():
    """Partitions seen late still enter on the window's grid (creation + k p), not their own."""
    spec = parse("partition by v.symbol within 5.0 every 1.0 retain 1", "apama")
    from oracle.model import Arrive, Event, Trace, Advance

    trace = Trace([Arrive(Event("E1", {"symbol": "A"}), time=100), Arrive(Event("E2", {"symbol": "B"}), time=1700),
                   Advance(2500)])
    assert [(u.time, [e.id for e in u.insert]) for u in run(spec, trace)] == [(1000, ["E1"]), (2000, ["E2"])]


def test_an_aggregate_of_a_missing_property_is_an_invalid_trace():
    from oracle.errors import InvalidTrace
    from oracle.model import Arrive, Event, Trace

    spec = parse("from v in values retain 2 select sum(v.price)", "apama")
    with pytest.raises(InvalidTrace, match="trace item 1: event 'E2': property 'price' is missing"):
        run(spec, Trace([Arrive(Event("E1", {"price": 1.0})), Arrive(Event("E2"))]))
