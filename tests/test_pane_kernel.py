"""The Spark pane kernel (spark_impl/windows/pane_kernel.py) and its clock
(spark_impl/windows/replay.py) without Spark: the grouped-map function run on
an Arrow table of one trace, as a Spark task runs it. The kernel checks late
rows itself, so a case's whole expected output comes out of it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

pa = pytest.importorskip("pyarrow")

from hypothesis import given  # noqa: E402

from difftest.compare import compare  # noqa: E402
from difftest.strategies import KUIPER_SPECS, cases  # noqa: E402
from oracle import parse, run  # noqa: E402
from oracle.cases import load_case  # noqa: E402
from oracle.dialects import case_spec  # noqa: E402
from oracle.model.panes import TIMED_PANE_WINDOWS  # noqa: E402
from oracle.model import Advance, Arrive, Event, Jump, Statement, Trace, Tumbling  # noqa: E402
from spark_impl import frames  # noqa: E402
from spark_impl.windows.pane_kernel import SECOND, FieldCells, Ticks, aligned_end, field_column, kernel  # noqa: E402
from spark_impl.windows.pane_query import field_kinds  # noqa: E402
from spark_impl.windows.replay import ARRIVAL, TIMER, replay  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "kuiper"
_ARROW = {"long": pa.int64(), "double": pa.float64(), "string": pa.string(), "boolean": pa.bool_(), "json": pa.string()}


def kernel_updates(spec, trace: Trace, shuffle: int = 0):
    """The kernel's updates for one trace (its rows handed over in a shuffled order)."""
    window, query = (spec.window, spec) if isinstance(spec, Statement) else (spec, None)
    pushed = query is not None and query.where_in_window
    types = frames.PropertyTypes(frames.spec_properties(spec), mixed=spec.MIXED_KINDS)
    types.merge(frames.PropertyTypes.of_trace("t", trace, mixed=spec.MIXED_KINDS))
    schema = types.schema()
    rows = frames.trace_rows("t", trace, schema)
    random.Random(shuffle).shuffle(rows)
    names = tuple(schema)
    columns = list(zip(*rows))
    arrays = [pa.array(columns[0], pa.string()), pa.array(columns[1], pa.int64()), pa.array(columns[2], pa.string()),
              pa.array(columns[3], pa.int64()), pa.array(columns[4], pa.string())]
    arrays += [pa.array(columns[7 + n], _ARROW[schema[name]]) for n, name in enumerate(names)]
    table = pa.Table.from_arrays(arrays, names=["trace_id", "seq", "kind", "time", "id", *names])
    fields, reader = (), None
    if query is not None:  # the query's typed fields, read back as the harness reads them (`frames.RowFields`)
        from pyspark.sql.types import StructType

        from spark_impl.windows.panes import query_fields, query_kinds

        columns = {f.name: f for f in frames.input_schema(schema, types.valueless()).fields if f.name in schema}
        fields = query_kinds(query, columns)
        reader = frames.RowFields(query, StructType(list(query_fields(query, columns))))
    run = kernel(window, query, pushed, names, frozenset(n for n, k in schema.items() if k == "json"), fields)
    out = []
    for row in run(table).to_pylist():
        start, end = row.pop("wstart"), row.pop("wend")
        cells = {name: row.pop(field_column(n)) for n, (name, _) in enumerate(fields)}
        values = None
        if reader is not None and row["side"] is None:
            values = "[]"  # a pane of no output row
        elif reader is not None and row["side"] == "insert" and row["id"] is None:
            # a null field is no field of eKuiper's row (a map): the case format leaves it out
            values = json.dumps({k: v for k, v in reader.read(cells).items() if v is not None})
        out.append({**row, "values": values, "after": row["seq"], "pos": (row["pos"],),
                    "window": None if end is None else {"start": start, "end": end}})
    return frames.updates_from_rows(out, {"t": trace})["t"]


def _timed_cases():
    for path in sorted(CORPUS.glob("*.json")):
        case = load_case(path)
        spec = case_spec(case)
        if isinstance(spec.window if isinstance(spec, Statement) else spec, TIMED_PANE_WINDOWS):
            yield pytest.param(case, spec, id=path.stem)


@pytest.mark.parametrize("case, spec", list(_timed_cases()))
def test_every_timed_pane_case_replays_through_the_kernel(case, spec):
    assert kernel_updates(spec, case.trace, shuffle=len(case.name)) == case.expected


