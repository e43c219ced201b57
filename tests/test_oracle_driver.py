"""The driver's clock rules (oracle/driver.py; CORPUS.md "Input items", DESIGN.md
"The clock"), observed through real windows.

Timelines read left to right in ms: `E1` an arrival, `|` a timer firing, `^` a
jump target.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from attrs import frozen

from oracle import run
from oracle.cases import case_from_json
from oracle.errors import InvalidTrace
from oracle.model import (
    Advance,
    Arrive,
    DerivedValues,
    Event,
    ExtTimed,
    ExtTimedBatch,
    GroupWin,
    Intersection,
    Jump,
    KeepAll,
    Length,
    Rank,
    RetainUnion,
    SortKey,
    Time,
    TimeBatch,
    TimeOrder,
    SetVariables,
    Unique,
    Trace,
    Update,
    accepted_opcodes,
    rejects_bad_items,
)
from oracle.driver import Driver
from oracle.windows import WINDOW_CLASSES
from oracle.windows.base import Delivery, Post, WindowBase


def ev(event_id, time=None, op=None, **props):
    return Arrive(Event(event_id, props), time=time, op=op)


def updates(spec, items, start_time=0):
    return [
        (u.after, u.time, [e.id for e in u.insert], [e.id for e in u.remove])
        for u in run(spec, Trace(items, start_time))
    ]


def test_walk_stops_at_each_due_time_and_jump_fires_once_at_the_target():
    # time_batch(1000): E1 at 0, then to 2500
    #   walk: 1000|[E1]  2000|-[E1]        jump: 2500^[E1]   (then 3000| -[E1])
    walk = [ev("E1"), Advance(2500)]
    jump = [ev("E1"), Jump(2500)]
    assert updates(TimeBatch(1000), walk) == [(1, 1000, ["E1"], []), (1, 2000, [], ["E1"])]
    assert updates(TimeBatch(1000), jump) == [(1, 2500, ["E1"], [])]


def test_a_timer_scheduled_during_a_walk_fires_later_in_the_same_walk():
    # time(1000): E1 at 0, E2 at 400; the expiry at 1000 re-arms at 1400,
    # which the same walk reaches
    items = [ev("E1"), ev("E2", time=400), Advance(5000)]
    assert updates(Time(1000), items) == [
        (0, 0, ["E1"], []),
        (1, 400, ["E2"], []),
        (2, 1000, [], ["E1"]),
        (2, 1400, [], ["E2"]),
    ]


def test_a_timer_scheduled_during_a_jump_waits_for_the_next_clock_item():
    # time_batch(1000): jump to 1000 releases [E1] and re-arms at 2000; the jump
    # to 1000 does not fire it, the next jump to 2000 does
    items = [ev("E1"), Jump(1000), Jump(1000), Jump(2000)]
    assert updates(TimeBatch(1000), items) == [
        (1, 1000, ["E1"], []),
        (3, 2000, [], ["E1"]),
    ]


def test_a_jump_with_nothing_due_gives_no_update():
    items = [ev("E1"), Jump(999)]
    assert updates(Time(1000), items) == [(0, 0, ["E1"], [])]


@pytest.mark.parametrize("clock_item", [Advance, Jump])
def test_a_timer_due_at_an_events_arrival_fires_before_the_event(clock_item):
    # time(1000): E1 at 0 expires at 1000, before E2 (arriving at 1000) is inserted
    items = [ev("E1"), clock_item(1000), ev("E2")]
    assert updates(Time(1000), items) == [
        (0, 0, ["E1"], []),
        (1, 1000, [], ["E1"]),
        (2, 1000, ["E2"], []),
    ]


def test_the_time_shorthand_walks_first_and_the_updates_name_the_event_item():
    # {"event": E2, "time": 2500} == {"advance": 2500}, then E2; the walk's
    # updates are caused by item 1, the shorthand itself
    short = [ev("E1"), ev("E2", time=2500)]
    spelled = [ev("E1"), Advance(2500), ev("E2")]
    assert updates(Time(1000), short) == [
        (0, 0, ["E1"], []),
        (1, 1000, [], ["E1"]),
        (1, 2500, ["E2"], []),
    ]
    assert updates(Time(1000), spelled) == [
        (0, 0, ["E1"], []),
        (1, 1000, [], ["E1"]),
        (2, 2500, ["E2"], []),
    ]


def test_the_shorthand_is_read_from_the_case_format():
    case = case_from_json({
        "dialect": "esper", "window": "#time(1 sec)", "start_time": 0,
        "input": [{"event": {"id": "E1"}}, {"event": {"id": "E2"}, "time": 1000}],
        "expected": [],
    })
    assert updates(Time(1000), case.trace.items) == [
        (0, 0, ["E1"], []),
        (1, 1000, [], ["E1"]),
        (1, 1000, ["E2"], []),
    ]


def test_a_unit_that_posts_nothing_gives_no_update_and_an_empty_post_an_empty_one():
    # time_batch(1000) without FORCE_UPDATE goes silent; with it, posts empty updates
    items = [ev("E1"), Advance(4000)]
    assert updates(TimeBatch(1000), items) == [(1, 1000, ["E1"], []), (1, 2000, [], ["E1"])]
    assert updates(TimeBatch(1000, force_update=True), items) == [
        (1, 1000, ["E1"], []),
        (1, 2000, [], ["E1"]),
        (1, 3000, [], []),
        (1, 4000, [], []),
    ]


def test_the_end_of_the_trace_flushes_nothing():
    assert updates(TimeBatch(1000), [ev("E1"), ev("E2", time=999)]) == []


def test_a_start_time_is_the_clock_at_creation():
    items = [ev("E1"), Advance(6000)]
    assert updates(Time(1000), items, start_time=5000) == [
        (0, 5000, ["E1"], []),
        (1, 6000, [], ["E1"]),
    ]


@pytest.mark.parametrize("spec", [ExtTimed("ts", 1000), ExtTimedBatch("ts", 1000), TimeOrder("ts", 1000),
                                  TimeOrder("ts", 0)])
def test_an_event_without_its_timestamp_posts_nothing_and_the_trace_goes_on(spec):
    """Esper's view throws on a null timestamp and its runtime goes on (observed):
    the event is neither posted nor held; the clock still walks to it."""
    with_gap = run(spec, Trace([ev("E1", ts=0), Advance(10), ev("E2", other=5, time=20), ev("E3", ts=3000)]))
    without = run(spec, Trace([ev("E1", ts=0), Advance(10), Advance(20), ev("E3", ts=3000)]))
    assert with_gap == without and "E2" not in {e.id for u in with_gap for e in u.insert + u.remove}


@pytest.mark.parametrize("spec", [Intersection([Unique(["symbol"]), TimeOrder("ts", 1000)]),
                                  RetainUnion([Length(2), ExtTimed("ts", 1000)]),
                                  Intersection([Length(3), Rank(["symbol"], 2, [SortKey("price")])])])
def test_a_member_that_cannot_take_a_null_makes_the_trace_invalid(spec):
    """Esper's member view throws (or misfiles the null) after the members before
    it took the event: a partial state not modelled, refused naming the item."""
    items = [ev("E1", symbol="A", ts=0, price=1.0), ev("E2", symbol="B")]
    with pytest.raises(InvalidTrace, match=r"trace item 1: event 'E2': property '(ts|price)' is null") as info:
        run(spec, Trace(items))
    assert info.value.index == 1


def test_a_grouped_ext_timed_timestamp_error_names_the_item_too():
    # (a string beside a number would be refused first, by the trace's own rule: one kind of value per property)
    items = [ev("E1", symbol="A", ts="late"), ev("E2", symbol="B", ts="later")]
    with pytest.raises(InvalidTrace, match="'ts' is 'late', not an integer") as info:
        run(GroupWin(["symbol"], ExtTimed("ts", 1000)), Trace(items))
    assert info.value.index == 0


@pytest.mark.parametrize("op", ["update", "upsert", "delete", "safedelete"])
def test_operation_codes_are_rejected_by_esper_windows(op):
    items = [ev("E1"), ev("E2", op=op)]
    with pytest.raises(InvalidTrace, match=f"operation code '{op}' is not supported") as info:
        run(Length(2), Trace(items))
    assert info.value.index == 1


def test_the_insert_operation_code_is_an_ordinary_arrival():
    assert updates(KeepAll(), [ev("E1", op="insert")]) == [(0, 0, ["E1"], [])]


def test_time_going_backwards_is_an_invalid_trace():
    with pytest.raises(InvalidTrace) as info:
        run(Length(2), Trace([Advance(1000), ev("E1", time=500)]))
    assert info.value.index == 1


# --------------------------------------------------------------------------- the rules a window declares


class _TwoPosts(WindowBase):
    """A test window: each arrival posts twice (itself, then a copy as removed),
    and a `set` item posts derived rows."""

    def __init__(self, delivery: Delivery):
        self.delivery = delivery

    def on_event(self, event, now):
        return [Post((event,)), Post((), (event,))]

    def on_set(self, values, now):
        return [Post(values=DerivedValues([dict(values)], []))]

    def contents(self):
        return []


@pytest.mark.parametrize("delivery, expected", [
    (Delivery.ONE_UPDATE_PER_UNIT, [(0, 0, ("E1",), ("E1",))]),
    (Delivery.UPDATE_PER_POST, [(0, 0, ("E1",), ()), (0, 0, (), ("E1",))]),
])
def test_a_units_posts_become_updates_by_the_windows_delivery_rule(delivery, expected):
    found = Driver(_TwoPosts(delivery), 0).feed(Trace([ev("E1")]))
    assert [(u.after, u.time, tuple(e.id for e in u.insert), tuple(e.id for e in u.remove)) for u in found] == expected


def test_a_set_item_reaches_the_window_and_derived_rows_become_the_updates_values():
    found = Driver(_TwoPosts(Delivery.ONE_UPDATE_PER_UNIT), 0).feed(Trace([Advance(700), SetVariables({"SIZE": 3})]))
    assert found == [Update(1, 700, values=DerivedValues([{"SIZE": 3}], []))]


@frozen
class _RejectingKeepAll(KeepAll):
    """KeepAll under a rule that rejects bad items (as a CCL window will)."""

    REJECTS_BAD_ITEMS: ClassVar[bool] = True


def test_a_spec_that_rejects_bad_items_posts_an_error_and_goes_on():
    spec = _RejectingKeepAll()
    window = WINDOW_CLASSES[KeepAll](spec, 0)
    found = Driver(window, 0, spec).feed(Trace([ev("E1"), ev("E2", time=500, op="delete"), ev("E3")]))
    assert found == [
        Update(0, 0, [Event("E1")]),
        Update(1, 500, error="operation code 'delete' is not supported by this window"),
        Update(2, 500, [Event("E3")]),
    ]
    assert window.contents() == [Event("E1"), Event("E3")]  # the rejected item changed nothing


def test_the_item_rules_of_a_nested_spec_are_its_members():
    assert accepted_opcodes(GroupWin(("k",), KeepAll())) == frozenset({"insert"})
    assert not rejects_bad_items(GroupWin(("k",), Length(1)))
    assert rejects_bad_items(GroupWin(("k",), _RejectingKeepAll()))


# --------------------------------------------------------------------------- fed item by item (a stream)


def test_step_keyed_gives_each_update_its_phase_and_ordinal():
    """`step_keyed` (what spark_impl.streaming runs per trace): a walk's stops
    are phase 0, the arrival phase 1; nothing is kept in `updates`.

        time:   0    1000   1500
                E1    |     E2 (walks to 1500: E1 expires at 1000 first)"""
    from oracle.driver import start

    trace = Trace([Arrive(Event("E1")), Arrive(Event("E2"), time=1500)])
    driver = start(Time(1000), trace)
    assert [(p, o, u.after, u.time) for p, o, u in driver.step_keyed(0, trace.items[0])] == [(1, 0, 0, 0)]
    keyed = driver.step_keyed(1, trace.items[1])
    assert [(p, o, u.time, [e.id for e in u.insert], [e.id for e in u.remove]) for p, o, u in keyed] == [
        (0, 0, 1000, [], ["E1"]), (1, 0, 1500, ["E2"], [])]
    assert driver.updates == []
    jump = driver.step_keyed(2, Jump(5000))
    assert [(p, o, u.time, [e.id for e in u.remove]) for p, o, u in jump] == [(0, 0, 5000, ["E2"])]


def test_step_keyed_numbers_the_updates_of_one_unit_where_each_post_is_one():
    from oracle import parse
    from oracle.driver import start

    spec = parse("HOPPINGWINDOW(ss, 2, 1)", "kuiper")
    trace = Trace([Arrive(Event("E1"), time=500), Advance(2000)])
    driver = start(spec, trace)
    keyed = [k for i, item in enumerate(trace.items) for k in driver.step_keyed(i, item)]
    assert keyed and [(p, o) for p, o, _ in keyed] == [(0, 0)] * len(keyed)  # a pane per stop here
    assert tuple(u for _, _, u in keyed) == run(spec, trace)


def test_a_refused_item_fed_alone_names_its_index():
    from oracle.driver import start

    trace = Trace([Arrive(Event("E1", {"ts": "late"})), Arrive(Event("E2", {"ts": "later"}))])
    driver = start(ExtTimed("ts", 1000), trace)
    with pytest.raises(InvalidTrace) as info:
        driver.step_keyed(7, trace.items[0])
    assert info.value.index == 7 and "ts" in str(info.value)


def _corpus_pairs():
    from pathlib import Path

    from oracle.cases import case_files, load_case
    from oracle.dialects import case_spec

    root = Path(__file__).resolve().parent.parent
    for path in case_files([root / "corpus"]):
        case = load_case(path)
        yield path.relative_to(root / "corpus").as_posix(), case_spec(case), case.trace


def test_a_driver_pickled_between_any_two_items_posts_what_a_run_posts():
    """Every corpus case, fed item by item through `step_keyed` with the driver
    pickled and read back before every item (as a stream processor keeps it in
    a state store), posts exactly what `run` posts, with the same keys."""
    import pickle

    from difftest.compare import compare
    from oracle.driver import start
    from oracle.errors import WindowOracleError

    checked = 0
    for name, spec, trace in _corpus_pairs():
        try:
            want = run(spec, trace)
        except WindowOracleError:
            continue
        driver, got = start(spec, trace), []
        for index, item in enumerate(trace.items):
            driver = pickle.loads(pickle.dumps(driver, protocol=pickle.HIGHEST_PROTOCOL))
            keyed = driver.step_keyed(index, item)
            units = [(u.after, p, u.time) for p, _, u in keyed]
            assert units == sorted(units), name  # the update key orders a trace's updates
            got += [u for _, _, u in keyed]
        assert compare(want, tuple(got)) is None, name
        checked += 1
    assert checked > 400
