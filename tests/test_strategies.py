"""The harness's strategies draw what they promise (difftest/strategies.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from difftest.strategies import (
    GRID, KEY_VALUES, KINDS, SYMBOLS, cases, implemented_kinds, seeded_traces, trace_opcodes, traces, windows, writer,
)
from oracle.dialects import parse
from oracle.model import Arrive, GroupWin, Intersection, Length, Time, Unique, check_trace, clock_times, spec_keys, spec_kind


@given(st.data())
def test_windows_are_of_the_kinds_asked_for(data):
    dialect = data.draw(st.sampled_from(("esper", "ccl", "apama")), label="dialect")
    written = implemented_kinds(dialect)
    kinds = data.draw(st.lists(st.sampled_from(written), min_size=1, max_size=3, unique=True), label="kinds")
    spec = data.draw(windows(dialect, kinds), label="spec")
    assert spec_kind(spec) in kinds


def test_default_kinds_are_the_ones_the_oracle_runs_in_the_dialect():
    kinds = implemented_kinds()
    assert "length" in kinds and "groupwin/length" in kinds and "keyed/length" not in kinds
    assert set(kinds) <= set(KINDS)
    ccl = implemented_kinds("ccl")
    assert {"length", "keepall", "time", "groupwin/length", "length_slack", "jumping_time", "keyed/groupwin/jumping_length"} <= set(ccl)
    assert not {"intersection", "length_batch", "groupwin/time", "groupwin/jumping_time"} & set(ccl)
    kuiper = implemented_kinds("kuiper")
    assert {"tumbling", "hopping", "sliding", "session", "count", "query/tumbling"} <= set(kuiper)
    assert not {"length", "time", "keyed/length"} & set(kuiper)
    apama = implemented_kinds("apama")
    assert {"length", "time", "keepall", "length_batch", "batched_time", "groupwin/batched_length", "stream_query"} <= set(apama)
    assert not {"intersection", "jumping_time", "groupwin/time", "time_batch"} & set(apama)
    assert set(implemented_kinds(None)) == set(kinds) | set(ccl) | set(kuiper) | set(apama)
    assert writer("batched_time") == "apama" and writer("stream_query") == "apama"
    assert writer("query/session") == "kuiper"
    assert writer("keyed/time") == "ccl" and writer("length") == "esper" and writer("groupwin/sort") == "esper"
    assert writer("query/session") == "kuiper"


def test_a_kind_the_dialect_does_not_write_is_refused_by_the_runner():
    from difftest.runner import RunnerError, targets

    assert [t.kind for t in targets("ccl", None, ["keyed/keepall"])] == ["keyed/keepall"]
    with pytest.raises(RunnerError, match="'keyed/keepall' in the esper dialect"):
        targets("esper", None, ["keyed/keepall"])


@given(st.data())
def test_traces_of_a_keyed_window_carry_every_operation_code(data):
    spec = data.draw(windows("ccl", ["keyed/keepall", "keyed/length"]), label="spec")
    assert trace_opcodes(spec) == ("delete", "insert", "safedelete", "update", "upsert")
    assert trace_opcodes(Length(2)) == ()
    made = seeded_traces(7, 200, spec_keys(spec), opcodes=trace_opcodes(spec))
    ops = [item.op for trace in made for item in trace.items if isinstance(item, Arrive)]
    assert set(ops) == {None, "insert", "update", "upsert", "delete", "safedelete"}
    assert ops.count(None) > ops.count("update")  # inserts stay the commonest
    keys = [tuple(item.event.get(k) for k in spec.keys) for trace in made for item in trace.items
            if isinstance(item, Arrive)]
    assert len(set(keys)) < len(keys) / 10  # keys repeat: updates and deletes find rows, inserts collide


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown window kind"):
        windows("esper", ["lenght"])


def check_generated(trace):
    check_trace(trace)
    events = trace.events()
    assert [e.id for e in events] == [f"E{n}" for n in range(1, len(events) + 1)]
    for event in events:
        assert isinstance(event.props["ts"], int) and event.props["ts"] >= 0  # mostly on the grid, now and then off
        assert isinstance(event.props["price"], float)
        assert event.get("symbol") in SYMBOLS and event.get("feed") in KEY_VALUES
    # clock moves are grid steps, or 1 ms / half a grid step off it
    steps = {b - a for a, b in zip([trace.start_time] + clock_times(trace), clock_times(trace))}
    assert all(s % GRID == 0 or s in (1, GRID // 2) for s in steps)


@given(traces(properties=("feed",)))
def test_traces_are_valid_and_on_the_grid(trace):
    check_generated(trace)


@given(st.integers(0, 2**64 - 1))
def test_seeded_traces_follow_the_same_rules_and_repeat_with_their_seed(seed):
    made = seeded_traces(seed, 20, properties=("feed",))
    assert len(made) == 20
    for trace in made:
        check_generated(trace)
    assert seeded_traces(seed, 20, properties=("feed",)) == made


def test_seeded_traces_reach_the_hard_cases():
    made = seeded_traces(1, 400, properties=("feed",))
    items = [item for trace in made for item in trace.items]
    assert len({trace for trace in made}) > 350
    assert any(len(trace.items) > 25 for trace in made)  # the occasional long trace
    assert {type(item).__name__ for item in items} == {"Arrive", "Advance", "Jump"}
    assert any(item.time is not None for item in items if isinstance(item, Arrive))  # events at a time
    events = [item.event for item in items if isinstance(item, Arrive)]
    assert {e.get("symbol") for e in events} == set(SYMBOLS) and {e.get("feed") for e in events} == set(KEY_VALUES)
    off_grid = sum(e.props["ts"] % GRID != 0 for e in events)
    assert 0 < off_grid < len(events) / 2  # a reference off the grid can matter; ties on it stay common


@given(cases(kinds=["groupwin/unique", "ext_timed_batch"]))
def test_cases_carry_the_text_of_their_window(case):
    assert parse(case.window, case.dialect) == case.spec
    keys = spec_keys(case.spec)
    stamps = [item.event.get("ts") for item in case.trace.items if isinstance(item, Arrive)]
    assert all(ts is None or isinstance(ts, int) for ts in stamps)  # now and then missing: `trace_nulls`
    assert set(keys) <= {"symbol", "feed", "region"}
    stamp = getattr(case.spec, "timestamp", None)
    if stamp is not None:  # the timestamp property, `ts` or another name, holds integers
        assert all(isinstance(item.event.get(stamp), (int, type(None))) for item in case.trace.items
                   if isinstance(item, Arrive))


def test_spec_keys():
    spec = GroupWin(("symbol",), Intersection((Unique(("feed", "symbol")), Length(2), Time(GRID))))
    assert spec_keys(spec) == ("symbol", "feed")
    assert spec_keys(Length(1)) == ()


# windows users gave `difftest run --window` (issue 25): the drawn traces must carry what each reads,
# under its own names, and no two names one engine could confuse (Spark's columns ignore case)
USER_WINDOWS = [
    ("apama", "from v in values within 1.5 every 1.0 select sum(v)", {"value"}),
    ("ccl", "PRIMARY KEY (TradeId) KEEP 2 ROWS PER(Symbol)", {"TradeId", "Symbol"}),
    ("esper", "#groupwin(Symbol)#length(2)", {"Symbol"}),
    ("esper", "#length(3)#uni(Price)", {"Price"}),
    ("esper", "#ext_timed(T, 1 sec)", {"T"}),
]


@pytest.mark.parametrize(("dialect", "window", "read"), USER_WINDOWS, ids=[w for _, w, _ in USER_WINDOWS])
def test_drawn_traces_carry_what_a_given_window_reads(dialect, window, read):
    from difftest.strategies import trace_shape
    from oracle import parse, run

    spec = parse(window, dialect)
    made = seeded_traces(11, 60, max_items=12, **trace_shape(spec))
    events = [e for trace in made for e in trace.events()]
    assert read <= {name for e in events for name in e.props}  # a key may be drawn missing now and then
    for event in events:
        lowered = [name.lower() for name in event.props]
        assert len(lowered) == len(set(lowered)), event
    assert sum(len(run(spec, trace)) for trace in made) > 0  # every trace runs, and the window posts


@pytest.mark.parametrize(("window", "odd"), [
    ("select irstream symbol, sum(price) as s from E#time(2 sec) group by symbol", True),
    ("select irstream sum(price) as s from E(price > 12)#groupwin(symbol)#length(3) where price < 18", True),
    ("select irstream sum(price) as s from E#sort(3, price)", False),  # the window itself reads price
    ("select irstream sum(price) as s from E#unique(price)", False),
    ("#time(2 sec)", False),  # a window alone: its traces as ever
])
def test_statements_meet_missing_and_non_finite_prices(window, odd):
    import math

    from difftest.strategies import odd_prices, trace_shape

    spec = parse(window, "esper")
    assert odd_prices(spec) is odd
    prices = [e.props.get("price") for trace in seeded_traces(5, 60, **trace_shape(spec)) for e in trace.events()]
    odd_ones = [p for p in prices if p is None or not math.isfinite(p)]
    if not odd:  # a sort value is null now and then (`trace_nulls`), never NaN nor infinite
        assert not [p for p in odd_ones if p is not None]
        assert (None in prices) == ("#sort" in window)
        return
    assert {None, "nan", math.inf, -math.inf} <= {"nan" if p is not None and math.isnan(p) else p for p in odd_ones}
    assert len(odd_ones) < len(prices) / 5  # now and then, not mostly


@pytest.mark.parametrize("window, nullable", [
    ("#sort(3, price)", "price"),
    ("#rank(feed, 2, price desc)", "price"),
    ("#time_order(ts, 1 sec)", "ts"),
    ("#timetolive(ts)", "ts"),
    ("#ext_timed(ts, 1 sec)", "ts"),
    ("#ext_timed_batch(ts, 1 sec)", "ts"),
    ("#groupwin(symbol)#time_order(stamp, 1 sec)", "stamp"),
    ("#length(4)#uni(price)", "price"),
    ("#length(4)#weighted_avg(price, volume)", "volume"),
    ("#expr(sum(price) < 40)", "price"),
])
def test_every_property_a_window_reads_is_now_and_then_null(window, nullable):
    """A sort value, a timestamp a window takes null, a statistic's input, an
    `#expr`'s input: missing now and then, present mostly."""
    from difftest.strategies import trace_shape

    spec = parse(window, "esper")
    events = [e for trace in seeded_traces(3, 80, **trace_shape(spec)) for e in trace.events()]
    missing = sum(e.get(nullable) is None for e in events)
    assert 0 < missing < len(events) / 4