def test_the_timed_pane_cases_are_many():
    assert len(list(_timed_cases())) >= 40


def test_ticks_list_every_realignment_in_new_yorks_repeated_hour():
    """Created at 01:20 EST (06:20 UTC): the aligned end lies an hour back
    (05:30 UTC), so the first pane closes at the creation and each tick of the
    run is 50 min late, skipped, and a new run aligns to an end in the past
    again until 02:00 EST (07:00 UTC), whose end 07:10 UTC lies ahead."""
    minute, utc = 60_000, 1_730_592_000_000  # 2024-11-03 00:00 UTC
    zone = ZoneInfo("America/New_York")
    ticks = Ticks(10 * minute, lambda t: aligned_end(t, 10, minute, zone), utc + (6 * 60 + 20) * minute)
    assert ticks.at_creation == [utc + (5 * 60 + 30) * minute]
    closed = [ticks.fire(ticks.due) for _ in range(4)]
    assert closed == [[utc + (5 * 60 + 40) * minute], [utc + (5 * 60 + 50) * minute], [utc + 6 * 60 * minute], []]
    assert [at for at, _ in ticks.realigned] == [utc + m * minute for m in (380, 390, 400, 410, 420)]
    assert (ticks.due, ticks.first) == (utc + 430 * minute, True)
    assert ticks.fire(ticks.due) == [utc + 430 * minute]


