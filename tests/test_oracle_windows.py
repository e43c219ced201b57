"""Scenario tests for the oracle's Esper windows (oracle/windows/*.py).

Each test runs one trace through `oracle.run` and asserts every update exactly:
(after, time, inserted ids, removed ids). The timelines read left to right in
ms; `E1` marks an arrival, `|` a timer firing, `^` a jump target.
"""

from __future__ import annotations

import pytest

from oracle import run
from oracle.errors import InvalidTrace, UnsupportedWindow
from oracle.model import (
    Advance,
    Arrive,
    Event,
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    GroupWin,
    Intersection,
    Jump,
    KeepAll,
    LastEvent,
    Length,
    LengthBatch,
    SetVariables,
    Time,
    TimeBatch,
    Trace,
    Unique,
)
from oracle.windows import WINDOW_CLASSES, make_window
from oracle.windows.base import EventError, Post, ViewFailure
from oracle.windows.time_batch import next_grid_point


def ev(event_id, time=None, **props):
    """An arrival; with `time`, the clock first walks there (the shorthand)."""
    return Arrive(Event(event_id, props), time=time)


def updates(spec, items, start_time=0):
    """The updates as (after, time, insert ids, remove ids)."""
    return [
        (u.after, u.time, [e.id for e in u.insert], [e.id for e in u.remove])
        for u in run(spec, Trace(items, start_time))
    ]


def ids(events):
    return [e.id for e in events]


# --------------------------------------------------------------------------- length family


def test_length_pushes_out_the_oldest_in_the_same_update():
    # length(2):  E1  E2  E3  E4
    #                     ^E1 ^E2 pushed out
    items = [ev("E1"), ev("E2"), ev("E3"), ev("E4")]
    assert updates(Length(2), items) == [
        (0, 0, ["E1"], []),
        (1, 0, ["E2"], []),
        (2, 0, ["E3"], ["E1"]),
        (3, 0, ["E4"], ["E2"]),
    ]


def test_length_batch_releases_every_n_events_with_the_previous_batch_as_old():
    # length_batch(2):  E1 E2 | E3 E4 | E5
    #                   batch1  batch2  (open, not posted)
    items = [ev("E1"), ev("E2"), ev("E3"), ev("E4"), ev("E5")]
    assert updates(LengthBatch(2), items) == [
        (1, 0, ["E1", "E2"], []),
        (3, 0, ["E3", "E4"], ["E1", "E2"]),
    ]
    window = make_window(LengthBatch(2), 0)
    for item in items:
        window.on_event(item.event, 0)
    assert ids(window.contents()) == ["E3", "E4"]  # the released batch; E5 is buffered


def test_firstlength_keeps_the_first_n_and_drops_the_rest_silently():
    # firstlength(2):  E1 E2 E3(dropped) E4(dropped); no update for the drops
    items = [ev("E1"), ev("E2"), ev("E3", time=1000), ev("E4")]
    assert updates(FirstLength(2), items) == [
        (0, 0, ["E1"], []),
        (1, 0, ["E2"], []),
    ]


# --------------------------------------------------------------------------- time family


def test_time_walk_expires_each_arrival_at_its_own_due_time():
    # time(1000), advance (walk) to 3000:
    #   0     500   1000  1500        3000
    #   E1    E2    |E1   |E2          (two stops of one walk)
    items = [ev("E1"), ev("E2", time=500), Advance(3000)]
    assert updates(Time(1000), items) == [
        (0, 0, ["E1"], []),
        (1, 500, ["E2"], []),
        (2, 1000, [], ["E1"]),
        (2, 1500, [], ["E2"]),
    ]


def test_time_jump_over_several_due_times_expires_once_at_the_target():
    # time(1000), jump to 3000: due 1000 and 1500 fire once, at 3000
    #   0     500               3000^
    #   E1    E2                |E1 E2
    items = [ev("E1"), ev("E2", time=500), Jump(3000)]
    assert updates(Time(1000), items) == [
        (0, 0, ["E1"], []),
        (1, 500, ["E2"], []),
        (2, 3000, [], ["E1", "E2"]),
    ]


