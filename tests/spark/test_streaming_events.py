"""Windows over a live event stream (spark_impl/streaming/events.py) in real
Structured Streaming queries: an event table written as one Parquet file per
micro-batch, read by the file source, the window's own `foreachBatch` query
(spark_impl's plans over each micro-batch, its state versioned by batch id),
a sink keeping rows by batch id.

One stream of traces under six windows (an Esper time window and time
batch, a CCL KEEP window, an eKuiper tumbling-window query, an Apama
window, an Esper statement posting typed rows), rows out of order within the delay, some rows late, some traces
going quiet while the watermark moves on, and a last row of another trace
that pushes the watermark past every event:

* the late rows post one `error` row each, naming them, counted per trace,
  and nothing else of theirs (the row's id and properties where its
  window's output has those columns);
* every other row's updates are exactly the batch `apply_window_to_events`'
  over the events in order with `until` = the final watermark, and the
  oracle's;
* a quiet trace's timers fire in micro-batches that have no row of it;
* a query stopped after micro-batch k (or whose sink crashes at k) and
  started again from its checkpoint posts, over the whole stream, exactly
  the rows of the run without a stop.

About 10 minutes on two cores; `pytest -m streaming` runs it with
tests/spark/test_streaming.py (`STREAMING_ALL_K=1`: a restart after every k).
"""

from __future__ import annotations

import os
import random

import pytest

from difftest.compare import compare
from oracle import parse, run
from oracle.model import Advance, Arrive, Event, Trace

pytestmark = pytest.mark.streaming

DELAY = 3000
BATCHES = 6
WINDOWS = {
    "esper": ("esper", "#groupwin(k)#time(1 sec)"),
    "batch": ("esper", "#time_batch(1 sec)"),
    "ccl": ("ccl", "KEEP 3 ROWS PER(k)"),
    "kuiper": ("kuiper", "SELECT k, count(*) AS c, sum(v) AS s FROM demo GROUP BY k, TUMBLINGWINDOW(ss, 2)"),
    "apama": ("apama", "partition by v.k within 1.5 retain 2"),
    "stmt": ("esper", "select irstream k, sum(v) as total, avg(v) from S#time(1 sec) group by k"),
}
#: the trace whose one row, in the last micro-batch, pushes the watermark past every other event
CLOCK = "~clock"
#: traces whose rows stop early: their timers fire as the watermark moves on
QUIET = ("esper-q", "batch-q")


def _schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("trace", StringType()), StructField("n", LongType()), StructField("t", LongType()),
                       StructField("k", StringType()), StructField("v", LongType())])


def _watermarks(files: list[list[tuple]]) -> list[int]:
    """Each micro-batch's watermark, as Spark computes it: the largest time of
    the earlier micro-batches minus the delay, never going back, 0 at first."""
    out, watermark, latest = [], 0, None
    for rows in files:
        out.append(watermark)
        times = [r[2] for r in rows]
        if times:
            latest = max(times + ([latest] if latest is not None else []))
            watermark = max(watermark, latest - DELAY)
    return out


