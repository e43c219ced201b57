"""The streaming processor (spark_impl/streaming/traces.py) without a JVM: pyspark's
`TwsTester` hands it a key's rows of one micro-batch, as the operator does,
with an in-memory state. Every corpus case, its items cut at random points
into micro-batches, some moved ahead of a gap, the rows of a batch shuffled,
the state pickled between batches: the rows it posts, read back as updates,
are the case's expected updates. (The same processor in a real streaming
query, with restarts: tests/spark/test_streaming.py.)"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("google.protobuf")

from difftest.compare import compare  # noqa: E402
from oracle.cases import case_files, load_case  # noqa: E402
from oracle.dialects import case_spec, parse  # noqa: E402
from oracle.errors import InvalidTrace, WindowOracleError  # noqa: E402
from oracle.model import Advance, Arrive, Event, Trace  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _text(value, kind):
    """A cell as the operator's input has it: every property cast to a string by Spark."""
    if value is None:
        return None
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "double":
        text = repr(float(value))
        return {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(text, text.replace("e", "E"))
    return str(value)


def _codec(schema):
    from spark_impl.streaming.traces import _codec

    return tuple((name, _codec("bigint" if kind == "long" else kind, kind == "json")) for name, kind in schema.items())


def output_of(specs, schema, valueless=()):
    """The `streaming.output.Output` of `specs` over properties of these types (`frames.input_schema`'s)."""
    from spark_impl.frames import input_schema
    from spark_impl.streaming.output import Output

    return Output.of(specs, input_schema(dict(schema), valueless))


class Harness:
    """One processor over many traces (each under its own spec), fed micro-batch by micro-batch."""

    def __init__(self, specs, schema, validate=True, valueless=()):
        from pyspark.sql.streaming.tws_tester import TwsTester

        from spark_impl.streaming import TraceProcessor

        self.schema = dict(schema)
        self.output = output_of(specs.values(), self.schema, valueless)
        self.processor = TraceProcessor(lambda tid: specs[tid], _codec(self.schema), validate, self.output)
        self.tester = TwsTester(self.processor)

    def feed(self, trace_id, rows):
        import pandas as pd

        from spark_impl.frames import BASE_COLUMNS

        names = list(BASE_COLUMNS) + list(self.schema)
        kinds = [None] * len(BASE_COLUMNS) + list(self.schema.values())
        cells = [tuple(v if k is None else _text(v, k) for v, k in zip(row, kinds)) for row in rows]
        frame = pd.DataFrame(cells, columns=names)
        out = self.tester.testInPandas(trace_id, frame)
        # the state between micro-batches is what the store holds: bytes
        blob = self.tester.peekValueState("trace", trace_id)
        assert isinstance(blob[0], bytes)
        return [_row(r, self.output) for r in out.to_dict("records")] if len(out) else []


def _typed(text, data_type):
    """A text column's value as the output's column of `data_type` has it (the cast after the operator)."""
    kind = data_type.simpleString()
    if text is None or kind == "string":
        return text
    if kind in ("bigint", "int", "smallint", "tinyint", "timestamp"):
        return int(text)
    if kind in ("double", "float"):
        return float(text)
    assert kind == "boolean", kind
    return text == "true"


def _row(record, output):
    """An output record as the frame after the operator has it (structs built, text columns typed)."""
    def value(v):
        return None if v is None or (isinstance(v, float) and v != v) or v is __import__("pandas").NA else v

    row = {k: value(v) for k, v in record.items() if not k.startswith("#c")}
    for i, field in enumerate(output.text):
        row[field.name] = _typed(value(record[f"#c{i}"]), field.dataType)
    row["pos"] = (row["#due"], row["#slot"], row["#n"]) if row["side"] is not None else None
    row["window"] = {"start": row["#wstart"], "end": row["#wend"]} if row["#wend"] is not None else None
    return row


def updates(rows, traces, specs, output):
    """Output rows (`_row`'s) read back as updates per trace, as `streaming.run_cases` reads them."""
    from spark_impl.frames import updates_from_rows
    from spark_impl.streaming.output import harness_rows

    readers = {tid: found for tid in traces if (found := output.reader(specs[tid])) is not None}
    return updates_from_rows(harness_rows(rows, readers), traces, readers)


def _cases():
    out = []
    for path in case_files([ROOT / "corpus"]):
        case = load_case(path)
        try:
            spec = case_spec(case)
            from oracle import run

            run(spec, case.trace)
        except WindowOracleError:
            continue
        out.append((path.relative_to(ROOT / "corpus").as_posix(), case, spec))
    return out


def _run(pairs, batches, seed, early):
    """Feed `pairs` ((trace id, spec, trace)) as a stream; the updates per trace id."""
    from spark_impl.frames import PropertyTypes, spec_properties, trace_rows
    from spark_impl.streaming import micro_batches

    rng = random.Random(seed)
    found = {}
    for trace_id, spec, trace in pairs:
        types = PropertyTypes(spec_properties(spec), mixed=spec.MIXED_KINDS)
        types.merge(PropertyTypes.of_trace(trace_id, trace, mixed=spec.MIXED_KINDS))
        harness = Harness({trace_id: spec}, types.schema(), valueless=types.valueless())
        rows = []
        for part in micro_batches(trace_rows(trace_id, trace, types.schema()), batches, rng, early):
            rng.shuffle(part)
            if part:
                rows += harness.feed(trace_id, part)
        found.update(updates(rows, {trace_id: trace}, {trace_id: spec}, harness.output))
    return found


@pytest.mark.parametrize("seed", [1])
def test_every_corpus_case_on_a_stream_posts_its_expected_updates(seed):
    cases = _cases()
    assert len(cases) > 400
    pairs = [(str(n), spec, case.trace) for n, (_, case, spec) in enumerate(cases)]
    found = _run(pairs, batches=4, seed=seed, early=0.15)
    failures = [(name, diff) for n, (name, case, _) in enumerate(cases)
                if (diff := compare(case.expected, found[str(n)])) is not None]
    assert not failures, failures[:3]


def test_an_item_ahead_of_a_gap_waits_for_it():
    spec = parse("#length(1)")
    trace = Trace([Arrive(Event("E1")), Arrive(Event("E2"), time=5), Arrive(Event("E3"), time=7)])
    from spark_impl.frames import trace_rows

    rows = trace_rows("t", trace, {})
    harness = Harness({"t": spec}, {})
    assert harness.feed("t", [rows[0], rows[3]]) == []  # the start row and seq 2: seq 0 and 1 missing, nothing runs
    posted = harness.feed("t", [rows[2]])  # seq 1 still missing
    assert posted == []
    posted = harness.feed("t", [rows[1]])  # seq 0 fills the gap: 0, 1, 2 run now
    assert [(r["after"], r["side"], r["id"]) for r in sorted(posted, key=lambda r: (r["after"], r["side"]))] == [
        (0, "insert", "E1"), (1, "insert", "E2"), (1, "remove", "E1"), (2, "insert", "E3"), (2, "remove", "E2")]


def _raises(harness, trace_id, rows, text):
    with pytest.raises(InvalidTrace) as info:
        harness.feed(trace_id, rows)
    assert text in str(info.value)
    return str(info.value)


def test_an_item_twice_fails_naming_the_trace_and_seq():
    from spark_impl.frames import trace_rows

    trace = Trace([Arrive(Event("E1")), Advance(10)])
    rows = trace_rows("t", trace, {})
    harness = Harness({"t": parse("#length(1)")}, {})
    harness.feed("t", rows[:2])
    message = _raises(harness, "t", [rows[1]], "arrived twice")
    assert "trace 't' seq 0" in message
    harness = Harness({"t": parse("#length(1)")}, {})
    _raises(harness, "t", [rows[1], rows[1]], "arrived twice")


def test_a_start_row_after_the_trace_began_fails():
    from spark_impl.frames import trace_rows

    trace = Trace([Arrive(Event("E1"))], start_time=5)
    rows = trace_rows("t", trace, {})
    harness = Harness({"t": parse("#length(1)")}, {})
    assert [r["id"] for r in harness.feed("t", [rows[1]])] == ["E1"]  # no start row yet: created at 0
    _raises(harness, "t", [rows[0]], "a start row after the trace began")


def test_what_the_oracle_refuses_fails_naming_the_trace_and_seq():
    from spark_impl.frames import trace_rows

    trace = Trace([Arrive(Event("E1"), time=10), Arrive(Event("E2"), time=20)])
    rows = trace_rows("t", trace, {})
    back = rows[2][:3] + (5,) + rows[2][4:]  # seq 1 at 5 ms, after the clock reached 10
    harness = Harness({"t": parse("#length(1)")}, {})
    _raises(harness, "t", [rows[0], rows[1], back], "trace 't' seq 1: time goes backwards")
    again = rows[2][:4] + ("E1",) + rows[2][5:]
    harness = Harness({"t": parse("#length(1)")}, {})
    _raises(harness, "t", [rows[0], rows[1], again], "duplicate event id 'E1'")
    harness = Harness({"t": parse("#length(1)")}, {}, validate=False)  # no ids kept: not caught
    assert len(harness.feed("t", [rows[0], rows[1], again])) == 3


def test_a_checkpoint_of_another_window_is_refused():
    from spark_impl.frames import trace_rows

    rows = trace_rows("t", Trace([Arrive(Event("E1")), Arrive(Event("E2"))]), {})
    harness = Harness({"t": parse("#length(1)")}, {})
    harness.feed("t", rows[:2])
    harness.processor.spec_of = lambda tid: parse("#length(2)")
    _raises(harness, "t", rows[2:], "was made by the window")


def test_properties_leave_as_they_came():
    """Longs past 2**53 stay exact, a NaN stays apart from a null, a list is JSON text."""
    from spark_impl.frames import trace_rows

    trace = Trace([Arrive(Event("E1", {"big": 2**62 + 1, "x": float("nan"), "l": [1, {"b": 2, "a": 1}]})),
                   Arrive(Event("E2", {"big": None, "x": None, "l": None}))])
    schema = {"big": "long", "x": "double", "l": "json"}
    harness = Harness({"t": parse("#length(5)")}, schema)
    posted = sorted(harness.feed("t", trace_rows("t", trace, schema)), key=lambda r: r["after"])
    assert [(r["big"], repr(r["x"]), r["l"]) for r in posted] == [
        (2**62 + 1, "nan", '[1,{"a":1,"b":2}]'), (None, "None", None)]


def test_a_clock_past_2_to_the_53_stays_exact_beside_an_empty_update():
    """The output frame's integer columns are built from the ints themselves: an
    empty update's null `pos` beside other rows in one micro-batch does not make
    the column a float column (which rounds a clock past 2**53)."""
    from spark_impl.frames import trace_rows

    start = 2**60 + 1
    trace = Trace([Arrive(Event("E1")), Advance(start + 3000)], start_time=start)
    harness = Harness({"t": parse("#time_batch(1 sec, 'FORCE_UPDATE')")}, {})
    posted = sorted(harness.feed("t", trace_rows("t", trace, {})), key=lambda r: r["time"])
    assert [(r["time"], r["side"], r["pos"]) for r in posted] == [
        (start + 1000, "insert", (start + 1000, 0, 0)), (start + 2000, "remove", (start + 2000, 0, 0)),
        (start + 3000, None, None)]
    assert all(type(r["time"]) is int for r in posted)


def test_a_set_item_held_ahead_of_a_gap_is_kept_in_state_and_runs_in_turn():
    """A set item that arrives before the items ahead of it waits in the state
    (which is pickled after every micro-batch) and runs when the gap fills."""
    case = load_case(ROOT / "corpus" / "esper" / "expr_batch-set-releases-the-whole-buffer.json")
    from spark_impl.frames import trace_rows

    rows = trace_rows("t", case.trace, {})  # the start row, E1 .. E4 (seq 0-3), set (4), set (5)
    assert [r[2] for r in rows] == ["start", "event", "event", "event", "event", "set", "set"]
    harness = Harness({"t": case_spec(case)}, {})
    first = harness.feed("t", [rows[0], rows[5], rows[6], rows[1]])  # both sets held: seq 1 to 3 missing
    rest = harness.feed("t", [rows[3], rows[2], rows[4]])
    found = updates(first + rest, {"t": case.trace}, {"t": case_spec(case)}, harness.output)["t"]
    assert compare(case.expected, found) is None


def test_a_row_s_fields_cross_typed_and_a_value_its_column_cannot_hold_fails_the_query():
    """A statement's rows become its fields' columns (spark_impl/streaming/output.py): a property `*`
    copied that the event lacks is null, a JSON text field holds the value's canonical JSON, an integer
    in a double column is a float; a value the declared type does not hold, or a field no column is named
    by, fails naming the trace, the field, the value and the type: never a silent null."""
    from oracle.model import DerivedValues, Update
    from spark_impl.streaming.output import FIXED, FieldTypeError

    spec = parse("select *, v / 2 as half, count(*) as n from S#length(2)")
    output = output_of([spec], {"v": "long", "tags": "json"})
    assert [(f.name, f.dataType.simpleString(), bool(f.metadata.get("json_text"))) for f in output.text] == [
        ("id", "string", False), ("v", "bigint", False), ("tags", "string", True), ("half", "double", False),
        ("n", "bigint", False)]
    writer, out = output.writer(spec), []
    writer.rows("t", 1, 0, Update(0, 5, values=DerivedValues([
        {"id": "E1", "v": 3, "tags": [2, {"b": 1, "a": 0}], "half": 1.5, "n": 1},
        {"id": "E2", "half": 2, "n": 2}])), out)
    assert [r[len(FIXED):] for r in out] == [("E1", "3", '[2,{"a":0,"b":1}]', "1.5", "1"),
                                             ("E2", None, None, "2.0", "2")]
    for row, text in [({"n": 1.5}, "field 'n' is 1.5 (float), which its column type bigint does not hold"),
                      ({"n": True}, "field 'n' is True (bool)"), ({"half": "x"}, "field 'half' is 'x' (str)"),
                      ({"n": 2**63}, f"field 'n' is {2**63} (int)"),
                      ({"nope": 1}, "the row has a field 'nope' the output has no column for")]:
        with pytest.raises(FieldTypeError) as info:
            writer.rows("t", 1, 0, Update(4, 5, values=DerivedValues([row])), [])
        assert str(info.value).startswith("trace 't' after 4: ") and text in str(info.value), row


def test_windows_whose_columns_disagree_cannot_share_a_query_and_run_cases_runs_them_apart():
    """`apply_windows`' output is the union of its windows' schemas: a field `total` a long in one
    statement and a double in another is refused naming both; `run_cases` puts them in two queries."""
    from spark_impl.errors import InvalidFrame
    from spark_impl.frames import PropertyTypes
    from spark_impl.streaming.traces import Queries

    long_total = parse("select sum(v) as total from S#length(2)")
    double_total = parse("select avg(v) as total from S#length(2)")
    with pytest.raises(InvalidFrame, match=r"cannot share an output: the first's column 'total' bigint is "
                                           r"'total' double in the second"):
        output_of([long_total, double_total], {"v": "long"})
    union = output_of([long_total, parse("#length(2)"), parse("select count(*) as n from S#length(1)")], {"v": "long"})
    assert [f.name for f in union.schema.fields] == [
        "trace_id", "after", "phase", "time", "ordinal", "side", "pos", "error", "total", "id", "v", "n"]
    queries = Queries()
    trace = Trace([Arrive(Event("E1", {"v": 1}))])
    for n, spec in enumerate([long_total, parse("#length(2)"), double_total, long_total]):
        queries.add(str(n), trace, spec, PropertyTypes.of_trace(str(n), trace))
    assert [[member[0] for member in query.members] for query in queries.queries] == [["0", "1", "3"], ["2"]]
