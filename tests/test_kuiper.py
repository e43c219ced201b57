"""eKuiper: the kuiper dialect (every spelling to one spec, the errors with
their columns, the round trip with settings), the alignment formula against
eKuiper's own tests, event-time late rows, the case keys, and the
differential run's report of kinds Spark does not build."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings as hsettings

from difftest.strategies import KUIPER_SPECS, windows
from oracle import run
from oracle.cases import case_from_json
from oracle.dialects import case_spec, parse, render, settings
from oracle.errors import InvalidCase, InvalidSpec, InvalidTrace, UnsupportedWindow, WindowSyntaxError
from oracle.model import (
    HOUR,
    MILLISECOND,
    MINUTE,
    SECOND,
    Aggregate,
    Arrive,
    Binary,
    Call,
    CountPanes,
    Event,
    Hopping,
    Literal,
    Name,
    KUIPER,
    OrderKey,
    Statement,
    SelectItem,
    Session,
    Sliding,
    Trace,
    Tumbling,
    spec_kind,
)
from oracle.windows import make_window
from oracle.windows.panes import aligned_end, go_date

UTC = ZoneInfo("UTC")

SPELLINGS = [
    ("TUMBLINGWINDOW(ss, 10)", Tumbling(10_000)),
    ("tumblingwindow(SS,10)", Tumbling(10_000)),
    ("TumblingWindow( Ss , 10 )", Tumbling(10_000)),
    ("TUMBLINGWINDOW(mi, 2)", Tumbling(120_000, MINUTE)),
    ("TUMBLINGWINDOW(ms, 500)", Tumbling(500, MILLISECOND)),
    ("HOPPINGWINDOW(ss, 10, 5)", Hopping(10_000, 5_000)),
    ("HOPPINGWINDOW(ss, 3, 5)", Hopping(3_000, 5_000)),  # hop > size: eKuiper's SQL accepts it
    ("SLIDINGWINDOW(ss, 10)", Sliding(10_000)),
    ("SLIDINGWINDOW(ss, 10, 0)", Sliding(10_000)),
    ("SLIDINGWINDOW(ss, 10, 2)", Sliding(10_000, SECOND, 2_000)),
    ("SlidingWindow(ss, 5) OVER (WHEN size = 1)", Sliding(5_000, trigger=Binary("=", Name("size"), Literal(1)))),
    ("SESSIONWINDOW(mi, 2, 1)", Session(120_000, 60_000, MINUTE)),
    ("COUNTWINDOW(5)", CountPanes(5, 5)),
    ("COUNTWINDOW(5, 5)", CountPanes(5, 5)),
    ("COUNTWINDOW(5,2)", CountPanes(5, 2)),
    ("COUNTWINDOW(3,1) filter(where revenue > 100)", CountPanes(3, 1, filter=Binary(">", Name("revenue"), Literal(100)))),
    ("TUMBLINGWINDOW(hh, 1)", Tumbling(HOUR, HOUR)),
]


@pytest.mark.parametrize("text, spec", SPELLINGS, ids=[t for t, _ in SPELLINGS])
def test_every_spelling_parses_to_its_spec_and_renders_back(text, spec):
    assert parse(text, "kuiper") == spec
    assert parse(render(spec, "kuiper"), "kuiper") == spec


ERRORS = [
    ("SLIDINGWINDOW(mm, 1)", InvalidSpec, "'mm' at column 15 is not a time unit"),
    ("TUMBLINGWINDOW(ss, 1.5)", InvalidSpec, "column 20) must be a whole number"),
    ("TUMBLINGWINDOW(ss, 0)", InvalidSpec, "must be above 0"),
    ("TUMBLINGWINDOW(ss)", InvalidSpec, "takes a time unit and a size"),
    ("HOPPINGWINDOW(ss, 10)", InvalidSpec, "takes a time unit, a size and a hop"),
    ("COUNTWINDOW(2, 3)", InvalidSpec, "interval 3 (column 16) must not be larger than the size 2"),
    ("COUNTWINDOW(ss, 3)", InvalidSpec, "the size ('ss' at column 13) must be a whole number"),
    ("TUMBLINGWINDOW(ss, 10) OVER(WHEN a = 1)", InvalidSpec, "(its condition at column 34) is only for SLIDINGWINDOW"),
    ("TUMBLINGWINDOW(ss, 10) FILTER(WHERE count(*) > 1)", InvalidSpec, "cannot aggregate"),
    ("TUMBLINGWINDOW(ss, 10", WindowSyntaxError, "column 22"),
    ("color", InvalidSpec, "is not a window function"),
    ("SELECT a FROM demo GROUP BY a", InvalidSpec, "exactly one window function"),
    ("SELECT a FROM demo GROUP BY TUMBLINGWINDOW(ss, 1), COUNTWINDOW(2)", InvalidSpec, "columns 29, 52"),
    ("SELECT foo(a) FROM demo GROUP BY COUNTWINDOW(2)", InvalidSpec, "unknown function 'foo' at column 8"),
    ("SELECT round(a) FROM demo GROUP BY COUNTWINDOW(2)", UnsupportedWindow,
     "eKuiper's function round() at column 8 is not modelled here"),
    ("SELECT count(*) FROM demo GROUP BY COUNTWINDOW(2) HAVING last_agg_hit_count() < 4", UnsupportedWindow,
     "last_agg_hit_count() at column 58"),
    ("SELECT deduplicate(a) FROM demo GROUP BY COUNTWINDOW(2)", InvalidSpec,
     "deduplicate takes two arguments: the key and true or false (return all rows) (column 8)"),
    ("SELECT deduplicate(a, 1) FROM demo GROUP BY COUNTWINDOW(2)", InvalidSpec,
     "deduplicate's second argument must be true or false (column 8)"),
    ("SELECT event_time(a) FROM demo GROUP BY COUNTWINDOW(2)", InvalidSpec, "event_time() takes no arguments (column 8)"),
    ("SELECT a FROM demo WHERE count(*) > 1 GROUP BY HOPPINGWINDOW(ss, 2, 1)", InvalidSpec,
     "the WHERE condition (column 26): an aggregate in WHERE"),
    ("SELECT time FROM demo GROUP BY COUNTWINDOW(2)", InvalidSpec, "time at column 8"),
    ("SELECT a FROM demo GROUP BY COUNTWINDOW(2) HAVING", WindowSyntaxError, "end of the text; expected '(' or NOT"),
]


@pytest.mark.parametrize("text, error, message", ERRORS, ids=[t for t, _, _ in ERRORS])
def test_a_bad_clause_names_its_place(text, error, message):
    with pytest.raises(error) as caught:
        parse(text, "kuiper")
    assert message in str(caught.value)


QUERY = "SELECT color, count(*) AS c FROM demo GROUP BY TUMBLINGWINDOW(ss, 10), color"


def test_a_statement_parses_to_a_query_and_other_spellings_agree():
    expected = Statement((SelectItem(Name("color")), SelectItem(Aggregate("count"), "c")), Tumbling(10_000),
                         source="demo", keys=(Name("color"),), rules=KUIPER)
    assert parse(QUERY, "kuiper") == expected
    assert parse("select color, COUNT(*) c from demo group by color, tumblingwindow(ss, 10)", "kuiper") == expected
    assert render(expected, "kuiper") == QUERY


def test_order_by_having_window_functions_and_row_number_round_trip():
    text = ("SELECT *, row_number() AS rn, window_start(), collect(*)[0]->color AS c0 FROM demo WHERE size > 2 "
            "GROUP BY SLIDINGWINDOW(ss, 2) OVER(WHEN ts - last_hit_time() > 1000), color HAVING count(*) > 1 "
            "ORDER BY color DESC, rn")
    query = parse(text, "kuiper")
    assert query.order == (OrderKey(Name("color"), True), OrderKey(Name("rn")))
    assert isinstance(query.window, Sliding) and Call("last_hit_time") in _nodes(query.window.trigger)
    assert render(query, "kuiper") == text


def _nodes(node):
    from oracle.model import expression_nodes

    return expression_nodes(node)


@hsettings(max_examples=150, deadline=None)
@given(windows("kuiper", tuple(KUIPER_SPECS)))
def test_every_drawn_kuiper_spec_round_trips_with_its_settings(spec):
    assert parse(render(spec, "kuiper"), "kuiper", settings(spec, "kuiper")) == spec


def test_settings_apply_to_the_window_and_are_written_back():
    spec = parse("TUMBLINGWINDOW(hh, 2)", "kuiper",
                 {"time_mode": "event", "timestamp_field": "ts", "late_tolerance": 1000, "time_zone": "Asia/Shanghai"})
    assert spec == Tumbling(2 * HOUR, HOUR, timestamp="ts", late_tolerance=1000, time_zone="Asia/Shanghai")
    assert settings(spec, "kuiper") == {"time_mode": "event", "timestamp_field": "ts", "late_tolerance": 1000,
                                        "time_zone": "Asia/Shanghai"}


@pytest.mark.parametrize("given_settings, message", [
    ({"time_mode": "event"}, "needs timestamp_field"),
    ({"time_mode": "later"}, "processing or event"),
    ({"late_tolerance": 5}, "needs time_mode event"),
    ({"time_mode": "event", "timestamp_field": "ts", "late_tolerance": -1}, "0 or more"),
    ({"time_zone": "Mars/Olympus"}, "unknown time zone"),
])
def test_bad_settings_are_named(given_settings, message):
    with pytest.raises(InvalidSpec, match=message):
        parse("TUMBLINGWINDOW(ss, 1)", "kuiper", given_settings)


def test_a_count_window_in_event_time_is_refused_as_ekuiper_does():
    """kuiper.md §8: NewEventTimeTrigger has no count window (decided: InvalidSpec)."""
    with pytest.raises(InvalidSpec, match="cannot run in event time"):
        parse("COUNTWINDOW(5)", "kuiper", {"time_mode": "event", "timestamp_field": "ts"})


def test_esper_takes_no_settings_and_cannot_write_kuiper_windows():
    from oracle.errors import UnsupportedWindow

    with pytest.raises(UnsupportedWindow, match="takes no setting"):
        parse("#length(2)", "esper", {"time_mode": "event"})
    with pytest.raises(UnsupportedWindow):
        render(Tumbling(1000), "esper")
    with pytest.raises(UnsupportedWindow, match="not an eKuiper window"):
        render(parse("#length(2)"), "kuiper")


# --------------------------------------------------------------------------- alignment


def _ms(*args, zone=UTC) -> int:
    return int(datetime(*args, tzinfo=zone).timestamp() * 1000)


@pytest.mark.parametrize("now, count, unit, expected", [
    # eKuiper window_op_test.go TestTime: SS 40 at second 51 ends 80 s after the minute's start
    (_ms(2024, 1, 1, 10, 7, 51), 40, SECOND, _ms(2024, 1, 1, 10, 7) + 80_000),
    # its graph test: a 600 ms window whose first row is at .632 s ends 1200 ms after the second's start
    (_ms(2024, 1, 1, 10, 7, 5) + 632, 600, MILLISECOND, _ms(2024, 1, 1, 10, 7, 5) + 1200),
    # the quirk: the unit field equal to k gives the current unit's start + k, not after `now`
    (_ms(2024, 1, 1, 10, 7, 10) + 500, 10, SECOND, _ms(2024, 1, 1, 10, 7, 10)),
    (_ms(2024, 1, 1, 10, 7, 11), 10, SECOND, _ms(2024, 1, 1, 10, 7, 20)),
    (_ms(2024, 1, 1, 10, 7, 11), 7, MINUTE, _ms(2024, 1, 1, 10, 7)),
    (_ms(2024, 1, 1, 10, 8, 11), 7, MINUTE, _ms(2024, 1, 1, 10, 14)),
    (_ms(2024, 1, 1, 10, 8, 11), 5, HOUR, _ms(2024, 1, 1, 15)),
])
def test_aligned_end_follows_ekuipers_formula(now, count, unit, expected):
    assert aligned_end(now, count, unit, UTC) == expected


def test_hours_align_to_the_local_day_of_the_time_zone():
    shanghai = ZoneInfo("Asia/Shanghai")
    now = _ms(2024, 1, 1, 1, 0)  # 09:00 in Shanghai
    assert aligned_end(now, 3, HOUR, UTC) == _ms(2024, 1, 1, 3)
    assert aligned_end(now, 3, HOUR, shanghai) == _ms(2024, 1, 1, 12, zone=shanghai)
    assert aligned_end(now, 1, 86_400_000, shanghai) == _ms(2024, 1, 2, zone=shanghai)


@pytest.mark.parametrize("zone, wall, expected_utc", [
    # New York repeats 01:00-02:00 on 2024-11-03 (EDT, then EST): west of Greenwich, the first
    ("America/New_York", (2024, 11, 3, 1, 20), (2024, 11, 3, 5, 20)),
    # Berlin repeats 02:00-03:00 on 2024-10-27 (CEST, then CET): east of it, the second
    ("Europe/Berlin", (2024, 10, 27, 2, 20), (2024, 10, 27, 1, 20)),
    # London's repeated 01:xx: its offset at the wall time read as UTC is 0 (GMT), taken as is
    ("Europe/London", (2024, 10, 27, 1, 20), (2024, 10, 27, 1, 20)),
    # a skipped wall time (New York 02:30 on 2024-03-10) and a day past the month's end
    ("America/New_York", (2024, 3, 10, 2, 30), (2024, 3, 10, 6, 30)),
    ("Asia/Shanghai", (2024, 1, 32), (2024, 1, 31, 16)),
])
def test_go_date_resolves_a_wall_time_as_go_does(zone, wall, expected_utc):
    assert go_date(ZoneInfo(zone), *wall) * 1000 == _ms(*expected_utc)


def test_a_unit_start_in_a_repeated_hour_is_gos_occurrence_not_the_times_own():
    new_york = ZoneInfo("America/New_York")
    second_0120 = _ms(2024, 11, 3, 6, 20)  # 01:20 EST, the repeated hour's second 01:20
    # the hour start 01:00 is 01:00 EDT (05:00 UTC): MI 10 ends at 05:30 UTC, before the time
    assert aligned_end(second_0120, 10, MINUTE, new_york) == _ms(2024, 11, 3, 5, 30)
    # so is the minute start for SS and the second's for MS
    assert aligned_end(second_0120 + 5_000, 10, SECOND, new_york) == _ms(2024, 11, 3, 5, 20, 10)
    assert aligned_end(second_0120 + 250, 600, MILLISECOND, new_york) == _ms(2024, 11, 3, 5, 20) + 600
    # the first 01:20 (EDT) resolves to itself
    assert aligned_end(_ms(2024, 11, 3, 5, 20), 10, MINUTE, new_york) == _ms(2024, 11, 3, 5, 30)


# --------------------------------------------------------------------------- event time


def test_late_rows_are_dropped_counted_and_posted_as_errors():
    spec = Tumbling(1000, timestamp="ts", late_tolerance=500)
    window = make_window(spec, 0)
    posts = []
    for n, ts in enumerate([1000, 3000, 2000, 2600, 1200, 5000]):
        posts += window.on_event(Event(f"E{n}", {"ts": ts}), n)
    errors = [p.error for p in posts if p.error]
    assert window.late == 2 and len(errors) == 2
    assert errors[0] == "late row: event time 2000 ms is before the watermark 2500 ms"
    panes = [(p.window.start, p.window.end, [e.id for e in p.insert]) for p in posts if p.window]
    # E0 at 1000 aligns the first end to 1000 itself (the quirk: second 1 == k): an empty pane first
    assert panes == [(1000, 1000, []), (1000, 2000, ["E0"]), (2000, 3000, ["E3"]), (3000, 4000, ["E1"])]


def test_a_row_without_an_event_time_is_an_invalid_trace_naming_the_item():
    spec = Tumbling(1000, timestamp="ts")
    trace = Trace([Arrive(Event("E1", {"v": 10})), Arrive(Event("E2", {"ts": "soon"}))])
    with pytest.raises(InvalidTrace, match=r"trace item 0: event 'E1' has no event time"):
        run(spec, trace)
    trace = Trace([Arrive(Event("E1", {"ts": "soon"}))])
    with pytest.raises(InvalidTrace, match=r"trace item 0: event 'E1' has no event time: its property 'ts' is 'soon'"):
        run(spec, trace)


def test_several_panes_close_in_one_unit_each_its_own_update():
    spec = Tumbling(1000, timestamp="ts")
    updates = run(spec, Trace([Arrive(Event("E1", {"ts": 100})), Arrive(Event("E2", {"ts": 4200}))]))
    assert [(u.after, u.window.end) for u in updates] == [(1, 1000), (1, 2000), (1, 3000), (1, 4000)]


# --------------------------------------------------------------------------- cases


def _case(**keys):
    raw = {"dialect": "kuiper", "window": "COUNTWINDOW(2)", "input": [{"event": {"id": "E1"}}], "expected": []}
    raw.update(keys)
    return case_from_json(raw)


def test_a_case_query_must_use_the_cases_window():
    with pytest.raises(InvalidCase, match=r"the query's window \(COUNTWINDOW\(3\)\) is not the case's 'window'"):
        case_spec(_case(query="SELECT * FROM demo GROUP BY COUNTWINDOW(3)"))
    with pytest.raises(InvalidCase, match="whole statement"):
        case_spec(_case(query="COUNTWINDOW(2)"))
    assert isinstance(case_spec(_case(query="SELECT * FROM demo GROUP BY COUNTWINDOW(2)")), Statement)


def _refusing_impl(trace_df, window, dialect):
    raise AssertionError("no job may start: `unsupported` below refuses every kind")


def unsupported(spec):
    """Read by the runner beside `_refusing_impl` (as `spark_impl.unsupported` beside `apply_window`)."""
    return f"this stand-in does not implement the {spec_kind(spec)} window"


def test_the_runner_reports_kuiper_kinds_an_implementation_does_not_build_as_not_compared():
    """`difftest run --dialect kuiper` against an implementation that builds no
    pane window: each drawn kind is counted as not compared, never as passed,
    and no job starts."""
    from difftest.runner import ImplUnderTest, Runner, table_lines, targets

    impl = ImplUnderTest(_refusing_impl, spark=None, name="test_kuiper:_refusing_impl")
    runner = Runner(impl, dialect="kuiper", batch_size=20, seed=1)
    chosen = [t for t in targets("kuiper", None) if t.kind in ("tumbling", "query/count")]
    stats = runner.run(chosen, examples=40, budget=None)
    assert [s.kind for s in stats] == ["tumbling", "query/count"]
    assert all(s.cases == 0 and s.unsupported == 40 and s.error is None for s in stats)
    text = "\n".join(line for line, _ in table_lines(stats, runner.totals()))
    assert "40 drawn cases not compared" in text and "does not implement the tumbling window" in text


def test_spark_builds_every_kuiper_kind():
    import spark_impl

    for text in ("TUMBLINGWINDOW(ss, 1)", "HOPPINGWINDOW(ss, 2, 1)", "SLIDINGWINDOW(ss, 1, 1)",
                 "SESSIONWINDOW(ss, 10, 2)", "COUNTWINDOW(3, 2)",
                 "SELECT color, count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 10), color"):
        assert spark_impl.unsupported(parse(text, "kuiper")) is None, text
