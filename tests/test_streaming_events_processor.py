"""The event-stream processor (spark_impl/streaming/events.py) without a JVM:
pyspark's `TwsTester` in EventTime mode hands it a key's rows of a
micro-batch, and fires the event-time timers the watermark passed, as the
operator does, with an in-memory state; the watermark of each micro-batch is
computed as Spark computes it (the largest event time of the earlier
micro-batches minus the delay, never going back).

* every corpus case's events (the cases without jumps, sets, variables or
  operation codes), as an event stream cut into micro-batches with rows
  moved later within the delay and shuffled: the rows posted, read back as
  updates, are the oracle's over the events in order and a walk to the final
  watermark (the batch `apply_window_to_events` with `until`);
* scenarios with timelines: rows put back in order, a late row's error row,
  timers fired by the watermark alone, the rejected rows' rules, one Spark
  timer per trace.

(The same processor in real streaming queries, with restarts:
tests/spark/test_streaming_events.py.)"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("google.protobuf")

from difftest.compare import compare  # noqa: E402
from oracle import run  # noqa: E402
from oracle.cases import case_files, load_case  # noqa: E402
from oracle.dialects import case_spec, parse  # noqa: E402
from oracle.errors import InvalidTrace, WindowOracleError  # noqa: E402
from oracle.model import Advance, Arrive, Event, Trace  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: the tester's event-time extractor: no row is at or below a watermark, so TwsTester filters none, as
#: Spark filters none (the operator's input has no column carrying the watermark)
NEVER_LATE = 2**62


class Stream:
    """One `EventProcessor` under `TwsTester`, fed micro-batch by micro-batch
    as Spark runs one: the micro-batch's watermark set, each key's rows
    handed over, then the timers the watermark passed fired; the next
    watermark from the rows' largest time."""

    def __init__(self, spec, schema: dict, *, delay: int, start: int = 0, ids: bool = True, trace_col="trace"):
        from pyspark.sql.streaming.tws_tester import TwsTester

        from spark_impl.streaming import EventProcessor
        from spark_impl.streaming.keyed import _codec

        self.schema, self.spec = dict(schema), spec
        codec = tuple((name, _codec("bigint" if kind == "long" else kind, kind == "json"))
                      for name, kind in self.schema.items())
        self.output = output_of([spec], self.schema)
        self.processor = EventProcessor(lambda _trace_id: spec, codec, self.output, start=start, delay=delay, ids=ids,
                                        names=("n", "t", trace_col))
        self.tester = TwsTester(self.processor, timeMode="EventTime", eventTimeExtractor=lambda row: NEVER_LATE)
        self.delay, self.watermark, self.latest = delay, 0, None
        self.posted: list[dict] = []

    def batch(self, rows: list[tuple]) -> list[dict]:
        """One micro-batch of event rows (trace, n, t, id, properties...): the rows posted."""
        import pandas as pd

        from spark_impl.frames import BASE_COLUMNS, _cell

        self._set_watermark(self.watermark)
        out = []
        names = list(BASE_COLUMNS) + list(self.schema)
        for key in dict.fromkeys(r[0] for r in rows):
            cells = [(r[0], r[1], "event", r[2], r[3], None, None) +
                     tuple(_text(_cell(v, k), k) for v, k in zip(r[4:], self.schema.values())) for r in rows
                     if r[0] == key]
            frame = self.tester.testInPandas(key, pd.DataFrame(cells, columns=names))
            out += [_row(r, self.output) for r in frame.to_dict("records")] if len(frame) else []
            assert isinstance(self.tester.peekValueState("trace", key)[0], bytes)  # what the store holds
        out += self._fire()
        times = [r[2] for r in rows if r[2] is not None]
        if times:
            self.latest = max(times + ([self.latest] if self.latest is not None else []))
            self.watermark = max(self.watermark, self.latest - self.delay)
        self.posted += out
        return out

    def idle(self, watermark: int | None = None) -> list[dict]:
        """A micro-batch without rows (Spark runs one when the watermark moves;
        `watermark`: pushed there by rows of other keys)."""
        if watermark is not None:
            self.watermark = max(self.watermark, watermark)
        self._set_watermark(self.watermark)
        out = self._fire()
        self.posted += out
        return out

    def _set_watermark(self, watermark: int) -> None:
        # Spark hands a micro-batch's rows to the processor first and fires the timers the watermark
        # passed after them; TwsTester.setWatermark fires them at once, before the rows: set it as it does,
        # without firing, and fire after the rows
        self.tester._currentWatermarkMs = watermark
        self.tester.handle.setWatermark(watermark)

    def _fire(self) -> list[dict]:
        frame = self.tester._handleExpiredTimers()
        return [_row(r, self.output) for r in frame.to_dict("records")] if len(frame) else []

    def timers(self, key) -> list[int]:
        return list(self.tester.handle._timers.listTimers(key))



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


