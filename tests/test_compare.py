"""Equality of expected and actual updates (difftest/compare.py; CORPUS.md "Expected
updates"), table-driven: each row is an expected update, an actual one, and the
fields that must be reported as different (empty: equal)."""

from __future__ import annotations

import math

import pytest

from difftest.compare import Difference, compare, differing_fields
from oracle.cases import update_from_json
from oracle.model import DerivedValues, Event, Pane, Update


def ids(*names):
    return tuple(Event(n) for n in names)


def up(after=0, time=0, insert=(), remove=(), **kw):
    return Update(after=after, time=time, insert=ids(*insert), remove=ids(*remove), **kw)


def vals(insert=(), remove=()):
    return DerivedValues(insert=insert, remove=remove)


RULES = [
    # ids in order
    ("equal", up(1, 10, ["E1"], ["E0"]), up(1, 10, ["E1"], ["E0"]), []),
    ("after differs", up(1, 10, ["E1"]), up(2, 10, ["E1"]), ["after"]),
    ("time differs", up(1, 10, ["E1"]), up(1, 11, ["E1"]), ["time"]),
    ("insert order matters", up(insert=["E1", "E2"]), up(insert=["E2", "E1"]), ["insert"]),
    ("remove order matters", up(remove=["E1", "E2"]), up(remove=["E2", "E1"]), ["remove"]),
    ("an extra id", up(insert=["E1"]), up(insert=["E1", "E2"]), ["insert"]),
    ("events compare by id only", up(insert=["E1"]),
     Update(0, 0, insert=(Event("E1", {"price": 1.0}),)), []),
    ("several fields at once", up(1, 10, ["E1"], ["E0"]), up(2, 10, ["E1"], ["E9"]), ["after", "remove"]),
    ("update side in order", up(update=ids("K1", "K2")), up(update=ids("K2", "K1")), ["update"]),
    # unordered sides are multisets
    ("unordered insert", up(insert=["E1", "E2"], unordered={"insert"}), up(insert=["E2", "E1"]), []),
    ("unordered remove", up(remove=["E1", "E2", "E3"], unordered={"remove"}), up(remove=["E3", "E1", "E2"]), []),
    ("unordered names only its side", up(insert=["E1", "E2"], remove=["E3", "E4"], unordered={"insert"}),
     up(insert=["E2", "E1"], remove=["E4", "E3"]), ["remove"]),
    ("unordered is still a multiset", up(insert=["E1", "E1", "E2"], unordered={"insert"}),
     up(insert=["E1", "E2", "E2"]), ["insert"]),
    ("unordered on the actual side means nothing", up(insert=["E1", "E2"]),
     up(insert=["E2", "E1"], unordered={"insert"}), ["insert"]),
    # errors: contained, case-insensitive
    ("error contained, any case", up(3, -1, error="missing key"), up(3, 500, error="CCL: Update of MISSING KEY 'K1'"), []),
    ("error text not contained", up(3, -1, error="missing key"), up(3, 500, error="duplicate key"), ["error"]),
    ("error expected, none posted", up(3, -1, error="missing key"), up(3, 500), ["error"]),
    ("error posted, none expected", up(3, 500), up(3, 500, error="boom"), ["error"]),
    ("an error's given time is compared", up(3, 400, error="missing"), up(3, 500, error="missing key"), ["time"]),
    # panes
    ("same pane", up(window=Pane(0, 1000)), up(window=Pane(0, 1000)), []),
    ("pane bounds differ", up(window=Pane(0, 1000)), up(window=Pane(0, 999)), ["window"]),
    ("pane missing", up(window=Pane(0, 1000)), up(), ["window"]),
    # derived values: only the listed fields; floats within 1e-9 relative; NaN == NaN
    ("values equal", up(values=vals([{"size": 2}], [{"size": 1}])), up(values=vals([{"size": 2}], [{"size": 1}])), []),
    ("values: unlisted fields ignored", up(values=vals([{"size": 2}])),
     up(values=vals([{"size": 2, "other": 7}])), []),
    ("values: a listed field missing", up(values=vals([{"size": 2, "avg": 1.0}])),
     up(values=vals([{"size": 2}])), ["values"]),
    ("values: a listed field differs", up(values=vals([], [{"size": 1}])), up(values=vals([], [{"size": 0}])), ["values"]),
    ("values: float within 1e-9", up(values=vals([{"avg": 1.0}])), up(values=vals([{"avg": 1.0 + 1e-12}])), []),
    ("values: float beyond 1e-9", up(values=vals([{"avg": 1.0}])), up(values=vals([{"avg": 1.0 + 1e-8}])), ["values"]),
    ("values: NaN equals NaN", up(values=vals([{"avg": math.nan}])), up(values=vals([{"avg": math.nan}])), []),
    ("values: NaN is not a number", up(values=vals([{"avg": math.nan}])), up(values=vals([{"avg": 0.0}])), ["values"]),
    ("values: an int is not a string", up(values=vals([{"n": 1}])), up(values=vals([{"n": "1"}])), ["values"]),
    ("values: row count", up(values=vals([{"n": 1}])), up(values=vals([{"n": 1}, {"n": 2}])), ["values"]),
    ("values: row order", up(values=vals([{"n": 1}, {"n": 2}])), up(values=vals([{"n": 2}, {"n": 1}])), ["values"]),
    ("values: unordered rows", up(values=vals([{"n": 1}, {"n": 2}]), unordered={"insert"}),
     up(values=vals([{"n": 2}, {"n": 1}])), []),
    ("values expected, none posted", up(values=vals([{"n": 1}])), up(), ["values"]),
]