@pytest.mark.parametrize("window, kept", [
    ("#unique(symbol)#time_order(ts, 1 sec)", ("ts",)),
    ("#length(3)#rank(feed, 2, price)", ("feed", "price")),
    ("#groupwin(symbol)#length(2)#ext_timed(ts, 1 sec) retain-union", ("ts",)),
])
def test_a_member_that_cannot_take_a_null_is_never_drawn_one(window, kept):
    from difftest.strategies import trace_shape

    spec = parse(window, "esper")
    events = [e for trace in seeded_traces(3, 80, **trace_shape(spec)) for e in trace.events()]
    assert events and all(e.get(name) is not None for e in events for name in kept)


@pytest.mark.parametrize("window", [
    "select irstream symbol, sum(price) as s from E#length(2) group by symbol",  # odd prices, null keys
    "select irstream count(*) as n from E#time_order(ts, 1 sec) where ts > 0",  # a timestamp drawn null
])
def test_a_drawn_trace_never_loses_a_property_from_every_event(window):
    """Short traces whose every event drew a property missing get it back on the
    last event: a statement reading a property no event has would be refused."""
    from difftest.strategies import trace_shape
    from oracle.model import check_properties

    spec = parse(window, "esper")
    made = seeded_traces(2, 400, max_items=3, **trace_shape(spec))
    for trace in made:
        check_properties(spec, trace)
    assert any(e.get("price") is None or e.get("ts") is None for trace in made for e in trace.events())