def output_of(specs, schema, valueless=()):
    """The `streaming.output.Output` of `specs` over properties of these types (`frames.input_schema`'s)."""
    from spark_impl.frames import input_schema
    from spark_impl.streaming.output import Output

    return Output.of(specs, input_schema(dict(schema), valueless))


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



def _updates(stream, traces):
    """The stream's posted rows but the rejected ones, read back as updates per trace."""
    return updates([r for r in stream.posted if r["phase"] != 2], traces, dict.fromkeys(traces, stream.spec),
                   stream.output)


def _expected(spec, events, watermark, start=0):
    """The oracle over the `events` (id, time, props) the watermark passed, in
    order, order values 0.., then a walk to `watermark` (the batch's `until`)."""
    fed = [e for e in events if e[1] < watermark]
    trace = Trace([Arrive(Event(i, p), time=t) for i, t, p in fed] + [Advance(watermark)], start_time=start)
    return trace, run(spec, trace)


# --------------------------------------------------------------------------- the corpus as event streams


def _event_cases():
    out = []
    for path in case_files([ROOT / "corpus"]):
        case = load_case(path)
        trace = case.trace
        items = trace.items
        plain = all(isinstance(i, Advance) or (isinstance(i, Arrive) and not i.op) for i in items)
        if trace.variables or not plain:
            continue
        try:
            spec = case_spec(case)
        except WindowOracleError:
            continue
        clock, events = trace.start_time, []
        for item in items:
            clock = item.time if item.time is not None else clock
            if isinstance(item, Arrive):
                events.append((item.event.id, clock, dict(item.event.props)))
        try:
            run(spec, Trace([Arrive(Event(i, p), time=t) for i, t, p in events] + [Advance(clock)],
                            start_time=trace.start_time))
        except WindowOracleError:
            continue
        if events:
            out.append((path.relative_to(ROOT / "corpus").as_posix(), spec, trace, events, clock))
    return out


def _micro_batches(events, batches, delay, rng, moved=0.3):
    """Each event's micro-batch (events in order): cut at random points, some
    rows moved later where they are not late there (the watermark computed
    as Spark does), so nothing is rejected."""
    home = sorted(rng.randint(0, batches - 1) for _ in events)
    where = [min(batches - 1, b + rng.randint(1, 2)) if rng.random() < moved else b for b in home]
    while True:
        watermark, latest, late = 0, None, []
        for b in range(batches):
            here = [i for i, w in enumerate(where) if w == b]
            late += [i for i in here if events[i][1] < watermark]
            times = [events[i][1] for i in here]
            if times:
                latest = max(times + ([latest] if latest is not None else []))
                watermark = max(watermark, latest - delay)
        if not late:
            return where
        for i in late:
            where[i] = home[i]