def test_time_events_at_one_instant_leave_together_and_the_window_re_arms():
    # time(1000):
    #   0       200      1000          1200     2000
    #   E1 E2   E3       |E1 E2        |E3      E4 (re-armed at 3000)
    items = [ev("E1"), ev("E2"), ev("E3", time=200), Advance(2000), ev("E4"), Advance(3000)]
    assert updates(Time(1000), items) == [
        (0, 0, ["E1"], []),
        (1, 0, ["E2"], []),
        (2, 200, ["E3"], []),
        (3, 1000, [], ["E1", "E2"]),
        (3, 1200, [], ["E3"]),
        (4, 2000, ["E4"], []),
        (5, 3000, [], ["E4"]),
    ]


def test_ext_timed_expires_by_the_arrivals_timestamp_inclusive_and_in_arrival_order():
    # ext_timed(ts, 1000); the clock never moves, only timestamps matter:
    #   E1 ts=0, E2 ts=900, E3 ts=500 (late), E4 ts=1000 -> E1 (0 <= 1000-1000) leaves,
    #   E5 ts=1600 -> E2 (900 <= 600? no) blocks E3 (500) behind it: nothing leaves,
    #   E6 ts=1900 -> E2 and then E3 leave, front first.
    items = [ev("E1", ts=0), ev("E2", ts=900), ev("E3", ts=500), ev("E4", ts=1000),
             ev("E5", ts=1600), ev("E6", ts=1900)]
    assert updates(ExtTimed("ts", 1000), items) == [
        (0, 0, ["E1"], []),
        (1, 0, ["E2"], []),
        (2, 0, ["E3"], []),
        (3, 0, ["E4"], ["E1"]),
        (4, 0, ["E5"], []),
        (5, 0, ["E6"], ["E2", "E3"]),
    ]


def test_ext_timed_fails_on_a_null_timestamp_and_rejects_a_non_integer_one():
    """A null: Esper's view throws (`ViewFailure`, the runtime goes on); a value
    no long holds: the trace is invalid (`EventError`)."""
    window = make_window(ExtTimed("ts", 1000), 0)
    with pytest.raises(ViewFailure, match="'E1'.*'ts' is null"):
        window.on_event(Event("E1", {}), 0)
    with pytest.raises(EventError, match="'E2'.*'ts' is 1.5, not an integer"):
        window.on_event(Event("E2", {"ts": 1.5}), 0)
    with pytest.raises(EventError, match="'E3'.*'ts' is True"):
        window.on_event(Event("E3", {"ts": True}), 0)
    assert window.contents() == []


def test_firsttime_counts_from_creation_and_drops_arrivals_from_the_due_time_on():
    # firsttime(1000), window created at 500:
    #   500       1200      1500|       1500
    #   E1        E2        (closes)    E3 dropped (the walk fired the timer first)
    items = [ev("E1"), ev("E2", time=1200), ev("E3", time=1500), ev("E4", time=9000)]
    assert updates(FirstTime(1000), items, start_time=500) == [
        (0, 500, ["E1"], []),
        (1, 1200, ["E2"], []),
    ]


# --------------------------------------------------------------------------- time_batch family


def test_next_grid_point_is_the_first_point_of_the_grid_strictly_after_the_time():
    # Esper's deltaAddWReference (esper.md §0.2), references before and after the time
    for span in (1, 3, 7):
        for reference in range(-15, 16):
            for current in range(-15, 16):
                expected = min(reference + k * span for k in range(-40, 40) if reference + k * span > current)
                assert next_grid_point(current, reference, span) == expected, (current, reference, span)


