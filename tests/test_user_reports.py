"""What a new user hit running the README (issue 43), on the oracle's side: each
reproduction a row. The Spark side of the same rows is
tests/spark/test_spark_user_reports.py."""

from __future__ import annotations

import json

import pytest

from difftest.__main__ import main
from oracle.errors import InvalidTrace
from oracle.events import run_events

EVENTS = [{"id": "a", "n": 0, "t": 0, "price": 1.0}, {"id": "b", "n": 1, "t": 400, "price": 2.0},
          {"id": "c", "n": 2, "t": 1500}]


def test_the_time_field_is_a_property_of_the_event():
    """`--time t` names the arrival time and leaves `t` a property, as every column
    of a Spark event table is: `#ext_timed(t, ...)` reads it, `*` lists it."""
    updates = run_events("#ext_timed(t, 1 sec)", EVENTS, time="t")
    assert [(u.time, [e.id for e in u.insert], [e.id for e in u.remove]) for u in updates] == [
        (0, ["a"], []), (400, ["b"], []), (1500, ["c"], ["a", "b"])]
    rows = run_events("select * from E#length(2)", EVENTS, time="t")
    assert [dict(u.values.insert[0]) for u in rows] == EVENTS


def test_expect_runs_ext_timed_over_the_time_column(tmp_path, capsys):
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    assert main(["expect", "--window", "#ext_timed(t, 1 sec)", "--time", "t", str(path)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed[-1] == {"after": 2, "time": 1500, "insert": ["c"], "remove": ["a", "b"]}


@pytest.mark.parametrize("statement", [
    "select nosuch from E#length(3)",
    "select price from E#length(3) where nosuch > 1",
    "select sum(price) from E#length(3) group by nosuch",
    "select sum(price) as s from E#length(3) having max(nosuch) > 1",
    "select price from E(nosuch = 1)#length(3)",
])
def test_a_property_no_event_has_is_refused_naming_it(statement):
    with pytest.raises(InvalidTrace, match="reads property 'nosuch', which no event of the trace has"):
        run_events(statement, EVENTS)


def test_a_property_some_events_lack_reads_null():
    updates = run_events("select price from E#length(3)", EVENTS)
    assert [dict(u.values.insert[0]) for u in updates] == [{"price": 1.0}, {"price": 2.0}, {"price": None}]


@pytest.mark.parametrize("statement, dialect", [
    ("select average from E#uni(price)", "esper"),  # a field of the derived rows, not an event's property
    ("SELECT nosuch FROM E GROUP BY COUNTWINDOW(2)", "kuiper"),  # a schemaless stream: a missing field is null
])
def test_names_that_are_not_an_event_type_s_properties_are_not_refused(statement, dialect):
    assert run_events(statement, EVENTS, dialect=dialect)


def test_expect_refuses_a_statement_over_a_property_no_event_has(tmp_path, capsys):
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    assert main(["expect", "--window", "select nosuch from E#length(3)", str(path)]) == 2
    err = capsys.readouterr().err
    assert "property 'nosuch'" in err and "Traceback" not in err