def test_every_corpus_case_s_events_on_an_event_stream_post_the_oracle_s_updates():
    from spark_impl.frames import PropertyTypes, spec_properties

    cases = _event_cases()
    assert len(cases) > 250
    rng = random.Random(4)
    failures, compared, moved = [], 0, 0
    for name, spec, trace, events, end in cases:
        types = PropertyTypes(spec_properties(spec), mixed=spec.MIXED_KINDS)
        types.merge(PropertyTypes.of_trace("t", Trace([Arrive(Event(i, p)) for i, _, p in events]),
                                           mixed=spec.MIXED_KINDS))
        schema = types.schema()
        delay = rng.choice([0, 500, 2000])
        stream = Stream(spec, schema, delay=delay, start=trace.start_time)
        where = _micro_batches(events, 4, delay, rng)
        moved += sum(1 for a, b in zip(where, sorted(where)) if a != b)
        for b in range(4):
            rows = [("t", n, t, i) + tuple(p.get(k) for k in schema) for n, (i, t, p) in enumerate(events)
                    if where[n] == b]
            rng.shuffle(rows)
            stream.batch(rows)
        stream.idle(end + 1)  # the watermark pushed past the case's last clock (by rows of other traces)
        expected_trace, expected = _expected(spec, events, stream.watermark, trace.start_time)
        assert not [r for r in stream.posted if r["phase"] == 2], name  # nothing late, nothing rejected
        found = _updates(stream, {"t": expected_trace})["t"]
        compared += len(expected)
        if (diff := compare(expected, found)) is not None:
            failures.append((name, str(diff)))
    assert not failures, failures[:3]
    assert compared > 1000 and moved > 100  # updates compared; rows put back in order


# --------------------------------------------------------------------------- scenarios


def _sides(rows):
    """(after, phase, time, side, id) of each row, in the batch's order."""
    return sorted((r["after"], r["phase"], r["time"], r["side"] or "", r["id"] or "") for r in rows)


def test_out_of_order_rows_within_the_delay_are_put_back_in_order():
    """#length(2), delay 1000 (a row is fed when the watermark passes it):

        micro-batch 0:  n=0 @0, n=2 @800         W=0     (held: 0, 2)
        micro-batch 1:  n=1 @500, n=3 @1200      W=0     (held: 0, 1, 2, 3)
        micro-batch 2:  -                        W=200   feeds n=0
        micro-batch 3:  -                        W=2000  (pushed by another key) feeds 1, 2, 3 in order"""
    stream = Stream(parse("#length(2)"), {}, delay=1000)
    assert stream.batch([("a", 0, 0, "E0"), ("a", 2, 800, "E2")]) == []
    assert stream.batch([("a", 3, 1200, "E3"), ("a", 1, 500, "E1")]) == []
    assert stream.watermark == 200 and _sides(stream.idle()) == [(0, 1, 0, "insert", "E0")]
    assert _sides(stream.idle(2000)) == [
        (1, 1, 500, "insert", "E1"), (2, 1, 800, "insert", "E2"), (2, 1, 800, "remove", "E0"),
        (3, 1, 1200, "insert", "E3"), (3, 1, 1200, "remove", "E1")]


def test_a_late_row_posts_an_error_row_naming_it_and_is_counted():
    """#length(5), delay 0: after rows up to 1000 ms the watermark is 1000; a
    row at 400 ms is late, one at exactly 1000 ms is not (it is held)."""
    stream = Stream(parse("#length(5)"), {"price": "double"}, delay=0)
    stream.batch([("a", 0, 0, "E0", 1.0), ("a", 1, 1000, "E1", 2.0)])
    assert stream.watermark == 1000
    posted = stream.batch([("a", 7, 400, "L1", 3.5), ("a", 8, 300, "L2", None), ("a", 2, 1000, "E2", 4.0)])
    errors = sorted((r for r in posted if r["side"] == "error"), key=lambda r: r["ordinal"])
    assert [(r["after"], r["phase"], r["time"], r["ordinal"], r["id"], r["price"]) for r in errors] == [
        (8, 2, 300, 0, "L2", None), (7, 2, 400, 1, "L1", 3.5)]  # checked in time order; counted 0, 1
    assert "late: t=400 ms at n=7 in trace 'a' is before the watermark 1000 ms" in errors[1]["error"]
    assert "delay of 0 ms" in errors[1]["error"]
    # E0 fed (the watermark passed it); E1 and E2, at the watermark, held
    assert [(r["after"], r["id"]) for r in posted if r["side"] == "insert"] == [(0, "E0")]
    assert stream.timers("a") == [1001]
    later = stream.batch([("a", 9, 10, "L3", None)])
    assert [(r["ordinal"], r["side"], r["id"]) for r in later] == [(2, "error", "L3")]  # the count goes on
    # the window never saw a late row: E0, E1, E2 only
    assert stream.tester.peekValueState("trace", "a") is not None