def _stream(seed: int = 1):
    """(events by trace: [(n, t, k, v)], the late rows, the files, the final watermark)."""
    rng = random.Random(seed)
    events: dict[str, list[tuple]] = {}
    for prefix in WINDOWS:
        for t in ("0", "1", "q") if prefix in ("esper", "batch") else ("0", "1"):
            trace, clock, rows = f"{prefix}-{t}", rng.randint(0, 400), []
            for n in range(6 if t == "q" else 24):
                clock += rng.choice([0, 0, 250, 500, 1000])
                rows.append((n, clock, rng.choice("abc"), rng.randint(0, 9)))
            events[trace] = rows
    flat = sorted(((trace,) + e for trace, rows in events.items() for e in rows), key=lambda r: (r[2], r[0], r[1]))
    # home micro-batches by time (none late); some rows moved one micro-batch later where they are
    # not late there; the rows of a micro-batch shuffled
    home = [min(BATCHES - 2, i * (BATCHES - 1) // len(flat)) for i in range(len(flat))]
    where = [min(BATCHES - 2, h + 1) if rng.random() < 0.4 else h for h in home]
    while True:
        files = [[r for r, w in zip(flat, where) if w == b] for b in range(BATCHES)]
        marks = _watermarks(files)
        late = [i for i, (r, w) in enumerate(zip(flat, where)) if r[2] < marks[w]]
        if not late:
            break
        for i in late:
            where[i] = home[i]
    late_rows = []
    for j, trace in enumerate(["esper-0", "ccl-1", "stmt-0", "esper-0"]):
        b = 2 + j % 3
        row = (trace, 1000 + j, max(0, marks[b] - 1 - rng.randint(0, 800)), "late", 100 + j)
        files[b].append(row)
        late_rows.append((b, row))
    end = max(r[2] for r in flat) + DELAY + 3000
    files[BATCHES - 1].append((CLOCK, 0, end, "z", 0))
    for rows in files:
        rng.shuffle(rows)
    final = _watermarks(files + [[]])[-1]
    assert final == end - DELAY and all(r[2] < final for r in flat)
    assert sum(1 for r, w, h in zip(flat, where, home) if w != h) > 20  # rows out of order
    return events, late_rows, files, final


def _specs(events) -> dict:
    specs = {trace: parse(WINDOWS[trace.split("-")[0]][1], WINDOWS[trace.split("-")[0]][0]) for trace in events}
    specs[CLOCK] = parse("#length(1)")
    return specs


def _run(spark, folder, checkpoint, specs, **kwargs):
    from spark_impl.streaming import run_event_files

    return run_event_files(spark, folder, _schema(), specs, checkpoint, order_col="n", time_col="t",
                           trace_col="trace", delay=DELAY, **kwargs)


@pytest.fixture(scope="module")
def uninterrupted(spark, tmp_path_factory):
    from spark_impl.streaming import write_files

    tmp = tmp_path_factory.mktemp("events")
    events, late_rows, files, final = _stream()
    specs = _specs(events)
    assert write_files(tmp / "in", files, _schema()) == BATCHES
    posted = _run(spark, tmp / "in", tmp / "checkpoint", specs)
    return events, late_rows, files, final, specs, posted


def _rows(posted: dict) -> list[dict]:
    return [r.asDict(recursive=True) for b in sorted(posted) for r in posted[b]]


def _check_late_rows_post_an_error_row_each_naming_them_and_nothing_else(uninterrupted):
    _, late_rows, _, _, _, posted = uninterrupted
    rows = _rows(posted)
    errors = [r for r in rows if r["side"] == "error"]
    # the row comes back whole where its window's output has an id and properties; a statement's rows
    # have neither (its fields are its own): the message names the row
    whole = [r for r in errors if not r["trace_id"].startswith("stmt-")]
    assert sorted((r["trace_id"], r["after"], r["time"], r["id"], r["v"]) for r in whole) == sorted(
        (row[0], row[1], row[2], str(row[1]), row[4]) for _, row in late_rows if not row[0].startswith("stmt-"))
    assert all(r["k"] == "late" for r in whole)
    assert sorted((r["trace_id"], r["after"], r["time"], r["id"], r["k"], r["v"]) for r in errors if r not in whole) \
        == [(row[0], row[1], row[2], None, None, None) for _, row in late_rows if row[0].startswith("stmt-")]
    assert all(r["phase"] == 2 and r["error"].startswith("late: t=") for r in errors)
    for r in errors:
        assert f"at n={r['after']} in trace {r['trace_id']!r} is before the watermark" in r["error"]
    # counted per trace: esper-0 has two late rows, ordinals 0 and 1
    assert sorted(r["ordinal"] for r in errors if r["trace_id"] == "esper-0") == [0, 1]
    late_ids = {(row[0], str(row[1])) for _, row in late_rows}
    assert not [r for r in rows if r["side"] != "error" and (r["trace_id"], r["id"]) in late_ids]


def _expected_trace(rows, final):
    return Trace([Arrive(Event(str(n), {"n": n, "t": t, "k": k, "v": v}), time=t) for n, t, k, v in rows]
                 + [Advance(final)])


def _readers(specs: dict) -> dict:
    """The `RowFields` of each trace whose window posts typed rows, over its own output schema."""
    from pyspark.sql.types import StructType

    from spark_impl.streaming.output import reader, window_schema

    columns = StructType([f for f in _schema().fields if f.name != "trace"])  # n and t are properties too
    return {trace: found for trace, spec in specs.items()
            if (found := reader(spec, window_schema(spec, columns))) is not None}


def _check_every_trace_posts_the_oracle_s_updates_over_its_events_in_order(uninterrupted):
    from spark_impl.frames import updates_from_rows
    from spark_impl.streaming.output import harness_rows

    events, _, _, final, specs, posted = uninterrupted
    traces = {trace: _expected_trace(rows, final) for trace, rows in events.items()}
    readers = _readers(specs)
    found = updates_from_rows(harness_rows([r for r in _rows(posted) if r["phase"] != 2], readers), traces, readers)
    compared = 0
    for trace, expected_trace in traces.items():
        expected = run(specs[trace], expected_trace)
        assert compare(expected, found[trace]) is None, (trace, str(compare(expected, found[trace])))
        compared += len(expected)
    assert compared > 200


def _keyed(rows, columns) -> list[tuple]:
    """Rows as compared with the batch: the update key, side, the row's rank in its side by `pos`, the rest
    (the batch's `columns`)."""
    groups: dict[tuple, list] = {}
    for d in rows:
        # an update's event rows (`id`, a query's `pane_event`) and its rows of fields are ordered apart
        key = (d["trace_id"], d["after"], d["phase"], d["time"], d["ordinal"], d["side"],
               d.get("id") is None and d.get("pane_event") is None)
        groups.setdefault(key, []).append(d)
    out = []
    for key, group in groups.items():
        group.sort(key=lambda d: tuple(d["pos"].values()) if d["pos"] else ())
        for rank, d in enumerate(group):
            out.append(key + (rank, tuple((c, repr(d[c])) for c in columns if c != "pos")))
    return sorted(out, key=repr)


def _check_every_window_posts_the_batch_apply_window_to_events_rows(spark, uninterrupted):
    """The batch over each window's events (no late row), in order, `until` the final watermark."""
    from spark_impl import apply_window_to_events

    events, _, _, final, _, posted = uninterrupted
    streamed = [r for r in _rows(posted) if r["phase"] != 2]
    table = [(trace,) + e for trace, rows in events.items() for e in rows]
    frame = spark.createDataFrame(table, _schema())
    for prefix, (dialect, window) in WINDOWS.items():
        mine = frame.where(frame.trace.startswith(prefix + "-"))
        batch = apply_window_to_events(mine, window, dialect=dialect, order_col="n", time_col="t",
                                       trace_col="trace", until=final)
        columns = batch.columns
        want = _keyed([r.asDict(recursive=True) for r in batch.collect()], columns)
        got = _keyed([r for r in streamed if r["trace_id"].startswith(prefix + "-")], columns)
        assert len(want) > 20, prefix
        assert got == want, prefix


def _check_a_quiet_trace_s_timers_fire_when_the_watermark_passes_them(uninterrupted):
    _, _, files, _, _, posted = uninterrupted
    for trace in QUIET:
        last_rows = max(b for b, rows in enumerate(files) if any(r[0] == trace for r in rows))
        later = [r for b in posted if b > last_rows for r in posted[b] if r.trace_id == trace]
        assert any(r.phase == 0 for r in later), trace  # timer updates, in micro-batches with no row of the trace


def test_the_public_function_takes_a_timestamp_column_and_gives_the_batch_schema(spark, tmp_path):
    """`apply_window_to_events` itself, one window, a timestamp time column
    (epoch ms), no trace column: the batch's schema and rows."""
    import datetime

    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    from spark_impl import apply_window_to_events as on_table
    from spark_impl import output_schema
    from spark_impl.streaming import apply_window_to_events, write_files
    from spark_impl.streaming.traces import _drain

    schema = StructType([StructField("n", LongType()), StructField("ts", TimestampType()),
                         StructField("symbol", StringType())])
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    at = [0, 300, 300, 900, 1400, 2100, 2600, 3900, 4000, 6500]
    rows = [(n, base + datetime.timedelta(milliseconds=ms), "AB"[n % 2]) for n, ms in enumerate(at)]
    files = [[rows[1], rows[0], rows[2]], [rows[4], rows[3]], [rows[6], rows[5], rows[7]], [rows[9], rows[8]]]
    write_files(tmp_path / "in", files, schema)
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    window = "#groupwin(symbol)#time_batch(1 sec)"
    out = apply_window_to_events(stream, window, order_col="n", time_col="ts", delay=500,
                                 trigger={"availableNow": True})
    posted = _drain(out, tmp_path / "checkpoint")
    final = int(base.timestamp() * 1000) + 6500 - 500
    batch = on_table(spark.createDataFrame([r for r in rows if r[1] < base + datetime.timedelta(milliseconds=6000)],
                                           schema),
                     window, order_col="n", time_col="ts", until=final)
    assert out.schema.simpleString() == batch.schema.simpleString()
    assert out.schema.simpleString() == output_schema(window, schema).simpleString()
    got = _keyed([r.asDict(recursive=True) for b in posted.values() for r in b], batch.columns)
    want = _keyed([r.asDict(recursive=True) for r in batch.collect()], batch.columns)
    assert len(want) > 10 and got == want


def test_bad_arguments_are_refused_naming_them(spark, tmp_path):
    from spark_impl.errors import InvalidFrame
    from spark_impl.streaming import apply_window_to_events

    recorded = spark.createDataFrame([(1, 0)], "n long, t long")
    with pytest.raises(InvalidFrame, match="streaming DataFrame"):
        apply_window_to_events(recorded, "#length(2)", order_col="n", time_col="t", delay=0)
    stream = spark.readStream.schema("n long, t long, x string").parquet(str(tmp_path))
    with pytest.raises(InvalidFrame, match="delay must be a whole number of ms"):
        apply_window_to_events(stream, "#length(2)", order_col="n", time_col="t", delay="5 seconds")
    with pytest.raises(InvalidFrame, match="time_col 'x' must be integer ms or a timestamp"):
        apply_window_to_events(stream, "#length(2)", order_col="n", time_col="x", delay=0)
    with pytest.raises(InvalidFrame, match="property 'k'"):
        apply_window_to_events(stream, "#groupwin(k)#length(2)", order_col="n", time_col="t", delay=0)


# --------------------------------------------------------------------------- restart


def _all(posted: dict) -> list:
    return sorted((tuple(r) for b in posted.values() for r in b), key=repr)


#: the restart in the one test of the stream; STREAMING_ALL_K=1 adds a restart after every k, a test each
RESTART = ("crash", 4)
RESTARTS = [(how, k) for how in ("crash", "stop") for k in range(1, BATCHES)] if os.environ.get("STREAMING_ALL_K") \
    else []


def test_the_event_stream(spark, tmp_path, uninterrupted):
    """Every check of the module docstring over the one stream (one test, so
    the stream runs once however the tests are spread over processes), and a
    restart after a crash at micro-batch 4."""
    _check_late_rows_post_an_error_row_each_naming_them_and_nothing_else(uninterrupted)
    _check_every_trace_posts_the_oracle_s_updates_over_its_events_in_order(uninterrupted)
    _check_every_window_posts_the_batch_apply_window_to_events_rows(spark, uninterrupted)
    _check_a_quiet_trace_s_timers_fire_when_the_watermark_passes_them(uninterrupted)
    _restart(spark, tmp_path, uninterrupted, *RESTART)


if RESTARTS:
    @pytest.mark.parametrize("how, k", RESTARTS)
    def test_a_restart_from_the_checkpoint_after_batch_k_loses_nothing_and_repeats_nothing(spark, tmp_path,
                                                                                             uninterrupted, how, k):
        _restart(spark, tmp_path, uninterrupted, how, k)


def _restart(spark, tmp_path, uninterrupted, how: str, k: int) -> None:
    """`stop`: the source has k files, the query runs them (and a micro-batch
    of no rows if the watermark moved) and stops; the other files come, and
    the query starts again from its checkpoint. `crash`: the sink fails at
    batch k; the query starts again and runs batch k again."""
    from spark_impl.streaming import write_files

    _, _, files, _, specs, posted = uninterrupted
    if how == "stop":
        write_files(tmp_path / "in", files[:k], _schema())
        first = _run(spark, tmp_path / "in", tmp_path / "checkpoint", specs)
        assert min(first) == 0 and max(first) >= k - 1
        write_files(tmp_path / "in", files[k:], _schema(), first=k)
    else:
        write_files(tmp_path / "in", files, _schema())
        first = _run(spark, tmp_path / "in", tmp_path / "checkpoint", specs, fail_after=k)
        assert sorted(first) == list(range(k))
    second = _run(spark, tmp_path / "in", tmp_path / "checkpoint", specs)
    assert min(second) == max(first) + 1  # after a crash, batch k again; never one before it
    both = sorted(_all(first) + _all(second), key=repr)
    assert both == _all(posted)
