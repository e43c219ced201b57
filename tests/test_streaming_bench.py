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


def test_the_verdict_is_the_target_on_a_stream_that_went_through_every_event():
    assert bench.verdict(_figure("stream", 1_000, 0.002), 1_000) == "meets"  # 500,000 events/s
    assert bench.verdict(_figure("stream", 1_000, 0.01), 1_000).startswith("MISSES")  # 100,000 events/s
    assert bench.verdict(_figure("stream", 500, 0.001, stopped=True), 1_000) == "incomplete"
    assert bench.verdict(_figure("batch", 1_000, 0.001), 1_000) == ""
    lines = bench.table([_figure("stream", 1_000, 0.01, state_peak={"numRowsTotal": 1, "memoryUsedBytes": 3 << 20},
                                 jvm_peak_bytes=2 << 30, worker_peak_bytes=100 << 20),
                         _figure("batch", 1_000, 0.5)], 1_000)
    assert "100,000" in lines[1] and "3.00 MiB" in lines[1] and "2.00 GiB" in lines[1] and "100.00 MiB" in lines[1]
    assert lines[2].split()[1:4] == ["batch", "1,000", "0.50"]


def test_a_window_is_measured_against_the_bare_stream_which_has_no_verdict():
    bare = bench.Figure(bench.BARE, "stream", 1_000, 0.004)  # 250,000 events/s
    by_key = bench.Figure(bench.BARE_BY_KEY, "stream", 1_000, 0.02)
    assert bench.verdict(bare, 1_000) == bench.verdict(by_key, 1_000) == ""
    lines = bench.table([bare, by_key, _figure("stream", 1_000, 0.01), _figure("oracle", 1_000, 0.008),
                         _figure("batch", 1_000, 0.5)], 1_000)
    assert ("#groupwin(k)#length(10): 2.5x the bare stream's time per event (100,000 vs 250,000 events/s); "
            "the oracle alone 125,000 events/s") in lines
    assert not any(line.startswith(bench.BARE_BY_KEY + ":") for line in lines)  # only windows get a ratio
    assert bench.key_column(bench.BARE) == bench.key_column(bench.BARE_BY_KEY) == "k"


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peaks are read from /proc")
def test_the_oracle_alone_runs_the_benchs_own_events_and_counts_the_updates_posted():
    alone = bench.run_oracle("#groupwin(k)#length(10)", 3_000, 50)
    assert (alone.mode, alone.events) == ("oracle", 3_000) and alone.seconds > 0
    assert alone.output_rows == 3_000  # one update per arrival (its insert, and its removal if the group was full)
    # eKuiper: one event per ms over 25 s: the panes [0, 10 s) and [10 s, 20 s) close, one update each
    kuiper = bench.run_oracle("SELECT color, count(*) FROM demo GROUP BY TUMBLINGWINDOW(ss, 10), color", 25_000, 5)
    assert kuiper.output_rows == 2


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