def test_timers_fire_when_the_watermark_passes_them_without_a_new_event():
    """#time(1 sec) and #time_batch(1 sec) on traces 'x' and 'y'; after their
    rows only other keys' rows move the watermark: their timers fire then,
    each at its own due time."""
    for window, expected in [
        ("#time(1 sec)", [(2, 0, 1000, "remove", "E0"), (2, 0, 1500, "remove", "E1")]),
        ("#time_batch(1 sec)", [(2, 0, 1000, "insert", "E0"), (2, 0, 1000, "insert", "E1"),
                                (2, 0, 2000, "remove", "E0"), (2, 0, 2000, "remove", "E1")]),
    ]:
        stream = Stream(parse(window), {}, delay=0)
        stream.batch([("x", 0, 0, "E0"), ("x", 1, 500, "E1")])  # W = 0: both held
        assert stream.timers("x") == [1]  # one Spark timer: the first held row's time + 1
        stream.idle(600)  # another key's row moved the watermark to 600: E0, E1 fed
        assert stream.timers("x") == [1000]  # now the window's next due
        assert stream.idle(999) == []
        fired = stream.idle(2500)
        assert _sides(fired) == expected, window
        assert all(r["trace_id"] == "x" for r in fired)
        _, oracle = _expected(parse(window), [("E0", 0, {}), ("E1", 500, {})], 2500)
        assert compare(oracle, _updates(stream, {"x": Trace([Arrive(Event("E0")),
                                                                    Arrive(Event("E1"), time=500)])})["x"]) is None


def test_a_held_row_brings_its_trace_back_when_the_watermark_reaches_it():
    stream = Stream(parse("#length(1)"), {}, delay=5000)
    stream.batch([("a", 0, 7000, "E0")])
    assert stream.timers("a") == [7001]  # the held row's time + 1
    assert stream.idle(7000) == []
    assert _sides(stream.idle(7001)) == [(0, 1, 7000, "insert", "E0")]
    assert stream.timers("a") == []


def test_the_walk_to_the_watermark_is_keyed_after_the_last_fed_event():
    """A walk's updates get `after` = the last fed order value + 1, so with
    consecutive order values the next event, or the batch's `until`, has the
    same key; before any event, 0."""
    stream = Stream(parse('#time_batch(1 sec, "FORCE_UPDATE, START_EAGER")'), {}, delay=0)
    stream.batch([("a", 0, 2200, "E0")])  # W = 0: held; the window, created at 0, posts every second
    assert _sides(stream.idle(2100)) == [(0, 0, 1000, "", ""), (0, 0, 2000, "", "")]  # empty updates, after 0
    assert _sides(stream.idle(3000)) == [(0, 1, 2200, "", ""), (1, 0, 3000, "insert", "E0")][1:]
    stream = Stream(parse("#time(1 sec)"), {}, delay=0)
    stream.batch([("a", 4, 0, "E4")])
    assert _sides(stream.idle(5000)) == [(4, 1, 0, "insert", "E4"), (5, 0, 1000, "remove", "E4")]