def _key_kinds(spec) -> set[str]:
    """What a statement's GROUP BY holds: each key's kind, and how many keys."""
    from oracle.model import Name

    found = {f"{len(spec.keys)} keys"}
    for key in spec.keys:
        found.add(key.name if isinstance(key, Name) else "expression")
    return found


def _aggregate_arithmetic(node) -> bool:
    """Whether `node` holds arithmetic whose operands include an aggregate (`sum(price) / count(*)`)."""
    from oracle.model import Aggregate, Binary, expression_nodes

    return any(isinstance(n, Binary) and n.op in "+-*/" and any(isinstance(side, Aggregate) for side in (n.left, n.right))
               for n in expression_nodes(node))


@pytest.mark.parametrize("kind, expected", [
    ("statement/row_per_group", {"symbol", "feed", "price", "ts", "expression", "1 keys", "2 keys", "3 keys"}),
    ("statement/aggregate_grouped", {"symbol", "feed", "price", "ts", "expression", "1 keys", "2 keys", "3 keys"}),
    ("statement/store", {"symbol", "feed", "price", "ts", "expression", "1 keys", "2 keys", "3 keys"}),
    ("query/tumbling", {"symbol", "feed", "price", "expression", "0 keys", "1 keys", "2 keys", "3 keys"}),
])
def test_drawn_statements_group_by_keys_of_every_kind_and_combine_aggregates(kind, expected):
    from hypothesis import HealthCheck, settings

    from difftest.strategies import SPECS

    keys: set[str] = set()
    parts: set[str] = set()

    @settings(max_examples=400, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(SPECS[kind])
    def draw(spec):
        keys.update(_key_kinds(spec))
        if spec.having is not None:
            parts.add("having")
            parts.update({"having arithmetic"} if _aggregate_arithmetic(spec.having) else set())
        if any(item.expression is not None and _aggregate_arithmetic(item.expression) for item in spec.select):
            parts.add("select arithmetic")

    draw()
    assert expected <= keys, f"{kind} never drew GROUP BY {sorted(expected - keys)}"
    wanted = {"having", "having arithmetic"} | ({"select arithmetic"} if not kind.startswith("query/") else set())
    assert wanted <= parts, f"{kind} never drew {sorted(wanted - parts)}"