def test_time_batch_keeps_the_first_arrivals_grid_and_stops_after_an_empty_interval():
    # time_batch(1000), reference = first arrival at 300:
    #   300  800  1300|       2300|      3300| (both empty: silent, timer stops)
    #   E1   E2   [E1 E2]     -[E1 E2]
    #   4500: E3 re-arms on the old grid -> 5300|[E3], 6300| -[E3]
    items = [ev("E1", time=300), ev("E2", time=800), Advance(4500), ev("E3"), Advance(8000)]
    assert updates(TimeBatch(1000), items) == [
        (2, 1300, ["E1", "E2"], []),
        (2, 2300, [], ["E1", "E2"]),
        (4, 5300, ["E3"], []),
        (4, 6300, [], ["E3"]),
    ]
    window, e1 = make_window(TimeBatch(1000), 0), Event("E1")
    window.on_event(e1, 300)
    assert [window.next_timer(), window.on_timer(1300), window.next_timer()] == [1300, [Post([e1], [])], 2300]
    assert [window.on_timer(2300), window.next_timer()] == [[Post([], [e1])], 3300]
    assert [window.on_timer(3300), window.next_timer()] == [[], None]  # the timer stops
    window.on_event(Event("E2"), 4500)
    assert window.next_timer() == 5300  # re-armed on the old grid


def test_time_batch_arrival_on_a_grid_point_joins_the_next_batch():
    # time_batch(1000): E1 at 0; the walk to 1000 fires [E1] first, then E2 arrives
    items = [ev("E1"), ev("E2", time=1000), Advance(2000)]
    assert updates(TimeBatch(1000), items) == [
        (1, 1000, ["E1"], []),
        (2, 2000, ["E2"], ["E1"]),
    ]


def test_time_batch_reference_point_aligns_the_grid():
    # time_batch(1000, 250L): E1 at 100 -> the next grid point after 100 is 250
    #   100 E1  250|[E1]  1250|-[E1]  1700 E2  2250|[E2]
    items = [ev("E1", time=100), Advance(1700), ev("E2"), Advance(3000)]
    assert updates(TimeBatch(1000, reference=250), items) == [
        (1, 250, ["E1"], []),
        (1, 1250, [], ["E1"]),
        (3, 2250, ["E2"], []),
    ]


def test_time_batch_jump_over_several_grid_points_posts_once_and_keeps_the_grid():
    # time_batch(1000): E1 at 0, jump to 3500: one post at 3500, next due 4000
    #   0     1000 2000 3000  3500^[E1]   4000|-[E1]
    items = [ev("E1"), Jump(3500), Advance(6000)]
    assert updates(TimeBatch(1000), items) == [
        (1, 3500, ["E1"], []),
        (2, 4000, [], ["E1"]),
    ]


def test_time_batch_force_update_posts_empty_updates_once_started():
    # time_batch(1000, "FORCE_UPDATE"): nothing before the first arrival, then a
    # post at every grid point, empty ones included
    #   0    500  1500|[E1]  2500|-[E1]  3500|(empty)
    items = [Advance(400), ev("E1", time=500), Advance(3500)]
    assert updates(TimeBatch(1000, force_update=True), items) == [
        (2, 1500, ["E1"], []),
        (2, 2500, [], ["E1"]),
        (2, 3500, [], []),
    ]


def test_time_batch_start_eager_starts_at_creation_and_ignores_the_reference_point():
    # time_batch(1000, 300L, "FORCE_UPDATE, START_EAGER") created at 100:
    # grid 100 + k*1000 (not 300 + k*1000), empty updates from the start
    #   100  1100|(empty)  1500 E1   2100|[E1]  3100|-[E1]
    spec = TimeBatch(1000, reference=300, force_update=True, start_eager=True)
    items = [ev("E1", time=1500), Advance(3100)]
    assert updates(spec, items, start_time=100) == [
        (0, 1100, [], []),
        (1, 2100, ["E1"], []),
        (1, 3100, [], ["E1"]),
    ]


def test_ext_timed_batch_the_closing_event_starts_the_next_batch():
    # ext_timed_batch(ts, 1000), reference = E1's ts 200, grid 200, 1200, 2200, ...
    #   E1 ts=200, E2 ts=150 (late: joins), E3 ts=1199 (joins), E4 ts=1200 closes [E1 E2 E3],
    #   E5 ts=9000 closes [E4] (no empty batches in between)
    items = [ev("E1", ts=200), ev("E2", ts=150), ev("E3", ts=1199), ev("E4", ts=1200), ev("E5", ts=9000)]
    assert updates(ExtTimedBatch("ts", 1000), items) == [
        (3, 0, ["E1", "E2", "E3"], []),
        (4, 0, ["E4"], ["E1", "E2", "E3"]),
    ]