def test_order_values_that_go_back_along_time_and_repeated_ones_are_rejected():
    stream = Stream(parse("#length(3)"), {}, delay=1000)
    stream.batch([("a", 5, 100, "E5"), ("a", 5, 200, "X5"), ("a", 3, 300, "E3"), ("a", 6, 50, "E6")])
    posted = stream.idle(2000)
    errors = {r["id"]: r for r in stream.posted if r["side"] == "error"}
    # X5 repeats a held order value; fed in (time, order) order: E6 @50 first, then E5 @100 and E3 @300
    # go back below 6
    assert set(errors) == {"X5", "E5", "E3"}
    assert [r["id"] for r in stream.posted if r["side"] == "insert"] == ["E6"]
    assert "order_col 'n' has the value 5 twice" in errors["X5"]["error"]
    assert "goes back along time_col 't'" in errors["E3"]["error"]
    assert "comes after n=6 at 50 ms" in errors["E3"]["error"]
    assert sorted(r["ordinal"] for r in errors.values()) == [0, 1, 2]
    assert posted


def test_bad_values_are_rejected_naming_the_column():
    stream = Stream(parse("#length(3)"), {}, delay=0, start=100)
    posted = stream.batch([("a", None, 200, "E0"), ("a", 1, None, "E1"), ("a", -2, 300, "E2"),
                           ("a", 3, 50, "E3"), ("a", 4, 400, None), (None, 5, 500, "E5")])
    reasons = sorted(r["error"] for r in posted)
    assert len(posted) == 6 and all(r["side"] == "error" and r["phase"] == 2 for r in posted)
    for text in ("order_col 'n' is null", "time_col 't' is null", "order_col 'n' is negative",
                 "before the window's start: t=50 ms at n=3 in trace 'a', the window starts at 100 ms",
                 "column 'id' is null", "trace_col 'trace' is null"):
        assert any(text in r for r in reasons), (text, reasons)
    assert {r["after"] for r in posted if r["error"].startswith("order_col 'n' is null")} == {-1}
    # a null value is said in words, never as `t=None ms` (issue 43, item 11)
    assert "the event has no time: time_col 't' is null (no time at n=1 in trace 'a')" in reasons
    assert "order_col 'n' is null (t=200 ms at no n in trace 'a')" in reasons
    assert "trace_col 'trace' is null (t=500 ms at n=5)" in reasons
    assert not any("None" in r for r in reasons), reasons


def test_a_repeated_id_is_rejected_by_the_trace_check():
    stream = Stream(parse("#length(3)"), {}, delay=0)
    stream.batch([("a", 0, 0, "E0"), ("a", 1, 0, "E0")])
    stream.idle(1)
    errors = [r for r in stream.posted if r["side"] == "error"]
    assert len(errors) == 1 and "duplicate event id 'E0'" in errors[0]["error"] and errors[0]["after"] == 1
    stream = Stream(parse("#length(3)"), {}, delay=0, ids=False)  # validate=False: ids not kept
    stream.batch([("a", 0, 0, "E0"), ("a", 1, 0, "E0")])
    stream.idle(1)
    assert [r["side"] for r in stream.posted] == ["insert", "insert"]


def test_the_window_s_own_refusal_fails_naming_the_trace_and_order_value():
    stream = Stream(parse("#sort(2, v)"), {"v": "json"}, delay=0)
    with pytest.raises(InvalidTrace, match=r"trace 'a' n=0: .*list or object"):
        stream.batch([("a", 0, 0, "E0", [1])])
        stream.idle(1)


def test_a_checkpoint_of_another_window_is_refused():
    stream = Stream(parse("#length(1)"), {}, delay=0)
    stream.batch([("a", 0, 0, "E0")])
    stream.processor.spec_of = lambda _trace_id: parse("#length(2)")
    with pytest.raises(InvalidTrace, match="was made by the window"):
        stream.batch([("a", 1, 10, "E1")])


