"""`difftest bench --engine streaming` on a tiny stream (spark_impl/streaming/bench.py):
the command runs a real streaming query and the batch beside it, and reports
what it says it measures."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.streaming


def test_the_bench_command_on_a_tiny_stream_reports_every_figure(spark, tmp_path, capsys):
    import numpy as np

    from difftest.__main__ import main
    from spark_impl.streaming import bench

    report = tmp_path / "bench.json"
    assert main(["bench", "--engine", "streaming", "--events", "3000", "--keys", "50", "--batch-rows", "1000",
                 "--window", "#groupwin(k)#length(10)", "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert (data["events"], data["keys"], data["batch_rows"]) == (3000, 50, 1000)
    bare, bare_by_key, stream, alone, batch = data["figures"]
    assert (alone["mode"], alone["events"], alone["output_rows"]) == ("oracle", 3000, 3000)  # an update per arrival
    assert (bare["workload"], bare_by_key["workload"]) == (bench.BARE, bench.BARE_BY_KEY)
    assert bare["output_rows"] == bare_by_key["output_rows"] == 3000  # one insert row per event
    assert bare["state_peak"]["numRowsTotal"] == 1 and bare_by_key["state_peak"]["numRowsTotal"] == 50
    assert bare["verdict"] == bare_by_key["verdict"] == ""
    assert (stream["mode"], stream["events"], stream["batches"], stream["stopped"]) == ("stream", 3000, 3, False)
    # every event is inserted once; each key's events past its tenth push one out
    counts = np.bincount(np.random.default_rng(bench.SEED).integers(0, 50, 3000), minlength=50)
    expected = 3000 + int(np.maximum(counts - 10, 0).sum())
    assert stream["output_rows"] == batch["output_rows"] == expected
    assert stream["state_peak"]["numRowsTotal"] == 1  # one trace: one state row
    assert stream["state_peak"]["memoryUsedBytes"] > 0
    assert stream["events_per_s"] > 0 and stream["steady_events_per_s"] > 0
    assert stream["jvm_peak_bytes"] > 0 and stream["worker_peak_bytes"] > 0
    assert (batch["mode"], batch["events"]) == ("batch", 3000) and batch["seconds"] > 0
    out = capsys.readouterr().out
    assert f"#groupwin(k)#length(10): output rows, stream {expected:,d}, batch {expected:,d}" in out
    assert "#groupwin(k)#length(10): " in out and "x the bare stream's time per event" in out