def test_ext_timed_batch_reference_point_aligns_the_grid():
    # ext_timed_batch(ts, 1000, 500L): E1 ts=0 -> closes at 500; E2 ts=499 joins,
    # E3 ts=500 closes [E1 E2]; E4 ts=1499 joins [E3]; E5 ts=1500 closes [E3 E4]
    items = [ev("E1", ts=0), ev("E2", ts=499), ev("E3", ts=500), ev("E4", ts=1499), ev("E5", ts=1500)]
    assert updates(ExtTimedBatch("ts", 1000, reference=500), items) == [
        (2, 0, ["E1", "E2"], []),
        (4, 0, ["E3", "E4"], ["E1", "E2"]),
    ]


# --------------------------------------------------------------------------- keep family


def test_keepall_posts_every_arrival_and_never_removes():
    items = [ev("E1"), ev("E2", time=5000), Jump(100000), ev("E3")]
    assert updates(KeepAll(), items) == [
        (0, 0, ["E1"], []),
        (1, 5000, ["E2"], []),
        (3, 100000, ["E3"], []),
    ]


def test_firstevent_keeps_only_the_first_event():
    items = [ev("E1"), ev("E2"), ev("E3", time=1000)]
    assert updates(FirstEvent(), items) == [(0, 0, ["E1"], [])]


def test_lastevent_replaces_the_previous_event():
    items = [ev("E1"), ev("E2"), ev("E3", time=1000)]
    assert updates(LastEvent(), items) == [
        (0, 0, ["E1"], []),
        (1, 0, ["E2"], ["E1"]),
        (2, 1000, ["E3"], ["E2"]),
    ]


# --------------------------------------------------------------------------- unique family


def test_unique_replaces_per_key_and_a_missing_key_is_the_null_key():
    # unique(symbol): A1 B1 A2 (replaces A1) N1 (no symbol) N2 (replaces N1)
    items = [ev("A1", symbol="A"), ev("B1", symbol="B"), ev("A2", symbol="A"),
             ev("N1"), ev("N2", symbol=None)]
    assert updates(Unique(["symbol"]), items) == [
        (0, 0, ["A1"], []),
        (1, 0, ["B1"], []),
        (2, 0, ["A2"], ["A1"]),
        (3, 0, ["N1"], []),
        (4, 0, ["N2"], ["N1"]),
    ]
    window = make_window(Unique(["symbol"]), 0)
    for item in items[:3]:
        window.on_event(item.event, 0)
    assert ids(window.contents()) == ["B1", "A2"]  # arrival order of the held events


def test_unique_on_two_properties_keys_by_both():
    items = [ev("E1", a=1, b=1), ev("E2", a=1, b=2), ev("E3", a=1, b=1)]
    assert updates(Unique(["a", "b"]), items) == [
        (0, 0, ["E1"], []),
        (1, 0, ["E2"], []),
        (2, 0, ["E3"], ["E1"]),
    ]


def test_unique_list_values_key_by_content_and_object_values_are_rejected():
    items = [ev("E1", tags=[1, 2]), ev("E2", tags=[1, 3]), ev("E3", tags=[1, 2])]
    assert updates(Unique(["tags"]), items) == [
        (0, 0, ["E1"], []),
        (1, 0, ["E2"], []),
        (2, 0, ["E3"], ["E1"]),
    ]
    window = make_window(Unique(["tags"]), 0)
    with pytest.raises(EventError, match="event 'E4': property 'tags' is an object"):
        window.on_event(Event("E4", {"tags": {"a": 1}}), 0)


def test_firstunique_keeps_the_first_per_key_and_drops_the_rest():
    items = [ev("A1", symbol="A"), ev("A2", symbol="A"), ev("N1"), ev("B1", symbol="B"), ev("N2")]
    assert updates(FirstUnique(["symbol"]), items) == [
        (0, 0, ["A1"], []),
        (2, 0, ["N1"], []),
        (3, 0, ["B1"], []),
    ]


# --------------------------------------------------------------------------- groupwin