def test_each_dialect_on_an_event_stream():
    """An Esper time window, a CCL KEEP window, an eKuiper tumbling-window
    query and an Apama window, over the same shuffled events in 3
    micro-batches: the oracle's updates over the events in order."""
    rng = random.Random(9)
    events = [(f"E{n}", n * 250 + rng.choice([0, 0, 100]), {"k": rng.choice("ab"), "v": rng.randint(0, 9)})
              for n in range(40)]
    events.sort(key=lambda e: e[1])
    for dialect, window in [("esper", "#groupwin(k)#time(1 sec)"), ("ccl", "KEEP 3 ROWS PER(k)"),
                            ("kuiper", "SELECT k, count(*) AS c, sum(v) AS s FROM demo "
                                       "GROUP BY k, TUMBLINGWINDOW(ss, 2)"),
                            ("apama", "partition by v.k within 1.5 retain 2")]:
        spec = parse(window, dialect)
        stream = Stream(spec, {"k": "string", "v": "long"}, delay=600)
        where = _micro_batches(events, 3, 600, rng)
        for b in range(3):
            rows = [("t", n, t, i, p["k"], p["v"]) for n, (i, t, p) in enumerate(events) if where[n] == b]
            rng.shuffle(rows)
            stream.batch(rows)
        stream.idle(20_000)
        trace, expected = _expected(spec, events, 20_000)
        assert len(expected) >= 10, window
        assert compare(expected, _updates(stream, {"t": trace})["t"]) is None, window


def test_the_output_does_not_depend_on_timers_firing_before_or_after_a_micro_batch_s_rows():
    """Spark fires a micro-batch's timers after its rows; a restart can run a
    micro-batch of no rows at the same watermark first (its timers fire
    before the rows). Both give the same rows, rejected ones included."""
    rng = random.Random(3)
    events = [("t", n, n * 200 + rng.choice([0, 0, 150]), f"E{n}", rng.choice("ab")) for n in range(30)]
    batches = [events[i::4] for i in range(4)]  # every 4th row: many come late, many out of order
    batches[2] += [("t", 5, 1000, "X5", "a"), ("u", 0, 300, "U0", "b")]  # a repeated order value, another trace
    for window in ["#groupwin(k)#time(1 sec)", "#time_batch(700 msec)", "#length(3)"]:
        posted = []
        for timers_first in (False, True):
            stream = Stream(parse(window), {"k": "string"}, delay=900)
            for rows in batches:
                if timers_first:
                    stream.idle()
                stream.batch(list(rows))
            stream.idle(10_000)
            posted.append(sorted((tuple(sorted(r.items())) for r in stream.posted), key=repr))
        assert posted[0] == posted[1], window
        errors = [dict(r) for r in posted[0] if dict(r)["side"] == "error"]
        assert len(errors) > 5 and any("late" in e["error"] for e in errors), window


def test_rows_the_watermark_passed_are_fed_before_a_call_s_new_rows_are_checked():
    """#length(3), delay 0; X0 repeats order value 0 after E0 was fed (rejected
    when its turn comes), L2 is late in the same micro-batch:

        micro-batch 0:  E0 @0 n0, E1 @100 n1       W=0     (held)
        micro-batch 1:  X0 @200 n0, Z @50 n9       W=100   feeds E0; Z late (rejected 0)
        micro-batch 2:  E2 @300 n2, L @10 n8       W=200   feeds E1; L late (rejected 1)
        micro-batch 3:  L2 @20 n7                  W=300   X0's turn: rejected 2; then L2 late (rejected 3)

    With the timers fired first (a restart's micro-batch of no rows at the
    same watermark) the ordinals are the same."""
    batches = [[("a", 0, 0, "E0"), ("a", 1, 100, "E1")], [("a", 0, 200, "X0"), ("a", 9, 50, "Z")],
               [("a", 2, 300, "E2"), ("a", 8, 10, "L")], [("a", 7, 20, "L2")]]
    for timers_first in (False, True):
        stream = Stream(parse("#length(3)"), {}, delay=0)
        for rows in batches:
            if timers_first:
                stream.idle()
            stream.batch(rows)
        errors = sorted((r["ordinal"], r["id"], r["after"], r["time"]) for r in stream.posted if r["side"] == "error")
        assert errors == [(0, "Z", 9, 50), (1, "L", 8, 10), (2, "X0", 0, 200), (3, "L2", 7, 20)], timers_first
        assert [r["id"] for r in stream.posted if r["side"] == "insert"] == ["E0", "E1"]