@pytest.mark.parametrize(("expected", "actual", "fields"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_equality_rules(expected, actual, fields):
    assert differing_fields(expected, actual) == fields
    difference = compare([expected], [actual])
    if fields:
        assert difference is not None and list(difference.fields) == fields and difference.index == 0
    else:
        assert difference is None


def test_an_expected_error_without_time_ignores_the_time():
    events = {}
    expected = update_from_json({"after": 2, "error": "Missing Key"}, 0, events)
    assert differing_fields(expected, up(2, 1500, error="update of missing key K1")) == []
    assert differing_fields(expected, up(1, 1500, error="update of missing key K1")) == ["after"]
    report = compare([expected], [up(2, 1500)])
    assert report.to_json()["expected"] == {"after": 2, "insert": [], "remove": [], "error": "Missing Key"}
    assert [line.split() for line in report.render().splitlines() if " time " in line] == [["time", "-", "1500"]]


def test_nan_read_from_a_case_equals_nan():
    expected = update_from_json({"after": 0, "time": 0, "values": {"insert": [{"avg": "NaN"}]}}, 0, {})
    assert compare([expected], [up(values=vals([{"avg": float("nan")}]))]) is None


# --------------------------------------------------------------------------- sequences and the report

EXPECTED = [up(0, 0, ["E1"]), up(1, 0, ["E2"]), up(2, 1000, ["E3"], ["E1"])]


def test_equal_sequences_give_none():
    assert compare(EXPECTED, list(EXPECTED)) is None
    assert compare([], []) is None


def test_the_first_differing_update_is_reported_with_its_position():
    actual = [EXPECTED[0], up(1, 0, ["E2"]), up(2, 1000, ["E3"], ["E2"]), up(3, 1000, ["E4"])]
    diff = compare(EXPECTED, actual)
    assert (diff.index, diff.fields, diff.expected_count, diff.actual_count) == (2, ("remove",), 3, 4)
    text = diff.render()
    assert text.splitlines()[0] == "update 2 differs in remove (of 3 updates expected, 4 posted)"
    rows = {line.split()[1] if line.startswith("!") else line.split()[0]: line for line in text.splitlines()[2:]}
    assert rows["remove"].startswith("! remove") and "[E1]" in rows["remove"] and rows["remove"].endswith("[E2]")
    assert rows["after"].startswith("  after") and rows["insert"].startswith("  insert")
    assert rows["time"].split()[1:] == ["1000", "1000"]


def test_a_missing_update_at_the_end():
    diff = compare(EXPECTED, EXPECTED[:2])
    assert diff.index == 2 and diff.actual_update is None
    text = diff.render()
    assert text.splitlines()[0] == "update 2 is missing (of 3 updates expected, 2 posted)"
    assert "(none)" in text and "[E3]" in text


def test_an_extra_update_at_the_end():
    diff = compare(EXPECTED[:1], EXPECTED[:2])
    assert diff.index == 1 and diff.expected_update is None
    assert diff.render().splitlines()[0] == "update 1 is extra (of 1 update expected, 2 posted)"


def test_the_report_shows_other_fields_only_where_present():
    diff = compare([up(3, -1, error="missing key")], [up(3, 500)])
    text = diff.render()
    assert "! error" in text and "'missing key'" in text
    assert "window" not in text and "values" not in text
    unordered = compare([up(insert=["E1", "E2"], unordered={"insert"})], [up(insert=["E1"])]).render()
    assert "! insert (unordered)" in unordered


def test_differing_values_are_shown():
    text = compare([up(values=vals([{"size": 2}]))], [up(values=vals([{"size": 3}]))]).render()
    assert "! values" in text and "{size: 2}" in text and "{size: 3}" in text


def test_the_difference_as_json():
    diff = compare(EXPECTED, EXPECTED[:1] + [up(1, 0, ["E9"])] + EXPECTED[2:])
    assert isinstance(diff, Difference)
    assert diff.to_json() == {
        "index": 1,
        "fields": ["insert"],
        "expected": {"after": 1, "time": 0, "insert": ["E2"], "remove": []},
        "actual": {"after": 1, "time": 0, "insert": ["E9"], "remove": []},
        "expected_count": 3,
        "actual_count": 3,
    }