def test_groupwin_length_is_a_length_window_per_group():
    # groupwin(symbol)#length(1) behaves as unique(symbol); N1 and N2 have no
    # symbol: they share the null group
    items = [ev("A1", symbol="A"), ev("B1", symbol="B"), ev("A2", symbol="A"), ev("N1"), ev("N2")]
    assert updates(GroupWin(["symbol"], Length(1)), items) == [
        (0, 0, ["A1"], []),
        (1, 0, ["B1"], []),
        (2, 0, ["A2"], ["A1"]),
        (3, 0, ["N1"], []),
        (4, 0, ["N2"], ["N1"]),
    ]


def test_groupwin_time_batch_group_first_seen_late_has_its_own_grid():
    # groupwin(symbol)#time_batch(1000):
    #   A: first seen at 0    -> grid 1000, 2000, ...
    #   B: first seen at 1300 -> grid 2300, 3300, ...
    #   0    1000|[A1]  1300 B1  2000|-[A1]  2300|[B1]  3300|-[B1]
    items = [ev("A1", symbol="A"), ev("B1", time=1300, symbol="B"), Advance(4000)]
    assert updates(GroupWin(["symbol"], TimeBatch(1000)), items) == [
        (1, 1000, ["A1"], []),
        (2, 2000, [], ["A1"]),
        (2, 2300, ["B1"], []),
        (2, 3300, [], ["B1"]),
    ]


def test_groupwin_simultaneous_timers_flatten_into_one_update_in_first_seen_order():
    # groupwin(symbol)#time(1000): B seen before A; both expire at 1000
    #   0: B1 A1 B2     1000| one update: old = B1 B2 (group B) then A1 (group A)
    items = [ev("B1", symbol="B"), ev("A1", symbol="A"), ev("B2", symbol="B"), Advance(1000)]
    assert updates(GroupWin(["symbol"], Time(1000)), items) == [
        (0, 0, ["B1"], []),
        (1, 0, ["A1"], []),
        (2, 0, ["B2"], []),
        (3, 1000, [], ["B1", "B2", "A1"]),
    ]


def test_groupwin_jump_fires_each_due_group_once_in_due_time_then_first_seen_order():
    # groupwin(symbol)#time(1000): B at 0 (due 1000), A at 500 (due 1500), C at 0 (due 1000)
    # jump to 5000: order (1000, B), (1000, C), (1500, A); one update at 5000
    items = [ev("B1", symbol="B"), ev("C1", symbol="C"), ev("A1", time=500, symbol="A"), Jump(5000)]
    assert updates(GroupWin(["symbol"], Time(1000)), items) == [
        (0, 0, ["B1"], []),
        (1, 0, ["C1"], []),
        (2, 500, ["A1"], []),
        (3, 5000, [], ["B1", "C1", "A1"]),
    ]


def test_groupwin_jump_orders_by_due_time_before_first_seen_order():
    # groupwin(symbol)#time(1000): A seen first, but its timer is re-armed later
    #   0 A1   500 B1   1000|-[A1]   1200 A2 (A due 2200)        5000^ -[B1] -[A2]
    # B (due 1500) fires before A (due 2200) although A was seen first
    items = [ev("A1", symbol="A"), ev("B1", time=500, symbol="B"), Advance(1000),
             ev("A2", time=1200, symbol="A"), Jump(5000)]
    assert updates(GroupWin(["symbol"], Time(1000)), items) == [
        (0, 0, ["A1"], []),
        (1, 500, ["B1"], []),
        (2, 1000, [], ["A1"]),
        (3, 1200, ["A2"], []),
        (4, 5000, [], ["B1", "A2"]),
    ]


def test_groupwin_sub_window_is_created_at_first_sight():
    # groupwin(symbol)#firsttime(1000): A created at 0 closes at 1000;
    # B created at 800 accepts until 1800
    items = [ev("A1", symbol="A"), ev("B1", time=800, symbol="B"), ev("A2", time=1200, symbol="A"),
             ev("B2", symbol="B"), ev("B3", time=1800, symbol="B")]
    assert updates(GroupWin(["symbol"], FirstTime(1000)), items) == [
        (0, 0, ["A1"], []),
        (1, 800, ["B1"], []),
        (3, 1200, ["B2"], []),
    ]


