"""The streaming bench's pieces that need no JVM (spark_impl/streaming/bench.py):
the input it writes, its peak-memory sampler, its table and verdicts. Its
command path: tests/test_cli.py; a real tiny run: tests/spark/test_streaming.py."""

from __future__ import annotations

import os
import subprocess
import time
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from spark_impl.streaming import bench  # noqa: E402


def test_the_input_is_one_trace_in_seq_order_in_files_of_the_batch_size(tmp_path):
    import pyarrow.parquet as pq

    assert bench.write_stream(tmp_path, 2_500, 7, 1_000) == 3
    files = sorted(tmp_path.iterdir())
    tables = [pq.read_table(f) for f in files]
    assert [t.num_rows for t in tables] == [1000, 1000, 500]
    assert [os.path.getmtime(f) for f in files] == sorted(os.path.getmtime(f) for f in files)
    rows = [r for t in tables for r in t.to_pylist()]
    assert [r["seq"] for r in rows] == list(range(2_500)) == [r["time"] for r in rows]
    assert {r["trace_id"] for r in rows} == {"0"} and {r["kind"] for r in rows} == {"event"}
    assert [r["id"] for r in rows] == [str(n) for n in range(2_500)]
    assert {r["k"] for r in rows} == set(range(7))  # 2,500 draws cover 7 keys
    assert tables[0].schema.names == ["trace_id", "seq", "kind", "time", "id", "op", "vars", "k"]
    again = tmp_path / "again"
    bench.write_stream(again, 2_500, 7, 1_000)
    assert [r["k"] for f in sorted(again.iterdir()) for r in pq.read_table(f).to_pylist()] == [r["k"] for r in rows]


def test_an_ekuiper_query_reads_the_key_as_color():
    query = "SELECT color, count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 10), color"
    assert bench.dialect_and_clause(query) == ("kuiper", query)
    assert bench.key_column(query) == "color"
    assert bench.dialect_and_clause("ccl: KEEP 10 ROWS PER(k)") == ("ccl", "KEEP 10 ROWS PER(k)")
    assert bench.key_column("#groupwin(k)#length(10)") == "k"


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peaks are read from /proc")
def test_peaks_see_a_python_child_and_its_resident_peak():
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys, time; x = bytearray(80_000_000); x[::4096] = b'1' * len(x[::4096]); "
                              "print('up', flush=True); time.sleep(1.5)"], stdout=subprocess.PIPE)
    try:
        peaks = bench.Peaks(os.getpid())
        assert child.stdout.readline().strip() == b"up"
        peaks.reset()
        own, largest, total, workers = peaks.stop()
    finally:
        child.wait()
    assert workers >= 1 and largest >= 80_000_000 and total >= largest
    assert own is not None and own > 0


def _figure(mode, events, seconds, **kw):
    return bench.Figure("#groupwin(k)#length(10)", mode, events, seconds, **kw)


def test_the_verdict_is_both_targets_on_a_stream_that_went_through_every_event():
    big = {"batch_rows": 1_000_000}
    assert bench.verdict(_figure("stream", 1_000, 0.002, **big), 1_000, 0.002) == "meets"  # 500,000 events/s
    assert bench.verdict(_figure("stream", 1_000, 0.002, **big), 1_000, 0.001) == "MISSES (> 1.5x the batch)"
    assert bench.verdict(_figure("stream", 1_000, 0.01, **big), 1_000, 0.01) == "MISSES (< 300,000 events/s)"
    # micro-batches of 100,000 rows: 0.1 M events/s, and no ratio to the batch
    small = {"batch_rows": 100_000}
    assert bench.verdict(_figure("stream", 1_000, 0.009, **small), 1_000, 0.001) == "meets"
    assert bench.verdict(_figure("stream", 1_000, 0.02, **small), 1_000).startswith("MISSES (< 100,000")
    assert bench.verdict(_figure("stream", 500, 0.001, stopped=True, **small), 1_000) == "incomplete"
    assert bench.verdict(_figure("batch", 1_000, 0.001), 1_000) == ""


def test_the_table_prints_the_ratio_to_the_batch_the_state_and_the_latency():
    stream = _figure("stream", 1_000, 0.01, batch_rows=100_000, state_rows=90, state_bytes=3 << 20,
                     jvm_peak_bytes=2 << 30, worker_peak_bytes=100 << 20, output_rows=1_900)
    batch = _figure("batch", 1_000, 0.005, batch_rows=100_000, output_rows=1_900)
    latency = _figure("latency", 6_000, 3.0, latencies=[0.4, 0.9, 0.5])
    bare = bench.Figure(bench.BARE, "stream", 1_000, 0.004, batch_rows=100_000)
    lines = bench.table([bare, stream, batch, latency])
    row = next(line for line in lines if line.split()[:2] == ["#groupwin(k)#length(10)", "stream"])
    assert row.split()[2:9] == ["100,000", "1,000", "0.01", "100,000", "-", "2.00", "90"]
    assert "3.00 MiB" in row and "2.00 GiB" in row and "100.00 MiB" in row
    assert "#groupwin(k)#length(10): a 1,000-row micro-batch after a first of 100,000 events: median 0.50 s, " \
           "max 0.90 s (target under 1 s); state unknown rows, -" in lines
    assert "#groupwin(k)#length(10) (100,000 rows per micro-batch): output rows, stream 1,900, batch 1,900" in lines
    assert next(line for line in lines if line.startswith(bench.BARE)).rstrip().endswith("-")  # no verdict


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peaks are read from /proc")
def test_peaks_count_python_programs_only_not_a_child_whose_arguments_name_python():
    """A child forked by the JVM keeps the JVM's command line for a moment (its
    class path names pyspark's folder): it is not a Python worker."""
    child = subprocess.Popen(["sh", "-c", "sleep 3; true", "/site-packages/python3.11/pyspark/jars"])
    try:
        cmdline = Path(f"/proc/{child.pid}/cmdline")
        for _ in range(200):  # the child's command line is empty until its exec is done
            if cmdline.read_bytes():
                break
            time.sleep(0.01)
        peaks = bench.Peaks(os.getpid())
        assert b"python3.11" in cmdline.read_bytes()
        assert child.pid not in peaks._python_pids()
    finally:
        child.kill()
        child.wait()