def test_a_tick_less_than_50_ms_late_keeps_its_end_and_the_tickers_phase():
    ticks = Ticks(2000, lambda t: (t // 2000 + 1) * 2000, 0)
    assert ticks.fire(2000) == [2000] and ticks.due == 4000
    assert ticks.fire(4049) == [4000] and (ticks.due, ticks.expects) == (6000, 6000)
    assert ticks.fire(6050) == [] and ticks.realigned[-1] == (6050, 8000)


class _Recorder:
    """A machine whose timers are the due times it is given; it logs its calls."""

    def __init__(self, dues):
        self.dues, self.log = sorted(dues), []

    def due(self):
        return self.dues[0] if self.dues else None

    def fire(self, now):
        fired = [d for d in self.dues if d <= now]
        self.dues = [d for d in self.dues if d > now]
        if now == 3000 and 3000 in fired:
            self.dues = sorted(self.dues + [3500, 100])  # one later in the walk, one in the past
        self.log.append(("fire", now, fired))

    def arrive(self, payload, now):
        self.log.append(("arrive", now, payload))


def test_replay_walks_stops_at_each_due_time_and_a_jump_fires_once():
    machine, units = _Recorder([1000, 3000, 6000, 7000]), []
    items = [(0, "event", 1000, "E1"), (1, "advance", 4000, None), (2, "start", 0, None), (3, "jump", 7500, None),
             (4, "advance", 9000, None)]
    clock = replay(items, machine, lambda *unit: units.append(unit), clock=0)
    assert units == [(0, TIMER, 1000), (0, ARRIVAL, 1000), (1, TIMER, 3000), (1, TIMER, 3000), (1, TIMER, 3500),
                     (3, TIMER, 7500)]
    assert machine.log == [("fire", 1000, [1000]), ("arrive", 1000, "E1"), ("fire", 3000, [3000]),
                           ("fire", 3000, [100]), ("fire", 3500, [3500]), ("fire", 7500, [6000, 7000])]
    assert clock == 9000


def test_a_late_row_is_the_kernels_own_error_and_the_rest_go_on():
    spec = Tumbling(2000, SECOND, timestamp="ts")
    trace = Trace((Arrive(Event("E1", {"ts": 1500})), Arrive(Event("E2", {"ts": 500})), Advance(10),
                   Arrive(Event("E3", {"ts": 2500})), Jump(20)))
    updates = kernel_updates(spec, trace)
    assert [(u.after, u.error) for u in updates] == [
        (1, "late row: event time 500 ms is before the watermark 1500 ms"), (3, None)]
    assert [e.id for e in updates[1].insert] == ["E1"] and (updates[1].window.start, updates[1].window.end) == (1500, 2000)


# --------------------------------------------------------------------------- a query's typed fields

#: property kinds: `mixed` a schemaless stream's property of several kinds, `tags` a list (both JSON text), `none`
#: a column no event gives a value
KINDS = {"price": "long", "amount": "double", "symbol": "string", "flag": "boolean", "mixed": "json", "tags": "json",
         "none": "null"}


@pytest.mark.parametrize("select, expected", [
    ("count(*), count(none) AS n, sum(price) AS s, avg(price) AS a, min(symbol) AS lo, max(amount) AS hi",
     [("count", "long"), ("n", "long"), ("s", "long"), ("a", "long"), ("lo", "string"), ("hi", "double")]),
    # arithmetic: of integers an integer (/ too), with a float a float, with a null or a string no value
    ("price / 2, price * amount, price + none, symbol + 1, -price, -symbol",
     [("kuiper_field_0", "long"), ("kuiper_field_1", "double"), ("kuiper_field_2", "null"),
      ("kuiper_field_3", "null"), ("kuiper_field_4", "long"), ("kuiper_field_5", "null")]),
    ("price > 2 AS p, flag, symbol = 'a' OR flag AS o, window_start(), window_end() AS we, row_number() AS rn",
     [("p", "boolean"), ("flag", "boolean"), ("o", "boolean"), ("window_start", "long"), ("we", "long"),
      ("rn", "long")]),
    # a schemaless property's kind is the row's: JSON text, and so is what is computed from it
    ("mixed, mixed + 1 AS m1, sum(mixed) AS sm, min(tags) AS mt, count(mixed) AS cm",
     [("mixed", "json"), ("m1", "json"), ("sm", "json"), ("mt", "json"), ("cm", "long")]),
    # lists and row objects are JSON text; an element or a member has its own kind
    ("collect(*) AS rows, collect(price) AS prices, collect(price)[0] AS p0, collect(*)[1]->symbol AS s1, "
     "collect(*)[0]->nothing AS x, deduplicate(symbol, true) AS d, deduplicate(price, false)->id AS di",
     [("rows", "json"), ("prices", "json"), ("p0", "long"), ("s1", "string"), ("x", "null"), ("d", "json"),
      ("di", "string")]),
    # `*`: id, then the properties in column order; a name given twice is one field, JSON text where its kinds differ
    ("*, price, amount * 2 AS symbol",
     [("id", "string"), ("price", "long"), ("amount", "double"), ("symbol", "json"), ("flag", "boolean"),
      ("mixed", "json"), ("tags", "json"), ("none", "null")]),
    # an alias reads the aliased item (not in an aggregate's argument)
    ("price * 1.5 AS price, price + 1 AS p1, sum(price) AS s", [("price", "double"), ("p1", "double"), ("s", "long")]),
])
def test_field_kinds_follow_ekuipers_values(select, expected):
    query = parse(f"SELECT {select} FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)", "kuiper")
    assert list(field_kinds(query, KINDS)) == expected


def test_field_cells_write_each_kind_and_fail_naming_the_field():
    cells = FieldCells((("n", "long"), ("x", "double"), ("s", "string"), ("b", "boolean"), ("j", "json"),
                        ("z", "null")))
    row = {"n": 3, "x": 2, "s": "a", "b": True, "j": [1, {"b": 2, "a": 1}]}
    assert cells.cells(row) == [3, 2.0, "a", True, '[1,{"a":1,"b":2}]', None]
    assert type(cells.cells(row)[1]) is float  # an integer in a double column is a float
    assert cells.cells(None) == [None] * 6 and cells.cells({}) == [None] * 6
    for bad, name in (({"n": "3"}, "n"), ({"n": True}, "n"), ({"n": 1.5}, "n"), ({"x": "1.5"}, "x"),
                      ({"x": False}, "x"), ({"s": 1}, "s"), ({"b": 1}, "b"), ({"z": 1}, "z")):
        with pytest.raises(TypeError, match=f"field {name!r} is declared"):
            cells.cells(bad)


_TIMED_QUERIES = tuple(k for k in KUIPER_SPECS if k.startswith("query/") and k != "query/count")


@given(cases("kuiper", _TIMED_QUERIES))
def test_a_drawn_query_s_typed_fields_hold_what_the_oracle_posts(case):
    """Every value the kernel writes has its field's declared kind
    (`FieldCells` raises otherwise), and the rows read back are the oracle's."""
    got = kernel_updates(case.spec, case.trace)
    assert compare(run(case.spec, case.trace), got) is None