def test_groupwin_contents_are_group_by_group_in_first_seen_order():
    window = make_window(GroupWin(["symbol"], KeepAll()), 0)
    for event in [Event("B1", {"symbol": "B"}), Event("A1", {"symbol": "A"}), Event("B2", {"symbol": "B"})]:
        window.on_event(event, 0)
    assert ids(window.contents()) == ["B1", "B2", "A1"]
    assert window.next_timer() is None


def test_groupwin_around_a_window_the_oracle_lacks_fails_at_creation(monkeypatch):
    spec = GroupWin(["symbol"], Intersection([Length(2), Time(1000)]))
    monkeypatch.delitem(WINDOW_CLASSES, Intersection)
    with pytest.raises(UnsupportedWindow, match="intersection"):
        make_window(spec, 0)


# --------------------------------------------------------------------------- expression windows


def _expr(text: str):
    from oracle.dialects import esper

    return esper.parse(text)


def _value(text: str, **props):
    """The expiry's value for one event held, evaluated by the oracle."""
    from oracle.windows.expr import Scope, evaluate

    node = _expr(f"#expr({text})").expiry
    event = Event("E1", props)
    builtins = {"current_count": 1, "expired_count": 0, "oldest_timestamp": 0, "newest_timestamp": 0}
    return evaluate(node, Scope(event, builtins, event, event, {}, [event]))


@pytest.mark.parametrize("text, props, expected", [
    ("x / 0 > 1", {"x": 1}, True),            # Java: 1 / 0.0 is +infinity
    ("x / 0 < 1", {"x": -1}, True),           # -infinity
    ("x / 0 = x / 0", {"x": 0}, False),       # NaN equals nothing
    ("x % 0 = 1", {"x": 5}, None),            # decided: an int remainder by zero is null
    ("x % 3 = -1", {"x": -7}, True),          # Java's remainder takes the dividend's sign
    ("x * 2 = 6", {"x": 3}, True),
    ("y > 1", {}, None),                      # a missing property is null
    ("not y > 1", {}, None),
    ("y > 1 and x > 5", {"x": 1}, False),     # null and false is false
    ("y > 1 or x > 5", {"x": 9}, True),       # null or true is true
    ("y > 1 or x > 5", {"x": 1}, None),
    ("x = 2.0", {"x": 2}, True),
    ("s < 'b'", {"s": "a"}, True),
])
def test_expression_values_follow_java(text, props, expected):
    assert _value(text, **props) is expected


def test_a_type_clash_in_an_expression_names_the_trace_item():
    with pytest.raises(InvalidTrace) as caught:
        run(_expr("#expr(symbol > 1)"), Trace([ev("E1", symbol="IBM")]))
    assert caught.value.index == 0 and "cannot be ordered" in str(caught.value)


def test_a_set_of_an_undeclared_variable_is_an_invalid_trace():
    with pytest.raises(InvalidTrace) as caught:
        run(_expr("#expr(current_count <= MAXC)"), Trace([ev("E1"), SetVariables({"MAXC": 1})], 0, {"MAX": 2}))
    assert caught.value.index == 1 and "'MAXC' is not declared" in str(caught.value)


def test_a_declared_variable_wins_over_a_property_of_the_same_name():
    spec = _expr("#expr(current_count <= limit)")
    items = [ev("E1", limit=5), ev("E2", limit=5), SetVariables({"limit": 1})]
    found = [(u.after, ids(u.insert), ids(u.remove)) for u in run(spec, Trace(items, 0, {"limit": 1}))]
    assert found == [(0, ["E1"], []), (1, ["E2"], ["E1"]), (2, [], [])]
    undeclared = [(u.after, ids(u.insert), ids(u.remove)) for u in run(spec, Trace(items[:2]))]
    assert undeclared == [(0, ["E1"], []), (1, ["E2"], [])]  # the property: 5


def test_expr_time_alone_expires_nothing():
    spec = _expr("#expr(oldest_timestamp > newest_timestamp - 1000)")
    assert updates(spec, [ev("E1"), Advance(5000), ev("E2")]) == [(0, 0, ["E1"], []), (2, 5000, ["E2"], ["E1"])]
